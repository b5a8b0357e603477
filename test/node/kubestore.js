// SPDX-License-Identifier: Apache-2.0
// kubestore.js - the store behind kubeapi.js, as etcd and the API server's
// registry keep it: collections of objects (each resource's, by its key),
// one resourceVersion counter for every change of every kind with one
// history (compacted as etcd compacts, a watch from before it Gone), field
// and label selectors, paged lists from one snapshot with continue tokens
// (410 Expired, and the inconsistent rest, for a compacted one), and
// watches (from now or from a version, ADDED, MODIFIED and DELETED as the
// selector sees each change, bookmarks, timeouts). Each collection is served
// as a version says (served(): its fields, its objects' view, its
// bookmark, a Table for a watch); kubeapi.js owns the resources and the
// routes, and reads and sets the store's state (rv, oldest, history,
// watches, stats, padding, bookmarkMs, tokensExpire) for its controls.
'use strict';

const status = (code, reason, message, details) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message,
  reason, ...(details ? { details } : {}), code });
const copy = (o) => JSON.parse(JSON.stringify(o));
// An object's key in its collection's order: [namespace]/name.
const podKey = (p) => `${p.metadata.namespace || ''}/${p.metadata.name}`;
const byKey = (a, b) => (podKey(a) < podKey(b) ? -1 : 1);

// A collection: one resource's objects (items: by the key its store
// keys them by), its list's kind, its field selectors, whether a list's
// items carry kind and apiVersion, its bookmark's shape, and counts.
function collection(name, kind, apiVersion, keyOf, fields, itemKind, bookmark) {
  return { name, kind, apiVersion, listKind: `${kind}List`, keyOf, fields, itemKind, bookmark, items: new Map(),
    counts: { lists: 0, pages: 0, watches: 0, expired: 0, writes: 0 } };
}

// A store whose counter starts after rv; onWrite(object): each object
// written, at its new version. Its pods (s.pods, set by the caller) are
// the collection the top-level stats count.
function createStore(rv, onWrite = null) {
  const s = { rv, oldest: rv, history: [], watches: new Set(), snapshots: new Map(), pods: null, padding: null, bookmarkMs: 1000,
    tokensExpire: false, stats: { lists: 0, pages: 0, watches: [], open: 0, listsBy: {}, openBy: {}, listed: [], failed: 0, expired: 0 } };

  // A change of coll's obj (type: ADDED, MODIFIED, DELETED) at the next
  // version, told to every watch: the version.
  function change(coll, type, obj) {
    s.rv += 1;
    const o = copy(obj);
    o.metadata.resourceVersion = String(s.rv);
    if (onWrite) onWrite(o);
    const k = coll.keyOf(o);
    const prev = coll.items.get(k) || null;
    if (type === 'DELETED') coll.items.delete(k);
    else coll.items.set(k, o);
    const e = { rv: s.rv, coll, type, object: o, prev };
    s.history.push(e);
    if (s.history.length > 20000) s.oldest = s.history.splice(0, 10000).at(-1).rv; // compacted, as etcd is
    for (const w of s.watches) w.send(e);
    return s.rv;
  }

  // ---- selectors ----------------------------------------------------------

  // A label selector's text as a predicate on labels (null: none): K=V,
  // K==V, K!=V, K in (V,...), K notin (V,...), K, !K, joined by commas.
  function labelSelector(text) {
    if (text === null || text === '') return null;
    const reqs = text.match(/([^,(]|\([^)]*\))+/g).map((r) => {
      const t = r.trim();
      let m = /^(!?)([A-Za-z0-9][-A-Za-z0-9_./]*)$/.exec(t);
      if (m) return (l) => Object.hasOwn(l, m[2]) !== (m[1] === '!');
      m = /^([A-Za-z0-9][-A-Za-z0-9_./]*)\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)$/.exec(t);
      if (m) return (l) => (l[m[1]] === m[3]) !== (m[2] === '!=');
      m = /^([A-Za-z0-9][-A-Za-z0-9_./]*)\s+(in|notin)\s+\(([^)]*)\)$/.exec(t);
      if (m) {
        const vs = m[3].split(',').map((v) => v.trim());
        return (l) => (Object.hasOwn(l, m[1]) && vs.includes(l[m[1]])) !== (m[2] === 'notin');
      }
      throw status(400, 'BadRequest', `unable to parse requirement: found '${t}', expected: valid requirement`);
    });
    return (o) => reqs.every((r) => r((o.metadata && o.metadata.labels) || {}));
  }

  // The field and label selectors of u over fields (a field's value by its
  // label, the version served's) as a predicate (null: none), and its node
  // (the spec.nodeName= requirement's, for the stats).
  function selector(u, fields) {
    const text = u.searchParams.get('fieldSelector');
    const labels = labelSelector(u.searchParams.get('labelSelector'));
    let reqs = [];
    if (text !== null && text !== '') {
      reqs = text.split(',').map((r) => {
        const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(r);
        if (!m) throw status(400, 'BadRequest', `invalid selector: '${text}'; can't understand '${r}'`);
        if (!fields[m[1]]) throw status(400, 'BadRequest', `field label not supported: ${m[1]}`);
        return { field: m[1], not: m[2] === '!=', value: m[3] };
      });
    }
    if (!reqs.length && !labels) return { keep: null, node: null };
    const node = reqs.find((r) => r.field === 'spec.nodeName' && !r.not);
    return { keep: (p) => reqs.every((r) => (fields[r.field](p) === r.value) !== r.not) && (!labels || labels(p)),
      node: node ? node.value : null };
  }

  // ---- lists and watches ------------------------------------------------------

  // A continue token for snap.
  function continueToken(snap) {
    const t = Buffer.from(`${snap.rv}:${snap.at}:${Math.random()}`).toString('base64');
    s.snapshots.set(t, snap);
    return t;
  }

  // coll's objects (of namespace ns; null: all) in key order.
  const sorted = (coll, ns) => [...coll.items.values()].filter((o) => ns === null || o.metadata.namespace === ns).sort(byKey);

  // What an expired token's rest is, read now: the objects past the last it read.
  function inconsistent(snap) {
    const last = podKey(snap.items[snap.at - 1]);
    const items = sorted(snap.coll, snap.ns);
    const at = items.findIndex((p) => podKey(p) > last);
    return { rv: s.rv, coll: snap.coll, ns: snap.ns, items, at: at < 0 ? items.length : at };
  }

  // A list's item: a Pod without kind and apiVersion, as the API server
  // gives it; a custom resource as it is stored, with them.
  function item(coll, p) {
    if (coll.itemKind) return p;
    const { kind, apiVersion, ...rest } = p;
    return rest;
  }

  // How coll is served (a version of it): its selectors' fields, each
  // object as it gives it (in a list, or alone), its bookmark; and (render)
  // a watch's object as a Table (null: as it is).
  const served = (coll) => ({ fields: coll.fields, view: (o, inList) => (inList ? item(coll, o) : o), bookmark: coll.bookmark,
    render: null });

  function list(u, coll, ns, how = served(coll)) {
    const { keep, node } = selector(u, how.fields);
    const cont = u.searchParams.get('continue');
    const want = u.searchParams.get('resourceVersion');
    const match = u.searchParams.get('resourceVersionMatch');
    // resourceVersion "0": the watch cache's, which pages nothing.
    const limit = want === '0' ? 0 : Number(u.searchParams.get('limit') || 0);
    let snap;
    if (cont) {
      snap = s.snapshots.get(cont);
      if (!snap || snap.coll !== coll || snap.ns !== ns) return [400, status(400, 'BadRequest', 'invalid continue token')];
      if (snap.rv < s.oldest || s.tokensExpire) {
        coll.counts.expired += 1;
        if (coll === s.pods) s.stats.expired += 1;
        const e = status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. '
          + 'You can start a new list without the continue parameter, or use the continue token in this response to '
          + 'retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list '
          + '- objects that were created, modified, or deleted between the time the first chunk was returned and now '
          + 'may show up in the list.');
        e.metadata.continue = continueToken(inconsistent(snap));
        return [410, e];
      }
    } else {
      if (want && want !== '0' && Number(want) > s.rv) {
        return [504, status(504, 'Timeout', `Too large resource version: ${want}, current: ${s.rv}`)];
      }
      coll.counts.lists += 1;
      if (coll === s.pods) {
        s.stats.lists += 1;
        s.stats.listsBy[node] = (s.stats.listsBy[node] || 0) + 1;
        s.stats.listed.push({ node, resourceVersion: want, resourceVersionMatch: match, limit });
      }
      snap = { rv: s.rv, coll, ns, items: sorted(coll, ns), at: 0 };
    }
    coll.counts.pages += 1;
    if (coll === s.pods) s.stats.pages += 1;
    const read = limit ? snap.items.slice(snap.at, snap.at + limit) : snap.items.slice(snap.at);
    const items = read.filter((p) => !keep || keep(p)).map((p) => how.view(p, true));
    const meta = { resourceVersion: String(snap.rv) };
    if (snap.at + read.length < snap.items.length) {
      const next = { ...snap, at: snap.at + read.length };
      meta.continue = continueToken(next);
      if (!keep) meta.remainingItemCount = snap.items.length - next.at; // not said under a selector
    }
    return [200, { kind: coll.listKind, apiVersion: coll.apiVersion, metadata: meta, items,
      ...(s.padding ? { padding: s.padding } : {}) }];
  }

  // The open watches of coll.
  const open = (coll) => [...s.watches].filter((w) => w.coll === coll).length;

  function watch(u, res, coll, ns, how = served(coll)) {
    const { keep, node } = selector(u, how.fields);
    const want = u.searchParams.get('resourceVersion');
    const from = want === null || want === '' || want === '0' ? null : Number(want);
    const bookmarks = u.searchParams.get('allowWatchBookmarks') === 'true';
    const timeout = Number(u.searchParams.get('timeoutSeconds') || 1800);
    coll.counts.watches += 1;
    if (coll === s.pods) s.stats.watches.push({ node, resourceVersion: want, timeoutSeconds: timeout, bookmarks });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders(); // as the API server does: the answer starts before any event
    let first = true;
    const line = (type, object) => {
      let o = type === 'ERROR' ? object : how.view(object, false);
      if (how.render && type !== 'ERROR' && type !== 'BOOKMARK') o = how.render(o, first);
      first = false;
      res.write(`${JSON.stringify({ type, object: o })}\n`);
    };
    if (from !== null && (!Number.isInteger(from) || from < s.oldest)) {
      line('ERROR', status(410, 'Expired', `too old resource version: ${from} (${s.oldest})`));
      res.end();
      return;
    }
    const passes = (p) => p !== null && (ns === null || p.metadata.namespace === ns) && (!keep || keep(p));
    const w = {
      node,
      coll,
      backlog: () => res.writableLength, // bytes written, not yet taken by the client (TCP pushed back)
      send(e) {
        if (e.coll !== coll) return;
        const now = e.type !== 'DELETED' && passes(e.object);
        const before = passes(e.prev);
        if (now && !before) line('ADDED', e.object);
        else if (now) line('MODIFIED', e.object);
        else if (before) { // gone from the selection: the object as it was, at the new version
          const o = copy(e.prev);
          o.metadata.resourceVersion = e.object.metadata.resourceVersion;
          line('DELETED', o);
        }
      },
      end() {
        clearInterval(w.bm);
        clearTimeout(w.to);
        s.watches.delete(w);
        s.stats.open = open(s.pods);
        if (!res.writableEnded) res.end();
      },
    };
    if (from === null) { // the state now, then what follows
      for (const p of coll.items.values()) if (passes(p)) line('ADDED', p);
    } else {
      for (const e of s.history) if (e.rv > from) w.send(e);
    }
    s.watches.add(w);
    s.stats.open = open(s.pods);
    w.bookmarks = () => {
      clearInterval(w.bm);
      if (bookmarks && s.bookmarkMs) w.bm = setInterval(() => line('BOOKMARK', how.bookmark()), s.bookmarkMs);
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

  return Object.assign(s, { change, selector, sorted, item, served, list, watch, open });
}

module.exports = { createStore, collection, podKey };
