// SPDX-License-Identifier: Apache-2.0
// soak.js - make soak (not in make test): every attack of issues 17 and
// 36 at once against one daemon for SOAK_SECONDS (600), beside a healthy
// echo client that a probe process publishes to with --wait all along:
//   1,000 stalled processes (PROCCTL_STALLERS), 20 of them replaced every
//   5 s; abandoned WaitAcks (200 a second on a stopped process, cancelled);
//   made-up consumer names (20 processes every 2 s); desired configs set
//   and deleted past their caps; idle reflection streams past
//   max_watchers; refused regions and garbage HTTP (log floods); regions
//   that never seal; a process the gpu arbiter refuses that reports
//   holding it, beside two admitted holders taking turns; idle TCP
//   connections from 2,000 addresses, and 30,000 streams opened before the
//   limit is acknowledged, on TCP and the Unix socket; a read-only TCP
//   client's 17 connections of 1,000 WaitAcks; and issue 61's: 256 TCP
//   connections each opening WatchEvents past max_watchers_per_peer
//   (refusals), and a hostile Kubernetes API server (kube: the stand-in,
//   kubeapi.js, serving kubernetes_pods_max pods as large as a pod is
//   kept, their labels changing 1,000 times a second, every watch cut
//   with 410 Gone every 5 s so the table is listed again, and every 20 s
//   list pages padded past kubernetes_page_bytes_max and a watch event
//   past kubernetes_event_bytes_max), and a hello spray (hello: 20 new
//   copies of a program with the procctl:hello probe every 5 s, each
//   started as nobody, the last round's killed and removed: files mapped
//   for the first time, read and probed, beside the stalled processes);
//   and issue 64's: TCP connections from 8 addresses that never finish
//   their handshake, each made again as soon as it is closed (handshakes),
//   and, in kube, a pod with a NUL in an annotation (kept), one with a NUL
//   in a label (refused alone), and every 20 s list pages of 3 MB of
//   small values, within kubernetes_page_bytes_max.
// It samples the daemon's RSS, fds and threads every 5 s and compares
// the probe's p99 with an unloaded run of the same probe first. It fails
// when RSS is not flat (the least of the last minute's samples against
// the least of the second minute's, beside what malloc says it holds in
// use and free), less the event history (procctl_watch_history_bytes:
// it fills to watch_history events, 65,536, in about five minutes of
// these attacks, and stops; its own bound is test_loop's), or fds (the
// last sample against the one a minute in),
// the p99 is over 2x, or a turn of the daemon's event loop took over
// slow_turn_ms (50 ms: procctl_loop_slow_turns_total); the figures go to
// SOAK_OUT (JSON) either way.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const h = require('./harness');
const { flood } = require('./h2raw');

const SECONDS = Number(process.env.SOAK_SECONDS || 600);
const STALLERS = Number(process.env.PROCCTL_STALLERS || 1000);
const PROBE_S = Number(process.env.SOAK_PROBE_SECONDS || 30);
const OUT = process.env.SOAK_OUT || '';
// SOAK_ATTACKS: a comma-separated subset (stall,waits,names,desired,reflection,floods,unsealed,
// arbiter,conns,streams,readers,refusals,kube,hello,handshakes) to tell
// which costs what; default all.
const ATTACKS = (process.env.SOAK_ATTACKS ||
  'stall,waits,names,desired,reflection,floods,unsealed,arbiter,conns,streams,readers,refusals,kube,hello,handshakes')
  .split(',');
const on = (name) => ATTACKS.includes(name);
// SOAK_SPLIT=1: the daemon, the healthy client and the probe on CPU 0, the
// attackers (this driver and what it starts) on CPU 1: contention apart
// from what the daemon does.
const SPLIT = process.env.SOAK_SPLIT === '1';
// SOAK_DAEMON_ARGS: more flags for the daemon (smaller caps fill sooner).
// SOAK_CALLS_OUT: a file for the loaded probe's every call (soak-probe.js;
// the unloaded run's, written first, is written over).
const pin = (pid, cpu) => {
  if (SPLIT) spawnSync('taskset', ['-a', '-cp', String(cpu), String(pid)], { stdio: 'ignore' });
};

after(async () => {
  await h.killAll();
});

const status = (pid, key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
// Resident kB by kind of mapping, to tell which grows: the main heap,
// malloc's thread arenas (64 MiB reservations), small anonymous mappings
// (thread stacks), other anonymous ones (large allocations) and files.
function residence(pid) {
  const kb = { heap: 0, arenas: 0, small_anon: 0, anon: 0, file: 0 };
  let kind = 'file';
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (m) {
      const size = parseInt(m[2], 16) - parseInt(m[1], 16);
      if (m[4] === '[heap]') kind = 'heap';
      else if (m[4] !== '' || m[3] !== '0') kind = 'file';
      else if (size >= 32 << 20) kind = 'arenas';
      else kind = size <= 1 << 20 ? 'small_anon' : 'anon';
    } else if (line.startsWith('Rss:')) {
      kb[kind] += Number(/(\d+)/.exec(line)[1]);
    }
  }
  return kb;
}
// The daemon's CPU seconds by thread name (what it spends, thread by
// thread, on the attacks: its CPU is the one the probe's calls wait for).
const TICK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;
function threadsCpu(pid) {
  const by = {};
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    let st;
    try {
      st = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')).replace(/[0-9]+$/, '');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    by[name] = (by[name] || 0) + (Number(f[11]) + Number(f[12])) / TICK; // utime, stime
  }
  return by;
}
const cpuSince = (pid, before, seconds) => {
  const now = threadsCpu(pid);
  const by = Object.fromEntries(Object.entries(now).map(([k, v]) => [k, Number((v - (before[k] || 0)).toFixed(2))])
    .filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]));
  const total = Object.values(by).reduce((a, b) => a + b, 0);
  return { seconds: Number(total.toFixed(1)), share_of_a_cpu: Number((total / seconds).toFixed(3)), by_thread: by };
};
const sample = (pid) => ({ t: Date.now(), rss_kb: status(pid, 'VmRSS'), threads: status(pid, 'Threads'),
  fds: fs.readdirSync(`/proc/${pid}/fd`).length, resident_kb: residence(pid) });

// The probe (soak-probe.js) for s seconds: { n, failed, p50, p99, max }.
function probe(d, pid, s) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(__dirname, 'soak-probe.js'), d.addr, String(pid), String(s)],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    pin(p.pid, 0);
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (x) => { out += x; });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`probe exited ${code}`))));
  });
}

// A procsim that ran cmds (each answered "ok ..."), in order; opts:
// spawn's (uid, gid).
async function procsim(cmds, opts = {}) {
  const p = new h.Child(process.env.PROCSIM, [], { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
  for (const c of cmds) {
    const before = p.out.length;
    p.proc.stdin.write(`${c}\n`);
    await h.until(() => p.out.length > before || p.exit, { what: `${c} answered`, timeout: 30000 });
    if (!p.out[before] || !p.out[before].startsWith('ok')) throw new Error(`procsim ${c}: ${p.out[before]}`);
  }
  return p;
}

// Attached (GetProcess, cheap: ListProcesses polled by dozens would be
// the load), then its state page stalls and its doorbell rings.
async function staller(c) {
  const p = await procsim(['init test']);
  await h.until(async () => (await h.code(h.call(c, 'GetProcess', { process: { pid: p.pid } }))) === 'OK',
    { what: `${p.pid} attached`, every: 50, timeout: 30000 });
  const before = p.out.length;
  p.proc.stdin.write('stall\nring 1\n');
  await h.until(() => p.out.length >= before + 2, { what: 'stall, ring', timeout: 30000 });
  return p;
}
const rand = () => Math.random().toString(36).slice(2, 10);

// Run fn every ms until the end, one at a time; errors are counted.
function every(ms, end, fn, errors) {
  return (async () => {
    while (Date.now() < end) {
      const t0 = Date.now();
      try {
        await fn();
      } catch (e) {
        errors.push(e.message);
      }
      await h.sleep(Math.max(0, ms - (Date.now() - t0)));
    }
  })();
}

// The gpu arbiter: consumer soakgpu's processes, root's alone admitted.
function gpuConfig() {
  const conf = path.join(h.scratch('procctl-soak-'), 'node.conf');
  fs.writeFileSync(conf, '[arbiter gpu]\nkind = 1\nconsumer = soakgpu\nhold_ms = 100\n' +
    'resources = 00000000-0000-0000-0000-000000000000\nadmit_default = deny\nadmit_uids = 0\n');
  return conf;
}

// Two admitted token clients of soakgpu, taking turns with the gpu.
async function gpuHolders(d) {
  const ts = [];
  for (let i = 0; i < 2; i++) {
    const x = new h.Child(h.TOKEN_CLIENT, ['--consumer', 'soakgpu', '--kind', '1', '--id', '0']);
    await x.line(/^event=started pid=\d+$/, { out: true });
    await h.attached(d, x.pid);
    ts.push(x);
  }
  return ts;
}

// The hostile Kubernetes API server: kubeapi.js over TLS on 127.0.0.1,
// with n pods of node soak-node, each of 63 labels of 120 bytes (7.7 KiB
// of label text: near the most a pod is kept with). Returns { args (the
// daemon's flags), ctl(method, path, body), kill() }.
async function kubeServer(n) {
  const dir = h.scratch('procctl-soak-kube-');
  const { file, ca, leaf } = require('./certs').certs(dir);
  ca('ca');
  leaf('apiserver', 'kubernetes', 'ca', 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth');
  fs.writeFileSync(file('token'), 'soak-token\n');
  const labels = Object.fromEntries(Array.from({ length: 63 }, (_, i) =>
    [`${'a'.repeat(50)}.io/k${String(i).padStart(2, '0')}`, 'v'.repeat(63)]));
  const pods = Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `soak-${i}`, namespace: 'soak', uid: crypto.randomUUID(), labels },
    spec: { nodeName: 'soak-node', containers: [{ name: 'app', image: 'app:1' }] },
  }));
  pods[0].metadata.annotations = { note: 'a\u0000b' }; // kept: the daemon reads no annotation but the mirror's
  pods.push({ ...pods[1], metadata: { ...pods[1].metadata, name: 'soak-nul', uid: crypto.randomUUID(),
    labels: { app: 'a\u0000b' } } }); // refused alone: no label holds a NUL
  fs.writeFileSync(file('pods.json'), JSON.stringify(pods));
  const port = await h.freePort();
  const sock = file('control.sock');
  const child = new h.Child(process.execPath, [path.join(__dirname, 'kubeapi.js'), String(port), file('apiserver.crt'),
    file('apiserver.key'), 'soak-token', file('pods.json'), sock], { env: { ...process.env, KUBEAPI_HOST: '127.0.0.1' } });
  await child.line(/^listening /, { out: true });
  const ctl = (method, p, body) => new Promise((resolve, reject) => {
    const req = require('node:http').request({ socketPath: sock, method, path: p }, (res) => {
      let out = '';
      res.on('data', (x) => { out += x; });
      res.on('end', () => (res.statusCode === 200 ? resolve(out) : reject(new Error(out))));
    });
    req.on('error', reject);
    req.end(body);
  });
  return {
    ctl, kill: () => child.kill('SIGKILL'), pid: child.pid,
    args: ['--kubernetes-api', `https://127.0.0.1:${port}`, '--kubernetes-node', 'soak-node',
      '--kubernetes-token-file', file('token'), '--kubernetes-ca-file', file('ca.crt')],
  };
}

// A watch event past kubernetes_event_bytes_max: 2.9 MB of valid JSON in
// 40,000 small fields.
const bigEvent = () => `${JSON.stringify({ type: 'MODIFIED', object: { apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'soak-0', namespace: 'soak', uid: crypto.randomUUID(),
    annotations: Object.fromEntries(Array.from({ length: 40000 }, (_, i) => [`a${i}`, 'x'.repeat(60)])) },
  spec: { nodeName: 'soak-node', containers: [{ name: 'app', image: 'app:1' }] } } })}\n`;

test(`soak: every attack at once for ${SECONDS} s`, { timeout: (SECONDS + 900) * 1000 }, async (t) => {
  const port = await h.freePort();
  const tcp = await h.freePort();
  const kube = on('kube') ? await kubeServer(1024) : null;
  t.after(() => kube && kube.kill());
  const d = await new h.Daemon({ consumers: null,
    // The default rescan (a minute, as a node runs): the harness's 100 ms
    // would make the scans of thousands of processes the load.
    args: ['--http-listen', `127.0.0.1:${port}`, '--max-watchers', '512', '--max-consumers', '64',
      '--rescan-ms', '60000', '--config', gpuConfig(), '--grpc-listen', `127.0.0.1:${tcp}`, '--insecure-tcp', 'true',
      ...(kube ? kube.args : []), ...(process.env.SOAK_DAEMON_ARGS || '').split(' ').filter(Boolean)] }).ready();
  t.after(() => d.kill('SIGKILL'));
  const c = d.client();
  const e = await h.echo();
  await h.attached(d, e.pid);
  const holders = on('arbiter') ? await gpuHolders(d) : [];
  const handoffs = async () => Number((await h.call(c, 'GetArbiter', { kind: 'gpu' })).arbiter.resources[0].handoffs);
  // The attackers on CPU 1, those started before this too (the API
  // server, the arbiter's holders).
  for (const pid of [process.pid, ...(kube ? [kube.pid] : []), ...holders.map((x) => x.pid)]) pin(pid, 1);
  pin(d.pid, 0);
  pin(e.pid, 0);
  if (kube) await h.until(async () => (await h.metric(port, 'procctl_kube_synced')) === 1, { what: 'the pods listed', timeout: 60000 });
  const unloaded = await probe(d, e.pid, PROBE_S);

  // The standing load: stalled processes, and a stopped one for waits.
  const stalled = [];
  for (let i = 0; on('stall') && i < STALLERS; i += 50) {
    stalled.push(...await Promise.all(Array.from({ length: Math.min(50, STALLERS - i) }, () => staller(c))));
  }
  const stopped = await h.echo();
  await h.attached(d, stopped.pid);
  process.kill(stopped.pid, 'SIGSTOP');
  const gen = (await h.call(c, 'Publish', { selector: { pid: stopped.pid }, payload: Buffer.from('x') }))
    .results[0].generation;

  const end = Date.now() + SECONDS * 1000;
  const handoffsBefore = await handoffs();
  const errors = [];
  let kubeRound = 0;
  let refused = 0; // WatchEvents refused RESOURCE_EXHAUSTED (refusals)
  let helloRound = 0;
  const sprayDir = h.scratch('procctl-soak-hello-');
  fs.chmodSync(sprayDir, 0o755);
  const sprayed = [];
  const samples = [sample(d.pid)];
  // The attacks that hold streams do it on connections of their own: on
  // the driver's, its calls would wait behind them (grpc_max_streams).
  const own = { 'grpc.use_local_subchannel_pool': 1 };
  const raw = new h.grpc.Client(d.addr, h.grpc.credentials.createInsecure(), own);
  const waiter = new h.api.NodeService(d.addr, h.grpc.credentials.createInsecure(), own);
  const loops = [
    every(5000, end, async () => {
      const x = sample(d.pid);
      const m = await h.scrape(port); // what malloc holds: a resident set that grows while in_use does not is fragments
      samples.push({ ...x, heap_in_use_kb: m('procctl_heap_bytes{state="in_use"}') >> 10,
        heap_free_kb: m('procctl_heap_bytes{state="free"}') >> 10, history_kb: m('procctl_watch_history_bytes') >> 10,
        history_events: m('procctl_watch_events_total'),
        rss_less_history_kb: x.rss_kb - (m('procctl_watch_history_bytes') >> 10) });
    }, errors),
    on('stall') && every(5000, end, async () => { // stalled processes come and go
      const gone = stalled.splice(0, 20);
      await Promise.all(gone.map((p) => p.kill('SIGKILL')));
      stalled.push(...await Promise.all(Array.from({ length: 20 }, () => staller(c))));
    }, errors),
    on('waits') && every(1000, end, async () => { // abandoned waits
      const calls = Array.from({ length: 200 }, () => waiter.WaitAck({ process: { pid: stopped.pid }, generation: gen,
        waitMs: 300000 }, () => {}));
      await h.sleep(500);
      for (const x of calls) x.cancel();
    }, errors),
    on('names') && every(2000, end, async () => { // made-up consumer names
      const ps = await Promise.all(Array.from({ length: 20 }, () => procsim([`init m${rand()}`])));
      await h.sleep(1000);
      await Promise.all(ps.map((p) => p.kill('SIGKILL')));
    }, errors),
    on('desired') && every(1000, end, async () => { // desired configs past their caps
      const pod = crypto.randomUUID();
      const r = await h.call(c, 'SetDesiredConfig', { config: { selector: { consumer: 'soak', schemaVersion: 1, podUid: pod },
        payload: Buffer.alloc(64 << 10, 1) } }).catch((x) => x);
      if (r.code && h.grpc.status[r.code] !== 'RESOURCE_EXHAUSTED') throw new Error(`SetDesiredConfig: ${r.details}`);
      if (Math.random() < 0.5) {
        const l = await h.call(c, 'ListDesiredConfigs', {});
        for (const x of l.configs.slice(0, 2)) await h.call(c, 'DeleteDesiredConfig', { selector: x.selector });
      }
    }, errors),
    on('reflection') && every(6000, end, async () => { // idle reflection streams past max_watchers
      const ss = Array.from({ length: 600 }, () => {
        const s = raw.makeBidiStreamRequest('/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
          (b) => b, (b) => b);
        s.on('error', () => {});
        return s;
      });
      await h.sleep(5000);
      for (const s of ss) s.cancel();
    }, errors),
    on('floods') && every(2000, end, async () => { // refused regions, garbage HTTP: log floods
      const ps = await Promise.all(Array.from({ length: 10 }, () => procsim(['hostile writeseal'])));
      await Promise.all(Array.from({ length: 20 }, () => new Promise((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.end('GARBAGE \x01\x02 HTTP/9.9\r\n\r\n'));
        s.on('error', resolve);
        s.on('close', resolve);
        s.resume();
      })));
      await h.sleep(1000);
      await Promise.all(ps.map((p) => p.kill('SIGKILL')));
    }, errors),
    on('unsealed') && every(5000, end, async () => { // regions that never seal
      const ps = await Promise.all(Array.from({ length: 5 }, () => procsim(['hostile unsealed'])));
      await h.sleep(2000);
      await Promise.all(ps.map((p) => p.kill('SIGKILL')));
    }, errors),
    on('arbiter') && every(5000, end, async () => { // a refused process says it holds the gpu
      const p = await procsim(['init soakgpu', 'forgeres 1 0 2 1', 'ring 1'], { uid: 65534, gid: 65534 });
      await h.sleep(3000);
      await p.kill('SIGKILL');
    }, errors),
    on('conns') && every(5000, end, async () => { // idle TCP connections from 2,000 addresses
      const ss = Array.from({ length: 2000 }, (_, i) => {
        const s = net.connect({ port: tcp, host: '127.0.0.1', localAddress: `127.2.${i >> 8}.${i & 255}` });
        s.on('error', () => {});
        return s;
      });
      await h.sleep(4000);
      for (const s of ss) s.destroy();
    }, errors),
    on('streams') && every(5000, end, async () => { // streams opened before the limit is acknowledged
      const ss = [net.connect({ port: tcp, host: '127.0.0.1' }), net.connect(d.sock)];
      for (const s of ss) s.once('connect', () => flood(s, 30000, '/procctl.v1.NodeService/WatchEvents', { ack: false }));
      await h.sleep(3000);
      for (const s of ss) s.destroy();
    }, errors),
    on('readers') && every(5000, end, async () => { // a read-only client's waits, over 17 connections
      const cs = Array.from({ length: 17 }, () => new h.api.NodeService(`127.0.0.1:${tcp}`,
        h.grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
      const calls = cs.flatMap((x) => Array.from({ length: 1000 }, () => x.WaitAck({ process: { pid: stopped.pid },
        generation: gen, waitMs: 300000 }, () => {})));
      await h.sleep(4000);
      for (const x of calls) x.cancel();
      for (const x of cs) x.close();
    }, errors),
    on('refusals') && (async () => { // 256 connections, each opening WatchEvents past max_watchers_per_peer again and again,
      // grpc_max_streams (32) at a time
      const cs = Array.from({ length: 256 }, () => new h.api.NodeService(`127.0.0.1:${tcp}`,
        h.grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
      await Promise.all(cs.map(async (x) => {
        while (Date.now() < end) {
          const ws = Array.from({ length: 32 }, () => h.watch(x, {}));
          await h.until(() => Date.now() >= end || ws.every((w) => w.error || w.events.length),
            { what: 'the streams answered', timeout: 30000 }).catch((err) => errors.push(err.message));
          refused += ws.filter((w) => w.error && h.grpc.status[w.error.code] === 'RESOURCE_EXHAUSTED').length;
          for (const w of ws) w.stream.cancel();
        }
      }));
      for (const x of cs) x.close();
    })(),
    on('hello') && every(5000, end, async () => { // 20 new files with the probe, as nobody
      await Promise.all(sprayed.splice(0).map((x) => x.kill('SIGKILL')));
      for (const f of fs.readdirSync(sprayDir)) fs.rmSync(path.join(sprayDir, f), { force: true });
      helloRound += 1;
      for (let i = 0; i < 20; i++) {
        const f = path.join(sprayDir, `hello-${helloRound}-${i}`);
        fs.copyFileSync(process.env.ECHO_CLIENT, f);
        fs.chmodSync(f, 0o755);
        fs.chownSync(f, 65534, 65534);
        sprayed.push(new h.Child(f, ['--consumer', `spray${i}`], { uid: 65534, gid: 65534 }));
      }
    }, errors),
    on('handshakes') && Promise.all(Array.from({ length: 8 * 6 }, (_, i) => new Promise((resolve) => {
      // 8 addresses, 6 connections each that never finish their
      // handshake, each made again 100 ms after it is closed
      const again = () => {
        if (Date.now() >= end) return resolve();
        const s = net.connect({ port: tcp, host: '127.0.0.1', localAddress: `127.5.0.${(i % 8) + 1}` });
        s.on('error', () => {});
        s.on('close', () => setTimeout(again, 100));
        setTimeout(() => s.destroy(), Math.max(0, end - Date.now()));
      };
      again();
    }))),
    kube && kube.ctl('POST', '/churn?per_s=1000'),
    kube && every(5000, end, async () => { // the table listed again; now and then padded pages, a huge event
      kubeRound += 1;
      if (kubeRound % 4 === 0) await kube.ctl('POST', '/pad?bytes=6000000');
      if (kubeRound % 4 === 2) await kube.ctl('POST', '/pad?bytes=3000000&small=1');
      await kube.ctl('POST', '/expire');
      if (kubeRound % 4 === 2) {
        await h.sleep(2000);
        await kube.ctl('POST', '/pad?bytes=0');
      }
      if (kubeRound % 4 === 0) {
        await h.sleep(2000);
        await kube.ctl('POST', '/pad?bytes=0');
        await kube.ctl('POST', '/inject', bigEvent());
      }
    }, errors),
  ];
  const cpuBefore = threadsCpu(d.pid);
  const loadedFrom = Date.now();
  const loaded = probe(d, e.pid, SECONDS);
  await Promise.all(loops.filter(Boolean));
  const during = await loaded;
  const cpu = cpuSince(d.pid, cpuBefore, (Date.now() - loadedFrom) / 1000);
  samples.push(sample(d.pid));
  raw.close();
  waiter.close();

  const gpuHandoffs = on('arbiter') ? (await handoffs()) - handoffsBefore : null;
  const grpcLimits = {};
  for (const m of ['procctl_grpc_connections_cut_total', 'procctl_grpc_calls_refused_total',
    'procctl_grpc_connections_refused_total{transport="tcp",limit="grpc_max_connections"}',
    'procctl_grpc_connections_refused_total{transport="tcp",limit="pending_per_peer"}',
    'procctl_grpc_connections_refused_total{transport="tcp",limit="pending"}', 'procctl_grpc_connections_evicted_total']) {
    grpcLimits[m] = await h.metric(port, m);
  }
  if (kube) await kube.ctl('POST', '/churn?per_s=0');
  const kubeFigures = kube ? {
    pods: await h.metric(port, 'procctl_kube_pods'), lists: await h.metric(port, 'procctl_kube_lists_total'),
    events: await h.metric(port, 'procctl_kube_watch_events_total'),
    errors: await h.metric(port, 'procctl_kube_api_errors_total'),
    rejected: await h.metric(port, 'procctl_kube_rejected_total'),
  } : null;
  const snapshots = { built: await h.metric(port, 'procctl_watch_snapshots_total{how="built"}'),
    shared: await h.metric(port, 'procctl_watch_snapshots_total{how="shared"}') };
  const scans = await h.metric(port, 'procctl_scans_total');
  const scanS = await h.metric(port, 'procctl_scan_seconds_total');
  const m = await h.scrape(port);
  const over = (le) => m('procctl_loop_turn_seconds_count') - m(`procctl_loop_turn_seconds_bucket{le="${le}"}`);
  const loop = {
    turns: m('procctl_loop_turn_seconds_count'), over_10ms: over('0.01'), over_50ms: over('0.05'),
    over_250ms: over('0.25'), slow_turns: m('procctl_loop_slow_turns_total'),
    slow_lines: d.lines.filter((l) => / event=slow_turn /.test(l)).slice(0, 5),
    slow_steps: {}, // the lines said (one a second at most) by step="detail"
  };
  for (const l of d.lines) {
    const s = / event=slow_turn .* step=(\S+) detail=("[^"]*")/.exec(l);
    if (s) loop.slow_steps[`${s[1]} ${s[2]}`] = (loop.slow_steps[`${s[1]} ${s[2]}`] || 0) + 1;
  }
  const warm = samples.find((s) => s.t >= samples[0].t + 60000) || samples[0];
  // A minute's floor: the least of its samples. Pages of up to 16 MiB and
  // their trees come and go between two samples; what stays is the floor.
  const floor = (k, from, to) => Math.min(...samples.filter((x) => x.t >= from && x.t < to && x[k] !== undefined)
    .map((x) => x[k]));
  const floors = (k) => ({ warm: floor(k, warm.t, warm.t + 60000), last: floor(k, samples[samples.length - 1].t - 60000, Infinity) });
  const last = samples[samples.length - 1];
  const peak = (k) => Math.max(...samples.map((s) => s[k]));
  const lines = d.lines.length;
  const result = {
    seconds: SECONDS, stallers: STALLERS, unloaded, loaded: during, p99_ratio: during.p99 / unloaded.p99, daemon_cpu: cpu,
    rss_kb: { start: samples[0].rss_kb, warm: warm.rss_kb, last: last.rss_kb, peak: peak('rss_kb'), floor: floors('rss_kb'),
      less_history_floor: floors('rss_less_history_kb'), history: floors('history_kb') },
    heap_kb: { in_use: floors('heap_in_use_kb'), free: floors('heap_free_kb') },
    fds: { start: samples[0].fds, warm: warm.fds, last: last.fds, peak: peak('fds') },
    threads: { start: samples[0].threads, warm: warm.threads, last: last.threads, peak: peak('threads') },
    resident_kb: { warm: warm.resident_kb, last: last.resident_kb },
    minutes: samples.filter((x, i) => i % 12 === 0).map((x) => ({ rss_kb: x.rss_kb, threads: x.threads,
      heap_in_use_kb: x.heap_in_use_kb, heap_free_kb: x.heap_free_kb, history_kb: x.history_kb,
      history_events: x.history_events })),
    scans, scan_ms_mean: (scanS / scans) * 1000, loop, gpu_handoffs: gpuHandoffs, grpc_limits: grpcLimits, watches_refused: refused, watch_snapshots: snapshots, kube: kubeFigures,
    log_lines: lines, log_lines_per_s: lines / SECONDS, driver_errors: errors.length, first_errors: errors.slice(0, 5),
  };
  const text = JSON.stringify(result, null, 2);
  console.log(text);
  if (OUT) fs.writeFileSync(OUT, `${text}\n`);

  process.kill(stopped.pid, 'SIGCONT');
  await Promise.all([...stalled, ...holders].map((p) => p.kill('SIGKILL')));
  c.close();
  await d.stop();
  assert.equal(during.failed, 0, 'the healthy client was not always served');
  assert.ok(result.p99_ratio <= 2, `p99 ${during.p99} ms loaded against ${unloaded.p99} ms unloaded`);
  const flat = result.rss_kb.less_history_floor;
  assert.ok(flat.last <= flat.warm * 1.2, `RSS's floor less the event history ${flat.warm} kB in the second minute, `
    + `${flat.last} kB in the last (with it: ${result.rss_kb.floor.warm}, ${result.rss_kb.floor.last} kB)`);
  assert.ok(last.fds <= warm.fds + 32, `fds ${warm.fds} a minute in, ${last.fds} at the end`);
  if (on('arbiter')) assert.ok(gpuHandoffs >= SECONDS, `${gpuHandoffs} gpu hand-offs in ${SECONDS} s`);
  if (kube) assert.equal(kubeFigures.pods, 1024, 'the pods table holds every valid pod the server has');
  if (kube) assert.ok(kubeFigures.rejected >= 1, 'the pod with a NUL in a label refused');
  if (on('handshakes')) {
    assert.ok(grpcLimits['procctl_grpc_connections_refused_total{transport="tcp",limit="pending_per_peer"}'] > 0,
      'the handshake spray met its bound');
  }
  assert.equal(loop.slow_turns, 0, `turns of the loop over 50 ms:\n${loop.slow_lines.join('\n')}`);
});
