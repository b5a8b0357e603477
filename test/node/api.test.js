// SPDX-License-Identifier: Apache-2.0
// api.test.js - procctl.v1.NodeService as a controller uses it: a real
// procctl-node, real echo clients, @grpc/grpc-js on the .proto files.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const h = require('./harness');

let d, c;

before(async () => {
  d = await new h.Daemon().ready();
  c = d.client();
});

after(async () => {
  c.close();
  await h.killAll();
  await d.stop();
});

test('the Unix socket is mode 0660', () => {
  assert.equal(fs.statSync(d.sock).mode & 0o777, 0o660);
});

test('ListProcesses and GetProcess describe an attached echo client', async () => {
  const e = await h.echo();
  const p = await h.attached(d, e.pid);
  assert.equal(p.consumer, h.CONSUMER);
  assert.equal(p.schemaVersion, 1);
  assert.deepEqual(p.nspid, [e.pid]);
  assert.match(p.ref.instanceId, /^[0-9a-f]{16}$/); // as the daemon logs it
  assert.ok(d.lines.some((l) => l.includes(`pid=${e.pid} `) && l.includes(`instance=${p.ref.instanceId}`)), d.lines.join('\n'));
  assert.equal(p.leaseState, 'LEASE_STATE_LIVE');
  assert.equal(p.podUid, '');
  assert.equal(p.qosClass, 'QOS_CLASS_UNSPECIFIED');

  const g = await h.call(c, 'GetProcess', { process: { pid: e.pid } });
  assert.deepEqual(g.process, p);
  const byInstance = await h.call(c, 'GetProcess', { process: p.ref });
  assert.deepEqual(byInstance.process, p);

  const echoes = await h.call(c, 'ListProcesses', { filter: { consumer: h.CONSUMER } });
  assert.ok(echoes.processes.some((x) => x.ref.pid === e.pid));
  const none = await h.call(c, 'ListProcesses', { filter: { consumer: 'nosuch' } });
  assert.equal(none.processes.length, 0);
  const inPod = await h.call(c, 'ListProcesses', { filter: { podUid: '0b1c2d3e-0000-4000-8000-000000000001' } });
  assert.equal(inPod.processes.length, 0);
  const pids = (await h.call(c, 'ListProcesses', {})).processes.map((x) => x.ref.pid);
  assert.deepEqual(pids, [...pids].sort((a, b) => a - b));
});

test('GetProcess: unknown pid NOT_FOUND, no pid or a bad instance INVALID_ARGUMENT, an instance not the pid\'s (all zeros too) NOT_FOUND', async () => {
  assert.equal(await h.code(h.call(c, 'GetProcess', { process: { pid: 0x3fffffff } })), 'NOT_FOUND');
  assert.equal(await h.code(h.call(c, 'GetProcess', {})), 'INVALID_ARGUMENT');
  assert.equal(await h.code(h.call(c, 'GetProcess', { process: { pid: -5 } })), 'INVALID_ARGUMENT');
  const e = await h.echo();
  await h.attached(d, e.pid);
  // An id the pid does not have, all zeros too (only an empty id means its only region).
  for (const other of ['ffffffffffffffff', '0000000000000000']) {
    for (const m of ['GetProcess', 'ReadState'])
      assert.equal(await h.code(h.call(c, m, { process: { pid: e.pid, instanceId: other } })), 'NOT_FOUND', `${m} ${other}`);
    assert.equal(await h.code(h.call(c, 'WaitAck', { process: { pid: e.pid, instanceId: other }, generation: 1 })),
      'NOT_FOUND', `WaitAck ${other}`);
  }
  for (const bad of ['12345', '0x1234567890abcde', 'ffffffffffffffff0', 'fffffffffffffffg'])
    assert.equal(await h.code(h.call(c, 'GetProcess', { process: { pid: e.pid, instanceId: bad } })), 'INVALID_ARGUMENT', bad);
  const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
  const upper = (await h.call(c, 'GetProcess', { process: { pid: e.pid, instanceId: p.ref.instanceId.toUpperCase() } })).process;
  assert.equal(upper.ref.instanceId, p.ref.instanceId);
});

test('malformed selectors are INVALID_ARGUMENT', async () => {
  for (const filter of [{ consumer: 'Echo' }, { consumer: 'x'.repeat(32) }, { podUid: 'POD' },
    { podUid: '0b1c2d3e' }, { podUid: '0b1c2d3e-0000-4000-8000-00000000000' },
    { containerId: 'zz' }, { containerId: 'a'.repeat(65) }, { pid: -1 }]) {
    assert.equal(await h.code(h.call(c, 'ListProcesses', { filter })), 'INVALID_ARGUMENT', JSON.stringify(filter));
  }
});

test('Publish to a pid waits for the ack: APPLIED, and the process has it', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('hello node'), waitMs: 5000 });
  assert.equal(r.results.length, 1);
  const res = r.results[0];
  assert.equal(res.status, 'PUBLISH_STATUS_APPLIED');
  assert.equal(res.process.pid, e.pid);
  assert.ok(Number(res.generation) > 0);
  assert.equal(res.processStatus, 0);
  await e.line(new RegExp(`event=applied gen=${res.generation} .*payload=hello node$`), { out: true });

  const st = await h.call(c, 'ReadState', { process: { pid: e.pid } });
  assert.equal(st.ackedGeneration, res.generation);
  assert.equal(st.ackResult, 'ACK_RESULT_APPLIED');
  assert.match(st.data.toString(), new RegExp(`^applied=${res.generation} .*mode=config$`));

  const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
  assert.equal(p.generation, res.generation);
  assert.equal(p.ackedGeneration, res.generation);
  assert.equal(p.ackResult, 'ACK_RESULT_APPLIED');
});

test('Publish to a process in its own epoll loop: its event socket wakes it (SPEC 6.6)', async () => {
  const e = await h.echo(h.CONSUMER, ['--epoll']);
  await h.attached(d, e.pid);
  // Its loop times out every second too: a publish landing just then is
  // applied on the timeout; of three, one at least is woken by the socket.
  let woken = '';
  for (let i = 0; i < 3 && woken !== 'event'; i++) {
    const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from(`epoll ${i}`), waitMs: 5000 });
    assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
    const line = await e.line(new RegExp(`event=applied gen=${r.results[0].generation} `), { out: true });
    woken = (line.match(/ woken=(\w+)/) || [])[1];
  }
  assert.equal(woken, 'event');
  await e.kill('SIGKILL');
});

test('Publish a config the process refuses: REJECTED with its status', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from([0x01, 0x02]), waitMs: 5000 });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_REJECTED');
  assert.equal(r.results[0].processStatus, -22); // -EINVAL
  // The errno by name, and the status the process reported with it.
  assert.match(r.results[0].error, /^EINVAL \(Invalid argument\): .*error=not-text$/);
  await e.line(/event=rejected .*error=EINVAL/, { out: true });
  const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
  assert.equal(p.ackResult, 'ACK_RESULT_REJECTED');
  assert.equal(p.ackStatus, -22);
});

test('Publish without a wait is WRITTEN; WaitAck then sees it APPLIED', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('later') });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_WRITTEN');
  const w = await h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: r.results[0].generation, waitMs: 5000 });
  assert.equal(w.result.status, 'PUBLISH_STATUS_APPLIED');
  assert.equal(w.result.generation, r.results[0].generation);
  // Known acked: without a wait too, APPLIED (not PENDING), every time.
  for (let i = 0; i < 25; i++) {
    const now = await h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: r.results[0].generation, waitMs: 0 });
    assert.equal(now.result.status, 'PUBLISH_STATUS_APPLIED', `round ${i}`);
  }
  // Generations never published to it: 0, above the last, and below the
  // first (the region's own writes before it: its claim).
  const first = Number(r.results[0].generation);
  assert.ok(first > 1, `the first Publish's generation ${first}`);
  for (const bad of ['0', String(first + 100), ...Array.from({ length: first - 1 }, (_, i) => String(i + 1))])
    assert.equal(await h.code(h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: bad })), 'INVALID_ARGUMENT', bad);
});

test('an older generation acked after a newer one was written is SUPERSEDED', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  process.kill(e.pid, 'SIGSTOP'); // it cannot ack until both are written
  try {
    const a = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('one') });
    await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('two') });
    process.kill(e.pid, 'SIGCONT');
    const w = await h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: a.results[0].generation, waitMs: 5000 });
    assert.equal(w.result.status, 'PUBLISH_STATUS_SUPERSEDED');
  } finally {
    process.kill(e.pid, 'SIGCONT');
  }
});

test('a wait ends at wait_ms with PENDING while the process cannot ack', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  process.kill(e.pid, 'SIGSTOP');
  try {
    const t0 = Date.now();
    const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('stuck'), waitMs: 300 });
    assert.equal(r.results[0].status, 'PUBLISH_STATUS_PENDING');
    assert.ok(Date.now() - t0 >= 290);
    // The call's own deadline ends the wait too.
    assert.equal(await h.code(h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: r.results[0].generation,
      waitMs: 60000 }, { deadlineMs: 300 })), 'DEADLINE_EXCEEDED');
  } finally {
    process.kill(e.pid, 'SIGCONT');
  }
  // The daemon still answers at once.
  await h.call(c, 'ListProcesses', {}, { deadlineMs: 2000 });
});

test('an ack above every generation published is no ack: PENDING, not SUPERSEDED (the library decides)', async () => {
  // procsim: a process side driven line by line (test/procsim.c); forgeack
  // writes an acked_gen that procctl_ack would refuse, as a hostile
  // process can.
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.write(`init ${h.CONSUMER}\n`);
  await p.line(/^ok /, { out: true });
  await h.attached(d, p.pid);
  const r = await h.call(c, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('x') });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_WRITTEN');
  const gen = BigInt(r.results[0].generation);
  p.proc.stdin.write(`forgeack ${gen + 100n}\n`);
  await p.line(/^ok$/, { out: true });
  const w = await h.call(c, 'WaitAck', { process: { pid: p.pid }, generation: String(gen), waitMs: 300 });
  assert.equal(w.result.status, 'PUBLISH_STATUS_PENDING');
  const g = await h.call(c, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('y'), waitMs: 300 });
  assert.equal(g.results[0].status, 'PUBLISH_STATUS_PENDING');
  await p.kill('SIGKILL');
});

test('a clear is acked like a config; an ack made with no doorbell wake is seen (SPEC 6.5, 7.3)', async () => {
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.write(`init ${h.CONSUMER}\n`);
  await p.line(/^ok /, { out: true });
  await h.attached(d, p.pid);
  const r = await h.call(c, 'Clear', { selector: { pid: p.pid } });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_WRITTEN');
  const gen = r.results[0].generation;
  // Not acked yet: a wait for the clear is pending.
  let w = await h.call(c, 'WaitAck', { process: { pid: p.pid }, generation: gen, waitMs: 200 });
  assert.equal(w.result.status, 'PUBLISH_STATUS_PENDING');
  // The process sees it (-ENODATA, 61) and acks its generation.
  p.proc.stdin.write('poll\n');
  await p.line(new RegExp(`^err 61 ${gen}$`), { out: true });
  p.proc.stdin.write(`ack ${gen}\n`);
  await p.line(/^ok$/, { out: true });
  w = await h.call(c, 'WaitAck', { process: { pid: p.pid }, generation: gen, waitMs: 5000 });
  assert.equal(w.result.status, 'PUBLISH_STATUS_APPLIED');
  // An ack no doorbell announced (a process may skip the wake): a waiter
  // reads before it waits, and its waits are bounded, so it is seen.
  const g = await h.call(c, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('z') });
  p.proc.stdin.write(`forgeack ${g.results[0].generation}\n`);
  await p.line(/^ok$/, { out: true });
  w = await h.call(c, 'WaitAck', { process: { pid: p.pid }, generation: g.results[0].generation, waitMs: 5000 });
  assert.equal(w.result.status, 'PUBLISH_STATUS_APPLIED');
  await p.kill('SIGKILL');
});

test('Publish to a selector: every matching process, in pid order, one consumer and version', async () => {
  const es = [await h.echo(), await h.echo()];
  for (const e of es) await h.attached(d, e.pid);
  const r = await h.call(c, 'Publish', { selector: { consumer: h.CONSUMER, schemaVersion: 1 },
    payload: Buffer.from('to all'), waitMs: 5000 });
  const pids = r.results.map((x) => x.process.pid);
  for (const e of es) assert.ok(pids.includes(e.pid));
  assert.deepEqual(pids, [...pids].sort((a, b) => a - b));
  for (const x of r.results) {
    if (es.some((e) => e.pid === x.process.pid)) assert.equal(x.status, 'PUBLISH_STATUS_APPLIED');
  }
  for (const e of es) await e.line(/payload=to all$/, { out: true });
  // A consumer without its version, or no consumer at all.
  assert.equal(await h.code(h.call(c, 'Publish', { selector: { consumer: h.CONSUMER }, payload: Buffer.from('x') })),
    'INVALID_ARGUMENT');
  assert.equal(await h.code(h.call(c, 'Publish', { payload: Buffer.from('x') })), 'INVALID_ARGUMENT');
  // Nothing matches: no results, not an error.
  const none = await h.call(c, 'Publish', { selector: { consumer: 'nosuch', schemaVersion: 1 }, payload: Buffer.from('x') });
  assert.equal(none.results.length, 0);
});

test('bad payloads: empty, or over the process capacity, are INVALID_ARGUMENT; unknown pid NOT_FOUND', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  assert.equal(await h.code(h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.alloc(0) })),
    'INVALID_ARGUMENT');
  assert.equal(await h.code(h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.alloc(4097, 0x41) })),
    'INVALID_ARGUMENT');
  assert.equal(await h.code(h.call(c, 'Publish', { selector: { pid: 0x3fffffff }, payload: Buffer.from('x') })),
    'NOT_FOUND');
  // Over the daemon's message limit: refused by gRPC itself.
  assert.equal(await h.code(h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.alloc(5 << 20) })),
    'RESOURCE_EXHAUSTED');
});

test('Clear withdraws the config: the process falls back to its defaults', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('some'), waitMs: 5000 });
  const r = await h.call(c, 'Clear', { selector: { pid: e.pid }, waitMs: 5000 });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await e.line(new RegExp(`event=cleared gen=${r.results[0].generation}$`), { out: true });
  const st = await h.call(c, 'ReadState', { process: { pid: e.pid } });
  assert.match(st.data.toString(), /mode=defaults$/);
});

test('a process that exited: NOT_FOUND once detached, GONE while a wait was on it', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  process.kill(e.pid, 'SIGSTOP');
  const gen = async () => Number((await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process.generation);
  const before = await gen();
  const p = h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('never'), waitMs: 10000 });
  // Written (its wait is on the process), then the process dies under it.
  await h.until(async () => (await gen()) > before, { what: 'the Publish written' });
  process.kill(e.pid, 'SIGKILL');
  const r = await p;
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_GONE');
  await h.until(async () => (await h.code(h.call(c, 'ReadState', { process: { pid: e.pid } }))) === 'NOT_FOUND');
});

test('unknown methods and services are UNIMPLEMENTED; undecodable requests INVALID_ARGUMENT', async () => {
  const raw = new h.grpc.Client(d.addr, h.grpc.credentials.createInsecure());
  const unary = (method, bytes) => new Promise((resolve) => {
    raw.makeUnaryRequest(method, (b) => b, (b) => b, bytes, { deadline: Date.now() + 5000 },
      (err) => resolve(err ? h.grpc.status[err.code] : 'OK'));
  });
  try {
    assert.equal(await unary('/procctl.v1.NodeService/Nope', Buffer.alloc(0)), 'UNIMPLEMENTED');
    assert.equal(await unary('/no.such.Service/Call', Buffer.alloc(0)), 'UNIMPLEMENTED');
    // A truncated varint, and a field of the wrong wire type.
    assert.equal(await unary('/procctl.v1.NodeService/GetProcess', Buffer.from([0x0a, 0x05, 0x08])), 'INVALID_ARGUMENT');
    assert.equal(await unary('/procctl.v1.NodeService/ListProcesses', Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])),
      'INVALID_ARGUMENT');
  } finally {
    raw.close();
  }
});

test('ListArbiters is empty and GetArbiter NOT_FOUND without [arbiter] sections', async () => {
  assert.deepEqual((await h.call(c, 'ListArbiters', {})).arbiters, []);
  assert.equal(await h.code(h.call(c, 'GetArbiter', { kind: 'gpu' })), 'NOT_FOUND');
});
