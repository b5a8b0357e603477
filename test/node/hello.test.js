// SPDX-License-Identifier: Apache-2.0
// hello.test.js - fast discovery in the daemon: with rescans an hour
// apart, a process started after the daemon is attached all the same
// (the procctl:hello probe), and so is one that execs into a client; a
// client that execs away is detached at once (the probe's exec records);
// workers forked at once by a new program are all attached;
// `--hello false` leaves new processes to the rescan; a daemon without
// perf permission (running as nobody) says so once in its log and in
// /metrics, and serves; the probe runs on a thread of its own, so that
// with that thread held (what a storm of uprobe placements does: 13 s in
// issue 61's attack) the loop serves on, and once it runs again it finds
// the process that came meanwhile.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const h = require('./harness');

const HOUR = ['--rescan-ms', '3600000'];
const THREADSTOP = process.env.THREADSTOP;
if (!THREADSTOP) throw new Error('THREADSTOP is not set (ctest sets it)');

// Whatever a failed test left running ends with the file.
const started = [];
const daemon = (opts) => {
  const d = new h.Daemon(opts);
  started.push(d);
  return d.ready();
};
after(async () => {
  await h.killAll();
  await Promise.all(started.map((c) => c.kill('SIGKILL')));
});

function metrics(port) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false, timeout: 10000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

const value = (text, name) => {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : undefined;
};

test('a process started after the daemon is attached without a rescan, and its hello is counted', async () => {
  const d = await daemon({ args: [...HOUR, '--http-listen', '127.0.0.1:0'] });
  const port = await d.httpPort();
  const before = await metrics(port);
  assert.equal(value(before, 'procctl_hello_available'), 1, before);
  const e = await h.echo();
  await h.attached(d, e.pid); // an hour before any rescan
  // The first echo client's exec made its file probed; it may have said
  // hello before the uprobe was in place (then the scan that follows a
  // new mapping found it). A second one says hello to the uprobe.
  const mid = await metrics(port);
  assert.ok(value(mid, 'procctl_targeted_scans_total') > value(before, 'procctl_targeted_scans_total'), mid);
  assert.ok(value(mid, 'procctl_hello_files') >= 1, mid);
  const e2 = await h.echo();
  await h.attached(d, e2.pid);
  const last = await metrics(port);
  assert.ok(value(last, 'procctl_hello_hits_total') > value(mid, 'procctl_hello_hits_total'), last);
  // Nothing was refused: every bound is said, at 0 (test_hello reaches them).
  for (const limit of ['all', 'others', 'owner', 'closing', 'churn'])
    assert.equal(value(last, `procctl_hello_files_refused_total\\{limit="${limit}"\\}`), 0, last);
  assert.equal(value(last, 'procctl_hello_owners_cooling'), 0, last);
  // A config reaches it as to any process.
  const c = d.client();
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('fast'), waitMs: 5000 });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  c.close();
  assert.ok(!d.lines.some((l) => /hello_unavailable/.test(l)), d.lines.join('\n'));
  await e.kill('SIGKILL');
  await e2.kill('SIGKILL');
  await d.stop();
});

test('the probe\'s thread held: the loop serves on (a publish applies), and the process that came meanwhile is found once it runs', async () => {
  const d = await daemon({ args: [...HOUR, '--http-listen', '127.0.0.1:0'] });
  const port = await d.httpPort();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const c = d.client();
  // Only the probe's thread is stopped (ptrace seizes one thread).
  const stop = new h.Child(THREADSTOP, [String(d.pid), 'procctl-hello'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let e2;
  try {
    await stop.line(/^stopped \d+$/, { out: true });
    const before = await metrics(port);
    e2 = await h.echo(); // its mapping and its hello wait in the probe's rings
    const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('held'), waitMs: 10000 },
      { deadlineMs: 20000 });
    assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
    const held = await metrics(port);
    assert.ok(value(held, 'procctl_loop_turn_seconds_count') > value(before, 'procctl_loop_turn_seconds_count'), held);
    // Nothing but the probe finds e2 before the rescan an hour away.
    assert.equal(value(held, 'procctl_hello_hits_total'), value(before, 'procctl_hello_hits_total'), held);
    assert.equal(await h.code(h.call(c, 'GetProcess', { process: { pid: e2.pid } })), 'NOT_FOUND');
  } finally {
    stop.proc.stdin.end('go\n');
  }
  await stop.line(/^released$/, { out: true });
  await h.attached(d, e2.pid);
  assert.ok(value(await metrics(port), 'procctl_hello_hits_total') > 0);
  c.close();
  await e.kill('SIGKILL');
  await e2.kill('SIGKILL');
  await d.stop();
});

test('a shell that execs into a client is attached too', async () => {
  const d = await daemon({ args: HOUR });
  const sh = new h.Child('/bin/sh', ['-c', `sleep 0.2; exec "$0" --consumer ${h.CONSUMER}`, h.ECHO_CLIENT]);
  await h.attached(d, sh.pid);
  await sh.kill('SIGKILL');
  await d.stop();
});

test('a program that forks its workers at once: every worker attached without a rescan', async () => {
  const d = await daemon({ args: HOUR });
  // farm (test/farm.c) forks 50 processes that each make a region at
  // once, as the program's probe is being placed: those that said hello
  // before it are checked after their fork.
  const farm = new h.Child(process.env.FARM, ['--procs', '50', '--regions', '1', '--consumer', h.CONSUMER],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  await farm.line(/^ready /, { out: true });
  const c = d.client();
  await h.until(async () => (await h.call(c, 'ListProcesses', { filter: { consumer: h.CONSUMER } })).processes.length === 50,
    { what: '50 workers attached', timeout: 10000 });
  c.close();
  farm.proc.stdin.end();
  await farm.exited;
  await d.stop();
});

test('a client that execs into another program is detached at once (its exec record), not at a rescan', async () => {
  const d = await daemon({ args: HOUR });
  // procsim (test/procsim.c): a process side driven line by line; "exec"
  // makes it exec into sleep, the same pid without its region.
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.write(`init ${h.CONSUMER}\n`);
  await p.line(/^ok /, { out: true });
  await h.attached(d, p.pid);
  p.proc.stdin.write('exec\n');
  await d.line(new RegExp(`event=detached pid=${p.pid} consumer=${h.CONSUMER} .*reason=execed`), { timeout: 10000 });
  await p.kill('SIGKILL');
  await d.stop();
});

test('--hello false: new processes wait for the rescan; the metric says it is off', async () => {
  const d = await daemon({ args: ['--rescan-ms', '1000', '--hello', 'false', '--http-listen', '127.0.0.1:0'] });
  const port = await d.httpPort();
  assert.equal(value(await metrics(port), 'procctl_hello_available'), 0);
  const e = await h.echo();
  await h.attached(d, e.pid); // at the next rescan
  assert.equal(value(await metrics(port), 'procctl_hello_hits_total'), 0);
  await e.kill('SIGKILL');
  await d.stop();
});

test('without perf permission (as nobody): said once in the log and /metrics, and it serves', async () => {
  const dir = h.scratch('procctl-node-');
  fs.chownSync(dir, 65534, 65534); // its own: a directory others could write is refused
  const d = await daemon({ dir, spawn: { uid: 65534, gid: 65534 },
    args: ['--http-listen', '127.0.0.1:0'] });
  const port = await d.httpPort();
  const said = d.lines.filter((l) => /event=hello_unavailable/.test(l));
  assert.equal(said.length, 1, d.lines.join('\n'));
  assert.match(said[0], /reason="no permission/);
  assert.equal(value(await metrics(port), 'procctl_hello_available'), 0);
  await d.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});
