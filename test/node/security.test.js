// SPDX-License-Identifier: Apache-2.0
// security.test.js - who may do what (issue 18), each rule as the attack
// that broke it: the socket's mode from its first moment, ...
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const h = require('./harness');
const { run, said, exits } = require('./clirun');

after(async () => {
  await h.killAll();
});

// The mode the daemon's socket has the moment it appears, seen through
// inotify before the daemon could change it.
async function socketModeAtBirth(umask) {
  const dir = h.scratch('procctl-node-');
  fs.mkdirSync(path.join(dir, 'run'));
  const w = new h.Child(process.env.SOCKWATCH, [path.join(dir, 'run'), 'node.sock']);
  await w.line(/^ready$/, { out: true });
  const old = process.umask(umask);
  let d;
  try {
    d = new h.Daemon({ dir });
  } finally {
    process.umask(old);
  }
  await d.ready();
  const mode = await w.line(/^mode=/, { out: true });
  const now = fs.statSync(d.sock).mode & 0o7777;
  await d.stop();
  return { birth: parseInt(mode.slice(5), 8), now };
}

test('the socket is never wider than 0660, not even for a moment under umask 0', async () => {
  for (let i = 0; i < 6; i++) {
    const m = await socketModeAtBirth(0);
    assert.equal(m.birth, 0o660, `start ${i}: the socket appeared with mode 0${m.birth.toString(8)}`);
    assert.equal(m.now, 0o660);
  }
  // A umask that takes more still ends at 0660 (the group is the access).
  const m = await socketModeAtBirth(0o077);
  assert.ok((m.birth & ~0o660) === 0, `mode 0${m.birth.toString(8)}`);
  assert.equal(m.now, 0o660);
});

// A daemon run to its end (it refuses to start): { status, stderr }.
function refusedStart(args) {
  const r = spawnSync(h.NODE_BIN, ['--grpc-listen', `unix:${path.join(h.scratch('procctl-run-'), 'node.sock')}`,
    '--http-listen', '', ...args], { encoding: 'utf8', timeout: 20000 });
  return { status: r.status, stderr: r.stderr };
}

// A root-only file an attacker wants the daemon to write through.
function victim() {
  const v = path.join(h.scratch('procctl-victim-'), 'secret');
  fs.writeFileSync(v, 'root only secret', { mode: 0o600 });
  return v;
}

test('a lock or state directory someone else controls is refused, naming it; nothing is written through it', () => {
  const v = victim();
  const base = h.scratch('procctl-dirs-');
  // An attacker's lock directory (as one made under /tmp would be), with
  // the lock files planted as symlinks to the victim.
  const theirs = path.join(base, 'theirs');
  fs.mkdirSync(theirs);
  for (const f of ['NODE.lock', `${h.CONSUMER}.lock`, 'domain', 'epochs']) fs.symlinkSync(v, path.join(theirs, f));
  fs.chownSync(theirs, 65534, 65534);
  let r = refusedStart(['--lock-dir', theirs, '--state-dir', path.join(base, 'state')]);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /event=lock_failed .*theirs is owned by uid 65534, not 0/);
  // Root's, but anyone may write it.
  const open = path.join(base, 'open');
  fs.mkdirSync(open, { mode: 0o777 });
  fs.chmodSync(open, 0o777);
  r = refusedStart(['--lock-dir', open, '--state-dir', path.join(base, 'state')]);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /open is writable by others \(mode 0777\)/);
  // The state directory the same.
  const theirState = path.join(base, 'their-state');
  fs.mkdirSync(theirState);
  fs.symlinkSync(v, path.join(theirState, 'desired.store.tmp'));
  fs.chownSync(theirState, 65534, 65534);
  r = refusedStart(['--lock-dir', path.join(base, 'locks'), '--state-dir', theirState]);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /state_dir: .*their-state is owned by uid 65534/);
  assert.equal(fs.readFileSync(v, 'utf8'), 'root only secret');
});

test('a socket directory someone else controls or may write is refused, naming it, even sticky (as /tmp)', async () => {
  const base = h.scratch('procctl-sockdir-');
  const args = (dir) => ['--grpc-listen', `unix:${path.join(dir, 'node.sock')}`, '--http-listen', '',
    '--lock-dir', path.join(base, 'locks'), '--state-dir', path.join(base, 'state'), '--consumers', h.CONSUMER];
  // Theirs: they could swap the socket for one of their own, and every
  // client would take them for the daemon.
  const theirs = path.join(base, 'theirs');
  fs.mkdirSync(theirs);
  fs.chownSync(theirs, 65534, 65534);
  let r = spawnSync(h.NODE_BIN, args(theirs), { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /unix:.*theirs\/node\.sock: .*theirs is owned by uid 65534, not 0 \(the socket's directory/);
  assert.ok(!fs.existsSync(path.join(theirs, 'node.sock')));
  const open = path.join(base, 'open');
  fs.mkdirSync(open);
  fs.chmodSync(open, 0o777);
  r = spawnSync(h.NODE_BIN, args(open), { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /open is writable by others \(mode 0777\)/);
  // Sticky: nobody else can remove the daemon's socket there, but anyone
  // can make its name first (the squatter test below).
  const sticky = path.join(base, 'sticky');
  fs.mkdirSync(sticky);
  fs.chmodSync(sticky, 0o1777);
  r = spawnSync(h.NODE_BIN, args(sticky), { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /sticky is writable by others \(mode 01777\) \(the socket's directory must be this daemon's user's/);
  r = spawnSync(h.NODE_BIN, ['--check-config', ...args(sticky)], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^procctl-node: grpc_listen: .*sticky is writable by others \(mode 01777\)/);
  // A directory of the daemon's own, writable by nobody else: it serves.
  const mine = path.join(base, 'mine');
  fs.mkdirSync(mine, { mode: 0o755 });
  const d = await new h.Daemon({ dir: base, sock: path.join(mine, 'node.sock') }).ready();
  await d.stop();
});

// uid 65534 listens at the daemon's path in a sticky directory before any
// daemon: it records every byte it is sent and answers nothing.
const SQUATTER = `const fs = require('fs'); const net = require('net'); let n = 0;
const s = net.createServer((c) => c.on('data', (b) => { n += b.length; console.log('bytes ' + n); }));
s.listen(process.argv[1], () => { fs.chmodSync(process.argv[1], 0o777); console.log('listening'); });`;

test('a squatter at the socket path in a sticky directory gets nothing from the CLI; the daemon will not start there',
  async () => {
    const base = h.scratch('procctl-squat-');
    fs.chmodSync(base, 0o711);
    const sticky = path.join(base, 'sticky');
    fs.mkdirSync(sticky);
    fs.chmodSync(sticky, 0o1777);
    const sock = path.join(sticky, 'node.sock');
    const sq = new h.Child(process.execPath, ['-e', SQUATTER, sock], { uid: 65534, gid: 65534 });
    try {
      await sq.line(/^listening$/, { out: true });
      assert.equal(fs.statSync(sock).uid, 65534);
      // The operator publishes a secret to what it takes for the daemon.
      let r = await run(['--socket', sock, 'publish', '--consumer', 'hecho', '--data', 'db_password=hunter2']);
      exits(r, 1);
      assert.match(r.stderr, new RegExp(`^procctl: ${sock}: the process listening there \\(pid \\d+\\) runs as uid ` +
        '65534 \\(nobody\\), neither root nor this user: .*nothing was sent\\. A daemon of that user\'s: ' +
        '--socket-uid 65534 \\(or PROCCTL_SOCKET_UID=65534\\)\n$'), said(r));
      for (const cmd of [['health'], ['health', '--wait', '--timeout', '1s'], ['ps'], ['watch', '--for', '1s']]) {
        r = await run(['--socket', sock, ...cmd]);
        assert.equal(r.code, 1, said(r));
        assert.match(r.stderr, /runs as uid 65534 \(nobody\)/, said(r));
        assert.equal(r.stdout, '', said(r)); /* no answer printed: none came */
      }
      await h.sleep(200);
      assert.deepEqual(sq.out.filter((l) => /^bytes/.test(l)), [], 'the squatter was sent bytes');
      // Named as the daemon's user, it is talked to: the check was what kept the bytes.
      r = await run(['--socket', sock, '--timeout', '1s', 'health'], { env: { PROCCTL_SOCKET_UID: '65534' } });
      assert.equal(r.code, 1, said(r));
      await sq.line(/^bytes [1-9]/, { out: true });
      // The daemon refuses to start there, naming the directory.
      const d = spawnSync(h.NODE_BIN, ['--grpc-listen', `unix:${sock}`, '--http-listen', '',
        '--lock-dir', path.join(base, 'locks'), '--state-dir', path.join(base, 'state'), '--consumers', h.CONSUMER],
      { encoding: 'utf8', timeout: 20000 });
      assert.equal(d.status, 1, d.stderr);
      assert.match(d.stderr, /sticky is writable by others \(mode 01777\)/);
    } finally {
      sq.proc.kill('SIGKILL');
      await sq.exited;
    }
  });

test('files in the directories are never opened through a symlink, and others cannot open the locks', async () => {
  const v = victim();
  const d = await new h.Daemon().ready();
  const c = d.client();
  // Planted (by whoever could once write there): the temp file of the
  // store is a symlink. The set fails; the victim is untouched.
  fs.symlinkSync(v, path.join(d.dir, 'state', 'desired.store.tmp'));
  const set = (pod) => h.call(c, 'SetDesiredConfig', {
    config: { selector: { consumer: h.CONSUMER, schemaVersion: 1, podUid: pod }, payload: Buffer.from('x') } });
  const pod = '0b1c2d3e-0000-4000-8000-0000000000aa';
  assert.equal(await h.code(set(pod)), 'UNAVAILABLE');
  assert.equal(fs.readFileSync(v, 'utf8'), 'root only secret');
  fs.rmSync(path.join(d.dir, 'state', 'desired.store.tmp'), { force: true });
  assert.equal(await h.code(set(pod)), 'OK');
  // The lock files are the daemon's alone (anyone who can open one can
  // flock it, and keep the daemon from ever writing).
  const e = await h.echo();
  await h.attached(d, e.pid);
  const locks = path.join(d.dir, 'locks');
  for (const f of fs.readdirSync(locks)) {
    const st = fs.lstatSync(path.join(locks, f));
    assert.ok(st.isFile(), f);
    assert.equal(st.mode & 0o777, 0o600, `${f} mode 0${(st.mode & 0o777).toString(8)}`);
  }
  assert.equal(fs.statSync(locks).mode & 0o777, 0o755);
  // As nobody, who can reach the directory (and list it) but not open a
  // lock file in it.
  for (const p of [os.tmpdir(), d.dir]) fs.chmodSync(p, 0o711);
  const lock = path.join(locks, `${h.CONSUMER}.lock`);
  const r = spawnSync(process.execPath, ['-e', `const fs = require('fs');
    console.log(fs.readdirSync(${JSON.stringify(locks)}).includes(${JSON.stringify(path.basename(lock))}));
    fs.openSync(${JSON.stringify(lock)}, 'r');`], { uid: 65534, gid: 65534, encoding: 'utf8' });
  assert.equal(r.stdout.trim(), 'true', r.stderr);
  assert.match(r.stderr, /EACCES/);
  c.close();
  await e.kill();
  await d.stop();
});

// 'SERVING', or the error's code when nothing answers there.
const healthOf = (d) => h.health(d.addr).catch((e) => h.grpc.status[e.code]);

test('a daemon whose NODE.lock is deleted stops at once and stands by: never two serve the same directories', async () => {
  const a = await new h.Daemon().ready();
  const dir = a.dir;
  const uid = (n) => `0b1c2d3e-0000-4000-8000-0000000000${n}`;
  const setVia = async (d, pod) => {
    const c = d.client();
    try {
      return (await h.call(c, 'SetDesiredConfig', { config: {
        selector: { consumer: h.CONSUMER, schemaVersion: 1, podUid: pod }, payload: Buffer.from(pod) } })).config.revision;
    } finally {
      c.close();
    }
  };
  const listVia = async (d) => {
    const c = d.client();
    try {
      return (await h.call(c, 'ListDesiredConfigs', {})).configs.map((x) => x.selector.podUid).sort();
    } finally {
      c.close();
    }
  };
  const r1 = Number(await setVia(a, uid('a1')));
  fs.unlinkSync(path.join(dir, 'locks', 'NODE.lock'));
  await a.line(/event=node_lock_lost .*next=standby/);
  // Another daemon with the same directories (its own socket) starts:
  // of the two, one serves and the other stands by.
  const b = new h.Daemon({ dir, sock: path.join(dir, 'run', 'b.sock') });
  await h.until(async () => [await healthOf(a), await healthOf(b)].filter((x) => x === 'SERVING').length === 1,
    { what: 'one of the two to serve', timeout: 20000 });
  await h.sleep(500);
  const serving = (await healthOf(a)) === 'SERVING' ? a : b;
  const other = serving === a ? b : a;
  assert.notEqual(await healthOf(other), 'SERVING');
  await other.line(/event=standby/);
  const r2 = Number(await setVia(serving, uid('a2')));
  assert.ok(r2 > r1, `revision ${r2} after ${r1}`);
  assert.deepEqual(await listVia(serving), [uid('a1'), uid('a2')]);
  // The other takes over when it stops, with nothing lost.
  await serving.stop();
  await h.until(async () => (await healthOf(other)) === 'SERVING', { what: 'the other to take over', timeout: 20000 });
  assert.deepEqual(await listVia(other), [uid('a1'), uid('a2')]);
  assert.ok(Number(await setVia(other, uid('a3'))) > r2);
  await other.stop();
});

test('a deleted consumer lock is lost, and taken again with a larger epoch', async () => {
  const d = await new h.Daemon().ready();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const epochs = () => d.lines.filter((l) => l.includes('event=lock_taken') && l.includes(`consumer=${h.CONSUMER} `))
    .map((l) => Number(/epoch=(\d+)/.exec(l)[1]));
  await h.until(() => epochs().length === 1, { what: 'the lock taken' });
  fs.unlinkSync(path.join(d.dir, 'locks', `${h.CONSUMER}.lock`));
  await d.line(/event=lock_lost/);
  await h.until(() => epochs().length === 2, { what: 'the lock taken again' });
  const [first, again] = epochs();
  assert.ok(again > first, `epoch ${again} after ${first}`);
  await e.kill();
  await d.stop();
});

// A key file for the JSON views, and the header that sends it.
function viewsKey() {
  const f = path.join(h.scratch('procctl-key-'), 'http.key');
  const key = 'security-test-key-0123456789';
  fs.writeFileSync(f, `${key}\n`, { mode: 0o600 });
  return { file: f, headers: { authorization: `Bearer ${key}` } };
}

test('strings are read whole: a NUL inside one is refused, paths parse strictly', async () => {
  const key = viewsKey();
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0', '--http-api-key-file', key.file] }).ready();
  const port = await d.httpPort();
  const c = d.client();
  const e = await h.echo();
  await h.attached(d, e.pid);
  // "echo\0x" is not "echo": refused, and the process gets nothing.
  const err = await h.call(c, 'Publish', { selector: { consumer: `${h.CONSUMER}\0x`, schemaVersion: 1 }, payload: Buffer.from('nul') })
    .catch((x) => x);
  assert.equal(h.grpc.status[err.code], 'INVALID_ARGUMENT');
  assert.match(err.details, /consumer: holds a NUL byte/);
  for (const podUid of ['ab\0cd', '0b1c2d3e-0000-4000-8000-000000000001\0x']) {
    const r = await h.call(c, 'ListProcesses', { filter: { podUid } }).catch((x) => x);
    assert.equal(h.grpc.status[r.code], 'INVALID_ARGUMENT');
  }
  await h.sleep(300);
  assert.equal(e.out.filter((l) => l.includes('event=applied')).length, 0);
  // The same selector whole still works.
  await h.call(c, 'Publish', { selector: { consumer: h.CONSUMER, schemaVersion: 1 }, payload: Buffer.from('whole') });
  await e.line(/event=applied .*payload=whole/, { out: true });
  // HTTP: "01" is no pid, "%00" cuts nothing.
  const status = async (p) => (await fetch(`http://127.0.0.1:${port}${p}`, { headers: key.headers })).status;
  assert.equal(await status(`/v1/processes/${e.pid}`), 200);
  assert.equal(await status(`/v1/processes/0${e.pid}`), 400);
  assert.equal(await status('/v1/processes/01'), 400);
  assert.equal(await status('/metrics'), 200);
  assert.equal(await status('/metrics%00'), 404);
  assert.equal(await status('/healthz%00x'), 404);
  assert.equal(await status(`/v1/processes?consumer=${h.CONSUMER}%00x`), 400);
  assert.equal(await status(`/v1/processes?consumer=${h.CONSUMER}`), 200);
  c.close();
  await e.kill();
  await d.stop();
});

// A procsim that ran cmds (each answered "ok ..."), in order.
async function procsim(cmds) {
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  for (const cmd of cmds) await procsimDo(p, cmd);
  return p;
}

async function procsimDo(p, cmd) {
  const before = p.out.length;
  p.proc.stdin.write(`${cmd}\n`);
  await h.until(() => p.out.length > before || p.exit, { what: `${cmd} answered` });
  if (!p.out[before] || !p.out[before].startsWith('ok')) throw new Error(`procsim ${cmd}: ${p.out[before]}`);
}

test('a process whose header names a pipe as its event socket: attached without one, counted and logged', async () => {
  const p = await procsim([`init ${h.CONSUMER}`, 'evbad pipe']); // before the daemon: found whole by its first scan
  const d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  try {
    await h.attached(d, p.pid);
    await d.line(new RegExp(`event=event_fd_refused pid=${p.pid} .*reason="not a socket"`));
    assert.equal(await h.metric(await d.httpPort(), 'procctl_event_sockets_refused_total'), 1);
    const c = d.client();
    const r = await h.call(c, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('x') });
    assert.equal(r.results[0].status, 'PUBLISH_STATUS_WRITTEN'); // the region works without it
    c.close();
  } finally {
    await p.kill('SIGKILL');
    await d.stop();
  }
});

const ownership = async (port) => (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())
  .split('\n').filter((l) => l.startsWith(`procctl_processes{consumer="${h.CONSUMER}"`)).sort();

test('ownership is shown as the daemon holds it: owned, passive, conflict, broken; each refusal named', async () => {
  const a = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const pa = await a.httpPort();
  const p = await procsim([`init ${h.CONSUMER}`]);
  const ca = a.client();
  const state = async (c) => (await h.call(c, 'GetProcess', { process: { pid: p.pid } })).process.leaseState;
  await h.until(async () => (await state(ca).catch(() => '')) === 'LEASE_STATE_LIVE', { what: 'a owns it' });
  // Another daemon with another lock directory (another lock domain):
  // it holds its own consumer lock, but the region is a's.
  const b = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const pb = await b.httpPort();
  const cb = b.client();
  await h.until(async () => (await state(cb).catch(() => '')) === 'LEASE_STATE_CONFLICT', { what: 'b sees a conflict' });
  await b.line(/event=owner_conflict/);
  assert.deepEqual(await ownership(pb), [`procctl_processes{consumer="${h.CONSUMER}",ownership="conflict"} 1`]);
  let err = await h.call(cb, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('x') }).catch((x) => x);
  assert.equal(h.grpc.status[err.code], 'FAILED_PRECONDITION');
  assert.match(err.details, /another lock domain/);
  let r = await h.call(cb, 'Publish', { selector: { consumer: h.CONSUMER, schemaVersion: 1 }, payload: Buffer.from('x') });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_CONFLICT');
  cb.close();
  await b.stop();
  // The process breaks its own region (its seq moves under a): broken.
  r = await h.call(ca, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('before') });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_WRITTEN');
  await procsimDo(p, 'punch');
  err = await h.call(ca, 'Publish', { selector: { pid: p.pid }, payload: Buffer.from('after') }).catch((x) => x);
  assert.equal(h.grpc.status[err.code], 'FAILED_PRECONDITION');
  assert.match(err.details, /not as this daemon left it/);
  assert.equal(await state(ca), 'LEASE_STATE_BROKEN');
  r = await h.call(ca, 'Publish', { selector: { consumer: h.CONSUMER, schemaVersion: 1 }, payload: Buffer.from('x') });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_BROKEN');
  assert.deepEqual(await ownership(pa), [`procctl_processes{consumer="${h.CONSUMER}",ownership="broken"} 1`]);
  // Over its capacity: a named status too.
  const big = await h.echo();
  await h.attached(a, big.pid);
  r = await h.call(ca, 'Publish', { selector: { consumer: h.CONSUMER, schemaVersion: 1 }, payload: Buffer.alloc(1 << 20, 1) });
  assert.ok(r.results.length >= 1);
  for (const x of r.results) assert.ok(['PUBLISH_STATUS_TOO_LARGE', 'PUBLISH_STATUS_BROKEN'].includes(x.status), x.status);
  ca.close();
  await p.kill('SIGKILL');
  await a.stop();
});

// An echo client with exactly pid `want`, by setting this pid namespace's
// last pid (run.sh gives each file one of its own); null when it cannot.
async function echoWithPid(want) {
  for (let i = 0; i < 20; i++) {
    try {
      fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(want - 1));
    } catch {
      return null;
    }
    const e = await h.echo();
    if (e.pid === want) return e;
    await e.kill('SIGKILL');
  }
  return null;
}

test('a pid config is bound to its process: deleted when it exits, never applied to a later process with its pid', async (t) => {
  let d = await new h.Daemon().ready();
  let c = d.client();
  const list = async () => (await h.call(c, 'ListDesiredConfigs', {})).configs.filter((x) => x.selector.pid);
  const set = (pid) => h.call(c, 'SetDesiredConfig', {
    config: { selector: { pid, consumer: h.CONSUMER, schemaVersion: 1 }, payload: Buffer.from('secret') } });
  // A pid no attached process has cannot be bound.
  assert.equal(await h.code(set(4000000)), 'FAILED_PRECONDITION');
  // Bound at set time, shown in the list; gone when its process exits.
  let e = await h.echo();
  await h.attached(d, e.pid);
  await set(e.pid);
  await e.line(/event=applied .*payload=secret/, { out: true });
  const [bound] = await list();
  assert.equal(bound.selector.pid, e.pid);
  assert.ok(Number(bound.pidStartTime) > 0);
  await e.kill('SIGKILL');
  await h.until(async () => (await list()).length === 0, { what: 'the config gone with its process' });
  await d.line(/event=desired_deleted pid=\d+ configs=1/);
  // Set again for another process, then, while no daemon runs, it exits
  // and a new process takes its pid: the next daemon drops the config,
  // and the newcomer never gets it.
  e = await h.echo();
  await h.attached(d, e.pid);
  await set(e.pid);
  const pid = e.pid;
  c.close();
  await d.stop();
  await e.kill('SIGKILL');
  const reuse = await echoWithPid(pid);
  if (!reuse) {
    t.diagnostic('could not make a process with the same pid here (ns_last_pid): the restart half is skipped');
    return;
  }
  d = await new h.Daemon({ dir: d.dir }).ready();
  c = d.client();
  await h.attached(d, reuse.pid);
  assert.deepEqual(await list(), []);
  await d.line(/event=desired_deleted pid=\d+ configs=1 reason="its process is gone"/);
  await h.sleep(300);
  assert.equal(reuse.out.filter((l) => l.includes('payload=secret')).length, 0);
  c.close();
  await d.stop();
});

test('a pid config is bound to the image its process runs: an exec while no daemon ran deletes it', async () => {
  let d = await new h.Daemon().ready();
  let c = d.client();
  const list = async () => (await h.call(c, 'ListDesiredConfigs', {})).configs.filter((x) => x.selector.pid);
  // procsim (test/procsim.c): a process side driven line by line; exec
  // makes it another image (sleep) under the same pid and start time.
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.write(`init ${h.CONSUMER}\n`);
  await p.line(/^ok /, { out: true });
  await h.attached(d, p.pid);
  await h.call(c, 'SetDesiredConfig', {
    config: { selector: { pid: p.pid, consumer: h.CONSUMER, schemaVersion: 1 }, payload: Buffer.from('for-this-image') } });
  assert.equal((await list()).length, 1);
  c.close();
  await d.stop();
  p.proc.stdin.write('exec\n');
  await h.until(() => fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').startsWith('sleep'), { what: 'the exec' });
  d = await new h.Daemon({ dir: d.dir }).ready();
  c = d.client();
  assert.deepEqual(await list(), []);
  await d.line(new RegExp(`event=desired_deleted pid=${p.pid} configs=1`));
  c.close();
  await d.stop();
  await p.kill('SIGKILL');
});

test('HTTP serves health and /metrics to anyone; the JSON views only with the key, on loopback', async () => {
  const e = await h.echo();
  // No key: the views are off, metrics are not.
  let d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  let port = await d.httpPort();
  await h.attached(d, e.pid);
  const at = (p, headers = {}) => fetch(`http://127.0.0.1:${port}${p}`, { headers });
  assert.equal((await at('/healthz')).status, 200);
  assert.equal((await at('/metrics')).status, 200);
  let r = await at(`/v1/processes/${e.pid}/state`);
  assert.equal(r.status, 403);
  assert.match((await r.json()).error, /JSON views are off/);
  await d.stop();
  // A key others can read is no key: the daemon does not start, a
  // configuration error (exit 2) said before anything listens or attaches.
  const dir = h.scratch('procctl-key-');
  const keyFile = path.join(dir, 'http.key');
  const key = 'k'.repeat(40);
  fs.writeFileSync(keyFile, `${key}\n`, { mode: 0o644 });
  fs.chmodSync(keyFile, 0o644);
  const bad = new h.Daemon({ args: ['--http-listen', '127.0.0.1:0', '--http-api-key-file', keyFile] });
  assert.equal((await bad.exited).code, 2);
  assert.ok(bad.lines.some((l) => /event=start_failed .*others cannot read/.test(l)), bad.lines.join('\n'));
  assert.ok(!bad.lines.some((l) => /event=(listening|attached|lock_taken)/.test(l)), bad.lines.join('\n'));
  // With the key: 401 (and how to authenticate) without it or with another.
  fs.chmodSync(keyFile, 0o600);
  d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0', '--http-api-key-file', keyFile] }).ready();
  port = await d.httpPort();
  await h.attached(d, e.pid);
  r = await at(`/v1/processes/${e.pid}/state`);
  assert.equal(r.status, 401);
  assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="procctl-node"');
  assert.equal((await at(`/v1/processes/${e.pid}/state`, { authorization: `Bearer ${key}x` })).status, 401);
  assert.equal((await at(`/v1/processes/${e.pid}/state`, { authorization: `Bearer ${key.slice(1)}` })).status, 401);
  assert.equal((await at(`/v1/processes/${e.pid}/state`, { authorization: `Basic ${key}` })).status, 401);
  assert.equal((await at(`/v1/processes/${e.pid}/state`, { authorization: `Bearer ${key}` })).status, 200);
  assert.equal((await at('/metrics')).status, 200);
  await d.stop();
});

// A config file with [arbiter gpu] for consumer (kind 1, hold 100 ms, GPU
// 0) that admits root's processes alone: its path.
function rootOnlyGpu(consumer) {
  const conf = path.join(h.scratch('procctl-admit-'), 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${consumer}\nhold_ms = 100\n` +
    'resources = 00000000-0000-0000-0000-000000000000\nadmit_default = deny\nadmit_uids = 0\n');
  return conf;
}

test('a process that says it uses the gpu with no grant blocks nobody, refused or admitted: hand-offs go on', async () => {
  const consumer = `lie${process.pid}`.slice(0, 31);
  const conf = rootOnlyGpu(consumer);
  const d = await new h.Daemon({ consumers: consumer, args: ['--config', conf] }).ready();
  const c = d.client();
  const tokens = [];
  for (let i = 0; i < 2; i++) { // two admitted holders, taking turns
    const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', consumer, '--kind', '1', '--id', '0']);
    await t.line(/^event=started pid=\d+$/, { out: true });
    await h.attached(d, t.pid);
    tokens.push(t);
  }
  const gpu = async () => (await h.call(c, 'GetArbiter', { kind: 'gpu' })).arbiter.resources[0];
  const turns = async (what) => {
    const before = Number((await gpu()).handoffs);
    await h.until(async () => Number((await gpu()).handoffs) >= before + 4, { what: `4 hand-offs with ${what}` });
    assert.equal((await gpu()).waiters, 1, what); // the other token client alone
  };
  await turns('two token clients');
  const refused = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'], uid: 65534, gid: 65534 });
  const admitted = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  for (const p of [refused, admitted]) {
    await procsimDo(p, `init ${consumer}`);
    await h.attached(d, p.pid);
  }
  // HOLDING written raw (procctl_resource_report refuses it without a
  // grant), RELEASING and ACQUIRING, asking too: no grant of the arbiter's.
  for (const [p, cmd, who] of [[refused, 'forgeres 1 0 2 1', 'refused, HOLDING'], [refused, 'report 1 0 3 1', 'refused, RELEASING'],
    [refused, 'forgeres 1 0 1 1', 'refused, ACQUIRING'], [admitted, 'forgeres 1 0 2 0', 'admitted, HOLDING'],
    [admitted, 'report 1 0 3 0', 'admitted, RELEASING']]) {
    await procsimDo(p, cmd);
    await procsimDo(p, 'ring 1'); // the arbiter reads it now: a quiet target is read each second anyway
    await h.sleep(1100); // ... so by now it has seen the report
    await turns(`a process ${who} with no grant`);
  }
  c.close();
  await Promise.all([...tokens, refused, admitted].map((k) => k.kill('SIGKILL')));
  await d.stop();
});

test('an arbiter grants only to whom its admission admits; what a refused process asks for is not learned', async () => {
  const consumer = `tok${process.pid}`.slice(0, 31);
  const conf = rootOnlyGpu(consumer);
  const d = await new h.Daemon({ consumers: consumer, args: ['--config', conf, '--http-listen', '127.0.0.1:0'] })
    .ready();
  const port = await d.httpPort();
  const c = d.client();
  const token = async (spawnOpts = {}) => {
    const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', consumer, '--kind', '1', '--id', '0'], spawnOpts);
    await t.line(/^event=started pid=\d+$/, { out: true });
    await h.attached(d, t.pid);
    return t;
  };
  const root = await token();
  const nobody = await token({ uid: 65534, gid: 65534 });
  const gpu = async () => (await h.call(c, 'GetArbiter', { kind: 'gpu' })).arbiter.resources;
  await h.until(async () => (await gpu())[0].holder && (await gpu())[0].holder.pid === root.pid,
    { what: 'root to hold the gpu' });
  // Over many hold times the refused process is never granted, nor
  // counted waiting.
  for (let i = 0; i < 15; i++) {
    const [r] = await gpu();
    assert.ok(!r.holder || r.holder.pid !== nobody.pid, 'the refused process holds the gpu');
    assert.equal(r.waiters, 0);
    await h.sleep(100);
  }
  const proc = async (pid) => (await h.call(c, 'GetProcess', { process: { pid } })).process;
  assert.deepEqual((await proc(root.pid)).arbiterRefusals, []);
  const [why] = (await proc(nobody.pid)).arbiterRefusals;
  assert.match(why, /^gpu: uid 65534 gid 65534 pod none cgroup \S+: in no admit_ list \(admit_default = deny\)$/);
  assert.equal(await h.metric(port, 'procctl_arbiter_refused_processes{kind="gpu"}'), 1);
  await d.line(/event=admission_refused kind=gpu pid=\d+/);
  // A refused process that names a resource of its own: not learned.
  const filler = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'], uid: 65534, gid: 65534 });
  await procsimDo(filler, `init ${consumer}`);
  for (let b = 1; b <= 4; b++) await procsimDo(filler, `report 1 ${b} 0 1`); // all its state block holds
  await h.attached(d, filler.pid);
  await h.sleep(300);
  assert.equal((await gpu()).length, 1);
  c.close();
  await Promise.all([root.kill('SIGKILL'), nobody.kill('SIGKILL'), filler.kill('SIGKILL')]);
  await d.stop();
});
