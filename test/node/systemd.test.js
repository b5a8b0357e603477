// SPDX-License-Identifier: Apache-2.0
// systemd.test.js - procctl-node under a service manager (issue 40), as
// systemd sees it: sd_notify(3)'s datagrams on $NOTIFY_SOCKET, received
// by test/notifysock.c with the sender's pid (NotifyAccess=main takes
// only the main pid's): READY=1 once it serves and not before, WATCHDOG=1
// every half of $WATCHDOG_USEC from the loop and none while the daemon
// is stopped, STOPPING=1 at SIGTERM; and the socket's group
// (socket_group), whose members call the API and nobody else does.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const h = require('./harness');
const { run, said, exits } = require('./clirun');

after(() => h.killAll());

const NOTIFYSOCK = process.env.NOTIFYSOCK;
const WATCHDOG_USEC = 200000; // pings every 100 ms

// A notify socket (a path, or "@NAME": abstract) and the lines it got.
async function notifySocket(addr) {
  const n = new h.Child(NOTIFYSOCK, [addr]);
  await n.line(/^ready$/, { out: true });
  return n;
}

const said_ = (n) => n.out.slice(1); // the datagrams, "pid=N STATE"
const pings = (n) => said_(n).filter((l) => / WATCHDOG=1$/.test(l)).length;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Until pid is stopped (its state T in /proc).
const stopped = (pid) => h.until(() => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0] === 'T',
  { what: `${pid} stopped` });

// A datagram of the test's own to addr (perl-base's Socket: node has no
// Unix datagrams), and its line from n: the socket's queue is in order, so
// every datagram sent before it was read first.
async function marked(addr, n) {
  const tag = `MARK${Date.now()}`;
  const r = spawnSync('perl', ['-MSocket', '-e', 'socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die "socket: $!"; ' +
    'send($s, $ARGV[1], 0, pack_sockaddr_un($ARGV[0])) or die "send: $!"', addr, tag], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  await n.line(new RegExp(` ${tag}$`), { out: true });
}

test('READY=1 when it serves, from its own pid; WATCHDOG=1 from the loop, none while stopped; STOPPING=1', async () => {
  const addr = path.join(h.scratch('procctl-notify-'), 'notify');
  const n = await notifySocket(addr);
  const d = new h.Daemon({ spawn: { env: { ...process.env, NOTIFY_SOCKET: addr, WATCHDOG_USEC: String(WATCHDOG_USEC) } } });
  const ready = await n.line(/ READY=1/, { out: true });
  // The moment systemd hears it, the socket serves: no client started
  // after `systemctl start` returns finds it not yet listening.
  assert.equal(await h.health(d.addr), 'SERVING');
  assert.equal(ready, `pid=${d.pid} READY=1 STATUS=serving`);
  assert.equal(said_(n)[0], `pid=${d.pid} STATUS=taking NODE.lock (another procctl-node may hold it)`);
  assert.equal(said_(n).filter((l) => / READY=1/.test(l)).length, 1);
  await h.until(() => pings(n) >= 3, { what: 'three WATCHDOG=1' });
  assert.ok(said_(n).every((l) => l.startsWith(`pid=${d.pid} `)), said_(n).join('\n'));

  // Stopped (a hung daemon, as the watchdog sees it): no ping comes.
  process.kill(d.pid, 'SIGSTOP');
  await stopped(d.pid);
  await marked(addr, n); // every datagram sent before the stop is in
  const before = pings(n);
  await sleep(6 * WATCHDOG_USEC / 1000);
  assert.equal(pings(n), before, 'WATCHDOG=1 while the daemon was stopped');
  process.kill(d.pid, 'SIGCONT');
  await h.until(() => pings(n) > before, { what: 'WATCHDOG=1 again after SIGCONT' });

  await d.stop();
  assert.match(said_(n).at(-1), new RegExp(`^pid=${d.pid} STOPPING=1 STATUS=handing off$`));
  await n.stop();
});

test('NODE.lock lost: WATCHDOG=1 goes on through the hand-off and the standby, and the loop pings again once it serves',
  async () => {
    const addr = path.join(h.scratch('procctl-notify-'), 'notify');
    const n = await notifySocket(addr);
    const d = await new h.Daemon({ spawn: { env: { ...process.env, NOTIFY_SOCKET: addr, WATCHDOG_USEC: String(WATCHDOG_USEC) } } })
      .ready();
    await n.line(/ READY=1/, { out: true });
    // Another daemon's lock, held, renamed over this one's: it hands off
    // and stands by on the new file until the holder lets go.
    const lock = path.join(d.dir, 'locks', 'NODE.lock');
    const holder = new h.Child('flock', ['-x', `${lock}.theirs`, 'sh', '-c', 'echo held; read x'], { stdio: ['pipe', 'pipe', 'pipe'] });
    await holder.line(/^held$/, { out: true });
    fs.renameSync(`${lock}.theirs`, lock);
    await d.line(/event=standby /);
    const before = pings(n);
    await h.until(() => pings(n) >= before + 3, { what: 'three WATCHDOG=1 on standby' });
    assert.ok(d.lines.some((l) => /event=node_lock_lost /.test(l)));
    assert.ok(!d.lines.some((l) => /event=taking_over /.test(l)), 'it did not wait');
    holder.proc.stdin.end('\n'); // let go: it takes over and serves again
    await d.line(/event=taking_over /);
    await h.until(async () => (await h.health(d.addr)) === 'SERVING', { what: 'serving again' });
    const serving = pings(n);
    await h.until(() => pings(n) >= serving + 2, { what: 'the loop pinging again' });
    await d.stop();
    await n.stop();
  });

test('an abstract notify socket; WATCHDOG_PID of another process: READY=1 and no pings', async () => {
  const n = await notifySocket(`@procctl-test-${process.pid}-${Date.now()}`);
  const d = new h.Daemon({
    spawn: { env: { ...process.env, NOTIFY_SOCKET: n.proc.spawnargs.at(-1), WATCHDOG_USEC: String(WATCHDOG_USEC), WATCHDOG_PID: '1' } },
  });
  await n.line(/ READY=1/, { out: true });
  await sleep(5 * WATCHDOG_USEC / 1000);
  assert.equal(pings(n), 0, said_(n).join('\n'));
  await d.stop();
  await n.stop();
});

test('a NOTIFY_SOCKET nobody listens on, or not a path: said, and the daemon serves regardless', async () => {
  for (const [addr, why] of [[path.join(h.scratch('procctl-notify-'), 'none'), 'No such file or directory'],
    ['relative/notify', 'Invalid argument']]) {
    const d = await new h.Daemon({ spawn: { env: { ...process.env, NOTIFY_SOCKET: addr } } }).ready();
    await d.line(new RegExp(`event=notify_failed socket=${addr} error="${why}"`));
    await d.stop();
  }
});

test('socket_group: the socket is the group\'s, 0660; its members call the API, others are refused', async () => {
  const gid = 42420 + (process.pid % 1000); // a gid with no name: nothing is added to the host's groups
  const d = await new h.Daemon({ args: ['--socket-group', String(gid)] }).ready();
  const st = fs.statSync(d.sock);
  assert.equal(st.gid, gid);
  assert.equal(st.mode & 0o7777, 0o660);
  await d.line(new RegExp(`event=listening addr=unix:${d.sock} mode=0660 group=${gid}$`));
  for (let p = path.dirname(d.sock); p !== '/' && p !== path.dirname(d.dir); p = path.dirname(p)) fs.chmodSync(p, 0o755);
  const as = (groups) => ['setpriv', '--reuid=65534', '--regid=65534', ...groups, '--'];
  const member = exits(await run(['health'], { sock: d.sock, prefix: as([`--groups=${gid}`]) }), 0);
  assert.match(member.stdout, /SERVING/, said(member));
  const other = exits(await run(['health'], { sock: d.sock, prefix: as(['--clear-groups']) }), 1);
  assert.match(other.stderr, new RegExp(`permission denied: the socket is mode 0660, of user root and group ${gid}`), said(other));
  await d.stop();
});

test('socket_group without CAP_CHOWN (procctl-node.service): a daemon in the group sets it; one not in it says why', async () => {
  const gid = 42420 + (process.pid % 1000);
  const nochown = (groups) => ['setpriv', '--bounding-set=-chown', ...groups, '--'];
  const member = await new h.Daemon({ args: ['--socket-group', String(gid)], prefix: nochown([`--groups=${gid}`]) }).ready();
  assert.equal(fs.statSync(member.sock).gid, gid);
  await member.stop();
  const not = new h.Daemon({ args: ['--socket-group', String(gid)], prefix: nochown(['--clear-groups']) });
  assert.equal((await not.exited).code, 2, not.lines.join('\n')); // configuration: a restart would not mend it
  await not.line(new RegExp(`event=start_failed error="grpc_listen unix:${not.sock}: socket_group ${gid}: Operation not ` +
    'permitted \\(the daemon must be in the group, SupplementaryGroups= in its unit, or have CAP_CHOWN\\)"'));
  assert.ok(!fs.existsSync(not.sock), 'the socket it could not give the group is left');
});

test('socket_group naming no group: the start fails, and --check-config says so', async () => {
  const bad = `nosuchgroup${process.pid}`;
  const d = new h.Daemon({ args: ['--socket-group', bad] });
  const e = await d.exited;
  assert.equal(e.code, 2, d.lines.join('\n'));
  await d.line(new RegExp(`event=start_failed error="socket_group ${bad}: no such group"`));
  const r = await new Promise((resolve) => {
    const c = new h.Child(process.env.PROCCTL_NODE, ['--check-config', '--socket-group', bad]);
    c.exited.then((x) => resolve({ ...x, err: c.lines.join('\n') }));
  });
  assert.equal(r.code, 2);
  assert.match(r.err, new RegExp(`^procctl-node: socket_group ${bad}: no such group$`));
});
