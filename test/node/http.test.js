// SPDX-License-Identifier: Apache-2.0
// http.test.js - the HTTP side: health and readiness, JSON views equal
// field for field to what the gRPC API returns, POST config when allowed,
// and requests that are wrong in every way HTTP allows.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const h = require('./harness');

const scratch = h.scratch('procctl-http-');
let d, c, base, ro, roBase;

// The JSON views' key (http_api_key_file), sent with every request.
const KEY = 'http-test-key-0123456789abcdef';
const get = async (url, opts = {}) => {
  const r = await fetch(url, { ...opts, headers: { authorization: `Bearer ${KEY}`, ...(opts.headers || {}) } });
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
};

// A grpc-js object as the proto3 JSON mapping writes it: bytes in base64.
const asJson = (v) => {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (Array.isArray(v)) return v.map(asJson);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asJson(x)]));
  return v;
};

before(async () => {
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${h.CONSUMER}\nhold_ms = 100\n` +
    'resources = GPU-5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6c\n');
  const keyFile = path.join(scratch, 'http.key');
  fs.writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
  d = await new h.Daemon({ args: ['--config', conf, '--http-listen', '127.0.0.1:0', '--http-api-key-file', keyFile,
    '--http-writes', 'true'] }).ready();
  const port = await d.httpPort();
  c = d.client();
  base = `http://127.0.0.1:${port}`;
  ro = await new h.Daemon({ consumers: `${h.CONSUMER}ro`,
    args: ['--http-listen', '127.0.0.1:0', '--http-api-key-file', keyFile] }).ready();
  const port2 = await ro.httpPort();
  roBase = `http://127.0.0.1:${port2}`;
});

after(async () => {
  c.close();
  await h.killAll();
  await d.stop();
  await ro.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

test('/healthz and /readyz', async () => {
  let r = await get(`${base}/healthz`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.deepEqual(r.json, { status: 'alive' });
  r = await get(`${base}/readyz`);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { status: 'ready' });
});

test('/: the version and links to what the listener serves, nothing secret', async () => {
  const version = spawnSync(h.NODE_BIN, ['--version'], { encoding: 'utf8' }).stdout.match(/\d+\.\d+\.\d+/)[0];
  for (const [where, views] of [[base, true], [roBase, true]]) {
    const r = await get(`${where}/`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(r.text, new RegExp(`^<!DOCTYPE html>\n[^]*<p>version ${version.replaceAll('.', '\\.')}, API procctl\\.v1, wire 1\\.1</p>`));
    const links = [...r.text.matchAll(/href="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(links, ['/metrics', '/healthz', '/readyz', ...(views ? ['/v1/processes', '/v1/arbiters'] : [])]);
    for (const l of links) assert.notEqual((await get(`${where}${l}`)).status, 404, l);
    assert.ok(!r.text.includes(KEY), 'the key is not on the page');
    assert.ok(!r.text.includes(scratch), 'no path is on the page');
  }
  const head = await fetch(`${base}/`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  const post = await get(`${base}/`, { method: 'POST' });
  assert.equal(post.status, 405);
  // Without a key the views are off, and the page says so without links.
  const bare = await new h.Daemon({ consumers: `${h.CONSUMER}bare`, args: ['--http-listen', '127.0.0.1:0'] }).ready();
  const port = await bare.httpPort();
  try {
    const r = await get(`http://127.0.0.1:${port}/`);
    assert.equal(r.status, 200);
    assert.deepEqual([...r.text.matchAll(/href="([^"]+)"/g)].map((m) => m[1]), ['/metrics', '/healthz', '/readyz']);
    assert.match(r.text, /the JSON views \(\/v1\/processes, \/v1\/arbiters\) are off here/);
  } finally {
    await bare.stop();
  }
});

test('JSON views equal the gRPC responses field for field', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('viewed'), waitMs: 5000 });
  const pairs = [
    ['/v1/processes', 'ListProcesses', {}],
    [`/v1/processes?consumer=${h.CONSUMER}`, 'ListProcesses', { filter: { consumer: h.CONSUMER } }],
    [`/v1/processes/${e.pid}`, 'GetProcess', { process: { pid: e.pid } }],
    [`/v1/processes/${e.pid}/state`, 'ReadState', { process: { pid: e.pid } }],
  ];
  for (const [url, method, req] of pairs) {
    const r = await get(`${base}${url}`);
    assert.equal(r.status, 200, `${url}: ${r.text}`);
    assert.deepEqual(r.json, asJson(await h.call(c, method, req)), url);
  }
  // Arbiters: compared where nothing moves (nobody wants the gpu).
  const a = await get(`${base}/v1/arbiters`);
  assert.deepEqual(a.json, asJson(await h.call(c, 'ListArbiters', {})));
  const g = await get(`${base}/v1/arbiters/gpu`);
  assert.deepEqual(g.json, asJson(await h.call(c, 'GetArbiter', { kind: 'gpu' })));
  assert.equal(g.json.arbiter.holdNs, '100000000');
  assert.equal(g.json.arbiter.resources[0].id, '5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6c');
});

test('errors are JSON with the HTTP status of their gRPC code', async () => {
  const cases = [
    ['/nope', 404, 'NOT_FOUND'],
    ['/v1/processes/1073741823', 404, 'NOT_FOUND'],
    ['/v1/processes/1073741823/state', 404, 'NOT_FOUND'],
    ['/v1/processes/abc', 400, 'INVALID_ARGUMENT'],
    ['/v1/processes/0', 400, 'INVALID_ARGUMENT'],
    ['/v1/processes/99999999999', 400, 'INVALID_ARGUMENT'],
    ['/v1/processes?consumer=NOT_A_NAME', 400, 'INVALID_ARGUMENT'],
    ['/v1/arbiters/fpga', 404, 'NOT_FOUND'],
    ['/v1/processes/1/nope', 404, 'NOT_FOUND'],
  ];
  for (const [url, status, code] of cases) {
    const r = await get(`${base}${url}`);
    assert.equal(r.status, status, `${url}: ${r.text}`);
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.json.code, code, url);
    assert.equal(typeof r.json.error, 'string');
  }
  for (const [url, method, allow] of [['/metrics', 'DELETE', 'GET'], ['/healthz', 'POST', 'GET'],
    ['/v1/processes', 'PUT', 'GET'], ['/v1/processes/1/config', 'GET', 'POST']]) {
    const r = await get(`${base}${url}`, { method });
    assert.equal(r.status, 405, `${method} ${url}`);
    assert.equal(r.headers.get('allow'), allow);
    assert.equal(typeof r.json.error, 'string');
  }
});

test('POST config: JSON with base64, or raw bytes; then the process has it', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  let r = await get(`${base}/v1/processes/${e.pid}/config`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payload: Buffer.from('over http').toString('base64'), waitMs: 5000 }),
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await e.line(/payload=over http$/, { out: true });
  r = await get(`${base}/v1/processes/${e.pid}/config?wait_ms=5000`, {
    method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: 'raw text',
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await e.line(/payload=raw text$/, { out: true });
  // The proto field name and a decimal string, as proto3 JSON allows: waited for too.
  for (const [body, text] of [[{ wait_ms: 5000 }, 'snake'], [{ waitMs: '5000' }, 'string']]) {
    r = await get(`${base}/v1/processes/${e.pid}/config`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload: Buffer.from(text).toString('base64'), ...body }),
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.results[0].status, 'PUBLISH_STATUS_APPLIED', text);
  }
});

test('POST config refused: bad JSON, deep nesting, bad base64, oversized, unknown pid, writes off', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  const post = (body, type = 'application/json', b = base, pid = e.pid) =>
    get(`${b}/v1/processes/${pid}/config`, { method: 'POST', headers: { 'content-type': type }, body });
  let r = await post('{"payload": ');
  assert.equal(r.status, 400);
  assert.equal(r.json.code, 'INVALID_ARGUMENT');
  r = await post(`${'['.repeat(64)}${']'.repeat(64)}`);
  assert.equal(r.status, 400);
  assert.match(r.json.error, /nested too deep/);
  r = await post('{"payload": "not*base64"}');
  assert.equal(r.status, 400);
  r = await post('{"payload": 5}');
  assert.equal(r.status, 400);
  r = await post(JSON.stringify({ payload: 'eA==', waitMs: -1 }));
  assert.equal(r.status, 400);
  r = await post(JSON.stringify({ payload: 'eA==', bogus: 1 })); // no field is dropped unread
  assert.equal(r.status, 400);
  assert.match(r.json.error, /no other field/);
  r = await post(JSON.stringify({ payload: 'eA==', waitMs: 1, wait_ms: 2 }));
  assert.equal(r.status, 400);
  r = await post(Buffer.alloc(3 << 20, 0x41), 'application/octet-stream');
  assert.equal(r.status, 413);
  r = await post(Buffer.alloc(8192, 0x41), 'application/octet-stream');
  assert.equal(r.status, 400); // over the process's 4 KiB capacity
  r = await post('', 'application/octet-stream');
  assert.equal(r.status, 400); // empty: a Clear is not a POST of nothing
  r = await post('{"payload": "eA=="}', 'application/json', base, 1073741823);
  assert.equal(r.status, 404);
  // A daemon without http_writes: 403, and nothing written.
  r = await post('{"payload": "eA=="}', 'application/json', roBase, 1);
  assert.equal(r.status, 403);
  assert.equal(r.json.code, 'PERMISSION_DENIED');
});

// A raw request that announces a body of `announce` bytes and sends `send`
// of them; resolves with the connection once they are written.
const holdBody = (b, url, announce, send, headers = {}) => new Promise((resolve, reject) => {
  const { hostname, port } = new URL(b);
  const s = require('node:net').connect(Number(port), hostname, () => {
    const hs = Object.entries({ 'content-type': 'application/octet-stream', 'content-length': announce, ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`).join('');
    s.write(`POST ${url} HTTP/1.1\r\nhost: x\r\n${hs}\r\n`);
    s.write(Buffer.alloc(send, 0x41), () => resolve(s));
  });
  s.on('error', reject);
});
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

test('bodies: none held for a request that takes none; all writes together hold at most 16 MiB', async () => {
  const e = await h.echo();
  await h.attached(d, e.pid);
  // 24 clients without the key, each 2 MiB announced and all but 1 KiB sent:
  // their bytes are read and dropped (held, they would be 48 MiB).
  const rss0 = rssKiB(d.innerPid());
  const idle = [];
  for (let i = 0; i < 24; i++) {
    const url = i % 2 ? '/healthz' : `/v1/processes/${e.pid}/config`;
    idle.push(await holdBody(base, url, 2 << 20, (2 << 20) - 1024));
  }
  assert.equal((await get(`${base}/healthz`)).status, 200);
  const grown = rssKiB(d.innerPid()) - rss0;
  assert.ok(grown < 16 << 10, `the daemon grew by ${grown} KiB for bodies it takes no use of`);
  idle.forEach((s) => s.destroy());
  // Writes with the key: 8 bodies of 2 MiB less 1 KiB, held unfinished,
  // fill the 16 MiB; a ninth write is refused as UNAVAILABLE, and once they
  // are gone a write goes through again.
  const auth = { authorization: `Bearer ${KEY}` };
  const held = [];
  for (let i = 0; i < 8; i++)
    held.push(await holdBody(base, `/v1/processes/${e.pid}/config`, 2 << 20, (2 << 20) - 1024, auth));
  const post = () => get(`${base}/v1/processes/${e.pid}/config`,
    { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.alloc(256 << 10, 0x41) });
  const bodyBytes = async () => Number(/^procctl_http_body_bytes (\d+)$/m.exec((await get(`${base}/metrics`)).text)[1]);
  // Each held in a buffer doubled from 16 KiB (a turn's): 2 MiB each, 16 MiB in all.
  await h.until(async () => (await bodyBytes()) === 8 * (2 << 20), { what: 'the daemon to hold the 8' });
  let r = await post();
  assert.equal(r.status, 503, r.text);
  assert.match(r.json.error, /16 MiB/);
  held.forEach((s) => s.destroy());
  await h.until(async () => (await bodyBytes()) === 0, { what: 'the held bodies to be freed' });
  r = await post();
  assert.equal(r.status, 400, r.text); // over the process's 4 KiB capacity: judged, not refused for room
});

test('the JSON views and writes are for loopback and a key: refused off loopback, writes need the key', async () => {
  const run = (args) => require('node:child_process').spawnSync(h.NODE_BIN, ['--check-config', ...args],
    { encoding: 'utf8' });
  let r = run(['--http-writes-remote', 'true']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--http-writes-remote: removed: off loopback HTTP serves health and \/metrics alone/);
  r = run(['--http-writes', 'true']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /http_writes needs http_api_key_file/);
  const keyFile = path.join(scratch, 'http.key');
  const dd = new h.Daemon({ consumers: `${h.CONSUMER}x`,
    args: ['--http-listen', '0.0.0.0:0', '--http-api-key-file', keyFile] });
  const exit = await dd.exited;
  assert.equal(exit.code, 1);
  assert.ok(dd.lines.some((l) => /served on loopback only/.test(l)), dd.lines.join('\n'));
});

test('a daemon stopped past the lease: the client sees it expire, /metrics counts the lapse', async () => {
  const consumer = `${h.CONSUMER}l`;
  const dd = await new h.Daemon({ consumers: consumer, args: ['--lease-ms', '200', '--http-listen', '127.0.0.1:0'] })
    .ready();
  const port = await dd.httpPort();
  const lapses = async () => {
    const r = await get(`http://127.0.0.1:${port}/metrics`);
    return Number(/^procctl_lease_lapses_total (\d+)$/m.exec(r.text)[1]);
  };
  const e = await h.echo(consumer);
  await h.attached(dd, e.pid);
  const cc = dd.client();
  await h.call(cc, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('leased'), waitMs: 5000 });
  assert.equal(await lapses(), 0);
  dd.proc.kill('SIGSTOP');
  await e.line(/event=lease state=expired/, { out: true });
  dd.proc.kill('SIGCONT');
  await h.until(() => e.out.slice(e.out.findIndex((l) => /state=expired/.test(l))).some((l) => /state=live/.test(l)),
    { what: 'the lease live again' });
  await h.until(async () => (await lapses()) >= 1, { what: 'a lapse counted' });
  cc.close();
  await dd.stop();
});
