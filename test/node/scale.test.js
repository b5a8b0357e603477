// SPDX-License-Identifier: Apache-2.0
// scale.test.js - a node with many regions (issue 19's harness, small):
// 1,000 regions in 250 real processes (test/farm) are all attached,
// listed, published to with a wait (each acks), and detached when the
// processes die.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

const PROCS = 250;
const REGIONS = 4;
const CONSUMER = `farm${process.pid}`.slice(0, 31);

after(async () => {
  await h.killAll();
});

test(`${PROCS * REGIONS} regions in ${PROCS} processes: attached, published to, detached`, async () => {
  const d = await new h.Daemon({ consumers: CONSUMER, args: ['--max-regions', '2000'] }).ready();
  const c = d.client();
  const farm = new h.Child(process.env.FARM, ['--procs', String(PROCS), '--regions', String(REGIONS),
    '--consumer', CONSUMER, '--ack'], { stdio: ['pipe', 'pipe', 'pipe'] });
  await farm.line(/^ready /, { out: true, timeout: 60000 });
  const listed = async () => (await h.call(c, 'ListProcesses', { filter: { consumer: CONSUMER } })).processes;
  await h.until(async () => (await listed()).length === PROCS * REGIONS,
    { what: `${PROCS * REGIONS} regions attached`, timeout: 120000, every: 250 });
  const procs = await listed();
  assert.equal(new Set(procs.map((p) => p.ref.pid)).size, PROCS);
  assert.ok(procs.every((p) => p.leaseState === 'LEASE_STATE_LIVE'));
  // A publish to every region of one schema version waits for every ack.
  for (let v = 1; v <= REGIONS; v++) {
    const r = await h.call(c, 'Publish', { selector: { consumer: CONSUMER, schemaVersion: v },
      payload: Buffer.from(`v${v}`), waitMs: 30000 }, { deadlineMs: 60000 });
    assert.equal(r.results.length, PROCS);
    const statuses = new Set(r.results.map((x) => x.status));
    assert.deepEqual([...statuses], ['PUBLISH_STATUS_APPLIED']);
  }
  // The processes die: every region goes.
  farm.proc.stdin.end();
  await farm.exited;
  await h.until(async () => (await listed()).length === 0, { what: 'every region detached', timeout: 60000, every: 250 });
  c.close();
  await d.stop();
});

test('at a cap: refused with a named reason, counted, a gauge, one warning while it lasts', async () => {
  const port = await h.freePort();
  const consumer = `${CONSUMER}c`.slice(0, 31);
  const d = await new h.Daemon({ consumers: consumer,
    args: ['--max-per-process', '3', '--max-regions', '25', '--http-listen', `127.0.0.1:${port}`] }).ready();
  const c = d.client();
  const farm = new h.Child(process.env.FARM, ['--procs', '10', '--regions', '4', '--consumer', consumer],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  await farm.line(/^ready /, { out: true });
  const listed = async () => (await h.call(c, 'ListProcesses', { filter: { consumer } })).processes.length;
  await h.until(async () => (await listed()) === 25, { what: '25 regions attached' });
  // 10 processes x 4 = 40: 25 attached, 15 left out, some for their
  // process's cap (the 4th of a process with 3), the rest for the cap in all.
  await h.until(async () => (await h.metric(port, 'procctl_regions_over_cap')) === 15, { what: 'the gauge at 15' });
  const perProcess = await h.metric(port, 'procctl_attach_rejections_total{reason="limit"}');
  const inAll = await h.metric(port, 'procctl_attach_rejections_total{reason="region_limit"}');
  assert.ok(perProcess >= 1 && inAll >= 1 && perProcess + inAll >= 15, `limit ${perProcess}, region_limit ${inAll}`);
  await h.sleep(500); // several full scans (every 100 ms here): still one warning
  // Its count is the first full scan's that found any over: a scan begun
  // while the farm was still starting saw fewer.
  const warned = d.lines.filter((l) => /level=warn event=regions_over_cap count=(\d+) max_per_process=3 max_regions=25/.test(l));
  assert.equal(warned.length, 1, d.lines.filter((l) => /regions_over_cap/.test(l)).join('\n'));
  assert.ok(Number(/count=(\d+)/.exec(warned[0])[1]) <= 15, warned[0]);
  assert.equal(await listed(), 25);
  farm.proc.stdin.end();
  await farm.exited;
  await h.until(async () => (await h.metric(port, 'procctl_regions_over_cap')) === 0, { what: 'the gauge back to 0' });
  await d.line(/level=info event=regions_over_cap count=0/);
  c.close();
  await d.stop();
});
