// SPDX-License-Identifier: Apache-2.0
// limits.test.js - what a client can make the daemon hold is bounded:
// a call waiting for acks ends with its client (cancelled, or killed),
// and waits are capped in all, per caller and in time.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const h = require('./harness');

const CLI = process.env.PROCCTL_CLI;
if (!CLI) throw new Error('PROCCTL_CLI is not set (ctest sets it)');

after(async () => {
  await h.killAll();
});

const waits = (port) => h.metric(port, 'procctl_waits');

test('waits end with their calls: cancelled by the client, or the client killed', async (t) => {
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const port = await d.httpPort();
  const c = d.client();
  t.after(() => d.kill('SIGKILL'));
  const { e, gen } = await h.stoppedEcho(d, c);
  // 30 WaitAcks asking for the longest wait (one connection: fewer than
  // grpc_max_streams, 32), then cancelled.
  const calls = [];
  for (let i = 0; i < 30; i++) {
    calls.push(c.WaitAck({ process: { pid: e.pid }, generation: gen, waitMs: 300000 }, () => {}));
  }
  await h.until(async () => (await waits(port)) === 30, { what: '30 waits' });
  for (const x of calls) x.cancel();
  await h.until(async () => (await waits(port)) === 0, { what: 'the cancelled waits ended' });
  // procctl publish --wait, killed while it waits.
  const kids = [];
  for (let i = 0; i < 20; i++) {
    kids.push(spawn(CLI, ['--timeout', '300s', 'publish', '--pid', String(e.pid), '--data', 'x', '--wait'],
      { env: { ...process.env, PROCCTL_SOCKET: d.sock }, stdio: 'ignore' }));
  }
  await h.until(async () => (await waits(port)) === 20, { what: '20 CLI waits' });
  for (const k of kids) k.kill('SIGKILL');
  await h.until(async () => (await waits(port)) === 0, { what: 'the killed clients\' waits ended' });
  process.kill(e.pid, 'SIGKILL');
  c.close();
  await d.stop();
});

test('waits are capped in all, per caller (whatever its connections) and in time; the last eighth is root\'s', async (t) => {
  const d = await new h.Daemon({
    args: ['--grpc-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0', '--insecure-tcp', 'true',
      '--insecure-tcp-writes', 'true', '--max-waits', '8', '--max-waits-per-peer', '3', '--max-wait-ms', '20000'],
  }).ready();
  const tcp = await d.tcpPort();
  const port = await d.httpPort();
  const c = d.client();
  t.after(() => d.kill('SIGKILL'));
  const { e, gen } = await h.stoppedEcho(d, c);
  const req = (waitMs = 20000) => ({ process: { pid: e.pid }, generation: gen, waitMs });
  // Two connections of their own (no shared subchannel), one caller: 127.0.0.1.
  const conn = () => new h.api.NodeService(`127.0.0.1:${tcp}`, h.grpc.credentials.createInsecure(),
    { 'grpc.use_local_subchannel_pool': 1 });
  const t1 = conn();
  const t2 = conn();
  const pending = [];
  const wait = (client) => pending.push(client.WaitAck(req(), { deadline: Date.now() + 30000 }, () => {}));
  const refused = async (client, what) => {
    const err = await h.call(client, 'WaitAck', req(), { deadlineMs: 30000 }).catch((x) => x);
    assert.equal(h.grpc.status[err.code], 'RESOURCE_EXHAUSTED', what);
    assert.match(err.details, what);
  };
  assert.equal(await h.code(h.call(t1, 'WaitAck', req(20001))), 'INVALID_ARGUMENT');
  for (let i = 0; i < 3; i++) wait(t1);
  await h.until(async () => (await waits(port)) === 3, { what: 'three waits' });
  await refused(t1, /max_waits_per_peer/);
  await refused(t2, /max_waits_per_peer/); // another connection: the same caller
  // Root on the Unix socket has no limit of its own, and the last eighth.
  for (let i = 0; i < 5; i++) wait(c);
  await h.until(async () => (await waits(port)) === 8, { what: 'eight waits' });
  await refused(c, /max_waits:/); // eight in all
  // Cancelled ones make room at once.
  for (const x of pending) x.cancel();
  await h.until(async () => (await h.code(h.call(t2, 'WaitAck', req(1000)))) !== 'RESOURCE_EXHAUSTED',
    { what: 'room again' });
  process.kill(e.pid, 'SIGKILL');
  t1.close();
  t2.close();
  c.close();
  await d.stop();
});

test('warnings a peer can cause are one a second, then "suppressed=N"', async (t) => {
  const d = await new h.Daemon({ consumers: 'test', args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const port = await d.httpPort();
  t.after(() => d.kill('SIGKILL'));
  const rejected = () => d.lines.filter((l) => /level=warn event=attach_rejected /.test(l));
  // Each line stands for itself and the ones dropped before it.
  const said = () => rejected().reduce((n, l) => n + 1 + Number((/ suppressed=(\d+)$/.exec(l) || [0, 0])[1]), 0);
  const refused = () => h.metric(port, 'procctl_attach_rejections_total{reason="wrong_seals"}');
  const hostile = async () => {
    const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    // A WRITE seal is refused whenever the daemon looks; a patched header
    // (badmagic) is valid for the moment after procctl_init, and a daemon
    // quick enough attaches it.
    p.proc.stdin.write('hostile writeseal\n');
    await p.line(/^ok /, { out: true });
    return p;
  };
  // 40 processes with regions the daemon refuses: one line a second at
  // most. A process is refused again when its hello comes after a rescan
  // found it, so the count is waited on until it settles.
  const start = Date.now();
  const ps = await Promise.all(Array.from({ length: 40 }, hostile));
  let last = -1;
  await h.until(async () => {
    const n = await refused();
    const settled = n >= 40 && n === last;
    last = n;
    return settled;
  }, { what: '40 refusals', every: 300 });
  const lines = rejected().length;
  assert.ok(lines >= 1 && lines <= 1 + Math.ceil((Date.now() - start) / 1000), rejected().join('\n'));
  // A second after the last line, the next one says how many were not.
  await h.sleep(1100);
  const before = said();
  ps.push(await hostile());
  await h.until(() => rejected().length > lines, { what: 'the next refusal said' });
  // It stands for itself and every refusal since the line before it.
  const n = said();
  assert.ok(n >= last + 1 && n <= await refused(), `${n} said of ${last} + 1 refused:\n${rejected().join('\n')}`);
  if (before < last) assert.match(rejected()[lines], / suppressed=\d+$/);
  await Promise.all(ps.map((p) => p.kill('SIGKILL')));
  await d.stop();
});

test('made-up consumer names cost a lock and an fd while their processes live, and are capped', async (t) => {
  const d = await new h.Daemon({ consumers: null, args: ['--http-listen', '127.0.0.1:0', '--max-consumers', '20'] })
    .ready();
  const port = await d.httpPort();
  t.after(() => d.kill('SIGKILL'));
  const locks = () => fs.readdirSync(`${d.dir}/locks`).filter((f) => /^made\d+\.lock$/.test(f)).length;
  // The daemon's fds on what the processes cost: lock files, pidfds, /proc/PID/mem.
  const held = () => fs.readdirSync(`/proc/${d.pid}/fd`).filter((f) => {
    try {
      return /\/locks\/made\d+\.lock$|\[pidfd\]|^\/proc\/\d+\/mem$/.test(fs.readlinkSync(`/proc/${d.pid}/fd/${f}`));
    } catch (x) {
      return false; // closed meanwhile
    }
  }).length;
  const limited = () => h.metric(port, 'procctl_attach_rejections_total{reason="consumer_limit"}');
  // 30 processes, each of a consumer of its own: 20 attached, 10 refused.
  const ps = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
    const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    p.proc.stdin.write(`init made${i}\n`);
    await p.line(/^ok /, { out: true });
    return p;
  }));
  await h.until(async () => (await limited()) >= 10 && locks() === 20, { what: '20 consumers, the rest refused' });
  const c = d.client();
  assert.equal((await h.call(c, 'ListProcesses', {})).processes.length, 20);
  assert.ok(held() >= 60, `${held()} fds held for 20 processes`);
  const warned = d.lines.filter((l) => /level=warn event=attach_rejected .*reason=consumer_limit/.test(l));
  assert.ok(warned.length >= 1 && warned.length <= 3, warned.join('\n'));
  // Gone with their processes: no lock file and no fd left of them.
  await Promise.all(ps.map((p) => p.kill('SIGKILL')));
  await h.until(() => locks() === 0 && held() === 0, { what: `their lock files and fds gone (${locks()}, ${held()})` });
  // And a new consumer fits again.
  const e = await h.echo();
  await h.attached(d, e.pid);
  c.close();
  await d.stop();
});
