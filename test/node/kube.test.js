// SPDX-License-Identifier: Apache-2.0
// kube.test.js - procctl-node follows the Kubernetes API server's view of
// its node's pods (kubernetes_api): it lists them, watches them from the
// list's resourceVersion, names each process's pod (namespace, name) in
// ListProcesses and `procctl ps`, and applies [desired] sections and
// desired configs that select by namespace and labels, following the
// pods' labels as they change. The API server is kubeapi.js, a stand-in
// that keeps the watch protocol (chunked events, one version counter,
// bookmarks, 410 Gone for a compacted version, watches that end,
// restarts, slowness) with Pods validated against the Kubernetes schemas;
// the nodes are namespaces of netns.js (two, each with its daemon and the
// same ConfigMap), their pods kubelet-named cgroups.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const h = require('./harness');
const { Cluster } = require('./netns');
const { run, exits } = require('./clirun');

const scratch = h.scratch('procctl-kube-');
const { file, ca, leaf } = require('./certs').certs(scratch);
const stand = require('./kubestand');
const PORT = 6443;
const C = h.CONSUMER;
const T = `tok${process.pid}`.slice(0, 31); // the token clients' consumer, an [arbiter gpu]'s

let cluster, node, nodeB, api, daemon, daemonB, client, clientB;

// The ConfigMap both daemons read: shop's web pods get "shop-web"; any
// pod labelled tier=front, "front" (below it: no namespace).
const CONF = `[desired shop-web]\nconsumer = ${C}\nnamespace = shop\nlabel_selector = app=web\ndata = shop-web\n\n` +
  `[desired front]\nconsumer = ${C}\nlabel_selector = tier in (front)\ndata = front\n\n` +
  `[arbiter gpu]\nkind = 1\nconsumer = ${T}\nhold_ms = 100\nresources = 00000000-0000-0000-0000-000000000000\n`;

const { pod } = stand;
// The stand-in (kubestand.js): in the cluster's network, on PORT, unless told.
const apiServer = (objs, o = {}) => stand.apiServer(file, objs, { port: PORT, host: '0.0.0.0', ...o });
const kubeArgs = (url, more = []) => stand.kubeArgs(file, url, more);

// node-a's daemon's /metrics, read inside the node.
function metric(name) {
  const body = node.run(['curl', '-sf', '--max-time', '5', 'http://127.0.0.1:9464/metrics']);
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

// The pod names ListProcesses gives the processes of pod uid.
async function names(uid) {
  const { processes } = await h.call(client, 'ListProcesses', { filter: { podUid: uid } });
  return processes.map((p) => `${p.podNamespace}/${p.podName}`);
}

const pods = {};

// What node-a's daemon asked of the stand-in: lists, watches, open ones.
async function asked() {
  const s = await api.ctl('GET', '/stats');
  return { ...s, lists: s.listsBy['node-a'] || 0, open: s.openBy['node-a'] || 0,
    watches: s.watches.filter((w) => w.node === 'node-a') };
}

before(async () => {
  await stand.load();
  stand.credentials(file, ca, leaf);
  fs.writeFileSync(file('node.conf'), CONF);
  cluster = await Cluster.create('pckube');
  node = await cluster.node('node-a');
  nodeB = await cluster.node('node-b');
  // web-1 and batch-1: the watch's tests; shop-*: the selection's.
  const spec = {
    'web-1': { labels: { app: 'web', tier: 'back' } },
    'batch-1': { ns: 'jobs', labels: { app: 'batch' } },
    'shop-web-a': { ns: 'shop', labels: { app: 'web' } },
    'shop-db-a': { ns: 'shop', labels: { app: 'db' } },
    'shop-web-b': { ns: 'shop', labels: { app: 'web' }, nodeName: 'node-b' },
    'jobs-web-b': { ns: 'jobs', labels: { app: 'web' }, nodeName: 'node-b' },
  };
  for (const [name, o] of Object.entries(spec)) {
    const p = cluster.pod(name);
    pods[name] = { uid: p.uid, container: p.container(), node: o.nodeName === 'node-b' ? nodeB : node, spec: o };
  }
  api = await apiServer([
    ...Object.entries(pods).map(([name, p]) => pod(name, { uid: p.uid, container: p.container.id, ...p.spec })),
    pod('web-2', { labels: { app: 'web' }, nodeName: 'node-c' }), // another node's
  ], { prefix: cluster.prefix() });
  daemon = await new h.Daemon({ prefix: node.prefix(), consumers: `${C},${T}`, args: ['--http-listen', '127.0.0.1:9464',
    '--config', file('node.conf'), '--metrics-namespaces', '2', ...kubeArgs(`https://10.77.1.1:${PORT}`)] }).ready();
  daemonB = await new h.Daemon({ prefix: nodeB.prefix(), consumers: `${C},${T}`, args: ['--config', file('node.conf'),
    ...kubeArgs(`https://10.77.2.1:${PORT}`, ['--kubernetes-node', 'node-b'])] }).ready();
  client = daemon.client();
  clientB = daemonB.client();
  for (const p of Object.values(pods)) p.echo = await p.node.echo(C, p.container);
  // Every pod's process attached by its node's daemon (a test that wants
  // one left alone saw none at all, node-b's not attached yet).
  const attached = async (p) => (await h.call(p.node === nodeB ? clientB : client, 'ListProcesses',
    { filter: { podUid: p.uid } })).processes.length === 1;
  await h.until(async () => (await Promise.all(Object.values(pods).map(attached))).every(Boolean),
    { what: 'every pod\'s process attached on its node' });
  await h.until(async () => (await names(pods['batch-1'].uid)).length === 1 && (await names(pods['web-1'].uid)).length === 1,
    { what: 'node-a\'s pods\' processes attached' });
});

after(async () => {
  if (client) client.close();
  if (clientB) clientB.close();
  if (daemon && daemon.exit === null) await daemon.stop();
  if (daemonB && daemonB.exit === null) await daemonB.stop();
  if (api) await api.kill();
  if (cluster) await cluster.destroy();
});

test('it lists its node\'s pods alone, with the token over TLS, and watches from the list\'s resourceVersion', async () => {
  await h.until(async () => (await names(pods['web-1'].uid))[0] === 'prod/web-1', { what: 'web-1 named' });
  assert.deepEqual(await names(pods['batch-1'].uid), ['jobs/batch-1']);
  assert.equal(metric('procctl_kube_synced'), 1);
  assert.equal(metric('procctl_kube_pods'), 4, 'node-a\'s four, not node-b\'s or node-c\'s');
  const st = await asked();
  assert.equal(st.lists, 1);
  // Its running pods (not the finished ones), from the API server's watch cache (resourceVersion 0).
  const sel = (n) => `/api/v1/pods?fieldSelector=spec.nodeName%3D${n}%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed`;
  assert.ok(api.out.some((l) => l.includes(`${sel('node-a')}&resourceVersion=0 code=200`)), api.out.join('\n'));
  assert.ok(api.out.some((l) => l.includes(`${sel('node-b')}&resourceVersion=0 code=200`)));
  assert.equal(st.watches[0].resourceVersion, '1007', 'the list\'s version: the seven pods were 1001 to 1007');
  assert.equal(st.watches[0].bookmarks, true);
  assert.ok(st.watches[0].timeoutSeconds >= 60 && st.watches[0].timeoutSeconds < 120, JSON.stringify(st.watches[0]));
});

// The generations of a pod's processes, as a daemon says.
async function gens(c, uid) {
  return (await h.call(c, 'ListProcesses', { filter: { podUid: uid } })).processes.map((p) => Number(p.generation));
}

// A [desired] section's rollout on a daemon.
async function rollout(c, source) {
  const d = (await h.call(c, 'ListDesiredConfigs', {})).configs.find((x) => x.source === source);
  return d.rollout;
}

test('[desired] by namespace and labels: applied to exactly the matching pods\' processes, on each node', async () => {
  await pods['shop-web-a'].echo.line(/^event=applied gen=\d+ .*payload=shop-web$/, { out: true });
  await pods['shop-web-b'].echo.line(/^event=applied gen=\d+ .*payload=shop-web$/, { out: true });
  await h.until(async () => (await rollout(client, 'shop-web')).applied === 1 && (await rollout(clientB, 'shop-web')).applied === 1,
    { what: 'one applied on each node' });
  // shop's db pod, jobs' web pod, and the rest: nothing.
  assert.deepEqual(await gens(client, pods['shop-db-a'].uid), [0]);
  assert.deepEqual(await gens(clientB, pods['jobs-web-b'].uid), [0]);
  assert.deepEqual(await gens(client, pods['batch-1'].uid), [0]);
  assert.deepEqual(await gens(client, pods['web-1'].uid), [0]);
  const cfg = (await h.call(client, 'ListDesiredConfigs', {})).configs.find((x) => x.source === 'front');
  assert.equal(cfg.selector.labelSelector, 'tier in (front)');
  assert.equal(cfg.selector.namespace, '');
  // ListProcesses selects the same way.
  const sel = await h.call(client, 'ListProcesses', { filter: { namespace: 'shop', labelSelector: 'app=web' } });
  assert.deepEqual(sel.processes.map((p) => p.podUid), [pods['shop-web-a'].uid]);
  const r = exits(await run(['ps', '-n', 'shop', '-l', 'app notin (web)'], { sock: daemon.sock }), 0);
  assert.deepEqual(r.stdout.split('\n').filter((l) => l.includes(' shop/')).map((l) => l.split(/\s+/).at(-1)), ['shop/shop-db-a/app']);
});

test('a pod\'s labels changing move its processes to the config that selects them now, and a Publish over one that still does stays', async () => {
  const p = pods['shop-db-a'];
  const relabel = (labels) => api.ctl('POST', '/pods', pod('shop-db-a', { uid: p.uid, ns: 'shop', labels }));
  await relabel({ app: 'db', tier: 'front' });
  await p.echo.line(/^event=applied gen=\d+ .*payload=front$/, { out: true });
  await h.until(async () => (await rollout(client, 'front')).applied === 1, { what: 'front applied once' });
  await relabel({ app: 'web', tier: 'front' }); // both select it: shop-web has a namespace
  await p.echo.line(/^event=applied gen=\d+ .*payload=shop-web$/, { out: true });
  await h.until(async () => (await rollout(client, 'shop-web')).applied === 2 && (await rollout(client, 'front')).applied === 0,
    { what: 'the rollouts to follow' });
  await relabel({ app: 'db' }); // neither: cleared, as a deleted config's processes are
  await p.echo.line(/^event=cleared gen=\d+/, { out: true });

  // A Publish over shop-web-a's config, then a label that changes nothing of what applies: it stays.
  const w = pods['shop-web-a'];
  const [proc] = (await h.call(client, 'ListProcesses', { filter: { podUid: w.uid } })).processes;
  await h.call(client, 'Publish', { selector: { pid: proc.ref.pid }, payload: Buffer.from('mine'), waitMs: 5000 });
  const [before_] = await gens(client, w.uid);
  await api.ctl('POST', '/pods', pod('shop-web-a', { uid: w.uid, ns: 'shop', labels: { app: 'web', team: 'x' } }));
  await relabel({ app: 'db', tier: 'front' }); // a barrier: applied after the one above
  await h.until(async () => (await rollout(client, 'front')).applied === 1, { what: 'front applied again' });
  assert.deepEqual(await gens(client, w.uid), [before_], 'the Publish stays');
  assert.equal((await rollout(client, 'shop-web')).superseded, 1);
});

test('SetDesiredConfig by namespace and labels: canonical, and refused where it cannot hold', async () => {
  const sel = { consumer: C, schemaVersion: 1, namespace: 'jobs', labelSelector: ' app in (web,batch) , app != x' };
  await h.call(clientB, 'SetDesiredConfig', { config: { selector: sel, payload: Buffer.from('jobs') }, waitMs: 5000 });
  await pods['jobs-web-b'].echo.line(/^event=applied gen=\d+ .*payload=jobs$/, { out: true });
  const cfg = (await h.call(clientB, 'ListDesiredConfigs', {})).configs.find((x) => x.selector.namespace === 'jobs');
  assert.equal(cfg.selector.labelSelector, 'app!=x,app in (batch,web)');
  await h.call(clientB, 'DeleteDesiredConfig', { selector: { ...sel, labelSelector: 'app in (web,batch),app!=x' }, clear: true });
  await pods['jobs-web-b'].echo.line(/^event=cleared gen=\d+/, { out: true });
  const bad = await h.code(h.call(client, 'ListProcesses', { filter: { labelSelector: 'app in (web' } }));
  assert.equal(bad, 'INVALID_ARGUMENT');
  assert.equal(await h.code(h.call(client, 'ListProcesses', { filter: { namespace: 'Shop' } })), 'INVALID_ARGUMENT');
  const stream = client.WatchEvents({ filter: { namespace: 'shop' } });
  const err = await new Promise((resolve) => { stream.on('error', resolve); stream.on('data', () => {}); });
  assert.equal(h.grpc.status[err.code], 'INVALID_ARGUMENT');
  assert.match(err.details, /not for WatchEvents/);
  const plain = await new h.Daemon({ consumers: `plain${process.pid}`.slice(0, 31) }).ready();
  try {
    const c = plain.client();
    try {
      await assert.rejects(h.call(c, 'ListProcesses', { filter: { namespace: 'shop' } }),
        (e) => h.grpc.status[e.code] === 'FAILED_PRECONDITION' && /follows no Kubernetes API server/.test(e.details));
      // A watch by namespace or labels is never served: INVALID_ARGUMENT without Kubernetes too.
      for (const filter of [{ namespace: 'shop' }, { labelSelector: 'app=web' }]) {
        const w = c.WatchEvents({ filter });
        const e = await new Promise((resolve) => { w.on('error', resolve); w.on('data', () => {}); });
        assert.equal(h.grpc.status[e.code], 'INVALID_ARGUMENT', JSON.stringify(filter));
        assert.match(e.details, /not for WatchEvents/);
      }
    } finally {
      c.close();
    }
  } finally {
    await plain.stop();
  }
});

test('metrics_namespaces: whose pods held and waited for a resource, at most so many namespaces a resource', async () => {
  const witness = file('witness');
  const tokens = [];
  const uids = [];
  for (const ns of ['shop', 'jobs', 'infra']) {
    const p = cluster.pod(`gpu-${ns}`);
    const container = p.container();
    await api.ctl('POST', '/pods', pod(`gpu-${ns}`, { uid: p.uid, ns }));
    uids.push(p.uid);
    const t = new h.Child('sh', ['-c', 'echo $$ > "$1/cgroup.procs" && exec "$2" --consumer "$3" --kind 1 --id 0 --witness "$4"',
      'sh', container.cgroup, h.TOKEN_CLIENT, T, witness], { prefix: node.prefix() });
    await t.line(/^event=started pid=\d+$/, { out: true });
    tokens.push(t);
  }
  try {
    const series = (name) => node.run(['curl', '-sf', '--max-time', '5', 'http://127.0.0.1:9464/metrics']).split('\n')
      .filter((l) => l.startsWith(`${name}{`)).map((l) => [/namespace="([^"]*)"/.exec(l)[1], Number(l.split(' ').at(-1))]);
    // Three namespaces take turns: two are named, the third is _other.
    await h.until(() => {
      const held = Object.fromEntries(series('procctl_resource_namespace_hold_seconds_total'));
      return Object.keys(held).length === 3 && Object.values(held).every((v) => v > 0) && held;
    }, { what: 'three namespaces to have held it', timeout: 20000 });
    const held = series('procctl_resource_namespace_hold_seconds_total').map(([ns]) => ns).sort();
    assert.equal(held.length, 3);
    assert.ok(held.includes('_other'), held.join(' '));
    assert.equal(held.filter((ns) => ['shop', 'jobs', 'infra'].includes(ns)).length, 2, held.join(' '));
    await h.until(() => series('procctl_resource_namespace_blocked_seconds_total').some(([, v]) => v > 0),
      { what: 'time blocked, by namespace' });
    // The whole exposition, procctl_kube_* and these with it, as Prometheus's linter reads it.
    node.run(['bash', '-c', 'set -o pipefail; curl -sf --max-time 5 http://127.0.0.1:9464/metrics | promtool check metrics']);
  } finally {
    for (const t of tokens) await t.kill('SIGTERM');
    for (const uid of uids) await api.ctl('DELETE', `/pods/${uid}`);
  }
});

test('procctl ps shows the namespace and name of each process\'s pod, and its container\'s', async () => {
  const r = exits(await run(['ps'], { sock: daemon.sock }), 0);
  const out = r.stdout.split('\n');
  assert.match(out[0], /NAMESPACE\/POD\/CONTAINER$/);
  const line = out.find((l) => l.includes(pods['web-1'].uid));
  assert.match(line, / prod\/web-1\/app$/, 'its container named, from the pod\'s status');
});

test('a pod deleted and made again with the same name but a new UID: the old process loses the name and config, the new one has them', async () => {
  const old = pods['web-1'];
  await api.ctl('POST', '/pods', pod('web-1', { uid: old.uid, labels: { app: 'web', tier: 'front' } }));
  await old.echo.line(/^event=applied gen=\d+ .*payload=front$/, { out: true });
  await api.ctl('DELETE', `/pods/${old.uid}`);
  await h.until(async () => (await names(old.uid))[0] === '/', { what: 'the deleted pod\'s name to go' });
  await old.echo.line(/^event=cleared gen=\d+/, { out: true }); // its pod is no longer known: nothing selects it
  const p = cluster.pod('web-1');
  const again = { uid: p.uid, container: p.container() };
  await api.ctl('POST', '/pods', pod('web-1', { uid: again.uid, labels: { app: 'web', tier: 'front' } }));
  again.echo = await node.echo(C, again.container);
  await h.until(async () => (await names(again.uid))[0] === 'prod/web-1', { what: 'the new web-1 named' });
  await again.echo.line(/^event=applied gen=\d+ .*payload=front$/, { out: true });
  assert.deepEqual(await names(old.uid), ['/'], 'the old UID is no pod now');
  await h.until(() => metric('procctl_kube_pods') === 4, { what: 'node-a\'s four pods' });
  assert.equal((await asked()).lists, 1, 'events, not a list');
  pods['web-1'] = again;
});

test('a watch that ends is made again from the last version it saw, a bookmark\'s included', async () => {
  await api.ctl('POST', '/bookmarks?ms=100');
  // A change on another node: this watch sees only the bookmark that follows.
  const { resourceVersion } = await api.ctl('POST', '/pods', pod('web-3', { nodeName: 'node-c' }));
  await h.sleep(500); // a few bookmarks, each with the version now
  const before_ = await asked();
  await api.ctl('POST', '/close');
  const st = await h.until(async () => {
    const s = await asked();
    return s.watches.length > before_.watches.length && s.open === 1 && s;
  }, { what: 'the watch made again' });
  assert.equal(st.watches.at(-1).resourceVersion, resourceVersion, 'from the bookmark\'s version');
  assert.equal(st.lists, before_.lists, 'no list');
  await api.ctl('POST', '/bookmarks?ms=1000');
});

test('a version compacted away: the resumed watch gets 410 Gone, and it lists again', async () => {
  await api.ctl('POST', '/bookmarks?ms=0');
  await api.ctl('POST', '/pods', pod('web-4', { nodeName: 'node-c' })); // unseen: this watch's version is older now
  await api.ctl('POST', '/compact');
  const gone = metric('procctl_kube_gone_total');
  const lists = (await asked()).lists;
  await api.ctl('POST', '/close');
  await h.until(async () => (await asked()).lists === lists + 1, { what: 'a list after the 410' });
  await h.until(() => metric('procctl_kube_gone_total') === gone + 1, { what: 'the 410 counted' });
  assert.equal(metric('procctl_kube_pods'), 4);
  await api.ctl('POST', '/bookmarks?ms=1000');
});

test('410 mid-watch (an ERROR event): it lists again, and what changed meanwhile is known', async () => {
  const lists = (await asked()).lists;
  const p = cluster.pod('cache-1');
  const cache = { uid: p.uid, container: p.container() };
  cache.echo = await node.echo(C, cache.container);
  await api.ctl('POST', '/expire');
  await api.ctl('POST', '/pods', pod('cache-1', { uid: cache.uid, ns: 'infra' }));
  await h.until(async () => (await asked()).lists === lists + 1, { what: 'a list after the 410' });
  await h.until(async () => (await names(cache.uid))[0] === 'infra/cache-1', { what: 'cache-1 named' });
  assert.equal(metric('procctl_kube_pods'), 5);
});

test('an API server restarting: it backs off, then resumes the watch where it was, without a list', async () => {
  const lists = (await asked()).lists;
  const errors = metric('procctl_kube_api_errors_total');
  const { resourceVersion } = await asked();
  await api.ctl('POST', '/restart?down_ms=1500');
  await h.until(() => metric('procctl_kube_api_errors_total') > errors, { what: 'the failed requests counted' });
  // Served meanwhile, names kept.
  assert.deepEqual(await names(pods['batch-1'].uid), ['jobs/batch-1']);
  const st = await h.until(async () => {
    const s = await asked();
    return s.open === 1 && s;
  }, { what: 'a watch again after the restart', timeout: 20000 });
  assert.equal(st.lists, lists, 'resumed, not listed');
  assert.equal(st.watches.at(-1).resourceVersion, resourceVersion);
  assert.ok(daemon.lines.some((l) => /event=kube_api_failed what=watch error=.*retry_ms=\d+/.test(l)), daemon.lines.join('\n'));
});

test('a slow API server holds nothing up: calls are answered while its list is still coming', async () => {
  await api.ctl('POST', '/slow?ms=4000');
  await api.ctl('POST', '/expire'); // a list now, answered in 4 s
  await h.sleep(200);
  // The deadline is the assertion: 2 s, under the 4 s the list takes.
  assert.deepEqual(await h.call(client, 'ListProcesses', { filter: { podUid: pods['batch-1'].uid } }, { deadlineMs: 2000 })
    .then((r) => r.processes.map((p) => p.podName)), ['batch-1']);
  assert.equal((await asked()).open, 0, 'the list was still out');
  await api.ctl('POST', '/slow?ms=0');
});

test('a hostile API server: an object that is no Pod is refused, counted, and the pods listed again; an endless line cuts the watch', async () => {
  const rejected = metric('procctl_kube_rejected_total');
  const errors = metric('procctl_kube_api_errors_total');
  await h.until(async () => (await asked()).open === 1, { what: 'a watch open' });
  const lists = (await asked()).lists;
  const bad = pod('evil', { nodeName: 'node-a' });
  bad.metadata.uid = '../../etc';
  await api.ctl('POST', '/inject', `${JSON.stringify({ type: 'ADDED', object: bad })}\n`);
  await h.until(() => metric('procctl_kube_rejected_total') === rejected + 1, { what: 'it refused' });
  await h.until(() => daemon.lines.some((l) => /event=kube_rejected what=watch_event reason="metadata.uid \\"..\/..\/etc\\": not one" action=list/.test(l)),
    { what: 'the refusal said, the object\'s UID escaped' });
  // What it said might have been a pod deleted: not to be lost, so a list.
  await h.until(async () => (await asked()).lists === lists + 1, { what: 'a list after it' });
  await h.until(async () => (await asked()).open === 1, { what: 'a watch open again', timeout: 20000 });
  // A known pod's change that is no valid Pod: forgotten, as a list would leave it out (no list for it).
  const b1 = pods['batch-1'];
  const evil = pod('batch-1', { uid: b1.uid, ns: 'jobs', labels: { app: 'batch' } });
  evil.metadata.labels = { '-bad': 'x' };
  const listed = (await asked()).lists;
  await api.ctl('POST', '/inject', `${JSON.stringify({ type: 'MODIFIED', object: evil })}\n`);
  await h.until(async () => (await names(b1.uid))[0] === '/', { what: 'batch-1 forgotten' });
  assert.equal((await asked()).lists, listed, 'no list for it');
  await api.ctl('POST', '/pods', pod('batch-1', { uid: b1.uid, ns: 'jobs', labels: { app: 'batch' } }));
  await h.until(async () => (await names(b1.uid))[0] === 'jobs/batch-1', { what: 'batch-1 known again' });
  // (kube_api_failed is said once a second at most: the counter, not the line, tells.)
  const before_ = metric('procctl_kube_api_errors_total');
  await api.ctl('POST', '/inject', 'x'.repeat(5 << 20));
  await h.until(() => metric('procctl_kube_api_errors_total') > before_, { what: 'the watch cut' });
  assert.ok(before_ >= errors);
  assert.deepEqual(await names(pods['batch-1'].uid), ['jobs/batch-1'], 'what it knew stays');
});

// A daemon's memory: its resident set now and at its peak (kB).
const memory = (d = daemon) => {
  const st = fs.readFileSync(`/proc/${d.innerPid()}/status`, 'utf8');
  return { rss: Number(/^VmRSS:\s+(\d+)/m.exec(st)[1]), hwm: Number(/^VmHWM:\s+(\d+)/m.exec(st)[1]) };
};
// The loop's turns over 100 ms, from one scrape.
const slowTurns = () => {
  const body = node.run(['curl', '-sf', '--max-time', '5', 'http://127.0.0.1:9464/metrics']).split('\n');
  const v = (n) => Number(body.find((l) => l.startsWith(`${n} `)).slice(n.length + 1));
  return v('procctl_loop_turn_seconds_count') - v('procctl_loop_turn_seconds_bucket{le="0.1"}');
};

test('an amplifying API server: a watch event past kubernetes_event_bytes_max (2 MiB) is refused before it is parsed, what was known kept, memory bounded', async () => {
  await h.until(async () => (await asked()).open === 1, { what: 'a watch open', timeout: 20000 });
  const b1 = pods['batch-1'];
  const big = pod('batch-1', { uid: b1.uid, ns: 'jobs', labels: { app: 'batch' } });
  // 3 MiB of valid JSON in 40,000 small fields: a tree many times its text
  // to parse (under the old 4 MiB bound, it was).
  big.metadata.annotations = Object.fromEntries(Array.from({ length: 40000 }, (_, i) => [`a${i}`, 'x'.repeat(60)]));
  const line = `${JSON.stringify({ type: 'MODIFIED', object: big })}\n`;
  assert.ok(line.length > (2 << 20) && line.length < (4 << 20), String(line.length));
  const m0 = memory();
  const slow0 = slowTurns();
  const errors = metric('procctl_kube_api_errors_total');
  await api.ctl('POST', '/inject', line);
  await h.until(() => metric('procctl_kube_api_errors_total') === errors + 1, { what: 'the event refused' });
  assert.deepEqual(await names(b1.uid), ['jobs/batch-1'], 'what it knew stays');
  const m1 = memory();
  const slow1 = slowTurns();
  process.stdout.write(`# an event of ${line.length} bytes: peak RSS ${m0.hwm} -> ${m1.hwm} kB, RSS ${m0.rss} -> ` +
    `${m1.rss} kB, loop turns over 100 ms ${slow0} -> ${slow1}\n`);
  // Never parsed: its peak grew by no more than the buffer of one event's bytes (and libcurl's).
  assert.ok(m1.hwm - m0.hwm < 16 * 1024, `peak RSS ${m0.hwm} -> ${m1.hwm} kB`);
});

test('an amplifying API server: a list page past kubernetes_page_bytes_max (4 MiB) is refused before it is parsed, smaller pages asked for, memory bounded', async () => {
  const port = await h.freePort();
  const padded = await apiServer([pod('q-1')], { port, host: '127.0.0.1' });
  const d = await new h.Daemon({ consumers: `pad${process.pid}`.slice(0, 31), args: ['--http-listen', '127.0.0.1:0',
    ...kubeArgs(`https://127.0.0.1:${port}`)] }).ready();
  const hp = await d.httpPort();
  const listed = () => d.lines.filter((l) => / event=kube_listed /.test(l)).length;
  try {
    await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed' });
    const m0 = memory(d);
    // 6 MB of valid JSON in 79,000 small fields a page, items all but
    // empty; the watch gets 410 Gone, so the pods are listed again.
    await padded.ctl('POST', '/pad?bytes=6000000');
    await padded.ctl('POST', '/expire');
    await d.line(/event=kube_api_failed what=list error="a page of the list over 4194304 bytes \(kubernetes_page_bytes_max; pages of 25 pods from now on\)"/);
    const m1 = memory(d);
    process.stdout.write(`# a list of 6 MB pages: peak RSS ${m0.hwm} -> ${m1.hwm} kB, RSS ${m0.rss} -> ${m1.rss} kB\n`);
    // Never parsed: its peak grew by no more than a page's buffer (and libcurl's, and a sanitizer's shadow of them).
    assert.ok(m1.hwm - m0.hwm < 32 * 1024, `peak RSS ${m0.hwm} -> ${m1.hwm} kB`);
    // The server behaves again: the next list, after its backoff, goes through.
    const before = listed();
    await padded.ctl('POST', '/pad?bytes=0');
    await h.until(() => listed() > before, { what: 'listed again', timeout: 40000 });
  } finally {
    await d.stop();
    await padded.kill();
  }
});

test('an amplifying API server within kubernetes_page_bytes_max: a page of 15 MB of small values is parsed a part at a time, its peak the page\'s text, not a tree of it', async () => {
  const port = await h.freePort();
  const padded = await apiServer([pod('s-1')], { port, host: '127.0.0.1' });
  const d = await new h.Daemon({ consumers: `pads${process.pid}`.slice(0, 31), spawn: { env: { ...process.env, ASAN_OPTIONS } },
    args: ['--http-listen', '127.0.0.1:0', ...kubeArgs(`https://127.0.0.1:${port}`, ['--kubernetes-page-bytes-max', '16777216'])] })
    .ready();
  const hp = await d.httpPort();
  const listed = () => d.lines.filter((l) => / event=kube_listed /.test(l)).length;
  try {
    await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed' });
    const m0 = memory(d);
    // 7.5 million zeros beside the items (a tree of 1.2 GB, as the
    // attacker's page took); the watch gets 410 Gone, so a list again.
    const before = listed();
    await padded.ctl('POST', '/pad?bytes=15000000&small=1');
    await padded.ctl('POST', '/expire');
    await h.until(() => listed() > before, { what: 'listed again, with the padding', timeout: 60000 });
    const m1 = memory(d);
    process.stdout.write(`# a list of a 15 MB page of small values: peak RSS ${m0.hwm} -> ${m1.hwm} kB, RSS ${m0.rss} -> ${m1.rss} kB\n`);
    assert.equal(await h.metric(hp, 'procctl_kube_pods'), 1);
    // The page's buffer (doubled as it grew, and one copy while it did), libcurl's, a sanitizer's shadow.
    assert.ok(m1.hwm - m0.hwm < 64 * 1024, `peak RSS ${m0.hwm} -> ${m1.hwm} kB`);
    await padded.ctl('POST', '/pad?bytes=0');
  } finally {
    await d.stop();
    await padded.kill();
  }
});

// The daemon's peak resident set may grow, under the hostile server below,
// by the pods it may hold: the table, a list being built and a queue as
// long again, each kubernetes_pods_max pods of at most 9,104 bytes (a
// struct podmeta: 64 labels, 32 containers, 8 KiB of their text), 27 MiB
// at 1,024; and a page (1 MiB here) with its parsed tree. 48 MiB, four
// times that under ASan (its shadow; its quarantine of freed pods cut to
// 16 MiB); not under TSan, whose history grows with its slowdown.
const TABLE_BOUND = process.env.PROCCTL_SANITIZE === 'thread' ? Infinity
  : (process.env.PROCCTL_SANITIZE ? 4 : 1) * 48 * 1024;
const ASAN_OPTIONS = [process.env.ASAN_OPTIONS, 'quarantine_size_mb=16'].filter(Boolean).join(':');

test('a hostile API server within every limit: kubernetes_pods_max pods as large as a pod may be, all churning and listed again three times; memory bounded by the table, a healthy client unhurt', async () => {
  const port = await h.freePort();
  const D = `max${process.pid}`.slice(0, 31);
  const N = 1024; // kubernetes_pods_max's default
  // 63 labels of 57 + 63 bytes each, 7.7 KiB of label text: near the most one pod keeps.
  const labels = Object.fromEntries(Array.from({ length: 63 }, (_, i) =>
    [`${'a'.repeat(50)}.io/k${String(i).padStart(2, '0')}`, 'v'.repeat(63)]));
  const big = await apiServer(Array.from({ length: N }, (_, i) => pod(`max-${i}`, { labels })), { port, host: '127.0.0.1' });
  const d = await new h.Daemon({ consumers: D, spawn: { env: { ...process.env, ASAN_OPTIONS } },
    args: ['--http-listen', '127.0.0.1:0', ...kubeArgs(`https://127.0.0.1:${port}`)] }).ready();
  const hp = await d.httpPort();
  const e = new h.Child(h.ECHO_CLIENT, ['--consumer', D]);
  const c = d.client();
  // The healthy client: n publishes with wait-for-ack, one after another; their times (ms), failures and the first's why.
  const publish = async (n, stop = () => false) => {
    const ms = [];
    let failed = 0;
    let why = '';
    for (let i = 0; i < n && !stop(); i++) {
      const t0 = process.hrtime.bigint();
      try {
        const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from(`healthy ${i}`), waitMs: 10000 },
          { deadlineMs: 20000 });
        if (r.results[0].status !== 'PUBLISH_STATUS_APPLIED') {
          failed++;
          why = why || r.results[0].status;
        }
      } catch (err) {
        failed++;
        why = why || err.message;
      }
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return { ms, failed, why };
  };
  const p99 = (ms) => [...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))];
  const slow = async () => { // from one scrape
    const m = await h.scrape(hp);
    return m('procctl_loop_turn_seconds_count') - m('procctl_loop_turn_seconds_bucket{le="0.1"}');
  };
  try {
    await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed', timeout: 30000 });
    assert.equal(await h.metric(hp, 'procctl_kube_pods'), N);
    await e.line(/^event=started/, { out: true });
    await h.attached(d, e.pid);
    const calm = await publish(30);
    assert.equal(calm.failed, 0, calm.why);
    const m0 = memory(d);
    const slow0 = await slow();
    const lists0 = await h.metric(hp, 'procctl_kube_lists_total');
    const ev0 = await h.metric(hp, 'procctl_kube_watch_events_total');
    // Every pod's labels changing, 1,000 changes a second, and the watch
    // cut with 410 Gone as soon as it is open, three times: the whole
    // table listed again each time.
    await big.ctl('POST', '/churn?per_s=1000');
    let attacking = true;
    const relisting = (async () => {
      try {
        for (let i = 0; i < 3; i++) {
          await h.until(async () => (await big.ctl('GET', '/stats')).open >= 1, { what: 'a watch open', timeout: 60000 });
          const before = await h.metric(hp, 'procctl_kube_lists_total');
          await big.ctl('POST', '/expire');
          await h.until(async () => (await h.metric(hp, 'procctl_kube_lists_total')) > before,
            { what: 'listed again', timeout: 60000 });
        }
      } finally {
        attacking = false;
      }
    })();
    const hurt = await publish(Infinity, () => !attacking);
    await relisting;
    await big.ctl('POST', '/churn?per_s=0');
    const m1 = memory(d);
    const slow1 = await slow();
    const lists = (await h.metric(hp, 'procctl_kube_lists_total')) - lists0;
    const events = (await h.metric(hp, 'procctl_kube_watch_events_total')) - ev0;
    process.stdout.write(`# ${N} pods of 7.7 KiB of labels, ${events} events and ${lists} lists taken: ` +
      `peak RSS ${m0.hwm} -> ${m1.hwm} kB, RSS ${m0.rss} -> ${m1.rss} kB; loop turns over 100 ms ${slow0} -> ${slow1}; ` +
      `publish p99 ${p99(calm.ms).toFixed(1)} ms calm, ${p99(hurt.ms).toFixed(1)} ms under it ` +
      `(${(p99(hurt.ms) / p99(calm.ms)).toFixed(2)}x, ${hurt.ms.length} publishes)\n`);
    assert.equal(hurt.failed, 0, `the healthy client's publishes all applied; the first failure: ${hurt.why}`);
    assert.ok(lists >= 3 && events > 0, `${lists} lists, ${events} events`);
    assert.equal(await h.metric(hp, 'procctl_kube_pods'), N);
    assert.ok(m1.hwm - m0.hwm < TABLE_BOUND, `peak RSS ${m0.hwm} -> ${m1.hwm} kB (bound: +${TABLE_BOUND} kB)`);
  } finally {
    c.close();
    await e.kill('SIGKILL');
    await d.stop();
    await big.kill();
  }
});

test('an API server down at the start: it serves, and its pods\' processes get their configs by labels once it is up', async () => {
  const port = await h.freePort();
  const D = `late${process.pid}`.slice(0, 31); // this daemon's alone: the nodes' processes are not its
  const conf = file('late.conf');
  fs.writeFileSync(conf, `[desired late]\nconsumer = ${D}\nlabel_selector = app=late\ndata = late\n`);
  const d = await new h.Daemon({ consumers: D, args: ['--http-listen', '127.0.0.1:0', '--config', conf,
    ...kubeArgs(`https://127.0.0.1:${port}`)] }).ready();
  const hp = await d.httpPort();
  const p = cluster.pod('late-1');
  const container = p.container();
  const e = new h.Child('sh', ['-c', 'echo $$ > "$1/cgroup.procs" && exec "$2" --consumer "$3"', 'sh', container.cgroup,
    h.ECHO_CLIENT, D]);
  try {
    await h.until(() => d.lines.some((l) => l.includes('event=kube_api_failed what=list')), { what: 'a failed list' });
    assert.equal(await h.metric(hp, 'procctl_kube_synced'), 0);
    await e.line(/^event=started/, { out: true });
    const c = d.client();
    try {
      await h.until(async () => (await gens(c, p.uid)).length === 1, { what: 'its process attached, in its pod' });
      assert.deepEqual(await gens(c, p.uid), [0], 'nothing yet: its labels are not known');
    } finally {
      c.close();
    }
    const late = await apiServer([pod('late-1', { uid: p.uid, labels: { app: 'late' } })], { port, host: '127.0.0.1' });
    try {
      await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed once up', timeout: 40000 });
      assert.equal(await h.metric(hp, 'procctl_kube_pods'), 1);
      await e.line(/^event=applied gen=\d+ .*payload=late$/, { out: true });
    } finally {
      await late.kill();
    }
  } finally {
    await e.kill('SIGKILL');
    await d.stop();
  }
});

test('a node of more pods than kubernetes_pods_max: the rest counted, the table bounded under churn', async () => {
  const port = await h.freePort();
  const many = Array.from({ length: 600 }, (_, i) => pod(`p-${i}`));
  const big = await apiServer(many, { port, host: '127.0.0.1' });
  const d = await new h.Daemon({ consumers: `big${process.pid}`.slice(0, 31), args: ['--http-listen', '127.0.0.1:0',
    ...kubeArgs(`https://127.0.0.1:${port}`, ['--kubernetes-pods-max', '550'])] }).ready();
  const hp = await d.httpPort();
  try {
    await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed' });
    assert.equal(await h.metric(hp, 'procctl_kube_pods'), 550);
    assert.equal(await h.metric(hp, 'procctl_kube_pods_dropped'), 50);
    assert.equal((await big.ctl('GET', '/stats')).pages, 1, 'the watch cache\'s one answer');
    // Their labels churning, 2000 changes a second: the table stays what it may hold, every change taken.
    const ev0 = await h.metric(hp, 'procctl_kube_watch_events_total');
    await big.ctl('POST', '/churn?per_s=2000');
    await h.sleep(2000);
    await big.ctl('POST', '/churn?per_s=0');
    const { churned } = await big.ctl('GET', '/stats');
    await h.until(async () => (await h.metric(hp, 'procctl_kube_watch_events_total')) - ev0 === churned,
      { what: 'every change taken', timeout: 30000 });
    assert.equal(await h.metric(hp, 'procctl_kube_pods'), 550);
    assert.equal(await h.metric(hp, 'procctl_kube_pods_dropped'), 50, 'a change of one left out counts it not again');
  } finally {
    await d.stop();
    await big.kill();
  }
});

test('bad settings are refused at the start, saying why', async () => {
  const cases = [
    [['--kubernetes-api', 'https://127.0.0.1:1'], /kubernetes_api needs kubernetes_node/],
    [['--kubernetes-api', 'ftp://x'], /--kubernetes-api: 'ftp:\/\/x': not a URL/],
    [['--kubernetes-api', 'http://127.0.0.1:1', '--kubernetes-node', 'n', '--kubernetes-token-file', file('token')],
      /a token is sent over https only/],
    [['--kubernetes-api', 'in-cluster', '--kubernetes-node', 'n'], /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set/],
    [['--kubernetes-node', 'Node_A'], /is not a node's name/],
  ];
  for (const [args, re] of cases) {
    const env = { ...process.env };
    delete env.KUBERNETES_SERVICE_HOST;
    const d = new h.Daemon({ args, spawn: { env } });
    const e = await d.exited;
    assert.equal(e.code, 2, args.join(' '));
    assert.ok(d.lines.some((l) => re.test(l)), `${args.join(' ')}: ${d.lines.join('\n')}`);
  }
});
