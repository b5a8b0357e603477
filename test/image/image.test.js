// SPDX-License-Identifier: Apache-2.0
// image.test.js - the procctl-node image (make image) run in podman as the
// chart's DaemonSet pod, with exactly what `helm template` renders
// (pod.js reads it): its user, capabilities, read-only root, seccomp,
// hostPID, host paths and ConfigMap volume; the node's processes are real
// ones on the host, outside the container. From the host: the procctl
// CLI over the host-path socket, HTTP GETs of the pod's IP.
//
// RuntimeDefault seccomp is given as containerd and Docker ship it: the
// runtime's profile where perf_event_open is allowed with CAP_PERFMON
// (world.js). podman's own profile here (containers-common before 2025)
// allows it only with CAP_SYS_ADMIN; a test shows what the daemon does there.
'use strict';

const { test, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { h, Pod, podman, render, values, cli, echo, token, attachedBy, W, ECHO, TOK, IMAGE } = require('./world');
const { parse } = require('./pod');
const { certs } = require('../node/certs');

const ROOT = path.resolve(__dirname, '..', '..');

before(() => {
  assert.ok(IMAGE, 'PROCCTL_IMAGE names the image (test/image/run.sh builds it)');
  assert.equal(podman(['image', 'exists', IMAGE], { check: false }).status, 0, `no image ${IMAGE}`);
});

const main = { dir: path.join(W, 'main') };

test('the rendered pod runs: clients on the host attached by the scan and by the hello probe', async () => {
  const rendered = render(values(main.dir));
  main.rendered = rendered;
  main.a = await echo(); // before the daemon: its first scan finds it
  main.pod = new Pod('main', rendered, { dir: main.dir }).start();
  main.sock = main.pod.sock;
  await main.pod.ready();
  await attachedBy(main.sock, ECHO, main.a.pid);
  assert.ok(await main.pod.metric('procctl_scans_total') >= 1);
  assert.equal(await main.pod.metric('procctl_hello_available'), 1);
  // After it, with rescans a minute apart (the chart's default): only the
  // probe can have found it this soon: by its hello (a uprobe), or, where
  // the kernel wants CAP_SYS_ADMIN for uprobes (Linux 6.16 on), by its
  // mapping of a program with the probe.
  const [hits, targeted] = [await main.pod.metric('procctl_hello_hits_total'),
    await main.pod.metric('procctl_targeted_scans_total')];
  main.b = await echo();
  await attachedBy(main.sock, ECHO, main.b.pid, 10000);
  if (await main.pod.metric('procctl_hello_uprobes_denied') === 1) {
    assert.ok(await main.pod.metric('procctl_targeted_scans_total') > targeted, 'found through its mapping');
    assert.ok(main.pod.logs().some((l) => /event=hello_uprobes_denied .*CAP_SYS_ADMIN/.test(l)));
  } else {
    assert.ok(await main.pod.metric('procctl_hello_hits_total') > hits, 'the hello was heard');
  }
  // What the spec said, as the container has it.
  const insp = JSON.parse(podman(['inspect', main.pod.name]).stdout)[0];
  assert.equal(insp.HostConfig.PidMode, 'host');
  assert.equal(insp.HostConfig.ReadonlyRootfs, true);
  assert.equal(insp.HostConfig.Memory, 256 * 2 ** 20); // the chart's memory limit
  assert.deepEqual(insp.HostConfig.CapAdd.map((c) => c.replace(/^CAP_/, '')).sort(),
    ['CHECKPOINT_RESTORE', 'DAC_READ_SEARCH', 'IPC_LOCK', 'PERFMON', 'SYS_PTRACE']);
  const status = main.pod.exec(['cat', '/proc/self/status']).stdout; // what podman exec gets, as the daemon
  assert.match(status, /^CapEff:\s+0000014000084004$/m, 'exactly the five capabilities');
  assert.match(status, /^NoNewPrivs:\s+1$/m);
  assert.match(status, /^Seccomp:\s+2$/m);
  assert.notEqual(main.pod.exec(['touch', '/etc/x']).status, 0, 'the root filesystem is read-only');
});

test('from the host: publish --wait APPLIED, the token rotates, /readyz and /metrics', async () => {
  const r = cli(main.sock, ['publish', '--consumer', ECHO, '--data', 'from-the-host', '--wait']);
  assert.equal(r.code, 0, r.out + r.err);
  assert.match(r.out, /APPLIED/);
  for (const c of [main.a, main.b]) await c.line(/event=applied .*payload=from-the-host$/, { out: true });

  const witness = path.join(main.dir, 'witness');
  const ts = [await token(witness), await token(witness)];
  for (const t of ts) await attachedBy(main.sock, TOK, t.pid);
  await h.until(() => ts.every((t) => fs.existsSync(witness) &&
    fs.readFileSync(witness, 'utf8').includes(`S ${t.pid} `)), { timeout: 20000, what: 'each token client to hold' });
  const res = cli(main.sock, ['-o', 'json', 'resources']);
  assert.equal(res.code, 0, res.err);
  assert.ok(Number(JSON.parse(res.out).arbiters[0].resources[0].handoffs) >= 1, res.out);

  assert.equal((await main.pod.get('/readyz')).status, 200);
  const m = await main.pod.get('/metrics');
  assert.equal(m.status, 200);
  assert.match(m.body, new RegExp(`^procctl_processes\\{consumer="${ECHO}",ownership="owned"\\} 2$`, 'm'));
  assert.match(m.body, new RegExp(`^procctl_processes\\{consumer="${TOK}",ownership="owned"\\} 2$`, 'm'));
  assert.match(m.body, /^procctl_resource_blocked_seconds_total\{kind="tok",resource="[^"]+"\} [0-9.]+$/m);
  const f = path.join(main.dir, 'metrics.txt');
  fs.writeFileSync(f, m.body);
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: m.body, encoding: 'utf8' });
  assert.equal(lint.status, 0, lint.stdout + lint.stderr);
});

test('the chart\'s liveness command, in the container: SERVING', () => {
  const r = main.pod.exec(main.pod.spec.liveness);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SERVING/);
});

const DESIRED = { desired: [{ name: 'img-desired', consumer: ECHO, schema: 1, data: 'from-the-configmap' }] };

test('the ConfigMap swapped as the kubelet does: a [desired] section reaches the host processes', async () => {
  const cms = parse(render(values(main.dir, DESIRED))).ConfigMap;
  main.pod.spec.swapConfig(cms[0].data); // a new ..data directory renamed over the old
  for (const c of [main.a, main.b]) await c.line(/event=applied .*payload=from-the-configmap$/, { out: true });
  const r = cli(main.sock, ['-o', 'json', 'desired', 'ls']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /img-desired/);
});

test('a rolling update with maxSurge: the new pod waits on standby, takes over at the old one\'s SIGTERM, no flap',
  async () => {
    // The chart as it is now: the ConfigMap with the [desired] section.
    const rendered = render({ ...values(main.dir, DESIRED), updateStrategy: { maxUnavailable: 0, maxSurge: 1 } });
    const marks = [main.a, main.b].map((c) => [c, c.out.length]);
    const next = new Pod('next', rendered, { dir: main.dir }).start();
    await next.line(/event=standby lock=.*NODE\.lock/);
    await assert.rejects(next.get('/readyz')); // it binds nothing: unready while the old one serves
    const r = cli(main.sock, ['publish', '--consumer', ECHO, '--data', 'during-the-overlap', '--wait']);
    assert.equal(r.code, 0, r.out + r.err); // the socket is the old pod's
    for (const [c] of marks) await c.line(/event=applied .*payload=during-the-overlap$/, { out: true });

    assert.equal(main.pod.stop(), 0); // SIGTERM, the chart's grace period
    assert.ok(main.pod.logs().some((l) => /event=handed_off/.test(l)));
    await next.line(/event=taking_over/);
    await next.ready();
    await attachedBy(next.sock, ECHO, main.a.pid);
    await attachedBy(next.sock, ECHO, main.b.pid);
    await h.sleep(1000); // a flap would come with the new owner's first writes
    for (const [c, at] of marks) {
      const since = c.out.slice(at);
      assert.ok(!since.some((l) => /event=(cleared|rejected|lease state=expired)/.test(l)), since.join('\n'));
      assert.match(since.filter((l) => /event=applied/.test(l)).pop(), /payload=during-the-overlap$/);
    }
    const r2 = cli(next.sock, ['publish', '--consumer', ECHO, '--data', 'after-the-update', '--wait']);
    assert.equal(r2.code, 0, r2.out + r2.err);
    main.pod.rm();
    main.pod = next;
  });

test('the mTLS values: the pod serves gRPC on its IP to a client with a certificate, to none without', async () => {
  const dir = path.join(W, 'mtls');
  fs.mkdirSync(dir, { recursive: true });
  const c = certs(dir);
  c.ca('ca');
  c.leaf('server', 'procctl-node', 'ca', 'subjectAltName = DNS:procctl-node.procctl.svc\nextendedKeyUsage = serverAuth');
  c.leaf('client', 'controller-1', 'ca', 'extendedKeyUsage = clientAuth');
  const consumer = `imm${process.pid}`.slice(0, 31); // not the other pods' consumers
  const rendered = render(values(dir, { consumers: [consumer], arbiters: [], desired: [] }),
    [path.join(ROOT, 'deploy', 'helm', 'procctl-node', 'ci', 'mtls-values.yaml')]);
  const secrets = { 'procctl-node-tls': { 'tls.crt': c.read('server.crt'), 'tls.key': c.read('server.key'),
    'ca.crt': c.read('ca.crt') } };
  const pod = new Pod('mtls', rendered, { dir, secrets }).start();
  try {
    await pod.ready();
    const live = pod.exec(pod.spec.liveness);
    assert.match(live.stdout, /SERVING/, live.stderr);
    const addr = `${pod.ip}:${pod.spec.ports.grpc}`;
    const options = { 'grpc.ssl_target_name_override': 'procctl-node.procctl.svc' };
    const good = h.client(addr, { creds: h.grpc.credentials.createSsl(c.read('ca.crt'), c.read('client.key'),
      c.read('client.crt')), options });
    const r = await h.call(good, 'ListProcesses', {});
    assert.ok(Array.isArray(r.processes));
    good.close();
    const bad = h.client(addr, { creds: h.grpc.credentials.createSsl(c.read('ca.crt')), options });
    assert.notEqual(await h.code(h.call(bad, 'ListProcesses', {}, { deadlineMs: 5000 })), 'OK');
    bad.close();
  } finally {
    pod.stop();
    pod.rm();
  }
});
