// SPDX-License-Identifier: Apache-2.0
// nodes.test.js - a controller pushes per-pod config to the right node, and
// waits for the acks. Two "nodes" (netns.js: each its own network, pid and
// mount namespaces, its own address and processes) run a procctl-node each,
// with the same serving certificate (one DNS name, the chart's headless
// Service's, and no address). Pods are kubelet-named cgroups. The
// controller (examples/controller/push-pod.js) and the CLI run in a third
// namespace, the cluster's network, and learn where each pod runs as a
// controller does: its Pod and the Service's EndpointSlices from an API
// server (kubeapi.js, answering from objects validated against the
// Kubernetes schemas; there is no cluster here). The ConfigMap path: the
// same [desired] section on both nodes, its rollout read from each node's
// /metrics as Prometheus scrapes it.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { pathToFileURL } = require('node:url');
const h = require('./harness');
const { run, said, exits } = require('./clirun');
const { Cluster, cgroup2 } = require('./netns');

// The host's kubelet level, there before this file ran or not.
const KUBEPODS = path.join(cgroup2(), 'kubepods.slice');
const hadKubepods = fs.existsSync(KUBEPODS);

const scratch = h.scratch('procctl-nodes-');
const { file, ca, leaf } = require('./certs').certs(scratch);
const SERVICE = 'procctl-node-nodes';
const NAME = `${SERVICE}.procctl.svc`; // what the controller checks; every node's certificate carries it
const PUSH = path.join(__dirname, '..', '..', 'examples', 'controller', 'push-pod.js');
const KUBE_PORT = 6443;
const TOKEN = 'controller-token';
const C = h.CONSUMER;

let cluster, kube;
const nodes = {}; // name -> { node, daemon, conf }
const pods = {};  // name -> { uid, node, echoes }

const section = (data) => `[desired web]\nconsumer = ${C}\ndata = ${data}\n`;

// The objects the API server answers with: Pods, and the headless
// Service's EndpointSlice (one ready endpoint per node, and a node whose
// daemon is not ready).
async function kubeObjects() {
  const models = async (p) => import(pathToFileURL(path.join(process.env.NODE_PATH, 'kubernetes-models', p, 'index.js')));
  const { Pod } = await models('v1');
  const { EndpointSlice } = await models(path.join('discovery.k8s.io', 'v1'));
  const objs = Object.entries(pods).map(([name, p]) => new Pod({
    metadata: { name, namespace: 'default', uid: p.uid },
    spec: { nodeName: p.node, containers: [{ name: 'app', image: 'app:1' }] },
  }));
  objs.push(new Pod({ metadata: { name: 'unscheduled', namespace: 'default', uid: '0b1c2d3e-0000-4000-8000-00000000ffff' },
    spec: { containers: [{ name: 'app', image: 'app:1' }] } }));
  objs.push(new Pod({ metadata: { name: 'stranded', namespace: 'default', uid: '0b1c2d3e-0000-4000-8000-00000000fffe' },
    spec: { nodeName: 'node-c', containers: [{ name: 'app', image: 'app:1' }] } }));
  objs.push(new EndpointSlice({
    metadata: { name: `${SERVICE}-x7k2p`, namespace: 'procctl', labels: { 'kubernetes.io/service-name': SERVICE } },
    addressType: 'IPv4',
    ports: [{ name: 'grpc', port: 7443, protocol: 'TCP', appProtocol: 'grpc' }],
    endpoints: [
      ...Object.entries(nodes).map(([name, n], i) => ({ addresses: [n.node.ip], conditions: { ready: true }, nodeName: name,
        targetRef: { kind: 'Pod', namespace: 'procctl', name: `procctl-node-${i}` } })),
      { addresses: ['10.77.9.2'], conditions: { ready: false }, nodeName: 'node-c' },
    ],
  }));
  for (const o of objs) o.validate();
  const f = file('objects.json');
  fs.writeFileSync(f, JSON.stringify(objs));
  return f;
}

before(async () => {
  ca('ca');
  leaf('nodes', 'procctl-node', 'ca', `subjectAltName = DNS:${NAME}\nextendedKeyUsage = serverAuth`);
  leaf('controller', 'controller-1', 'ca', 'extendedKeyUsage = clientAuth');
  leaf('apiserver', 'kubernetes', 'ca', 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth');
  ca('otherca');
  leaf('stranger', 'controller-1', 'otherca', 'extendedKeyUsage = clientAuth');
  leaf('serveronly', 'controller-1', 'ca', 'extendedKeyUsage = serverAuth'); // of the CA, but not for clients
  fs.writeFileSync(file('token'), `${TOKEN}\n`);

  cluster = await Cluster.create();
  for (const name of ['node-a', 'node-b']) {
    const node = await cluster.node(name);
    const conf = file(`${name}.conf`);
    fs.writeFileSync(conf, '# the ConfigMap: no [desired] section yet\n');
    const daemon = await new h.Daemon({ prefix: node.prefix(), args: ['--grpc-listen', `${node.ip}:7443`,
      '--tls-cert', file('nodes.crt'), '--tls-key', file('nodes.key'), '--tls-client-ca', file('ca.crt'),
      '--http-listen', `${node.ip}:9464`, '--config', conf] }).ready();
    nodes[name] = { node, daemon, conf };
  }
  // web-a: two processes on node-a; batch: one beside it; web-b: one on node-b.
  for (const [name, node, count] of [['web-a', 'node-a', 2], ['batch', 'node-a', 1], ['web-b', 'node-b', 1]]) {
    const pod = cluster.pod(name);
    const container = pod.container();
    const echoes = [];
    for (let i = 0; i < count; i++) echoes.push(await nodes[node].node.echo(C, container));
    pods[name] = { uid: pod.uid, node, echoes, container };
  }
  for (const [name, p] of Object.entries(pods)) {
    const c = nodes[p.node].daemon.client();
    await h.until(async () => (await h.call(c, 'ListProcesses', { filter: { podUid: p.uid } })).processes.length === p.echoes.length,
      { what: `pod ${name}'s processes attached with its UID on ${p.node}` });
    c.close();
  }
  kube = new h.Child(process.execPath, [path.join(__dirname, 'kubeapi.js'), String(KUBE_PORT), file('apiserver.crt'),
    file('apiserver.key'), TOKEN, await kubeObjects()], { prefix: cluster.prefix() });
  await kube.line(/^listening /, { out: true });
});

after(async () => {
  for (const n of Object.values(nodes)) if (n.daemon.exit === null) await n.daemon.stop();
  if (kube) await kube.kill();
  if (cluster) await cluster.destroy(); // again after the last test: nothing left to do
});

const tls = (caName = 'ca', cert = 'controller') =>
  ['--tls-ca', file(`${caName}.crt`), ...(cert ? ['--tls-cert', file(`${cert}.crt`), '--tls-key', file(`${cert}.key`)] : [])];

// push-pod.js from the cluster's network, with the controller's service
// account, to its end: { code, out, err } (lines).
function controller(args, { caName, cert } = {}) {
  return new Promise((resolve) => {
    const c = new h.Child(process.execPath, [PUSH, '--consumer', C, ...args, ...tls(caName, cert),
      '--kube-api', `https://127.0.0.1:${KUBE_PORT}`, '--kube-token', file('token'), '--kube-ca', file('ca.crt'),
      '--timeout', '5'], { prefix: cluster.prefix() });
    c.exited.then((e) => resolve({ ...e, out: c.out, err: c.lines }));
  });
}

const push = (pod, args, opts) => controller(['--pod', `default/${pod}`, ...args], opts);

const rows = (r) => r.out.filter((l) => l.startsWith('node=')).map((l) => Object.fromEntries(l.split(' ').map((kv) => kv.split('='))));
const payloads = (e) => e.out.filter((l) => l.startsWith('event=applied')).map((l) => l.replace(/.* payload=/, ''));
const took = (r) => Object.fromEntries([...r.out[r.out.length - 1].matchAll(/(\w+)_ms=([\d.]+)/g)].map((m) => [m[1], Number(m[2])]));

test('a controller pushes a pod\'s config to the node it runs on, and gets each process\'s ack', async (t) => {
  const b = await push('web-b', ['--data', 'to b']);
  assert.equal(b.code, 0, b.out.concat(b.err).join('\n'));
  assert.deepEqual(rows(b).map((x) => [x.node, x.daemon, Number(x.pid), x.status, x.process_status]),
    [['node-b', `${nodes['node-b'].node.ip}:7443`, pods['web-b'].echoes[0].nspid, 'APPLIED', '0']]);
  await pods['web-b'].echoes[0].line(/event=applied .*payload=to b$/, { out: true });

  const a = await push('web-a', ['--data', 'to a']);
  assert.equal(a.code, 0, a.out.concat(a.err).join('\n'));
  assert.deepEqual(rows(a).map((x) => [x.node, Number(x.pid), x.status]).sort(),
    pods['web-a'].echoes.map((e) => ['node-a', e.nspid, 'APPLIED']).sort());
  for (const e of pods['web-a'].echoes) await e.line(/event=applied .*payload=to a$/, { out: true });

  // Only the pod's processes, only on its node.
  assert.deepEqual(payloads(pods['web-b'].echoes[0]), ['to b']);
  assert.deepEqual(payloads(pods.batch.echoes[0]), []);
  await nodes['node-a'].daemon.line(/event=call method=\/procctl\.v1\.NodeService\/Publish .*cn=controller-1/);

  // Round trips, as measured here: the Kubernetes lookups (a pod, the
  // EndpointSlices), then dial, TLS, publish and every ack.
  const times = [];
  for (let i = 0; i < 10; i++) times.push(took(await push('web-a', ['--data', `round ${i}`])));
  t.diagnostic(`lookups (ms): ${times.map((x) => x.lookup).join(' ')}; dial + publish + 2 acks (ms): ${times.map((x) => x.push).join(' ')}`);
});

test('--pod-uid: the daemons are asked which has the pod\'s processes; a pod with none is exit 4', async () => {
  const r = await controller(['--pod-uid', pods['web-a'].uid, '--data', 'by uid']);
  assert.equal(r.code, 0, r.out.concat(r.err).join('\n'));
  assert.deepEqual(rows(r).map((x) => [x.node, Number(x.pid), x.status]).sort(),
    pods['web-a'].echoes.map((e) => ['node-a', e.nspid, 'APPLIED']).sort());
  const none = await controller(['--pod-uid', '0b1c2d3e-0000-4000-8000-00000000fffd', '--data', 'x']);
  assert.equal(none.code, 4);
  assert.match(none.err.join('\n'), /no attached process of \S+ in pod 0b1c2d3e-0000-4000-8000-00000000fffd \(asked 2 daemons\)/);
});

test('--desired: a pod\'s desired config reaches its processes now and those it starts later', async () => {
  const r = await push('web-b', ['--data', 'desired b', '--desired']);
  assert.equal(r.code, 0, r.out.concat(r.err).join('\n'));
  assert.deepEqual(rows(r).map((x) => x.status), ['APPLIED']);
  const later = await nodes['node-b'].node.echo(C, pods['web-b'].container);
  pods['web-b'].echoes.push(later);
  await later.line(/event=applied .*payload=desired b$/, { out: true });
  const c = nodes['node-b'].daemon.client();
  try {
    const list = (await h.call(c, 'ListDesiredConfigs', {})).configs;
    assert.deepEqual(list.map((x) => [x.selector.podUid, x.rollout.applied]), [[pods['web-b'].uid, 2]]);
    await h.call(c, 'DeleteDesiredConfig', { selector: { consumer: C, schemaVersion: 1, podUid: pods['web-b'].uid } });
  } finally {
    c.close();
  }
  const ca_ = nodes['node-a'].daemon.client();
  assert.equal((await h.call(ca_, 'ListDesiredConfigs', {})).configs.length, 0, 'node-a has no config for a pod of node-b');
  ca_.close();
});

test('what a controller is told when it cannot do it: no pod there, no node, no ready daemon, bad usage', async () => {
  const unscheduled = await push('unscheduled', ['--data', 'x']);
  assert.equal(unscheduled.code, 1);
  assert.match(unscheduled.err.join('\n'), /pod default\/unscheduled is not scheduled on a node yet/);
  const missing = await push('nosuch', ['--data', 'x']);
  assert.equal(missing.code, 1);
  assert.match(missing.err.join('\n'), /GET \/api\/v1\/namespaces\/default\/pods\/nosuch: 404 /);
  const stranded = await push('stranded', ['--data', 'x']);
  assert.equal(stranded.code, 1);
  assert.match(stranded.err.join('\n'), /no ready procctl-node on node node-c \(EndpointSlices of procctl\/procctl-node-nodes\)/);
  const usage = await push('web-a', ['--schema', 'zero', '--data', 'x']);
  assert.equal(usage.code, 2);
  assert.match(usage.err.join('\n'), /--schema: 'zero' is not a schema version/);
});

test('refused: a daemon whose certificate is not of --tls-ca, a client without a certificate or of another CA', async () => {
  const to = ['--server', `${nodes['node-b'].node.ip}:7443`, '--tls-server-name', NAME];
  const write = ['publish', '--consumer', C, '--pod', pods['web-b'].uid, '--data', 'refused', '--wait'];
  const cli = (args) => run(args, { prefix: cluster.prefix() });
  const ok = exits(await cli([...to, ...tls(), 'ps', '--consumer', C, '--pod', pods['web-b'].uid]), 0);
  assert.equal(ok.stdout.split('\n').filter(Boolean).length, 1 + pods['web-b'].echoes.length, said(ok));
  for (const [args, why] of [[tls('otherca'), /not of --tls-ca/], [tls('ca', null), /wants a client certificate/],
    [tls('ca', 'stranger'), /refused this client certificate, which must be of its tls_client_ca/],
    [tls('ca', 'serveronly'), /refused this client certificate.*\(extendedKeyUsage clientAuth\)/]]) {
    const r = exits(await cli([...to, ...args, ...write]), 1);
    assert.match(r.stderr, why, said(r));
  }
  const r = await push('web-b', ['--data', 'refused'], { caName: 'otherca' });
  assert.equal(r.code, 1);
  assert.match(r.err.join('\n'), /^push-pod: Publish: UNAVAILABLE: .*not of --tls-ca/);
  const noauth = await push('web-b', ['--data', 'refused'], { cert: 'serveronly' });
  assert.equal(noauth.code, 1);
  assert.match(noauth.err.join('\n'), /^push-pod: Publish: UNAVAILABLE: .*\(extendedKeyUsage clientAuth\)/);
  for (const e of pods['web-b'].echoes) assert.ok(!payloads(e).includes('refused'));
});

// procctl_desired_processes{desired="web"} of a node, as Prometheus scrapes it.
function rollout(name) {
  const text = cluster.run(['curl', '-sf', `http://${nodes[name].node.ip}:9464/metrics`]);
  const v = {};
  for (const m of text.matchAll(/^procctl_desired_processes\{desired="web",state="(\w+)"\} (\d+)$/gm)) v[m[1]] = Number(m[2]);
  return v;
}

test('the ConfigMap path: one [desired] section on both nodes; its rollout from each node\'s /metrics', async (t) => {
  const stopped = pods['web-b'].echoes.map((e) => e.innerPid());
  for (const pid of stopped) process.kill(pid, 'SIGSTOP');
  try {
    const t0 = Date.now();
    for (const n of Object.values(nodes)) fs.writeFileSync(n.conf, section('v1'));
    const onA = [...pods['web-a'].echoes, ...pods.batch.echoes];
    await Promise.all(onA.map((e) => h.until(() => payloads(e).includes('v1'), { every: 1, what: `pid ${e.nspid} to apply v1` })));
    t.diagnostic(`ConfigMap path, file written to the last ack on node-a (3 processes): ${Date.now() - t0} ms`);
    await h.until(() => rollout('node-a').applied === 3, { what: 'node-a to count 3 applied' });
    await h.until(() => rollout('node-b').pending === pods['web-b'].echoes.length, { what: 'node-b to count its stopped processes pending' });
    assert.deepEqual(rollout('node-a'), { applied: 3, rejected: 0, pending: 0, superseded: 0, not_owned: 0 });
    assert.deepEqual(rollout('node-b'), { applied: 0, rejected: 0, pending: 2, superseded: 0, not_owned: 0 });
  } finally {
    // nsenter stopped itself when its child stopped (it mirrors a stop); both go on.
    for (const pid of [...stopped, ...pods['web-b'].echoes.map((e) => e.pid)]) process.kill(pid, 'SIGCONT');
  }
  await h.until(() => rollout('node-b').applied === 2, { what: 'node-b to count its processes applied' });
  assert.deepEqual(rollout('node-b'), { applied: 2, rejected: 0, pending: 0, superseded: 0, not_owned: 0 });
});

test('a container ID\'s beginning, as docker ps prints it: that container; one two IDs begin: INVALID_ARGUMENT', async () => {
  const c = nodes['node-a'].daemon.client();
  try {
    const web = pods['web-a'].container.id;
    const listed = (containerId) => h.call(c, 'ListProcesses', { filter: { containerId } });
    let got = (await listed(web.slice(0, 12))).processes;
    assert.deepEqual(got.map((x) => x.containerId), [web, web]);
    // Two containers whose IDs begin alike, in a pod of their own.
    const twins = cluster.pod('twins');
    const same = crypto.randomBytes(8).toString('hex');
    const ids = ['0', '1'].map((d) => same + d + crypto.randomBytes(32).toString('hex').slice(17));
    const echoes = [];
    for (const id of ids) echoes.push(await nodes['node-a'].node.echo(C, twins.container(id)));
    await h.until(async () => (await h.call(c, 'ListProcesses', { filter: { podUid: twins.uid } })).processes.length === 2,
      { what: 'the twins attached' });
    for (const [m, req] of [['ListProcesses', { filter: { containerId: same } }],
      ['Publish', { selector: { consumer: C, schemaVersion: 1, containerId: same }, payload: Buffer.from('x') }]]) {
      await assert.rejects(h.call(c, m, req), (e) => h.grpc.status[e.code] === 'INVALID_ARGUMENT' &&
        e.details.includes(`${same} begins the IDs of more than one container`) && ids.every((id) => e.details.includes(id)), m);
    }
    got = (await listed(ids[1].slice(0, 17))).processes;
    assert.deepEqual(got.map((x) => x.containerId), [ids[1]]);
    // A desired config by the beginning keeps the whole ID.
    const set = await h.call(c, 'SetDesiredConfig', { config: { selector: { consumer: C, schemaVersion: 1,
      containerId: ids[0].slice(0, 17) }, payload: Buffer.from('twin0') }, waitMs: 5000 });
    assert.equal(set.config.selector.containerId, ids[0]);
    await echoes[0].line(/event=applied .*payload=twin0$/, { out: true });
    await h.call(c, 'DeleteDesiredConfig', { selector: { consumer: C, schemaVersion: 1, containerId: ids[0] } });
    for (const e of echoes) await e.kill('SIGKILL');
  } finally {
    c.close();
  }
});

test('it leaves nothing behind: every cgroup directory it made goes, kubepods levels included', async () => {
  for (const n of Object.values(nodes)) await n.daemon.stop();
  await kube.kill();
  const made = [...cluster.cgroups];
  assert.ok(made.some((d) => d.endsWith('.scope')) && made.some((d) => /-pod[0-9a-f_]+\.slice$/.test(d)), made.join('\n'));
  const left = await cluster.destroy();
  for (const d of made) {
    // left: a kubepods level another cluster's pods are still in
    assert.ok(!fs.existsSync(d) || left.includes(d), `${d} is left behind`);
  }
  assert.ok(hadKubepods || !fs.existsSync(KUBEPODS) || left.length, `${KUBEPODS} was not there before, and is left behind`);
});
