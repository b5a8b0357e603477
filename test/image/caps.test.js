// SPDX-License-Identifier: Apache-2.0
// caps.test.js - the chart's pod with each of its added capabilities taken
// away in turn (the rendered spec, edited), and with podman's own seccomp
// profile: each time the failure the chart's README names for it, from
// the daemon's log and metrics, and what still works.
'use strict';

const { test, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { h, Pod, render, values, cli, listed, echo, attachedBy, killClients, W, ECHO } = require('./world');

const started = [];
afterEach(async () => {
  for (const p of started.splice(0)) {
    p.stop();
    p.rm();
  }
  await killClients();
});

// The pod of the default values (rescans every second, so that what the
// probe would have found is found anyway), cap taken from its list.
async function podWithout(name, cap, { config = {}, extra = [], seccomp } = {}) {
  const dir = path.join(W, name);
  const rendered = render(values(dir, { rescanMs: 1000, ...config }));
  const edit = (c) => {
    const add = c.securityContext.capabilities.add;
    assert.ok(!cap || add.includes(cap), `the chart adds ${cap}`);
    c.securityContext.capabilities.add = add.filter((x) => x !== cap);
  };
  const pod = new Pod(name, rendered, { dir, edit, extra, ...(seccomp !== undefined ? { seccomp } : {}) }).start();
  started.push(pod);
  await pod.ready();
  return pod;
}

// A copy of echo-client under dir, owned by uid with mode.
function program(dir, uid, mode) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (let d = dir; d !== path.dirname(W); d = path.dirname(d)) fs.chmodSync(d, 0o755);
  const p = path.join(dir, 'echo-client');
  fs.copyFileSync(h.ECHO_CLIENT, p);
  fs.chownSync(p, uid, uid);
  fs.chmodSync(p, mode);
  return p;
}

test('without SYS_PTRACE: the scan is refused the processes\' fd tables, says so, attaches nothing', async () => {
  const a = await echo();
  const pod = await podWithout('noptrace', 'SYS_PTRACE');
  await pod.line(/event=scan_denied count=[1-9]\d* reason=".*CAP_SYS_PTRACE/);
  assert.ok(await pod.metric('procctl_scan_denied') >= 1);
  assert.deepEqual(listed(pod.sock, ECHO), []);
  assert.ok(!listed(pod.sock, ECHO).includes(a.pid));
});

test('without PERFMON: hello_unavailable, and the rescans still find a process', async () => {
  const pod = await podWithout('noperfmon', 'PERFMON');
  await pod.line(/event=hello_unavailable reason="no permission for system-wide perf events/);
  assert.equal(await pod.metric('procctl_hello_available'), 0);
  const a = await echo();
  await attachedBy(pod.sock, ECHO, a.pid);
});

test('without CHECKPOINT_RESTORE: a program deleted while it runs cannot be read for its probe', async () => {
  const exe = program(path.join(W, 'deleted'), 0, 0o755);
  const a = await echo([exe]);
  fs.unlinkSync(exe); // an upgrade replaced it: only its mapping is left
  const pod = await podWithout('nocr', 'CHECKPOINT_RESTORE');
  await attachedBy(pod.sock, ECHO, a.pid); // the scan finds it all the same
  assert.ok(await pod.metric('procctl_hello_open_failures_total') >= 1);
  pod.stop();
  // With it, the mapping opens (/proc/PID/map_files): with rescans a
  // minute apart, a second process of the deleted program (exec'd through
  // /proc/PID/exe) is found this soon only through its probe, which needs
  // the program read.
  const full = await podWithout('withcr', null, { config: { rescanMs: 60000 } });
  await attachedBy(full.sock, ECHO, a.pid);
  const b = await echo([`/proc/${a.pid}/exe`]);
  await attachedBy(full.sock, ECHO, b.pid, 10000);
});

test('without DAC_READ_SEARCH: another user\'s processes cannot be looked into (their /proc/PID/fd is 0500)', async () => {
  const exe = program(path.join(W, 'private'), 65534, 0o700); // only its owner may read it, too
  const a = await echo([exe], { uid: 65534, gid: 65534 });
  const pod = await podWithout('nodac', 'DAC_READ_SEARCH');
  await pod.line(/event=scan_denied count=[1-9]\d* reason=/);
  assert.ok(await pod.metric('procctl_scan_denied') >= 1);
  assert.ok(!listed(pod.sock, ECHO).includes(a.pid));
  assert.ok(await pod.metric('procctl_hello_open_failures_total') >= 1); // nor its program read
  pod.stop();
  // With it, the program is read: with rescans a minute apart (the
  // chart's default), a copy started after the first scan is found this
  // soon only through its probe (its hello, or its mapping of a program
  // with the probe), which needs the program read. (The count of files
  // watched would not show it: other tests' programs come and go.)
  const full = await podWithout('withdac', null, { config: { rescanMs: 60000 } });
  await attachedBy(full.sock, ECHO, a.pid);
  const b = await echo([exe], { uid: 65534, gid: 65534 });
  await attachedBy(full.sock, ECHO, b.pid, 10000);
});

test('without IPC_LOCK: the perf rings cannot be locked past the perf budget and RLIMIT_MEMLOCK', async () => {
  // root's budget for locked perf memory used up (as other root perf users
  // on a node do) and a 64 KiB RLIMIT_MEMLOCK: only IPC_LOCK goes past.
  const knob = '/proc/sys/kernel/perf_event_mlock_kb';
  const was = fs.readFileSync(knob, 'utf8').trim();
  fs.writeFileSync(knob, '0');
  try {
    const extra = ['--ulimit', 'memlock=65536:65536'];
    const pod = await podWithout('noipclock', 'IPC_LOCK', { extra });
    await pod.line(/event=hello_unavailable reason="the perf rings could not be locked in memory .*CAP_IPC_LOCK/);
    assert.equal(await pod.metric('procctl_hello_available'), 0);
    pod.stop();
    const full = await podWithout('withipclock', null, { extra });
    assert.equal(await full.metric('procctl_hello_available'), 1);
  } finally {
    fs.writeFileSync(knob, was);
  }
});

test('podman\'s own RuntimeDefault (containers-common before 2025): no probe, no doorbells, still served', async () => {
  const a = await echo();
  const pod = await podWithout('podmanseccomp', null, { seccomp: null });
  await pod.line(/event=hello_unavailable reason="no permission for system-wide perf events/);
  await pod.line(/event=no_doorbells/);
  await attachedBy(pod.sock, ECHO, a.pid);
  const r = cli(pod.sock, ['publish', '--consumer', ECHO, '--data', 'no-doorbells', '--wait']);
  assert.equal(r.code, 0, r.out + r.err); // read back at the poll of a process not heard
  await a.line(/event=applied .*payload=no-doorbells$/, { out: true });
});
