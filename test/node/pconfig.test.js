// SPDX-License-Identifier: Apache-2.0
// pconfig.test.js - ProcessConfig objects (procctl.io/v1alpha1), which
// every node's procctl-node watches (kubernetes_processconfigs) and gives
// to its own processes of the pods they select, on two nodes (namespaces
// of netns.js, each with its daemon, their pods kubelet-named cgroups)
// against the stand-in API server (kubeapi.js, which validates the
// objects by the CRD's schema and keeps server-side apply's field
// managers). The objects are written as kubectl writes them (server-side
// apply, delete), from the cluster's network (kubereq.js). Each node's
// entry of the object's status, its counts and reason, comes back
// through the same API.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');
const { Cluster } = require('./netns');
const { runProgram } = require('./clirun');

const scratch = h.scratch('procctl-pconfig-');
const { file, ca, leaf } = require('./certs').certs(scratch);
const stand = require('./kubestand');
const PORT = 6443;
const C = h.CONSUMER;
const GROUP = '/apis/procctl.io/v1alpha1';
const KUBEREQ = path.join(__dirname, 'kubereq.js');
const THREADSTOP = process.env.THREADSTOP;
const CRD = path.join(__dirname, '..', '..', 'deploy', 'helm', 'procctl-node', 'files', 'processconfig-crd.yaml');

let cluster, node, nodeB, api, daemon, daemonB, client, optsA;
const pods = {};

// Requests to the API from the cluster's network, in order: their
// { code, body }.
async function kube(reqs) {
  const r = await runProgram([...cluster.prefix(), process.execPath, KUBEREQ, `https://10.77.1.1:${PORT}`, file('token'),
    file('ca.crt')], { input: JSON.stringify(reqs), timeout: 60000 });
  if (r.code !== 0) throw new Error(`kubereq: exit ${r.code} ${r.signal || ''}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const objPath = (ns, name = '') => `${GROUP}/namespaces/${ns}/processconfigs${name ? `/${name}` : ''}`;

// kubectl apply --server-side of a ProcessConfig: the answer.
async function apply(ns, name, spec) {
  const [r] = await kube([{ method: 'PATCH', path: `${objPath(ns, name)}?fieldManager=kubectl`,
    type: 'application/apply-patch+yaml',
    body: { apiVersion: 'procctl.io/v1alpha1', kind: 'ProcessConfig', metadata: { name, namespace: ns }, spec } }]);
  assert.ok(r.code === 200 || r.code === 201, JSON.stringify(r));
  return r.body;
}

async function remove(ns, name) {
  const [r] = await kube([{ method: 'DELETE', path: objPath(ns, name) }]);
  assert.equal(r.code, 200, JSON.stringify(r));
}

async function get(ns, name) {
  const [r] = await kube([{ method: 'GET', path: objPath(ns, name) }]);
  assert.equal(r.code, 200, JSON.stringify(r));
  return r.body;
}

// The object's status entry of each node, once every one of want holds
// (want: node -> fields it must have).
async function entries(ns, name, want, what) {
  let last;
  await h.until(async () => {
    last = await get(ns, name);
    const by = Object.fromEntries(((last.status || {}).nodes || []).map((e) => [e.node, e]));
    return Object.entries(want).every(([n, f]) => (f === null ? !by[n]
      : by[n] && Object.entries(f).every(([k, v]) => by[n][k] === v)));
  }, { what: `${what}: ${JSON.stringify(want)}`, timeout: 20000 }).catch((e) => {
    throw new Error(`${e.message}\nlast: ${JSON.stringify(last && last.status)}`);
  });
  return last;
}

// The lines of a pod's echo client that match re.
const said = (p, re) => p.echo.out.filter((l) => re.test(l)).length;
// Wait for the n-th such line.
const nth = (p, re, n, what) => h.until(() => said(p, re) >= n, { what: `${what} (${re} ${n} times)` });

// node-a's daemon's /metrics value of name.
function metric(name) {
  const body = node.run(['curl', '-sf', '--max-time', '5', 'http://127.0.0.1:9464/metrics']);
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

before(async () => {
  await stand.load();
  stand.credentials(file, ca, leaf);
  // A CRD that checks less than ours (no pattern on the consumer), as a
  // cluster whose CRD is older than its daemons: what the schema would
  // have refused reaches the daemon, which must refuse it itself.
  fs.writeFileSync(file('crd.yaml'), fs.readFileSync(CRD, 'utf8').replace(/\n {18}pattern: '\^\[a-z0-9_.-\]\+\$'/, ''));
  assert.notEqual(fs.readFileSync(file('crd.yaml'), 'utf8'), fs.readFileSync(CRD, 'utf8'), 'the consumer\'s pattern taken out');
  process.env.KUBEAPI_CRD = file('crd.yaml');
  cluster = await Cluster.create('pcpcfg');
  node = await cluster.node('node-a');
  nodeB = await cluster.node('node-b');
  const spec = {
    'web-a': { ns: 'shop', labels: { app: 'web' } },
    'db-a': { ns: 'shop', labels: { app: 'db' } },
    'web-j': { ns: 'jobs', labels: { app: 'web' } },
    'web-b': { ns: 'shop', labels: { app: 'web' }, nodeName: 'node-b' },
  };
  for (const [name, o] of Object.entries(spec)) {
    const p = cluster.pod(name);
    pods[name] = { uid: p.uid, container: p.container(), node: o.nodeName === 'node-b' ? nodeB : node, spec: o };
  }
  api = await stand.apiServer(file, Object.entries(pods).map(([name, p]) => stand.pod(name, { uid: p.uid,
    container: p.container.id, ...p.spec })), { port: PORT, host: '0.0.0.0', prefix: cluster.prefix() });
  const args = (n) => stand.kubeArgs(file, `https://10.77.${n === 'node-a' ? 1 : 2}.1:${PORT}`, ['--kubernetes-node', n,
    '--kubernetes-processconfigs', 'true', '--kubernetes-processconfigs-max', '64', '--kubernetes-processconfigs-namespace-max', '4']);
  optsA = { prefix: node.prefix(), args: ['--http-listen', '127.0.0.1:9464', ...args('node-a')] };
  daemon = await new h.Daemon(optsA).ready();
  daemonB = await new h.Daemon({ prefix: nodeB.prefix(), args: args('node-b') }).ready();
  client = daemon.client();
  for (const p of Object.values(pods)) p.echo = await p.node.echo(C, p.container);
  await h.until(() => metric('procctl_kube_processconfigs_synced') === 1, { what: 'node-a listed the ProcessConfigs' });
});

after(async () => {
  if (client) client.close();
  if (daemon && daemon.exit === null) await daemon.stop();
  if (daemonB && daemonB.exit === null) await daemonB.stop();
  if (api) await api.kill();
  if (cluster) await cluster.destroy();
});

const APPLIED_DEBUG = /^event=applied gen=\d+ .*payload=\{"level":"debug"\}$/;
const APPLIED_V2 = /^event=applied gen=\d+ .*payload=v2$/;

// A hostile API server's answer to a status write: its Status's message is
// the server's own text (a terminal's escapes, quotes, a newline that
// would start a forged log line, 3,000 bytes more). The write is dropped
// (422 is no answer to retry), counted, and said in one line, escaped and
// cut; the object's next write is sent as any other. First: a line of
// kube_write_failed is written once a second at most, and the later tests
// delete objects whose entries are then withdrawn (404: logged).
test('a status write refused with a hostile message: dropped, counted, logged on one line escaped and cut', async () => {
  const failed = () => metric('procctl_kube_writes_total{result="failed"}') || 0;
  const before = failed();
  const message = `\x1b[2J\x1b]0;owned\x07 "quoted" back\\slash\nlevel=error event=forged ${'x'.repeat(3000)}`;
  await api.ctl('POST', `/fail?code=422&count=1&path=${encodeURIComponent('/processconfigs/hostile-answer/status')}`
    + `&message=${encodeURIComponent(message)}`);
  // Of a consumer none of db-a's processes is: written on it (NoProcesses), given to none.
  const spec = (v) => ({ selector: { matchLabels: { app: 'db' } }, consumer: 'nobody-here', schemaVersion: 1,
    payload: { data: Buffer.from(v).toString('base64') } });
  const uid = (await apply('shop', 'hostile-answer', spec('hostile-1'))).metadata.uid;
  const line = () => daemon.lines.find((l) => l.includes(' event=kube_write_failed ') && l.includes(`key=${uid} `));
  await h.until(line, { what: 'the refused write logged' });
  const l = line();
  assert.match(l, / level=warn event=kube_write_failed key=\S+ method=PATCH action=dropped error="HTTP 422: \\x1b\[2J\\x1b\]0;owned\\x07 \\"quoted\\" back\\\\slash\\x0alevel=error event=forged x+"( suppressed=\d+)?$/);
  assert.ok(!/[\x00-\x1f\x7f]/.test(l), 'no control byte of the server\'s reaches the log');
  assert.ok(l.length < 1000, `cut: ${l.length} bytes`);
  assert.ok(!daemon.lines.some((x) => /^level=error event=forged/.test(x)), 'no line forged');
  assert.equal(failed(), before + 1, 'counted as failed');
  // Not retried: the next change of the object is what writes it again.
  await apply('shop', 'hostile-answer', spec('hostile-2'));
  await entries('shop', 'hostile-answer', { 'node-a': { reason: 'NoProcesses', observedGeneration: 2 } },
    'node-a\'s entry written after');
  assert.equal(failed(), before + 1);
  await remove('shop', 'hostile-answer');
  await h.until(() => metric('procctl_kube_processconfigs') === 0, { what: 'the object gone' });
});

test('a ProcessConfig reaches the processes of the pods it selects, on both nodes, and each node says so on it', async () => {
  await apply('shop', 'web-tuning', { selector: { matchLabels: { app: 'web' } }, consumer: C, schemaVersion: 1,
    payload: { json: { level: 'debug' } } });
  await nth(pods['web-a'], APPLIED_DEBUG, 1, 'node-a\'s web pod');
  await nth(pods['web-b'], APPLIED_DEBUG, 1, 'node-b\'s web pod');
  const o = await entries('shop', 'web-tuning', {
    'node-a': { matched: 1, applied: 1, pending: 0, failed: 0, reason: 'Applied', observedGeneration: 1 },
    'node-b': { matched: 1, applied: 1, pending: 0, failed: 0, reason: 'Applied', observedGeneration: 1 },
  }, 'both nodes applied it');
  // Each node's entry is its own field manager's, written to the status.
  const managers = o.metadata.managedFields.filter((m) => m.subresource === 'status').map((m) => m.manager).sort();
  assert.deepEqual(managers, ['procctl-node/node-a', 'procctl-node/node-b']);
  // Not the db pod (another label), not jobs' web pod (another namespace).
  for (const p of ['db-a', 'web-j']) assert.equal(said(pods[p], /^event=applied/), 0, p);
  assert.equal(metric('procctl_kube_processconfigs'), 1);
  assert.ok(metric('procctl_kube_writes_total{result="sent"}') >= 1, 'its status entry, sent');
  node.run(['bash', '-c', 'set -o pipefail; curl -sf --max-time 5 http://127.0.0.1:9464/metrics | promtool check metrics']);
});

test('a new payload reaches them, its generation said; the same spec again writes nothing to them', async () => {
  await apply('shop', 'web-tuning', { selector: { matchLabels: { app: 'web' } }, consumer: C, schemaVersion: 1,
    payload: { data: Buffer.from('v2').toString('base64') } });
  await nth(pods['web-a'], APPLIED_V2, 1, 'node-a');
  await nth(pods['web-b'], APPLIED_V2, 1, 'node-b');
  await entries('shop', 'web-tuning', { 'node-a': { applied: 1, observedGeneration: 2, reason: 'Applied' },
    'node-b': { applied: 1, observedGeneration: 2, reason: 'Applied' } }, 'generation 2 applied');
  // A label on the object (no spec change) is no new config.
  const before = said(pods['web-a'], /^event=(applied|cleared)/);
  const [r] = await kube([{ method: 'PATCH', path: objPath('shop', 'web-tuning'), type: 'application/merge-patch+json',
    body: { metadata: { labels: { team: 'shop' } } } }]);
  assert.equal(r.code, 200, JSON.stringify(r));
  await apply('shop', 'marker', { selector: { matchLabels: { app: 'db' } }, consumer: C, schemaVersion: 1,
    payload: { data: Buffer.from('marker').toString('base64') } });
  await nth(pods['db-a'], /^event=applied gen=\d+ .*payload=marker$/, 1, 'a later object applied (the label seen before it)');
  assert.equal(said(pods['web-a'], /^event=(applied|cleared)/), before, 'the label wrote nothing to web-a');
  await remove('shop', 'marker');
  await nth(pods['db-a'], /^event=cleared/, 1, 'marker withdrawn');
});

test('the node\'s own config by label selector wins over it; a container\'s ProcessConfig over both', async () => {
  const cleared = said(pods['web-a'], /^event=applied gen=\d+ .*payload=v2$/);
  const own = { consumer: C, schemaVersion: 1, namespace: 'shop', labelSelector: 'app=web' };
  await h.call(client, 'SetDesiredConfig', { config: { selector: own, payload: Buffer.from('node-own') } });
  await nth(pods['web-a'], /^event=applied gen=\d+ .*payload=node-own$/, 1, 'node-a\'s own');
  await entries('shop', 'web-tuning', { 'node-a': { matched: 0, reason: 'Overridden' }, 'node-b': { reason: 'Applied' } },
    'node-a says its own config takes precedence');
  await apply('shop', 'app-only', { selector: { matchLabels: { app: 'web' } }, container: 'app', consumer: C, schemaVersion: 1,
    payload: { data: Buffer.from('app-only').toString('base64') } });
  await nth(pods['web-a'], /^event=applied gen=\d+ .*payload=app-only$/, 1, 'the container\'s, on node-a');
  await nth(pods['web-b'], /^event=applied gen=\d+ .*payload=app-only$/, 1, 'the container\'s, on node-b');
  await remove('shop', 'app-only');
  await nth(pods['web-b'], APPLIED_V2, 2, 'node-b back to web-tuning');
  await nth(pods['web-a'], /^event=applied gen=\d+ .*payload=node-own$/, 2, 'node-a back to its own');
  await h.call(client, 'DeleteDesiredConfig', { selector: own, clear: true }); // each gets what applies without it
  await nth(pods['web-a'], APPLIED_V2, cleared + 1, 'node-a back to web-tuning');
  await entries('shop', 'web-tuning', { 'node-a': { matched: 1, applied: 1, reason: 'Applied' } }, 'node-a applies it again');
});

test('an object whose spec does not hold is refused alone, said on it by each node that has its pods, with an Event', async () => {
  await apply('shop', 'bad-consumer', { consumer: 'Bad_Name', schemaVersion: 1, payload: { data: 'eA==' } });
  const o = await entries('shop', 'bad-consumer', { 'node-a': { reason: 'Invalid' }, 'node-b': { reason: 'Invalid' } },
    'both nodes refuse it');
  assert.match(o.status.nodes[0].message, /^spec\.consumer: not a consumer name/);
  await h.until(() => api.out.some((l) => /method=POST path=\/apis\/events\.k8s\.io\/v1\/namespaces\/shop\/events code=201/.test(l)),
    { what: 'an Event about it' });
  // jobs has pods on node-a only: an invalid object there is node-a's to say.
  await apply('jobs', 'bad-jobs', { consumer: 'Bad_Name', schemaVersion: 1, payload: { data: 'eA==' } });
  await entries('jobs', 'bad-jobs', { 'node-a': { reason: 'Invalid' } }, 'node-a refuses it');
  assert.ok(!((await get('jobs', 'bad-jobs')).status.nodes || []).some((e) => e.node === 'node-b'), 'node-b has no pod of jobs');
  // The others apply as they did.
  await entries('shop', 'web-tuning', { 'node-a': { reason: 'Applied' }, 'node-b': { reason: 'Applied' } }, 'web-tuning stands');
  await remove('shop', 'bad-consumer');
  await remove('jobs', 'bad-jobs');
});

test('a config its processes reject, or cannot hold, is said on it: Rejected, PayloadTooLarge, each an Event', async () => {
  const events = () => api.out.filter((l) => /method=POST path=\/apis\/events\.k8s\.io\/v1\/namespaces\/shop\/events code=201/.test(l)).length;
  const before = events();
  await apply('shop', 'db-binary', { selector: { matchLabels: { app: 'db' } }, consumer: C, schemaVersion: 1,
    payload: { data: Buffer.from([0, 1, 2]).toString('base64') } });
  await nth(pods['db-a'], /^event=rejected gen=\d+ error=EINVAL$/, 1, 'db-a nacks a payload that is not text');
  const o = await entries('shop', 'db-binary', { 'node-a': { matched: 1, applied: 0, failed: 1, reason: 'Rejected' } },
    'node-a says it was rejected');
  assert.match(o.status.nodes.find((e) => e.node === 'node-a').message, /^1 of 1 processes rejected it \(pid \d+: status -22\)$/);
  assert.ok(!o.status.nodes.some((e) => e.node === 'node-b'), 'node-b runs no db pod: no entry');
  await h.until(() => events() > before, { what: 'an Event of the rejection' });
  await apply('shop', 'db-binary', { selector: { matchLabels: { app: 'db' } }, consumer: C, schemaVersion: 1,
    payload: { data: Buffer.alloc(5000, 'a').toString('base64') } }); // the echo client's region holds 4,096
  await entries('shop', 'db-binary', { 'node-a': { matched: 1, failed: 1, reason: 'PayloadTooLarge', observedGeneration: 2 } },
    'node-a says it does not fit');
  await h.until(() => events() > before + 1, { what: 'an Event of the size' });
  await remove('shop', 'db-binary');
});

test('a flood of objects in other namespaces takes only its namespaces\' room; the others apply', async () => {
  const refusedBefore = metric('procctl_kube_processconfigs_refused_total');
  const reqs = [];
  for (let ns = 0; ns < 3; ns++) {
    for (let i = 0; i < 30; i++) {
      reqs.push({ method: 'PATCH', path: `${objPath(`flood-${ns}`, `f-${i}`)}?fieldManager=flood`,
        type: 'application/apply-patch+yaml', body: { apiVersion: 'procctl.io/v1alpha1', kind: 'ProcessConfig',
          metadata: { name: `f-${i}`, namespace: `flood-${ns}` },
          spec: { consumer: C, schemaVersion: 1, payload: { data: Buffer.alloc(64 << 10, i).toString('base64') } } } });
    }
  }
  const answers = await kube(reqs);
  assert.ok(answers.every((r) => r.code === 201), JSON.stringify(answers.find((r) => r.code !== 201)));
  // 4 applied of each namespace, 4 refused kept on record, the rest counted.
  await h.until(() => metric('procctl_kube_processconfigs') === 1 + 12 && metric('procctl_kube_processconfigs_dropped') === 66,
    { what: 'the flood bounded: 12 kept, 66 dropped' }).catch((e) => {
    throw new Error(`${e.message}: kept ${metric('procctl_kube_processconfigs')} dropped ${metric('procctl_kube_processconfigs_dropped')} ` +
      `refused ${metric('procctl_kube_processconfigs_refused_total')}\n${daemon.lines.filter((l) => /processconfig/.test(l)).slice(-20).join('\n')}`);
  });
  assert.ok(metric('procctl_kube_processconfigs_refused_total') >= refusedBefore + 12);
  assert.equal(metric('procctl_kube_processconfigs_bytes'), 2 + 12 * (64 << 10), 'web-tuning\'s 2, and 12 of 64 KiB');
  // A daemon that lists them all at once keeps as much, and no more.
  if (client) client.close();
  await daemon.stop();
  daemon = await new h.Daemon({ ...optsA, dir: daemon.dir }).ready();
  client = daemon.client();
  await h.until(() => metric('procctl_kube_processconfigs') === 1 + 12 && metric('procctl_kube_processconfigs_dropped') === 66,
    { what: 'the list bounded alike: 12 kept, 66 dropped' });
  assert.equal(metric('procctl_kube_processconfigs_bytes'), 2 + 12 * (64 << 10));
  // shop's objects still apply: a new one, now.
  await apply('shop', 'after-flood', { selector: { matchLabels: { app: 'db' } }, consumer: C, schemaVersion: 1,
    payload: { data: Buffer.from('after-flood').toString('base64') } });
  await nth(pods['db-a'], /^event=applied gen=\d+ .*payload=after-flood$/, 1, 'shop\'s new object applied');
  await remove('shop', 'after-flood');
  for (let ns = 0; ns < 3; ns++) {
    const [r] = await kube([{ method: 'DELETE', path: objPath(`flood-${ns}`) }]);
    assert.equal(r.code, 200, JSON.stringify(r));
  }
  await h.until(() => metric('procctl_kube_processconfigs') === 1, { what: 'the flood gone' });
});

test('an object that churns: its processes end with its last spec, its entry written once a tick at most, not once a change', async () => {
  const sent = () => metric('procctl_kube_writes_total{result="sent"}');
  const before = sent();
  const t0 = Date.now();
  const reqs = [];
  for (let i = 0; i < 60; i++) {
    reqs.push({ method: 'PATCH', path: `${objPath('shop', 'churn')}?fieldManager=kubectl`, type: 'application/apply-patch+yaml',
      body: { apiVersion: 'procctl.io/v1alpha1', kind: 'ProcessConfig', metadata: { name: 'churn', namespace: 'shop' },
        spec: { selector: { matchLabels: { app: 'db' } }, consumer: C, schemaVersion: 1,
          payload: { data: Buffer.from(`churn-${i}`).toString('base64') } } } });
  }
  assert.ok((await kube(reqs)).every((r) => r.code === 200 || r.code === 201));
  await nth(pods['db-a'], /^event=applied gen=\d+ .*payload=churn-59$/, 1, 'db-a ends with the last');
  await entries('shop', 'churn', { 'node-a': { reason: 'Applied', observedGeneration: 60 } }, 'node-a says the last generation');
  const s = (Date.now() - t0) / 1000;
  // A tick a second looks at it (and kubewrite sends a key at most every
  // 2 s); node-a's other objects did not change.
  assert.ok(sent() - before <= Math.ceil(s) + 2, `${sent() - before} writes in ${s} s`);
  const cleared = said(pods['db-a'], /^event=cleared/);
  await remove('shop', 'churn');
  await nth(pods['db-a'], /^event=cleared/, cleared + 1, 'churn withdrawn');
});

// The queue between the watch's thread and the loop is bounded in bytes
// too (64 MiB of payloads): with the loop held still, 160 changes of a
// 1 MiB object do not pile up 160 MiB in it.
test('a loop held still while a 1 MiB object changes 160 times: its watch stops reading once 64 MiB wait; then the last applies', async () => {
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${daemon.innerPid()}/status`, 'utf8'))[1]) * 1024;
  const big = (i) => ({ method: 'PATCH', path: `${objPath('shop', 'big')}?fieldManager=kubectl`, type: 'application/apply-patch+yaml',
    body: { apiVersion: 'procctl.io/v1alpha1', kind: 'ProcessConfig', metadata: { name: 'big', namespace: 'shop' },
      spec: { selector: { matchLabels: { app: 'nothing-here' } }, consumer: C, schemaVersion: 1,
        payload: { data: Buffer.alloc(1 << 20, i).toString('base64') } } } });
  const base = rss();
  // The most the stand-in had written to the watch and node-a had not
  // read, seen so far: the watch ends at its timeoutSeconds (60 to 120 s,
  // as node-a asks), its backlog with it, and node-a, held, cannot watch
  // again; on a busy machine the 160 changes take longer than that.
  let most = 0;
  const backlog = async () => (most = Math.max(most, (await api.ctl('GET', '/stats')).collections.processconfigs.backlog));
  const stop = new h.Child(THREADSTOP, [String(daemon.innerPid()), 'procctl-node'], { stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    await stop.line(/^stopped \d+$/, { out: true });
    for (let i = 0; i < 160; i += 10) {
      const answers = await kube(Array.from({ length: 10 }, (_, k) => big(i + k)));
      assert.ok(answers.every((r) => r.code === 200 || r.code === 201), JSON.stringify(answers.find((r) => r.code > 201)));
      await backlog();
    }
    // The watch's thread reads until its queue is full, then stops: what
    // the stand-in writes piles up on its side (TCP pushes back).
    await h.until(async () => (await backlog()) > 32 << 20, { what: 'node-a stopped reading the watch', timeout: 30000 });
    // Its resident set, where it means what it says: ASan's allocator
    // keeps what is freed in its quarantine (every event's parse).
    const held = rss() - base;
    if (!process.env.PROCCTL_SANITIZE) assert.ok(held < 128 << 20, `${held >> 20} MiB more with the loop held: the queue is bounded`);
  } finally {
    stop.proc.stdin.end('go\n');
    await stop.line(/^released$/, { out: true });
  }
  try {
    await h.until(async () => (await get('shop', 'big')).metadata.generation === 160 &&
      metric('procctl_kube_processconfigs_bytes') === 2 + (1 << 20), { what: 'the last of them kept' });
  } finally {
    await remove('shop', 'big');
  }
});

test('a daemon restarted finds what it wrote, on the processes and on the object, and writes neither again', async () => {
  await entries('shop', 'web-tuning', { 'node-a': { reason: 'Applied', applied: 1 } }, 'applied before');
  const rv = (await get('shop', 'web-tuning')).metadata.resourceVersion;
  const lines = said(pods['web-a'], /^event=(applied|cleared)/);
  if (client) client.close();
  await daemon.stop();
  daemon = await new h.Daemon({ ...optsA, dir: daemon.dir }).ready();
  client = daemon.client();
  // A later object's entry: node-a listed them, and looked at every one since.
  await apply('shop', 'marker2', { selector: { matchLabels: { app: 'db' } }, consumer: C, schemaVersion: 1,
    payload: { data: Buffer.from('marker2').toString('base64') } });
  await entries('shop', 'marker2', { 'node-a': { reason: 'Applied', applied: 1 } }, 'the restarted node-a applied a new one');
  assert.equal(said(pods['web-a'], /^event=(applied|cleared)/), lines, 'web-a was not written again');
  const now = await get('shop', 'web-tuning');
  assert.equal(now.metadata.resourceVersion, rv, `web-tuning's status was not written again: ${JSON.stringify(now.status)}\n${api.out.filter((l) => /web-tuning/.test(l)).join('\n')}`);
  await remove('shop', 'marker2');
});

test('deleting it withdraws the config from every process it was given to', async () => {
  await remove('shop', 'web-tuning');
  await nth(pods['web-a'], /^event=cleared/, 1, 'node-a\'s web pod cleared');
  await nth(pods['web-b'], /^event=cleared/, 1, 'node-b\'s web pod cleared');
  await h.until(() => metric('procctl_kube_processconfigs') === 0, { what: 'node-a keeps none' }).catch((e) => {
    throw new Error(`${e.message}: ${metric('procctl_kube_processconfigs')}`);
  });
  assert.equal(said(pods['web-j'], /^event=/), said(pods['web-j'], /^event=(started|lease)/), 'jobs\' pod: nothing, all along');
});

// The CRD gone (a cluster without it: every list is 404), a daemon that
// starts holds back the configs that a ProcessConfig could outrank (by
// namespace or labels) until it lists them, and gives at once one by pod
// UID, which none can.
test('a daemon that cannot list the ProcessConfigs holds back only what one could outrank, until it lists them', async () => {
  const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const crd = require('yaml').parse(fs.readFileSync(file('crd.yaml'), 'utf8'));
  const [gone] = await kube([{ method: 'DELETE', path: `${CRDS}/processconfigs.procctl.io` }]);
  assert.equal(gone.code, 200, JSON.stringify(gone));
  if (client) client.close();
  await daemon.stop();
  daemon = await new h.Daemon({ ...optsA, dir: daemon.dir }).ready();
  client = daemon.client();
  await h.until(() => daemon.lines.some((l) => /event=kube_api_failed what=list error="HTTP 404/.test(l)),
    { what: 'node-a\'s list of them answered 404' });
  await h.call(client, 'SetDesiredConfig', { config: { selector: { consumer: C, schemaVersion: 1, podUid: pods['web-a'].uid },
    payload: Buffer.from('by-uid') } });
  await h.call(client, 'SetDesiredConfig', { config: { selector: { consumer: C, schemaVersion: 1, namespace: 'shop',
    labelSelector: 'app=db' }, payload: Buffer.from('db-own') } });
  // New processes in the two pods, attached now.
  const byUid = await pods['web-a'].node.echo(C, pods['web-a'].container);
  const byLabels = await pods['db-a'].node.echo(C, pods['db-a'].container);
  await byUid.line(/^event=applied gen=\d+ .*payload=by-uid$/, { out: true });
  await h.until(async () => (await h.call(client, 'ListProcesses', { filter: { podUid: pods['db-a'].uid } })).processes.length === 2,
    { what: 'the new process of db-a attached' });
  assert.equal(metric('procctl_kube_processconfigs_synced'), 0);
  assert.equal(byLabels.out.filter((l) => /^event=applied/.test(l)).length, 0, 'held back while they cannot be listed');
  const [back] = await kube([{ method: 'POST', path: CRDS, body: crd }]);
  assert.equal(back.code, 201, JSON.stringify(back));
  await byLabels.line(/^event=applied gen=\d+ .*payload=db-own$/, { out: true, timeout: 40000 }); // the list's backoff: up to 30 s
  await byUid.kill();
  await byLabels.kill();
});
