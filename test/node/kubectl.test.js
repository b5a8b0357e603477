// SPDX-License-Identifier: Apache-2.0
// kubectl.test.js - a real kubectl (1.32.3, test/peers/bin/kubectl, which
// scripts/install-peers.sh installs) against kubeapi.js started without
// the ProcessConfig CRD, over HTTPS with the token and CA of a kubeconfig,
// running the documentation's walk-through verbatim: `kubectl get pcfg`
// fails as against a server without the CRD; `kubectl apply --server-side`
// of the chart's CRD (a CRD of the wrong name or one the stand-in cannot
// serve refused), then of a ProcessConfig; get as a Table of the CRD's
// printer columns (and -o yaml, -o jsonpath); describe with the Events
// posted through events.k8s.io/v1; wait for node-a's status entry, applied
// meanwhile by another client as procctl-node applies it; delete, then
// get's NotFound; get events. And the stand-in's side: discovery (legacy
// and aggregated), Events in both versions (conversion, field selectors,
// validation, watch), 406, Namespaces, a CRD's deletion. One stand-in
// for the file, the tests in the walk-through's order.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const YAML = require('yaml');
const h = require('./harness');
const { runProgram } = require('./clirun');
const stand = require('./kubestand');

const REPO = path.join(__dirname, '..', '..');
const KUBECTL = path.join(REPO, 'test', 'peers', 'bin', 'kubectl');
const HAVE = fs.existsSync(KUBECTL);
const skip = !HAVE && (process.env.CI === 'true' ? false : 'no kubectl: scripts/install-peers.sh installs it');
const CRD_PATH = 'deploy/helm/procctl-node/files/processconfig-crd.yaml';
const scratch = h.scratch('procctl-kubectl-');
const { file, ca, leaf } = require('./certs').certs(scratch);
let api;
let port;

// web-tuning.yaml, as docs/kubernetes.md writes it.
const WEB_TUNING = `apiVersion: procctl.io/v1alpha1
kind: ProcessConfig
metadata:
  name: web-tuning
  namespace: shop
spec:
  selector:
    matchLabels:
      app: web
  consumer: echo
  schemaVersion: 1
  payload:
    json: {"level": "debug"}
`;

before(async () => {
  assert.ok(HAVE || skip, `${KUBECTL} is missing (CI=true): scripts/install-peers.sh installs it`);
  await stand.load();
  stand.credentials(file, ca, leaf);
  port = await h.freePort();
  api = await stand.apiServer(file, [], { port, crd: false });
  fs.writeFileSync(file('kubeconfig'), YAML.stringify({ apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'stand-in', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority': file('ca.crt') } }],
    users: [{ name: 'procctl', user: { token: stand.TOKEN } }],
    contexts: [{ name: 'stand-in', context: { cluster: 'stand-in', user: 'procctl' } }], 'current-context': 'stand-in' }));
  fs.mkdirSync(file('home'));
  fs.writeFileSync(file('web-tuning.yaml'), WEB_TUNING);
});

after(async () => {
  if (api) await api.kill();
});

// kubectl args run to its end (killed after timeout ms) in cwd (the
// scratch directory, else the repository's root with repo): { code,
// stdout, stderr, ms }.
function kubectl(args, { cwd = scratch, timeout = 20000 } = {}) {
  return runProgram([KUBECTL, ...args], { cwd, timeout, env: { KUBECONFIG: file('kubeconfig'), HOME: file('home') } });
}
const said = (r) => `kubectl ${r.args.join(' ')}: exit ${r.code} ${r.signal || ''}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
// The run, checked to have exited with code.
function exits(r, code) {
  assert.equal(r.code, code, said(r));
  return r;
}

// A Table kubectl printed, as rows of cells: each cell where its column's
// heading starts (so an empty cell is ''), the headings first.
function rows(text) {
  const lines = text.replace(/\n$/, '').split('\n');
  const starts = [...lines[0].matchAll(/\S+(?: \S+)*/g)].map((m) => m.index);
  return lines.map((l) => starts.map((at, i) => l.slice(at, starts[i + 1]).trim()));
}

const call = (method, p, body, opts) => stand.request(file, port, method, p, body, opts);
const EVENTS_V1 = '/apis/events.k8s.io/v1/namespaces/shop/events';
const micro = (ms = Date.now()) => new Date(ms).toISOString().replace(/Z$/, '123Z'); // six decimals
// An Event as procctl-node posts it (events.k8s.io/v1) about a ProcessConfig.
const event = (name, about, more = {}) => ({ apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name, namespace: 'shop' },
  eventTime: micro(), reportingController: 'procctl.io/procctl-node', reportingInstance: 'node-a', action: 'Apply',
  reason: 'Rejected', note: `2 processes rejected the config of ${about.name}`, type: 'Warning',
  regarding: { apiVersion: 'procctl.io/v1alpha1', kind: 'ProcessConfig', namespace: 'shop', name: about.name, uid: about.uid }, ...more });
// node's status entry, applied as procctl-node applies it.
const applyStatus = (node, entry) => call('PATCH', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs/web-tuning/status'
  + `?fieldManager=procctl-node%2F${node}&force=true`, { apiVersion: 'procctl.io/v1alpha1', kind: 'ProcessConfig',
  metadata: { name: 'web-tuning', namespace: 'shop' }, status: { nodes: [{ node, ...entry }] } },
{ type: 'application/apply-patch+yaml' });

test('without the CRD: no procctl.io in discovery, 404 under it, and kubectl get pcfg says the server has no such type',
  { skip }, async () => {
  const r = exits(await kubectl(['get', '-n', 'shop', 'pcfg']), 1);
  assert.equal(r.stderr, 'error: the server doesn\'t have a resource type "pcfg"\n');
  const apis = await call('GET', '/apis');
  assert.equal(apis.code, 200);
  assert.deepEqual(apis.body.groups.map((g) => g.name), ['events.k8s.io', 'apiextensions.k8s.io', 'discovery.k8s.io']);
  const none = await call('GET', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs');
  assert.equal(none.code, 404);
  assert.equal(none.body.message, 'the server could not find the requested resource');
  assert.equal((await api.ctl('GET', '/stats')).collections.processconfigs, undefined);
});

test('a CRD of the wrong name is Invalid; one the stand-in cannot serve is refused with 500; neither is made', { skip },
  async () => {
  const crd = YAML.parse(fs.readFileSync(path.join(REPO, CRD_PATH), 'utf8'));
  fs.writeFileSync(file('misnamed.yaml'), YAML.stringify({ ...crd, metadata: { name: 'processconfig.procctl.io' } }));
  let r = exits(await kubectl(['apply', '--server-side', '-f', 'misnamed.yaml']), 1);
  assert.ok(r.stderr.includes('The CustomResourceDefinition "processconfig.procctl.io" is invalid: metadata.name: Invalid value: '
    + '"processconfig.procctl.io": must be spec.names.plural+"."+spec.group'), r.stderr);
  const defaulted = YAML.parse(YAML.stringify(crd));
  defaulted.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.schemaVersion.default = 1;
  fs.writeFileSync(file('defaulted.yaml'), YAML.stringify(defaulted));
  r = exits(await kubectl(['apply', '--server-side', '-f', 'defaulted.yaml']), 1);
  assert.match(r.stderr, /kubeapi\.js cannot serve this CustomResourceDefinition: .*spec\.schemaVersion uses default/);
  assert.equal((await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')).body.items.length, 0);
});

test('kubectl apply --server-side of the chart\'s CRD: made, names accepted, established; discovery has it then', { skip },
  async () => {
  const r = exits(await kubectl(['apply', '--server-side', '-f', CRD_PATH], { cwd: REPO }), 0);
  assert.equal(r.stdout, 'customresourcedefinition.apiextensions.k8s.io/processconfigs.procctl.io serverside-applied\n');
  const crd = (await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/processconfigs.procctl.io')).body;
  assert.deepEqual(crd.status.conditions.map((c) => [c.type, c.status, c.reason]),
    [['NamesAccepted', 'True', 'NoConflicts'], ['Established', 'True', 'InitialNamesAccepted']]);
  assert.deepEqual(crd.status.acceptedNames, { plural: 'processconfigs', singular: 'processconfig', shortNames: ['pcfg'],
    kind: 'ProcessConfig', listKind: 'ProcessConfigList', categories: ['procctl'] });
  assert.deepEqual(crd.status.storedVersions, ['v1alpha1']);
  assert.deepEqual(crd.metadata.managedFields.map((f) => [f.manager, f.operation, f.subresource]),
    [['kubectl', 'Apply', undefined], ['kube-apiserver', 'Update', 'status']]);
  // Applied again: nothing changes.
  exits(await kubectl(['apply', '--server-side', '-f', CRD_PATH], { cwd: REPO }), 0);
  const again = (await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/processconfigs.procctl.io')).body;
  assert.equal(again.metadata.resourceVersion, crd.metadata.resourceVersion);
  // kubectl's own view of it.
  const get = exits(await kubectl(['get', 'crd']), 0);
  assert.deepEqual(rows(get.stdout).map((c) => c[0]), ['NAME', 'processconfigs.procctl.io']);
  assert.equal(rows(get.stdout)[0][1], 'CREATED AT');
  assert.equal(rows(get.stdout)[1][1], crd.metadata.creationTimestamp);
  // Discovery: the group, its resources, both ways.
  const legacy = await call('GET', '/apis/procctl.io/v1alpha1');
  assert.deepEqual(legacy.body.resources.map((x) => [x.name, x.kind, x.namespaced]),
    [['processconfigs', 'ProcessConfig', true], ['processconfigs/status', 'ProcessConfig', true]]);
  assert.deepEqual([legacy.body.resources[0].shortNames, legacy.body.resources[0].categories], [['pcfg'], ['procctl']]);
  const agg = await call('GET', '/apis', undefined,
    { headers: { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' } });
  assert.equal(agg.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
  const group = agg.body.items.find((g) => g.metadata.name === 'procctl.io');
  assert.deepEqual(group.versions[0].resources[0].responseKind, { group: 'procctl.io', version: 'v1alpha1', kind: 'ProcessConfig' });
  assert.deepEqual(group.versions[0].resources[0].subresources.map((s) => s.subresource), ['status']);
  assert.equal(agg.body.items.at(-1).metadata.name, 'procctl.io', 'a CRD\'s group after the built-in ones');
});

test('kubectl apply --server-side -f web-tuning.yaml, then get: the Table of the CRD\'s printer columns, -o yaml, -o jsonpath',
  { skip }, async () => {
  let r = exits(await kubectl(['apply', '--server-side', '-f', 'web-tuning.yaml']), 0);
  assert.equal(r.stdout, 'processconfig.procctl.io/web-tuning serverside-applied\n');
  for (const what of ['processconfigs', 'pcfg', 'processconfig.procctl.io']) {
    r = exits(await kubectl(['get', '-n', 'shop', what]), 0);
    const [head, row, ...more] = rows(r.stdout);
    assert.deepEqual(head, ['NAME', 'CONSUMER', 'SCHEMA', 'CONTAINER', 'AGE'], what);
    assert.deepEqual(row.slice(0, 4), ['web-tuning', 'echo', '1', ''], what); // no container: a null cell
    assert.match(row[4], /^\d+s$/);
    assert.deepEqual(more, []);
  }
  r = exits(await kubectl(['get', '-n', 'shop', 'processconfigs', '-o', 'yaml']), 0);
  const list = YAML.parse(r.stdout);
  assert.equal(list.kind, 'List');
  assert.deepEqual(list.items[0].spec, { consumer: 'echo', payload: { json: { level: 'debug' } }, schemaVersion: 1,
    selector: { matchLabels: { app: 'web' } } });
  r = exits(await kubectl(['get', '-n', 'shop', 'processconfigs', '-o',
    'jsonpath={.items[*].metadata.name} {.items[0].spec.consumer}']), 0);
  assert.equal(r.stdout, 'web-tuning echo');
  // Every namespace's: a Namespace column first; the namespace is there.
  r = exits(await kubectl(['get', 'pcfg', '-A']), 0);
  assert.deepEqual(rows(r.stdout)[1].slice(0, 3), ['shop', 'web-tuning', 'echo']);
  // The Table as the server gives it: Name, then the printer columns.
  const table = await call('GET', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs', undefined,
    { headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } });
  assert.equal(table.body.kind, 'Table');
  assert.deepEqual(table.body.columnDefinitions.map((c) => [c.name, c.type, c.format]),
    [['Name', 'string', 'name'], ['Consumer', 'string', ''], ['Schema', 'integer', ''], ['Container', 'string', ''], ['Age', 'date', '']]);
  assert.deepEqual(table.body.rows[0].cells.slice(0, 4), ['web-tuning', 'echo', 1, null]);
  assert.equal(table.body.rows[0].object.kind, 'PartialObjectMetadata');
  // A media type the server does not give: 406.
  const xml = await call('GET', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs', undefined,
    { headers: { Accept: 'application/xml' } });
  assert.equal(xml.code, 406);
  assert.equal(xml.body.reason, 'NotAcceptable');
});

let webTuning; // the object, once described

test('Events: posted through events.k8s.io/v1 as procctl-node posts them, validated; read through core v1 too', { skip }, async () => {
  webTuning = (await call('GET', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs/web-tuning')).body;
  const made = await call('POST', EVENTS_V1, event('web-tuning.1', webTuning.metadata));
  assert.equal(made.code, 201, JSON.stringify(made.body));
  assert.equal(made.body.note, '2 processes rejected the config of web-tuning');
  assert.equal(made.body.deprecatedFirstTimestamp, null);
  // An event about another object, and one about web-tuning's namesake in another namespace.
  assert.equal((await call('POST', EVENTS_V1, event('other.1', { name: 'other', uid: 'u-other' }))).code, 201);
  const dup = await call('POST', EVENTS_V1, event('web-tuning.1', webTuning.metadata));
  assert.equal(dup.code, 409);
  assert.equal(dup.body.message, 'events.events.k8s.io "web-tuning.1" already exists');
  // Validation: the strict rules of events.k8s.io/v1, every error said.
  const bad = await call('POST', EVENTS_V1, event('bad', webTuning.metadata, { reportingController: '', type: 'Odd', action: undefined }));
  assert.equal(bad.code, 422);
  assert.deepEqual(bad.body.details.causes.map((c) => [c.reason, c.field]), [['FieldValueRequired', 'reportingController'],
    ['FieldValueInvalid', 'reportingController'], ['FieldValueInvalid', 'reportingController'], ['FieldValueRequired', 'action'],
    ['FieldValueInvalid', 'type']]);
  assert.match(bad.body.message, /^Event "bad" is invalid: \[reportingController: Required value, /);
  const seconds = await call('POST', EVENTS_V1, event('coarse', webTuning.metadata, { eventTime: '2026-01-02T03:04:05Z' }));
  assert.equal(seconds.code, 400);
  assert.equal(seconds.body.message, 'Event in version "v1" cannot be handled as a Event: parsing time "2026-01-02T03:04:05Z" as '
    + '"2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"');
  const old = await call('POST', EVENTS_V1, event('old', webTuning.metadata, { deprecatedCount: 3 }));
  assert.equal(old.code, 422);
  assert.deepEqual(old.body.details.causes.map((c) => c.field), ['count']);
  // Core v1's view of the same event: message, involvedObject, reportingComponent.
  const core = (await call('GET', '/api/v1/namespaces/shop/events/web-tuning.1')).body;
  assert.equal(core.message, made.body.note);
  assert.deepEqual(core.involvedObject, made.body.regarding);
  assert.deepEqual([core.reportingComponent, core.reportingInstance, core.firstTimestamp, core.source],
    ['procctl.io/procctl-node', 'node-a', null, {}]);
  assert.equal(core.eventTime, made.body.eventTime);
  // Field selectors, each version's names.
  const names = async (p) => (await call('GET', p)).body.items.map((e) => e.metadata.name);
  assert.deepEqual(await names('/api/v1/namespaces/shop/events?fieldSelector=involvedObject.name%3Dweb-tuning,'
    + `involvedObject.uid%3D${webTuning.metadata.uid}`), ['web-tuning.1']);
  assert.deepEqual(await names(`${EVENTS_V1}?fieldSelector=regarding.name%3Dother`), ['other.1']);
  assert.deepEqual(await names('/api/v1/events?fieldSelector=involvedObject.kind%3DProcessConfig,involvedObject.namespace%3Dshop'),
    ['other.1', 'web-tuning.1']);
  const wrong = await call('GET', `${EVENTS_V1}?fieldSelector=involvedObject.name%3Dother`);
  assert.equal(wrong.code, 400);
  assert.equal(wrong.body.message, 'field label not supported: involvedObject.name');
  assert.equal((await api.ctl('GET', '/stats')).events, 2);
});

test('kubectl describe -n shop processconfig web-tuning: the object and its Events, no other object\'s', { skip }, async () => {
  const r = exits(await kubectl(['describe', '-n', 'shop', 'processconfig', 'web-tuning']), 0);
  const lines = r.stdout.split('\n');
  assert.ok(lines.includes('Name:         web-tuning'), r.stdout);
  assert.ok(lines.includes('Namespace:    shop'), r.stdout);
  assert.ok(lines.includes('Kind:         ProcessConfig'), r.stdout);
  assert.match(r.stdout, /\n {2}Consumer: +echo\n/);
  const events = lines.slice(lines.indexOf('Events:') + 1).filter(Boolean).map((l) => l.trim().split(/\s{2,}/));
  assert.deepEqual(events[0], ['Type', 'Reason', 'Age', 'From', 'Message']);
  assert.equal(events.length, 3, r.stdout);
  assert.deepEqual([events[2][0], events[2][1], events[2][3], events[2][4]],
    ['Warning', 'Rejected', 'procctl.io/procctl-node', '2 processes rejected the config of web-tuning']);
});

test('kubectl wait for node-a\'s entry: it returns once node-a applies Applied, not at another reason or node', { skip },
  async () => {
  const args = ['wait', '-n', 'shop', 'processconfig/web-tuning',
    '--for=jsonpath={.status.nodes[?(@.node=="node-a")].reason}=Applied', '--timeout=30s'];
  const waiting = kubectl(args, { timeout: 40000 });
  let done = null;
  waiting.then((r) => (done = r));
  await h.until(async () => (await api.ctl('GET', '/stats')).collections.processconfigs.open >= 1,
    { what: 'kubectl wait to watch', timeout: 15000 });
  assert.equal((await applyStatus('node-b', { reason: 'Applied', matched: 1, applied: 1 })).code, 200);
  assert.equal((await applyStatus('node-a', { reason: 'Pending', matched: 2, pending: 2 })).code, 200);
  await h.sleep(500);
  assert.equal(done, null, 'kubectl wait returned before node-a applied Applied');
  const t = Date.now();
  assert.equal((await applyStatus('node-a', { reason: 'Applied', matched: 2, applied: 2 })).code, 200);
  const r = exits(await waiting, 0);
  assert.equal(r.stdout, 'processconfig.procctl.io/web-tuning condition met\n');
  assert.ok(Date.now() - t < 10000);
  // Both nodes' entries kept, each its own manager's.
  const o = (await call('GET', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs/web-tuning')).body;
  assert.deepEqual(o.status.nodes.map((n) => [n.node, n.reason]), [['node-b', 'Applied'], ['node-a', 'Applied']]);
  // A condition that does not come: kubectl's timeout.
  const late = exits(await kubectl(['wait', '-n', 'shop', 'processconfig/web-tuning',
    '--for=jsonpath={.status.nodes[?(@.node=="node-c")].reason}=Applied', '--timeout=1s']), 1);
  assert.equal(late.stderr, 'error: timed out waiting for the condition on processconfigs/web-tuning\n');
});

test('kubectl get events -n shop: the event printer\'s Table, core v1 and events.k8s.io/v1 alike', { skip }, async () => {
  let r = exits(await kubectl(['get', 'events', '-n', 'shop']), 0);
  const [head, ...events] = rows(r.stdout);
  assert.deepEqual(head, ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
  const mine = events.find((e) => e[3] === 'processconfig/web-tuning');
  assert.deepEqual(mine.slice(1), ['Warning', 'Rejected', 'processconfig/web-tuning', '2 processes rejected the config of web-tuning']);
  assert.match(mine[0], /^\d+s$/);
  r = exits(await kubectl(['get', 'events.events.k8s.io', '-n', 'shop', '-o', 'wide', '--field-selector', 'regarding.name=web-tuning']), 0);
  const wide = rows(r.stdout);
  assert.deepEqual(wide[0], ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'SUBOBJECT', 'SOURCE', 'MESSAGE', 'FIRST SEEN', 'COUNT', 'NAME']);
  assert.equal(wide.length, 2, r.stdout);
  assert.deepEqual(wide[1].slice(3), ['processconfig/web-tuning', '', 'procctl.io/procctl-node, node-a',
    '2 processes rejected the config of web-tuning', wide[1][7], '1', 'web-tuning.1']);
  assert.match(wide[1][7], /^\d+s$/);
  r = exits(await kubectl(['get', 'events.v1.events.k8s.io', '-n', 'shop', 'web-tuning.1', '-o', 'jsonpath={.note}|{.regarding.name}']), 0);
  assert.equal(r.stdout, '2 processes rejected the config of web-tuning|web-tuning');
});

test('Events are watched through either version, each object in its own', { skip }, async () => {
  const from = (await call('GET', EVENTS_V1)).body.metadata.resourceVersion;
  const got = { v1: [], core: [] };
  const reqs = [[`${EVENTS_V1}?watch=1&resourceVersion=${from}`, got.v1],
    [`/api/v1/namespaces/shop/events?watch=1&resourceVersion=${from}&fieldSelector=involvedObject.name%3Dweb-tuning`, got.core]]
    .map(([p, into]) => https.get({ host: '127.0.0.1', port, path: p, ca: fs.readFileSync(file('ca.crt')), agent: false,
      headers: { Authorization: `Bearer ${stand.TOKEN}` } }, (res) => {
      res.setEncoding('utf8').on('data', (d) => into.push(...d.split('\n').filter(Boolean).map((l) => JSON.parse(l))));
    }));
  try {
    await h.until(async () => (await api.ctl('GET', '/stats')).collections.events.open >= 2, { what: 'the two watches' });
    assert.equal((await call('POST', EVENTS_V1, event('web-tuning.2', webTuning.metadata))).code, 201);
    await h.until(() => got.v1.length && got.core.length, { what: 'the event on both watches' });
    assert.deepEqual([got.v1[0].type, got.v1[0].object.apiVersion, got.v1[0].object.regarding.name],
      ['ADDED', 'events.k8s.io/v1', 'web-tuning']);
    assert.deepEqual([got.core[0].type, got.core[0].object.apiVersion, got.core[0].object.involvedObject.name],
      ['ADDED', 'v1', 'web-tuning']);
  } finally {
    for (const r of reqs) r.destroy();
  }
});

test('kubectl delete -n shop processconfig web-tuning, then get: kubectl\'s NotFound', { skip }, async () => {
  let r = exits(await kubectl(['delete', '-n', 'shop', 'processconfig', 'web-tuning']), 0);
  assert.equal(r.stdout, 'processconfig.procctl.io "web-tuning" deleted\n');
  r = exits(await kubectl(['get', '-n', 'shop', 'processconfig', 'web-tuning']), 1);
  assert.equal(r.stderr, 'Error from server (NotFound): processconfigs.procctl.io "web-tuning" not found\n');
  r = exits(await kubectl(['get', '-n', 'shop', 'processconfigs']), 0);
  assert.equal(r.stderr, 'No resources found in shop namespace.\n');
  // A namespace nothing was ever written in is not there.
  r = exits(await kubectl(['get', '-n', 'nowhere', 'processconfig', 'web-tuning']), 1);
  assert.equal(r.stderr, 'Error from server (NotFound): namespaces "nowhere" not found\n');
});

test('the discovery kubectl reads, /version, and a CRD\'s deletion taking its objects and its type', { skip }, async () => {
  const v = exits(await kubectl(['version', '-o', 'json']), 0);
  assert.equal(JSON.parse(v.stdout).serverVersion.gitVersion, 'v1.32.3');
  const res = exits(await kubectl(['api-resources', '--api-group=procctl.io', '--no-headers']), 0);
  assert.deepEqual(rows(res.stdout), [['processconfigs', 'pcfg', 'procctl.io/v1alpha1', 'true', 'ProcessConfig']]);
  exits(await kubectl(['apply', '--server-side', '-f', 'web-tuning.yaml']), 0);
  const r = exits(await kubectl(['delete', 'crd', 'processconfigs.procctl.io']), 0);
  assert.equal(r.stdout, 'customresourcedefinition.apiextensions.k8s.io "processconfigs.procctl.io" deleted\n');
  // kubectl's cached discovery still has the type: the server's 404;
  // then, the cache gone, kubectl finds no such type.
  let gone = exits(await kubectl(['get', '-n', 'shop', 'pcfg']), 1);
  assert.equal(gone.stderr, 'Error from server (NotFound): Unable to list "procctl.io/v1alpha1, Resource=processconfigs": '
    + 'the server could not find the requested resource\n');
  fs.rmSync(file('home/.kube/cache'), { recursive: true });
  gone = exits(await kubectl(['get', '-n', 'shop', 'pcfg']), 1);
  assert.equal(gone.stderr, 'error: the server doesn\'t have a resource type "pcfg"\n');
  assert.equal((await call('GET', '/apis/procctl.io/v1alpha1/namespaces/shop/processconfigs/web-tuning')).code, 404);
});
