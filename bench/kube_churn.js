// SPDX-License-Identifier: Apache-2.0
// kube_churn.js - procctl-node beside a Kubernetes API server whose view
// of the node churns: 500 pods, their labels changed CHURN_PER_S times a
// second (kubeapi.js, the tests' stand-in), while a healthy client's
// Publish with wait-for-ack is timed, against the same daemon with the
// same 500 pods and no churn measured in the same run. Prints bench.h's
// JSON lines:
//   kube_churn_publish_ack        median round trip under churn, floor:
//                                 the idle run's median
//   kube_churn_publish_ack_p99    the same for the 99th percentiles
//   kube_churn_rss                the daemon's resident memory after the
//                                 churn, floor: after the idle run (its
//                                 table is bounded: kubernetes_pods_max)
//   kube_churn_events             watch events the daemon took a second,
//                                 floor: the changes the API server made
// Usage: node bench/kube_churn.js   (PROCCTL_NODE, ECHO_CLIENT and the
// other paths harness.js reads; NODE_PATH: the test peers)
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const h = require('../test/node/harness');

const PODS = 500;
const PHASE_S = Number(process.env.KUBE_CHURN_SECONDS || 5); // each phase's publishes
const CHURN_PER_S = Number(process.env.CHURN_PER_S || 1000);
const TOKEN = 'bench-token';

const dir = h.scratch('procctl-churn-');
const { file, ca, leaf } = require('../test/node/certs').certs(dir);

const report = (name, unit, value, floor) =>
  console.log(JSON.stringify({ name, value: +value.toFixed(3), unit, floor: +floor.toFixed(3), ratio: +(value / floor).toFixed(3) }));

function ctl(sock, method, p) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: sock, method, path: p }, (res) => {
      let out = '';
      res.on('data', (d) => { out += d; });
      res.on('end', () => resolve(JSON.parse(out)));
    });
    req.on('error', reject);
    req.end();
  });
}

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const quantile = (v, q) => v.slice().sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(q * v.length))];

// Publishes one after another for s seconds: each one's milliseconds.
async function timed(c, pid, s) {
  const ms = [];
  const end = Date.now() + s * 1000;
  for (let i = 0; Date.now() < end; i++) {
    const t = process.hrtime.bigint();
    const r = await h.call(c, 'Publish', { selector: { pid }, payload: Buffer.from(`round ${i}`), waitMs: 5000 });
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (r.results[0].status !== 'PUBLISH_STATUS_APPLIED') throw new Error(JSON.stringify(r));
  }
  return ms;
}

async function main() {
  ca('ca');
  leaf('api', 'kubernetes', 'ca', 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth');
  fs.writeFileSync(file('token'), `${TOKEN}\n`);
  const pods = Array.from({ length: PODS }, (_, i) => ({
    kind: 'Pod', apiVersion: 'v1',
    metadata: { name: `p-${i}`, namespace: `ns-${i % 20}`, uid: crypto.randomUUID(), labels: { app: `a${i % 7}` } },
    spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'app:1' }] },
  }));
  fs.writeFileSync(file('pods.json'), JSON.stringify(pods));
  const port = await h.freePort();
  const hp = await h.freePort();
  const sock = file('control.sock');
  const api = new h.Child(process.execPath, [path.join(__dirname, '..', 'test', 'node', 'kubeapi.js'), String(port),
    file('api.crt'), file('api.key'), TOKEN, file('pods.json'), sock]);
  await api.line(/^listening /, { out: true });
  const d = await new h.Daemon({ args: ['--http-listen', `127.0.0.1:${hp}`, '--kubernetes-api', `https://127.0.0.1:${port}`,
    '--kubernetes-node', 'node-a', '--kubernetes-token-file', file('token'), '--kubernetes-ca-file', file('ca.crt')] }).ready();
  const c = d.client();
  try {
    await h.until(async () => (await h.metric(hp, 'procctl_kube_pods')) === PODS, { what: 'the pods listed' });
    const e = await h.echo();
    await h.attached(d, e.pid);
    await timed(c, e.pid, 0.5); // warm
    const idle = await timed(c, e.pid, PHASE_S);
    const rssIdle = rss(d.innerPid());
    const ev0 = await h.metric(hp, 'procctl_kube_watch_events_total');
    const ch0 = (await ctl(sock, 'GET', '/stats')).churned;
    const t0 = Date.now();
    await ctl(sock, 'POST', `/churn?per_s=${CHURN_PER_S}`);
    await h.sleep(1000);
    const busy = await timed(c, e.pid, PHASE_S);
    await ctl(sock, 'POST', '/churn?per_s=0');
    const secs = (Date.now() - t0) / 1000;
    const made = (await ctl(sock, 'GET', '/stats')).churned - ch0;
    await h.until(async () => (await h.metric(hp, 'procctl_kube_watch_events_total')) - ev0 >= made,
      { what: 'every change taken', timeout: 60000 });
    const taken = (await h.metric(hp, 'procctl_kube_watch_events_total')) - ev0;
    if ((await h.metric(hp, 'procctl_kube_pods')) !== PODS) throw new Error('the table is not the node\'s pods');
    report('kube_churn_publish_ack', 'ms', quantile(busy, 0.5), quantile(idle, 0.5));
    report('kube_churn_publish_ack_p99', 'ms', quantile(busy, 0.99), quantile(idle, 0.99));
    report('kube_churn_rss', 'KiB', rss(d.innerPid()), rssIdle);
    report('kube_churn_events', 'per_s', taken / secs, made / secs);
    await e.kill('SIGKILL');
  } finally {
    c.close();
    await d.stop();
    await api.kill();
    spawnSync('rm', ['-rf', dir]);
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
