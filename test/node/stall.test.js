// SPDX-License-Identifier: Apache-2.0
// stall.test.js - processes whose state blocks stall every read (a page
// behind userfaultfd that nobody serves) cost the daemon one reader each
// and nothing else: each is marked stalled (said once, counted), a healthy
// process beside them is read, published to and waited on as before, and
// the readers come back when the stalled processes die.
// PROCCTL_STALLERS sets how many (default 100: more than the 64 readers
// the pool once had in all; make soak uses 1,000).
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const h = require('./harness');

const CLI = process.env.PROCCTL_CLI;
if (!CLI) throw new Error('PROCCTL_CLI is not set (ctest sets it)');
const N = Number(process.env.PROCCTL_STALLERS || 100);

after(async () => {
  await h.killAll();
});


const threads = (pid) => Number(/^Threads:\s+(\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

// procctl to its end: { code, out }.
function cli(sock, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(CLI, args, { env: { ...process.env, PROCCTL_SOCKET: sock }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (x) => { out += x; });
    p.stderr.setEncoding('utf8').on('data', (x) => { out += x; });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out }));
  });
}

// One procsim command, answered by its next stdout line.
async function cmd(p, text) {
  const before = p.out.length;
  p.proc.stdin.write(`${text}\n`);
  await h.until(() => p.out.length > before, { what: `${text} answered by ${p.pid}` });
  const r = p.out[before];
  if (!r.startsWith('ok')) throw new Error(`${text}: ${r}`);
  return r;
}

// A process the daemon attached, whose state page then stalls; its
// doorbell rung so the daemon reads it now.
async function staller(d) {
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  await cmd(p, 'init test');
  await h.attached(d, p.pid);
  await cmd(p, 'stall');
  await cmd(p, 'ring 1');
  return p;
}

test(`${N} stalled processes: one reader each, marked, and the rest of the node served`, async (t) => {
  // slow_turn_ms: a turn that waited on a stalled read would last until
  // the staller dies, 1.5 s or more after its last doorbell here; the
  // turns' own work stays far under it in every build (the sanitizers'
  // too: TSan's slowest, attaching 50 processes at once, was 57 ms).
  const d = await new h.Daemon({ consumers: `${h.CONSUMER},test`,
    args: ['--http-listen', '127.0.0.1:0', '--slow-turn-ms', '1000'] }).ready();
  const port = await d.httpPort();
  t.after(() => d.kill('SIGKILL'));
  const c = d.client();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const base = threads(d.pid);

  const ps = [];
  for (let i = 0; i < N; i += 50) {
    ps.push(...await Promise.all(Array.from({ length: Math.min(50, N - i) }, () => staller(d))));
  }
  await h.until(async () => (await h.metric(port, 'procctl_processes_stalled')) === N,
    { what: `${N} stalled`, timeout: 60000, every: 200 });
  // One reader each: rings and polls of a stalled process start no more.
  for (const p of ps.slice(0, 10)) await cmd(p, 'ring 3');
  const rung = Date.now();
  await h.sleep(500);
  // A reader each, 16 free ones, and a doorbell watcher per 127 regions.
  const watchers = Math.ceil(N / 127);
  assert.ok(threads(d.pid) <= base + N + 16 + watchers, `${threads(d.pid)} threads for ${N} stalled (${base} before)`);
  const warned = d.lines.filter((l) => / event=state_stalled /.test(l));
  assert.ok(warned.length >= 1 && warned.length < N, `${warned.length} state_stalled lines`);

  // A stalled process's state: refused at once, saying why.
  const err = await h.call(c, 'ReadState', { process: { pid: ps[0].pid } }).catch((x) => x);
  assert.equal(h.grpc.status[err.code], 'DEADLINE_EXCEEDED', String(err));
  assert.match(err.details, /stalled/);

  // The healthy one: read, published to, its ack waited for.
  const st = await h.call(c, 'ReadState', { process: { pid: e.pid } });
  assert.ok(st.ackedGeneration !== undefined);
  const r = await cli(d.sock, ['--timeout', '20s', 'publish', '--consumer', h.CONSUMER, '--data', 'while stalled',
    '--wait']);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /APPLIED/);
  assert.doesNotMatch(r.out, /PENDING/);

  // The loop never waited on a stalled read: such a wait lasts as long as
  // the staller lives, and no turn took over slow_turn_ms.
  await h.sleep(Math.max(0, 1500 - (Date.now() - rung)));
  const m = await h.scrape(port);
  const le = (x) => m(`procctl_loop_turn_seconds_bucket{le="${x}"}`);
  t.diagnostic(`turns: ${le('0.001')} within 1 ms, ${le('0.01')} 10 ms, ${le('0.05')} 50 ms, ${le('0.25')} 250 ms, ` +
    `${le('+Inf')} in all`);
  assert.equal(m('procctl_loop_slow_turns_total'), 0, d.lines.filter((l) => /slow_turn/.test(l)).join('\n'));

  // Stalled processes that die give their readers back.
  await Promise.all(ps.map((p) => p.kill('SIGKILL')));
  await h.until(async () => (await h.metric(port, 'procctl_processes_stalled')) === 0,
    { what: 'no stalled process left', timeout: 30000, every: 200 });
  await h.until(() => threads(d.pid) <= base + 16 + watchers, { what: `threads back near ${base}`, timeout: 30000 });
  c.close();
  await d.stop();
});
