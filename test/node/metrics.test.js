// SPDX-License-Identifier: Apache-2.0
// metrics.test.js - the daemon's HTTP side as Prometheus sees it: /metrics
// in the text format 0.0.4 that promtool accepts, its counters moving with
// real token clients taking turns on an [arbiter gpu] and a Publish to a
// real echo client, blocked time that grows while a stopped holder keeps
// the resource and stops when nobody wants it, a real Prometheus server
// scraping it, 1,000 idle connections that do not stop /metrics, the
// daemon's own process_* figures against /proc, and a turn of its event
// loop held at a breakpoint (gdb) in a request, a timer and a registry's event,
// counted and logged as slow_turn with what held it.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const h = require('./harness');

// Token clients of this file only (echo clients have h.CONSUMER).
const CONSUMER_T = `mtok${process.pid}`.slice(0, 31);
const CONSUMER_NONE = `mnone${process.pid}`.slice(0, 31); // named, never a process
// token-client --id 0: the id's first byte is 0, the rest are zero.
const RES = { kind: 'gpu', resource: '00000000-0000-0000-0000-000000000000' }; // a UUID, as the CLI shows it
const BLOCKED = 'procctl_resource_blocked_seconds_total';
const PROMETHEUS = process.env.PROMETHEUS || 'prometheus';
const PROMTOOL = process.env.PROMTOOL || 'promtool';
const TEXT_004 = 'text/plain; version=0.0.4; charset=utf-8';
// Without promtool or prometheus their checks are skipped, except in CI.
const have = (bin) => !spawnSync(bin, ['--version'], { stdio: 'ignore' }).error;
const HAVE_PROMTOOL = have(PROMTOOL);
const HAVE_PROMETHEUS = have(PROMETHEUS);
const HAVE_GDB = have('gdb');
if (process.env.CI === 'true' && !(HAVE_PROMTOOL && HAVE_PROMETHEUS && HAVE_GDB)) {
  throw new Error(`CI needs ${PROMTOOL}, ${PROMETHEUS} (Debian: the prometheus package) and gdb`);
}

// The families every scrape has, with their types.
const FAMILIES = {
  procctl_build_info: 'gauge',
  procctl_ready: 'gauge',
  procctl_processes: 'gauge',
  procctl_processes_polled: 'gauge',
  procctl_scans_total: 'counter',
  procctl_scan_seconds_total: 'counter',
  procctl_attach_attempts_total: 'counter',
  procctl_attach_rejections_total: 'counter',
  procctl_heartbeats_total: 'counter',
  procctl_ownership_changes_total: 'counter',
  procctl_publishes_total: 'counter',
  procctl_acks_total: 'counter',
  procctl_publish_ack_seconds: 'histogram',
  procctl_resource_hold_seconds_total: 'counter',
  procctl_resource_blocked_seconds_total: 'counter',
  procctl_resource_pending_release_seconds_total: 'counter',
  procctl_resource_release_pending_age_seconds: 'gauge',
  procctl_arbiter_hold_seconds: 'gauge',
  procctl_links_held_elsewhere_total: 'counter',
  procctl_event_sockets_refused_total: 'counter',
  procctl_resource_handoffs_total: 'counter',
  procctl_resource_holder: 'gauge',
  procctl_resource_waiters: 'gauge',
  procctl_waits: 'gauge',
  procctl_desired_configs: 'gauge',
  procctl_desired_processes: 'gauge',
  procctl_desired_bytes: 'gauge',
  procctl_watch_events_total: 'counter',
  procctl_watch_history_bytes: 'gauge',
  procctl_watch_snapshots_total: 'counter',
  procctl_http_responses_total: 'counter',
  procctl_http_body_bytes: 'gauge',
  procctl_http_connections: 'gauge',
  procctl_http_cut_total: 'counter',
  procctl_grpc_calls_total: 'counter',
  procctl_grpc_streams: 'gauge',
  procctl_grpc_connections: 'gauge',
  procctl_grpc_connections_refused_total: 'counter',
  procctl_grpc_connections_cut_total: 'counter',
  procctl_grpc_accept_errors_total: 'counter',
  procctl_grpc_calls_open: 'gauge',
  procctl_grpc_calls_refused_total: 'counter',
  procctl_grpc_limit: 'gauge',
  procctl_loop_turn_seconds: 'histogram',
  procctl_loop_slow_turns_total: 'counter',
  process_cpu_seconds_total: 'counter',
  process_resident_memory_bytes: 'gauge',
  process_virtual_memory_bytes: 'gauge',
  process_open_fds: 'gauge',
  process_max_fds: 'gauge',
  process_start_time_seconds: 'gauge',
  process_threads: 'gauge',
  procctl_heap_bytes: 'gauge',
  procctl_log_lines_dropped_total: 'counter',
};

const scratch = h.scratch('procctl-metrics-');
let d, c, port, promPort, prom;
const kids = [];
const idle = [];

// One GET on a connection of its own: { status, type, body }.
function get(p, where = port) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: where, path: p, agent: false, timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (x) => (body += x));
      res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${p}: no answer in 10 s`)));
    req.on('error', reject);
  });
}

// The exposition, parsed: HELP and TYPE by family, and the samples in order.
function parse(text) {
  const help = new Map();
  const type = new Map();
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    let m;
    if ((m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line))) {
      assert.ok(!help.has(m[1]), `HELP ${m[1]} twice`);
      help.set(m[1], m[2]);
      continue;
    }
    if ((m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line))) {
      assert.ok(!type.has(m[1]), `TYPE ${m[1]} twice`);
      type.set(m[1], m[2]);
      continue;
    }
    assert.ok(!line.startsWith('#'), `a comment that is neither HELP nor TYPE: ${line}`);
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
    const labels = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/gy;
      let l;
      while (re.lastIndex < m[2].length && (l = re.exec(m[2]))) labels[l[1]] = l[2];
      assert.equal(re.lastIndex, m[2].length, `labels of ${JSON.stringify(line)}`);
    }
    samples.push({ name: m[1], labels, raw: m[3], value: Number(m[3]), line });
  }
  return { help, type, samples, text };
}

// The family a sample belongs to (a histogram's _bucket, _sum, _count).
function familyOf(x, type) {
  if (type.has(x.name)) return x.name;
  const m = /^(.*)_(bucket|sum|count)$/.exec(x.name);
  return m && type.get(m[1]) === 'histogram' ? m[1] : null;
}

// The one sample of name whose labels include want.
function sample(m, name, want = {}) {
  const xs = m.samples.filter((x) => x.name === name && Object.entries(want).every(([k, v]) => x.labels[k] === v));
  assert.equal(xs.length, 1, `${name}${JSON.stringify(want)}: ${xs.length} samples\n${m.text}`);
  return xs[0].value;
}

async function scrape() {
  const r = await get('/metrics');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.type, TEXT_004);
  return parse(r.body);
}

const blocked = async () => sample(await scrape(), BLOCKED, RES);

async function token() {
  const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', CONSUMER_T, '--kind', '1', '--id', '0',
    '--witness', path.join(scratch, 'witness')]);
  kids.push(t);
  await t.line(/^event=started pid=\d+$/, { out: true });
  await h.attached(d, t.pid);
  return t;
}

const gpu = async () => (await h.call(c, 'GetArbiter', { kind: 'gpu' })).arbiter.resources[0];

// An instant query through Prometheus' HTTP API: its result vector.
async function query(q) {
  const r = await get(`/api/v1/query?query=${encodeURIComponent(q)}`, promPort);
  assert.equal(r.status, 200, r.body);
  const j = JSON.parse(r.body);
  assert.equal(j.status, 'success', r.body);
  return j.data.result;
}

before(async () => {
  promPort = await h.freePort();
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${CONSUMER_T}\nhold_ms = 200\n` +
    'resources = 00000000-0000-0000-0000-000000000000\n' +
    `[desired m]\nconsumer = ${h.CONSUMER}\ndata = from the file\n`);
  d = await new h.Daemon({ consumers: `${CONSUMER_T},${h.CONSUMER},${CONSUMER_NONE}`,
    args: ['--config', conf, '--http-listen', '127.0.0.1:0', '--slow-turn-ms', '500'] }).ready();
  port = await d.httpPort();
  c = d.client();
  await h.until(async () => (await get('/healthz')).status === 200, { what: 'the HTTP side to answer' });

  // Prometheus starts now (it takes a while) and is waited for when used.
  const yml = path.join(scratch, 'prometheus.yml');
  fs.writeFileSync(yml, 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n' +
    `scrape_configs:\n  - job_name: procctl\n    static_configs:\n      - targets: ['127.0.0.1:${port}']\n`);
  if (HAVE_PROMETHEUS) {
    prom = new h.Child(PROMETHEUS, [`--config.file=${yml}`, `--storage.tsdb.path=${path.join(scratch, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`]);
  }
});

after(async () => {
  for (const s of idle) s.destroy();
  if (c) c.close();
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  await h.killAll();
  if (prom) await prom.stop();
  if (d) await d.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

test('a scrape: 200, text 0.0.4 that promtool accepts, every family with its HELP and TYPE', async (t) => {
  const ts = [await token(), await token(), await token()];
  const e = await h.echo();
  await h.attached(d, e.pid);
  const r = await h.call(c, 'Publish', { selector: { pid: e.pid }, payload: Buffer.from('metrics'), waitMs: 5000 });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  await h.until(async () => ts.map((t) => t.pid).includes((await gpu()).holder.pid), { what: 'a token client to hold the gpu' });

  // [desired m] reached the echo client at attach; the Publish is over it.
  await h.until(async () => await h.metric(port, 'procctl_desired_processes{desired="m",state="superseded"}') === 1,
    { what: 'the echo client to count as superseded' });
  const res = await get('/metrics');
  assert.equal(res.status, 200, res.body);
  assert.equal(res.type, TEXT_004);
  if (HAVE_PROMTOOL) {
    const pt = spawnSync(PROMTOOL, ['check', 'metrics'], { input: res.body, encoding: 'utf8', timeout: 20000 });
    assert.equal(pt.status, 0, `promtool check metrics: ${pt.status} ${pt.error || ''}\n${pt.stdout}${pt.stderr}\n${res.body}`);
    // Its lint findings also fail it: it says nothing on a clean text.
    assert.equal(`${pt.stdout}${pt.stderr}`.trim(), '', `promtool check metrics said:\n${pt.stdout}${pt.stderr}`);
  } else {
    t.diagnostic(`no ${PROMTOOL}: its check is skipped`);
  }

  const m = parse(res.body);
  for (const [name, t] of Object.entries(FAMILIES)) {
    assert.ok(m.help.has(name), `no HELP for ${name}`);
    assert.equal(m.type.get(name), t, `TYPE of ${name}`);
  }
  for (const [name, t] of m.type) {
    assert.ok(m.help.has(name), `TYPE ${name} without HELP`);
    assert.ok(t !== 'counter' || name.endsWith('_total'), `counter ${name} does not end in _total`);
    assert.ok(t === 'counter' || !name.endsWith('_total'), `${name} ends in _total but is a ${t}`);
  }
  for (const x of m.samples) {
    const f = familyOf(x, m.type);
    assert.ok(f, `${x.line}: no TYPE for its family`);
    assert.ok(m.help.has(f), `${x.line}: no HELP for its family`);
    assert.ok(!('pid' in x.labels), `${x.line}: a label named pid`);
    assert.ok(Number.isFinite(x.value) && x.value >= 0, `${x.line}: not a non-negative number`);
    assert.ok(x.name === f || m.type.get(f) === 'histogram', `${x.line}: a suffix on a ${m.type.get(f)}`);
  }
  const info = m.samples.filter((x) => x.name === 'procctl_build_info');
  assert.equal(info.length, 1);
  assert.equal(info[0].value, 1);
  assert.equal(info[0].raw, '1');
  assert.equal(info[0].labels.api, 'procctl.v1');
  assert.match(info[0].labels.version, /^\d+\.\d+\.\d+/);
  assert.equal(sample(m, 'procctl_ready'), 1);

  // What this file made: its processes, its resource, its calls.
  assert.equal(sample(m, 'procctl_processes', { consumer: CONSUMER_T, ownership: 'owned' }), 3);
  assert.equal(sample(m, 'procctl_processes', { consumer: h.CONSUMER, ownership: 'owned' }), 1);
  // A consumer named with no process: every ownership at 0, not a series missing.
  for (const ownership of ['passive', 'owned', 'conflict', 'broken']) {
    assert.equal(sample(m, 'procctl_processes', { consumer: CONSUMER_NONE, ownership }), 0, ownership);
  }
  for (const f of ['procctl_resource_hold_seconds_total', BLOCKED, 'procctl_resource_pending_release_seconds_total',
    'procctl_resource_handoffs_total', 'procctl_resource_holder', 'procctl_resource_waiters']) {
    assert.deepEqual(m.samples.filter((x) => x.name === f).map((x) => x.labels), [RES], f);
  }
  assert.ok(sample(m, 'procctl_resource_hold_seconds_total', RES) > 0);
  assert.ok(sample(m, 'procctl_publishes_total') >= 1);
  assert.ok(sample(m, 'procctl_acks_total', { result: 'applied' }) >= 1);
  assert.ok(sample(m, 'procctl_grpc_calls_total', { method: 'procctl.v1.NodeService/Publish', code: 'OK' }) >= 1);
  assert.ok(sample(m, 'procctl_grpc_calls_total', { method: 'procctl.v1.NodeService/GetArbiter', code: 'OK' }) >= 1);
  // HTTP's own, counted as sent: this file's GETs so far were answered 200.
  assert.ok(sample(m, 'procctl_http_responses_total', { code: '200' }) >= 1);

  // The histogram: cumulative buckets in le order, +Inf last and equal to _count.
  const buckets = m.samples.filter((x) => x.name === 'procctl_publish_ack_seconds_bucket');
  assert.equal(buckets[buckets.length - 1].labels.le, '+Inf');
  const le = (x) => (x.labels.le === '+Inf' ? Infinity : Number(x.labels.le));
  for (let i = 1; i < buckets.length; i++) {
    assert.ok(le(buckets[i]) > le(buckets[i - 1]), buckets[i].line);
    assert.ok(buckets[i].value >= buckets[i - 1].value, buckets[i].line);
  }
  const count = sample(m, 'procctl_publish_ack_seconds_count');
  assert.equal(buckets[buckets.length - 1].value, count);
  assert.ok(count >= 1);
  assert.ok(sample(m, 'procctl_publish_ack_seconds_sum') > 0);
});

test('counters move: handoffs, acks and the ack histogram; blocked time grows under a stopped holder, then stops', async () => {
  const m0 = await scrape();
  const hand0 = sample(m0, 'procctl_resource_handoffs_total', RES);
  await h.until(async () => sample(await scrape(), 'procctl_resource_handoffs_total', RES) > hand0,
    { timeout: 30000, what: 'handoffs to grow while the tokens rotate' });

  const echoPid = (await h.call(c, 'ListProcesses', { filter: { consumer: h.CONSUMER } })).processes[0].ref.pid;
  const applied0 = sample(m0, 'procctl_acks_total', { result: 'applied' });
  const count0 = sample(m0, 'procctl_publish_ack_seconds_count');
  const pubs0 = sample(m0, 'procctl_publishes_total');
  const r = await h.call(c, 'Publish', { selector: { pid: echoPid }, payload: Buffer.from('again'), waitMs: 5000 });
  assert.equal(r.results[0].status, 'PUBLISH_STATUS_APPLIED');
  const m1 = await scrape();
  assert.ok(sample(m1, 'procctl_acks_total', { result: 'applied' }) > applied0, m1.text);
  assert.ok(sample(m1, 'procctl_publish_ack_seconds_count') > count0, m1.text);
  assert.ok(sample(m1, 'procctl_publishes_total') > pubs0, m1.text);
  assert.equal(sample(m1, 'procctl_acks_total', { result: 'rejected' }), sample(m0, 'procctl_acks_total', { result: 'rejected' }));

  // Stop the holder while it holds (the grant it had before and after the
  // stop is the same), with two others wanting the gpu.
  const pids = kids.map((k) => k.pid);
  const held = await h.until(async () => {
    const a = await gpu();
    if (!pids.includes(a.holder.pid)) return false;
    process.kill(a.holder.pid, 'SIGSTOP');
    const b = await gpu();
    if (b.holder.pid === a.holder.pid && b.grantId === a.grantId) return b;
    process.kill(a.holder.pid, 'SIGCONT');
    return false;
  }, { timeout: 30000, what: 'a token client stopped while it holds the gpu' });
  const stopped = kids.find((k) => k.pid === held.holder.pid);

  const b1 = await blocked();
  const p1 = sample(await scrape(), 'procctl_resource_pending_release_seconds_total', RES);
  const grown = await h.until(async () => {
    const m = await scrape();
    return sample(m, BLOCKED, RES) > b1 && m;
  }, { timeout: 30000, what: 'blocked seconds to grow under the stopped holder' });
  assert.equal(sample(grown, 'procctl_resource_holder', RES), 1);
  assert.ok(sample(grown, 'procctl_resource_waiters', RES) >= 1, grown.text);
  await h.until(async () => sample(await scrape(), 'procctl_resource_pending_release_seconds_total', RES) > p1,
    { timeout: 30000, what: 'pending release seconds to grow under the stopped holder' });
  assert.equal((await gpu()).holder.pid, stopped.pid);

  // Killed, it lets the gpu go to another; then nobody wants it.
  await stopped.kill('SIGKILL');
  await h.until(async () => {
    const x = await gpu();
    return x.holder.pid !== 0 && x.holder.pid !== stopped.pid;
  }, { timeout: 30000, what: 'another token client to hold the gpu' });
  await Promise.all(kids.map((k) => k.kill('SIGKILL')));
  await h.until(async () => (await gpu()).holder.pid === 0, { timeout: 30000, what: 'no holder' });

  const s1 = await scrape();
  const v1 = sample(s1, BLOCKED, RES);
  assert.equal(sample(s1, 'procctl_resource_holder', RES), 0);
  assert.equal(sample(s1, 'procctl_resource_waiters', RES), 0);
  // Some scans later (the loop went on), the same blocked time to the digit.
  const scans1 = sample(s1, 'procctl_scans_total');
  await h.sleep(500);
  const s2 = await h.until(async () => {
    const m = await scrape();
    return sample(m, 'procctl_scans_total') >= scans1 + 3 && m;
  }, { timeout: 30000, what: 'three more scans' });
  assert.equal(s2.samples.find((x) => x.name === BLOCKED).raw, s1.samples.find((x) => x.name === BLOCKED).raw);
  assert.equal(sample(s2, BLOCKED, RES), v1);
  assert.ok(v1 > 0);
});

test('a real Prometheus scrapes it: up is 1, and it stores the blocked time /metrics reports',
  { skip: !HAVE_PROMETHEUS && `no ${PROMETHEUS}` }, async () => {
  await h.until(async () => {
    if (prom.exit) throw new Error(`prometheus exited: ${JSON.stringify(prom.exit)}\n${prom.lines.slice(-30).join('\n')}`);
    return (await get('/-/ready', promPort)).status === 200;
  }, { timeout: 30000, what: 'prometheus to be ready' });
  await h.until(async () => {
    const r = await query('up{job="procctl"}');
    return r.length === 1 && r[0].value[1] === '1';
  }, { timeout: 30000, every: 200, what: 'up{job="procctl"} to be 1' });

  // The state of the last test holds: nobody wants the gpu, the value is fixed.
  assert.equal((await gpu()).holder.pid, 0);
  const want = await blocked();
  let seen;
  await h.until(async () => {
    const r = await query(`${BLOCKED}{job="procctl",kind="gpu",resource="${RES.resource}"}`);
    if (r.length !== 1) return false;
    seen = Number(r[0].value[1]);
    return Math.abs(seen - want) <= 1e-9 * Math.max(1, Math.abs(want));
  }, { timeout: 30000, every: 200, what: `prometheus to store ${BLOCKED} ${want} (last seen ${seen})` });
  assert.equal(await blocked(), want);

  // Every family of a scrape reached it, with its type's series.
  const names = new Set((await query('{job="procctl"}')).map((x) => x.metric.__name__));
  for (const [name, t] of Object.entries(FAMILIES)) {
    const expect = t === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
    for (const n of expect) assert.ok(names.has(n), `prometheus has no ${n}: ${[...names].sort().join(' ')}`);
  }
  // Its scrapes end here: the held turn's test decides when /metrics is asked.
  await prom.stop();
  prom = null;
});

// /proc/PID/status's field (kB or a count), as a number.
const status = (pid, field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm')
  .exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

test("the daemon's own figures, as every Prometheus client exports them, agree with /proc", async () => {
  const pid = d.pid;
  // Fields after the command in /proc/PID/stat: [11] utime, [12] stime, [19] starttime (clock ticks).
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').slice(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    .lastIndexOf(')') + 2).split(' ');
  const btime = Number(/^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'))[1]);
  const tck = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim());
  const m = await scrape();
  assert.ok(Math.abs(sample(m, 'process_start_time_seconds') - (btime + Number(stat[19]) / tck)) < 1e-3,
    `process_start_time_seconds ${sample(m, 'process_start_time_seconds')}`);
  assert.ok(Math.abs(sample(m, 'process_start_time_seconds') - Date.now() / 1000) < 3600, 'a start within the hour');
  const cpu = sample(m, 'process_cpu_seconds_total');
  assert.ok(cpu >= (Number(stat[11]) + Number(stat[12])) / tck && cpu > 0, `process_cpu_seconds_total ${cpu}`);
  const limit = /^Max open files\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/limits`, 'utf8'))[1];
  assert.equal(sample(m, 'process_max_fds'), Number(limit));
  // Figures that move: each agrees with /proc in one of a few tries.
  await h.until(async () => {
    const x = await scrape();
    const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
    return sample(x, 'process_threads') === status(pid, 'Threads') &&
      Math.abs(sample(x, 'process_open_fds') - fds) <= 2 &&
      Math.abs(sample(x, 'process_resident_memory_bytes') / 1024 - status(pid, 'VmRSS')) < status(pid, 'VmRSS') / 4 &&
      Math.abs(sample(x, 'process_virtual_memory_bytes') / 1024 - status(pid, 'VmSize')) < status(pid, 'VmSize') / 4;
  }, { what: 'process_threads, _open_fds, _resident_memory_bytes and _virtual_memory_bytes to agree with /proc' });
  // What malloc holds, in use and free, within the address space; under a
  // sanitizer, malloc is its allocator's, which glibc's figures do not count.
  const heap = (state) => sample(m, 'procctl_heap_bytes', { state });
  assert.ok(heap('in_use') + heap('free') <= status(pid, 'VmSize') * 1024, `heap ${heap('in_use')} + ${heap('free')}`);
  if (!process.env.PROCCTL_SANITIZE) assert.ok(heap('in_use') > 1 << 20, `heap in use ${heap('in_use')}`);
  // 40 more descriptors (connections): process_open_fds counts them. Counted
  // from a still point: a connection of the test before (Prometheus's
  // scrapes) may close after a count taken at once, and the 40 never show.
  let last = -1;
  await h.until(async () => {
    const n = fs.readdirSync(`/proc/${pid}/fd`).length;
    const still = n === last;
    last = n;
    if (!still) await h.sleep(300);
    return still;
  }, { what: 'the daemon\'s descriptors to stop changing' });
  const sockets = h.sockets(pid);
  const before = sample(await scrape(), 'process_open_fds');
  const held = await Promise.all(Array.from({ length: 40 }, () => new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  })));
  try {
    await h.until(async () => sample(await scrape(), 'process_open_fds') >= before + 40,
      { what: 'process_open_fds to count 40 connections more' });
  } finally {
    for (const s of held) s.destroy();
  }
  // and gives them back (the next test counts the daemon's sockets)
  await h.until(() => h.sockets(pid) <= sockets, { what: 'the daemon to close the 40 connections' });
});

// gdb stops the loop at the first call of fn after trigger() for 800 ms,
// then lets it go: that turn is over slow_turn_ms (500 here, so that a
// loaded machine's own slow turns are rare). The turn's slow_turn line.
async function heldTurn(fn, trigger) {
  const g = new h.Child('gdb', ['-nx', '-batch', '-iex', 'set debuginfod enabled off', '-p', String(d.pid),
    '-ex', `break ${fn}`, '-ex', 'continue', '-ex', 'shell sleep 0.8', '-ex', 'detach'],
  { env: { ...process.env, DEBUGINFOD_URLS: '' } });
  kids.push(g);
  await g.line(/^Breakpoint 1 at /, { out: true, timeout: 60000 });
  // slow_turn lines are one a second at most: a second with none (the
  // turn gdb's attach stopped may be one) before the held turn, so that
  // no earlier line hides its line.
  const slowLines = () => d.lines.filter((l) => / event=slow_turn /.test(l)).length;
  for (let i = 0, n = -1; n !== slowLines(); i++) {
    assert.ok(i < 20, 'a second without a slow_turn line');
    n = slowLines();
    await h.sleep(1100);
  }
  const mark = d.lines.length; // the held turn's slow_turn line comes after it
  await trigger();
  assert.equal((await g.exited).code, 0, g.lines.join('\n'));
  return h.until(() => d.lines.slice(mark).find((l) => / event=slow_turn .*step_ms=([89]\d\d|\d{4,})\./.test(l)),
    { what: `the slow_turn line of the turn held in ${fn} (all of them: ${d.lines.filter((l) => /slow_turn/.test(l)).join('; ')})` });
}

test('a turn of the loop held at a breakpoint: counted in procctl_loop_slow_turns_total and logged as slow_turn', async (t) => {
  if (!HAVE_GDB) return t.skip('no gdb');
  const m0 = await scrape();
  const slow0 = sample(m0, 'procctl_loop_slow_turns_total');
  const turns0 = sample(m0, 'procctl_loop_turn_seconds_count');
  assert.ok(turns0 > 0, 'turns counted');
  // In the next /metrics job (node_render_metrics).
  const line = await heldTurn('node_render_metrics', async () => assert.equal((await get('/metrics')).status, 200));
  const m = await scrape();
  assert.ok(sample(m, 'procctl_loop_slow_turns_total') >= slow0 + 1);
  assert.ok(sample(m, 'procctl_loop_turn_seconds_count') > turns0);
  const buckets = m.samples.filter((x) => x.name === 'procctl_loop_turn_seconds_bucket');
  const upTo = (le) => buckets.find((x) => x.labels.le === le).value;
  assert.ok(upTo('+Inf') - upTo('0.25') >= 1, 'a turn over 0.25 s in the histogram');
  const f = /ms=([\d.]+) step=job detail="metrics" step_ms=([\d.]+) jobs=(\d+) fds=\d+ cpu_ms=([\d.]+)$/.exec(line);
  assert.ok(f, line);
  assert.ok(Number(f[1]) >= 800 && Number(f[2]) >= 800 && Number(f[3]) >= 1, line);
  // Its CPU time: the turn's work (the render), not the 800 ms it was stopped.
  assert.ok(Number(f[4]) > 0 && Number(f[4]) <= Number(f[1]) - 700, line);
});

test('a slow turn in the timers names the slowest; one in a registry, its events and the daemon\'s time in them', async (t) => {
  if (!HAVE_GDB) return t.skip('no gdb');
  // A wait's deadline (on_deadline): a publish that a stopped process
  // never acks, waiting 300 ms.
  const { e } = await h.stoppedEcho(d, c);
  kids.push(e);
  let line = await heldTurn('on_deadline', () => h.call(c, 'Publish', { selector: { pid: e.pid },
    payload: Buffer.from('never acked'), waitMs: 300 }));
  let f = /step=timers detail="(\d+) fired in ([\d.]+) ms, the slowest on_deadline: ([\d.]+) ms" step_ms=([\d.]+)/
    .exec(line);
  assert.ok(f, line);
  assert.ok(Number(f[1]) >= 1 && Number(f[3]) >= 800, line);
  assert.ok(Number(f[2]) >= Number(f[3]) && Number(f[4]) >= Number(f[2]), line);
  // A process attached (on_attached, in the daemon's handler of the
  // registry's event).
  let e2;
  line = await heldTurn('on_attached', async () => {
    e2 = await h.echo();
    await h.attached(d, e2.pid);
  });
  kids.push(e2);
  f = new RegExp(`step=registry detail="${h.CONSUMER}: (\\d+) events, ([\\d.]+) ms in their handlers, ` +
    'the slowest attached pid (\\d+): ([\\d.]+) ms" step_ms=([\\d.]+)').exec(line);
  assert.ok(f, line);
  assert.equal(Number(f[3]), e2.pid, line);
  assert.ok(Number(f[1]) >= 1 && Number(f[4]) >= 800, line);
  assert.ok(Number(f[2]) >= Number(f[4]) && Number(f[5]) >= Number(f[2]), line);
});

test('1,000 idle connections: /metrics and /healthz still answer', async () => {
  const base = h.sockets(d.pid);
  let closed = 0;
  await Promise.all(Array.from({ length: 1000 }, () => new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port });
    idle.push(s);
    s.once('connect', resolve);
    s.once('error', reject);
    s.once('close', () => closed++);
  })));
  // The daemon accepted them (not only the kernel's backlog): it holds
  // each until its request is late (10 s), so holds or closed it. (A few
  // of base may be the earlier tests' connections, closing meanwhile.)
  await h.until(() => h.sockets(d.pid) + closed >= base - 4 + 1000, { timeout: 30000,
    what: 'the daemon to hold 1,000 more sockets' });

  const m = await get('/metrics');
  assert.equal(m.status, 200, m.body);
  assert.equal(m.type, TEXT_004);
  assert.equal(sample(parse(m.body), 'procctl_build_info'), 1);
  const hz = await get('/healthz');
  assert.equal(hz.status, 200, hz.body);
  assert.deepEqual(JSON.parse(hz.body), { status: 'alive' });
  const rz = await get('/readyz');
  assert.equal(rz.status, 200, rz.body);
  // Whichever it closed, it closed as late (none was refused, none evicted).
  const shut = closed;
  const cut = parse((await get('/metrics')).body);
  assert.ok(sample(cut, 'procctl_http_cut_total', { reason: 'late' }) >= shut, `${shut} closed`);
  assert.equal(sample(cut, 'procctl_http_cut_total', { reason: 'evicted' }), 0);

  for (const s of idle.splice(0)) s.destroy();
  await h.until(() => h.sockets(d.pid) < base + 10, { timeout: 30000, what: 'the daemon to close the idle sockets' });
  assert.equal((await get('/metrics')).status, 200);
  assert.equal(d.exit, null);
});
