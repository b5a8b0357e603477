// SPDX-License-Identifier: Apache-2.0
// firsthour.test.js - what a user touches first, as they would touch it:
// both command lines take options as every Unix tool does (--name=VALUE
// and --name VALUE, -- ending them); procctl waits for a daemon just
// started (health --wait), bounds a watch (--for, --timeout), says what
// desired rm removed and can take it back from its processes (--clear),
// and says what to do when it cannot reach the daemon; the API's
// selectors follow one rule, and a daemon that does not write a region
// reports the generation the region holds; the daemon says where pod
// identity is read from.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const h = require('./harness');

const { run, said, exits } = require('./clirun');

const scratch = h.scratch('procctl-firsthour-');
let d, c;
const kids = [];

const cli = (args, opts = {}) => run(args, { sock: d.sock, ...opts });
const doc = (r) => JSON.parse(r.stdout);

// An echo client of this file's consumer (schema: its schema version).
async function echo(schema = 1) {
  const e = new h.Child(h.ECHO_CLIENT, ['--consumer', h.CONSUMER, '--schema', String(schema)]);
  kids.push(e);
  await e.line(/event=started/, { out: true });
  await h.attached(d, e.pid);
  return e;
}

// /proc/1/cgroup as the daemon starts: the hierarchies another
// program's container mounts later (systemd's in one) would show there
// too, and the daemon reads them once.
const cgroups = () => fs.readFileSync('/proc/1/cgroup', 'utf8').split('\n').filter(Boolean);
let initCgroups;

before(async () => {
  initCgroups = cgroups();
  d = await new h.Daemon().ready();
  c = d.client();
});

after(async () => {
  c.close();
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  if (d.exit === null) await d.stop();
  fs.rmSync(d.dir, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});

test('procctl: --name=VALUE is --name VALUE, anywhere on the line; -- ends the options; an unambiguous beginning will do', async () => {
  const e = await echo();
  const a = exits(await cli(['--output', 'json', '--timeout', '5s', 'ps', '--consumer', h.CONSUMER]), 0);
  const b = exits(await run([`--socket=${d.sock}`, '--output=json', 'ps', `--consumer=${h.CONSUMER}`, '--timeout=5s']), 0);
  assert.equal(b.stdout, a.stdout);
  assert.equal(exits(await cli(['--out=json', 'ps', `--cons=${h.CONSUMER}`]), 0).stdout, a.stdout);
  assert.equal(exits(await cli(['-ojson', '--', 'ps']), 0).stdout,
    exits(await cli(['-o', 'json', 'ps']), 0).stdout);
  const w = exits(await cli(['publish', `--pid=${e.pid}`, '--data=a=b', '--wait', '--timeout=5s']), 0);
  assert.match(w.stdout, new RegExp(`^${e.pid} +\\S+ +\\d+ +APPLIED `, 'm'), said(w));
  await e.line(/event=applied .*payload=a=b$/, { out: true });

  const usage = [
    [['--wait=1', 'publish'], /^procctl: --wait: takes no value /],
    [['--tls', 'x', 'ps'], /^procctl: --tls: ambiguous \(--tls-ca, --tls-cert, --tls-key, --tls-server-name\) /],
    [['ps', '--wait'], /^procctl: --wait: not an option of ps \(procctl ps --help\)$/m],
    [['health', '--count', '1'], /^procctl: --count: not an option of health /],
    [['desired', 'ls', '--clear'], /^procctl: --clear: not an option of desired ls /],
    [['desired', 'rm', '--consumer', h.CONSUMER, '--wait'], /without --clear: nothing to wait for/],
    [['desired', 'set', '--consumer', h.CONSUMER, '--data', 'x', '--clear'], /--clear: not an option of desired set/],
    [['watch', '--for', '0'], /^procctl: --for: '0' is not a duration .*, over 0$/m],
    [['--output='], /^procctl: --output: '' is not table or json$/m],
  ];
  for (const [args, re] of usage) {
    const r = exits(await cli(args), 2);
    assert.match(r.stderr, re, said(r));
    assert.equal(r.stdout, '', said(r));
  }
});

test('procctl-node: --flag=VALUE is --flag VALUE; a flag refused by name; -- and no operands', async () => {
  const conf = path.join(scratch, 'eq.conf');
  fs.writeFileSync(conf, 'lease_ms = 4000\n');
  const check = (args) => spawnSync(h.NODE_BIN, ['--check-config', ...args], { encoding: 'utf8', timeout: 20000 });
  const ok = check([`--config=${conf}`, '--lease-ms=2000', '--consumers=a,b', '--http-listen=', '--']);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.stdout, 'procctl-node: configuration valid\n');
  for (const [args, re] of [
    [['--lease-ms=abc'], /^procctl-node: --lease-ms: 'abc' is not a whole number/],
    [['--uninstall=yes'], /^procctl-node: --uninstall: takes no value\nprocctl-node --help lists every flag\n$/],
    [['--lease-ms'], /^procctl-node: --lease-ms: needs a value\n/],
    [['--max-wait', '5'], /^procctl-node: --max-wait: ambiguous \(--max-waits, --max-waits-per-peer, --max-wait-ms\)/],
    [['--bogus=1'], /^procctl-node: --bogus: no such flag\n/],
    [['stray'], /^procctl-node: stray: not a flag \(procctl-node takes no operands\)/],
    [['--', 'stray'], /^procctl-node: stray: not a flag/],
    [[`--config=${conf}`, '--config', conf], /^procctl-node: --config: given twice/],
    [['--completion=fish'], /^procctl-node: --completion: bash or zsh/],
  ]) {
    const r = check(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re, args.join(' '));
  }
  // A daemon started with them takes them: its HTTP listener where said.
  const e = await new h.Daemon({ args: ['--http-listen=127.0.0.1:0', '--lease-ms=1500'], consumers: `eq${process.pid}` }).ready();
  const port = await e.httpPort();
  try {
    assert.equal(await h.metric(port, 'procctl_ready'), 1);
  } finally {
    await e.stop();
    fs.rmSync(e.dir, { recursive: true, force: true });
  }
});

test('health --wait: a daemon started after it is waited for, within --timeout; none there: exit 1, saying so', async () => {
  const dir = h.scratch('procctl-late-');
  const sock = path.join(dir, 'run', 'node.sock');
  const waiting = run(['--timeout', '30s', 'health', '--wait'], { sock });
  await h.sleep(300);
  const late = new h.Daemon({ dir, consumers: `late${process.pid}` });
  try {
    const r = exits(await waiting, 0);
    assert.equal(r.stdout, 'SERVING\n', said(r));
    assert.deepEqual(doc(exits(await run(['-o', 'json', 'health', '--wait'], { sock }), 0)), { status: 'SERVING' });
  } finally {
    await late.stop();
  }
  const none = exits(await run(['--timeout', '700ms', 'health', '--wait'], { sock: path.join(dir, 'nothing.sock') }), 1);
  assert.match(none.stderr, /nothing\.sock: No such file or directory \(is procctl-node running\?/, said(none));
  assert.match(none.stderr, /^procctl: the daemon did not serve within --timeout \(700 ms\)$/m, said(none));
  // Without --wait, one question: no socket yet is exit 1 at once.
  exits(await run(['health'], { sock: path.join(dir, 'nothing.sock') }), 1);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('watch --for DUR ends it (exit 0); --timeout bounds it too: ended before --count events, exit 3', async () => {
  const f = exits(await cli(['watch', '--consumer', h.CONSUMER, '--for', '700ms']), 0);
  assert.match(f.stdout, /^\d+ +snapshot +processes=\d+ token=\S+$/m, said(f));
  const t = exits(await cli(['--timeout', '700ms', 'watch', '--count', '50']), 3);
  assert.match(t.stderr, /^procctl: watch: 1 of --count 50 events within --timeout$/m, said(t));
  assert.equal(t.stdout.split('\n').filter(Boolean).length, 1, said(t)); // the snapshot
  exits(await cli(['--timeout', '30s', 'watch', '--count', '1']), 0); // in time
  exits(await cli(['--timeout', '700ms', 'watch']), 0); // no --count: --timeout is how long to watch
});

test('desired rm says what it removed; --clear gives its processes what applies without it, then the defaults', async () => {
  const e = await echo();
  const del = (selector) => h.call(c, 'DeleteDesiredConfig', { selector }).catch(() => {});
  try {
    exits(await cli(['desired', 'set', '--consumer', h.CONSUMER, '--data', 'for all', '--wait']), 0);
    exits(await cli(['desired', 'set', '--consumer', h.CONSUMER, '--pid', String(e.pid), '--data', 'mine', '--wait']), 0);
    await e.line(/event=applied .*payload=mine$/, { out: true });
    // The pid's config removed with --clear: it gets the consumer's.
    const rm = exits(await cli(['desired', 'rm', '--consumer', h.CONSUMER, '--pid', String(e.pid), '--clear', '--wait']), 0);
    assert.match(rm.stdout, new RegExp(`^removed revision \\d+ \\(--pid ${e.pid} --consumer ${h.CONSUMER} --schema 1, 4 bytes\\)\n` +
      'it was the config of 1 process: 1 applied, 0 rejected, 0 pending, 0 superseded, 0 not owned\n' +
      'each that held it is given what applies without it \\(a less specific desired config, or a clear\\):\n'), said(rm));
    assert.match(rm.stdout, new RegExp(`^${e.pid} +\\S+ +(\\d+) +APPLIED `, 'm'), said(rm));
    await e.line(/event=applied .*payload=for all$/, { out: true });
    // The consumer's removed with --clear, as JSON: a clear, back to the defaults.
    const j = doc(exits(await cli(['-o', 'json', 'desired', 'rm', '--consumer', h.CONSUMER, '--clear', '--wait']), 0));
    assert.equal(Buffer.from(j.config.payload, 'base64').toString(), 'for all');
    assert.equal(j.config.rollout.applied, j.results.length); // every holder is given a row
    const mine = j.results.find((r) => r.process.pid === e.pid);
    assert.equal(mine.status, 'PUBLISH_STATUS_APPLIED', JSON.stringify(j));
    await e.line(new RegExp(`event=cleared gen=${mine.generation}`), { out: true });
    // A call refused for its wait (over max_wait_ms) changes nothing: not set, not deleted.
    const over = exits(await cli(['--timeout', '6m', 'desired', 'set', '--consumer', h.CONSUMER, '--data', 'x', '--wait']), 1);
    assert.match(over.stderr, /INVALID_ARGUMENT: wait_ms: 360000, over max_wait_ms/, said(over));
    assert.equal((await h.call(c, 'ListDesiredConfigs', {})).configs.length, 0);
    exits(await cli(['desired', 'set', '--consumer', h.CONSUMER, '--data', 'kept']), 0);
    exits(await cli(['--timeout', '6m', 'desired', 'rm', '--consumer', h.CONSUMER, '--clear', '--wait']), 1);
    assert.equal((await h.call(c, 'ListDesiredConfigs', {})).configs.length, 1); // still there
    exits(await cli(['desired', 'rm', '--consumer', h.CONSUMER]), 0);
    // The API: wait_ms without clear writes to nothing, so it is refused.
    assert.equal(await h.code(h.call(c, 'DeleteDesiredConfig', { selector: { consumer: h.CONSUMER, schemaVersion: 1 }, waitMs: 100 })),
      'INVALID_ARGUMENT');
  } finally {
    await del({ consumer: h.CONSUMER, schemaVersion: 1, pid: e.pid });
    await del({ consumer: h.CONSUMER, schemaVersion: 1 });
  }
});

test('a socket nobody listens on, or one this user may not use: said, with what to do', async () => {
  // Another daemon, SIGKILLed: its socket stays, nobody listens.
  const gone = await new h.Daemon({ consumers: `gone${process.pid}` }).ready();
  await gone.kill('SIGKILL');
  const stale = exits(await run(['ps'], { sock: gone.sock }), 1);
  assert.match(stale.stderr, new RegExp(`^procctl: UNAVAILABLE: ${gone.sock}: no daemon listens there \\(a socket left by a ` +
    'procctl-node that stopped\\?\\)\n$'), said(stale));
  fs.rmSync(gone.dir, { recursive: true, force: true });
  // Our daemon's socket (0660, root's) to another user, its directories open to them.
  for (let p = path.dirname(d.sock); p !== '/' && p !== path.dirname(d.dir); p = path.dirname(p)) fs.chmodSync(p, 0o755);
  const nobody = exits(await run(['ps'], { sock: d.sock, prefix: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'] }), 1);
  assert.match(nobody.stderr, /: permission denied: the socket is mode 0660, of user root and group root: run as root, or as a member of group root\n$/, said(nobody));
});

test('selectors: one rule; ps lists every schema version unless --schema; a write names one', async () => {
  const v1 = await echo(1);
  const v2 = await echo(2);
  const pids = (r) => r.processes.map((p) => p.ref.pid);
  // A listing's consumer alone: every version, from the API and the CLI.
  const all = await h.call(c, 'ListProcesses', { filter: { consumer: h.CONSUMER } });
  assert.ok(pids(all).includes(v1.pid) && pids(all).includes(v2.pid), JSON.stringify(pids(all)));
  const listed = doc(exits(await cli(['-o', 'json', 'ps', '--consumer', h.CONSUMER]), 0));
  assert.ok(pids(listed).includes(v2.pid) && pids(listed).includes(v1.pid), JSON.stringify(listed));
  assert.deepEqual(pids(doc(exits(await cli(['-o', 'json', 'ps', '--consumer', h.CONSUMER, '--schema', '2']), 0))), [v2.pid]);
  // A write with a consumer and no version: INVALID_ARGUMENT naming the rule.
  const err = await h.call(c, 'Publish', { selector: { consumer: h.CONSUMER }, payload: Buffer.from('x') }).catch((x) => x);
  assert.equal(h.grpc.status[err.code], 'INVALID_ARGUMENT');
  assert.match(err.details, /schema_version its payload is in \(0 matches any version only in calls that read/);
  // The CLI's write is version 1 unless --schema says: v2 untouched.
  const r = doc(exits(await cli(['-o', 'json', 'publish', '--consumer', h.CONSUMER, '--data', 'one', '--wait']), 0));
  assert.ok(r.results.every((x) => x.process.pid !== v2.pid) && r.results.some((x) => x.process.pid === v1.pid));
  const two = doc(exits(await cli(['-o', 'json', 'publish', '--consumer', h.CONSUMER, '--schema', '2', '--data', 'two', '--wait']), 0));
  assert.deepEqual(two.results.map((x) => x.process.pid), [v2.pid]);
  // publish --help lists every status a row can have.
  const help = exits(await cli(['publish', '--help']), 0).stdout;
  for (const st of ['APPLIED', 'REJECTED', 'PENDING', 'SUPERSEDED', 'NOT_OWNER', 'CONFLICT', 'BROKEN', 'TOO_LARGE', 'GONE',
    'FAILED', 'WRITTEN']) assert.match(help, new RegExp(`\\b${st}\\b`), st);
  await v2.kill('SIGKILL');
});

test('a daemon of another lock domain reports the generation the region holds, and its acks', async () => {
  const e = await echo();
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('held'), waitMs: 5000 });
  const gen = r.results[0].generation;
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  const other = await new h.Daemon({}).ready(); // its own directories: another lock domain
  const oc = other.client();
  try {
    const p = await h.until(async () => {
      const x = (await h.call(oc, 'ListProcesses', { filter: { pid: e.pid } })).processes[0];
      return x && x.ackedGeneration === gen && x;
    }, { what: 'the other daemon to read the ack' });
    assert.equal(p.leaseState, 'LEASE_STATE_CONFLICT');
    assert.equal(p.generation, gen, JSON.stringify(p)); // what the region holds, not 0
    // Its CLI view says the same.
    const row = exits(await run(['ps', '--pid', String(e.pid)], { sock: other.sock }), 0).stdout.split('\n')[1].trim().split(/\s+/);
    assert.deepEqual([row[0], row[5], row[6], row[7]], [String(e.pid), 'conflict', gen, gen]);
  } finally {
    oc.close();
    await other.stop();
    fs.rmSync(other.dir, { recursive: true, force: true });
  }
});

test('the daemon says once where pod identity is read from: every hierarchy of /proc/PID/cgroup', async () => {
  const said1 = d.lines.filter((l) => / event=pod_identity /.test(l));
  assert.equal(said1.length, 1, d.lines.join('\n'));
  const init = initCgroups;
  const m = said1[0].match(/ hierarchies="([^"]*)" count=(\d+) /);
  assert.ok(m, said1[0]);
  assert.equal(Number(m[2]), init.length);
  if (init.some((l) => l.startsWith('0::'))) assert.match(m[1], /(^| )v2( |$)/);
  for (const l of init.filter((x) => !x.startsWith('0::'))) assert.ok(m[1].includes(`v1:${l.split(':')[1]}`), l);
});

test('completion: procctl and procctl-node write their scripts from their own tables', async () => {
  const b = exits(await run(['completion', 'bash']), 0);
  assert.match(b.stdout, /^# bash completion for procctl/);
  assert.match(b.stdout, /\ncomplete -F _procctl procctl\n$/);
  assert.match(exits(await run(['completion', 'zsh']), 0).stdout, /^#compdef procctl\n/);
  exits(await run(['completion', 'fish']), 2);
  const n = spawnSync(h.NODE_BIN, ['--completion', 'zsh'], { encoding: 'utf8' });
  assert.equal(n.status, 0);
  assert.match(n.stdout, /^#compdef procctl-node\n/);
});
