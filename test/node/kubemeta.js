// SPDX-License-Identifier: Apache-2.0
// kubemeta.js - what kube-apiserver does alike for every resource, for
// kubeapi.js: the media type of an answer (Accept: JSON, YAML, a
// meta.k8s.io/v1 Table or PartialObjectMetadata, aggregated discovery;
// 406 NotAcceptable when none of them; a protobuf body's metadata), Tables (the columns and cells of
// the server's table convertors: a custom resource's printer columns, the
// default one's Name and Created At; ages as duration.HumanDuration
// writes them), and discovery: the legacy documents (/api, /api/v1,
// /apis, /apis/GROUP, /apis/GROUP/VERSION) and aggregated discovery
// (apidiscovery.k8s.io v2 and v2beta1) of the resources it is given.
// Keeps no state; the store and the resources are kubeapi.js's.
'use strict';

const crypto = require('node:crypto');

const status = (code, reason, message, details) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message,
  reason, ...(details ? { details } : {}), code });

// ---- media types ------------------------------------------------------------

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const DISCOVERY = { v2: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
  v2beta1: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' };

// The Accept header's media ranges, most wanted first (by q, then as
// written): { type, params }.
function ranges(accept) {
  return (accept || '*/*').split(',').map((r, i) => {
    const [type, ...ps] = r.split(';').map((s) => s.trim());
    const params = Object.fromEntries(ps.filter((p) => p.includes('=')).map((p) => p.split('=').map((s) => s.trim())));
    const q = params.q === undefined ? 1 : Number(params.q);
    delete params.q;
    return { type: type.toLowerCase(), params, q, i };
  }).filter((r) => r.q > 0).sort((a, b) => b.q - a.q || a.i - b.i);
}

// What to answer req with, as the API server negotiates it: 'json',
// 'yaml', 'table', 'partial' (PartialObjectMetadata[List]), 'v2' or
// 'v2beta1' (aggregated discovery), or null (406). can: what this
// endpoint may give besides JSON and YAML ({ table, partial, discovery }).
function negotiate(req, can = {}) {
  for (const { type, params } of ranges(req.headers.accept)) {
    const json = type === 'application/json';
    if (!json && type !== 'application/yaml' && type !== '*/*' && type !== 'application/*') continue;
    if (params.as === undefined) return type === 'application/yaml' ? 'yaml' : 'json';
    if (!json) continue;
    if (can.discovery && params.as === 'APIGroupDiscoveryList' && params.g === 'apidiscovery.k8s.io'
      && DISCOVERY[params.v]) return params.v;
    if (params.g !== 'meta.k8s.io' || params.v !== 'v1') continue;
    if (can.table && params.as === 'Table') return 'table';
    if (can.partial && (params.as === 'PartialObjectMetadata' || params.as === 'PartialObjectMetadataList')) return 'partial';
  }
  return null;
}

// A protobuf body (application/vnd.kubernetes.protobuf: "k8s\0", then
// runtime.Unknown { typeMeta, raw }) read as far as its TypeMeta and
// ObjectMeta's name, generateName, namespace, labels and annotations; the
// rest of the object is not read. null: not such a body.
function protobufMeta(buf) {
  const read = (b) => { // the fields of a message: [number, value (a Buffer, or a varint's Number)]
    const out = [];
    let i = 0;
    const varint = () => {
      let v = 0;
      for (let shift = 0; ; shift += 7) {
        if (i >= b.length) throw new Error('truncated');
        const c = b[i++];
        v += (c & 0x7f) * 2 ** shift;
        if (!(c & 0x80)) return v;
      }
    };
    while (i < b.length) {
      const tag = varint();
      const wire = tag % 8;
      if (wire === 0) out.push([Math.floor(tag / 8), varint()]);
      else if (wire === 2) {
        const n = varint();
        if (i + n > b.length) throw new Error('truncated');
        out.push([Math.floor(tag / 8), b.subarray(i, i + n)]);
        i += n;
      } else if (wire === 1 || wire === 5) i += wire === 1 ? 8 : 4;
      else throw new Error(`wire type ${wire}`);
    }
    return out;
  };
  const field = (fs, n) => (fs.find(([k]) => k === n) || [])[1];
  const str = (v) => (Buffer.isBuffer(v) ? v.toString('utf8') : undefined);
  const map = (fs, n) => {
    const entries = fs.filter(([k]) => k === n).map(([, v]) => read(v)).map((e) => [str(field(e, 1)) || '', str(field(e, 2)) || '']);
    return entries.length ? Object.fromEntries(entries) : undefined;
  };
  if (!Buffer.isBuffer(buf) || buf.length < 4 || buf.subarray(0, 4).toString('latin1') !== 'k8s\0') return null;
  try {
    const unknown = read(buf.subarray(4));
    const tm = read(field(unknown, 1) || Buffer.alloc(0));
    const om = read(field(read(field(unknown, 2) || Buffer.alloc(0)), 1) || Buffer.alloc(0));
    const m = { name: str(field(om, 1)), generateName: str(field(om, 2)), namespace: str(field(om, 3)), labels: map(om, 11),
      annotations: map(om, 12) };
    return { apiVersion: str(field(tm, 1)), kind: str(field(tm, 2)),
      metadata: Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined && v !== '')) };
  } catch {
    return null;
  }
}

const notAcceptable = () => status(406, 'NotAcceptable',
  'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');

// ---- Tables -----------------------------------------------------------------

// ObjectMeta's descriptions (metav1.ObjectMeta{}.SwaggerDoc()), which
// the server gives its Name and Created At columns.
const NAME_DOC = 'Name must be unique within a namespace. Is required when creating resources, although some resources may '
  + 'allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation '
  + 'idempotence and configuration definition. Cannot be updated. More info: '
  + 'https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const CREATED_DOC = 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not '
  + 'guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is '
  + 'represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: '
  + 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

// A duration of ms as k8s.io/apimachinery's duration.HumanDuration writes it.
function humanDuration(ms) {
  const s = Math.trunc(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const m = Math.trunc(s / 60);
  if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  if (m < 180) return `${m}m`;
  const h = Math.trunc(m / 60);
  if (h < 8) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  if (h < 48) return `${h}h`;
  const d = Math.trunc(h / 24);
  if (h < 24 * 8) return h % 24 ? `${d}d${h % 24}h` : `${d}d`;
  if (h < 24 * 365 * 2) return `${d}d`;
  const y = Math.trunc(d / 365);
  if (h < 24 * 365 * 8) return d % 365 ? `${y}y${d % 365}d` : `${y}y`;
  return `${y}y`;
}

// The age of a timestamp (RFC 3339) as a Table cell: "<unknown>" when none.
const age = (t) => (t ? humanDuration(Date.now() - Date.parse(t)) : '<unknown>');

// A row's object (includeObject: None, Metadata, the default, or Object).
function rowObject(o, include) {
  if (include === 'None') return {};
  if (include === 'Object') return { object: o };
  return { object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata } };
}

// The Table of body (a list or one object) with columns and cells(o) ->
// a row's cells, as the server's TableConvertor makes it for u's query.
function table(body, u, columns, cells) {
  const include = u.searchParams.get('includeObject') || 'Metadata';
  if (!['None', 'Metadata', 'Object'].includes(include)) {
    throw status(400, 'BadRequest', `includeObject: Unsupported value: "${include}": supported values: "Metadata", "None", "Object"`);
  }
  const list = Array.isArray(body.items);
  const items = list ? body.items : [body];
  const meta = { resourceVersion: body.metadata.resourceVersion };
  if (list && body.metadata.continue) meta.continue = body.metadata.continue;
  if (list && body.metadata.remainingItemCount !== undefined) meta.remainingItemCount = body.metadata.remainingItemCount;
  const none = ['true', '1'].includes(u.searchParams.get('noHeaders') || '');
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: meta, ...(none ? {} : { columnDefinitions: columns }),
    rows: items.map((o) => ({ cells: cells(o), ...rowObject(o, include) })) };
}

// body's PartialObjectMetadata[List].
function partial(body) {
  const one = (o) => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata });
  if (!Array.isArray(body.items)) return one(body);
  return { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: body.metadata, items: body.items.map(one) };
}

// The default table convertor's (rest.NewDefaultTableConvertor): Name and
// Created At, as RFC 3339 in UTC.
const DEFAULT_COLUMNS = [{ name: 'Name', type: 'string', format: 'name', description: NAME_DOC, priority: 0 },
  { name: 'Created At', type: 'date', format: '', description: CREATED_DOC, priority: 0 }];
const defaultCells = (o) => [o.metadata.name, o.metadata.creationTimestamp || '0001-01-01T00:00:00Z'];

// A printer column's JSON path (a simple one: .a.b, .a[0]) as a function
// of an object (undefined: nothing there); null when not simple.
function jsonPath(p) {
  const steps = [];
  const re = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]/y;
  let m;
  while (re.lastIndex < p.length && (m = re.exec(p))) steps.push(m[1] !== undefined ? m[1] : Number(m[2]));
  if (re.lastIndex !== p.length || !steps.length) return null;
  return (o) => steps.reduce((v, s) => (v !== null && typeof v === 'object' && Object.hasOwn(v, s) ? v[s] : undefined), o);
}

// A custom resource's table convertor (apiextensions' tableconvertor):
// Name, then the version's additionalPrinterColumns (an Age of
// creationTimestamp when it has none), each cell of its column's type.
function crTable(printerColumns) {
  const cols = printerColumns && printerColumns.length ? printerColumns
    : [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: CREATED_DOC }];
  const paths = cols.map((c) => jsonPath(c.jsonPath));
  const columns = [{ name: 'Name', type: 'string', format: 'name', description: NAME_DOC, priority: 0 },
    ...cols.map((c) => ({ name: c.name, type: c.type, format: c.format || '', description: c.description || '',
      priority: c.priority || 0 }))];
  const cell = (type, v) => {
    if (v === undefined || v === null) return null;
    if (type === 'string') return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (type === 'integer') return typeof v === 'number' ? Math.trunc(v) : null;
    if (type === 'number') return typeof v === 'number' ? v : null;
    if (type === 'boolean') return typeof v === 'boolean' ? v : null;
    if (type === 'date') return typeof v !== 'string' ? null : Number.isNaN(Date.parse(v)) ? '<invalid>' : age(v);
    return null;
  };
  return { columns, cells: (o) => [o.metadata.name, ...cols.map((c, i) => cell(c.type, paths[i](o)))] };
}

// ---- discovery --------------------------------------------------------------

// A resource's storageVersionHash: its storage group/version/kind's.
const versionHash = (gvk) => crypto.createHash('sha256').update(gvk).digest().subarray(0, 8).toString('base64');

// The discovery documents of groups: [{ name ('' for the core group),
// versions: [{ version, resources: [{ name, singular, kind, namespaced,
// verbs, shortNames, categories, hash, subresources: [{ name, verbs }] }] }],
// crd (a custom resource's group: its responseKind says the group) }], in
// the server's order (the core group first). Each legacy document by its
// path, and the aggregated lists of /api and /apis.
function discovery(groups, serverAddress) {
  const gv = (g, v) => (g ? `${g}/${v}` : v);
  const docs = {};
  const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const core = groups.find((g) => g.name === '');
  docs['/api'] = { kind: 'APIVersions', versions: core ? core.versions.map((v) => v.version) : [],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
  const named = groups.filter((g) => g.name !== '');
  const group = (g) => ({ name: g.name, versions: g.versions.map((v) => ({ groupVersion: gv(g.name, v.version), version: v.version })),
    preferredVersion: { groupVersion: gv(g.name, g.versions[0].version), version: g.versions[0].version } });
  docs['/apis'] = { kind: 'APIGroupList', apiVersion: 'v1', groups: named.map(group) };
  for (const g of groups) {
    if (g.name) docs[`/apis/${g.name}`] = { kind: 'APIGroup', apiVersion: 'v1', ...group(g) };
    for (const v of g.versions) {
      const resources = [];
      for (const r of v.resources) {
        resources.push({ name: r.name, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: r.verbs,
          ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}),
          storageVersionHash: r.hash });
        for (const s of r.subresources || []) {
          resources.push({ name: `${r.name}/${s.name}`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: s.verbs });
        }
      }
      const list = { kind: 'APIResourceList', ...(g.name ? { apiVersion: 'v1' } : {}), groupVersion: gv(g.name, v.version),
        resources: resources.sort(byName) };
      docs[g.name ? `/apis/${g.name}/${v.version}` : `/api/${v.version}`] = list;
    }
  }
  const aggregated = (gs, version) => ({ kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {},
    items: gs.map((g) => ({ metadata: { ...(g.name ? { name: g.name } : {}), creationTimestamp: null },
      versions: g.versions.map((v) => {
        const kind = (r) => ({ group: g.crd ? g.name : '', version: g.crd ? v.version : '', kind: r.kind });
        return { version: v.version, resources: [...v.resources].sort(byName).map((r) => ({ resource: r.name, responseKind: kind(r),
          scope: r.namespaced ? 'Namespaced' : 'Cluster', singularResource: r.singular, verbs: r.verbs,
          ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}),
          ...(r.subresources && r.subresources.length ? { subresources: r.subresources.map((s) => ({ subresource: s.name,
            responseKind: kind(r), verbs: s.verbs })) } : {}) })), freshness: 'Current' };
      }) })) });
  return {
    legacy: (p) => (Object.hasOwn(docs, p) ? docs[p] : null),
    aggregated: (p, version) => (p === '/api' ? aggregated(core ? [core] : [], version) : aggregated(named, version)),
  };
}

// ---- OpenAPI v3 -------------------------------------------------------------

// The query parameters of each operation, as kube-openapi names them.
const LIST_PARAMS = ['allowWatchBookmarks', 'continue', 'fieldSelector', 'labelSelector', 'limit', 'resourceVersion',
  'resourceVersionMatch', 'sendInitialEvents', 'timeoutSeconds', 'watch'];
const WRITE_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation'];
const DELETE_PARAMS = ['dryRun', 'gracePeriodSeconds', 'ignoreStoreReadErrorWithClusterBreakingPotential', 'orphanDependents',
  'propagationPolicy'];
const PARAM_TYPES = { allowWatchBookmarks: 'boolean', sendInitialEvents: 'boolean', watch: 'boolean', force: 'boolean',
  ignoreStoreReadErrorWithClusterBreakingPotential: 'boolean', orphanDependents: 'boolean', limit: 'integer',
  timeoutSeconds: 'integer', gracePeriodSeconds: 'integer' };
const param = (name, where = 'query') => ({ name, in: where, ...(where === 'path' ? { required: true } : {}),
  schema: { type: PARAM_TYPES[name] || 'string', uniqueItems: true } });

// The OpenAPI v3 the server publishes of groups (discovery's), pared down
// to what clients read of it: the root (/openapi/v3: each group version's
// document by path) and each document's paths, their operations with
// x-kubernetes-action, x-kubernetes-group-version-kind and their query
// parameters (kubectl's fieldValidation check reads a PATCH's); no schemas.
function openapi(groups) {
  const docs = {};
  for (const g of groups) {
    for (const v of g.versions) {
      const base = g.name ? `/apis/${g.name}/${v.version}` : `/api/${v.version}`;
      const paths = {};
      for (const r of v.resources) {
        const gvk = { group: g.name, version: v.version, kind: r.kind };
        const op = (action, params) => ({ parameters: params.map((n) => param(n)), responses: { 200: { description: 'OK' } },
          'x-kubernetes-action': action, 'x-kubernetes-group-version-kind': gvk });
        const scope = r.namespaced ? `${base}/namespaces/{namespace}` : base;
        const at = (p, item) => ({ ...item, parameters: [...(p.includes('{name}') ? [param('name', 'path')] : []),
          ...(p.includes('{namespace}') ? [param('namespace', 'path')] : []), param('pretty')] });
        const collection = `${scope}/${r.name}`;
        const object = `${collection}/{name}`;
        paths[collection] = at(collection, { get: op('list', LIST_PARAMS), post: op('post', WRITE_PARAMS),
          delete: op('deletecollection', [...DELETE_PARAMS, ...LIST_PARAMS]) });
        paths[object] = at(object, { get: op('get', []), put: op('put', WRITE_PARAMS), patch: op('patch', [...WRITE_PARAMS, 'force']),
          delete: op('delete', DELETE_PARAMS) });
        for (const sub of r.subresources || []) {
          const p = `${object}/${sub.name}`;
          paths[p] = at(p, { get: op('get', []), put: op('put', WRITE_PARAMS), patch: op('patch', [...WRITE_PARAMS, 'force']) });
        }
      }
      docs[base.slice(1)] = { openapi: '3.0.0', info: { title: 'Kubernetes', version: VERSION.gitVersion }, paths };
    }
  }
  const hash = (d) => crypto.createHash('sha512').update(JSON.stringify(d)).digest('hex').toUpperCase();
  return {
    root: () => ({ paths: Object.fromEntries(Object.entries(docs).map(([p, d]) => [p,
      { serverRelativeURL: `/openapi/v3/${p}?hash=${hash(d)}` }])) }),
    doc: (p) => (Object.hasOwn(docs, p) ? docs[p] : null),
  };
}

// The /version document: the kube-apiserver kubectl 1.32.3 is.
const VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.3', gitCommit: '32cc146f75aad04beaaa245a7157eb35063a9f99',
  gitTreeState: 'clean', buildDate: '2025-03-11T19:52:21Z', goVersion: 'go1.23.6', compiler: 'gc', platform: 'linux/amd64' };

module.exports = { negotiate, notAcceptable, protobufMeta, table, partial, crTable, jsonPath, DEFAULT_COLUMNS, defaultCells,
  humanDuration, age, discovery, openapi, versionHash, VERSION, TABLE, DISCOVERY, NAME_DOC };
