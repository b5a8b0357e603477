// SPDX-License-Identifier: Apache-2.0
// kubefollow.test.js - procctl-node follows the API server as a client of
// it must (client-go's reflector and pager), against kubeapi.js answering
// as kube-apiserver does (selectors filter pages and watches; no
// remainingItemCount under a selector; lists at resourceVersion 0 from
// the watch cache): finished pods take no room; past kubernetes_pods_max
// every page is read and the rest counted exactly, and taken in when
// there is room; an expired continue token is followed by the whole list
// at once, as client-go's pager does; a NUL in a pod costs that pod at
// most; a watch cut mid-stream is made again, no failure; while the
// API fails procctl_kube_synced is 0, and kube_api_recovered is said as
// soon as a watch runs again; a 429's Retry-After is heeded; a static
// pod's process is known by its mirror pod, a `kubectl debug`
// container's by its ephemeral status. Each test has a stand-in and a
// daemon of its own.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const h = require('./harness');
const { Cluster } = require('./netns');
const stand = require('./kubestand');

const scratch = h.scratch('procctl-kubefollow-');
const { file, ca, leaf } = require('./certs').certs(scratch);
const { pod } = stand;
const D = `kf${process.pid}`.slice(0, 31); // this file's daemons' consumer
let cluster;

before(async () => {
  await stand.load();
  stand.credentials(file, ca, leaf);
  cluster = await Cluster.create('pckf');
});

after(async () => {
  await h.killAll();
  // Left: only a kubepods level that another test's pods are still in.
  if (cluster) for (const d of await cluster.destroy()) assert.match(d, /\/kubepods(\.slice|\.slice\/kubepods-besteffort\.slice)$/);
});

// A stand-in of objs, and a daemon following it as node-a (more: its
// kubernetes flags; args: its others), once it listed.
async function follow(t, objs, more = [], args = []) {
  const port = await h.freePort();
  const api = await stand.apiServer(file, objs, { port });
  const d = await new h.Daemon({ consumers: D, args: ['--http-listen', '127.0.0.1:0', ...args,
    ...stand.kubeArgs(file, `https://127.0.0.1:${port}`, more)] }).ready();
  t.after(async () => {
    if (d.exit === null) await d.stop();
    await api.kill();
  });
  const hp = await d.httpPort();
  const m = (name) => h.metric(hp, name);
  await h.until(async () => (await m('procctl_kube_synced')) === 1, { what: 'listed', timeout: 30000 });
  return { api, d, m, stats: () => api.ctl('GET', '/stats') };
}

const watching = (stats) => h.until(async () => {
  const s = await stats();
  return s.open === 1 && s;
}, { what: 'a watch open', timeout: 30000 });

test('finished pods take no room: 1,100 finished Job pods and two running ones, the running ones kept; a pod that finishes goes', async (t) => {
  const done = Array.from({ length: 1100 }, (_, i) => pod(`job-${String(i).padStart(4, '0')}`, { ns: 'batch', phase: 'Succeeded' }));
  const running = [pod('run-1', { ns: 'zz', phase: 'Running' }), pod('run-2', { ns: 'zz', phase: 'Running' })];
  // Before, the first 1,024 in key order were kept: finished ones alone.
  const { api, m, stats } = await follow(t, [...done, ...running]);
  assert.equal(await m('procctl_kube_pods'), 2);
  assert.equal(await m('procctl_kube_pods_dropped'), 0);
  await watching(stats);
  await api.ctl('POST', '/pods', { ...running[0], status: { phase: 'Succeeded' } });
  await h.until(async () => (await m('procctl_kube_pods')) === 1, { what: 'the finished pod gone (DELETED: no longer selected)' });
});

test('past kubernetes_pods_max, lists from the watch cache, then a consistent read of sparse pages: every page read, the rest counted exactly, and taken in when a kept pod goes', async (t) => {
  // 250 pods of node-b first in key order, then node-a's 250: a
  // consistent read's first pages hold none of node-a's, and none says
  // how many remain (a selector).
  const other = Array.from({ length: 250 }, (_, i) => pod(`o-${String(i).padStart(3, '0')}`, { ns: 'aaa', nodeName: 'node-b' }));
  const mine = Array.from({ length: 250 }, (_, i) => pod(`p-${String(i).padStart(3, '0')}`));
  const { api, m, stats } = await follow(t, [...other, ...mine], ['--kubernetes-pods-max', '120']);
  assert.equal(await m('procctl_kube_pods'), 120);
  assert.equal(await m('procctl_kube_pods_dropped'), 130);
  let s = await stats();
  assert.deepEqual(s.listed.map((l) => l.resourceVersion), ['0'], 'the first list: the watch cache\'s (resourceVersion 0)');
  // A 410: the cache's version is gone too, so a consistent read, paged.
  await watching(stats);
  const pages = s.pages;
  await api.ctl('POST', '/expire');
  await h.until(async () => (await stats()).lists === 2, { what: 'listed again after the 410' });
  await h.until(async () => (await watching(stats)).lists === 2 && (await m('procctl_kube_pods_dropped')) === 130,
    { what: 'the consistent list applied' });
  s = await stats();
  assert.deepEqual(s.listed[1], { node: 'node-a', resourceVersion: null, resourceVersionMatch: null, limit: 100 });
  assert.equal(s.pages - pages, 5, 'every page read: two with none of node-a\'s, then 250 of its pods past the first full page');
  assert.equal(await m('procctl_kube_pods'), 120);
  // A kept pod deleted: room for one of those counted, so a list (from
  // the cache, not older than what was seen), no failure even right
  // after the list before.
  const errors = await m('procctl_kube_api_errors_total');
  const deleted = await api.ctl('DELETE', `/pods/${mine[0].metadata.uid}`);
  await h.until(async () => (await stats()).lists === 3, { what: 'a list for the room' });
  await h.until(async () => (await m('procctl_kube_pods_dropped')) === 129, { what: 'one taken in' });
  assert.equal(await m('procctl_kube_pods'), 120);
  s = await stats();
  assert.equal(s.listed[2].resourceVersionMatch, 'NotOlderThan');
  assert.equal(await m('procctl_kube_api_errors_total'), errors);
  assert.equal(s.listed[2].resourceVersion, deleted.resourceVersion, 'not older than the deletion it saw');
});

test('a continue token that expired: the list is read again at once, a consistent read, not paged again from the start (which never ends when every token expires)', async (t) => {
  const mine = Array.from({ length: 250 }, (_, i) => pod(`c-${String(i).padStart(3, '0')}`));
  const { api, d, m, stats } = await follow(t, mine);
  await watching(stats);
  const errors = await m('procctl_kube_api_errors_total');
  // A 410 on the watch: a consistent read, paged (100 pods a page), whose
  // second page's token has expired, as every token will.
  await api.ctl('POST', '/tokens?expire=1');
  await api.ctl('POST', '/expire');
  const s = await h.until(async () => (await watching(stats)).lists === 3 && stats(), { what: 'listed, then watching' });
  assert.ok(d.lines.some((l) => /level=info event=kube_continue_expired action=list_whole/.test(l)), d.lines.join('\n'));
  assert.deepEqual(s.listed.slice(1), [
    { node: 'node-a', resourceVersion: null, resourceVersionMatch: null, limit: 100 },
    { node: 'node-a', resourceVersion: null, resourceVersionMatch: null, limit: 0 },
  ]);
  assert.equal(s.expired, 1);
  assert.equal(await m('procctl_kube_pods'), 250);
  assert.equal(await m('procctl_kube_synced'), 1);
  assert.equal(await m('procctl_kube_api_errors_total'), errors, 'no failure, no backoff');
});

test('a NUL (\\u0000) in a pod costs that pod at most: kept when it is in what the daemon does not read (an annotation, an argument, as the API server keeps them), skipped alone in a label (a hostile server); lists and watches go on', async (t) => {
  const note = pod('nul-note', { annotations: { note: 'a\u0000b' } });
  note.spec.containers[0].args = ['\u0000'];
  const label = pod('nul-label');
  label.metadata.labels = { app: 'we\u0000b' }; // no valid Pod: the API server would refuse it
  // Before, the page failed to parse (a NUL is not allowed), and with it
  // every list: no pod at all.
  const { api, d, m, stats } = await follow(t, [note, label, pod('fine')]);
  assert.equal(await m('procctl_kube_pods'), 2);
  assert.equal(await m('procctl_kube_rejected_total'), 1);
  assert.ok(d.lines.some((l) => /event=kube_rejected what=list_item count=1 reason="items\[\d\]: metadata.labels: \\"app\\"/.test(l)),
    d.lines.join('\n'));
  await watching(stats);
  await api.ctl('POST', '/pods', pod('later', { annotations: { x: '\u0000' } }));
  await h.until(async () => (await m('procctl_kube_pods')) === 3, { what: 'a pod with a NUL, added later, kept' });
  assert.equal(await m('procctl_kube_synced'), 1);
  assert.equal((await stats()).lists, 1);
});

test('a watch cut mid-stream is made again from where it was: no failure, no backoff', async (t) => {
  const w = pod('w-1');
  const { api, d, m, stats } = await follow(t, [w]);
  const errors = await m('procctl_kube_api_errors_total');
  const events = await m('procctl_kube_watch_events_total');
  for (let i = 1; i <= 3; i++) {
    const s0 = await watching(stats);
    const { resourceVersion } = await api.ctl('POST', '/pods', { ...w, metadata: { ...w.metadata, labels: { n: String(i) } } });
    await h.until(async () => (await m('procctl_kube_watch_events_total')) === events + i, { what: `change ${i} seen` });
    await api.ctl('POST', '/cut');
    const s1 = await h.until(async () => {
      const s = await stats();
      return s.watches.length > s0.watches.length && s.open === 1 && s;
    }, { what: 'the watch made again' });
    assert.equal(s1.watches.at(-1).resourceVersion, resourceVersion, 'from the last version seen');
    assert.equal(s1.lists, 1, 'no list');
  }
  assert.equal(await m('procctl_kube_api_errors_total'), errors, 'a cut is no failure');
  assert.ok(!d.lines.some((l) => /event=kube_api_failed/.test(l)), d.lines.join('\n'));
  assert.ok(d.lines.some((l) => /level=info event=kube_watch_cut error=".+" action=watch/.test(l)), d.lines.join('\n'));
});

test('the API failing: procctl_kube_synced is 0 until a watch runs again, and kube_api_recovered is said then, not a watch\'s term later; a 429\'s Retry-After is heeded', async (t) => {
  const { api, d, m, stats } = await follow(t, [pod('f-1')]);
  await watching(stats);
  await api.ctl('POST', '/fail?code=500&count=1000000');
  await api.ctl('POST', '/close');
  await h.until(async () => (await m('procctl_kube_synced')) === 0, { what: 'not synced while it fails' });
  await d.line(/event=kube_api_failed what=watch error="HTTP 500: \\"failing on purpose \(500\)\\"" retry_ms=\d+/);
  const watches = (await stats()).watches.length;
  await api.ctl('POST', '/fail?code=500&count=0');
  // The watches last 60 to 120 s here (--kubernetes-watch-s 60): said
  // while the first since is still open.
  await d.line(/event=kube_api_recovered what=watch/, { timeout: 40000 });
  const s = await stats();
  assert.equal(s.watches.length, watches + 1);
  assert.equal(s.open, 1);
  assert.equal(await m('procctl_kube_synced'), 1);
  // 429 Too Many Requests, Retry-After: 7: it waits the 7 s it was told.
  await api.ctl('POST', '/fail?code=429&count=1&retry_after=7');
  await api.ctl('POST', '/close');
  await d.line(/event=kube_api_failed what=watch error="HTTP 429: \\"failing on purpose \(429\)\\"" retry_ms=7000/);
});

test('a static pod\'s process is known by its mirror pod (kubernetes.io/config.mirror), a `kubectl debug` container\'s by its ephemeral status', async (t) => {
  const hash = crypto.randomBytes(16).toString('hex'); // the kubelet's hash of the manifest: the static pod's UID
  const etcd = cluster.pod('etcd-node-a', hash);
  const etcdC = etcd.container();
  const web = cluster.pod('web-1');
  const app = web.container();
  const dbg = web.container();
  const conf = file('static.conf');
  fs.writeFileSync(conf, `[desired etcd]\nconsumer = ${D}\nnamespace = kube-system\nlabel_selector = component=etcd\ndata = etcd-conf\n`);
  const { d } = await follow(t, [
    pod('etcd-node-a', { ns: 'kube-system', labels: { component: 'etcd' }, container: etcdC.id,
      annotations: { 'kubernetes.io/config.mirror': hash, 'kubernetes.io/config.hash': hash, 'kubernetes.io/config.source': 'file' } }),
    pod('web-1', { uid: web.uid, container: app.id, ephemeral: dbg.id }),
  ], [], ['--config', conf]);
  const echo = (container) => new h.Child('sh', ['-c', 'echo $$ > "$1/cgroup.procs" && exec "$2" --consumer "$3"', 'sh',
    container.cgroup, h.ECHO_CLIENT, D]);
  const e1 = echo(etcdC);
  const e2 = echo(dbg);
  t.after(async () => {
    await e1.kill('SIGKILL');
    await e2.kill('SIGKILL');
  });
  await e1.line(/^event=applied gen=\d+ .*payload=etcd-conf$/, { out: true, timeout: 30000 });
  const c = d.client();
  try {
    const list = async (podUid) => (await h.call(c, 'ListProcesses', { filter: { podUid } })).processes;
    const [p1] = await h.until(async () => (await list(hash)).length === 1 && list(hash), { what: 'the static pod\'s process' });
    assert.equal(`${p1.podNamespace}/${p1.podName}/${p1.containerName}`, 'kube-system/etcd-node-a/app');
    const [p2] = await h.until(async () => {
      const ps = await list(web.uid);
      return ps.length === 1 && ps[0].containerName && ps;
    }, { what: 'the debug container\'s process, named' });
    assert.equal(`${p2.podNamespace}/${p2.podName}/${p2.containerName}`, 'prod/web-1/debugger');
  } finally {
    c.close();
  }
});
