// SPDX-License-Identifier: Apache-2.0
// security.test.js - who may do what (issue 18), each rule as the attack
// that broke it: the socket's mode from its first moment, ...
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

after(async () => {
  await h.killAll();
});

// The mode the daemon's socket has the moment it appears, seen through
// inotify before the daemon could change it.
async function socketModeAtBirth(umask) {
  const dir = h.scratch('procctl-node-');
  fs.mkdirSync(path.join(dir, 'run'));
  const w = new h.Child(process.env.SOCKWATCH, [path.join(dir, 'run'), 'node.sock']);
  await w.line(/^ready$/, { out: true });
  const old = process.umask(umask);
  let d;
  try {
    d = new h.Daemon({ dir });
  } finally {
    process.umask(old);
  }
  await d.ready();
  const mode = await w.line(/^mode=/, { out: true });
  const now = fs.statSync(d.sock).mode & 0o7777;
  await d.stop();
  return { birth: parseInt(mode.slice(5), 8), now };
}

test('the socket is never wider than 0660, not even for a moment under umask 0', async () => {
  for (let i = 0; i < 6; i++) {
    const m = await socketModeAtBirth(0);
    assert.equal(m.birth, 0o660, `start ${i}: the socket appeared with mode 0${m.birth.toString(8)}`);
    assert.equal(m.now, 0o660);
  }
  // A umask that takes more still ends at 0660 (the group is the access).
  const m = await socketModeAtBirth(0o077);
  assert.ok((m.birth & ~0o660) === 0, `mode 0${m.birth.toString(8)}`);
  assert.equal(m.now, 0o660);
});
