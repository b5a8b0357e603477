// SPDX-License-Identifier: Apache-2.0
// pcsamp.test.js - GPU PC sampling as an exclusive resource, the daemon's
// side, on a machine without a GPU: procctl-node with an [arbiter] for the
// kind, and pcsamp's holder (examples/pcsamp, the same holder loop as on the
// GPU) with its stand-in: acquiring and releasing sleep what CUPTI's enable
// + configure + start and stop + drain + disable take. The resource's id is
// the GPU's UUID. Checked: every holder gets turns, the witness never sees
// two holders, RELEASING is reported while the release runs, and /metrics
// has hold, pending-release and blocked time and hand-offs labelled by the
// kind's name and the UUID.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

const STANDIN = process.env.PCSAMP_STANDIN;
if (!STANDIN) throw new Error('PCSAMP_STANDIN is not set (ctest sets it)');

const CONSUMER = `pcs${process.pid}`.slice(0, 31);
const UUID = '8e2f7a4c-51d3-4b9e-a0c6-3d1f9b2e7c45';
const KIND = 'gpu-pc-sampling';
const ACQUIRE_MS = 30;
const RELEASE_MS = 20;

const scratch = h.scratch('procctl-pcsamp-');
const witness = path.join(scratch, 'witness');
let d, c, port;
const holders = [];

before(async () => {
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter ${KIND}]\nkind = 2\nconsumer = ${CONSUMER}\nhold_ms = 300\nprocess_bound = true\n` +
    `resources = ${UUID}\n`);
  d = await new h.Daemon({ consumers: CONSUMER, args: ['--config', conf, '--http-listen', '127.0.0.1:0'] }).ready();
  port = await d.httpPort();
  c = d.client();
  for (let i = 0; i < 3; i++) {
    const p = new h.Child(STANDIN, ['--consumer', CONSUMER, '--uuid', UUID, '--witness', witness,
      '--acquire-ms', String(ACQUIRE_MS), '--release-ms', String(RELEASE_MS)]);
    holders.push(p);
    await p.line(new RegExp(`^event=started pid=${p.pid} kind=2 id=${UUID}$`), { out: true });
    await h.attached(d, p.pid);
  }
});

after(async () => {
  if (c) c.close();
  await Promise.all(holders.map((p) => p.kill('SIGKILL')));
  if (d) await d.stop();
});

const holds = (p) => p.out.filter((l) => l.startsWith('event=hold '));

test('three stand-in holders take turns on one GPU\'s PC sampling; the witness never sees two', async () => {
  await h.until(() => holders.every((p) => holds(p).length >= 2), { timeout: 20000, what: 'two holds each' });
  for (const p of holders) {
    for (const l of holds(p)) {
      const m = /^event=hold pid=\d+ turn=\d+ samples=0 acquire_ms=([\d.]+) release_ms=([\d.]+)$/.exec(l);
      assert.ok(m, l);
      assert.ok(Number(m[1]) >= ACQUIRE_MS && Number(m[2]) >= RELEASE_MS, l);
    }
  }
  // S and E alternate, each E the last S's holder; no X (the kernel's lock saw no overlap).
  let at = null;
  for (const [what, pid] of fs.readFileSync(witness, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' '))) {
    assert.notEqual(what, 'X', `pid ${pid} found the resource in use`);
    if (what === 'S') {
      assert.equal(at, null, `pid ${pid} started while ${at} held`);
      at = pid;
    } else if (what === 'E') {
      assert.equal(pid, at);
      at = null;
    }
  }
  const r = (await h.call(c, 'GetArbiter', { kind: KIND })).arbiter;
  assert.equal(r.resources.length, 1);
  assert.equal(r.resources[0].id, UUID);
  assert.ok(Number(r.resources[0].handoffs) >= 5, JSON.stringify(r.resources[0]));
});

test('RELEASING while the release runs, seen in ReadState; then RELEASED', async () => {
  const seen = new Set();
  await h.until(async () => {
    for (const p of holders) {
      const s = await h.call(c, 'ReadState', { process: { pid: p.pid } });
      for (const res of s.resources) seen.add(res.state);
    }
    return ['RESOURCE_STATE_RELEASING', 'RESOURCE_STATE_HOLDING', 'RESOURCE_STATE_RELEASED'].every((x) => seen.has(x));
  }, { timeout: 20000, every: 2, what: `RELEASING, HOLDING and RELEASED reported (seen ${[...seen]})` });
});

test('/metrics: hold, pending-release and blocked time and hand-offs, by the kind\'s name and the GPU UUID', async () => {
  const labels = `{kind="${KIND}",resource="${UUID}"}`;
  const m = async (name) => h.metric(port, `${name}${labels}`);
  await h.until(async () => (await m('procctl_resource_pending_release_seconds_total')) > 0,
    { what: 'pending-release time to show' });
  assert.ok((await m('procctl_resource_hold_seconds_total')) > 0);
  assert.ok((await m('procctl_resource_blocked_seconds_total')) > 0);
  assert.ok((await m('procctl_resource_handoffs_total')) >= 5);
  assert.equal(await m('procctl_resource_waiters'), 2);
});
