// SPDX-License-Identifier: Apache-2.0
// kube.test.js - procctl-node follows the Kubernetes API server's view of
// its node's pods (kubernetes_api): it lists them, watches them from the
// list's resourceVersion, and names each process's pod (namespace, name)
// in ListProcesses and `procctl ps`. The API server is kubeapi.js, a
// stand-in that keeps the watch protocol (chunked events, one version
// counter, bookmarks, 410 Gone for a compacted version, watches that end,
// restarts, slowness) with Pods validated against the Kubernetes schemas;
// the node is a namespace of netns.js, its pods kubelet-named cgroups.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const h = require('./harness');
const { Cluster } = require('./netns');
const { run, exits } = require('./clirun');

const scratch = h.scratch('procctl-kube-');
const { file, ca, leaf } = require('./certs').certs(scratch);
const KUBEAPI = path.join(__dirname, 'kubeapi.js');
const TOKEN = 'node-agent-token';
const PORT = 6443;
const C = h.CONSUMER;

let Pod;
let cluster, node, api, daemon, client;

// A Pod of node nodeName, validated as the API server would.
function pod(name, { ns = 'prod', uid = crypto.randomUUID(), labels = {}, nodeName = 'node-a' } = {}) {
  const p = new Pod({ metadata: { name, namespace: ns, uid, labels }, spec: { nodeName, containers: [{ name: 'app', image: 'app:1' }] } });
  p.validate();
  return p.toJSON();
}

// The stand-in: its API on host:port (in the cluster's network with
// prefix), its controls on a socket.
async function apiServer(objs, { port = PORT, host = '0.0.0.0', prefix = [] } = {}) {
  const objects = file(`objects-${port}.json`);
  fs.writeFileSync(objects, JSON.stringify(objs));
  const sock = file(`control-${port}.sock`);
  const child = new h.Child(process.execPath, [KUBEAPI, String(port), file('apiserver.crt'), file('apiserver.key'), TOKEN,
    objects, sock], { prefix, env: { ...process.env, KUBEAPI_HOST: host } });
  await child.line(/^listening /, { out: true });
  child.ctl = (method, p, body) => new Promise((resolve, reject) => {
    const req = http.request({ socketPath: sock, method, path: p }, (res) => {
      let out = '';
      res.on('data', (d) => { out += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(out)) : reject(new Error(out))));
    });
    req.on('error', reject);
    req.end(body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body));
  });
  return child;
}

const kubeArgs = (url, more = []) => ['--kubernetes-api', url, '--kubernetes-node', 'node-a',
  '--kubernetes-token-file', file('token'), '--kubernetes-ca-file', file('ca.crt'), '--kubernetes-watch-s', '60', ...more];

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

before(async () => {
  ({ Pod } = await import(pathToFileURL(path.join(process.env.NODE_PATH, 'kubernetes-models', 'v1', 'index.js'))));
  ca('ca');
  leaf('apiserver', 'kubernetes', 'ca', 'subjectAltName = IP:10.77.1.1, IP:127.0.0.1\nextendedKeyUsage = serverAuth');
  fs.writeFileSync(file('token'), `${TOKEN}\n`);
  cluster = await Cluster.create('pckube');
  node = await cluster.node('node-a');
  for (const name of ['web-1', 'batch-1']) {
    const p = cluster.pod(name);
    pods[name] = { uid: p.uid, container: p.container() };
  }
  api = await apiServer([
    pod('web-1', { uid: pods['web-1'].uid, labels: { app: 'web', tier: 'front' } }),
    pod('batch-1', { uid: pods['batch-1'].uid, ns: 'jobs', labels: { app: 'batch' } }),
    pod('web-2', { labels: { app: 'web' }, nodeName: 'node-b' }), // another node's
  ], { prefix: cluster.prefix() });
  daemon = await new h.Daemon({ prefix: node.prefix(), args: ['--http-listen', '127.0.0.1:9464',
    ...kubeArgs(`https://10.77.1.1:${PORT}`)] }).ready();
  client = daemon.client();
  for (const p of Object.values(pods)) p.echo = await node.echo(C, p.container);
  await h.until(async () => (await names(pods['batch-1'].uid)).length === 1 && (await names(pods['web-1'].uid)).length === 1,
    { what: 'both pods\' processes attached' });
});

after(async () => {
  if (client) client.close();
  if (daemon && daemon.exit === null) await daemon.stop();
  if (api) await api.kill();
  if (cluster) await cluster.destroy();
});

test('it lists its node\'s pods alone, with the token over TLS, and watches from the list\'s resourceVersion', async () => {
  await h.until(async () => (await names(pods['web-1'].uid))[0] === 'prod/web-1', { what: 'web-1 named' });
  assert.deepEqual(await names(pods['batch-1'].uid), ['jobs/batch-1']);
  assert.equal(metric('procctl_kube_synced'), 1);
  assert.equal(metric('procctl_kube_pods'), 2, 'web-2 is node-b\'s');
  const st = await api.ctl('GET', '/stats');
  assert.equal(st.lists, 1);
  assert.ok(api.out.some((l) => l.includes('/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&limit=500 code=200')), api.out.join('\n'));
  assert.equal(st.watches[0].resourceVersion, '1003', 'the list\'s version: the three pods were 1001 to 1003');
  assert.equal(st.watches[0].bookmarks, true);
  assert.ok(st.watches[0].timeoutSeconds >= 60 && st.watches[0].timeoutSeconds < 120, JSON.stringify(st.watches[0]));
});

test('procctl ps shows the namespace and name of each process\'s pod', async () => {
  const r = exits(await run(['ps'], { sock: daemon.sock }), 0);
  const out = r.stdout.split('\n');
  assert.match(out[0], /NAMESPACE\/NAME$/);
  const line = out.find((l) => l.includes(pods['web-1'].uid));
  assert.match(line, / prod\/web-1$/);
});

test('a pod deleted and made again with the same name but a new UID: the old process loses the name, the new one has it', async () => {
  const old = pods['web-1'];
  await api.ctl('DELETE', `/pods/${old.uid}`);
  await h.until(async () => (await names(old.uid))[0] === '/', { what: 'the deleted pod\'s name to go' });
  const p = cluster.pod('web-1');
  const again = { uid: p.uid, container: p.container() };
  await api.ctl('POST', '/pods', pod('web-1', { uid: again.uid, labels: { app: 'web' } }));
  again.echo = await node.echo(C, again.container);
  await h.until(async () => (await names(again.uid))[0] === 'prod/web-1', { what: 'the new web-1 named' });
  assert.deepEqual(await names(old.uid), ['/'], 'the old UID is no pod now');
  assert.equal(metric('procctl_kube_pods'), 2);
  assert.equal((await api.ctl('GET', '/stats')).lists, 1, 'events, not a list');
  pods['web-1'] = again;
});

test('a watch that ends is made again from the last version it saw, a bookmark\'s included', async () => {
  await api.ctl('POST', '/bookmarks?ms=100');
  // A change on another node: this watch sees only the bookmark that follows.
  const { resourceVersion } = await api.ctl('POST', '/pods', pod('web-3', { nodeName: 'node-b' }));
  await h.sleep(500); // a few bookmarks, each with the version now
  const before_ = await api.ctl('GET', '/stats');
  await api.ctl('POST', '/close');
  const st = await h.until(async () => {
    const s = await api.ctl('GET', '/stats');
    return s.watches.length > before_.watches.length && s.open === 1 && s;
  }, { what: 'the watch made again' });
  assert.equal(st.watches.at(-1).resourceVersion, resourceVersion, 'from the bookmark\'s version');
  assert.equal(st.lists, before_.lists, 'no list');
  await api.ctl('POST', '/bookmarks?ms=1000');
});

test('a version compacted away: the resumed watch gets 410 Gone, and it lists again', async () => {
  await api.ctl('POST', '/bookmarks?ms=0');
  await api.ctl('POST', '/pods', pod('web-4', { nodeName: 'node-b' })); // unseen: this watch's version is older now
  await api.ctl('POST', '/compact');
  const gone = metric('procctl_kube_gone_total');
  const lists = (await api.ctl('GET', '/stats')).lists;
  await api.ctl('POST', '/close');
  await h.until(async () => (await api.ctl('GET', '/stats')).lists === lists + 1, { what: 'a list after the 410' });
  await h.until(() => metric('procctl_kube_gone_total') === gone + 1, { what: 'the 410 counted' });
  assert.equal(metric('procctl_kube_pods'), 2);
  await api.ctl('POST', '/bookmarks?ms=1000');
});

test('410 mid-watch (an ERROR event): it lists again, and what changed meanwhile is known', async () => {
  const lists = (await api.ctl('GET', '/stats')).lists;
  const p = cluster.pod('cache-1');
  const cache = { uid: p.uid, container: p.container() };
  cache.echo = await node.echo(C, cache.container);
  await api.ctl('POST', '/expire');
  await api.ctl('POST', '/pods', pod('cache-1', { uid: cache.uid, ns: 'infra' }));
  await h.until(async () => (await api.ctl('GET', '/stats')).lists === lists + 1, { what: 'a list after the 410' });
  await h.until(async () => (await names(cache.uid))[0] === 'infra/cache-1', { what: 'cache-1 named' });
  assert.equal(metric('procctl_kube_pods'), 3);
});

test('an API server restarting: it backs off, then resumes the watch where it was, without a list', async () => {
  const lists = (await api.ctl('GET', '/stats')).lists;
  const errors = metric('procctl_kube_api_errors_total');
  const { resourceVersion } = await api.ctl('GET', '/stats');
  await api.ctl('POST', '/restart?down_ms=1500');
  await h.until(() => metric('procctl_kube_api_errors_total') > errors, { what: 'the failed requests counted' });
  // Served meanwhile, names kept.
  assert.deepEqual(await names(pods['batch-1'].uid), ['jobs/batch-1']);
  const st = await h.until(async () => {
    const s = await api.ctl('GET', '/stats');
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
  assert.equal((await api.ctl('GET', '/stats')).open, 0, 'the list was still out');
  await api.ctl('POST', '/slow?ms=0');
});

test('a hostile API server: objects that are no Pods are refused and counted, an endless line cuts the watch', async () => {
  const rejected = metric('procctl_kube_rejected_total');
  const errors = metric('procctl_kube_api_errors_total');
  await h.until(async () => (await api.ctl('GET', '/stats')).open === 1, { what: 'a watch open' });
  const bad = pod('evil', { nodeName: 'node-a' });
  bad.metadata.uid = '../../etc';
  await api.ctl('POST', '/inject', `${JSON.stringify({ type: 'ADDED', object: bad })}\nnot json\n`);
  await h.until(() => metric('procctl_kube_rejected_total') === rejected + 2, { what: 'two refused' });
  await h.until(() => daemon.lines.some((l) => /event=kube_rejected what=watch_event reason="metadata.uid \\"..\/..\/etc\\": not one"/.test(l)),
    { what: 'the refusal said, the object\'s UID escaped' });
  await api.ctl('POST', '/inject', 'x'.repeat(5 << 20));
  await h.until(() => daemon.lines.some((l) => l.includes('error="a watch event over 4194304 bytes"')), { what: 'the watch cut' });
  assert.ok(metric('procctl_kube_api_errors_total') > errors);
  assert.deepEqual(await names(pods['batch-1'].uid), ['jobs/batch-1'], 'what it knew stays');
});

test('an API server down at the start: it serves without names, and has them once the API server is up', async () => {
  const port = await h.freePort();
  const hp = await h.freePort();
  const d = await new h.Daemon({ args: ['--http-listen', `127.0.0.1:${hp}`, ...kubeArgs(`https://127.0.0.1:${port}`)] }).ready();
  try {
    await h.until(() => d.lines.some((l) => l.includes('event=kube_api_failed what=list')), { what: 'a failed list' });
    assert.equal(await h.metric(hp, 'procctl_kube_synced'), 0);
    const late = await apiServer([pod('late-1')], { port, host: '127.0.0.1' });
    try {
      await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed once up', timeout: 40000 });
      assert.equal(await h.metric(hp, 'procctl_kube_pods'), 1);
    } finally {
      await late.kill();
    }
  } finally {
    await d.stop();
  }
});

test('a node of more pods than kubernetes_pods_max: a paged list, the rest counted', async () => {
  const port = await h.freePort();
  const many = Array.from({ length: 600 }, (_, i) => pod(`p-${i}`));
  const big = await apiServer(many, { port, host: '127.0.0.1' });
  const hp = await h.freePort();
  const d = await new h.Daemon({ args: ['--http-listen', `127.0.0.1:${hp}`,
    ...kubeArgs(`https://127.0.0.1:${port}`, ['--kubernetes-pods-max', '550'])] }).ready();
  try {
    await h.until(async () => (await h.metric(hp, 'procctl_kube_synced')) === 1, { what: 'listed' });
    assert.equal(await h.metric(hp, 'procctl_kube_pods'), 550);
    assert.equal(await h.metric(hp, 'procctl_kube_pods_dropped_total'), 50);
    assert.equal((await big.ctl('GET', '/stats')).pages, 2, '500, then 100 with the continue token');
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
