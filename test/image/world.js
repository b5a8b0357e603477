// SPDX-License-Identifier: Apache-2.0
// world.js - what the image tests share: the chart rendered with helm, the
// rendered pod run in podman (pod.js), the procctl CLI and echo and token
// clients on the host. PROCCTL_IMAGE names the image (make image's).
'use strict';

const { after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const h = require('../node/harness');
const { podmanRun } = require('./pod');

const ROOT = path.resolve(__dirname, '..', '..');
const CHART = path.join(ROOT, 'deploy', 'helm', 'procctl-node');
const HELM = path.join(ROOT, 'test', 'peers', 'bin', 'helm');
const CLI = process.env.PROCCTL_CLI;
const IMAGE = process.env.PROCCTL_IMAGE; // repository:tag, made by make image
const ECHO = `img${process.pid}`.slice(0, 31);
const TOK = `imt${process.pid}`.slice(0, 31);
const W = h.scratch('procctl-image-');
const NOFILE = Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout);
const pods = new Set();
const kids = [];

function podman(args, { check = true, timeout = 120000 } = {}) {
  const r = spawnSync('podman', ['--runtime', 'runc', ...args], { encoding: 'utf8', timeout });
  if (check && r.status !== 0) throw new Error(`podman ${args.join(' ')}: exit ${r.status}\n${r.stdout}${r.stderr}`);
  return r;
}

// helm template of the chart with the test's values (and files of values).
function render(values, files = []) {
  const vf = path.join(W, `values-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(vf, JSON.stringify(values));
  const r = spawnSync(HELM, ['template', 'procctl-node', CHART, '--namespace', 'procctl',
    ...files.flatMap((f) => ['-f', f]), '-f', vf], {
    encoding: 'utf8',
    env: { ...process.env, HELM_CACHE_HOME: path.join(W, 'helm'), HELM_CONFIG_HOME: path.join(W, 'helm'),
      HELM_DATA_HOME: path.join(W, 'helm') },
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

// The chart's values for a run whose host paths are under dir.
function values(dir, config = {}) {
  const [repository, tag] = [IMAGE.slice(0, IMAGE.lastIndexOf(':')), IMAGE.slice(IMAGE.lastIndexOf(':') + 1)];
  return {
    image: { repository, tag, pullPolicy: 'Never' },
    kubernetes: { enabled: false }, // no API server here (kube.test.js has a stand-in)
    hostPaths: { socketDir: path.join(dir, 'run'), lockDir: path.join(dir, 'run', 'locks'),
      stateDir: path.join(dir, 'state') },
    config: {
      consumers: [ECHO, TOK],
      arbiters: [{ name: 'tok', kind: 1, consumer: TOK, holdMs: 300,
        resources: ['00000000-0000-0000-0000-000000000000'] }],
      ...config,
    },
  };
}

// RuntimeDefault as containerd and Docker have it: podman's profile, with
// perf_event_open allowed to CAP_PERFMON (containerd/containerd#7301,
// moby/moby#43987; containers/container-libs#424 did it for podman) and
// the futex calls of Linux 5.16 and 6.7 allowed (container-libs#678 did
// that for podman 6); io_uring stays refused, as containerd 2 and Docker
// 25 refuse it.
function containerdDefault() {
  const p = JSON.parse(fs.readFileSync('/usr/share/containers/seccomp.json', 'utf8'));
  p.syscalls.push({ names: ['futex_waitv', 'futex_wait', 'futex_wake', 'futex_requeue'], action: 'SCMP_ACT_ALLOW',
    args: [], includes: {}, excludes: {} });
  for (const s of p.syscalls) {
    if (s.names.includes('perf_event_open') && s.action === 'SCMP_ACT_ERRNO' && s.excludes?.caps) {
      s.excludes.caps.push('CAP_PERFMON');
    }
  }
  p.syscalls.push({ names: ['perf_event_open'], action: 'SCMP_ACT_ALLOW', args: [], includes: { caps: ['CAP_PERFMON'] },
    excludes: {} });
  const f = path.join(W, 'seccomp-runtime-default.json');
  fs.writeFileSync(f, JSON.stringify(p));
  return f;
}
const SECCOMP = containerdDefault();

// A run of the rendered pod, and what the host sees of it.
class Pod {
  constructor(name, rendered, { dir, seccomp = SECCOMP, edit, secrets, extra = [] } = {}) {
    this.name = `${name}-${process.pid}`;
    this.spec = podmanRun(rendered, { name: this.name, nodeName: os.hostname(), dir, seccomp, edit, secrets });
    this.extra = extra;
    this.sock = spawnLookup(this.spec.args, 'PROCCTL_SOCKET');
  }

  start() {
    const args = [...this.spec.args];
    // The rlimits this sandbox lets a container have (no CAP_SYS_RESOURCE).
    args.splice(1, 0, '--ulimit', `nofile=${NOFILE}:${NOFILE}`, '--ulimit', 'nproc=4096:4096', ...this.extra);
    podman(args);
    pods.add(this.name);
    this.ip = podman(['inspect', '-f', '{{.NetworkSettings.IPAddress}}', this.name]).stdout.trim();
    return this;
  }

  logs() {
    const r = podman(['logs', this.name], { check: false });
    return `${r.stdout}${r.stderr}`.split('\n');
  }

  line(re, { timeout = 30000 } = {}) {
    return h.until(() => this.logs().find((l) => re.test(l)), { timeout, every: 200, what: `${re} in ${this.name}` });
  }

  // curl on the pod's IP, as a Service or Prometheus reaches it: status
  // and body (rejects when nothing answers).
  async get(p) {
    const r = spawnSync('curl', ['-s', '-m', '5', '-w', '\n%{http_code}', `http://${this.ip}:${this.spec.ports.http}${p}`],
      { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`curl ${p}: exit ${r.status} (nothing answers)`);
    const at = r.stdout.lastIndexOf('\n');
    return { status: Number(r.stdout.slice(at + 1)), body: r.stdout.slice(0, at) };
  }

  // A sample of /metrics by its name with labels (NaN: none).
  async metric(name) {
    const { body } = await this.get('/metrics');
    const l = body.split('\n').find((x) => x.startsWith(`${name} `));
    return l ? Number(l.slice(name.length + 1)) : NaN;
  }

  ready() {
    return h.until(async () => (await this.get(this.spec.readiness.path)).status === 200,
      { timeout: 30000, every: 200, what: `${this.name} ready` });
  }

  exec(cmd) {
    return podman(['exec', this.name, ...cmd], { check: false });
  }

  // podman stop with the pod's grace period: the exit code.
  stop() {
    podman(['stop', '--time', String(this.spec.grace), this.name], { timeout: (this.spec.grace + 30) * 1000 });
    return Number(podman(['inspect', '-f', '{{.State.ExitCode}}', this.name]).stdout.trim());
  }

  rm() {
    podman(['rm', '-f', this.name], { check: false });
    pods.delete(this.name);
  }
}

function spawnLookup(args, env) {
  const e = args.find((a) => a.startsWith(`${env}=`));
  return e && e.slice(env.length + 1);
}

function cli(sock, args) {
  const r = spawnSync(CLI, ['--socket', sock, ...args], { encoding: 'utf8', timeout: 30000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// The pids the daemon behind sock lists for consumer.
function listed(sock, consumer) {
  const r = cli(sock, ['-o', 'json', 'ps', '--consumer', consumer]);
  if (r.code !== 0) return [];
  return (JSON.parse(r.out).processes || []).map((p) => p.ref.pid);
}

async function echo(args = [], spawnOpts = {}) {
  const c = new h.Child(args[0] || h.ECHO_CLIENT, ['--consumer', ECHO], spawnOpts);
  kids.push(c);
  await c.line(/event=started/, { out: true });
  return c;
}

async function token(witness) {
  const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', TOK, '--kind', '1', '--id', '0', '--witness', witness]);
  kids.push(t);
  await t.line(/^event=started pid=\d+$/, { out: true });
  return t;
}

const attachedBy = (sock, consumer, pid, timeout = 20000) =>
  h.until(() => listed(sock, consumer).includes(pid), { timeout, every: 200, what: `pid ${pid} attached` });

after(async () => {
  for (const p of pods) podman(['rm', '-f', p], { check: false });
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
});

// Kill the clients started so far (between tests).
async function killClients() {
  await Promise.all(kids.splice(0).map((k) => k.kill('SIGKILL')));
}

module.exports = { h, Pod, podman, render, values, cli, listed, echo, token, attachedBy, killClients, W, ECHO, TOK, IMAGE };

