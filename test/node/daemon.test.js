// SPDX-License-Identifier: Apache-2.0
// daemon.test.js - procctl-node as a process: flags, configuration
// errors, its socket, health, shutdown, and a standby taking over.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const h = require('./harness');
const { unread } = require('./h2raw');

const run = (args) => spawnSync(h.NODE_BIN, args, { encoding: 'utf8', timeout: 10000 });
const scratch = () => h.scratch('procctl-node-');

test('--version, --help, --check-config', () => {
  let r = run(['--version']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^procctl-node \d+\.\d+\.\d+ \(API procctl\.v1, wire 1\.1\)\n$/);
  r = run(['--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--grpc-listen ADDR/);
  assert.match(r.stdout, /unix:\/run\/procctl\/node\.sock/);
  r = run(['--check-config']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /configuration valid/);
});

test('--check-config judges the directories and files as the start would, making none', () => {
  const dir = scratch();
  const open = path.join(dir, 'open');
  fs.mkdirSync(open);
  fs.chmodSync(open, 0o777);
  const mine = path.join(dir, 'mine');
  fs.writeFileSync(path.join(dir, 'short.key'), 'short\n', { mode: 0o600 });
  for (const [args, re] of [
    [['--lock-dir', open], /^procctl-node: lock_dir: .*open is writable by others \(mode 0777\)\n$/],
    [['--state-dir', path.join(open, 'state')], /^procctl-node: state_dir: .*open is writable by others/],
    [['--grpc-listen', `unix:${path.join(open, 'node.sock')}`], /^procctl-node: grpc_listen: .*open is writable/],
    // and the files it reads at its start, named by their keys
    [['--http-api-key-file', path.join(dir, 'short.key')], /^procctl-node: http_api_key_file \S+short\.key: the key is /],
  ]) {
    const r = run(['--check-config', '--lock-dir', path.join(mine, 'locks'), '--state-dir', path.join(mine, 'state'),
      ...args]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, re);
  }
  // Files not here may be where the config is for (a pod's mounts): said, not failed.
  const r = run(['--check-config', '--lock-dir', path.join(mine, 'locks'), '--state-dir', path.join(mine, 'state'),
    '--grpc-listen', `unix:${path.join(mine, 'run', 'node.sock')}`, '--http-api-key-file', path.join(dir, 'nokey')]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^procctl-node: note: http_api_key_file \S+nokey: not here \(the start reads it\)\n$/);
  assert.ok(!fs.existsSync(mine), 'nothing made');
  assert.deepEqual(fs.readdirSync(open), []);
});

test('--help lists every key of the config file with its default; a bad flag is named, with or without a value', () => {
  let r = run(['--help']);
  assert.equal(r.status, 0);
  const example = fs.readFileSync(path.join(h.PROTO_DIR, '..', 'server', 'config', 'procctl-node.conf'), 'utf8');
  const keys = [...example.matchAll(/^# ([a-z0-9_]+) = /gm)].map((m) => m[1]);
  assert.ok(keys.length > 25, example);
  for (const k of keys) assert.match(r.stdout, new RegExp(`(--${k.replace(/_/g, '-')}|  ${k} =) `), k);
  assert.match(r.stdout, /--lease-ms MS +the lease given to processes \(default: 10000; 10 to 3600000\)/);
  assert.match(r.stdout, /--max-per-process N +.* \(default: 16; 1 to 512\)/);
  // Every number's range, as --help says it, is the one the daemon holds to.
  const ranges = [...r.stdout.matchAll(/^  (--[a-z0-9-]+) (?:N|MS|S) .*(?:\n +)?\(default: \d+; (\d+) to (\d+)\)$/gm)];
  assert.ok(ranges.length > 25, r.stdout);
  for (const [, flag, lo, hi] of ranges) {
    for (const bad of [BigInt(lo) - 1n, BigInt(hi) + 1n].filter((x) => x >= 0n)) {
      const c = run(['--check-config', flag, String(bad)]);
      assert.equal(c.status, 2, `${flag} ${bad}`);
      assert.match(c.stderr, new RegExp(`${flag}: ${bad} is outside ${lo}\\.\\.${hi}`), `${flag} ${bad}`);
    }
  }
  for (const args of [['--bogus'], ['--bogus', '1'], ['--lease-ms', '1000', '--bogus']]) {
    r = run(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, /^procctl-node: --bogus: no such flag\n/, args.join(' '));
  }
  r = run(['--lease-ms']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^procctl-node: --lease-ms: needs a value\n/);
  r = run(['lease-ms', '5']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^procctl-node: lease-ms: not a flag \(procctl-node takes no operands\)\n/);
});

test('an [arbiter] section without its consumer: the file and the line named', () => {
  const dir = scratch();
  const conf = path.join(dir, 'node.conf');
  fs.writeFileSync(conf, '# arbiters\n\n[arbiter gpu]\nkind = 1\nhold_ms = 500\n');
  const r = run(['--check-config', '--config', conf]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `procctl-node: ${conf}:3: [arbiter gpu]: consumer: missing (whose processes it grants to)\n`);
});

test('bad configuration: the file, line and key named, exit 2, nothing bound', () => {
  const dir = scratch();
  const conf = path.join(dir, 'node.conf');
  const sock = path.join(dir, 'node.sock');
  fs.writeFileSync(conf, `# ok\ngrpc_listen = unix:${sock}\nlease_ms = soon\n`);
  let r = run(['--config', conf]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, new RegExp(`${conf}:3: lease_ms: `));
  assert.ok(!fs.existsSync(sock));
  r = run(['--check-config', '--config', conf]);
  assert.equal(r.status, 2);
  r = run(['--config', path.join(dir, 'missing.conf')]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /missing\.conf: No such file or directory/);
  r = run(['--lease-ms', '-1']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--lease-ms: /);
  r = run(['--no-such-flag', 'x']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /no such flag/);
  r = run(['--grpc-listen', '0.0.0.0:1']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /TCP needs tls_cert, tls_key and tls_client_ca, or insecure_tcp/);
});

test('the socket: directory made, a stale socket replaced, a live one or a file refused', async () => {
  const dir = scratch();
  const run1 = path.join(dir, 'run');
  fs.mkdirSync(run1);
  // A stale socket: bound, then its server killed (nothing unlinked it).
  const sock = path.join(run1, 'node.sock');
  spawnSync(process.execPath, ['-e',
    `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  assert.ok(fs.statSync(sock).isSocket());
  const d = await new h.Daemon({ dir }).ready();
  assert.ok(d.lines.some((l) => /event=stale_socket_replaced/.test(l)));

  // A second daemon on another lock dir but the same socket: refused.
  const other = scratch();
  // Its own state directory too: the default, /var/lib/procctl, is the host's.
  const r = spawnSync(h.NODE_BIN, ['--grpc-listen', `unix:${sock}`, '--lock-dir', path.join(other, 'locks'),
    '--state-dir', path.join(other, 'state'), '--consumers', h.CONSUMER], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /another server is listening there/);
  await d.stop();
  assert.ok(!fs.existsSync(sock), 'the socket is removed at exit');

  // A regular file where the socket goes: refused, left alone.
  fs.writeFileSync(sock, 'keep');
  const r2 = spawnSync(h.NODE_BIN, ['--grpc-listen', `unix:${sock}`, '--lock-dir', path.join(other, 'locks'),
    '--state-dir', path.join(other, 'state'), '--consumers', h.CONSUMER], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r2.status, 1);
  assert.match(r2.stderr, /exists and is not a socket/);
  assert.equal(fs.readFileSync(sock, 'utf8'), 'keep');
});

test('health: Check and Watch; an unknown service', async () => {
  const d = await new h.Daemon().ready();
  assert.equal(await h.health(d.addr), 'SERVING');
  assert.equal(await h.health(d.addr, 'procctl.v1.NodeService'), 'SERVING');
  await assert.rejects(h.health(d.addr, 'nope'), (e) => h.grpc.status[e.code] === 'NOT_FOUND');
  const w = h.healthWatch(d.addr);
  const unknown = h.healthWatch(d.addr, 'nope');
  await h.until(() => w.statuses.length && unknown.statuses.length, { what: 'health statuses' });
  assert.deepEqual(w.statuses, ['SERVING']);
  assert.deepEqual(unknown.statuses, ['SERVICE_UNKNOWN']);
  await d.stop();
  await h.until(() => w.error && unknown.error, { what: 'the watches to end' });
  assert.equal(h.grpc.status[w.error.code], 'UNAVAILABLE');
  w.close();
  unknown.close();
});

test('port 0: HTTP and TCP gRPC listen on ports the kernel picks, and the listening lines say them', async () => {
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--insecure-tcp', 'true'] })
    .ready();
  const http = await d.bound('http');
  const tcp = await d.bound('tcp');
  assert.match(http, /^127\.0\.0\.1:[1-9]\d*$/);
  assert.match(tcp, /^127\.0\.0\.1:[1-9]\d*$/);
  assert.notEqual(http, tcp);
  // Each answers where its line says.
  const r = await fetch(`http://${http}/healthz`);
  assert.equal(r.status, 200);
  assert.equal(await h.health(tcp), 'SERVING');
  await d.stop();
});

test('SIGTERM: open streams end UNAVAILABLE, the process exits 0 and hands off', async () => {
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const c = d.client();
  await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('kept'), waitMs: 5000 });
  const w = h.watch(c, {});
  await w.next((x) => x.event === 'snapshot');
  const exit = d.kill('SIGTERM');
  const err = await w.errored();
  assert.equal(h.grpc.status[err.code], 'UNAVAILABLE');
  assert.deepEqual(await exit, { code: 0, sig: null });
  assert.ok(d.lines.some((l) => /event=stopping mode=hand-off/.test(l)));
  // The hand-off comes before the slow part (closing uprobes): a
  // successor does not wait for it.
  const at = (re) => d.lines.findIndex((l) => re.test(l));
  assert.ok(at(/event=handed_off mode=hand-off ms=/) > at(/event=stopping/), d.lines.join('\n'));
  assert.ok(at(/event=stopped error=none ms=/) > at(/event=handed_off/), d.lines.join('\n'));
  const closing = at(/event=closing_uprobes count=\d+/);
  assert.ok(closing < 0 || closing > at(/event=handed_off/), d.lines.join('\n'));
  // A plain start and stop, HTTP on, says nothing at warn (libmicrohttpd's
  // option-order warning was one), but what the machine may make it say:
  // a slow loop turn (tests side by side, under a sanitizer), and a hard
  // descriptor limit under what max_regions asks (25,600 by default; 20,000
  // in some CI shells).
  assert.deepEqual(d.lines.filter((l) => / level=(warn|error) /.test(l) && !/ event=(slow_turn|fd_limit_low) /.test(l)), []);
  // Handed off, not uninstalled: the process keeps its config.
  await h.sleep(200);
  assert.ok(!e.out.some((l) => /event=cleared|event=lease state=expired/.test(l)), e.out.join('\n'));
  c.close();
  await e.kill('SIGKILL');
});

test('SIGTERM: unary calls in flight end OK or UNAVAILABLE (which clients retry), never CANCELLED', async () => {
  const d = await new h.Daemon({}).ready();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const stopped = await h.echo();
  await h.attached(d, stopped.pid);
  stopped.proc.kill('SIGSTOP');
  const clients = Array.from({ length: 4 }, () => d.client());
  // One call surely held by the loop at the stop: a Publish waiting for
  // a stopped process's ack (answered as it stands: written, PENDING);
  // and four clients calling without a pause.
  const held = h.call(clients[0], 'Publish', { selector: { pid: stopped.pid }, payload: Buffer.from('x'), waitMs: 60000 })
    .then((r) => r.results.map((x) => x.status).join(), (err) => h.grpc.status[err.code]);
  const calls = [
    (c) => h.call(c, 'GetProcess', { process: { pid: e.pid } }),
    (c) => h.call(c, 'ListProcesses', {}),
    (c) => h.call(c, 'ReadState', { process: { pid: e.pid } }),
    (c) => h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('y'), waitMs: 1000 }),
  ];
  let served = 0;
  const codes = {};
  const loops = clients.map(async (c, i) => {
    for (;;) {
      try {
        await calls[i](c);
        served++;
      } catch (err) {
        const code = h.grpc.status[err.code];
        codes[code] = (codes[code] || 0) + 1;
        return;
      }
    }
  });
  await h.until(async () => served >= 40, { what: 'calls served before the stop' });
  const exit = d.kill('SIGTERM');
  await Promise.all(loops);
  assert.deepEqual(Object.keys(codes), ['UNAVAILABLE'], JSON.stringify(codes));
  assert.equal(await held, 'PUBLISH_STATUS_PENDING');
  assert.deepEqual(await exit, { code: 0, sig: null });
  clients.forEach((c) => c.close());
  stopped.proc.kill('SIGCONT');
  await stopped.kill('SIGKILL');
  await e.kill('SIGKILL');
});

test('signals are taken on the loop\'s thread alone: every other thread blocks SIGTERM, SIGINT and SIGHUP', async () => {
  // A SIGTERM the kernel gave to a gRPC thread asleep on a futex was
  // never handled under ThreadSanitizer (its handler waits for that
  // thread to wake), and elsewhere it broke that thread's call (EINTR).
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const handled = (1n << 0n) | (1n << 1n) | (1n << 14n); // SIGHUP, SIGINT, SIGTERM: bit n-1
  const others = fs.readdirSync(`/proc/${d.pid}/task`).map(Number).filter((t) => t !== d.pid);
  assert.ok(others.length >= 5, `${others.length} threads besides the loop's`);
  // /proc shows a thread on its way out with a mask of 0: one that does
  // not block them is a failure only if it is still there 2 s later.
  for (const t of others) {
    let st;
    try {
      st = fs.readFileSync(`/proc/${d.pid}/task/${t}/status`, 'utf8');
    } catch {
      continue; // ended
    }
    const blk = /^SigBlk:\s*([0-9a-f]+)$/m.exec(st);
    if (blk && (BigInt(`0x${blk[1]}`) & handled) === handled) continue;
    await h.until(() => !fs.existsSync(`/proc/${d.pid}/task/${t}`),
      { what: `${/^Name:\s*(.*)$/m.exec(st)[1]} (${t}) blocks ${blk ? blk[1] : '?'}, and is not ending`, timeout: 2000 });
  }
  process.kill(d.pid, 'SIGHUP'); // handled (not the default: an exit), and serving goes on
  await d.line(/event=reload_ignored /); // no --config
  assert.equal(await h.health(d.addr), 'SERVING');
  await d.stop();
});

test('--uninstall: the processes revert to their defaults on exit', async () => {
  const d = await new h.Daemon({ args: ['--uninstall'] }).ready();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const c = d.client();
  await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('gone soon'), waitMs: 5000 });
  c.close();
  await d.kill('SIGTERM');
  await e.line(/event=lease state=expired/, { out: true });
  await e.kill('SIGKILL');
});

for (const sig of ['SIGTERM', 'SIGKILL']) {
  test(`a standby binds nothing, and takes over when the first gets ${sig}, with no flap in the clients`, async () => {
    const first = await new h.Daemon().ready();
    const ino = fs.statSync(first.sock).ino;
    const second = new h.Daemon({ dir: first.dir });
    await second.line(/event=standby/);
    await h.sleep(300);
    assert.equal(second.exit, null);
    assert.equal(fs.statSync(first.sock).ino, ino, 'the standby left the socket alone');

    const e = await h.echo();
    await h.attached(first, e.pid);
    const c = first.client();
    const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('last good'), waitMs: 5000 });
    assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
    c.close();

    await first.kill(sig);
    await second.line(/event=taking_over/);
    await second.ready();
    const p = await h.attached(second, e.pid);
    assert.equal(p.leaseState, 'LEASE_STATE_LIVE');
    assert.equal(p.generation, r.results[0].generation, 'the successor adopted the config');
    const c2 = second.client();
    const st = await h.call(c2, 'ReadState', { process: { pid: e.pid } });
    assert.match(st.data.toString(), /mode=config$/);
    const r2 = await h.call(c2, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('next'), waitMs: 5000 });
    assert.equal(r2.results[0].status, 'PUBLISH_STATUS_APPLIED');
    c2.close();
    // The client never fell back to its defaults.
    assert.ok(!e.out.some((l) => /event=cleared|event=lease state=expired/.test(l)), e.out.join('\n'));
    await second.stop();
    await e.kill('SIGKILL');
  });
}

test('a standby ends at SIGTERM, exit 0, having served nothing', async () => {
  const first = await new h.Daemon().ready();
  const second = new h.Daemon({ dir: first.dir });
  await second.line(/event=standby/);
  assert.equal((await second.kill('SIGTERM')).code, 0);
  assert.ok(!second.lines.some((l) => /event=(taking_over|listening)/.test(l)), second.lines.join('\n'));
  await first.stop();
});

test('a standby takes over from a holder that unlocks NODE.lock without closing it (no close to be told of)', async () => {
  const dir = scratch();
  fs.mkdirSync(path.join(dir, 'locks'), { mode: 0o700 });
  const holder = new h.Child('sh', ['-c', 'exec 9>>"$1/NODE.lock"; flock 9; echo locked; read x; flock -u 9; echo unlocked; read y',
    'sh', path.join(dir, 'locks')], { stdio: ['pipe', 'pipe', 'pipe'] });
  await holder.line(/^locked$/, { out: true });
  const d = new h.Daemon({ dir });
  await d.line(/event=standby/);
  holder.proc.stdin.write('\n');
  await holder.line(/^unlocked$/, { out: true });
  await d.line(/event=taking_over/);
  await d.ready();
  holder.proc.stdin.end();
  await holder.exited;
  await d.stop();
});

test('a standby serves as soon as the first has handed off, before the first closes its uprobes (slow: one user\'s files once held a successor off for minutes)', async () => {
  const first = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const hp = await first.httpPort();
  const e = await h.echo(); // its program gets uprobes when it maps it
  await h.attached(first, e.pid);
  await h.until(async () => (await h.metric(hp, 'procctl_hello_uprobes')) > 0, { what: 'its program probed' });
  const second = new h.Daemon({ dir: first.dir });
  await second.line(/event=standby/);
  const exit = first.kill('SIGTERM');
  // Frozen once handed off: whatever it would free after, it never does
  // until the successor serves.
  await first.line(/event=handed_off mode=hand-off/);
  first.proc.kill('SIGSTOP');
  try {
    await second.line(/event=taking_over/);
    await second.ready();
    const p = await h.attached(second, e.pid);
    assert.equal(p.leaseState, 'LEASE_STATE_LIVE');
  } finally {
    first.proc.kill('SIGCONT');
  }
  assert.deepEqual(await exit, { code: 0, sig: null });
  const at = (re) => first.lines.findIndex((l) => re.test(l));
  assert.ok(at(/event=closing_uprobes count=[1-9]/) > at(/event=handed_off/), first.lines.join('\n'));
  assert.ok(!e.out.some((l) => /event=cleared|event=lease state=expired/.test(l)), e.out.join('\n'));
  await second.stop();
  await e.kill('SIGKILL');
});

test('a stop after sends a client never read hands off at once (gRPC kept NODE.lock for its 10 s backup poll)', async () => {
  const first = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const hp = await first.httpPort();
  const farm = new h.Child(process.env.FARM, ['--procs', '25', '--regions', '8', '--consumer', h.CONSUMER],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  await farm.line(/^ready /, { out: true, timeout: 60000 });
  const c = first.client();
  await h.until(async () => (await h.call(c, 'ListProcesses', {})).processes.length === 200,
    { what: '200 regions attached', timeout: 60000, every: 100 });
  c.close();
  // 32 snapshots of 200 regions, about 1 MiB, to a client that reads
  // none: the daemon's writes to it block. gRPC 1.51 then polls for them
  // in an executor thread, 10 s at a time, and its last grpc_shutdown
  // joined that thread: the successor waited those seconds.
  const sock = net.connect(first.sock);
  await new Promise((resolve) => sock.on('connect', resolve));
  unread(sock, 32, '/procctl.v1.NodeService/WatchEvents');
  await h.until(async () => (await h.metric(hp, 'procctl_grpc_streams')) === 32, { what: '32 watches answered' });
  const second = new h.Daemon({ dir: first.dir });
  await second.line(/event=standby/);
  const exit = first.kill('SIGTERM');
  // The hand-off takes tens of ms; the poll it waited for took up to 10 s.
  await second.line(/event=taking_over/, { timeout: 5000 });
  assert.deepEqual(await exit, { code: 0, sig: null });
  sock.destroy();
  await second.ready();
  await second.stop();
  farm.proc.stdin.end();
  await farm.exited;
});

test('a stderr that nobody reads holds up nothing: the lines wait, the loop serves, and what did not fit is counted and said', async () => {
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0', '--max-regions', '4096'] }).ready();
  const hp = await d.httpPort();
  const c = d.client();
  // The harness reads no more of its stderr: the pipe fills, and a write
  // to it blocks (the loop's, of each attach's lines, stopped the loop).
  // 2,048 regions: about 500 KiB of lines, past the pipe, this side's
  // buffer and the daemon's 256 KiB.
  d.proc.stderr.pause();
  const farm = new h.Child(process.env.FARM, ['--procs', '256', '--regions', '8', '--consumer', h.CONSUMER],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  await farm.line(/^ready /, { out: true, timeout: 60000 });
  await h.until(async () => (await h.call(c, 'ListProcesses', {})).processes.length === 2048,
    { what: '2,048 regions attached while stderr is not read', timeout: 60000, every: 200 });
  const dropped = await h.metric(hp, 'procctl_log_lines_dropped_total');
  assert.ok(dropped > 0, `${dropped} lines dropped`);
  const before = d.lines.length;
  d.proc.stderr.resume();
  const said = await d.line(/ event=log_lines_dropped count=\d+ /, { timeout: 30000 });
  assert.equal(Number(/count=(\d+)/.exec(said)[1]), dropped, said);
  // What was queued came out whole and in order, before the count.
  const ids = d.lines.slice(before).filter((l) => / event=process_identity /.test(l));
  assert.ok(ids.length > 0 && ids.every((l) => /^ts=\S+ level=info event=process_identity pid=\d+ consumer=/.test(l)),
    ids.slice(0, 3).join('\n'));
  farm.proc.stdin.end();
  await farm.exited;
  c.close();
  await d.stop();
});

test('the fd limit is raised to the hard limit; one short of max_regions is said', async () => {
  const dir = h.scratch('procctl-node-');
  const sock = path.join(dir, 'run', 'node.sock');
  const d = new h.Child('prlimit', ['--nofile=1024:4096', h.NODE_BIN, '--grpc-listen', `unix:${sock}`,
    '--lock-dir', path.join(dir, 'locks'), '--state-dir', path.join(dir, 'state'), '--http-listen', '',
    '--consumers', h.CONSUMER, '--max-regions', '4096']);
  await d.line(/event=listening/);
  const limits = fs.readFileSync(`/proc/${d.pid}/limits`, 'utf8');
  assert.match(limits, /Max open files\s+4096\s+4096/);
  assert.ok(d.lines.some((l) => /event=fd_limit from=1024 to=4096/.test(l)), d.lines.join('\n'));
  assert.ok(d.lines.some((l) => /level=warn event=fd_limit_low limit=4096 max_regions=4096 needs=13312/.test(l)));
  await d.kill('SIGTERM');
});
