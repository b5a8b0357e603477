// SPDX-License-Identifier: Apache-2.0
// slowloris.test.js - clients that trickle their requests (slowloris) on
// the HTTP listener: 2,100 of them, from 210 loopback addresses (the
// per-IP limit binds none), each sending a byte every 2 s (well inside
// the 15 s idle timeout): more than the 2,048 connections the daemon
// holds, so that they would fill it. /healthz and /readyz still answer
// 200 and /metrics answers, each newcomer evicting the connection that
// has waited longest for its request; and a request that keeps
// trickling is closed once it is late (10 s), however often it sends.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const h = require('./harness');

const TRICKLERS = 2100;
// The trickler's sockets, and the daemon's as many: both inherit this
// process's descriptor limit, whose soft value node raised to the hard one.
const NOFILE = 8192;
let d, port;

// Raise this process's descriptor limit to n when it is lower (as root,
// which run.sh runs the tests as).
function ensureNofile(n) {
  const m = /^Max open files\s+(\S+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  if (m[1] === 'unlimited' || Number(m[1]) >= n) return;
  const r = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${n}:${n}`], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 0, `prlimit --nofile=${n}: ${r.stderr}`);
}

// One GET on a connection of its own, bounded: { status, body }; a
// refusal or no answer in 10 s rejects.
function get(p) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (x) => (body += x));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${p}: no answer in 10 s`)));
    req.on('error', reject);
  });
}

// A sample of a /metrics body, by its whole name with labels (NaN: none).
const sample = (body, name) => {
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
};

before(async () => {
  ensureNofile(NOFILE);
  d = await new h.Daemon({ args: ['--http-listen', '127.0.0.1:0'] }).ready();
  port = await d.httpPort();
});

after(async () => {
  await d.stop();
});

test('2,100 trickling connections: /healthz, /readyz and /metrics answer', async () => {
  const base = h.sockets(d.pid);
  const t = new h.Child(process.execPath, [path.join(__dirname, 'trickler.js'), String(port), String(TRICKLERS), '2000'],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  const stats = () => (t.out.length ? JSON.parse(t.out[t.out.length - 1]) : { open: 0, opened: 0, closed: 0 });
  try {
    await h.until(() => stats().opened >= TRICKLERS, { timeout: 60000, what: `${TRICKLERS} trickling connections` });
    // The daemon took all it holds (not only the kernel's backlog).
    await h.until(() => h.sockets(d.pid) >= base + 2000, { timeout: 60000, what: 'the daemon to hold 2,000 of them' });
    const evicted = sample((await get('/metrics')).body, 'procctl_http_cut_total{reason="evicted"}');
    for (let round = 0; round < 5; round++) {
      const hz = await get('/healthz');
      assert.equal(hz.status, 200, hz.body);
      assert.deepEqual(JSON.parse(hz.body), { status: 'alive' });
      const rz = await get('/readyz');
      assert.equal(rz.status, 200, rz.body);
      const m = await get('/metrics');
      assert.equal(m.status, 200, m.body);
      await h.sleep(500);
    }
    // The probes came in beside the tricklers, not after them: all the
    // while, newcomers found the daemon past its spare room, and evicted
    // the connections that had waited longest for their requests.
    const m = (await get('/metrics')).body;
    assert.ok(sample(m, 'procctl_http_cut_total{reason="evicted"}') > evicted, m);
    const status = fs.readFileSync(`/proc/${d.pid}/status`, 'utf8');
    console.log(`under ${TRICKLERS} tricklers: ${JSON.stringify(stats())}; daemon ${/^VmRSS:\s+(.*)$/m.exec(status)[1]},`,
      `${/^Threads:\s+(\d+)/m.exec(status)[1]} threads`);
  } finally {
    t.proc.stdin.end(); // it closes every socket and ends
    await h.until(() => t.exit, { timeout: 30000, what: 'the trickler to end' });
  }
  await h.until(async () => sample((await get('/metrics')).body, 'procctl_http_connections') <= 1,
    { timeout: 30000, what: 'the daemon to close the tricklers\' connections' });
  assert.equal(d.exit, null);
});

test('a request that keeps trickling is closed once it is late', async () => {
  const late = async () => sample((await get('/metrics')).body, 'procctl_http_cut_total{reason="late"}');
  const was = await late();
  const s = net.connect({ host: '127.0.0.1', port });
  let trickled = 0, answered = false, closed = false;
  s.write('GET /healthz HTTP/1.1\r\nHost: procctl\r\nX-Trickle: ');
  // A byte of a header that never ends every 200 ms: never idle near the
  // 15 s idle timeout.
  const drip = setInterval(() => {
    s.write('a');
    trickled++;
  }, 200);
  s.on('data', () => (answered = true));
  s.on('error', () => {}); // the close follows
  s.on('close', () => {
    closed = true;
    clearInterval(drip);
  });
  try {
    await h.until(() => closed, { timeout: 60000, what: 'the daemon to close the trickling request' });
  } finally {
    clearInterval(drip);
    s.destroy();
  }
  assert.ok(trickled > 0);
  assert.equal(answered, false, 'an unfinished request was answered');
  assert.ok(await late() > was);
});
