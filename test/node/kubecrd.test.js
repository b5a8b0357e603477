// SPDX-License-Identifier: Apache-2.0
// kubecrd.test.js - kubeapi.js serves the ProcessConfig custom resource
// (the chart's CRD, read at its start) as kube-apiserver serves a CRD's
// objects, over HTTPS with the token, written here as kubectl would: create,
// get, list (items with kind) and watch (ADDED, MODIFIED, DELETED at
// growing versions, bookmarks of the kind's shape, 410 Gone; one version
// counter with the pods, each watch seeing its own kind); AlreadyExists
// and a stale resourceVersion's Conflict; generation up with the spec alone;
// unknown fields pruned with a warning; 422 Invalid with a cause for each
// schema and CEL error; server-side apply of status.nodes by two nodes,
// each owning its own entry, a conflict without force; the size limits;
// discovery, and the CRD there from the start; and a CRD the stand-in
// cannot judge stopping it at start. (kubectl.test.js: a real kubectl, a
// stand-in without the CRD until it is applied.)
// One stand-in for the file (kubestand.js), each test in its own
// namespace or with its own names.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const h = require('./harness');
const stand = require('./kubestand');

const scratch = h.scratch('procctl-kubecrd-');
const { file, read, ca, leaf } = require('./certs').certs(scratch);
const GROUP = '/apis/procctl.io/v1alpha1';
const API_VERSION = 'procctl.io/v1alpha1';
let api;
let port;

before(async () => {
  await stand.load();
  stand.credentials(file, ca, leaf);
  port = await h.freePort();
  api = await stand.apiServer(file, [], { port });
});

after(async () => {
  if (api) await api.kill();
});

// A path under GROUP, or one of its own (/api/v1/..., /apis/...).
const options = (method, path, headers) => ({ host: '127.0.0.1', port, method, path: path.startsWith('/api') ? path : GROUP + path,
  ca: read('ca.crt'), agent: false, headers });

// A request to the API under GROUP: { code, body (parsed), headers }.
// body: an object (sent as JSON) or text; type: its Content-Type.
function call(method, path, body, { type = 'application/json', token = stand.TOKEN, headers = {} } = {}) {
  const data = body === undefined ? null : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(options(method, path, { ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(data !== null ? { 'Content-Type': type } : {}), ...headers }), (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ code: res.statusCode, body: text ? JSON.parse(text) : null, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(data === null ? undefined : data);
  });
}

// A watch of path: its events as they come; next(n): the first n.
function watch(path) {
  const w = { events: [] };
  w.req = https.get(options('GET', path, { Authorization: `Bearer ${stand.TOKEN}` }), (res) => {
    w.code = res.statusCode;
    let buf = '';
    res.on('data', (d) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        w.events.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    });
    res.on('end', () => (w.ended = true));
  });
  w.req.on('error', () => {}); // closed by the test
  w.next = (n) => h.until(() => w.events.length >= n && w.events.slice(0, n), { what: `${n} watch events of ${path}` });
  w.close = () => w.req.destroy();
  return w;
}

// A ProcessConfig named name; spec: fields over a valid one's.
const pc = (name, spec = {}, metadata = {}) => ({ apiVersion: API_VERSION, kind: 'ProcessConfig', metadata: { name, ...metadata },
  spec: { consumer: 'echo', schemaVersion: 1, payload: { data: Buffer.from('hello').toString('base64') }, ...spec } });

// An apply config of status.nodes, as a node's procctl-node would send it.
const nodesConfig = (name, ns, nodes) => `apiVersion: ${API_VERSION}\nkind: ProcessConfig\nmetadata:\n  name: ${name}\n`
  + `  namespace: ${ns}\nstatus:\n  nodes: ${JSON.stringify(nodes)}\n`;
const APPLY = 'application/apply-patch+yaml';
const applyStatus = (ns, name, manager, nodes, force = false) => call('PATCH',
  `/namespaces/${ns}/processconfigs/${name}/status?fieldManager=${manager}${force ? '&force=true' : ''}`,
  nodesConfig(name, ns, nodes), { type: APPLY });

test('create, get, list and watch: ADDED, MODIFIED, DELETED at growing versions; items with kind and apiVersion', async () => {
  const empty = await call('GET', '/namespaces/w1/processconfigs');
  assert.equal(empty.code, 200);
  assert.equal(empty.body.kind, 'ProcessConfigList');
  assert.equal(empty.body.apiVersion, API_VERSION);
  assert.deepEqual(empty.body.items, []);
  const w = watch(`/namespaces/w1/processconfigs?watch=1&resourceVersion=${empty.body.metadata.resourceVersion}`);

  const made = await call('POST', '/namespaces/w1/processconfigs', pc('one'));
  assert.equal(made.code, 201, JSON.stringify(made.body));
  const m = made.body.metadata;
  assert.match(m.uid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.match(m.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(m.generation, 1);
  assert.equal(m.namespace, 'w1');
  assert.ok(Number(m.resourceVersion) > Number(empty.body.metadata.resourceVersion));
  assert.deepEqual((await call('GET', '/namespaces/w1/processconfigs/one')).body, made.body);

  // Every namespace's, and one namespace's: the items as stored, with kind.
  const all = (await call('GET', '/processconfigs')).body;
  const item = all.items.find((i) => i.metadata.namespace === 'w1' && i.metadata.name === 'one');
  assert.equal(item.kind, 'ProcessConfig');
  assert.equal(item.apiVersion, API_VERSION);
  assert.deepEqual((await call('GET', '/namespaces/w1-not/processconfigs')).body.items, []);

  const changed = await call('PUT', '/namespaces/w1/processconfigs/one', { ...made.body, spec: { ...made.body.spec, schemaVersion: 2 } });
  assert.equal(changed.code, 200, JSON.stringify(changed.body));
  const gone = await call('DELETE', '/namespaces/w1/processconfigs/one');
  assert.equal(gone.code, 200);
  assert.equal(gone.body.metadata.name, 'one');
  assert.equal(gone.body.spec.schemaVersion, 2, 'the object as it was when deleted');
  assert.equal((await call('GET', '/namespaces/w1/processconfigs/one')).code, 404);

  const events = await w.next(3);
  w.close();
  assert.deepEqual(events.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED']);
  const versions = events.map((e) => Number(e.object.metadata.resourceVersion));
  assert.ok(versions[0] < versions[1] && versions[1] < versions[2], versions.join(' '));
  assert.deepEqual(versions.slice(0, 2), [Number(m.resourceVersion), Number(changed.body.metadata.resourceVersion)]);
  assert.equal(versions[2], Number(gone.body.metadata.resourceVersion), 'the deletion\'s own version');
  for (const e of events) assert.deepEqual([e.object.kind, e.object.apiVersion], ['ProcessConfig', API_VERSION]);
});

test('AlreadyExists for a name taken; Conflict for a stale resourceVersion; an update must give one', async () => {
  const first = await call('POST', '/namespaces/c1/processconfigs', pc('dup'));
  assert.equal(first.code, 201);
  const again = await call('POST', '/namespaces/c1/processconfigs', pc('dup'));
  assert.equal(again.code, 409);
  assert.equal(again.body.reason, 'AlreadyExists');
  assert.equal(again.body.details.name, 'dup');

  const obj = first.body;
  const ok = await call('PUT', '/namespaces/c1/processconfigs/dup', { ...obj, spec: { ...obj.spec, consumer: 'two' } });
  assert.equal(ok.code, 200, JSON.stringify(ok.body));
  const stale = await call('PUT', '/namespaces/c1/processconfigs/dup', { ...obj, spec: { ...obj.spec, consumer: 'three' } });
  assert.equal(stale.code, 409);
  assert.equal(stale.body.reason, 'Conflict');
  assert.match(stale.body.message, /the object has been modified/);
  const { resourceVersion, ...noVersion } = obj.metadata;
  const unconditional = await call('PUT', '/namespaces/c1/processconfigs/dup', { ...obj, metadata: noVersion });
  assert.equal(unconditional.code, 422);
  assert.equal(unconditional.body.details.causes[0].field, 'metadata.resourceVersion');
  assert.equal((await call('GET', '/namespaces/c1/processconfigs/dup')).body.spec.consumer, 'two');
});

test('generation goes up when the spec changes, not with labels, status or a write that changes nothing', async () => {
  const made = (await call('POST', '/namespaces/g1/processconfigs', pc('gen'))).body;
  const path = '/namespaces/g1/processconfigs/gen';
  const labelled = await call('PATCH', path, { metadata: { labels: { tier: 'front' } } }, { type: 'application/merge-patch+json' });
  assert.equal(labelled.code, 200);
  assert.equal(labelled.body.metadata.generation, 1);
  assert.notEqual(labelled.body.metadata.resourceVersion, made.metadata.resourceVersion);

  const status = await call('PATCH', `${path}/status`, { status: { nodes: [{ node: 'node-a', matched: 1 }] },
    spec: { consumer: 'ignored' } }, { type: 'application/merge-patch+json' });
  assert.equal(status.code, 200, JSON.stringify(status.body));
  assert.equal(status.body.metadata.generation, 1);
  assert.deepEqual(status.body.status, { nodes: [{ matched: 1, node: 'node-a' }] });
  assert.equal(status.body.spec.consumer, 'echo', 'the spec is not written through /status');

  const cur = status.body;
  const spec = await call('PUT', path, { ...cur, spec: { ...cur.spec, schemaVersion: 7 }, status: { nodes: [] } });
  assert.equal(spec.code, 200);
  assert.equal(spec.body.metadata.generation, 2);
  assert.deepEqual(spec.body.status, cur.status, 'status is not written through the object');

  const same = await call('PUT', path, spec.body);
  assert.equal(same.code, 200);
  assert.equal(same.body.metadata.resourceVersion, spec.body.metadata.resourceVersion, 'nothing changed: nothing written');
  assert.equal(same.body.metadata.generation, 2);
});

test('unknown fields are pruned, each said in a Warning; fieldValidation=Strict refuses them', async () => {
  const body = pc('prune', { bogus: { deep: 1 } }, { bogus: 'x' });
  body.payload = 1;
  const made = await call('POST', '/namespaces/p1/processconfigs', body);
  assert.equal(made.code, 201, JSON.stringify(made.body));
  assert.equal(made.body.spec.bogus, undefined);
  assert.equal(made.body.metadata.bogus, undefined);
  assert.equal(made.body.payload, undefined);
  assert.deepEqual(made.body.spec.payload, body.spec.payload, 'known fields kept');
  const got = (await call('GET', '/namespaces/p1/processconfigs/prune')).body;
  assert.equal(got.spec.bogus, undefined);
  const warnings = made.headers.warning.split(/,\s*(?=299)/).sort();
  assert.deepEqual(warnings, ['299 - "unknown field \\"metadata.bogus\\""', '299 - "unknown field \\"payload\\""',
    '299 - "unknown field \\"spec.bogus\\""']);
  const strict = await call('POST', '/namespaces/p1/processconfigs?fieldValidation=Strict', pc('strict', { bogus: 1 }));
  assert.equal(strict.code, 400);
  assert.equal(strict.body.message, 'strict decoding error: unknown field "spec.bogus"');
  // payload.json keeps what it is given: x-kubernetes-preserve-unknown-fields.
  const json = await call('POST', '/namespaces/p1/processconfigs', pc('json', { payload: { json: { b: [1, { z: null }], a: 'x' } } }));
  assert.equal(json.code, 201, JSON.stringify(json.body));
  assert.equal(JSON.stringify(json.body.spec.payload.json), '{"a":"x","b":[1,{"z":null}]}', 'kept, its keys sorted as Go writes a map');
});

// The causes of a create of spec refused as invalid (and nothing made).
async function causes(name, spec) {
  const r = await call('POST', '/namespaces/v1/processconfigs', pc(name, spec));
  assert.equal(r.code, 422, JSON.stringify(r.body));
  assert.equal(r.body.reason, 'Invalid');
  assert.equal(r.body.details.kind, 'ProcessConfig');
  assert.equal(r.body.details.group, 'procctl.io');
  assert.equal((await call('GET', `/namespaces/v1/processconfigs/${name}`)).code, 404);
  return r.body.details.causes;
}

test('422 Invalid, a cause for each schema or rule broken', async () => {
  assert.deepEqual(await causes('bad-consumer', { consumer: 'Not Valid' }), [{ reason: 'FieldValueInvalid', field: 'spec.consumer',
    message: 'Invalid value: "Not Valid": spec.consumer in body should match \'^[a-z0-9_.-]+$\'' }]);
  assert.deepEqual(await causes('schema-zero', { schemaVersion: 0 }), [{ reason: 'FieldValueInvalid', field: 'spec.schemaVersion',
    message: 'Invalid value: 0: spec.schemaVersion in body should be greater than or equal to 1' }]);
  const exactlyOne = [{ reason: 'FieldValueInvalid', field: 'spec.payload',
    message: 'Invalid value: "object": exactly one of payload.data and payload.json' }];
  assert.deepEqual(await causes('both', { payload: { data: 'aGk=', json: { a: 1 } } }), exactlyOne);
  assert.deepEqual(await causes('neither', { payload: {} }), exactlyOne);
  assert.deepEqual(await causes('bad-base64', { payload: { data: 'not base64!' } }), [{ reason: 'FieldValueInvalid',
    field: 'spec.payload.data', message: 'Invalid value: "not base64!": spec.payload.data in body must be of type byte: "not base64!"' }]);
  assert.deepEqual(await causes('in-no-values', { selector: { matchExpressions: [{ key: 'app', operator: 'In' }] } }),
    [{ reason: 'FieldValueInvalid', field: 'spec.selector.matchExpressions[0]',
      message: 'Invalid value: "object": In and NotIn take one value or more, Exists and DoesNotExist none' }]);
  // Every error at once.
  const two = await causes('two', { consumer: 'Not Valid', schemaVersion: 0 });
  assert.deepEqual(two.map((c) => c.field).sort(), ['spec.consumer', 'spec.schemaVersion']);
  // A required field missing blocks the rules, which are said not to have run.
  const blocked = await causes('blocked', { schemaVersion: undefined, payload: {} });
  assert.deepEqual(blocked.map((c) => [c.reason, c.field]), [['FieldValueRequired', 'spec.schemaVersion'],
    ['FieldValueInvalid', '<nil>']]);
  assert.match(blocked[1].message, /some validation rules were not checked/);
  // A valid one of each kind is taken.
  for (const [name, spec] of [['ok-json', { payload: { json: { a: 1 } } }],
    ['ok-exists', { selector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] } }],
    ['ok-in', { selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] } }]]) {
    const r = await call('POST', '/namespaces/v1/processconfigs', pc(name, spec));
    assert.equal(r.code, 201, `${name}: ${JSON.stringify(r.body)}`);
  }
});

// status.nodes, node by node, and who owns each entry.
async function nodesOf(ns, name) {
  const o = (await call('GET', `/namespaces/${ns}/processconfigs/${name}`)).body;
  const owners = {};
  for (const f of o.metadata.managedFields || []) {
    for (const k of Object.keys(((f.fieldsV1['f:status'] || {})['f:nodes']) || {})) {
      const node = JSON.parse(k.slice(2)).node;
      owners[node] = [...(owners[node] || []), `${f.manager}/${f.operation}/${f.subresource}`].sort();
    }
  }
  return { nodes: Object.fromEntries(((o.status || {}).nodes || []).map((n) => [n.node, n])), owners, generation: o.metadata.generation };
}

test('server-side apply of status.nodes: two nodes\' entries both kept, a node leaving its entry out removes its own alone', async () => {
  assert.equal((await call('POST', '/namespaces/s1/processconfigs', pc('st'))).code, 201);
  const a = await applyStatus('s1', 'st', 'node-a', [{ node: 'node-a', matched: 1, applied: 1 }]);
  assert.equal(a.code, 200, JSON.stringify(a.body));
  const b = await applyStatus('s1', 'st', 'node-b', [{ node: 'node-b', matched: 2, pending: 2 }]);
  assert.equal(b.code, 200, JSON.stringify(b.body));
  let s = await nodesOf('s1', 'st');
  assert.deepEqual(s.nodes, { 'node-a': { node: 'node-a', matched: 1, applied: 1 }, 'node-b': { node: 'node-b', matched: 2, pending: 2 } });
  assert.deepEqual(s.owners, { 'node-a': ['node-a/Apply/status'], 'node-b': ['node-b/Apply/status'] });
  assert.equal(s.generation, 1, 'status is not the spec');

  // node-a's next apply changes its own entry; then leaves it out.
  assert.equal((await applyStatus('s1', 'st', 'node-a', [{ node: 'node-a', matched: 3 }])).code, 200);
  s = await nodesOf('s1', 'st');
  assert.deepEqual(s.nodes['node-a'], { node: 'node-a', matched: 3 }, 'applied (no longer named) removed');
  assert.deepEqual(s.nodes['node-b'], { node: 'node-b', matched: 2, pending: 2 });
  const left = await applyStatus('s1', 'st', 'node-a', []);
  assert.equal(left.code, 200, JSON.stringify(left.body));
  s = await nodesOf('s1', 'st');
  assert.deepEqual(Object.keys(s.nodes), ['node-b']);
  assert.deepEqual(s.nodes['node-b'], { node: 'node-b', matched: 2, pending: 2 });
  assert.deepEqual(s.owners, { 'node-b': ['node-b/Apply/status'] });
});

test('server-side apply: changing another manager\'s field is a conflict unless forced; an entry two own outlives one leaving it',
  async () => {
  assert.equal((await call('POST', '/namespaces/s2/processconfigs', pc('st'))).code, 201);
  assert.equal((await applyStatus('s2', 'st', 'node-a', [{ node: 'node-a', matched: 1 }])).code, 200);
  const clash = await applyStatus('s2', 'st', 'node-b', [{ node: 'node-a', matched: 9 }]);
  assert.equal(clash.code, 409);
  assert.equal(clash.body.reason, 'Conflict');
  assert.deepEqual(clash.body.details.causes.map((c) => c.field), ['.status.nodes[node="node-a"].matched']);
  assert.match(clash.body.message, /^Apply failed with 1 conflict: conflict with "node-a" with subresource "status": /);
  assert.equal((await nodesOf('s2', 'st')).nodes['node-a'].matched, 1, 'nothing written');
  // The same value is no conflict: both own it.
  assert.equal((await applyStatus('s2', 'st', 'node-b', [{ node: 'node-a', matched: 1 }])).code, 200);
  assert.deepEqual((await nodesOf('s2', 'st')).owners['node-a'], ['node-a/Apply/status', 'node-b/Apply/status']);
  // Forced, it changes hands; node-a leaving the entry out then keeps it (node-b owns it too).
  const forced = await applyStatus('s2', 'st', 'node-b', [{ node: 'node-a', matched: 9 }], true);
  assert.equal(forced.code, 200, JSON.stringify(forced.body));
  const entry = (manager) => Object.keys(forced.body.metadata.managedFields.find((f) => f.manager === manager)
    .fieldsV1['f:status']['f:nodes']['k:{"node":"node-a"}']).sort();
  assert.deepEqual(entry('node-a'), ['.', 'f:node'], 'matched is node-b\'s alone now');
  assert.deepEqual(entry('node-b'), ['.', 'f:matched', 'f:node']);
  assert.equal((await applyStatus('s2', 'st', 'node-a', [])).code, 200);
  const s = await nodesOf('s2', 'st');
  assert.deepEqual(s.nodes, { 'node-a': { node: 'node-a', matched: 9 } });
  assert.deepEqual(s.owners['node-a'], ['node-b/Apply/status']);
});

test('server-side apply of the object: fieldManager needed, made when missing, spec fields of another manager conflict', async () => {
  const config = (consumer) => `apiVersion: ${API_VERSION}\nkind: ProcessConfig\nmetadata:\n  name: applied\n`
    + `spec:\n  consumer: ${consumer}\n  schemaVersion: 1\n  payload:\n    data: aGk=\n`;
  const none = await call('PATCH', '/namespaces/a1/processconfigs/applied', config('one'), { type: APPLY });
  assert.equal(none.code, 422);
  assert.equal(none.body.details.causes[0].field, 'fieldManager');
  const made = await call('PATCH', '/namespaces/a1/processconfigs/applied?fieldManager=kubectl', config('one'), { type: APPLY });
  assert.equal(made.code, 201, JSON.stringify(made.body));
  assert.deepEqual(made.body.metadata.managedFields.map((f) => [f.manager, f.operation]), [['kubectl', 'Apply']]);
  // Another manager's update of the consumer, then kubectl's apply of its own value.
  const upd = await call('PATCH', '/namespaces/a1/processconfigs/applied?fieldManager=editor', { spec: { consumer: 'two' } },
    { type: 'application/merge-patch+json' });
  assert.equal(upd.code, 200);
  const clash = await call('PATCH', '/namespaces/a1/processconfigs/applied?fieldManager=kubectl', config('one'), { type: APPLY });
  assert.equal(clash.code, 409);
  assert.deepEqual(clash.body.details.causes.map((c) => c.field), ['.spec.consumer']);
  assert.match(clash.body.message, /conflict with "editor" using procctl\.io\/v1alpha1/);
  const forced = await call('PATCH', '/namespaces/a1/processconfigs/applied?fieldManager=kubectl&force=true', config('one'),
    { type: APPLY });
  assert.equal(forced.code, 200);
  assert.equal(forced.body.spec.consumer, 'one');
  assert.equal(forced.body.metadata.generation, 3, 'two spec changes since made');
  // A field the schema does not declare: the API server's 500.
  const unknown = await call('PATCH', '/namespaces/a1/processconfigs/applied?fieldManager=kubectl', `${config('one')}  bogus: 1\n`,
    { type: APPLY });
  assert.equal(unknown.code, 500);
  assert.match(unknown.body.message, /\.spec\.bogus: field not declared in schema/);
});

test('a body past 3 MiB is 413; an object past etcd\'s 1.5 MiB request is 500; 1 MiB of payload is taken', async () => {
  const big = (name, n) => pc(name, { payload: { json: { s: 'x'.repeat(n) } } });
  const huge = await call('POST', '/namespaces/z1/processconfigs', big('huge', 3 * 1024 * 1024));
  assert.equal(huge.code, 413);
  assert.equal(huge.body.reason, 'RequestEntityTooLarge');
  assert.equal(huge.body.message, 'Request entity too large: limit is 3145728');
  const large = await call('POST', '/namespaces/z1/processconfigs', big('large', 2 * 1024 * 1024));
  assert.equal(large.code, 500);
  assert.equal(large.body.message, 'etcdserver: request is too large');
  assert.equal((await call('GET', '/namespaces/z1/processconfigs/large')).code, 404);
  const mib = await call('POST', '/namespaces/z1/processconfigs',
    pc('mib', { payload: { data: Buffer.alloc(1024 * 1024, 7).toString('base64') } }));
  assert.equal(mib.code, 201, 'payload.data at its maxLength fits');
});

test('discovery: the group, and its version\'s resources as the CRD names them', async () => {
  const group = await call('GET', '/apis/procctl.io');
  assert.equal(group.code, 200);
  assert.deepEqual(group.body.preferredVersion, { groupVersion: API_VERSION, version: 'v1alpha1' });
  const list = await call('GET', '');
  assert.equal(list.body.kind, 'APIResourceList');
  assert.deepEqual(list.body.resources.map((r) => [r.name, r.kind, r.namespaced]),
    [['processconfigs', 'ProcessConfig', true], ['processconfigs/status', 'ProcessConfig', true]]);
  assert.deepEqual(list.body.resources[0].shortNames, ['pcfg']);
  assert.ok(list.body.resources[0].verbs.includes('watch'));
  // The CRD there from the start, established, as the chart installs it.
  const crd = await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/processconfigs.procctl.io');
  assert.equal(crd.code, 200);
  assert.deepEqual(crd.body.status.conditions.map((c) => [c.type, c.status]), [['NamesAccepted', 'True'], ['Established', 'True']]);
  assert.ok(Number(crd.body.metadata.resourceVersion) < 1000, 'older than the objects given');
});

test('the other refusals: 401 without the token, 404, 400 for another namespace, 415, 405', async () => {
  assert.equal((await call('GET', '/processconfigs', undefined, { token: null })).code, 401);
  const missing = await call('GET', '/namespaces/o1/processconfigs/nothing');
  assert.equal(missing.code, 404);
  assert.equal(missing.body.message, 'processconfigs.procctl.io "nothing" not found');
  const other = await call('POST', '/namespaces/o1/processconfigs', pc('x', {}, { namespace: 'o2' }));
  assert.equal(other.code, 400);
  assert.equal(other.body.reason, 'BadRequest');
  const text = await call('POST', '/namespaces/o1/processconfigs', 'consumer: x', { type: 'text/plain' });
  assert.equal(text.code, 415);
  assert.equal(text.body.reason, 'UnsupportedMediaType');
  const strategic = await call('PATCH', '/namespaces/o1/processconfigs/x', {}, { type: 'application/strategic-merge-patch+json' });
  assert.equal(strategic.code, 415);
  const everywhere = await call('POST', '/processconfigs', pc('x'));
  assert.equal(everywhere.code, 405);
  assert.equal(everywhere.body.reason, 'MethodNotAllowed');
});

test('watches: bookmarks of the kind\'s shape with the version alone, 410 Gone from a compacted version; stats per collection',
  async () => {
  await api.ctl('POST', '/bookmarks?ms=100');
  const w = watch('/namespaces/b1/processconfigs?watch=1&allowWatchBookmarks=true');
  const [bm] = await w.next(1);
  w.close();
  const { resourceVersion } = await api.ctl('GET', '/stats');
  assert.deepEqual(bm, { type: 'BOOKMARK', object: { kind: 'ProcessConfig', apiVersion: API_VERSION, metadata: { resourceVersion } } });
  await api.ctl('POST', '/bookmarks?ms=1000');

  const before = (await call('GET', '/processconfigs')).body.metadata.resourceVersion;
  assert.equal((await call('POST', '/namespaces/b1/processconfigs', pc('late'))).code, 201);
  await api.ctl('POST', '/compact');
  const old = watch(`/processconfigs?watch=1&resourceVersion=${before}`);
  const [err] = await old.next(1);
  await h.until(() => old.ended, { what: 'the Gone watch to end' });
  assert.equal(err.type, 'ERROR');
  assert.equal(err.object.code, 410);

  const stats = await api.ctl('GET', '/stats');
  const all = (await call('GET', '/processconfigs')).body.items.length;
  assert.equal(stats.collections.processconfigs.objects, all);
  assert.ok(stats.collections.processconfigs.writes >= all);
  assert.equal(stats.collections.pods.objects, 0);
  assert.equal(stats.lists, 0, 'the pods\' counts are the pods\' alone');
});

test('one version counter for pods and custom resources, each watch seeing its own kind alone', async () => {
  const from = (await api.ctl('GET', '/stats')).resourceVersion;
  const crs = watch(`/processconfigs?watch=1&resourceVersion=${from}`);
  const pods = watch(`/api/v1/pods?watch=1&resourceVersion=${from}`);
  const p1 = await api.ctl('POST', '/pods', stand.pod('one-counter-1'));
  const made = await call('POST', '/namespaces/k1/processconfigs', pc('between'));
  assert.equal(made.code, 201);
  const p2 = await api.ctl('POST', '/pods', stand.pod('one-counter-2'));
  const versions = [p1.resourceVersion, made.body.metadata.resourceVersion, p2.resourceVersion].map(Number);
  assert.deepEqual(versions, [versions[0], versions[0] + 1, versions[0] + 2]);
  const [c] = await crs.next(1);
  const [a, b] = await pods.next(2);
  assert.deepEqual([c.type, c.object.kind, c.object.metadata.name], ['ADDED', 'ProcessConfig', 'between']);
  assert.deepEqual([a.object.metadata.name, b.object.metadata.name], ['one-counter-1', 'one-counter-2'],
    'no custom resource among the pods');
  await h.sleep(200);
  crs.close();
  pods.close();
  assert.equal(crs.events.length, 1, 'no pod among the custom resources');
  assert.equal(pods.events.length, 2);
});

test('a CRD with a rule or keyword kubeapi.js does not implement stops it at start', async () => {
  const crd = fs.readFileSync(path.join(__dirname, '..', '..', 'deploy', 'helm', 'procctl-node', 'files', 'processconfig-crd.yaml'), 'utf8');
  fs.writeFileSync(file('none.json'), '[]');
  const start = async (name, text, want) => {
    assert.notEqual(text, crd, 'the CRD changed');
    fs.writeFileSync(file(name), text);
    const c = new h.Child(process.execPath, [path.join(__dirname, 'kubeapi.js'), String(await h.freePort()), file('apiserver.crt'),
      file('apiserver.key'), stand.TOKEN, file('none.json')], { env: { ...process.env, KUBEAPI_CRD: file(name) } });
    await c.line(want);
    assert.notEqual((await c.exited).code, 0);
  };
  await start('rule.yaml', crd.replace('rule: "has(self.data) != has(self.json)"', 'rule: "has(self.data) || has(self.json)"'),
    /no JS function for the CEL rule "has\(self\.data\) \|\| has\(self\.json\)"/);
  await start('default.yaml', crd.replace('minimum: 1\n', 'minimum: 1\n                  default: 1\n'),
    /spec\.schemaVersion uses default, which kubecrd\.js does not implement/);
});
