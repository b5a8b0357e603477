// SPDX-License-Identifier: Apache-2.0
// fdflood.test.js - a daemon under a low descriptor limit (256) flooded
// with idle connections: 640 on its gRPC TCP listener from 20 addresses
// (32 each, the per-peer most; a few each kept while pending) and 300 on
// HTTP. The flood may not take
// the descriptors the daemon keeps for itself: the Unix socket answers
// health and a publish --wait during the flood and after it, /healthz
// says alive, the daemon never meets EMFILE, and the refusals are counted.
// And /healthz tells the truth: with the gRPC thread held still (ptrace,
// that thread alone), the daemon's own health checks go unanswered and
// /healthz says 503 until the thread runs again.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const { spawn } = require('node:child_process');
const h = require('./harness');

const CLI = process.env.PROCCTL_CLI;
const THREADSTOP = process.env.THREADSTOP;
if (!CLI || !THREADSTOP) throw new Error('PROCCTL_CLI and THREADSTOP are not set (ctest sets them)');
const LIMIT = 256;

const held = [];
after(async () => {
  for (const s of held) s.destroy();
  await h.killAll();
});

// procctl to its end, every wait bounded by --timeout: { code, out }.
function cli(sock, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(CLI, ['--timeout', '10s', ...args], { env: { ...process.env, PROCCTL_SOCKET: sock },
      stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (x) => { out += x; });
    p.stderr.setEncoding('utf8').on('data', (x) => { out += x; });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out }));
  });
}

// One GET on a connection of its own: { status, body }.
function get(port, path) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('error', reject); // reset while the body comes
      res.on('data', (x) => { body += x; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer in 10 s`)));
    req.on('error', reject);
  });
}

// n idle connections to port, from source addresses prefix.2, prefix.3,
// ... per at a time; those the daemon closes stay closed, and one still
// connecting after 5 s (a listen queue full) is left to it.
async function flood(port, n, prefix, per) {
  const socks = await Promise.all(Array.from({ length: n }, (_, i) => new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: `${prefix}.${2 + Math.floor(i / per)}` });
    const t = setTimeout(() => resolve(s), 5000);
    s.on('error', () => { clearTimeout(t); resolve(s); }); // refused or reset: counted by the daemon
    s.on('connect', () => { clearTimeout(t); resolve(s); });
  })));
  held.push(...socks);
  return socks;
}

// One sample of /metrics, by its whole name with labels (NaN: not there),
// the scrape bounded (a stuck HTTP side fails, not hangs).
async function metric(port, name) {
  const r = await get(port, '/metrics');
  const line = r.body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

const fds = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

async function daemon(extra = []) {
  const d = await new h.Daemon({ prefix: ['prlimit', `--nofile=${LIMIT}:${LIMIT}`, '--'],
    args: ['--grpc-listen', '127.0.0.1:0', '--insecure-tcp', 'true', '--http-listen', '127.0.0.1:0',
      ...extra] }).ready();
  const port = await d.httpPort();
  const grpcPort = await d.tcpPort();
  return { d, port, grpcPort };
}

// Health and a publish --wait over the Unix socket, and /healthz.
async function served(d, port, what) {
  const hz = await cli(d.sock, ['health']);
  assert.equal(hz.code, 0, `${what}: procctl health: ${hz.out}`);
  assert.match(hz.out, /SERVING/);
  const p = await cli(d.sock, ['publish', '--consumer', h.CONSUMER, '--data', what, '--wait']);
  assert.equal(p.code, 0, `${what}: procctl publish --wait: ${p.out}`);
  assert.match(p.out, /APPLIED/);
  // As a kubelet probes: a connection the flood's part of HTTP refuses
  // (reset as it comes, while the one it evicts closes) is tried again.
  const live = await h.until(() => get(port, '/healthz'), { what: `${what}: /healthz answered`, timeout: 10000 });
  assert.equal(live.status, 200, `${what}: /healthz ${live.body}`);
}

test(`a flood of idle connections under a limit of ${LIMIT} descriptors: the Unix socket serves during and after`,
  async () => {
    const { d, port, grpcPort } = await daemon();
    const e = await h.echo();
    await h.attached(d, e.pid);
    const pid = d.innerPid();

    const socks = [...await flood(grpcPort, 640, '127.0.0', 32), ...await flood(port, 300, '127.0.1', 30)];
    // The flood has met its bounds: connections past them are refused
    // (the idle ones as pending, a few a peer, before the descriptors'
    // reserve: grpclimits floods that one alone).
    const refusedAt = (limit) => metric(port, `procctl_grpc_connections_refused_total{transport="tcp",limit="${limit}"}`);
    await h.until(async () => (await refusedAt('fd_reserve')) + (await refusedAt('pending_per_peer')) +
      (await refusedAt('pending')) > 0, { what: 'TCP connections refused at a bound', timeout: 30000 });
    assert.ok(fds(pid) < LIMIT, `${fds(pid)} descriptors open`);
    await served(d, port, 'during the flood');
    assert.ok(socks.filter((s) => !s.destroyed && s.readyState === 'open').length > 0, 'the flood still holds connections');

    for (const s of held.splice(0)) s.destroy();
    await h.until(() => fds(pid) < 100, { what: 'the flood\'s descriptors closed', timeout: 30000 });
    await served(d, port, 'after the flood');
    assert.equal(await metric(port, 'procctl_grpc_accept_errors_total'), 0, 'an accept failed (EMFILE)');
    assert.ok(!d.lines.some((l) => /Too many open files|error=EMFILE|errno=24/.test(l)),
      d.lines.filter((l) => /open files|EMFILE|errno=24/.test(l)).slice(0, 5).join('\n'));
    await d.stop();
  });

test('/healthz says 503 while the gRPC API answers nothing, and alive once it does', async () => {
  const { d, port } = await daemon(['--health-probe-ms', '300']);
  const pid = d.innerPid();
  const alive = JSON.parse((await get(port, '/healthz')).body);
  assert.equal(alive.status, 'alive');
  assert.equal(alive.grpc_tcp.connections, 0);
  // The thread that runs every gRPC call, held still; the rest runs.
  const stop = new h.Child(THREADSTOP, [String(pid), 'procctl-grpc-cq'], { stdio: ['pipe', 'pipe', 'pipe'] });
  await stop.line(/^stopped \d+$/, { out: true });
  let dead;
  try {
    dead = await h.until(async () => {
      const r = await get(port, '/healthz');
      return r.status === 503 && r;
    }, { what: '/healthz to say 503', timeout: 20000 });
    assert.equal(await metric(port, 'procctl_api_alive'), 0);
  } finally {
    stop.proc.stdin.end('go\n');
  }
  const { grpc_tcp: tcp, ...said } = JSON.parse(dead.body);
  assert.deepEqual(said, { status: 'unresponsive',
    reason: 'the gRPC API did not answer its last 3 health checks on its Unix socket' });
  assert.equal(tcp.max_connections, 256);
  await stop.line(/^released$/, { out: true });
  await h.until(async () => (await get(port, '/healthz')).status === 200, { what: '/healthz alive again', timeout: 20000 });
  assert.equal(await metric(port, 'procctl_api_alive'), 1);
  assert.ok(await metric(port, 'procctl_api_probe_misses_total') >= 3);
  await d.line(/ event=api_unresponsive misses=3 /);
  await d.line(/ event=api_answers after_misses=\d+/);
  const hz = await cli(d.sock, ['health']);
  assert.equal(hz.code, 0, hz.out);
  await d.stop();
});
