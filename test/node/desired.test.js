// SPDX-License-Identifier: Apache-2.0
// desired.test.js - desired configs: stated once, given to the processes
// that match now and to those that attach later, most specific first,
// kept on the host for a successor daemon.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

let d, c;
const sel = (extra = {}) => ({ consumer: h.CONSUMER, schemaVersion: 1, ...extra });
const set = (selector, text, waitMs = 5000) =>
  h.call(c, 'SetDesiredConfig', { config: { selector, payload: Buffer.from(text) }, waitMs });

before(async () => {
  d = await new h.Daemon().ready();
  c = d.client();
});

after(async () => {
  c.close();
  await h.killAll();
  await d.stop();
});

test('a consumer config reaches the processes there now and those that come later', async () => {
  const now = await h.echo();
  await h.attached(d, now.pid);
  const r = await set(sel(), 'for everyone');
  assert.equal(r.config.payload.toString(), 'for everyone');
  assert.ok(Number(r.config.revision) > 0);
  const mine = r.results.find((x) => x.process.pid === now.pid);
  assert.equal(mine.status, 'PUBLISH_STATUS_APPLIED');
  await now.line(/payload=for everyone$/, { out: true });

  const later = await h.echo();
  await later.line(/payload=for everyone$/, { out: true });
  const p = await h.attached(d, later.pid);
  assert.notEqual(p.generation, '0');
});

test('precedence: a pid config wins over the consumer config, for that pid only', async () => {
  const a = await h.echo();
  const b = await h.echo();
  await h.attached(d, a.pid);
  await h.attached(d, b.pid);
  await set(sel(), 'consumer wide');
  const r = await set(sel({ pid: a.pid }), 'just a');
  assert.deepEqual(r.results.map((x) => x.process.pid), [a.pid]);
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await a.line(/payload=just a$/, { out: true });
  // A consumer-wide change now skips a: its own config is more specific.
  const r2 = await set(sel(), 'consumer wide 2');
  assert.ok(!r2.results.some((x) => x.process.pid === a.pid));
  assert.ok(r2.results.some((x) => x.process.pid === b.pid && x.status === 'PUBLISH_STATUS_APPLIED'));
  await b.line(/payload=consumer wide 2$/, { out: true });
  const sa = await h.call(c, 'ReadState', { process: { pid: a.pid } });
  assert.equal(sa.ackedGeneration, r.results[0].generation);
});

test('setting the same selector again replaces it; overlapping ones of one precedence are refused', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const r1 = await set(sel({ pid: e.pid }), 'v1');
  const r2 = await set(sel({ pid: e.pid }), 'v2');
  assert.ok(Number(r2.config.revision) > Number(r1.config.revision));
  const list = await h.call(c, 'ListDesiredConfigs', {});
  assert.equal(list.configs.filter((x) => x.selector.pid === e.pid).length, 1);
  // The same pid, narrowed by a pod: still pid precedence, and it could
  // match the same process.
  const err = await h.code(set(sel({ pid: e.pid, podUid: '0b1c2d3e-0000-4000-8000-000000000001' }), 'x'));
  assert.equal(err, 'ALREADY_EXISTS');
});

test('bad desired configs are INVALID_ARGUMENT', async () => {
  assert.equal(await h.code(set({ consumer: h.CONSUMER }, 'x')), 'INVALID_ARGUMENT'); // no version
  assert.equal(await h.code(set({ schemaVersion: 1 }, 'x')), 'INVALID_ARGUMENT'); // no consumer
  assert.equal(await h.code(set(sel(), '')), 'INVALID_ARGUMENT'); // empty
  assert.equal(await h.code(set(sel({ podUid: 'NOT-HEX' }), 'x')), 'INVALID_ARGUMENT');
  // Hex, but no pod's UID: it would match nothing, silently.
  assert.equal(await h.code(set(sel({ podUid: '0b1c2d3e' }), 'x')), 'INVALID_ARGUMENT');
  assert.equal(await h.code(h.call(c, 'SetDesiredConfig', {})), 'INVALID_ARGUMENT');
});

test('a pod UID in capitals is the pod of that UID, kept as the API writes it', async () => {
  const upper = '0B1C2D3E-0000-4000-8000-0000000000C1';
  const r = await set(sel({ podUid: upper }), 'x');
  assert.equal(r.config.selector.podUid, upper.toLowerCase());
  const list = await h.call(c, 'ListDesiredConfigs', {});
  assert.equal(list.configs.filter((x) => x.selector.podUid === upper.toLowerCase()).length, 1);
  await h.call(c, 'DeleteDesiredConfig', { selector: sel({ podUid: upper }) });
  assert.equal((await h.call(c, 'ListDesiredConfigs', {})).configs.filter((x) => x.selector.podUid).length, 0);
});

test('a config an older daemon stored with an unchecked pod UID still loads, and can be deleted as written', async () => {
  const consumer = `${h.CONSUMER}v`.slice(0, 31);
  const dir = h.scratch('procctl-v0-');
  fs.mkdirSync(path.join(dir, 'state'), { mode: 0o700 });
  // Format 0 (desired.pb): a serialized ListDesiredConfigsResponse.
  const ser = h.api.NodeService.service.ListDesiredConfigs.responseSerialize;
  const old = { consumer, schemaVersion: 1, podUid: 'deadbeef' };
  fs.writeFileSync(path.join(dir, 'state', 'desired.pb'),
    ser({ revision: 1, configs: [{ selector: old, payload: Buffer.from('old'), revision: 1 }] }));
  const od = await new h.Daemon({ dir, consumers: consumer }).ready();
  const oc = od.client();
  try {
    const list = async () => (await h.call(oc, 'ListDesiredConfigs', {})).configs.map((x) => x.selector.podUid);
    assert.deepEqual(await list(), ['deadbeef']);
    // Not a selector to set, nor to delete anything but that one by.
    assert.equal(await h.code(h.call(oc, 'SetDesiredConfig', { config: { selector: old, payload: Buffer.from('x') } })),
      'INVALID_ARGUMENT');
    assert.equal(await h.code(h.call(oc, 'DeleteDesiredConfig', { selector: { ...old, podUid: 'deadbee0' } })),
      'INVALID_ARGUMENT');
    await h.call(oc, 'DeleteDesiredConfig', { selector: old });
    assert.deepEqual(await list(), []);
  } finally {
    oc.close();
    await od.stop();
  }
});

test('ListDesiredConfigs: most specific first; DeleteDesiredConfig forgets one', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  await set(sel(), 'wide');
  await set(sel({ pid: e.pid }), 'narrow');
  let list = (await h.call(c, 'ListDesiredConfigs', {})).configs;
  const levels = list.map((x) => (x.selector.pid ? 3 : x.selector.containerId ? 2 : x.selector.podUid ? 1 : 0));
  assert.deepEqual(levels, [...levels].sort((a, b) => b - a));
  await h.call(c, 'DeleteDesiredConfig', { selector: sel({ pid: e.pid }) });
  list = (await h.call(c, 'ListDesiredConfigs', {})).configs;
  assert.ok(!list.some((x) => x.selector.pid === e.pid));
  assert.equal(await h.code(h.call(c, 'DeleteDesiredConfig', { selector: sel({ pid: e.pid }) })), 'NOT_FOUND');
  // What the process holds stays.
  const st = await h.call(c, 'ReadState', { process: { pid: e.pid } });
  assert.match(st.data.toString(), /mode=config$/);
});

test('kept on the host: a successor daemon has the same configs and gives them to new processes', async () => {
  const dd = await new h.Daemon({ consumers: `${h.CONSUMER}p` }).ready();
  const cc = dd.client();
  const s2 = { consumer: `${h.CONSUMER}p`, schemaVersion: 1 };
  await h.call(cc, 'SetDesiredConfig', { config: { selector: s2, payload: Buffer.from('persisted') } });
  const before = (await h.call(cc, 'ListDesiredConfigs', {})).configs;
  cc.close();
  await dd.stop();
  const d2 = await new h.Daemon({ dir: dd.dir, consumers: `${h.CONSUMER}p` }).ready();
  const c2 = d2.client();
  assert.deepEqual((await h.call(c2, 'ListDesiredConfigs', {})).configs, before);
  const e = await h.echo(`${h.CONSUMER}p`);
  await e.line(/payload=persisted$/, { out: true });
  c2.close();
  await d2.stop();
  // A damaged store: set aside, named in one warning, and the daemon serves.
  const store = path.join(dd.dir, 'state', 'desired.store');
  fs.writeFileSync(store, Buffer.from('PCDSTORE\x01'));
  const d3 = await new h.Daemon({ dir: dd.dir, consumers: `${h.CONSUMER}p` }).ready();
  await d3.line(/event=desired_set_aside file=\S+desired\.store\.bad-\d+ reason="[^"]*corrupt/);
  const c3 = d3.client();
  assert.deepEqual((await h.call(c3, 'ListDesiredConfigs', {})).configs, []);
  const aside = fs.readdirSync(path.join(dd.dir, 'state')).filter((f) => /^desired\.store\.bad-\d+$/.test(f));
  assert.equal(aside.length, 1);
  assert.equal(fs.readFileSync(path.join(dd.dir, 'state', aside[0])).toString(), 'PCDSTORE\x01'); // kept, not deleted
  c3.close();
  await d3.stop();
});

test('desired_max and desired_bytes_max: a set beyond them is RESOURCE_EXHAUSTED, the store unchanged', async () => {
  const dl = await new h.Daemon({ consumers: `${h.CONSUMER}l`, args: ['--desired-max', '2', '--desired-bytes-max', '1048576'] })
    .ready();
  const cl = dl.client();
  const s = (extra = {}) => ({ consumer: `${h.CONSUMER}l`, schemaVersion: 1, ...extra });
  const put = (selector, payload) => h.call(cl, 'SetDesiredConfig', { config: { selector, payload } });
  await put(s(), Buffer.from('one'));
  await put(s({ podUid: '0b1c2d3e-0000-4000-8000-0000000000a1' }), Buffer.alloc(1048576 - 10));
  let err = await put(s({ podUid: '0b1c2d3e-0000-4000-8000-0000000000a2' }), Buffer.from('x')).catch((e) => e);
  assert.equal(h.grpc.status[err.code], 'RESOURCE_EXHAUSTED');
  assert.match(err.details, /desired_max/);
  err = await put(s(), Buffer.alloc(20)).catch((e) => e); // replacing: no new config, but 20 bytes over
  assert.equal(h.grpc.status[err.code], 'RESOURCE_EXHAUSTED');
  assert.match(err.details, /desired_bytes_max/);
  const kept = (await h.call(cl, 'ListDesiredConfigs', {})).configs;
  assert.equal(kept.length, 2);
  assert.equal(kept.find((x) => !x.selector.podUid).payload.toString(), 'one');
  cl.close();
  await dl.stop();
});

test('rollout: ListDesiredConfigs and /metrics count each config\'s processes applied, rejected, pending, superseded, not owned', async () => {
  const consumer = `${h.CONSUMER}.roll`;
  const conf = path.join(h.scratch('procctl-roll-'), 'procctl-node.conf');
  fs.writeFileSync(conf, `[desired roll]\nconsumer = ${consumer}\ndata = good\n`);
  const rd = await new h.Daemon({ consumers: consumer, args: ['--config', conf, '--http-listen', '127.0.0.1:0'] }).ready();
  const port = await rd.httpPort();
  const rc = rd.client();
  const es = [];
  try {
    for (let i = 0; i < 4; i++) es.push(await h.echo(consumer));
    const [e1, e2, e3, e4] = es;
    const series = async (desired, at) => {
      const v = {};
      for (const [key, state] of [['applied', 'applied'], ['rejected', 'rejected'], ['pending', 'pending'],
        ['superseded', 'superseded'], ['notOwned', 'not_owned']])
        v[key] = await h.metric(at, `procctl_desired_processes{desired="${desired}",state="${state}"}`);
      return v;
    };
    const counts = (applied, rejected, pending, superseded, notOwned = 0) =>
      ({ applied, rejected, pending, superseded, notOwned });
    const settle = async (desired, want, at = port) => {
      let got;
      await h.until(async () => JSON.stringify(got = await series(desired, at)) === JSON.stringify(want),
        { what: `desired="${desired}" at ${JSON.stringify(want)}` }).catch((e) => {
        throw new Error(`${e.message}: ${JSON.stringify(got)}`);
      });
    };

    // The section reaches all four as they attach, and each acks it.
    await settle('roll', counts(4, 0, 0, 0));
    assert.ok(Number.isNaN(await h.metric(port, 'procctl_desired_processes{desired="",state="applied"}')),
      'no config set through the API: no api series');

    // A Publish over one: that one holds the Publish's config now.
    const pub = await h.call(rc, 'Publish', { selector: { pid: e2.pid }, payload: Buffer.from('mine'), waitMs: 5000 });
    assert.equal(pub.results[0].status, 'PUBLISH_STATUS_APPLIED');
    await settle('roll', counts(3, 0, 0, 1));

    // A pid config the process refuses (echo refuses a control byte), and
    // one to a stopped process: both set through the API, summed as desired="".
    const r3 = await h.call(rc, 'SetDesiredConfig', { config: { selector: { consumer, schemaVersion: 1, pid: e3.pid },
      payload: Buffer.from('bad\u0002') }, waitMs: 5000 });
    assert.equal(r3.results[0].status, 'PUBLISH_STATUS_REJECTED');
    process.kill(e4.pid, 'SIGSTOP');
    try {
      await h.call(rc, 'SetDesiredConfig', { config: { selector: { consumer, schemaVersion: 1, pid: e4.pid },
        payload: Buffer.from('later') } });
      await settle('', counts(0, 1, 1, 0));
      await settle('roll', counts(1, 0, 0, 1)); // e3 and e4 have configs of their own now

      const list = (await h.call(rc, 'ListDesiredConfigs', {})).configs.filter((x) => x.selector.consumer === consumer);
      const by = Object.fromEntries(list.map((x) => [x.selector.pid || x.source, x.rollout]));
      assert.deepEqual(by, { roll: counts(1, 0, 0, 1), [e3.pid]: counts(0, 1, 0, 0), [e4.pid]: counts(0, 0, 1, 0) });
    } finally {
      process.kill(e4.pid, 'SIGCONT');
    }
    await settle('', counts(1, 1, 0, 0));
    await e4.line(/event=applied .*payload=later$/, { out: true });

    // e3's config deleted: the section is its config again, not written to it.
    await h.call(rc, 'DeleteDesiredConfig', { selector: { consumer, schemaVersion: 1, pid: e3.pid } });
    await settle('roll', counts(1, 0, 1, 1));
    // One over e4's capacity (echo takes 4096 bytes): never written, rejected.
    const big = await h.call(rc, 'SetDesiredConfig', { config: { selector: { consumer, schemaVersion: 1, pid: e4.pid },
      payload: Buffer.alloc(4097, 'x') }, waitMs: 5000 });
    assert.equal(big.results[0].status, 'PUBLISH_STATUS_TOO_LARGE');
    await settle('', counts(0, 1, 0, 0));
    await h.call(rc, 'DeleteDesiredConfig', { selector: { consumer, schemaVersion: 1, pid: e4.pid } });

    // Setting the section's config again (another revision) writes it to
    // every process it is the config for, the one published to included.
    fs.writeFileSync(conf, `[desired roll]\nconsumer = ${consumer}\ndata = better\n`); // followed: no signal
    for (const e of [e1, e2, e3, e4]) await e.line(/event=applied .*payload=better$/, { out: true });
    await settle('roll', counts(4, 0, 0, 0));

    // Another daemon with the same section, in another lock domain: the
    // regions are rd's, so it counts all four not owned, in both views.
    const od = await new h.Daemon({ consumers: consumer, args: ['--config', conf, '--http-listen', '127.0.0.1:0'] }).ready();
    const port2 = await od.httpPort();
    const oc = od.client();
    try {
      await settle('roll', counts(0, 0, 0, 0, 4), port2);
      const mine = (await h.call(oc, 'ListDesiredConfigs', {})).configs.find((x) => x.source === 'roll');
      assert.deepEqual(mine.rollout, counts(0, 0, 0, 0, 4));
      await settle('roll', counts(4, 0, 0, 0)); // rd's count is as it was
    } finally {
      oc.close();
      await od.stop();
    }
  } finally {
    rc.close();
    await Promise.all(es.map((e) => e.kill('SIGKILL')));
    await rd.stop();
  }
});

test('a successor counts what it finds: the desired config applied where it is, a Publish over it superseded', async () => {
  const consumer = `${h.CONSUMER}.succ`;
  const da = await new h.Daemon({ consumers: consumer }).ready();
  const ca = da.client();
  const es = [await h.echo(consumer), await h.echo(consumer)];
  for (const e of es) await h.attached(da, e.pid);
  const rollout = async (cl) => (await h.call(cl, 'ListDesiredConfigs', {})).configs.find((x) => x.selector.consumer === consumer).rollout;
  try {
    const r = await h.call(ca, 'SetDesiredConfig', { config: { selector: { consumer, schemaVersion: 1 },
      payload: Buffer.from('wanted') }, waitMs: 5000 });
    assert.deepEqual(r.results.map((x) => x.status), ['PUBLISH_STATUS_APPLIED', 'PUBLISH_STATUS_APPLIED']);
    const p = await h.call(ca, 'Publish', { selector: { pid: es[1].pid }, payload: Buffer.from('mine'), waitMs: 5000 });
    assert.equal(p.results[0].status, 'PUBLISH_STATUS_APPLIED');
    assert.deepEqual(await rollout(ca), { applied: 1, rejected: 0, pending: 0, superseded: 1, notOwned: 0 });
    ca.close();
    await da.stop();
    const db = await new h.Daemon({ dir: da.dir, consumers: consumer }).ready();
    const cb = db.client();
    try {
      for (const e of es) await h.attached(db, e.pid);
      await h.until(async () => JSON.stringify(await rollout(cb)) === JSON.stringify({ applied: 1, rejected: 0, pending: 0,
        superseded: 1, notOwned: 0 }), { what: `the successor to count 1 applied, 1 superseded (${JSON.stringify(await rollout(cb))})` });
      const lines = (e) => e.out.filter((l) => l.startsWith('event=applied')).map((l) => l.replace(/.* payload=/, ''));
      assert.deepEqual(lines(es[1]), ['wanted', 'mine'], 'the successor wrote nothing over the Publish');
    } finally {
      cb.close();
      await db.stop();
    }
  } finally {
    await Promise.all(es.map((e) => e.kill('SIGKILL')));
  }
});
