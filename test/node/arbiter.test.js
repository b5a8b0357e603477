// SPDX-License-Identifier: Apache-2.0
// arbiter.test.js - exclusive resources through the API: an [arbiter gpu]
// from the config file, real token clients taking turns on one resource,
// ListArbiters / GetArbiter, the Granted and Released events of
// WatchEvents, ReadState's resource reports, and a holder killed while it
// holds.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

// Token clients of this file only (echo clients have h.CONSUMER).
const CONSUMER_T = `tok${process.pid}`.slice(0, 31);
// token-client --id 0: the id's first byte is 0, the rest are zero.
const GPU = '00000000-0000-0000-0000-000000000000';
const HOLD_NS = '200000000';

const scratch = h.scratch('procctl-arbiter-');
const witness = path.join(scratch, 'witness');
let d, c, w;
const kids = [];

async function token() {
  const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', CONSUMER_T, '--kind', '1', '--id', '0',
    '--witness', witness]);
  kids.push(t);
  await t.line(/^event=started pid=\d+$/, { out: true });
  await h.attached(d, t.pid);
  return t;
}

const gpu = async () => {
  const r = await h.call(c, 'GetArbiter', { kind: 'gpu' });
  assert.equal(r.arbiter.resources.length, 1);
  return r.arbiter.resources[0];
};

const granted = (pred = () => true) => (e) => e.event === 'resourceGranted' && pred(e.resourceGranted);
const released = (pred = () => true) => (e) => e.event === 'resourceReleased' && pred(e.resourceReleased);

// The witness file: "S pid ns" when a holder starts using the resource,
// "E pid ns" before it stops, "X pid ns" when the kernel saw two at once.
function witnessed() {
  return fs.readFileSync(witness, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' '));
}

before(async () => {
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${CONSUMER_T}\nhold_ms = 200\n` +
    'resources = 00000000-0000-0000-0000-000000000000\n');
  d = await new h.Daemon({ consumers: CONSUMER_T, args: ['--config', conf] }).ready();
  c = d.client();
  w = h.watch(c, { filter: { consumer: CONSUMER_T } });
  await w.next((e) => e.event === 'snapshot');
});

after(async () => {
  w.stream.cancel();
  c.close();
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  await d.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

test('the configured arbiter, before anyone asks: its resource, no holder', async () => {
  const l = await h.call(c, 'ListArbiters', {});
  assert.equal(l.arbiters.length, 1);
  const a = l.arbiters[0];
  assert.equal(a.kind, 'gpu');
  assert.equal(a.holdNs, HOLD_NS);
  assert.equal(a.resources.length, 1);
  const r = a.resources[0];
  assert.equal(r.kind, 'gpu');
  assert.deepEqual(r.id, GPU);
  assert.equal(r.holder.pid, 0);
  assert.equal(r.grantId, ''); // none
  assert.equal(r.handoffs, '0');
  assert.equal(r.waiters, 0);

  assert.equal(a.kindNumber, 1); // [arbiter gpu] kind = 1
  const g = await h.call(c, 'GetArbiter', { kind: 'gpu' });
  assert.deepEqual(await h.call(c, 'GetArbiter', { kind: '1' }), g); // by its number too
  assert.equal(g.arbiter.kind, a.kind);
  assert.equal(g.arbiter.holdNs, a.holdNs);
  assert.deepEqual(g.arbiter.resources.map((x) => [x.kind, x.id]), a.resources.map((x) => [x.kind, x.id]));
  assert.equal(await h.code(h.call(c, 'GetArbiter', { kind: 'nope' })), 'NOT_FOUND');
  assert.equal(await h.code(h.call(c, 'GetArbiter', {})), 'NOT_FOUND');
});

test('three token clients take turns: the holder changes, handoffs grow, the others wait', async () => {
  const ts = [await token(), await token(), await token()];
  const pids = ts.map((t) => t.pid);

  const first = await h.until(async () => {
    const r = await gpu();
    return pids.includes(r.holder.pid) && r;
  }, { what: 'a token client to hold the gpu' });
  assert.match(first.grantId, /^[0-9a-f]{16}$/);
  // Every one of them holds it in turn, and two wait while one holds.
  const holders = new Set();
  let waited = null;
  await h.until(async () => {
    const r = await gpu();
    if (pids.includes(r.holder.pid)) holders.add(r.holder.pid);
    if (r.waiters === 2) waited = r;
    return holders.size === 3 && Number(r.handoffs) >= 2 && waited;
  }, { what: 'three holders in turn, two handoffs and two waiters' });
  assert.ok(pids.includes(waited.holder.pid));
  // Who waits: the two others, by pid, each with its instance.
  assert.deepEqual(waited.waiting.map((x) => x.pid), pids.filter((p) => p !== waited.holder.pid).sort((x, y) => x - y));
  for (const x of waited.waiting) assert.match(x.instanceId, /^[0-9a-f]{16}$/);

  // The list agrees with GetArbiter.
  const l = await h.call(c, 'ListArbiters', {});
  assert.equal(l.arbiters.length, 1);
  const g = await h.call(c, 'GetArbiter', { kind: 'gpu' });
  assert.equal(g.arbiter.kind, l.arbiters[0].kind);
  assert.equal(g.arbiter.holdNs, HOLD_NS);
  assert.deepEqual(g.arbiter.resources.map((x) => [x.kind, x.id]), l.arbiters[0].resources.map((x) => [x.kind, x.id]));
  const r = g.arbiter.resources[0];
  assert.ok(Number(r.holdNsTotal) > 0, JSON.stringify(r));

  // Each client says so on its stdout.
  for (const t of ts) await t.line(new RegExp(`^event=acquired pid=${t.pid}$`), { out: true });
  for (const t of ts) await t.line(new RegExp(`^event=released pid=${t.pid}$`), { out: true });

  // The events: each grant to one of them, ended by its confirmed release.
  const g1 = await w.next(granted((x) => pids.includes(x.holder.pid)));
  assert.equal(g1.resourceGranted.kind, 'gpu');
  assert.deepEqual(g1.resourceGranted.id, GPU);
  assert.match(g1.resourceGranted.grantId, /^[0-9a-f]{16}$/);
  const r1 = await w.next(released((x) => x.grantId === g1.resourceGranted.grantId));
  assert.equal(r1.resourceReleased.reason, 'RELEASE_REASON_CONFIRMED');
  assert.equal(r1.resourceReleased.kind, 'gpu');
  assert.deepEqual(r1.resourceReleased.id, GPU);
  assert.deepEqual(r1.resourceReleased.holder, g1.resourceGranted.holder);
  assert.ok(Number(r1.sequence) > Number(g1.sequence));
  await w.next(granted((x) => x.holder.pid !== g1.resourceGranted.holder.pid && pids.includes(x.holder.pid)));

  // Never two holders at once: the witness alternates S and E of one pid.
  const lines = witnessed();
  assert.ok(!lines.some(([k]) => k === 'X'), lines.join('\n'));
  for (let i = 0; i < lines.length; i++) {
    assert.equal(lines[i][0], i % 2 ? 'E' : 'S', lines.join('\n'));
    if (i % 2) assert.equal(lines[i][1], lines[i - 1][1], lines.join('\n'));
  }
});

test('ReadState shows a token client\'s resource report', async () => {
  const t = kids.find((k) => k.exit === null);
  const st = await h.call(c, 'ReadState', { process: { pid: t.pid } });
  assert.equal(st.resources.length, 1);
  const rep = st.resources[0];
  assert.equal(rep.kind, 'gpu'); // the [arbiter] section's name for kind 1
  assert.equal(rep.kindNumber, 1);
  assert.deepEqual(rep.id, GPU);
  assert.equal(rep.wants, true);
  assert.match(rep.state, /^RESOURCE_STATE_(IDLE|ACQUIRING|HOLDING|RELEASING|RELEASED)$/);
  assert.ok('grantId' in rep && 'seenGeneration' in rep);
});

test('ReadState: unused resource entries are no resources; a kind no arbiter names shows its number', async () => {
  // procsim: a process side driven line by line (test/procsim.c), with a
  // table of 4 resource entries.
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  kids.push(p);
  p.proc.stdin.write(`init ${CONSUMER_T}\n`);
  await p.line(/^ok /, { out: true });
  await h.attached(d, p.pid);
  let st = await h.call(c, 'ReadState', { process: { pid: p.pid } });
  assert.deepEqual(st.resources, []);
  p.proc.stdin.write('report 7 00 0 1\n'); // kind 7, id 00.., IDLE, WANT
  await p.line(/^ok$/, { out: true });
  st = await h.call(c, 'ReadState', { process: { pid: p.pid } });
  assert.deepEqual(st.resources.map((x) => [x.kind, x.kindNumber, x.wants]), [['7', 7, true]]);
});

test('a holder killed while it holds: Released EXITED for its grant, then the next one gets it', async () => {
  // The clients of the last test go; one client alone then holds the gpu for
  // as long as it wants it.
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  await h.until(async () => (await gpu()).holder.pid === 0, { what: 'no holder' });
  const a = await token();
  const held = await h.until(async () => {
    const r = await gpu();
    return r.holder.pid === a.pid && r;
  }, { what: `pid ${a.pid} to hold the gpu` });
  await a.line(/^event=acquired /, { out: true });
  await w.next(granted((x) => x.grantId === held.grantId && x.holder.pid === a.pid));

  // Stopped, it cannot confirm a revocation: a second client waits.
  process.kill(a.pid, 'SIGSTOP');
  const b = await token();
  const blocked = await h.until(async () => {
    const r = await gpu();
    return r.pendingNs !== '0' && BigInt(r.pendingNsTotal) > BigInt(held.pendingNsTotal) && r;
  }, { what: 'a revocation pending while b waits' });
  assert.equal(blocked.holder.pid, a.pid);
  assert.equal(blocked.grantId, held.grantId);

  a.kill('SIGKILL');
  const rel = await w.next(released((x) => x.grantId === held.grantId));
  assert.equal(rel.resourceReleased.reason, 'RELEASE_REASON_EXITED', d.lines.join('\n'));
  assert.equal(rel.resourceReleased.holder.pid, a.pid);
  assert.equal(rel.resourceReleased.kind, 'gpu');
  assert.deepEqual(rel.resourceReleased.id, GPU);
  const next = await w.next(granted((x) => x.holder.pid === b.pid));
  assert.ok(Number(next.sequence) > Number(rel.sequence));
  await b.line(/^event=acquired /, { out: true });
  const r = await h.until(async () => {
    const x = await gpu();
    return x.holder.pid === b.pid && x;
  }, { what: `pid ${b.pid} to hold the gpu` });
  assert.equal(r.grantId, next.resourceGranted.grantId);
  assert.ok(!witnessed().some(([k]) => k === 'X'));
  await d.line(new RegExp(`event=released kind=gpu pid=${a.pid} grant=[0-9a-f]{16} reason=exited`));
});

test('waiters leaves the holder out while its revocation is pending', async () => {
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  await h.until(async () => (await gpu()).holder.pid === 0, { what: 'no holder' });
  const a = await token();
  const held = await h.until(async () => {
    const x = await gpu();
    return x.holder.pid === a.pid && x;
  }, { what: `pid ${a.pid} to hold the gpu` });
  process.kill(a.pid, 'SIGSTOP');
  const b = await token();
  // A tick that found the revocation still unconfirmed.
  const r = await h.until(async () => {
    const x = await gpu();
    return x.pendingNs !== '0' && BigInt(x.pendingNsTotal) > BigInt(held.pendingNsTotal) && x;
  }, { what: 'a revocation pending while b waits' });
  assert.equal(r.holder.pid, a.pid);
  // One process wants it besides the holder: b.
  assert.equal(r.waiters, 1, JSON.stringify(r));
  await a.kill('SIGKILL');
  await h.until(async () => (await gpu()).holder.pid === b.pid, { what: `pid ${b.pid} to hold the gpu` });
});
