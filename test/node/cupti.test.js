// SPDX-License-Identifier: Apache-2.0
// cupti.test.js - libprocctl-cupti, the injection library, in unmodified
// CUDA programs (gpu-busy: no procctl, no CUPTI in it) on a machine
// without a GPU: the CUDA driver and CUPTI are the stand-ins of
// test/cudastub (first on LD_LIBRARY_PATH), whose cuInit loads
// CUDA_INJECTION64_PATH as the driver does, and whose CUPTI logs every PC
// sampling call and locks the GPU (flock) from Enable to Disable, failing
// an Enable while another process holds it. procctl-node's [arbiter]
// rotates the GPU among the programs. Checked: each program samples in
// turn with the calls in CUPTI's order and no failure, never two at once;
// the status block carries the samples and top functions, shown by
// `procctl state` (escaped); a program never granted makes no PC sampling
// call; a program that exits while sampling stops, drains and disables
// first; a failed Start is counted and released, and the rotation goes on;
// a lone holder's ranges; its release when its lease lapses; a program on
// two GPUs; without CUPTI the program runs as it would, told why once.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');
const cli = require('./clirun');

const INJECT = process.env.CUPTI_INJECT;
const BUSY = process.env.GPU_BUSY;
const STANDIN = process.env.CUDA_STANDIN;
if (!INJECT || !BUSY || !STANDIN) throw new Error('CUPTI_INJECT, GPU_BUSY and CUDA_STANDIN are not set (ctest sets them)');

const CONSUMER = `cup${process.pid}`.slice(0, 31);
const IDLE = `cupidle${process.pid}`.slice(0, 31); // a consumer with no arbiter
const UUID = '8e2f7a4c-51d3-4b9e-a0c6-3d1f9b2e7c45'; // the stand-in's GPU 0
const FUNC2 = 'tail\x1b]0;owned\x07'; // a function name with a terminal escape in it
const MAGIC = 0x32534350;

const scratch = h.scratch('procctl-cupti-');
const log = path.join(scratch, 'cupti.log');
let d, c;
const progs = [];

function busy(consumer, more = {}, args = []) {
  const env = {
    ...process.env, LD_LIBRARY_PATH: STANDIN, CUDA_INJECTION64_PATH: INJECT, PROCCTL_CUPTI_CONSUMER: consumer,
    STANDIN_DIR: scratch, STANDIN_LOG: log, STANDIN_FUNC2: FUNC2, ...more,
  };
  const p = new h.Child(BUSY, args, { env });
  progs.push(p);
  return p;
}

async function started(p) {
  await p.line(new RegExp(`^event=started pid=${p.pid} device=stand-in GPU 0$`), { out: true });
  await h.attached(d, p.pid);
  return p;
}

// The log's lines: { pid, call, result, ns }.
const calls = () => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => {
  const [pid, call, result, ctx, ns] = l.split(' ');
  return { pid: Number(pid), call, result, ctx, ns: BigInt(ns) };
});

// A status block (pcsampling_schema.h), decoded.
function status(buf) {
  assert.equal(buf.length, 592);
  const top = [];
  const n = buf.readUInt32LE(76);
  for (let i = 0; i < n; i++) {
    const at = 80 + 64 * i;
    const raw = buf.subarray(at + 8, at + 64);
    top.push({ samples: Number(buf.readBigUInt64LE(at)), name: raw.subarray(0, raw.indexOf(0) < 0 ? 56 : raw.indexOf(0)).toString('latin1') });
  }
  return {
    magic: buf.readUInt32LE(0), gpus: buf.readUInt32LE(4), turns: Number(buf.readBigUInt64LE(8)),
    samples: Number(buf.readBigUInt64LE(24)), errors: Number(buf.readBigUInt64LE(48)),
    lastError: buf.readInt32LE(56), lastCall: buf.readUInt32LE(60), top,
  };
}

const stateOf = async (p) => status((await h.call(c, 'ReadState', { process: { pid: p.pid } })).data);

before(async () => {
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu-pc-sampling]\nkind = 2\nconsumer = ${CONSUMER}\nhold_ms = 200\nprocess_bound = true\n`);
  d = await new h.Daemon({ consumers: `${CONSUMER},${IDLE}`, args: ['--config', conf, '--lease-ms', '1000'] }).ready();
  c = d.client();
});

after(async () => {
  if (c) c.close();
  await Promise.all(progs.map((p) => p.kill('SIGKILL')));
  if (d) await d.stop();
});

test('three unmodified CUDA programs sample the GPU in turn: CUPTI\'s order, no failure, never two at once', async () => {
  const three = [];
  for (let i = 0; i < 3; i++) three.push(await started(busy(CONSUMER)));
  await h.until(async () => {
    for (const p of three) if ((await stateOf(p)).turns < 2) return false;
    return true;
  }, { timeout: 30000, what: 'two holds each' });
  const seq = calls();
  assert.deepEqual(seq.filter((x) => x.result !== 'CUPTI_SUCCESS'), []);
  // Each program's calls: (enable configure start stop getdata+ disable)*.
  for (const p of three) {
    const mine = seq.filter((x) => x.pid === p.pid).map((x) => x.call).join(' ');
    assert.match(`${mine} `, /^(enable configure start (stop (getdata )+start )*stop (getdata )+disable )*(enable configure start (stop (getdata )+start )*)?$/, mine);
  }
  // One holder at a time: an Enable only when every earlier Enable has its Disable.
  let holder = null;
  for (const x of seq) {
    if (x.call === 'enable') {
      assert.equal(holder, null, `pid ${x.pid} enabled while ${holder} sampled`);
      holder = x.pid;
    } else if (x.call === 'disable') {
      assert.equal(x.pid, holder);
      holder = null;
    }
  }
  for (const p of three) {
    const s = await stateOf(p);
    assert.equal(s.magic, MAGIC);
    assert.equal(s.gpus, 1);
    assert.equal(s.errors, 0);
    assert.ok(s.samples > 0, JSON.stringify(s));
    assert.deepEqual(s.top.map((f) => f.name), ['busy', FUNC2]);
    assert.equal(s.top[0].samples, 3 * s.top[1].samples);
    assert.equal(s.top[0].samples + s.top[1].samples, s.samples);
  }
  const r = (await h.call(c, 'GetArbiter', { kind: 'gpu-pc-sampling' })).arbiter;
  assert.deepEqual(r.resources.map((x) => x.id), [UUID]);
  assert.ok(Number(r.resources[0].handoffs) >= 5, JSON.stringify(r.resources[0]));
});

test('`procctl state` shows the top functions, a name\'s control bytes escaped', async () => {
  const p = progs[0];
  const r = cli.exits(await cli.run(['state', String(p.pid)], { sock: d.sock }), 0);
  assert.match(r.stdout, /^sampling: {2}turns=\d+ held=[\d.]+s samples=\d+ dropped=0 other=0 gpus=1 period=default$/m, r.stdout);
  assert.match(r.stdout, /^cupti: {5}errors=0$/m);
  assert.match(r.stdout, /^function: {2}\d+ busy\nfunction: {2}\d+ tail\\x1b\]0;owned\\x07$/m, r.stdout);
  assert.doesNotMatch(r.stdout, /\x1b/);
});

test('a program never granted makes no PC sampling call and runs as without the library', async () => {
  const p = await started(busy(IDLE));
  const before = (await h.call(c, 'ReadState', { process: { pid: p.pid } }));
  await h.until(async () => (await h.call(c, 'ReadState', { process: { pid: p.pid } })).resources.length === 1,
    { what: 'its GPU asked for' });
  const st = await h.call(c, 'ReadState', { process: { pid: p.pid } });
  assert.equal(st.resources[0].id, UUID);
  assert.ok(st.resources[0].wants);
  assert.equal(status(before.data).turns, 0);
  const e = await p.kill('SIGTERM');
  assert.equal(e.code, 0);
  assert.match(p.out.find((l) => l.startsWith('event=done')), /kernels=[1-9]\d*$/);
  assert.deepEqual(calls().filter((x) => x.pid === p.pid), []);
  assert.deepEqual(p.lines, []); // nothing said on stderr
});

test('a program that exits while sampling stops, drains and disables first', async () => {
  const p = progs[1];
  await h.until(async () => (await h.call(c, 'ReadState', { process: { pid: p.pid } })).resources
    .some((x) => x.state === 'RESOURCE_STATE_HOLDING'), { timeout: 20000, every: 2, what: 'it to hold' });
  const e = await p.kill('SIGTERM');
  assert.equal(e.code, 0);
  const mine = calls().filter((x) => x.pid === p.pid).map((x) => x.call);
  assert.deepEqual(mine.slice(-2), ['getdata', 'disable'], mine.join(' '));
  assert.ok(mine.lastIndexOf('stop') > mine.lastIndexOf('start'));
});

test('a Start that fails is counted, the GPU released, and the rotation goes on', async () => {
  const p = await started(busy(CONSUMER, { STANDIN_FAIL: 'start' }));
  await h.until(async () => (await stateOf(p)).turns >= 1 && (await stateOf(p)).errors >= 1,
    { timeout: 30000, what: 'a failed Start and a hold after it' });
  const s = await stateOf(p);
  assert.equal(s.lastCall, 3); // start
  assert.notEqual(s.lastError, 0);
  // After its failed Start it disabled again, and others enabled after.
  const seq = calls();
  const fail = seq.findIndex((x) => x.pid === p.pid && x.result !== 'CUPTI_SUCCESS');
  const next = seq.slice(fail + 1).find((x) => x.pid === p.pid);
  assert.equal(`${next.call} ${next.result}`, 'disable CUPTI_SUCCESS');
  assert.deepEqual(seq.filter((x) => x.pid !== p.pid && x.result !== 'CUPTI_SUCCESS'), []);
});

test('a lone holder samples in ranges of a second and one at a module\'s unload; when its lease lapses (the agent stopped) it lets go', async () => {
  await Promise.all(progs.map((p) => p.kill('SIGTERM')));
  const p = await started(busy(CONSUMER));
  await h.until(async () => (await h.call(c, 'ReadState', { process: { pid: p.pid } })).resources
    .some((x) => x.state === 'RESOURCE_STATE_HOLDING'), { timeout: 20000, what: 'it to hold' });
  const mine = () => calls().filter((x) => x.pid === p.pid).map((x) => x.call).join(' ');
  // Nobody else wants it: a hold of over a second, its range ended and another started.
  await h.until(() => / start stop (getdata )+start/.test(mine()), { timeout: 5000, what: `a range split (${mine()})` });
  assert.doesNotMatch(mine(), /disable/);
  process.kill(d.pid, 'SIGSTOP'); // no heartbeat: its lease (1 s) lapses
  let lapsed; // its calls at the release: the daemon, continued, grants again at once
  try {
    await h.until(() => (lapsed = mine()).endsWith('disable'), { timeout: 5000,
      what: `its release at the lease's end (${mine()})` });
  } finally {
    process.kill(d.pid, 'SIGCONT');
  }
  assert.match(lapsed, /stop (getdata )+disable$/);
  // The daemon back, it holds again, alone; at its exit its module unloads
  // while it samples: that range ends and another begins, then the release.
  await h.until(async () => (await h.call(c, 'ReadState', { process: { pid: p.pid } })).resources
    .some((x) => x.state === 'RESOURCE_STATE_HOLDING'), { timeout: 20000, what: 'it to hold again' });
  assert.equal((await p.kill('SIGTERM')).code, 0);
  assert.match(mine(), /start stop (getdata )+start stop (getdata )+disable$/);
});

test('a program on two GPUs asks for each: both granted, each context sampled on its own', async () => {
  const p = busy(CONSUMER, { STANDIN_GPUS: '2' }, ['--device', '0', '--device', '1']);
  await p.line(new RegExp(`^event=started pid=${p.pid} device=stand-in GPU 0,stand-in GPU 1$`), { out: true });
  await h.attached(d, p.pid);
  const UUID1 = UUID.replace(/45$/, '46'); // the stand-in's GPU 1
  await h.until(async () => {
    const st = await h.call(c, 'ReadState', { process: { pid: p.pid } });
    return st.resources.filter((x) => x.state === 'RESOURCE_STATE_HOLDING').length === 2;
  }, { timeout: 20000, what: 'both GPUs held' });
  const st = await h.call(c, 'ReadState', { process: { pid: p.pid } });
  assert.deepEqual(st.resources.map((x) => x.id).sort(), [UUID, UUID1]);
  const r = (await h.call(c, 'GetArbiter', { kind: 'gpu-pc-sampling' })).arbiter;
  for (const id of [UUID, UUID1]) assert.equal(r.resources.find((x) => x.id === id).holder.pid, p.pid);
  // Its exit: each context's range ended at its module's unload, then released;
  // CUPTI's one string per function named by both contexts' records.
  assert.equal((await p.kill('SIGTERM')).code, 0);
  const mine = calls().filter((x) => x.pid === p.pid);
  const ctxs = [...new Set(mine.map((x) => x.ctx))];
  assert.equal(ctxs.length, 2);
  for (const x of ctxs) {
    assert.match(`${mine.filter((y) => y.ctx === x).map((y) => y.call).join(' ')} `,
      /^enable configure start (stop (getdata )+start )*stop (getdata )+disable $/);
  }
  assert.deepEqual(mine.filter((x) => x.result !== 'CUPTI_SUCCESS'), []);
  assert.deepEqual(p.lines, []);
});

test('without CUPTI, with a bad kind, or with another CUPTI tool there first, a program runs unchanged: one line on stderr, no region', async () => {
  const fifo = path.join(scratch, 'cupti.fifo');
  execFileSync('mkfifo', [fifo]);
  for (const [more, said] of [
    [{ PROCCTL_CUPTI_LIBRARY: path.join(scratch, 'no-libcupti.so') }, /^procctl-cupti: loading CUPTI \(PROCCTL_CUPTI_LIBRARY names another\): .*no-libcupti\.so.*; PC sampling is off in this process$/],
    // A FIFO held cuInit before, waiting for a writer.
    [{ PROCCTL_CUPTI_LIBRARY: fifo }, /^procctl-cupti: loading CUPTI \(PROCCTL_CUPTI_LIBRARY names another\): .*cupti\.fifo: not a regular file; PC sampling is off in this process$/],
    [{ PROCCTL_CUPTI_KIND: '0' }, /^procctl-cupti: PROCCTL_CUPTI_KIND: not a number from 1 to 4294967295; PC sampling is off in this process$/],
    [{ STANDIN_SUBSCRIBER: 'nsys' }, /^procctl-cupti: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED \(held by CUPTI for nsys\); PC sampling is off in this process$/],
  ]) {
    const p = busy(CONSUMER, more);
    progs.pop(); // its stderr is checked here
    await p.line(/^event=started /, { out: true });
    const e = await p.kill('SIGTERM');
    assert.equal(e.code, 0);
    assert.match(p.out.find((l) => l.startsWith('event=done')), /kernels=[1-9]\d*$/);
    assert.equal(p.lines.length, 1, p.lines.join('\n'));
    assert.match(p.lines[0], said);
    const r = await h.call(c, 'ListProcesses', {});
    assert.ok(!r.processes.some((x) => x.ref.pid === p.pid));
  }
});

test('no program said anything on stderr (no sanitizer report, no complaint of the library)', () => {
  for (const p of progs) assert.deepEqual(p.lines, [], `pid ${p.pid}`);
});
