// SPDX-License-Identifier: Apache-2.0
// tls.test.js - TCP listeners: mTLS (a client certificate signed by
// tls_client_ca is required, and its CN is logged with each mutating
// call), plain TCP read-only, and plain TCP with insecure_tcp_writes.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const h = require('./harness');
const { run, said, exits } = require('./clirun');

const scratch = h.scratch('procctl-tls-');
const { file, read, ca, leaf } = require('./certs').certs(scratch);

const kids = [];
const daemons = [];
const clients = [];
const tcpClient = (port, creds) => {
  const c = h.client(`127.0.0.1:${port}`, { creds });
  clients.push(c);
  return c;
};

// Each daemon serves a consumer of its own, so that it never attaches the
// echo clients of another daemon of this file.
async function start(consumer, args) {
  const d = await new h.Daemon({ consumers: consumer, args }).ready();
  daemons.push(d);
  return d;
}

async function spawnEcho(d, consumer) {
  const e = await h.echo(consumer);
  kids.push(e);
  await h.attached(d, e.pid);
  return e;
}

const NODES_NAME = 'procctl-node-nodes.procctl.svc';

const publish = (c, pid, text) => h.call(c, 'Publish', { selector: { pid }, payload: Buffer.from(text), waitMs: 5000 });

before(() => {
  ca('ca');
  leaf('server', 'localhost', 'ca', 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth');
  leaf('client', 'controller-1', 'ca', 'extendedKeyUsage = clientAuth');
  // As a cluster's daemons have: one name, the headless Service's, on every node; no address.
  leaf('nodes', 'procctl-node', 'ca', `subjectAltName = DNS:${NODES_NAME}\nextendedKeyUsage = serverAuth`);
  ca('otherca');
  leaf('stranger', 'controller-1', 'otherca', 'extendedKeyUsage = clientAuth');
  leaf('serveronly', 'controller-1', 'ca', 'extendedKeyUsage = serverAuth'); // of the CA, not for clients
});

after(async () => {
  for (const c of clients) c.close();
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  await Promise.all(daemons.map((d) => d.stop()));
  fs.rmSync(scratch, { recursive: true, force: true });
});

test('mTLS: a client with a certificate of tls_client_ca reads and writes, its CN logged', async () => {
  const consumer = h.CONSUMER;
  const d = await start(consumer, ['--grpc-listen', '127.0.0.1:0', '--tls-cert', file('server.crt'),
    '--tls-key', file('server.key'), '--tls-client-ca', file('ca.crt')]);
  const port = await d.tcpPort();
  assert.ok(d.lines.some((l) => l.includes(`event=listening addr=127.0.0.1:${port} tls=mtls`)), d.lines.join('\n'));
  const e = await spawnEcho(d, consumer);

  const good = tcpClient(port, h.grpc.credentials.createSsl(read('ca.crt'), read('client.key'), read('client.crt')));
  const list = await h.call(good, 'ListProcesses', {});
  assert.ok(list.processes.some((p) => p.ref.pid === e.pid));
  const r = await publish(good, e.pid, 'over mtls');
  assert.equal(r.results.length, 1);
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await e.line(new RegExp(`event=applied gen=${r.results[0].generation} .*payload=over mtls$`), { out: true });
  const logged = await d.line(/event=call method=\/procctl\.v1\.NodeService\/Publish .*cn=controller-1/);
  assert.match(logged, /peer=ipv4:127\.0\.0\.1:\d+/);

  // Each of these fails the handshake: no call reaches the daemon.
  const refused = {
    'no client certificate': h.grpc.credentials.createSsl(read('ca.crt')),
    'a client certificate of another CA':
      h.grpc.credentials.createSsl(read('ca.crt'), read('stranger.key'), read('stranger.crt')),
    'a client that does not trust the server':
      h.grpc.credentials.createSsl(read('otherca.crt'), read('client.key'), read('client.crt')),
  };
  for (const [what, creds] of Object.entries(refused)) {
    const c = tcpClient(port, creds);
    assert.equal(await h.code(h.call(c, 'ListProcesses', {})), 'UNAVAILABLE', what);
    assert.equal(await h.code(publish(c, e.pid, 'refused')), 'UNAVAILABLE', what);
  }
  assert.equal(d.lines.filter((l) => /event=call method=\/procctl\.v1\.NodeService\/Publish /.test(l)).length, 1,
    d.lines.join('\n'));
  assert.ok(!e.out.some((l) => /payload=refused/.test(l)));

  // The Unix socket still takes writes, without a certificate.
  const local = d.client();
  clients.push(local);
  assert.equal((await publish(local, e.pid, 'over unix')).results[0].status, 'PUBLISH_STATUS_APPLIED');
});

test('a renewed certificate and CA are served without a restart (tls_refresh_s)', async () => {
  // The daemon's own copies, rewritten in place as cert-manager rewrites a Secret.
  for (const f of ['server.crt', 'server.key', 'ca.crt']) fs.copyFileSync(file(f), file(`live-${f}`));
  const d = await start(`${h.CONSUMER}r`.slice(0, 31), ['--grpc-listen', '127.0.0.1:0',
    '--tls-cert', file('live-server.crt'), '--tls-key', file('live-server.key'),
    '--tls-client-ca', file('live-ca.crt'), '--tls-refresh-s', '1']);
  const port = await d.tcpPort();
  const asClient = (trust, key, cert) => tcpClient(port, h.grpc.credentials.createSsl(read(trust), read(key), read(cert)));
  await h.call(asClient('ca.crt', 'client.key', 'client.crt'), 'ListProcesses', {});
  // Renewed: a server certificate of otherca, and clients of otherca trusted.
  leaf('server2', 'localhost', 'otherca', 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth');
  assert.equal(await h.code(h.call(asClient('otherca.crt', 'stranger.key', 'stranger.crt'), 'ListProcesses', {})),
    'UNAVAILABLE');
  fs.copyFileSync(file('server2.key'), file('live-server.key'));
  fs.copyFileSync(file('server2.crt'), file('live-server.crt'));
  fs.copyFileSync(file('otherca.crt'), file('live-ca.crt'));
  await h.until(async () => {
    try {
      await h.call(asClient('otherca.crt', 'stranger.key', 'stranger.crt'), 'ListProcesses', {}, { deadlineMs: 2000 });
      return true;
    } catch (e) {
      return false;
    }
  }, { what: 'the renewed certificate to be served' });
  // And the old ones are not accepted any more.
  assert.equal(await h.code(h.call(asClient('ca.crt', 'client.key', 'client.crt'), 'ListProcesses', {})), 'UNAVAILABLE');
});

test('plain TCP (insecure_tcp): reads served, writes PERMISSION_DENIED', async () => {
  const consumer = `${h.CONSUMER}.ro`;
  const d = await start(consumer, ['--grpc-listen', '127.0.0.1:0', '--insecure-tcp', 'true']);
  const port = await d.tcpPort();
  assert.ok(d.lines.some((l) => l.includes(`event=listening addr=127.0.0.1:${port} tls=none`)), d.lines.join('\n'));
  const e = await spawnEcho(d, consumer);

  const c = tcpClient(port, h.grpc.credentials.createInsecure());
  const list = await h.call(c, 'ListProcesses', {});
  assert.ok(list.processes.some((p) => p.ref.pid === e.pid));
  const g = await h.call(c, 'GetProcess', { process: { pid: e.pid } });
  assert.equal(g.process.consumer, consumer);

  assert.equal(await h.code(publish(c, e.pid, 'nope')), 'PERMISSION_DENIED');
  assert.equal(await h.code(h.call(c, 'Clear', { selector: { pid: e.pid } })), 'PERMISSION_DENIED');
  await d.line(/event=call_refused method=\/procctl\.v1\.NodeService\/Publish .*reason=read_only_listener/);
  const p = (await h.call(c, 'GetProcess', { process: { pid: e.pid } })).process;
  assert.equal(p.generation, '0', 'nothing was written');
  assert.ok(!e.out.some((l) => /payload=nope/.test(l)));
});

test('procctl over mTLS from an address whose connections not yet authenticated fill its share: told it may be that, not only its certificate', async () => {
  // grpc_max_connections_per_peer 8: an address may have one connection
  // pending (no call begun); its next is closed as it comes.
  const d = await start(`busy${process.pid}`.slice(0, 31), ['--grpc-listen', '127.0.0.1:0', '--tls-cert', file('server.crt'),
    '--tls-key', file('server.key'), '--tls-client-ca', file('ca.crt'), '--grpc-max-connections-per-peer', '8']);
  const port = await d.tcpPort();
  const cli = ['--server', `127.0.0.1:${port}`, '--tls-ca', file('ca.crt'), '--tls-cert', file('client.crt'),
    '--tls-key', file('client.key'), '--timeout', '3s', 'health'];
  const idle = net.connect({ port, host: '127.0.0.1' });
  idle.on('error', () => {});
  await new Promise((resolve) => idle.once('connect', resolve));
  try {
    const r = exits(await run(cli), 1);
    assert.match(r.stderr, /^procctl: UNAVAILABLE: 127\.0\.0\.1:\d+: the daemon closed the connection during the handshake: it refused this client certificate, .*; or it had no connection free for one more not yet authenticated, and closed this one as it came \(procctl_grpc_connections_refused_total\): try again \(/, said(r));
    await d.line(/level=warn event=connection_refused transport=tcp addr=127\.0\.0\.1 limit=pending_per_peer$/);
  } finally {
    idle.destroy();
  }
  // Once the daemon has seen the idle one go, the same client is served.
  let last;
  await h.until(async () => (last = await run(cli)).code === 0, { what: 'served once the idle connection went' });
  assert.equal(last.stdout, 'SERVING\n');
});

test('procctl with TLS to a plain TCP listener: what to do, not only what failed', async () => {
  const d = await start(`plain${process.pid}`.slice(0, 31), ['--grpc-listen', '127.0.0.1:0', '--insecure-tcp', 'true']);
  const port = await d.tcpPort();
  const r = exits(await run(['--server', `127.0.0.1:${port}`, '--tls-ca', file('ca.crt'), 'health']), 1);
  assert.match(r.stderr, new RegExp(`^procctl: UNAVAILABLE: 127\\.0\\.0\\.1:${port}: the TLS handshake got no TLS back: ` +
    'a listener without TLS \\(--plaintext, where the daemon has insecure_tcp\\), or not the daemon\'s gRPC port '), said(r));
  assert.equal(exits(await run(['--server', `127.0.0.1:${port}`, '--plaintext', 'health']), 0).stdout, 'SERVING\n');
});

test('plain TCP with insecure_tcp_writes: writes served', async () => {
  const consumer = `${h.CONSUMER}.rw`;
  const d = await start(consumer, ['--grpc-listen', '127.0.0.1:0', '--insecure-tcp', 'true',
    '--insecure-tcp-writes', 'true']);
  const port = await d.tcpPort();
  const e = await spawnEcho(d, consumer);
  const c = tcpClient(port, h.grpc.credentials.createInsecure());
  const r = await publish(c, e.pid, 'over plain tcp');
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await e.line(/event=applied .*payload=over plain tcp$/, { out: true });
  const logged = await d.line(/event=call method=\/procctl\.v1\.NodeService\/Publish /);
  assert.doesNotMatch(logged, /cn=/);
});

test('procctl --server: mTLS to an address its certificate does not carry, checked against --tls-server-name', async () => {
  const consumer = `${h.CONSUMER}.cli`;
  const d = await start(consumer, ['--grpc-listen', '127.0.0.1:0', '--tls-cert', file('nodes.crt'),
    '--tls-key', file('nodes.key'), '--tls-client-ca', file('ca.crt')]);
  const port = await d.tcpPort();
  const e = await spawnEcho(d, consumer);
  const to = ['--server', `127.0.0.1:${port}`];
  const mine = ['--tls-cert', file('client.crt'), '--tls-key', file('client.key')];
  const name = ['--tls-server-name', NODES_NAME];
  const write = (text) => ['publish', '--pid', String(e.pid), '--data', text, '--wait'];

  const r = exits(await run([...to, '--tls-ca', file('ca.crt'), ...mine, ...name, '-o', 'json', ...write('cli over mtls')]), 0);
  const row = JSON.parse(r.stdout);
  assert.equal(row.results[0].status, 'PUBLISH_STATUS_APPLIED', said(r));
  await e.line(/event=applied .*payload=cli over mtls$/, { out: true });
  await d.line(/event=call method=\/procctl\.v1\.NodeService\/Publish .*cn=controller-1/);

  const refused = [
    [[...to, '--tls-ca', file('ca.crt'), ...mine], /does not carry the address dialed: --tls-server-name/],
    [[...to, '--tls-ca', file('ca.crt'), ...mine, '--tls-server-name', 'procctl-node.other.svc'], /does not carry --tls-server-name/],
    [[...to, '--tls-ca', file('otherca.crt'), ...mine, ...name], /the daemon's certificate is not of --tls-ca/],
    [[...to, '--tls-ca', file('ca.crt'), ...name], /it wants a client certificate of its tls_client_ca/],
    [[...to, '--tls-ca', file('ca.crt'), '--tls-cert', file('stranger.crt'), '--tls-key', file('stranger.key'), ...name],
      /refused this client certificate, which must be of its tls_client_ca/],
    [[...to, '--tls-ca', file('ca.crt'), '--tls-cert', file('serveronly.crt'), '--tls-key', file('serveronly.key'), ...name],
      /refused this client certificate, .*for client authentication \(extendedKeyUsage clientAuth\)/],
    [[...to, '--plaintext'], /closed the connection: it wants TLS \(no --plaintext\)/],
  ];
  for (const [args, why] of refused) {
    const bad = exits(await run([...args, ...write('refused')]), 1);
    assert.match(bad.stderr, /^procctl: UNAVAILABLE: /, said(bad));
    assert.match(bad.stderr, why, said(bad));
    assert.equal(bad.stdout, '', said(bad));
  }
  assert.equal(d.lines.filter((l) => /event=call method=\/procctl\.v1\.NodeService\/Publish /.test(l)).length, 1);
  assert.ok(!e.out.some((l) => /payload=refused/.test(l)));

  // A file that is not there, or not PEM, is said before any dialing.
  const missing = exits(await run([...to, '--tls-ca', file('nothere.crt'), 'health']), 1);
  assert.match(missing.stderr, /^procctl: --tls-ca \S+nothere\.crt: No such file or directory\n$/, said(missing));
  fs.writeFileSync(file('empty.crt'), '');
  const empty = exits(await run([...to, '--tls-ca', file('empty.crt'), 'health']), 1);
  assert.match(empty.stderr, /^procctl: --tls-ca \S+empty\.crt: empty\n$/, said(empty));
});
