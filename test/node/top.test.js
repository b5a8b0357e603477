// SPDX-License-Identifier: Apache-2.0
// top.test.js - `procctl top` as an operator runs it: in an 80-column
// terminal (a real tmux, its pane read with capture-pane) against a real
// daemon whose [arbiter gpu] three token clients take turns on; and with
// -o json, one JSON line a frame.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

const CLI = process.env.PROCCTL_CLI;
const CONSUMER_T = `ttok${process.pid}`.slice(0, 31);
const GPU = '00000000-0000-0000-0000-000000000000';
const HAVE_TMUX = !spawnSync('tmux', ['-V'], { stdio: 'ignore' }).error;
if (process.env.CI === 'true' && !HAVE_TMUX) throw new Error('CI needs tmux (scripts/install-deps.sh installs it)');

const scratch = h.scratch('procctl-top-');
const TMUX = ['-L', `procctl-top-${process.pid}`]; // a server of this file's own
const tmuxEnv = { ...process.env, TMUX_TMPDIR: scratch };
let d;
const kids = [];

const tmux = (...args) => spawnSync('tmux', [...TMUX, ...args], { env: tmuxEnv, encoding: 'utf8' });

before(async () => {
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${CONSUMER_T}\nhold_ms = 300\nresources = ${GPU}\n`);
  d = await new h.Daemon({ consumers: CONSUMER_T, args: ['--config', conf] }).ready();
  for (let i = 0; i < 3; i++) {
    const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', CONSUMER_T, '--kind', '1', '--id', '0']);
    kids.push(t);
    await t.line(/^event=started pid=\d+$/, { out: true });
    await h.attached(d, t.pid);
  }
});

after(async () => {
  if (HAVE_TMUX) tmux('kill-server');
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  if (d) await d.stop();
});

test('in an 80-column tmux pane: the holder, who waits, the last minute of three rotating holders, the processes',
  { skip: !HAVE_TMUX && 'no tmux' }, async () => {
  const r = tmux('new-session', '-d', '-x', '80', '-y', '30', '--', 'env', `PROCCTL_SOCKET=${d.sock}`, CLI, 'top',
    '--interval', '500ms');
  assert.equal(r.status, 0, r.stderr);
  const pids = kids.map((k) => k.pid);
  let pane = '';
  await h.until(() => {
    const c = tmux('capture-pane', '-p');
    if (c.status !== 0) throw new Error(c.stderr);
    pane = c.stdout;
    const legend = pane.split('\n').find((l) => /^ {3}A=\d+/.test(l)) || '';
    return pids.every((p) => new RegExp(`[A-Z]=${p}\\b`).test(legend)) && /^ {2}holder \d+ for /m.test(pane);
  }, { timeout: 30000, every: 250, what: 'three holders in the bar\'s legend' });
  console.log(`procctl top, three rotating holders (tmux capture-pane):\n${pane}`);
  const lines = pane.split('\n');
  const at = (re) => lines.findIndex((l) => re.test(l));
  // The layout, each row whole (a row over 80 columns would wrap).
  for (const l of lines) assert.ok(l.length <= 80, `a row of ${l.length} columns: ${l}`);
  const head = at(/^procctl top {2}\d\d:\d\d:\d\d {2}processes 3 {2}arbiters 1 {2}\//);
  const res = at(new RegExp(`^gpu ${GPU} {2}hold 0\\.3s {2}handoffs \\d+$`));
  const holder = at(/^ {2}holder \d+ for \d+\.\ds {2}blocked \d+\.\ds {2}waiting \d+ \d+$/);
  const barRow = at(/^ {2}\|[.A-Z]{60}\| last 60s$/);
  const legend = at(/^ {3}[A-Z]=\d+( [A-Z]=\d+)*$/);
  const table = at(/^PID +CONSUMER +GEN +ACKED +ACK/);
  assert.ok(head === 0 && res > head && holder === res + 1 && barRow === holder + 1 && legend === barRow + 1 &&
    table > legend, `the layout:\n${pane}`);
  // The holder is one of them, and the two others wait.
  const [, hp, , w1, w2] = lines[holder].match(/holder (\d+) for .* blocked (\S+) {2}waiting (\d+) (\d+)$/);
  assert.ok(pids.includes(Number(hp)));
  assert.deepEqual([Number(w1), Number(w2)], pids.filter((p) => p !== Number(hp)).sort((x, y) => x - y));
  // Three letters in the bar, for the three of them.
  assert.equal(new Set(lines[barRow].replace(/[^A-Z]/g, '')).size, 3);
  // Every process, a row each.
  for (const p of pids) assert.ok(lines.slice(table + 1).some((l) => new RegExp(`^${p} +${CONSUMER_T} `).test(l)));
  tmux('kill-server');
});

test('-o json: a line a frame, with the processes, the arbiter and the holds of the last minute', async () => {
  const r = spawnSync(CLI, ['--socket', d.sock, '-o', 'json', 'top', '--count', '3', '--interval', '200ms'],
    { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.status, 0, r.stderr);
  const frames = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(frames.length, 3);
  const pids = kids.map((k) => k.pid).sort((x, y) => x - y);
  for (const f of frames) {
    assert.deepEqual(f.processes.map((p) => p.pid).sort((x, y) => x - y), pids);
    for (const p of f.processes) assert.equal(p.consumer, CONSUMER_T);
    const x = f.arbiters[0].resources[0];
    assert.equal(x.id, GPU);
    assert.equal(x.waiters, 2);
    assert.deepEqual(x.waiting.map((w) => w.pid), pids.filter((p) => p !== x.holder.pid));
    const holds = f.holds.find((y) => y.kind === 'gpu' && y.id === GPU).holds;
    assert.ok(holds.length >= 1);
    for (const s of holds) {
      assert.ok(pids.includes(s.pid));
      assert.ok(s.fromMs <= s.toMs && s.toMs <= 0);
    }
  }
});

test('bad usage: an interval under 100 ms, an operand', () => {
  for (const args of [['top', '--interval', '10ms'], ['top', 'extra']]) {
    const r = spawnSync(CLI, ['--socket', d.sock, ...args], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
  }
});
