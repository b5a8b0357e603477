// SPDX-License-Identifier: Apache-2.0
// kubeapi.js - a stand-in for the Kubernetes API server, over HTTPS with a
// bearer token, answering as the API server does (kubernetes.io's API
// Concepts, Field Selectors) the reads procctl's clients make:
//   GET  /api/v1/namespaces/NS/pods/NAME                     a Pod
//   GET  /apis/discovery.k8s.io/v1/namespaces/NS/endpointslices?labelSelector=K=V
//   GET  /api/v1/pods?fieldSelector=F&limit=L[&continue=T][&resourceVersion=RV[&resourceVersionMatch=M]]
//        a PodList. The field selector is requirements joined by commas
//        (FIELD=V, FIELD==V, FIELD!=V) over the fields Pods support;
//        another field is 400. Paged (limit) from one snapshot: a page
//        reads the next L pods of the cluster in key order (namespace,
//        name) and gives those the selector keeps, so a page may hold
//        fewer, or none, and still have a continue token; with a selector
//        no remainingItemCount is said. A continue token whose version
//        was compacted away is 410 Expired, and the Status's
//        metadata.continue an inconsistent token (the rest, read at the
//        current version), as etcd3's store gives. resourceVersion unset: the
//        most recent (a consistent read, as from etcd); "0": any, as the
//        watch cache serves it: limit ignored, all at once; N (match
//        NotOlderThan, or unset): not older than N, 504 when N is ahead.
//        Items carry no kind or apiVersion (the list's do).
//   GET  /api/v1/pods?fieldSelector=F&watch=1[&resourceVersion=RV]
//        [&allowWatchBookmarks=true][&timeoutSeconds=S]
//        a chunked stream of {"type","object"} lines: from RV unset or
//        "0", an ADDED for each pod the selector keeps, then the changes;
//        from RV, the changes after it; then each as it happens. A change
//        is judged by the selector before and after it: a pod it starts
//        to keep is ADDED, one it stops keeping DELETED (the pod as it
//        was, at the new version), as the watch cache does. BOOKMARKs
//        every bookmark_ms, a Pod's shape with the current version only;
//        ended after S; an RV older than the history kept is answered
//        with an ERROR event 410 (Gone) and the end of the stream.
// resourceVersions are one counter for every change, as etcd's revision.
// There is no cluster here: the objects come from OBJECTS.json and from the
// test, which validates them against their schemas (kubernetes-models).
// The test drives it on a Unix socket (CONTROL_SOCKET: reached from any
// network namespace), plain HTTP, JSON in and out:
//   POST /pods                  a Pod, added or changed (it gets the next version)
//   DELETE /pods/UID            it goes (DELETED)
//   DELETE /pods/UID?graceful=1 its deletionTimestamp is set (MODIFIED), as
//                               the API server's first step of a deletion
//   POST /compact               the history goes: a watch from an older version is Gone
//   POST /tokens?expire=1       every continue token comes back expired, as
//                               if compacted between pages (0: as they are)
//   POST /expire                every open watch gets ERROR 410 and ends
//   POST /close                 every open watch ends, as at its timeout
//   POST /cut                   every open watch's connection is cut mid-stream
//   POST /fail?code=C&count=K[&retry_after=S]
//                               the next K requests of the API are answered
//                               C (429, 500, ...), with Retry-After: S
//   POST /restart?down_ms=N     every connection is cut, nothing listens for N ms
//   POST /slow?ms=N             every answer waits N ms first (0: none)
//   POST /pad?bytes=N[&small=1] every page of a list carries about N bytes
//                               more of valid JSON, in small fields the
//                               client does not know (a hostile server);
//                               small: an array of zeros, a value in 2 bytes
//   POST /bookmarks?ms=N        BOOKMARK every N ms (0: none)
//   POST /inject                the body, as it is, on every open watch (a hostile server)
//   POST /churn?per_s=N         N label changes a second, to pods taken in turn (0: stop)
//   GET  /stats                 what was asked: lists (listsBy: per node;
//                               listed: each list's node, resourceVersion,
//                               resourceVersionMatch and limit), pages,
//                               watches (with their node and
//                               resourceVersion), open watches (openBy),
//                               failed (answered by /fail), expired (continue
//                               tokens answered 410)
// Usage: node kubeapi.js PORT CERT KEY TOKEN OBJECTS.json [CONTROL_SOCKET]
// (listens on $KUBEAPI_HOST, default 127.0.0.1)
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');

const [port, cert, key, token, objects, controlSocket] = process.argv.slice(2);
const host = process.env.KUBEAPI_HOST || '127.0.0.1';

const status = (code, reason, message) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

// ---- the store ----------------------------------------------------------

let rv = 1000;
const objs = [];          // every object but Pods, as given
const pods = new Map();   // uid -> Pod
const history = [];       // { rv, type, object, prev }
let oldest = rv;          // a watch from before this is Gone
const watches = new Set();
const snapshots = new Map(); // continue token -> { rv, items, at, sel }
const stats = { lists: 0, pages: 0, watches: [], open: 0, listsBy: {}, openBy: {}, listed: [], failed: 0, expired: 0 };
let slowMs = 0;
let padding = null; // a list page's field of small fields, /pad's
let churn = null;
let churned = 0;
let bookmarkMs = 1000;
let down = false;
let failing = null; // /fail's: { code, count, retryAfter }
let tokensExpire = false; // /tokens's

const copy = (o) => JSON.parse(JSON.stringify(o));
const podKey = (p) => `${p.metadata.namespace}/${p.metadata.name}`;

function change(type, pod) {
  rv += 1;
  const o = copy(pod);
  o.metadata.resourceVersion = String(rv);
  const prev = pods.get(o.metadata.uid) || null;
  if (type === 'DELETED') pods.delete(o.metadata.uid);
  else pods.set(o.metadata.uid, o);
  const e = { rv, type, object: o, prev };
  history.push(e);
  if (history.length > 20000) oldest = history.splice(0, 10000).at(-1).rv; // compacted, as etcd is
  for (const w of watches) w.send(e);
  return rv;
}

for (const o of JSON.parse(fs.readFileSync(objects, 'utf8'))) {
  if (o.kind === 'Pod') change('ADDED', o);
  else objs.push(o);
}
oldest = 1000;

// ---- selectors ----------------------------------------------------------

// A Pod's fields a field selector may name (the API server's list), as text.
const FIELDS = {
  'metadata.name': (p) => p.metadata.name,
  'metadata.namespace': (p) => p.metadata.namespace,
  'spec.nodeName': (p) => (p.spec && p.spec.nodeName) || '',
  'spec.restartPolicy': (p) => (p.spec && p.spec.restartPolicy) || '',
  'spec.schedulerName': (p) => (p.spec && p.spec.schedulerName) || '',
  'spec.serviceAccountName': (p) => (p.spec && p.spec.serviceAccountName) || '',
  'spec.hostNetwork': (p) => String(Boolean(p.spec && p.spec.hostNetwork)),
  'status.phase': (p) => (p.status && p.status.phase) || '',
  'status.podIP': (p) => (p.status && p.status.podIP) || '',
  'status.nominatedNodeName': (p) => (p.status && p.status.nominatedNodeName) || '',
};

// The field selector of u as a predicate (null: none), and its node (the
// spec.nodeName= requirement's, for the stats).
function selector(u) {
  const text = u.searchParams.get('fieldSelector');
  if (text === null || text === '') return { keep: null, node: null };
  const reqs = text.split(',').map((r) => {
    const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(r);
    if (!m) throw status(400, 'BadRequest', `invalid selector: '${text}'; can't understand '${r}'`);
    if (!FIELDS[m[1]]) throw status(400, 'BadRequest', `field label not supported: ${m[1]}`);
    return { field: m[1], not: m[2] === '!=', value: m[3] };
  });
  const node = reqs.find((r) => r.field === 'spec.nodeName' && !r.not);
  return { keep: (p) => reqs.every((r) => (FIELDS[r.field](p) === r.value) !== r.not), node: node ? node.value : null };
}

// ---- the API ------------------------------------------------------------

// A continue token for snap.
function continueToken(snap) {
  const t = Buffer.from(`${snap.rv}:${snap.at}:${Math.random()}`).toString('base64');
  snapshots.set(t, snap);
  return t;
}

// What an expired token's rest is, read now: the pods past the last it read.
function inconsistent(snap) {
  const last = podKey(snap.items[snap.at - 1]);
  const items = [...pods.values()].sort((a, b) => (podKey(a) < podKey(b) ? -1 : 1));
  const at = items.findIndex((p) => podKey(p) > last);
  return { rv, items, at: at < 0 ? items.length : at };
}

// A list's item: as the API server gives it, without kind and apiVersion.
function item(p) {
  const { kind, apiVersion, ...rest } = p;
  return rest;
}

function list(u) {
  const { keep, node } = selector(u);
  const cont = u.searchParams.get('continue');
  const want = u.searchParams.get('resourceVersion');
  const match = u.searchParams.get('resourceVersionMatch');
  // resourceVersion "0": the watch cache's, which pages nothing.
  const limit = want === '0' ? 0 : Number(u.searchParams.get('limit') || 0);
  let snap;
  if (cont) {
    snap = snapshots.get(cont);
    if (!snap) return [400, status(400, 'BadRequest', 'invalid continue token')];
    if (snap.rv < oldest || tokensExpire) {
      stats.expired += 1;
      const e = status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. '
        + 'You can start a new list without the continue parameter, or use the continue token in this response to '
        + 'retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list '
        + '- objects that were created, modified, or deleted between the time the first chunk was returned and now '
        + 'may show up in the list.');
      e.metadata.continue = continueToken(inconsistent(snap));
      return [410, e];
    }
  } else {
    if (want && want !== '0' && Number(want) > rv) {
      return [504, status(504, 'Timeout', `Too large resource version: ${want}, current: ${rv}`)];
    }
    stats.lists += 1;
    stats.listsBy[node] = (stats.listsBy[node] || 0) + 1;
    stats.listed.push({ node, resourceVersion: want, resourceVersionMatch: match, limit });
    snap = { rv, items: [...pods.values()].sort((a, b) => (podKey(a) < podKey(b) ? -1 : 1)), at: 0 };
  }
  stats.pages += 1;
  const read = limit ? snap.items.slice(snap.at, snap.at + limit) : snap.items.slice(snap.at);
  const items = read.filter((p) => !keep || keep(p)).map(item);
  const meta = { resourceVersion: String(snap.rv) };
  if (snap.at + read.length < snap.items.length) {
    const next = { rv: snap.rv, items: snap.items, at: snap.at + read.length };
    meta.continue = continueToken(next);
    if (!keep) meta.remainingItemCount = snap.items.length - next.at; // not said under a selector
  }
  return [200, { kind: 'PodList', apiVersion: 'v1', metadata: meta, items, ...(padding ? { padding } : {}) }];
}

// A bookmark: a Pod's shape, with the version alone.
const bookmark = () => ({ kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv), creationTimestamp: null },
  spec: { containers: null }, status: {} });

function watch(u, res) {
  const { keep, node } = selector(u);
  const want = u.searchParams.get('resourceVersion');
  const from = want === null || want === '' || want === '0' ? null : Number(want);
  const bookmarks = u.searchParams.get('allowWatchBookmarks') === 'true';
  const timeout = Number(u.searchParams.get('timeoutSeconds') || 1800);
  stats.watches.push({ node, resourceVersion: want, timeoutSeconds: timeout, bookmarks });
  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
  const line = (type, object) => res.write(`${JSON.stringify({ type, object })}\n`);
  if (from !== null && (!Number.isInteger(from) || from < oldest)) {
    line('ERROR', status(410, 'Expired', `too old resource version: ${from} (${oldest})`));
    res.end();
    return;
  }
  const passes = (p) => p !== null && (!keep || keep(p));
  const w = {
    node,
    send(e) {
      const now = e.type !== 'DELETED' && passes(e.object);
      const before = passes(e.prev);
      if (now && !before) line('ADDED', e.object);
      else if (now) line('MODIFIED', e.object);
      else if (before) { // gone from the selection: the pod as it was, at the new version
        const o = copy(e.prev);
        o.metadata.resourceVersion = e.object.metadata.resourceVersion;
        line('DELETED', o);
      }
    },
    end() {
      clearInterval(w.bm);
      clearTimeout(w.to);
      watches.delete(w);
      stats.open = watches.size;
      if (!res.writableEnded) res.end();
    },
  };
  if (from === null) { // the state now, then what follows
    for (const p of pods.values()) if (passes(p)) line('ADDED', p);
  } else {
    for (const e of history) if (e.rv > from) w.send(e);
  }
  watches.add(w);
  stats.open = watches.size;
  w.bookmarks = () => {
    clearInterval(w.bm);
    if (bookmarks && bookmarkMs) w.bm = setInterval(() => line('BOOKMARK', bookmark()), bookmarkMs);
  };
  w.bookmarks();
  w.to = setTimeout(() => w.end(), timeout * 1000);
  res.on('close', () => w.end());
  w.raw = (text) => res.write(text);
  w.cut = () => res.socket.destroy();
  w.expire = () => {
    line('ERROR', status(410, 'Expired', 'The resourceVersion for the provided watch is too old.'));
    w.end();
  };
}

const REASONS = { 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable' };

function answer(req, res) {
  if (req.method !== 'GET') return [405, status(405, 'MethodNotAllowed', 'only GET here')];
  if (req.headers.authorization !== `Bearer ${token}`) return [401, status(401, 'Unauthorized', 'Unauthorized')];
  if (failing && failing.count > 0) {
    failing.count -= 1;
    stats.failed += 1;
    if (failing.retryAfter !== null) res.setHeader('Retry-After', String(failing.retryAfter));
    return [failing.code, status(failing.code, REASONS[failing.code] || 'InternalError', `failing on purpose (${failing.code})`)];
  }
  const u = new URL(req.url, 'https://kubernetes.default.svc');
  let m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(u.pathname);
  if (m) {
    const pod = [...pods.values()].find((o) => o.metadata.namespace === m[1] && o.metadata.name === m[2]);
    return pod ? [200, pod] : [404, status(404, 'NotFound', `pods "${m[2]}" not found`)];
  }
  if (u.pathname === '/api/v1/pods') {
    const w = u.searchParams.get('watch');
    if (w === '1' || w === 'true') return watch(u, res);
    return list(u);
  }
  m = /^\/apis\/discovery\.k8s\.io\/v1\/namespaces\/([^/]+)\/endpointslices$/.exec(u.pathname);
  if (m) {
    const want = (u.searchParams.get('labelSelector') || '').split(',').filter(Boolean).map((x) => x.split('='));
    const items = objs.filter((o) => o.kind === 'EndpointSlice' && o.metadata.namespace === m[1] &&
      want.every(([k, v]) => (o.metadata.labels || {})[k] === v));
    return [200, { kind: 'EndpointSliceList', apiVersion: 'discovery.k8s.io/v1', metadata: { resourceVersion: String(rv) }, items }];
  }
  return [404, status(404, 'NotFound', 'the server could not find the requested resource')];
}

const sockets = new Set();
const api = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  const go = () => {
    let r;
    try {
      r = answer(req, res);
    } catch (e) {
      if (!e.kind) throw e;
      r = [e.code, e];
    }
    console.log(`request method=${req.method} path=${req.url} code=${r ? r[0] : 200}`);
    if (!r) return; // a watch: it answers as it goes
    res.writeHead(r[0], { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(r[1]));
  };
  if (slowMs) setTimeout(go, slowMs);
  else go();
});
api.on('connection', (s) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
const listen = (then) => api.listen(Number(port), host, then);

// ---- the test's controls --------------------------------------------------

function control(req, body) {
  const u = new URL(req.url, 'http://control');
  const n = Number(u.searchParams.get('ms') || u.searchParams.get('down_ms') || 0);
  if (req.method === 'GET' && u.pathname === '/stats') {
    const openBy = {};
    for (const w of watches) openBy[w.node] = (openBy[w.node] || 0) + 1;
    return { ...stats, openBy, churned, resourceVersion: String(rv), oldest: String(oldest), down };
  }
  if (req.method === 'POST' && u.pathname === '/pods') {
    const pod = JSON.parse(body);
    return { resourceVersion: String(change(pods.has(pod.metadata.uid) ? 'MODIFIED' : 'ADDED', pod)) };
  }
  let m = /^\/pods\/([^/]+)$/.exec(u.pathname);
  if (req.method === 'DELETE' && m) {
    const pod = pods.get(m[1]);
    if (!pod) throw new Error(`no pod ${m[1]}`);
    if (u.searchParams.get('graceful') === '1') {
      const o = copy(pod);
      o.metadata.deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      o.metadata.deletionGracePeriodSeconds = 30;
      return { resourceVersion: String(change('MODIFIED', o)) };
    }
    return { resourceVersion: String(change('DELETED', pod)) };
  }
  if (req.method !== 'POST') throw new Error(`${req.method} ${u.pathname}: no such control`);
  m = u.pathname;
  if (m === '/compact') {
    oldest = rv; // etcd keeps the current revision

    history.length = 0;
  } else if (m === '/tokens') {
    tokensExpire = u.searchParams.get('expire') === '1';
  } else if (m === '/expire') {
    for (const w of [...watches]) w.expire();
  } else if (m === '/close') {
    for (const w of [...watches]) w.end();
  } else if (m === '/cut') {
    for (const w of [...watches]) w.cut();
  } else if (m === '/fail') {
    const ra = u.searchParams.get('retry_after');
    failing = { code: Number(u.searchParams.get('code')), count: Number(u.searchParams.get('count') || 1),
      retryAfter: ra === null ? null : ra };
  } else if (m === '/restart') {
    down = true;
    api.close();
    for (const s of sockets) s.destroy();
    setTimeout(() => listen(() => {
      down = false;
      console.log(`listening port=${port}`);
    }), n);
  } else if (m === '/inject') {
    for (const w of watches) w.raw(body);
  } else if (m === '/churn') {
    const perTick = Number(u.searchParams.get('per_s') || 0) / 100;
    clearInterval(churn);
    let owed = 0;
    churn = perTick > 0 ? setInterval(() => {
      const all = [...pods.values()];
      for (owed += perTick; owed >= 1 && all.length; owed -= 1) {
        const p = copy(all[churned % all.length]);
        churned += 1;
        p.metadata.labels = { ...p.metadata.labels, churn: String(churned) };
        change('MODIFIED', p);
      }
    }, 10) : null;
  } else if (m === '/slow') {
    slowMs = n;
  } else if (m === '/pad') {
    const bytes = Number(u.searchParams.get('bytes') || 0);
    if (!bytes) padding = null;
    else if (u.searchParams.get('small') === '1') padding = new Array(Math.ceil(bytes / 2)).fill(0);
    else padding = Object.fromEntries(Array.from({ length: Math.ceil(bytes / 76) }, (_, i) => [`p${i}`, 'x'.repeat(64)]));
  } else if (m === '/bookmarks') {
    bookmarkMs = n;
    for (const w of watches) w.bookmarks();
  } else {
    throw new Error(`${m}: no such control`);
  }
  return { resourceVersion: String(rv) };
}

if (controlSocket) {
  http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      let code = 200;
      let out;
      try {
        out = control(req, body);
      } catch (e) {
        code = 400;
        out = { error: e.message };
      }
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(out));
    });
  }).listen(controlSocket);
}
listen(() => console.log(`listening port=${port}`));
