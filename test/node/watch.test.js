// SPDX-License-Identifier: Apache-2.0
// watch.test.js - WatchEvents: the snapshot, the events after it, resumes,
// the cut-off of a slow watcher, many watchers at once, cancels; and the
// health service's Watch.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

const THREADSTOP = process.env.THREADSTOP;
if (!THREADSTOP) throw new Error('THREADSTOP is not set (ctest sets it)');

let d, c;

before(async () => {
  // A short history, so that a slow watcher falls behind it quickly.
  // 1,100 streams on one connection: grpc_max_streams allows them (and
  // the connections and memory quota hold them: 8 x 2,000 x 8 KiB).
  d = await new h.Daemon({ args: ['--watch-history', '256', '--max-watchers', '1100', '--grpc-max-streams', '2000',
    '--grpc-max-connections', '8', '--grpc-memory-bytes', '134217728'] }).ready();
  c = d.client();
});

after(async () => {
  c.close();
  await h.killAll();
  await d.stop();
});

const seqs = (w) => w.events.map((e) => Number(e.sequence));

test('a snapshot first, then Attached, Acked, StateChanged, Detached, in sequence', async () => {
  const before = await h.echo();
  await h.attached(d, before.pid);
  const w = h.watch(c, { filter: { consumer: h.CONSUMER } });
  const snap = await w.next((e) => e.event === 'snapshot');
  assert.equal(w.events[0].event, 'snapshot');
  assert.ok(snap.snapshot.processes.some((p) => p.ref.pid === before.pid));

  const e = await h.echo();
  const att = await w.next((x) => x.event === 'attached' && x.attached.process.ref.pid === e.pid);
  assert.equal(att.attached.process.consumer, h.CONSUMER);
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('watched'), waitMs: 5000 });
  const gen = r.results[0].generation;
  const ack = await w.next((x) => x.event === 'acked' && x.acked.process.pid === e.pid && x.acked.generation === gen);
  assert.equal(ack.acked.result, 'ACK_RESULT_APPLIED');
  await w.next((x) => x.event === 'stateChanged' && x.stateChanged.process.pid === e.pid);
  e.kill('SIGKILL');
  const det = await w.next((x) => x.event === 'detached' && x.detached.process.pid === e.pid);
  assert.equal(det.detached.reason, 'DETACH_REASON_EXITED');

  const s = seqs(w);
  for (let i = 1; i < s.length; i++) assert.ok(s[i] > s[i - 1], `sequence ${s}`);
  for (const ev of w.events) assert.match(ev.resumeToken, /^[0-9a-f]{16}\.\d+$/);
  w.stream.cancel();
});

test('a filter keeps other processes\' events out', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const other = h.watch(c, { filter: { consumer: h.CONSUMER, pid: 1 } });
  const mine = h.watch(c, { filter: { pid: e.pid } });
  await other.next((x) => x.event === 'snapshot');
  await mine.next((x) => x.event === 'snapshot');
  await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('filtered'), waitMs: 5000 });
  await mine.next((x) => x.event === 'acked');
  await h.sleep(100);
  assert.deepEqual(other.events.map((x) => x.event), ['snapshot']);
  assert.equal(other.events[0].snapshot.processes.length, 0);
  other.stream.cancel();
  mine.stream.cancel();
});

test('a watch resumed from a token gets exactly what followed it, without a snapshot', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const w1 = h.watch(c, { filter: { pid: e.pid } });
  const snap = await w1.next((x) => x.event === 'snapshot');
  w1.stream.cancel();
  // Three acks the first watcher missed.
  const gens = [];
  for (const t of ['a', 'b', 'c']) {
    const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from(t), waitMs: 5000 });
    gens.push(r.results[0].generation);
  }
  const w2 = h.watch(c, { filter: { pid: e.pid }, resumeToken: snap.resumeToken });
  await h.until(() => w2.events.filter((x) => x.event === 'acked').length >= 3, { what: 'three acks' });
  assert.notEqual(w2.events[0].event, 'snapshot');
  assert.deepEqual(w2.events.filter((x) => x.event === 'acked').map((x) => x.acked.generation), gens);
  assert.ok(Number(w2.events[0].sequence) > Number(snap.sequence));
  w2.stream.cancel();
});

test('an unknown, foreign or too old resume token is OUT_OF_RANGE', async () => {
  for (const resumeToken of ['nonsense', '0000000000000000.1', 'ffffffffffffffff.99999999999']) {
    const w = h.watch(c, { resumeToken });
    const err = await w.errored();
    assert.equal(h.grpc.status[err.code], 'OUT_OF_RANGE', resumeToken);
  }
  // Too old: the daemon keeps 256 events; make more after a token.
  const e = await h.echo();
  await h.attached(d, e.pid);
  const w = h.watch(c, { filter: { pid: e.pid } });
  const snap = await w.next((x) => x.event === 'snapshot');
  w.stream.cancel();
  for (let i = 0; i < 200; i++) await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from(`n${i}`), waitMs: 2000 });
  const old = h.watch(c, { resumeToken: snap.resumeToken });
  assert.equal(h.grpc.status[(await old.errored()).code], 'OUT_OF_RANGE');
});

test('a watcher that does not read is cut off with RESOURCE_EXHAUSTED, and others go on', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const slow = h.watch(c, {}, {});
  await slow.next((x) => x.event === 'snapshot');
  slow.stream.pause(); // HTTP/2 flow control stops the daemon's sends
  const fast = h.watch(c, { filter: { pid: e.pid } });
  await fast.next((x) => x.event === 'snapshot');
  // Each publish is two events (Acked, StateChanged) of about 60 bytes:
  // enough of them to fill the HTTP/2 windows and lap the 256 kept.
  const n = 3000;
  for (let i = 0; i < n; i++) {
    await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from(`x${i}`), waitMs: 2000 });
  }
  slow.stream.resume();
  const err = await slow.errored();
  assert.equal(h.grpc.status[err.code], 'RESOURCE_EXHAUSTED');
  assert.match(err.details, /fell behind/);
  // The fast one saw every ack.
  await h.until(() => fast.events.filter((x) => x.event === 'acked').length >= n, { what: 'every ack' });
  fast.stream.cancel();
});

test('1,000 concurrent watchers each get the snapshot and the same next event', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const ws = [];
  for (let i = 0; i < 1000; i++) ws.push(h.watch(c, { filter: { pid: e.pid } }));
  await h.until(() => ws.every((w) => w.events.length >= 1), { timeout: 60000, what: '1000 snapshots' });
  for (const w of ws) assert.equal(w.events[0].event, 'snapshot');
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('fan-out'), waitMs: 5000 });
  const gen = r.results[0].generation;
  await h.until(() => ws.every((w) => w.events.some((x) => x.event === 'acked' && x.acked.generation === gen)),
    { timeout: 60000, what: 'the ack at all 1000' });
  const seq = ws[0].events.find((x) => x.event === 'acked').sequence;
  for (const w of ws) assert.equal(w.events.find((x) => x.event === 'acked').sequence, seq);
  for (const w of ws) w.stream.cancel();
});

test('watchers that start together share one snapshot, built once', async () => {
  // max_watchers 16: the 17th stream refused on the gRPC side proves
  // that the 16 before it were taken and their requests queued for the
  // loop, which is held still meanwhile, so that the loop finds them
  // queued together (17 streams: within one connection's 32).
  // Its own consumer: the file's daemon leaves these processes alone.
  const consumer = `${h.CONSUMER}s`.slice(0, 31);
  const own = await new h.Daemon({ consumers: consumer, args: ['--max-watchers', '16', '--http-listen', '127.0.0.1:0'] })
    .ready();
  const oc = own.client();
  try {
    const port = await own.httpPort();
    const e = await h.echo(consumer);
    await h.attached(own, e.pid);
    const built = () => h.metric(port, 'procctl_watch_snapshots_total{how="built"}');
    const shared = () => h.metric(port, 'procctl_watch_snapshots_total{how="shared"}');
    const [built0, shared0] = [await built(), await shared()];
    const stop = new h.Child(THREADSTOP, [String(own.innerPid()), 'procctl-node'], { stdio: ['pipe', 'pipe', 'pipe'] });
    await stop.line(/^stopped \d+$/, { out: true });
    let ws;
    try {
      ws = Array.from({ length: 16 }, () => h.watch(oc, { filter: { pid: e.pid } }));
      const extra = h.watch(oc, { filter: { pid: e.pid } });
      await extra.errored();
      assert.equal(h.grpc.status[extra.error.code], 'RESOURCE_EXHAUSTED');
      assert.ok(ws.every((w) => !w.events.length), 'no snapshot while the loop is held');
    } finally {
      stop.proc.stdin.end('go\n');
    }
    await stop.line(/^released$/, { out: true });
    await h.until(() => ws.every((w) => w.events.length >= 1 || w.error), { what: '16 snapshots' });
    const first = JSON.stringify(ws[0].events[0]);
    assert.equal(ws[0].events[0].event, 'snapshot');
    assert.ok(ws[0].events[0].snapshot.processes.some((p) => p.ref.pid === e.pid));
    for (const w of ws) assert.equal(JSON.stringify(w.events[0]), first);
    const [b, sh] = [(await built()) - built0, (await shared()) - shared0];
    assert.equal(b + sh, 16);
    assert.ok(sh >= 1 && b < 16, `built ${b}, shared ${sh}`);
    for (const w of ws) w.stream.cancel();

    // A write between two watches: the later one sees it, in a snapshot of its own.
    const r = await h.call(oc, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('after'), waitMs: 5000 });
    const later = h.watch(oc, { filter: { pid: e.pid } });
    const snap = await later.next((x) => x.event === 'snapshot');
    assert.equal(snap.snapshot.processes.find((p) => p.ref.pid === e.pid).generation, r.results[0].generation);
    assert.ok(Number(snap.sequence) > Number(ws[0].events[0].sequence));
    later.stream.cancel();
  } finally {
    oc.close();
    await own.stop();
  }
});

test('cancelled watchers are let go: max_watchers is not used up by them', async () => {
  // 1,100 allowed. Open and cancel 1,500 in batches (a batch may meet the
  // limit while the cancels before it are still on their way).
  const open = async (n) => {
    const ws = [];
    for (let i = 0; i < n; i++) ws.push(h.watch(c, { filter: { pid: 1 } }));
    await h.until(() => ws.every((w) => w.events.length >= 1 || w.error), { timeout: 60000, what: 'answers' });
    return ws;
  };
  for (let b = 0; b < 3; b++) for (const w of await open(500)) w.stream.cancel();
  // Then 1,000 at once are all served, once the cancels are through.
  let ws;
  await h.until(async () => {
    ws = await open(1000);
    if (ws.every((w) => !w.error)) return true;
    for (const w of ws) w.stream.cancel();
    return false;
  }, { timeout: 60000, every: 200, what: '1,000 watchers served at once' });
  // Over the limit: RESOURCE_EXHAUSTED.
  const extra = await open(150);
  const refused = extra.filter((w) => w.error);
  assert.ok(refused.length >= 50, `${refused.length} refused`);
  for (const w of refused) assert.equal(h.grpc.status[w.error.code], 'RESOURCE_EXHAUSTED');
  for (const w of [...ws, ...extra]) w.stream.cancel();
});
