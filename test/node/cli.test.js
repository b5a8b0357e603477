// SPDX-License-Identifier: Apache-2.0
// cli.test.js - the procctl command line (clients/cli/procctl.c) against a
// real procctl-node, real echo and token clients: every subcommand in
// table and JSON output, the JSON equal field for field to what the gRPC
// API returns for the same thing, and the documented exit statuses
// (0 done, 1 failed, 2 bad usage, 3 written but not acked in time).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

const { CLI, run, said, exits } = require('./clirun');

// Token clients of this file only (echo clients have h.CONSUMER).
const CONSUMER_T = `tok${process.pid}`.slice(0, 31);
const GPU_ID = '00000000-0000-0000-0000-000000000000'; // token-client --id 0: 16 bytes, shown as a UUID

const scratch = h.scratch('procctl-cli-');
const nowhere = path.join(scratch, 'no', 'such.sock');
let d, c;
const tokens = []; // token clients
const watchers = []; // procctl watch runs left streaming

const cli = (args, opts = {}) => run(args, { sock: d.sock, ...opts });

// A procctl run that streams (watch): its stdout lines as they come.
function streaming(args) {
  const w = new h.Child(CLI, args, { env: { ...process.env, PROCCTL_SOCKET: d.sock } });
  watchers.push(w);
  return w;
}

// -o json output: one JSON document per line, every line one.
function docs(r) {
  assert.ok(r.stdout.endsWith('\n'), said(r));
  return r.stdout.slice(0, -1).split('\n').map((l) => {
    try {
      return JSON.parse(l);
    } catch (e) {
      return assert.fail(`not a JSON document: ${JSON.stringify(l)} (${e.message})\n${said(r)}`);
    }
  });
}

function doc(r) {
  const ds = docs(r);
  assert.equal(ds.length, 1, said(r));
  return ds[0];
}

// Table output: the header's column names, and each row's cells by name.
function table(r, skip = 0) {
  const lines = r.stdout.split('\n').filter(Boolean).slice(skip);
  assert.ok(lines.length >= 1, said(r));
  const header = lines[0].trim().split(/\s+/);
  const rows = lines.slice(1).map((l) => {
    const cells = l.trim().split(/\s+/);
    return Object.fromEntries(header.map((name, i) => [name, cells[i] ?? '']));
  });
  return { header, rows };
}

// A grpc-js object as the proto3 JSON mapping writes it: bytes in base64;
// without grpc-js's virtual field naming the member of a oneof.
const asJson = (v) => {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (Array.isArray(v)) return v.map(asJson);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asJson(x)]));
  return v;
};
const event = (e) => {
  const { event: _, ...rest } = asJson(e);
  return rest;
};
const snake = (s) => s.replace(/[A-Z]/g, (x) => `_${x.toLowerCase()}`);

const PROCESS_COLUMNS = ['PID', 'CONSUMER', 'VER', 'POD', 'CONTAINER', 'OWNER', 'GEN', 'ACKED', 'ACK', 'NAMESPACE/POD/CONTAINER'];
const RESULT_COLUMNS = ['PID', 'INSTANCE', 'GEN', 'STATUS', 'PSTATUS', 'ERROR'];

async function attachedEcho() {
  const e = await h.echo();
  await h.attached(d, e.pid);
  return e;
}

before(async () => {
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${CONSUMER_T}\nhold_ms = 200\n` +
    'resources = 00000000-0000-0000-0000-000000000000\n');
  d = await new h.Daemon({ consumers: `${h.CONSUMER},${CONSUMER_T}`, args: ['--config', conf] }).ready();
  c = d.client();
});

after(async () => {
  c.close();
  await Promise.all(watchers.map((w) => w.kill('SIGKILL')));
  await Promise.all(tokens.map((t) => t.kill('SIGKILL')));
  await h.killAll();
  await d.stop();
  fs.rmSync(d.dir, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});

test('version: exit 0 even without a daemon, in both outputs', async () => {
  const t = exits(await cli(['version'], { sock: nowhere }), 0);
  const m = t.stdout.match(/^procctl (\S+) \(API procctl\.v1\)\n$/);
  assert.ok(m, said(t));
  const j = doc(exits(await cli(['-o', 'json', 'version'], { sock: nowhere }), 0));
  assert.deepEqual(j, { version: m[1], api: 'procctl.v1' });
  // And with the daemon there, the same.
  assert.equal(exits(await cli(['version']), 0).stdout, t.stdout);
  assert.match(exits(await cli(['--help'], { sock: nowhere }), 0).stdout, /^usage: procctl /);
});

test('each command has its own --help (stdout, exit 0, no daemon needed); help COMMAND says the same', async () => {
  const list = exits(await cli(['help'], { sock: nowhere }), 0).stdout;
  const names = ['ps', 'get', 'state', 'publish', 'clear', 'watch', 'resources', 'desired', 'health', 'version'];
  for (const name of names) {
    assert.match(list, new RegExp(`^  ${name}\\b`, 'm'), `${name} is listed`);
    const r = exits(await cli([name, '--help'], { sock: nowhere }), 0);
    assert.match(r.stdout, new RegExp(`^usage: procctl \\[--socket PATH \\| --server HOST:PORT TLS\\] \\[--timeout DUR\\] \\[-o table\\|json\\] ${name}\\b`), said(r));
    assert.match(r.stdout, /\n\n\S.*\n/, 'a description follows the usage line');
    assert.equal(r.stderr, '');
    assert.equal(exits(await cli(['help', name], { sock: nowhere }), 0).stdout, r.stdout);
    assert.equal(exits(await cli([name, '-h'], { sock: nowhere }), 0).stdout, r.stdout);
  }
  // After other options too; but a value that reads "--help" is a value.
  assert.match(exits(await cli(['publish', '--pid', '1', '--help'], { sock: nowhere }), 0).stdout, /\] publish /);
  const v = exits(await cli(['publish', '--pid', '1', '--data', '--help'], { sock: nowhere }), 1);
  assert.match(v.stderr, /is procctl-node running/, said(v));
  const u = exits(await cli(['help', 'frob'], { sock: nowhere }), 2);
  assert.match(u.stderr, /frob: no such command/);
});

test('health: SERVING, exit 0, in both outputs; --socket wins over $PROCCTL_SOCKET', async () => {
  assert.equal(exits(await cli(['health']), 0).stdout, 'SERVING\n');
  const j = doc(exits(await cli(['-o', 'json', 'health']), 0));
  assert.deepEqual(j, { status: await h.health(d.addr) });
  assert.equal(exits(await cli(['--socket', d.sock, 'health'], { sock: nowhere }), 0).stdout, 'SERVING\n');
});

test('ps and get: the pid and consumer in their columns; JSON equal to ListProcesses and GetProcess', async () => {
  const e = await attachedEcho();

  const t = table(exits(await cli(['ps']), 0));
  assert.deepEqual(t.header, PROCESS_COLUMNS);
  const row = t.rows.find((x) => x.PID === String(e.pid));
  assert.ok(row, JSON.stringify(t.rows));
  assert.equal(row.CONSUMER, h.CONSUMER);
  assert.equal(row.VER, '1');
  assert.equal(row.POD, '-');
  assert.equal(row.CONTAINER, '-');
  assert.equal(row.OWNER, 'owned');
  assert.equal(row.GEN, '0');
  assert.equal(row.ACKED, '0');
  assert.equal(row.ACK, '-'); // nothing acked yet
  assert.equal(row['NAMESPACE/POD/CONTAINER'], '-'); // no kubernetes_api

  // ps -o json is ListProcesses, field for field; with a selector, the
  // filtered list (--consumer means schema 1 unless --schema says).
  assert.deepEqual(doc(exits(await cli(['-o', 'json', 'ps']), 0)), asJson(await h.call(c, 'ListProcesses', {})));
  const mine = doc(exits(await cli(['-o', 'json', 'ps', '--consumer', h.CONSUMER]), 0));
  assert.deepEqual(mine, asJson(await h.call(c, 'ListProcesses', { filter: { consumer: h.CONSUMER, schemaVersion: 1 } })));
  assert.ok(mine.processes.some((p) => p.ref.pid === e.pid));
  // The global options after the command are taken as well.
  assert.deepEqual(doc(exits(await cli(['ps', '--consumer', h.CONSUMER, '-o', 'json', '--timeout', '5s']), 0)), mine);
  assert.deepEqual(doc(exits(await cli(['-o', 'json', 'ps', '--consumer', h.CONSUMER, '--schema', '2']), 0)),
    { processes: [] });
  const one = doc(exits(await cli(['-o', 'json', 'ps', '--pid', String(e.pid)]), 0));
  assert.deepEqual(one.processes.map((p) => p.ref.pid), [e.pid]);
  // A table with nothing in it is its header alone.
  const empty = table(exits(await cli(['ps', '--consumer', 'nosuch']), 0));
  assert.deepEqual(empty.header, PROCESS_COLUMNS);
  assert.equal(empty.rows.length, 0);

  const g = table(exits(await cli(['get', String(e.pid)]), 0));
  assert.deepEqual(g.header, PROCESS_COLUMNS);
  assert.equal(g.rows.length, 1);
  assert.equal(g.rows[0].PID, String(e.pid));
  assert.equal(g.rows[0].CONSUMER, h.CONSUMER);
  assert.deepEqual(doc(exits(await cli(['-o', 'json', 'get', String(e.pid)]), 0)),
    asJson(await h.call(c, 'GetProcess', { process: { pid: e.pid } })));
});

test('state: the ack and the status bytes; JSON equal to ReadState, bytes in base64', async () => {
  const e = await attachedEcho();
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('stated'), waitMs: 5000 });
  const gen = r.results[0].generation;
  const t = exits(await cli(['state', String(e.pid)]), 0);
  assert.match(t.stdout, new RegExp(`^acked: +${gen} APPLIED \\(status 0\\)$`, 'm'), said(t));
  assert.equal(exits(await cli(['state', '--pid', String(e.pid)]), 0).stdout, t.stdout); // as the selectors take it
  assert.match(t.stdout, new RegExp(`^data: +applied=${gen} .*mode=config$`, 'm'), said(t));
  const j = doc(exits(await cli(['-o', 'json', 'state', String(e.pid)]), 0));
  const st = await h.call(c, 'ReadState', { process: { pid: e.pid } });
  assert.deepEqual(j, asJson(st));
  assert.equal(Buffer.from(j.data, 'base64').toString(), st.data.toString());
});

test('publish --pid with --data, --file and - (stdin), --wait: APPLIED rows, the echo client has the payload', async () => {
  const e = await attachedEcho();
  const file = path.join(scratch, 'config');
  const sources = [
    [['--data', 'from data'], '', 'from data'],
    [['--file', file], '', 'from file'],
    [['-'], 'from stdin', 'from stdin'],
  ];
  fs.writeFileSync(file, 'from file');
  for (const [data, input, payload] of sources) {
    const r = exits(await cli(['publish', '--pid', String(e.pid), ...data, '--wait'], { input }), 0);
    const t = table(r);
    assert.deepEqual(t.header, RESULT_COLUMNS);
    assert.equal(t.rows.length, 1, said(r));
    const row = t.rows[0];
    assert.equal(row.PID, String(e.pid));
    assert.equal(row.STATUS, 'APPLIED');
    assert.equal(row.PSTATUS, '-');
    assert.equal(row.ERROR, '');
    const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
    assert.equal(row.INSTANCE, p.ref.instanceId);
    assert.equal(row.GEN, p.ackedGeneration);
    await e.line(new RegExp(`event=applied gen=${row.GEN} .*payload=${payload}$`), { out: true });
  }
  // -o json: the PublishResponse; each result equal to WaitAck's for it.
  fs.writeFileSync(file, 'json file');
  for (const [data, input, payload] of [[['--data', 'json data'], '', 'json data'], [['--file', file], '', 'json file'],
    [['-'], 'json stdin', 'json stdin']]) {
    const j = doc(exits(await cli(['-o', 'json', 'publish', '--pid', String(e.pid), ...data, '--wait'], { input }), 0));
    assert.equal(j.results.length, 1);
    const res = j.results[0];
    assert.equal(res.status, 'PUBLISH_STATUS_APPLIED');
    assert.equal(res.process.pid, e.pid);
    const w = await h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: res.generation, waitMs: 5000 });
    assert.deepEqual(res, asJson(w.result));
    await e.line(new RegExp(`event=applied gen=${res.generation} .*payload=${payload}$`), { out: true });
  }
  // Without --wait: written, not waited for: WRITTEN, and exit 0.
  const nw = table(exits(await cli(['publish', '--pid', String(e.pid), '--data', 'no wait']), 0));
  assert.equal(nw.rows[0].STATUS, 'WRITTEN');
  await e.line(new RegExp(`event=applied gen=${nw.rows[0].GEN} .*payload=no wait$`), { out: true });
});

test('publish --consumer: schema 1 by default, every echo client of the consumer', async () => {
  const es = [await attachedEcho(), await attachedEcho()];
  const r = exits(await cli(['publish', '--consumer', h.CONSUMER, '--data', 'to all', '--wait']), 0);
  const t = table(r);
  assert.deepEqual(t.header, RESULT_COLUMNS);
  for (const e of es) {
    const row = t.rows.find((x) => x.PID === String(e.pid));
    assert.ok(row, said(r));
    assert.equal(row.STATUS, 'APPLIED');
    await e.line(new RegExp(`event=applied gen=${row.GEN} .*payload=to all$`), { out: true });
  }
  assert.ok(t.rows.every((x) => x.STATUS === 'APPLIED'), said(r));
  const pids = t.rows.map((x) => Number(x.PID));
  assert.deepEqual(pids, [...pids].sort((a, b) => a - b));

  const j = doc(exits(await cli(['-o', 'json', 'publish', '--consumer', h.CONSUMER, '-', '--wait'],
    { input: 'to all json' }), 0));
  for (const e of es) {
    const res = j.results.find((x) => x.process.pid === e.pid);
    assert.equal(res.status, 'PUBLISH_STATUS_APPLIED');
    await e.line(new RegExp(`event=applied gen=${res.generation} .*payload=to all json$`), { out: true });
  }
  // Another schema matches none of them: no rows, and with --allow-none
  // not an error (without it, exit 4: below).
  const none = table(exits(await cli(['publish', '--consumer', h.CONSUMER, '--schema', '2', '--data', 'x', '--wait',
    '--allow-none']), 0));
  assert.deepEqual(none.header, RESULT_COLUMNS);
  assert.equal(none.rows.length, 0);
  assert.deepEqual(doc(exits(await cli(['-o', 'json', 'publish', '--consumer', 'nosuch', '--data', 'x', '--allow-none']), 0)),
    { results: [] });
});

test('clear --wait: APPLIED, and the echo client falls back to its defaults', async () => {
  const e = await attachedEcho();
  exits(await cli(['publish', '--pid', String(e.pid), '--data', 'to clear', '--wait']), 0);
  const t = table(exits(await cli(['clear', '--pid', String(e.pid), '--wait']), 0));
  assert.deepEqual(t.header, RESULT_COLUMNS);
  assert.equal(t.rows.length, 1);
  assert.equal(t.rows[0].PID, String(e.pid));
  assert.equal(t.rows[0].STATUS, 'APPLIED');
  await e.line(new RegExp(`event=cleared gen=${t.rows[0].GEN}$`), { out: true });
  assert.match((await h.call(c, 'ReadState', { process: { pid: e.pid } })).data.toString(), /mode=defaults$/);

  exits(await cli(['publish', '--pid', String(e.pid), '--data', 'to clear again', '--wait']), 0);
  const j = doc(exits(await cli(['-o', 'json', 'clear', '--consumer', h.CONSUMER, '--wait']), 0));
  const res = j.results.find((x) => x.process.pid === e.pid);
  assert.equal(res.status, 'PUBLISH_STATUS_APPLIED');
  const w = await h.call(c, 'WaitAck', { process: { pid: e.pid }, generation: res.generation, waitMs: 5000 });
  assert.deepEqual(res, asJson(w.result));
  await e.line(new RegExp(`event=cleared gen=${res.generation}$`), { out: true });
});

test('watch: a snapshot, then events as they come, one JSON document per line with -o json', async () => {
  const e = await attachedEcho();
  const w = streaming(['-o', 'json', 'watch', '--pid', String(e.pid)]);
  const first = JSON.parse(await w.line(/^/, { out: true }));
  assert.equal(first.snapshot.processes.length, 1);
  assert.deepEqual(first.snapshot.processes[0], asJson((await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process));
  assert.match(first.resumeToken, /^[0-9a-f]{16}\.\d+$/);
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('watched'), waitMs: 5000 });
  const gen = r.results[0].generation;
  await h.until(() => w.out.some((l) => /"acked"/.test(l)), { what: 'an acked event from procctl watch' });
  const evs = w.out.map((l) => {
    try {
      return JSON.parse(l);
    } catch (err) {
      return assert.fail(`not a JSON document: ${JSON.stringify(l)}`);
    }
  });
  const ack = evs.find((x) => x.acked);
  assert.equal(ack.acked.process.pid, e.pid);
  assert.equal(ack.acked.generation, gen);
  assert.equal(ack.acked.result, 'ACK_RESULT_APPLIED');
  for (let i = 1; i < evs.length; i++) assert.ok(Number(evs[i].sequence) > Number(evs[i - 1].sequence));
  assert.equal(w.exit, null); // still watching
  await w.kill('SIGTERM');

  // Table, --count: it ends by itself after N events.
  const t = streaming(['watch', '--consumer', h.CONSUMER, '--count', '2']);
  const snap = await t.line(/snapshot/, { out: true });
  assert.match(snap, /^\d+ +snapshot +processes=\d+ token=[0-9a-f]{16}\.\d+$/);
  const n = await h.echo();
  const ex = await t.exited;
  assert.deepEqual(ex, { code: 0, sig: null }, t.lines.join('\n'));
  assert.equal(t.out.length, 2, t.out.join('\n'));
  assert.match(t.out[1], new RegExp(`^\\d+ +attached +pid=${n.pid} consumer=${h.CONSUMER} token=[0-9a-f]{16}\\.\\d+$`));
});

test('watch --from TOKEN: what followed the token, without a snapshot, as WatchEvents resumed there', async () => {
  const e = await attachedEcho();
  const pid = String(e.pid);
  const snap = doc(exits(await cli(['-o', 'json', 'watch', '--pid', pid, '--count', '1']), 0));
  assert.ok(snap.snapshot, JSON.stringify(snap));
  const token = snap.resumeToken;
  const t1 = exits(await cli(['watch', '--pid', pid, '--count', '1']), 0);
  assert.match(t1.stdout, /^\d+ +snapshot +processes=1 token=[0-9a-f]{16}\.\d+\n$/, said(t1));

  // Three acks after the token.
  const gens = [];
  for (const x of ['r1', 'r2', 'r3']) {
    gens.push(doc(exits(await cli(['-o', 'json', 'publish', '--pid', pid, '--data', x, '--wait']), 0)).results[0].generation);
  }
  // What the API gives from that token: the CLI must print the same.
  const w = h.watch(c, { filter: { pid: e.pid }, resumeToken: token });
  const acks = () => w.events.filter((x) => x.event === 'acked');
  await h.until(() => acks().length >= 3, { what: 'three acks from WatchEvents' });
  w.stream.cancel();
  const k = w.events.indexOf(acks()[2]) + 1;
  const want = w.events.slice(0, k);
  assert.deepEqual(acks().map((x) => x.acked.generation), gens);

  const j = docs(exits(await cli(['-o', 'json', 'watch', '--pid', pid, '--from', token, '--count', String(k)]), 0));
  assert.equal(j.length, k);
  assert.ok(!j.some((x) => x.snapshot), JSON.stringify(j));
  assert.ok(Number(j[0].sequence) > Number(snap.sequence));
  assert.deepEqual(j, want.map(event));

  const t = exits(await cli(['watch', '--pid', pid, '--from', token, '--count', String(k)]), 0);
  const lines = t.stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, k, said(t));
  lines.forEach((l, i) => {
    const m = l.match(/^(\d+) +(\S+) .*token=(\S+)$/);
    assert.ok(m, l);
    assert.equal(m[1], want[i].sequence);
    assert.equal(m[2], snake(want[i].event));
    assert.equal(m[3], want[i].resumeToken);
    if (want[i].event === 'acked') {
      assert.match(l, new RegExp(` pid=${pid} generation=${want[i].acked.generation} result=APPLIED `));
    }
  });

  // A token the daemon does not know: OUT_OF_RANGE, exit 1.
  const bad = exits(await cli(['watch', '--from', 'nonsense', '--count', '1']), 1);
  assert.match(bad.stderr, /OUT_OF_RANGE/);
  assert.equal(bad.stdout, '');
});

test('watch: the daemon stopping ends it, exit 1 with the status', async () => {
  const d2 = await new h.Daemon({ consumers: `${h.CONSUMER}w` }).ready();
  const w = new h.Child(CLI, ['--socket', d2.sock, 'watch']);
  watchers.push(w);
  await w.line(/snapshot/, { out: true });
  await d2.stop();
  fs.rmSync(d2.dir, { recursive: true, force: true });
  const ex = await w.exited;
  assert.deepEqual(ex, { code: 1, sig: null }, w.lines.join('\n'));
  assert.ok(w.lines.some((l) => /^procctl: UNAVAILABLE: /.test(l)), w.lines.join('\n'));
});

test('desired set | ls | rm, in both outputs; ls -o json equal to ListDesiredConfigs', async () => {
  const e = await attachedEcho();
  const del = () => h.call(c, 'DeleteDesiredConfig', { selector: { consumer: h.CONSUMER, schemaVersion: 1 } }).catch(() => {});
  try {
    const s = exits(await cli(['desired', 'set', '--consumer', h.CONSUMER, '--data', 'want', '--wait']), 0);
    const rev = s.stdout.match(/^revision (\d+)\n/);
    assert.ok(rev, said(s));
    const st = table(s, 1);
    assert.deepEqual(st.header, RESULT_COLUMNS);
    const row = st.rows.find((x) => x.PID === String(e.pid));
    assert.equal(row.STATUS, 'APPLIED');
    await e.line(new RegExp(`event=applied gen=${row.GEN} .*payload=want$`), { out: true });

    const l = table(exits(await cli(['desired', 'ls']), 0));
    assert.deepEqual(l.header, ['REVISION', 'CONSUMER', 'VER', 'PID', 'POD', 'CONTAINER', 'BYTES', 'SOURCE', 'APPLIED',
      'REJECTED', 'PENDING', 'SUPERSEDED', 'NOT_OWNED', 'NAMESPACE', 'SELECTOR']);
    const mine = l.rows.find((x) => x.CONSUMER === h.CONSUMER);
    // Every process it was written to acked it (--wait): each is one APPLIED.
    const applied = String(st.rows.filter((x) => x.STATUS === 'APPLIED').length);
    assert.deepEqual(mine, { REVISION: rev[1], CONSUMER: h.CONSUMER, VER: '1', PID: '-', POD: '-', CONTAINER: '-', BYTES: '4',
      SOURCE: 'api', APPLIED: applied, REJECTED: '0', PENDING: '0', SUPERSEDED: '0', NOT_OWNED: '0', NAMESPACE: '-', SELECTOR: '-' });
    assert.equal(st.rows.length, Number(applied), said(s));
    assert.deepEqual(doc(exits(await cli(['-o', 'json', 'desired', 'ls']), 0)),
      asJson(await h.call(c, 'ListDesiredConfigs', {})));

    // Set again: replaced, a later revision; the JSON is the response.
    const j = doc(exits(await cli(['-o', 'json', 'desired', 'set', '--consumer', h.CONSUMER, '-', '--wait'],
      { input: 'want more' }), 0));
    assert.ok(Number(j.config.revision) > Number(rev[1]));
    assert.equal(Buffer.from(j.config.payload, 'base64').toString(), 'want more');
    assert.deepEqual(j.config.selector, { pid: 0, consumer: h.CONSUMER, schemaVersion: 1, podUid: '', containerId: '',
      namespace: '', labelSelector: '' });
    const res = j.results.find((x) => x.process.pid === e.pid);
    assert.equal(res.status, 'PUBLISH_STATUS_APPLIED');
    await e.line(new RegExp(`event=applied gen=${res.generation} .*payload=want more$`), { out: true });
    const listed = asJson(await h.call(c, 'ListDesiredConfigs', {}));
    // As set, and with how far it got (SetDesiredConfig answers the rows instead).
    const rollout = { applied: j.results.length, rejected: 0, pending: 0, superseded: 0, notOwned: 0 };
    assert.ok(j.results.every((x) => x.status === 'PUBLISH_STATUS_APPLIED'));
    assert.deepEqual(listed.configs.filter((x) => x.selector.consumer === h.CONSUMER), [{ ...j.config, rollout }]);

    // rm: what it removed, how far it had got, and that the processes
    // keep it (in JSON, the config with its rollout); again: NOT_FOUND.
    const rm = exits(await cli(['desired', 'rm', '--consumer', h.CONSUMER]), 0);
    const n = j.results.length;
    assert.equal(rm.stdout, `removed revision ${j.config.revision} (--consumer ${h.CONSUMER} --schema 1, 9 bytes)\n` +
      `it was the config of ${n} process${n === 1 ? '' : 'es'}: ${n} applied, 0 rejected, 0 pending, 0 superseded, ` +
      '0 not owned\nthose that hold it keep it until another config reaches them (--clear gives each what applies ' +
      'without it)\n', said(rm));
    assert.ok(!(await h.call(c, 'ListDesiredConfigs', {})).configs.some((x) => x.selector.consumer === h.CONSUMER));
    assert.equal((await h.call(c, 'ReadState', { process: { pid: e.pid } })).ackedGeneration, res.generation); // kept
    const again = exits(await cli(['desired', 'rm', '--consumer', h.CONSUMER]), 1);
    assert.match(again.stderr, /NOT_FOUND/);
    const once = doc(exits(await cli(['-o', 'json', 'desired', 'set', '--consumer', h.CONSUMER, '--data', 'once more']), 0));
    const jrm = doc(exits(await cli(['-o', 'json', 'desired', 'rm', '--consumer', h.CONSUMER]), 0));
    assert.deepEqual(jrm, { config: { ...once.config, rollout: { ...jrm.config.rollout } }, results: [] });
    assert.equal(jrm.config.revision, once.config.revision);
    // A desired config names a consumer: the daemon refuses a pid alone.
    const refused = exits(await cli(['desired', 'set', '--pid', String(e.pid), '--data', 'x']), 1);
    assert.match(refused.stderr, /INVALID_ARGUMENT/);
  } finally {
    await del();
  }
});

test('resources: the [arbiter gpu], then a token client holding it: its pid in the HOLDER column', async () => {
  const RES_COLUMNS = ['KIND', 'RESOURCE', 'HOLDER', 'HELD_S', 'BLOCKED_S', 'PENDING_S', 'HANDOFFS', 'WAITERS'];
  // Nobody wants it yet: nothing moves, the JSON is ListArbiters exactly.
  const j0 = doc(exits(await cli(['-o', 'json', 'resources']), 0));
  assert.deepEqual(j0, asJson(await h.call(c, 'ListArbiters', {})));
  assert.equal(j0.arbiters[0].kind, 'gpu');
  const t0 = table(exits(await cli(['resources']), 0));
  assert.deepEqual(t0.header, RES_COLUMNS);
  assert.deepEqual(t0.rows.map((x) => [x.KIND, x.RESOURCE, x.HOLDER]), [['gpu', GPU_ID, '0']]);

  const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', CONSUMER_T, '--kind', '1', '--id', '0',
    '--witness', path.join(scratch, 'witness')]);
  tokens.push(t);
  await t.line(/^event=started pid=\d+$/, { out: true });
  await h.attached(d, t.pid);
  const held = await h.until(async () => {
    const r = (await h.call(c, 'ListArbiters', {})).arbiters[0].resources[0];
    return r.holder.pid === t.pid && r;
  }, { what: `pid ${t.pid} to hold the gpu` });
  await t.line(/^event=acquired /, { out: true });

  for (const args of [['resources'], ['resources', 'gpu']]) {
    const r = table(exits(await cli(args), 0));
    assert.deepEqual(r.header, RES_COLUMNS);
    assert.equal(r.rows.length, 1);
    assert.equal(r.rows[0].KIND, 'gpu');
    assert.equal(r.rows[0].RESOURCE, GPU_ID);
    assert.equal(r.rows[0].HOLDER, String(t.pid));
    assert.equal(r.rows[0].WAITERS, '0');
  }
  const other = exits(await cli(['resources', 'fpga']), 1);
  assert.match(other.stderr, /^procctl: NOT_FOUND: /, said(other));

  // JSON: ListArbiters, but for the times, which move while it holds.
  const still = (l) => l.arbiters.map((a) => ({ ...a, resources: a.resources.map((x) => {
    const { heldNs: _1, holdNsTotal: _2, pendingNs: _3, pendingNsTotal: _4, blockedNsTotal: _5, ...rest } = x;
    return rest;
  }) }));
  const j = doc(exits(await cli(['-o', 'json', 'resources']), 0));
  assert.deepEqual(still(j), still(asJson(await h.call(c, 'ListArbiters', {}))));
  assert.equal(j.arbiters[0].resources[0].holder.pid, t.pid);
  assert.equal(j.arbiters[0].resources[0].grantId, held.grantId);

  // Its state block: the resource report, in both outputs.
  const grant = held.grantId; // 16 hex digits in the API, the CLI and the logs
  const s = exits(await cli(['state', String(t.pid)]), 0);
  assert.match(s.stdout, new RegExp(`^resource: +gpu:${GPU_ID} HOLDING wants grant=${grant} seen=\\d+$`, 'm'), said(s));
  await h.until(async () => {
    const sj = doc(exits(await cli(['-o', 'json', 'state', String(t.pid)]), 0));
    assert.deepEqual(sj, asJson(await h.call(c, 'ReadState', { process: { pid: t.pid } })));
    return true;
  }, { what: 'state -o json equal to ReadState' });
});

// A GPU PC sampling status (gpu/cupti/pcsampling_schema.h, 592 bytes):
// counts, then nfunctions and that many { samples, name[56] }.
function pcsStatus({ nfunctions, names, errors = 0n, lastCall = 0 }) {
  const b = Buffer.alloc(592);
  b.writeUInt32LE(0x32534350, 0);
  b.writeUInt32LE(1, 4);
  b.writeBigUInt64LE(3n, 8);
  b.writeBigUInt64LE(1500000000n, 16);
  b.writeBigUInt64LE(1200n, 24);
  b.writeBigUInt64LE(errors, 48);
  b.writeInt32LE(errors ? -7 : 0, 56);
  b.writeUInt32LE(lastCall, 60);
  b.writeUInt32LE(nfunctions, 76);
  names.forEach((n, i) => {
    b.writeBigUInt64LE(BigInt(800 - 100 * i), 80 + 64 * i);
    n.copy(b, 80 + 64 * i + 8, 0, 56);
  });
  return b;
}

test('state: GPU PC sampling\'s status decoded; forged by a hostile process, bounded and escaped', async () => {
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.write(`init ${h.CONSUMER}\n`);
  await p.line(/^ok /, { out: true });
  await h.attached(d, p.pid);
  const set = async (b) => {
    p.proc.stdin.write(`statehex ${b.toString('hex')}\n`);
    await p.line(/^ok$/, { out: true });
    p.out.length = 0;
  };
  await set(pcsStatus({ nfunctions: 2, names: [Buffer.from('_Z4busyPyj'), Buffer.from('busy_tail')] }));
  let r = exits(await cli(['state', String(p.pid)]), 0);
  assert.match(r.stdout, /^sampling: {2}turns=3 held=1\.500s samples=1200 dropped=0 other=0 gpus=1 period=default\n/m, said(r));
  assert.match(r.stdout, /^cupti: {5}errors=0\nfunction: {2}800 _Z4busyPyj\nfunction: {2}700 busy_tail\n$/m, said(r));
  // Every count at its worst: 2^32-1 functions (8 shown), names with no
  // NUL, a newline, a terminal escape, a space; a call number past the last.
  const names = [Buffer.alloc(56, 'A'), Buffer.from('x\n\x1b[2Jy'), Buffer.from('sp ace\\')];
  for (let i = 3; i < 8; i++) names.push(Buffer.alloc(56, 0xff));
  await set(pcsStatus({ nfunctions: 0xffffffff, names, errors: 5n, lastCall: 99 }));
  r = exits(await cli(['state', String(p.pid)]), 0);
  const fn = r.stdout.split('\n').filter((l) => l.startsWith('function:'));
  assert.equal(fn.length, 8, said(r));
  assert.equal(fn[0], `function:  800 ${'A'.repeat(56)}`);
  assert.equal(fn[1], 'function:  700 x\\x0a\\x1b[2Jy');
  assert.equal(fn[2], 'function:  600 sp\\x20ace\\x5c');
  assert.equal(fn[7], `function:  100 ${'\\xff'.repeat(56)}`);
  assert.match(r.stdout, /^cupti: {5}errors=5 last=-7 in \?$/m);
  assert.doesNotMatch(r.stdout, /\x1b/);
  // The same bytes one short: not the schema, shown as bytes.
  await set(pcsStatus({ nfunctions: 1, names: [Buffer.from('busy')] }).subarray(0, 591));
  r = exits(await cli(['state', String(p.pid)]), 0);
  assert.match(r.stdout, /^data: {6}591 bytes \(not text/m, said(r));
  await p.kill('SIGKILL');
});

test('resources KIND: that kind alone (GetArbiter), NOT_FOUND for a kind without an arbiter', async () => {
  exits(await cli(['-o', 'json', 'resources', 'fpga']), 1);
  const g = doc(exits(await cli(['-o', 'json', 'resources', 'gpu']), 0));
  assert.equal(g.arbiter.kind, 'gpu');
  assert.equal(g.arbiter.holdNs, (await h.call(c, 'GetArbiter', { kind: 'gpu' })).arbiter.holdNs);
});

test('no daemon: exit 1, and a message naming the socket', async () => {
  for (const args of [['ps'], ['health'], ['get', '1'], ['watch'], ['publish', '--pid', '1', '--data', 'x']]) {
    for (const r of [await cli(args, { sock: nowhere }), await cli(['--socket', nowhere, ...args], { sock: d.sock }),
      await cli([...args, '--socket', nowhere], { sock: d.sock })]) {
      exits(r, 1);
      assert.equal(r.stdout, '');
      assert.ok(r.stderr.includes(nowhere), said(r));
      assert.match(r.stderr, /No such file or directory/);
    }
  }
  // A path there, but nobody serving on it: UNAVAILABLE.
  const dead = path.join(scratch, 'dead.sock');
  fs.writeFileSync(dead, '');
  const r = exits(await cli(['health'], { sock: dead }), 1);
  assert.match(r.stderr, /^procctl: UNAVAILABLE: /, said(r));
});

test('unknown pid: NOT_FOUND; exit 1 for get and state, 4 (no process matched) for a --pid selector', async () => {
  const pid = String(0x3fffffff);
  for (const [args, code] of [[['get', pid], 1], [['state', pid], 1], [['publish', '--pid', pid, '--data', 'x'], 4],
    [['clear', '--pid', pid], 4], [['-o', 'json', 'get', pid], 1],
    [['-o', 'json', 'publish', '--pid', pid, '--data', 'x', '--wait'], 4], [['clear', '--pid', pid, '--allow-none'], 0]]) {
    const r = exits(await cli(args), code);
    assert.equal(r.stdout, '', said(r));
    assert.match(r.stderr, /^procctl: NOT_FOUND: /, said(r));
  }
});

test('bad usage: exit 2, nothing on stdout', async () => {
  const e = await attachedEcho();
  const pid = String(e.pid);
  const file = path.join(scratch, 'usage');
  fs.writeFileSync(file, 'x');
  const cases = [
    [], ['frob'], ['--bogus', 'ps'], ['-o'], ['-o', 'yaml', 'ps'], ['-o', 'JSON', 'ps'], ['--timeout', 'soon', 'ps'],
    ['--timeout', '5d', 'ps'], ['--timeout', '-1', 'ps'],
    ['publish', '--data', 'x'], ['clear'], ['publish', '--wait', '--data', 'x'],
    ['desired'], ['desired', 'frob'], ['desired', 'set', '--data', 'x'], ['desired', 'rm'],
    ['ps', '--pid', 'abc'], ['ps', '--pid', '0'], ['ps', '--pid', '-3'], ['ps', '--pid', '12x'], ['ps', '--pid'],
    ['ps', '--schema', '0'], ['ps', '--bogus', 'x'], ['publish', '--pid', 'abc', '--data', 'x'],
    ['get'], ['get', 'abc'], ['get', '0'], ['get', '1', '2'], ['state'], ['state', 'x'],
    ['publish', '--pid', pid], ['publish', '--pid', pid, '--data', 'a', '--file', file],
    ['publish', '--pid', pid, '--data', 'a', '-'], ['desired', 'set', '--consumer', h.CONSUMER],
    ['watch', '--count', '0'], ['watch', '--count', 'many'], ['resources', 'gpu', 'fpga'],
  ];
  for (const args of cases) {
    const r = exits(await cli(args), 2);
    assert.equal(r.stdout, '', said(r));
    assert.notEqual(r.stderr, '', said(r));
  }
  // None of them wrote anything.
  const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
  assert.equal(p.generation, '0');
});

test('bad usage is exit 2 without a daemon too', async () => {
  for (const args of [['frob'], ['ps', '--pid', 'abc'], ['get'], ['publish', '--data', 'x']]) {
    exits(await cli(args, { sock: nowhere }), 2);
  }
});

test('bad usage names the word at fault, in one line', async () => {
  const cases = [
    [['bogus'], /^procctl: bogus: no such command /],
    [['-o', 'yaml', 'ps'], /^procctl: -o: 'yaml' is not table or json\n$/],
    [['--timeout', 'abc', 'ps'], /^procctl: --timeout: 'abc' is not a duration /],
    [['--timeout'], /^procctl: --timeout: needs a value /],
    [['--bogus', 'ps'], /^procctl: --bogus: no such option /],
    [['ps', '--bogus'], /^procctl: --bogus: no such option /],
    [['ps', '-o', 'yaml'], /^procctl: -o: 'yaml' is not table or json\n$/],
    [['ps', '--timeout'], /^procctl: --timeout: needs a value /],
    [['ps', 'extra'], /^procctl: extra: not expected here /],
    [['ps', '--pid', 'abc'], /^procctl: --pid: 'abc' is not a pid /],
    [['ps', '--pid'], /^procctl: --pid: needs a value /],
    [['watch', '--count', 'many'], /^procctl: --count: 'many' is not a count /],
    [['desired', 'frob'], /^procctl: frob: not a desired command \(ls, set or rm\)/],
    [['help', 'frob'], /^procctl: frob: no such command /],
    [['--server', 'node-1', 'ps'], /^procctl: node-1: --server takes HOST:PORT /],
    [['--server', '::1:9443', 'ps'], /^procctl: ::1:9443: --server takes HOST:PORT \(an IPv6 address in brackets/],
    [['--server', '10.0.0.1:0', 'ps'], /^procctl: 10\.0\.0\.1:0: --server takes HOST:PORT /],
    [['--server', '10.0.0.1:9443', '--socket', 'x', 'ps'], /^procctl: --server: give one of --socket .* and --server /],
    [['--tls-ca', 'ca.crt', 'ps'], /^procctl: --tls-ca: goes with --server /],
    [['--plaintext', 'ps'], /^procctl: --plaintext: goes with --server /],
    [['--server', '10.0.0.1:9443', '--plaintext', '--tls-ca', 'ca.crt', 'ps'], /^procctl: --tls-ca: --plaintext is TCP without TLS/],
    [['--server', '10.0.0.1:9443', '--tls-cert', 'c.crt', 'ps'], /^procctl: --tls-cert: the client certificate takes both --tls-cert and --tls-key/],
    [['--server', '', 'ps'], /^procctl: --server: '' is not a value/],
    [['--timeout', '25h', 'ps'], /^procctl: --timeout: '25h' is not a duration .*1h; at most a day/],
    [['publish', '--consumer', 'echo', '--data', 'x', '--wait', '--timeout', '0'], /^procctl: --wait with --timeout 0 would wait for nothing/],
    [['desired', 'set', '--consumer', 'echo', '--data', 'x', '--wait', '--timeout', '0s'], /^procctl: --wait with --timeout 0 would wait for nothing/],
  ];
  for (const [args, re] of cases) {
    const r = exits(await cli(args, { sock: nowhere }), 2);
    assert.match(r.stderr, re, said(r));
    assert.equal(r.stderr.split('\n').length, 2, `one line: ${said(r)}`);
  }
});

test('--pid names one process: with any other selector option it is refused, nothing written (desired configs excepted)', async () => {
  const e = await attachedEcho();
  const pid = String(e.pid);
  for (const more of [['--consumer', h.CONSUMER], ['--schema', '1'], ['--pod', 'x'], ['--container', 'ab']]) {
    for (const args of [['publish', '--pid', pid, ...more, '--data', 'x'], ['clear', '--pid', pid, ...more],
      ['ps', ...more, '--pid', pid], ['watch', '--pid', pid, ...more]]) {
      const r = exits(await cli(args), 2);
      assert.match(r.stderr, /^procctl: --pid names one process: give it alone/, said(r));
    }
  }
  assert.equal((await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process.generation, '0');
});

test('a selector that matches no process: exit 4 naming it, unless --allow-none; a desired config is for those to come', async () => {
  await attachedEcho();
  const nobody = `nobody${process.pid}`.slice(0, 31);
  for (const args of [['publish', '--consumer', nobody, '--data', 'x', '--wait'], ['clear', '--consumer', nobody],
    ['publish', '--consumer', h.CONSUMER, '--schema', '2', '--data', 'x'],
    ['publish', '--consumer', h.CONSUMER, '--pod', '8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f', '--data', 'x']]) {
    const r = exits(await cli(args), 4);
    assert.equal(r.stdout, '', said(r));
    const sel = args.slice(1, args.indexOf('--data') > 0 ? args.indexOf('--data') : args.length)
      .join(' ').replace(/^(--consumer \S+)$/, '$1 --schema 1').replace(/^(--consumer \S+) --pod/, '$1 --schema 1 --pod');
    assert.equal(r.stderr, `procctl: no attached process matches ${sel} (--allow-none accepts that)\n`, said(r));
  }
  // -o json: the empty response still, and the same exit.
  assert.deepEqual(doc(exits(await cli(['-o', 'json', 'publish', '--consumer', nobody, '--data', 'x']), 4)), { results: [] });
  // Asked for: no error.
  const ok = exits(await cli(['publish', '--consumer', nobody, '--data', 'x', '--allow-none']), 0);
  assert.deepEqual(table(ok).rows, []);
  exits(await cli(['clear', '--consumer', nobody, '--allow-none', '--wait']), 0);
  // A desired config with no process now is fine: it says it waits for
  // them (desired.test.js shows them getting it).
  const pod = ['--consumer', h.CONSUMER, '--pod', '8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f'];
  const ds = exits(await cli(['desired', 'set', ...pod, '--data', 'later']), 0);
  assert.match(ds.stdout, new RegExp(`^revision \\d+\nno attached process matches --consumer ${h.CONSUMER} --schema 1 ` +
    '--pod 8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f now: the config applies to those that attach later\n$'), said(ds));
  exits(await cli(['desired', 'rm', ...pod]), 0);
});

test('rows: WRITTEN without --wait; REJECTED names the errno and what the process said; ids in hex as logged', async () => {
  const e = await attachedEcho();
  const pid = String(e.pid);
  const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
  assert.ok(d.lines.some((l) => l.includes(`event=attached pid=${pid} `) && l.includes(` instance=${p.ref.instanceId} `)),
    d.lines.join('\n'));
  // Refused: PSTATUS EINVAL, ERROR the errno and the echo client's status.
  const rej = exits(await cli(['publish', '--pid', pid, '--data', 'bad\u0001config', '--wait']), 1);
  const line = rej.stdout.split('\n')[1];
  assert.match(line, new RegExp(`^${pid} +${p.ref.instanceId} +\\d+ +REJECTED +EINVAL +EINVAL \\(Invalid argument\\): ` +
    'applied=0 .*error=not-text$'), said(rej));
  const sj = doc(exits(await cli(['-o', 'json', 'publish', '--pid', pid, '--data', 'bad\u0002', '--wait']), 1));
  assert.equal(sj.results[0].processStatus, -22);
  assert.equal(sj.results[0].process.instanceId, p.ref.instanceId);
  const st = exits(await cli(['state', pid]), 0);
  assert.match(st.stdout, /^acked: +\d+ REJECTED \(EINVAL\)$/m, said(st));
  // desired set without --wait: written, not waited for.
  const ds = exits(await cli(['desired', 'set', '--consumer', h.CONSUMER, '--pid', pid, '--data', 'mine']), 0);
  const t = table(ds, 1);
  assert.deepEqual(t.rows.map((x) => [x.PID, x.INSTANCE, x.STATUS, x.PSTATUS]), [[pid, p.ref.instanceId, 'WRITTEN', '-']]);
  await e.line(/event=applied .*payload=mine$/, { out: true });
  const ls = table(exits(await cli(['desired', 'ls']), 0));
  assert.ok(ls.rows.some((x) => x.PID === pid && x.SOURCE === 'api'), JSON.stringify(ls.rows));
  exits(await cli(['desired', 'rm', '--consumer', h.CONSUMER, '--pid', pid]), 0);
});

test('a DUR of nan or inf is bad usage; hours are a unit', async () => {
  for (const dur of ['nan', 'inf']) exits(await cli(['--timeout', dur, 'health']), 2);
  exits(await cli(['--timeout', '1h', 'health']), 0);
});

test('not acked in time: exit 3 and a PENDING row (SIGSTOPped echo client, --timeout 300ms)', async () => {
  const e = await attachedEcho();
  const pid = String(e.pid);
  process.kill(e.pid, 'SIGSTOP');
  let gen;
  try {
    const r = exits(await cli(['--timeout', '300ms', 'publish', '--pid', pid, '--data', 'stuck', '--wait']), 3);
    const t = table(r);
    assert.deepEqual(t.header, RESULT_COLUMNS);
    assert.equal(t.rows.length, 1);
    assert.equal(t.rows[0].PID, pid);
    assert.equal(t.rows[0].STATUS, 'PENDING');
    const j = doc(exits(await cli(['-o', 'json', '--timeout', '300ms', 'publish', '--pid', pid, '--data', 'stuck json',
      '--wait']), 3));
    assert.equal(j.results[0].status, 'PUBLISH_STATUS_PENDING');
    assert.equal(j.results[0].process.pid, e.pid);
    const cl = table(exits(await cli(['--timeout', '300ms', 'clear', '--pid', pid, '--wait']), 3));
    assert.equal(cl.rows[0].STATUS, 'PENDING');
    gen = cl.rows[0].GEN;
  } finally {
    process.kill(e.pid, 'SIGCONT');
  }
  // Continued, it acks the last one.
  await e.line(new RegExp(`event=cleared gen=${gen}$`), { out: true });
  await h.until(async () => (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process.ackedGeneration === gen,
    { what: `generation ${gen} acked` });
});

test('a refusal of the daemon: exit 1 with its status (empty payload, over the capacity)', async () => {
  const e = await attachedEcho();
  const cases = [
    [['publish', '--consumer', h.CONSUMER, '--data', ''], ''],
    [['publish', '--consumer', h.CONSUMER, '--data', '', '--wait'], ''],
    [['publish', '--pid', String(e.pid), '-'], ''],
    [['publish', '--pid', String(e.pid), '-'], 'A'.repeat(5000)],
    [['-o', 'json', 'publish', '--pid', String(e.pid), '--data', 'B'.repeat(4097)], ''],
  ];
  for (const [args, input] of cases) {
    const r = exits(await cli(args, { input }), 1);
    assert.equal(r.stdout, '', said(r));
    assert.match(r.stderr, /^procctl: INVALID_ARGUMENT: payload: /, said(r));
  }
  // A file that is not there: exit 1, nothing written.
  const r = exits(await cli(['publish', '--pid', String(e.pid), '--file', path.join(scratch, 'nofile')]), 1);
  assert.match(r.stderr, /No such file or directory/);
  assert.equal((await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process.generation, '0');
});
