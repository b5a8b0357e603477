// SPDX-License-Identifier: Apache-2.0
// hostileserver.test.js - procctl against a server that is not a
// procctl-node: a gRPC server (@grpc/grpc-js) that answers every command
// with terminal control sequences in every string it can (names, ids,
// messages, errors), and a raw HTTP/2 server whose reply says it is
// 2 GiB. procctl shows each control byte as \xNN, never raw, in table
// output and on stderr, and refuses the large reply before reserving
// anything for it.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http2 = require('node:http2');
const path = require('node:path');
const h = require('./harness');

const { run, said, exits } = require('./clirun');

const scratch = h.scratch('procctl-hostile-');
const SOCK = path.join(scratch, 'evil.sock');
const HUGE = path.join(scratch, 'huge.sock');
// OSC (retitle the terminal), ED (clear it), a C1 CSI, DEL, and SGR 8 (hide text)
const EVIL = '\x1b]0;pwned\x07\x1b[2J\u009b31m\x7f\x1b[8m';
let server, raw;

const ref = { pid: 4242, instanceId: `a${EVIL}` };
const proc = {
  ref, nspid: [4242], consumer: `echo${EVIL}`, schemaVersion: 1, podUid: EVIL, containerId: EVIL,
  qosClass: 'QOS_CLASS_UNSPECIFIED', leaseState: 'LEASE_STATE_LIVE', generation: '3', ackedGeneration: '3',
  ackResult: 'ACK_RESULT_APPLIED', ackStatus: 0, arbiterRefusals: [EVIL],
};
const results = [{ process: ref, generation: '4', status: 'PUBLISH_STATUS_REJECTED', processStatus: -22, error: EVIL }];
const arbiter = {
  kind: `gpu${EVIL}`, holdNs: '1', kindNumber: 1,
  resources: [{ kind: `gpu${EVIL}`, id: EVIL, holder: ref, grantId: EVIL, heldNs: '1' }],
};
const bigPayload = Buffer.alloc(60 << 20, 0x41);
const desired = {
  selector: { consumer: `echo${EVIL}`, schemaVersion: 1, podUid: EVIL, containerId: EVIL },
  payload: Buffer.from('x'), revision: '7', source: EVIL, rollout: { applied: 1 },
};

before(async () => {
  server = new h.grpc.Server();
  const ok = (resp) => (call, cb) => cb(null, resp);
  server.addService(h.api.NodeService.service, {
    ListProcesses: ok({ processes: [proc] }),
    GetProcess: ok({ process: proc }),
    ReadState: ok({
      ackedGeneration: '3', ackResult: 'ACK_RESULT_APPLIED', ackStatus: -22, data: Buffer.from(EVIL),
      resources: [{ kind: EVIL, id: EVIL, grantId: EVIL, state: 'RESOURCE_STATE_HOLDING' }],
    }),
    Publish: ok({ results }),
    Clear: ok({ results }),
    ListDesiredConfigs: (call, cb) => cb(null, { configs: [desired, { ...desired, payload: bigPayload }], revision: '7' }),
    SetDesiredConfig: ok({ config: desired, results }),
    DeleteDesiredConfig: ok({ config: desired, results }),
    ListArbiters: ok({ arbiters: [arbiter] }),
    GetArbiter: (call, cb) => cb({ code: h.grpc.status.NOT_FOUND, details: `no such kind ${EVIL}` }),
    WatchEvents: (call) => {
      call.write({ sequence: '1', resumeToken: EVIL, snapshot: { processes: [proc] } });
      call.write({ sequence: '2', resumeToken: EVIL, attached: { process: proc } });
      call.write({ sequence: '3', resumeToken: EVIL, ownershipChanged: { consumer: EVIL, owner: 1 } });
      call.end();
    },
  });
  await new Promise((resolve, reject) => server.bindAsync(`unix:${SOCK}`, h.grpc.ServerCredentials.createInsecure(),
    (e) => (e ? reject(e) : resolve())));

  // A reply whose gRPC frame says 2 GiB follow, and then they do, as fast
  // as the client takes them.
  raw = http2.createServer();
  raw.on('stream', (s) => {
    const chunk = Buffer.alloc(1 << 20, 0x41);
    let sent = 0;
    const more = () => {
      while (sent < 2048 && !s.destroyed && s.write(chunk)) sent++;
      if (sent < 2048 && !s.destroyed) s.once('drain', more);
    };
    s.on('error', () => {});
    s.respond({ ':status': 200, 'content-type': 'application/grpc' });
    s.write(Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]));
    more();
  });
  await new Promise((resolve) => raw.listen(HUGE, resolve));
});

after(async () => {
  server.forceShutdown();
  raw.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

// Nothing a terminal would obey: no C0 control but newline and tab, no
// DEL, no C1 control (raw, or in UTF-8).
function inert(r) {
  for (const [name, text] of [['stdout', r.stdout], ['stderr', r.stderr]]) {
    const bad = [...text].find((ch) => { const c = ch.codePointAt(0); return (c < 0x20 && ch !== '\n' && ch !== '\t') || (c >= 0x7f && c <= 0x9f); });
    assert.equal(bad, undefined, `${name} carries U+${bad && bad.codePointAt(0).toString(16)}: ${said(r)}`);
  }
}

test('every command shows what the server sent with its control bytes as \\xNN, in tables and on stderr', async () => {
  const cases = [
    [['ps'], 0], [['get', '4242'], 0], [['state', '4242'], 0], [['publish', '--pid', '4242', '--data', 'x'], 1],
    [['clear', '--pid', '4242'], 1], [['desired', 'ls'], 0], [['desired', 'set', '--consumer', 'echo', '--data', 'x'], 1],
    [['desired', 'rm', '--consumer', 'echo'], 0], [['resources'], 0], [['resources', 'gpu'], 1], [['watch'], 1],
  ];
  for (const [args, code] of cases) {
    const r = await run(args, { sock: SOCK });
    assert.equal(r.signal, null, said(r));
    assert.equal(r.code, code, said(r));
    inert(r);
  }
  // What was there is still shown, escaped.
  const ps = exits(await run(['ps'], { sock: SOCK }), 0);
  assert.match(ps.stdout, /^4242 +echo\\x1b\]0;pwned\\x07\\x1b\[2J\\xc2\\x9b31m\\x7f\\x1b\[8m /m, said(ps));
  const ar = exits(await run(['resources', 'gpu'], { sock: SOCK }), 1);
  assert.match(ar.stderr, /NOT_FOUND: no such kind \\x1b\]0;pwned\\x07/, said(ar));
  // -o json is the encoder's: ASCII, the same bytes as \u escapes.
  const j = exits(await run(['-o', 'json', 'ps'], { sock: SOCK }), 0);
  inert(j);
  assert.equal(JSON.parse(j.stdout).processes[0].consumer, `echo${EVIL}`);
});

// procctl run to its end with the most memory it held (VmHWM, read as it
// runs): { code, signal, stdout, stderr, peak } (peak in bytes). Not an
// rlimit: the sanitizer builds map terabytes of shadow at start.
async function peakRun(args, sock) {
  const c = new h.Child(process.env.PROCCTL_CLI, args, { env: { ...process.env, PROCCTL_SOCKET: sock } });
  let peak = 0;
  while (c.exit === null) {
    try {
      const m = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${c.pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      // gone meanwhile
    }
    await h.sleep(5);
  }
  const e = await c.exited;
  return { args, code: e.code, signal: e.sig, stdout: c.out.join('\n'), stderr: c.lines.join('\n'), peak };
}

test('a 2 GiB reply is refused with what procctl may hold, not taken in; the largest real one still is', async () => {
  // Taken in, it grew procctl past 1.8 GB before the refusal.
  const r = await peakRun(['--timeout', '20s', 'ps'], HUGE);
  assert.equal(r.signal, null, said(r));
  assert.equal(r.code, 1, said(r));
  assert.match(r.stderr, /^procctl: RESOURCE_EXHAUSTED: /m, said(r));
  assert.match(r.stderr, /^procctl: \(a reply over 64 MiB, more than procctl-node sends: is \S+ a procctl-node\?\)$/m, said(r));
  assert.ok(r.peak < 512 << 20, `it held ${r.peak} bytes`);
  inert(r);
  // A config of 60 MiB (the daemon's max_message_bytes allows 64): listed.
  const big = await peakRun(['desired', 'ls'], SOCK);
  assert.equal(big.code, 0, said(big));
  assert.match(big.stdout, / 62914560 /, said(big));
});
