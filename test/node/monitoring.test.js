// SPDX-License-Identifier: Apache-2.0
// monitoring.test.js - procctl's alert rules and dashboard with the real
// thing: Debian's Prometheus scraping a real procctl-node, with the
// chart's rules loaded (rendered by scripts/monitoring.sh, thresholds
// shortened to seconds). A token holder stopped (SIGSTOP) while another
// waits makes ProcctlResourceBlocked fire; resumed, the alert resolves.
// Every query of the dashboard (deploy/helm/procctl-node/files/
// dashboard.json) returns data there, on a node with a desired config
// applied and token clients taking turns.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const h = require('./harness');

const ROOT = path.resolve(__dirname, '../..');
const CONSUMER_T = `motok${process.pid}`.slice(0, 31);
const GPU = '00000000-0000-0000-0000-000000000000';
const PROMETHEUS = process.env.PROMETHEUS || 'prometheus';
const HAVE_PROMETHEUS = !spawnSync(PROMETHEUS, ['--version'], { stdio: 'ignore' }).error;
if (process.env.CI === 'true' && !HAVE_PROMETHEUS) throw new Error(`CI needs ${PROMETHEUS} (Debian: the prometheus package)`);
const skip = !HAVE_PROMETHEUS && `no ${PROMETHEUS}`;

const scratch = h.scratch('procctl-monitoring-');
let d, c, port, promPort, prom;
const kids = [];

function get(p, where = promPort) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: where, path: p, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (x) => { body += x; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

// An instant query: its result vector (throws on an error, a bad query
// among them).
async function query(q) {
  const r = await get(`/api/v1/query?query=${encodeURIComponent(q)}`);
  const j = JSON.parse(r.body);
  if (j.status !== 'success') throw new Error(`${q}: ${r.body}`);
  return j.data.result;
}

// The alerts Prometheus has now, of one name.
async function alerts(name) {
  const j = JSON.parse((await get('/api/v1/alerts')).body);
  return j.data.alerts.filter((a) => a.labels.alertname === name);
}

async function token() {
  const t = new h.Child(h.TOKEN_CLIENT, ['--consumer', CONSUMER_T, '--kind', '1', '--id', '0']);
  kids.push(t);
  await t.line(/^event=started pid=\d+$/, { out: true });
  await h.attached(d, t.pid);
  return t;
}

const holder = async () => (await h.call(c, 'GetArbiter', { kind: 'gpu' })).arbiter.resources[0].holder.pid;

before(async () => {
  promPort = await h.freePort();
  const conf = path.join(scratch, 'node.conf');
  fs.writeFileSync(conf, `[arbiter gpu]\nkind = 1\nconsumer = ${CONSUMER_T}\nhold_ms = 200\nresources = ${GPU}\n` +
    `[desired m]\nconsumer = ${h.CONSUMER}\ndata = monitored\n`);
  d = await new h.Daemon({ consumers: `${CONSUMER_T},${h.CONSUMER}`,
    args: ['--config', conf, '--http-listen', '127.0.0.1:0'] }).ready();
  port = await d.httpPort();
  c = d.client();
  if (!HAVE_PROMETHEUS) return;
  // The chart's rules, their thresholds in seconds.
  const rules = path.join(scratch, 'rules.yml');
  const r = spawnSync('sh', [path.join(ROOT, 'scripts/monitoring.sh'), rules,
    '--set', 'prometheusRule.thresholds.blockedWindow=10s', '--set', 'prometheusRule.thresholds.blockedFor=3s',
    '--set', 'prometheusRule.job=procctl'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const yml = path.join(scratch, 'prometheus.yml');
  fs.writeFileSync(yml, 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n' +
    `rule_files:\n  - ${rules}\n` +
    `scrape_configs:\n  - job_name: procctl\n    static_configs:\n      - targets: ['127.0.0.1:${port}']\n`);
  prom = new h.Child(PROMETHEUS, [`--config.file=${yml}`, `--storage.tsdb.path=${path.join(scratch, 'data')}`,
    `--web.listen-address=127.0.0.1:${promPort}`]);
  await h.until(async () => {
    if (prom.exit) throw new Error(`prometheus exited: ${JSON.stringify(prom.exit)}\n${prom.lines.slice(-30).join('\n')}`);
    return (await get('/-/ready')).status === 200;
  }, { timeout: 30000, what: 'prometheus to be ready' });
  await h.until(async () => {
    const u = await query('up{job="procctl"}');
    return u.length === 1 && u[0].value[1] === '1';
  }, { timeout: 30000, every: 200, what: 'up{job="procctl"} to be 1' });
});

after(async () => {
  if (c) c.close();
  await Promise.all(kids.map((k) => {
    if (k.exit === null) process.kill(k.pid, 'SIGCONT');
    return k.kill('SIGKILL');
  }));
  await h.killAll();
  if (prom) await prom.stop();
  if (d) await d.stop();
});

test('the rules load: every group evaluates on the real Prometheus, none in error', { skip }, async () => {
  const j = JSON.parse((await get('/api/v1/rules')).body);
  const rules = j.data.groups.flatMap((g) => g.rules);
  assert.ok(rules.filter((r) => r.type === 'alerting').length >= 10, 'the alerts are loaded');
  await h.until(async () => {
    const g = JSON.parse((await get('/api/v1/rules')).body).data.groups.flatMap((x) => x.rules);
    return g.every((r) => r.health === 'ok') && g;
  }, { timeout: 30000, every: 500, what: 'every rule evaluated with health ok' });
});

test('a stopped holder while another waits: ProcctlResourceBlocked fires; resumed, it resolves', { skip }, async () => {
  // One token client, alone: it holds, and keeps its grant while nobody
  // waits. Stopped, it cannot release; then a second one waits.
  const { pid } = await token();
  await h.until(async () => (await holder()) === pid, { what: 'the token client to hold the gpu' });
  assert.equal((await alerts('ProcctlResourceBlocked')).length, 0);
  process.kill(pid, 'SIGSTOP');
  await token();
  const firing = await h.until(async () => {
    const a = await alerts('ProcctlResourceBlocked');
    return a.length === 1 && a[0].state === 'firing' && a[0];
  }, { timeout: 60000, every: 500, what: 'ProcctlResourceBlocked to fire' });
  assert.equal(firing.labels.kind, 'gpu');
  assert.equal(firing.labels.resource, GPU);
  assert.equal(firing.labels.severity, 'warning');
  assert.match(firing.annotations.summary, new RegExp(`^resource gpu ${GPU} on 127\\.0\\.0\\.1:${port} is blocked$`));
  assert.match(firing.annotations.runbook_url, /docs\/alerts\.md#procctlresourceblocked$/);
  assert.equal(await holder(), pid); // still its holder: nobody else got it

  process.kill(pid, 'SIGCONT');
  await h.until(async () => {
    const p = await holder();
    return p !== 0 && p !== pid;
  }, { timeout: 30000, what: 'the other token client to get the gpu' });
  await h.until(async () => (await alerts('ProcctlResourceBlocked')).length === 0,
    { timeout: 60000, every: 500, what: 'ProcctlResourceBlocked to resolve' });
});

test('every query of the dashboard returns data on this node', { skip }, async () => {
  // A desired config applied (publish to ack latency, the rollout).
  const e = await h.echo();
  await h.attached(d, e.pid);
  await h.until(async () => (await query('procctl_desired_processes{state="applied"} > 0')).length === 1,
    { timeout: 30000, every: 200, what: 'the desired config applied, as Prometheus sees it' });
  await h.until(async () => (await query('procctl_publish_ack_seconds_count > 0')).length === 1,
    { timeout: 30000, every: 200, what: 'an ack seen, as Prometheus sees it' });

  const dash = JSON.parse(fs.readFileSync(path.join(ROOT, 'deploy/helm/procctl-node/files/dashboard.json'), 'utf8'));
  const targets = dash.panels.filter((p) => p.type !== 'row')
    .flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
  assert.ok(targets.length >= 20, `${targets.length} queries`);
  for (const { panel, expr } of targets) {
    // Grafana's variables as this dashboard uses them: every node, and
    // a rate window of a few scrapes.
    const q = expr.replaceAll('$instance', '.*').replaceAll('$__rate_interval', '30s');
    assert.doesNotMatch(q, /\$/, `${panel}: a variable left in ${q}`);
    const r = await h.until(async () => {
      const v = await query(q);
      return v.some((s) => Number.isFinite(Number(s.value[1]))) && v;
    }, { timeout: 30000, every: 500, what: `data for "${panel}": ${q}` });
    assert.ok(r.length > 0);
  }
});
