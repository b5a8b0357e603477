// SPDX-License-Identifier: Apache-2.0
// reload.test.js - procctl-node follows its config file: the [desired]
// sections of a file swapped in the way Kubernetes updates a mounted
// ConfigMap (a new dated directory, then the ..data symlink renamed over)
// or written in place apply at once, to processes already attached; a
// removed section is deleted; a file that does not parse is logged and
// the running configuration kept; other keys need a restart.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness');

after(() => h.killAll());

// A ConfigMap volume: dir/..v<N>/procctl-node.conf, dir/..data -> ..v<N>,
// dir/procctl-node.conf -> ..data/procctl-node.conf.
class Volume {
  constructor() {
    this.dir = h.scratch('procctl-cm-');
    this.n = 0;
    this.file = path.join(this.dir, 'procctl-node.conf');
  }

  swap(text) {
    const v = `..v${++this.n}`;
    fs.mkdirSync(path.join(this.dir, v));
    fs.writeFileSync(path.join(this.dir, v, 'procctl-node.conf'), text);
    fs.symlinkSync(v, path.join(this.dir, '..data_tmp'));
    fs.renameSync(path.join(this.dir, '..data_tmp'), path.join(this.dir, '..data'));
    if (this.n === 1) fs.symlinkSync('..data/procctl-node.conf', this.file);
    else fs.rmSync(path.join(this.dir, `..v${this.n - 1}`), { recursive: true }); // as the kubelet does
  }
}

const section = (name, data, extra = '') => `[desired ${name}]\nconsumer = ${h.CONSUMER}\n${extra}data = ${data}\n`;

async function desired(c) {
  return (await h.call(c, 'ListDesiredConfigs', {})).configs.map((x) => x.payload.toString());
}

async function sources(c) {
  return (await h.call(c, 'ListDesiredConfigs', {})).configs.map((x) => x.source);
}

test('a ConfigMap swap: [desired] sections apply at once; a removed one is deleted; a bad file is ignored', async () => {
  const vol = new Volume();
  vol.swap(section('all', 'level=info'));
  const e = await h.echo();
  const d = await new h.Daemon({ args: ['--config', vol.file] }).ready();
  await h.attached(d, e.pid);
  const c = d.client();
  await e.line(/event=applied .*payload=level=info/, { out: true });
  assert.deepEqual(await desired(c), ['level=info']);
  assert.deepEqual(await sources(c), ['all']); // ListDesiredConfigs names the file's section

  vol.swap(section('all', 'level=debug'));
  await e.line(/event=applied .*payload=level=debug/, { out: true });
  assert.deepEqual(await desired(c), ['level=debug']);
  await d.line(/event=config_reloaded file=\S+ desired=1/);

  // The file's selector is the file's: the API can neither set nor delete it.
  const sel = { consumer: h.CONSUMER, schemaVersion: 1 };
  let x = h.call(c, 'SetDesiredConfig', { config: { selector: sel, payload: Buffer.from('api') } });
  assert.equal(await h.code(x), 'FAILED_PRECONDITION');
  await assert.rejects(x, /belongs to \[desired all\] of the config file/);
  x = h.call(c, 'DeleteDesiredConfig', { selector: sel });
  assert.equal(await h.code(x), 'FAILED_PRECONDITION');
  assert.deepEqual(await desired(c), ['level=debug']);
  assert.deepEqual(await sources(c), ['all']);

  // Not a config: logged, its bytes escaped in the log value, and the
  // running one stays.
  vol.swap('this "is" not a config\x01\n');
  await d.line(/event=config_reload_failed .*error=".*'this \\"is\\" not a config\\x01' is not key = value.*kept=running/);
  assert.deepEqual(await desired(c), ['level=debug']);

  // The section removed: deleted from the store; the process keeps its config.
  vol.swap(`consumers = ${h.CONSUMER}\n`);
  await h.until(async () => (await desired(c)).length === 0, { what: 'the desired config to go' });
  const st = await h.call(c, 'ReadState', { process: { pid: e.pid } });
  assert.match(st.data.toString(), /mode=config/);

  // An API config with the selector a new section names: the file takes it, and says so.
  await h.call(c, 'SetDesiredConfig', { config: { selector: sel, payload: Buffer.from('api') } });
  vol.swap(section('again', 'level=file'));
  await d.line(/event=desired_replaced section=again revision=\d+ reason="a config set through the API/);
  assert.deepEqual(await sources(c), ['again']);
  vol.swap(`consumers = ${h.CONSUMER}\n`);
  await h.until(async () => (await desired(c)).length === 0, { what: 'the section\'s config to go' });

  // A key that does not apply while running: said so, and nothing else changes.
  vol.swap(`consumers = ${h.CONSUMER}\nlease_ms = 5000\n`);
  await d.line(/event=config_restart_needed/);
  c.close();
  await d.stop();
  fs.rmSync(vol.dir, { recursive: true, force: true });
});

test('a file written in place is followed too; the same bytes again change nothing', async () => {
  const dir = h.scratch('procctl-cf-');
  const file = path.join(dir, 'node.conf');
  fs.writeFileSync(file, section('all', 'one'));
  const e = await h.echo();
  const d = await new h.Daemon({ args: ['--config', file] }).ready();
  await h.attached(d, e.pid);
  await e.line(/payload=one/, { out: true });
  fs.writeFileSync(file, section('all', 'two'));
  await e.line(/payload=two/, { out: true });
  const applied = () => e.out.filter((l) => /event=applied/.test(l)).length;
  const before = applied();
  const reloads = () => d.lines.filter((l) => /event=config_reloaded/.test(l)).length;
  await h.until(() => reloads() >= 1, { what: 'the reload to be logged' });
  const r0 = reloads();
  fs.writeFileSync(file, section('all', 'two')); // touched, not changed
  await h.sleep(400);
  assert.equal(applied(), before);
  assert.equal(reloads(), r0);
  await d.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('across restarts: a section changed while no daemon ran reaches the running process; one removed is deleted',
  async () => {
    const vol = new Volume();
    const dir = h.scratch('procctl-rs-'); // locks and state kept across the restarts
    fs.mkdirSync(path.join(dir, 'run'));
    vol.swap(section('a', 'first'));
    const e = await h.echo();
    let d = await new h.Daemon({ dir, args: ['--config', vol.file] }).ready();
    await h.attached(d, e.pid);
    await e.line(/payload=first/, { out: true });
    await d.stop();
    vol.swap(section('a', 'second')); // while no daemon runs
    d = await new h.Daemon({ dir, args: ['--config', vol.file] }).ready();
    await e.line(/payload=second/, { out: true }); // it had "first" from the last daemon: news to it
    await d.stop();
    vol.swap(`consumers = ${h.CONSUMER}\n`);
    d = await new h.Daemon({ dir, args: ['--config', vol.file] }).ready();
    const c = d.client();
    await h.until(async () => (await desired(c)).length === 0, { what: 'the removed section to be deleted' });
    // One set through the API is not the file's: a reload leaves it.
    await h.call(c, 'SetDesiredConfig', { config: { selector: { consumer: h.CONSUMER, schemaVersion: 1 },
      payload: Buffer.from('api') } });
    vol.swap(`consumers = ${h.CONSUMER}\n# touched\n`);
    await h.sleep(400);
    assert.deepEqual(await sources(c), ['']);
    c.close();
    await d.stop();
    fs.rmSync(vol.dir, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });

test('--check-config validates [desired] sections', () => {
  const dir = h.scratch('procctl-cc-');
  const good = path.join(dir, 'good.conf');
  const bad = path.join(dir, 'bad.conf');
  fs.writeFileSync(good, section('a', 'x', 'pod = 8c9b4f3e-1a2b-4c5d-9e8f-0a1b2c3d4e5f\n'));
  fs.writeFileSync(bad, '[desired a]\nconsumer = echo\n');
  const twice = path.join(dir, 'twice.conf');
  fs.writeFileSync(twice, section('a', 'x') + section('b', 'y'));
  const run = (f) => require('node:child_process').spawnSync(h.NODE_BIN, ['--check-config', '--config', f],
    { encoding: 'utf8' });
  assert.equal(run(good).status, 0);
  const r = run(bad);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /\[desired a\]: data or data_base64: missing/);
  const t = run(twice);
  assert.equal(t.status, 2);
  assert.match(t.stderr, /\[desired b\]: the same selector as \[desired a\]/);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('SIGHUP reads the config file again at once and the daemon goes on serving (without --config: nothing to read)',
  async () => {
    const vol = new Volume();
    vol.swap(section('hup', 'level=info'));
    const d = await new h.Daemon({ args: ['--config', vol.file] }).ready();
    await d.line(/event=config_reloaded|event=desired_set section=hup/);
    process.kill(d.pid, 'SIGHUP');
    await d.line(new RegExp(`event=reload_asked file=${vol.file.replace(/[.]/g, '\\.')} signal=SIGHUP`));
    await d.line(/event=config_unchanged file=\S+ desired=1$/); // read, and said so: the file is as it was
    assert.equal(await h.health(d.addr), 'SERVING');
    const bare = await new h.Daemon().ready();
    process.kill(bare.pid, 'SIGHUP');
    await bare.line(/event=reload_ignored reason="no config file \(--config\) to read again"/);
    assert.equal(await h.health(bare.addr), 'SERVING');
    await bare.stop(); // exit 0: SIGHUP did not end it
    await d.stop();
    fs.rmSync(vol.dir, { recursive: true, force: true });
  });
