// SPDX-License-Identifier: Apache-2.0
// reflection.test.js - `buf curl --protocol grpc` with no .proto files:
// everything it knows comes from the daemon's server reflection.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

let d, e;

before(async () => {
  d = await new h.Daemon().ready();
  e = await h.echo();
  await h.attached(d, e.pid);
});

after(async () => {
  await e.kill('SIGKILL');
  await d.stop();
});

const curl = (args) => {
  const r = h.bufCurl(d.sock, args);
  assert.equal(r.error, undefined);
  return r;
};

test('buf curl lists every service and method through reflection (v1, then v1alpha)', () => {
  for (const proto of ['grpc-v1', 'grpc-v1alpha']) {
    const r = curl(['--reflect-protocol', proto, '--list-methods', 'http://localhost']);
    assert.equal(r.status, 0, r.stderr);
    const methods = r.stdout.trim().split('\n');
    for (const m of ['procctl.v1.NodeService/Publish', 'procctl.v1.NodeService/WatchEvents',
      'procctl.v1.NodeService/ListArbiters', 'grpc.health.v1.Health/Check',
      'grpc.reflection.v1.ServerReflection/ServerReflectionInfo']) {
      assert.ok(methods.includes(m), `${m} in ${methods}`);
    }
  }
});

test('buf curl calls ListProcesses and Publish, knowing the messages only by reflection', () => {
  let r = curl(['-d', JSON.stringify({ filter: { pid: e.pid } }), 'http://localhost/procctl.v1.NodeService/ListProcesses']);
  assert.equal(r.status, 0, r.stderr);
  const list = JSON.parse(r.stdout);
  assert.equal(list.processes.length, 1);
  assert.equal(list.processes[0].consumer, h.CONSUMER);
  r = curl(['-d', JSON.stringify({ selector: { pid: e.pid }, payload: Buffer.from('by buf').toString('base64'), waitMs: 5000 }),
    'http://localhost/procctl.v1.NodeService/Publish']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).results[0].status, 'PUBLISH_STATUS_APPLIED');
  r = curl(['-d', '{}', 'http://localhost/grpc.health.v1.Health/Check']);
  assert.equal(JSON.parse(r.stdout).status, 'SERVING');
});

test('buf curl gets the daemon\'s status codes', () => {
  const r = curl(['-d', JSON.stringify({ process: { pid: 0x3fffffff } }), 'http://localhost/procctl.v1.NodeService/GetProcess']);
  assert.notEqual(r.status, 0);
  assert.match(r.stdout + r.stderr, /not_found/);
});

test('reflection streams count against max_watchers: an idle one more is RESOURCE_EXHAUSTED', async () => {
  const dl = await new h.Daemon({ args: ['--max-watchers', '5'] }).ready();
  const raw = new h.grpc.Client(dl.addr, h.grpc.credentials.createInsecure());
  const path = '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo';
  // A stream that sends nothing: 'open' once the daemon took it (its
  // headers came), or the error it was refused with.
  const open = () => {
    const s = raw.makeBidiStreamRequest(path, (b) => b, (b) => b);
    const r = { s };
    s.on('metadata', () => { r.open = true; });
    s.on('error', (err) => { r.error = err; });
    return r;
  };
  const held = [];
  for (let i = 0; i < 5; i++) held.push(open());
  await h.until(() => held.every((x) => x.open), { what: 'five reflection streams taken' });
  const extra = open();
  await h.until(() => extra.error, { what: 'the sixth refused' });
  assert.equal(h.grpc.status[extra.error.code], 'RESOURCE_EXHAUSTED');
  assert.match(extra.error.details, /max_watchers/);
  // One let go makes room again.
  held[0].s.cancel();
  await h.until(async () => {
    const again = open();
    await h.until(() => again.open || again.error, { what: 'an answer' });
    if (again.open) held.push(again);
    return again.open;
  }, { every: 100, what: 'a stream taken once one was let go' });
  for (const x of held) x.s.cancel();
  raw.close();
  await dl.stop();
});
