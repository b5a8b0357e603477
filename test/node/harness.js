// SPDX-License-Identifier: Apache-2.0
// harness.js - what the procctl-node tests share: start a real daemon in a
// scratch directory, real echo and token clients, and a real gRPC client
// (@grpc/grpc-js with @grpc/proto-loader on proto/procctl/v1/node.proto).
//
// ctest passes the binaries' paths: PROCCTL_NODE, ECHO_CLIENT,
// TOKEN_CLIENT, PROTO_DIR, BUF.
'use strict';

const { after, afterEach, beforeEach } = require('node:test');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (ctest sets it)`);
  return v;
};
const NODE_BIN = env('PROCCTL_NODE');
const ECHO_CLIENT = env('ECHO_CLIENT');
const TOKEN_CLIENT = env('TOKEN_CLIENT');
const PROTO_DIR = env('PROTO_DIR');
const BUF = env('BUF');

const pkgDef = protoLoader.loadSync('procctl/v1/node.proto', {
  includeDirs: [PROTO_DIR],
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
});
const api = grpc.loadPackageDefinition(pkgDef).procctl.v1;

// Each test file has its consumer name, so that the daemons of files run
// side by side never see each other's clients.
const CONSUMER = `echo${process.pid}`.slice(0, 31);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll fn until it returns a truthy value (or throws its last error).
async function until(fn, { timeout = 10000, every = 20, what = 'condition' } = {}) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(every);
  }
}

// What this file started and made: every child still running and every
// scratch directory, so that a failed test leaves nothing behind.
const running = new Set();
const scratchDirs = [];

function reap() {
  for (const c of running) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  for (const d of scratchDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}
process.on('exit', reap);
// Registered first, so it runs before the file's own after hooks: those
// get 30 s to stop what they started cleanly (and to check that they
// did); whatever still runs then, after a failed test or a failed hook,
// is killed so that the file ends instead of waiting for its timeout.
after(() => {
  setTimeout(reap, 30000).unref();
});
// A failed test's children go at its end, not at the file's: a farm of
// 2,000 processes left running took the CPU from every test after it.
let born = 0;
let testFirst = 0;
beforeEach(() => {
  testFirst = born;
});
afterEach((t) => {
  if (t.passed) return;
  for (const c of running) {
    if (c.born < testFirst) continue;
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
});

// A daemon's /metrics on 127.0.0.1:port, scraped once: a function that
// gives a sample by its whole name with labels (NaN: not there).
function scrape(port) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('error', reject); // reset while the body comes
      res.on('data', (x) => { body += x; });
      res.on('end', () => resolve((name) => {
        const line = body.split('\n').find((l) => l.startsWith(`${name} `));
        return line ? Number(line.slice(name.length + 1)) : NaN;
      }));
    }).on('error', reject);
  });
}

// One sample of a daemon's /metrics (scrape).
async function metric(port, name) {
  return (await scrape(port))(name);
}

// A TCP port on 127.0.0.1 that nothing listens on (now), and that this
// process has not been given before: the kernel may hand a port just
// closed out again, and two asked for in a row (a daemon's gRPC and HTTP
// listeners) must differ.
const portsGiven = new Set();
async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.on('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port: p } = s.address();
        s.close(() => resolve(p));
      });
    });
    if (!portsGiven.has(port)) {
      portsGiven.add(port);
      return port;
    }
  }
}

// A scratch directory under the test's TMPDIR, removed when the file ends.
function scratch(prefix = 'procctl-') {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratchDirs.push(d);
  return d;
}

// A child process whose stdout/stderr lines are kept. opts: spawn's
// options, and prefix: a command that runs it in namespaces (nsenter
// ... --), which forks it and ends as it ends; kill() signals it, not the
// prefix.
class Child {
  constructor(cmd, args, { prefix = [], ...opts } = {}) {
    this.lines = [];
    this.out = [];
    const argv = [...prefix, cmd, ...args];
    this.proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    this.pid = this.proc.pid;
    this.prefixed = prefix.length > 0;
    this.born = born++;
    running.add(this);
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, sig) => resolve({ code, sig })));
    this.exit = null;
    this.exited.then((e) => {
      this.exit = e;
      running.delete(this);
    });
    const keep = (stream, into) => {
      let buf = '';
      stream.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          into.push(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
    };
    keep(this.proc.stdout, this.out);
    keep(this.proc.stderr, this.lines);
  }

  // The first line (of stdout with out: true, else stderr) matching re.
  async line(re, { out = false, timeout = 10000 } = {}) {
    const lines = out ? this.out : this.lines;
    return until(() => lines.find((l) => re.test(l)), { timeout, what: `${re} from ${this.pid}` });
  }

  // The pid of the command itself: with a prefix that forks it (nsenter
  // into a pid namespace), the prefix's child; else the one spawned.
  innerPid() {
    if (!this.prefixed) return this.pid;
    try {
      return Number(fs.readFileSync(`/proc/${this.pid}/task/${this.pid}/children`, 'utf8').trim().split(' ')[0]) || this.pid;
    } catch {
      return null; // the prefix is gone
    }
  }

  signal(sig) {
    if (this.exit === null && !this.prefixed) this.proc.kill(sig);
    else if (this.exit === null && this.innerPid()) process.kill(this.innerPid(), sig);
  }

  // Signal it: its exit ({ code, sig }). Not ended within ms, it is
  // killed and the promise rejects, naming it with its last lines: a
  // process that ignores its SIGTERM fails the test that sent it, not
  // the whole file at its timeout.
  async kill(sig = 'SIGTERM', { ms = 30000 } = {}) {
    this.signal(sig);
    let t;
    const late = new Promise((resolve) => { t = setTimeout(resolve, ms, 'late'); });
    const e = await Promise.race([this.exited, late]);
    clearTimeout(t);
    if (e !== 'late') return e;
    this.signal('SIGKILL');
    await this.exited;
    throw new Error(`pid ${this.pid} had not exited ${ms} ms after ${sig}:\n${this.lines.slice(-40).join('\n')}`);
  }

  // SIGTERM, and SIGKILL if it has not ended within ms.
  async stop(ms = 10000) {
    const t = setTimeout(() => this.signal('SIGKILL'), ms);
    this.signal('SIGTERM');
    await this.exited;
    clearTimeout(t);
  }
}

// A daemon in its own scratch directory, HTTP off unless opts.args turn
// it on. opts.args: extra flags; opts.dir: share a directory (locks,
// state, socket) with another daemon; opts.sock: its socket's path
// instead of dir/run/node.sock; opts.spawn: child_process.spawn options
// (uid, gid); opts.prefix: a command to run it in namespaces (Child).
class Daemon extends Child {
  constructor(opts = {}) {
    const dir = opts.dir || scratch('procctl-node-');
    const sock = opts.sock || path.join(dir, 'run', 'node.sock');
    const args = ['--grpc-listen', `unix:${sock}`, '--lock-dir', path.join(dir, 'locks'),
      '--state-dir', path.join(dir, 'state'), '--rescan-ms', '100', '--http-listen', '',
      ...(opts.consumers === null ? [] : ['--consumers', opts.consumers || CONSUMER]), ...(opts.args || [])];
    super(NODE_BIN, args, { ...opts.spawn, prefix: opts.prefix });
    this.dir = dir;
    this.sock = sock;
    this.addr = `unix:${sock}`;
  }

  // Wait until it serves (health SERVING on its socket).
  async ready() {
    await until(async () => {
      if (this.exit) throw new Error(`procctl-node exited: ${JSON.stringify(this.exit)}\n${this.lines.join('\n')}`);
      return (await health(this.addr)) === 'SERVING';
    }, { what: 'procctl-node to serve' });
    return this;
  }

  client(opts) {
    return client(this.addr, opts);
  }

  // Where it listens, as its listening line says (the port the kernel
  // picked, for PORT 0): 'http' gives HTTP's HOST:PORT, 'tcp' the first
  // gRPC TCP listener's.
  async bound(kind) {
    const re = kind === 'http' ? /event=listening addr=http:\/\/(\S+)/ : /event=listening addr=([^u\s][^\s]*:\d+) tls=/;
    return re.exec(await this.line(re))[1];
  }

  // Its HTTP port (given --http-listen 127.0.0.1:0), and its first gRPC
  // TCP listener's (given --grpc-listen 127.0.0.1:0).
  async httpPort() {
    return Number((await this.bound('http')).split(':').pop());
  }

  async tcpPort() {
    return Number((await this.bound('tcp')).split(':').pop());
  }

  // SIGTERM, and check it went cleanly: exit 0, no sanitizer report.
  async stop() {
    const e = await this.kill('SIGTERM');
    const bad = this.lines.find((l) => /Sanitizer|runtime error:/.test(l));
    if (e.code !== 0 || bad) {
      throw new Error(`procctl-node did not stop cleanly: ${JSON.stringify(e)}\n${this.lines.slice(-60).join('\n')}`);
    }
    return e;
  }
}

function client(addr, { creds = grpc.credentials.createInsecure(), options = {} } = {}) {
  return new api.NodeService(addr, creds, options);
}

// Call a unary method as a promise: resolves with the response, rejects
// with the grpc error (err.code, err.details).
function call(c, method, req, { deadlineMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    c[method](req, { deadline: Date.now() + deadlineMs }, (err, resp) => (err ? reject(err) : resolve(resp)));
  });
}

// The status code name of a failed call.
async function code(p) {
  try {
    await p;
  } catch (e) {
    return grpc.status[e.code];
  }
  return 'OK';
}

const healthPkg = grpc.loadPackageDefinition(protoLoader.loadSync('grpc/health/v1/health.proto', {
  includeDirs: [path.join(PROTO_DIR, '..', 'server', 'grpc', 'proto')], enums: String,
})).grpc.health.v1;

// A health Watch stream: its statuses as they come.
function healthWatch(addr, service = '') {
  const hc = new healthPkg.Health(addr, grpc.credentials.createInsecure());
  const s = hc.Watch({ service });
  const w = { stream: s, statuses: [], error: null };
  s.on('data', (r) => w.statuses.push(r.status));
  s.on('error', (e) => (w.error = e));
  w.close = () => hc.close();
  return w;
}

// A health client of its own (Check through h.call), for many calls.
const healthClient = (addr) => new healthPkg.Health(addr, grpc.credentials.createInsecure());

function health(addr, service = '') {
  const h = new healthPkg.Health(addr, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    h.Check({ service }, { deadline: Date.now() + 2000 }, (err, r) => {
      h.close();
      return err ? reject(err) : resolve(r.status);
    });
  });
}

// The echo clients a test file started: killAll() at its end.
const echoes = [];
const killAll = () => Promise.all(echoes.map((k) => k.kill('SIGKILL')));

// An echo client (this file's consumer, schema 1) that has said it started;
// more: its further arguments (--epoll).
async function echo(consumer = CONSUMER, more = []) {
  const c = new Child(ECHO_CLIENT, ['--consumer', consumer, ...more]);
  echoes.push(c);
  await c.line(/event=started/, { out: true });
  return c;
}

// Wait until the daemon lists pid.
async function attached(d, pid) {
  const c = d.client();
  try {
    return await until(async () => {
      const r = await call(c, 'ListProcesses', {});
      return r.processes.find((p) => p.ref.pid === pid);
    }, { what: `pid ${pid} to be attached` });
  } finally {
    c.close();
  }
}

// An echo client of d, stopped (SIGSTOP), and a generation published to
// it through c that it cannot ack: { e, gen }, for calls that wait.
async function stoppedEcho(d, c) {
  const e = await echo();
  await attached(d, e.pid);
  process.kill(e.pid, 'SIGSTOP');
  const r = await call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('never acked') });
  return { e, gen: r.results[0].generation };
}

// A process's's open sockets (a daemon's listeners and connections).
function sockets(pid) {
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed since the listing
    }
  }
  return n;
}

// A WatchEvents stream whose events are collected as they come.
function watch(c, req = {}, opts = {}) {
  const s = c.WatchEvents(req, opts);
  const w = { stream: s, events: [], error: null, ended: false };
  s.on('data', (e) => w.events.push(e));
  s.on('error', (e) => (w.error = e));
  s.on('end', () => (w.ended = true));
  s.on('status', (st) => (w.status = st));
  w.next = (pred, what = 'an event') => until(() => w.events.find(pred), { what });
  w.errored = () => until(() => w.error, { what: 'the stream to fail' });
  return w;
}

// buf curl over the daemon's Unix socket, through reflection only.
function bufCurl(sock, args) {
  return spawnSync(BUF, ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', '--unix-socket', sock, ...args],
    { encoding: 'utf8', timeout: 20000 });
}

// Wakeups (voluntary context switches) of pid's own threads (the loop,
// and procctl-*: the heartbeat, doorbells, off-path reads, gRPC's queue), by name.
function switches(pid) {
  const by = {};
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    let comm, status;
    try {
      comm = fs.readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      status = fs.readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // The loop is the main thread; the others are named procctl-*, and a
    // sanitizer's own thread keeps the process's name.
    if (Number(t) !== pid && !(comm.startsWith('procctl-') && comm !== 'procctl-node'))
      continue;
    const n = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)[1]);
    by[`${comm}/${t}`] = n('voluntary_ctxt_switches'); // its sleeps that ended, not preemptions
  }
  return by;
}

module.exports = {
  grpc, api, sleep, until, scratch, freePort, metric, scrape, Child, Daemon, client, call, code, health, healthClient, healthWatch, echo, killAll, attached, stoppedEcho, sockets, watch, bufCurl, switches,
  CONSUMER, NODE_BIN, ECHO_CLIENT, TOKEN_CLIENT, PROTO_DIR, BUF,
};
