// SPDX-License-Identifier: Apache-2.0
// kubeapi.js - a stand-in for the Kubernetes API server, over HTTPS with a
// bearer token, answering as the API server does the reads procctl's
// clients make:
//   GET  /api/v1/namespaces/NS/pods/NAME                     a Pod
//   GET  /apis/discovery.k8s.io/v1/namespaces/NS/endpointslices?labelSelector=K=V
//   GET  /api/v1/pods?fieldSelector=spec.nodeName=N&limit=L[&continue=T]
//        a PodList, paged from one snapshot; a continue token whose
//        version was compacted away is 410 Expired
//   GET  /api/v1/pods?fieldSelector=...&watch=1&resourceVersion=RV
//        [&allowWatchBookmarks=true][&timeoutSeconds=S]
//        a chunked stream of {"type","object"} lines: the changes after RV
//        (ADDED, MODIFIED, DELETED), then each as it happens; BOOKMARKs
//        every bookmark_ms with the current version; ended after S; an RV
//        older than the history kept is answered with an ERROR event 410
//        (Gone) and the end of the stream, as the API server does.
// resourceVersions are one counter for every change, as etcd's revision.
// There is no cluster here: the objects come from OBJECTS.json and from the
// test, which validates them against their schemas (kubernetes-models).
// The test drives it on a Unix socket (CONTROL_SOCKET: reached from any
// network namespace), plain HTTP, JSON in and out:
//   POST /pods                  a Pod, added or changed (it gets the next version)
//   DELETE /pods/UID            it goes (DELETED)
//   POST /compact               the history goes: a watch from an older version is Gone
//   POST /expire                every open watch gets ERROR 410 and ends
//   POST /close                 every open watch ends, as at its timeout
//   POST /restart?down_ms=N     every connection is cut, nothing listens for N ms
//   POST /slow?ms=N             every answer waits N ms first (0: none)
//   POST /pad?bytes=N           every page of a list carries about N bytes
//                               more of valid JSON, in small fields the
//                               client does not know (a hostile server)
//   POST /bookmarks?ms=N        BOOKMARK every N ms (0: none)
//   POST /inject                the body, as it is, on every open watch (a hostile server)
//   POST /churn?per_s=N         N label changes a second, to pods taken in turn (0: stop)
//   GET  /stats                 what was asked: lists (listsBy: per node),
//                               watches (with their node and
//                               resourceVersion), open watches (openBy)
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
const history = [];       // { rv, type, object }
let oldest = rv;          // a watch from before this is Gone
const watches = new Set();
const snapshots = new Map(); // continue token -> { rv, items }
const stats = { lists: 0, pages: 0, watches: [], open: 0, listsBy: {}, openBy: {} };
let slowMs = 0;
let padding = null; // a list page's field of small fields, /pad's
let churn = null;
let churned = 0;
let bookmarkMs = 1000;
let down = false;

const copy = (o) => JSON.parse(JSON.stringify(o));

function change(type, pod) {
  rv += 1;
  const o = copy(pod);
  o.metadata.resourceVersion = String(rv);
  if (type === 'DELETED') pods.delete(o.metadata.uid);
  else pods.set(o.metadata.uid, o);
  history.push({ rv, type, object: o });
  if (history.length > 20000) oldest = history.splice(0, 10000).at(-1).rv; // compacted, as etcd is
  for (const w of watches) w.send(type, o);
  return rv;
}

for (const o of JSON.parse(fs.readFileSync(objects, 'utf8'))) {
  if (o.kind === 'Pod') change('ADDED', o);
  else objs.push(o);
}
oldest = 1000;

// ---- the API ------------------------------------------------------------

function nodeOf(u) {
  const fs_ = u.searchParams.get('fieldSelector');
  if (fs_ === null) return null;
  const m = /^spec\.nodeName=(.*)$/.exec(fs_);
  if (!m) throw status(400, 'BadRequest', `unable to parse requirement: fieldSelector ${fs_}`);
  return m[1];
}

function list(u) {
  const node = nodeOf(u);
  const limit = Number(u.searchParams.get('limit') || 0);
  const cont = u.searchParams.get('continue');
  let snap;
  if (cont) {
    snap = snapshots.get(cont);
    if (!snap || snap.rv < oldest) {
      return [410, status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.')];
    }
  } else {
    stats.lists += 1;
    stats.listsBy[node] = (stats.listsBy[node] || 0) + 1;
    snap = { rv, items: [...pods.values()].filter((p) => node === null || p.spec.nodeName === node), at: 0 };
  }
  stats.pages += 1;
  const items = limit ? snap.items.slice(snap.at, snap.at + limit) : snap.items.slice(snap.at);
  const meta = { resourceVersion: String(snap.rv) };
  if (snap.at + items.length < snap.items.length) {
    const next = { rv: snap.rv, items: snap.items, at: snap.at + items.length };
    meta.continue = Buffer.from(`${snap.rv}:${next.at}:${Math.random()}`).toString('base64');
    meta.remainingItemCount = snap.items.length - next.at;
    snapshots.set(meta.continue, next);
  }
  return [200, { kind: 'PodList', apiVersion: 'v1', metadata: meta, items, ...(padding ? { padding } : {}) }];
}

function watch(u, res) {
  const node = nodeOf(u);
  const from = Number(u.searchParams.get('resourceVersion'));
  const bookmarks = u.searchParams.get('allowWatchBookmarks') === 'true';
  const timeout = Number(u.searchParams.get('timeoutSeconds') || 1800);
  stats.watches.push({ node, resourceVersion: u.searchParams.get('resourceVersion'), timeoutSeconds: timeout, bookmarks });
  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
  const line = (type, object) => res.write(`${JSON.stringify({ type, object })}\n`);
  if (!Number.isInteger(from) || from < oldest) {
    line('ERROR', status(410, 'Expired', `too old resource version: ${from} (${oldest})`));
    res.end();
    return;
  }
  const w = {
    node,
    send(type, o) {
      if (node === null || o.spec.nodeName === node) line(type, o);
    },
    end() {
      clearInterval(w.bm);
      clearTimeout(w.to);
      watches.delete(w);
      stats.open = watches.size;
      if (!res.writableEnded) res.end();
    },
  };
  for (const e of history) if (e.rv > from) w.send(e.type, e.object);
  watches.add(w);
  stats.open = watches.size;
  w.bookmarks = () => {
    clearInterval(w.bm);
    if (bookmarks && bookmarkMs) {
      w.bm = setInterval(() => line('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } }),
        bookmarkMs);
    }
  };
  w.bookmarks();
  w.to = setTimeout(() => w.end(), timeout * 1000);
  res.on('close', () => w.end());
  w.raw = (text) => res.write(text);
  w.expire = () => {
    line('ERROR', status(410, 'Expired', 'The resourceVersion for the provided watch is too old.'));
    w.end();
  };
}

function answer(req, res) {
  if (req.method !== 'GET') return [405, status(405, 'MethodNotAllowed', 'only GET here')];
  if (req.headers.authorization !== `Bearer ${token}`) return [401, status(401, 'Unauthorized', 'Unauthorized')];
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
    return { resourceVersion: String(change('DELETED', pod)) };
  }
  if (req.method !== 'POST') throw new Error(`${req.method} ${u.pathname}: no such control`);
  m = u.pathname;
  if (m === '/compact') {
    oldest = rv; // etcd keeps the current revision

    history.length = 0;
  } else if (m === '/expire') {
    for (const w of [...watches]) w.expire();
  } else if (m === '/close') {
    for (const w of [...watches]) w.end();
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
    padding = bytes ? Object.fromEntries(Array.from({ length: Math.ceil(bytes / 76) }, (_, i) => [`p${i}`, 'x'.repeat(64)]))
      : null;
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
