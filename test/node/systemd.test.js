// SPDX-License-Identifier: Apache-2.0
// systemd.test.js - procctl-node on a host run by systemd (issue 40): the
// socket's group (socket_group), whose members call the API and nobody
// else does.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');
const { run, said, exits } = require('./clirun');

after(() => h.killAll());

test('socket_group: the socket is the group\'s, 0660; its members call the API, others are refused', async () => {
  const gid = 42420 + (process.pid % 1000); // a gid with no name: nothing is added to the host's groups
  const d = await new h.Daemon({ args: ['--socket-group', String(gid)] }).ready();
  const st = fs.statSync(d.sock);
  assert.equal(st.gid, gid);
  assert.equal(st.mode & 0o7777, 0o660);
  await d.line(new RegExp(`event=listening addr=unix:${d.sock} mode=0660 group=${gid}$`));
  for (let p = path.dirname(d.sock); p !== '/' && p !== path.dirname(d.dir); p = path.dirname(p)) fs.chmodSync(p, 0o755);
  const as = (groups) => ['setpriv', '--reuid=65534', '--regid=65534', ...groups, '--'];
  const member = exits(await run(['health'], { sock: d.sock, prefix: as([`--groups=${gid}`]) }), 0);
  assert.match(member.stdout, /SERVING/, said(member));
  const other = exits(await run(['health'], { sock: d.sock, prefix: as(['--clear-groups']) }), 1);
  assert.match(other.stderr, new RegExp(`permission denied: the socket is mode 0660, of user root and group ${gid}`), said(other));
  await d.stop();
});

test('socket_group naming no group: the start fails, and --check-config says so', async () => {
  const bad = `nosuchgroup${process.pid}`;
  const d = new h.Daemon({ args: ['--socket-group', bad] });
  const e = await d.exited;
  assert.equal(e.code, 1, d.lines.join('\n'));
  await d.line(new RegExp(`event=start_failed error="socket_group ${bad}: no such group"`));
  const r = await new Promise((resolve) => {
    const c = new h.Child(process.env.PROCCTL_NODE, ['--check-config', '--socket-group', bad]);
    c.exited.then((x) => resolve({ ...x, err: c.lines.join('\n') }));
  });
  assert.equal(r.code, 2);
  assert.match(r.err, new RegExp(`^procctl-node: socket_group ${bad}: no such group$`));
});
