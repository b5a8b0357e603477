// SPDX-License-Identifier: Apache-2.0
// clirun.js - run the procctl command line (PROCCTL_CLI, set by ctest) to
// its end, and check how it ended.
'use strict';

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');

const CLI = process.env.PROCCTL_CLI;
if (!CLI) throw new Error('PROCCTL_CLI is not set (ctest sets it)');

// Run argv to its end: { args (argv's after the program), code, signal,
// stdout, stderr, ms }. A run that hangs is killed after `timeout` ms and
// shows as signal SIGKILL. env: added to the test's; cwd: where.
function runProgram(argv, { input = '', env = {}, timeout = 30000, cwd = undefined } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const p = spawn(argv[0], argv.slice(1), { cwd, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (s) => (stdout += s));
    p.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeout);
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ args: argv.slice(1), code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
    p.stdin.on('error', () => {}); // a run that never reads its stdin
    p.stdin.end(input);
  });
}

// Run procctl to its end, as runProgram: sock is $PROCCTL_SOCKET; prefix,
// a command to run it under (nsenter ...).
async function run(args, { sock = '', input = '', env = {}, timeout = 30000, prefix = [] } = {}) {
  const r = await runProgram([...prefix, CLI, ...args], { input, env: { PROCCTL_SOCKET: sock, ...env }, timeout });
  return { ...r, args };
}

const said = (r) => `procctl ${r.args.join(' ')}: exit ${r.code}${r.signal ? ` (${r.signal}: it hung)` : ''}\n` +
  `stdout: ${JSON.stringify(r.stdout)}\nstderr: ${JSON.stringify(r.stderr)}`;

// Check the exit status; the run, for more checks.
function exits(r, code) {
  assert.equal(r.signal, null, said(r));
  assert.equal(r.code, code, said(r));
  return r;
}

module.exports = { CLI, run, runProgram, said, exits };
