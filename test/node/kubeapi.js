// SPDX-License-Identifier: Apache-2.0
// kubeapi.js - a stand-in for the Kubernetes API server, over HTTPS with a
// bearer token (401 without), answering as the API server does
// (kubernetes.io's API Concepts, Field Selectors, Custom Resources,
// Server-Side Apply, Discovery) what procctl's clients ask, what a test
// writes as kubectl would, and what a real kubectl asks (kubectl.test.js).
// Errors are Status objects with the API server's reasons and codes.
//   GET  /api/v1/namespaces/NS/pods/NAME                     a Pod
//   GET  /apis/discovery.k8s.io/v1/[namespaces/NS/]endpointslices?labelSelector=K=V
//   GET  /api/v1/[namespaces/NS/]pods?fieldSelector=F&labelSelector=L&limit=N
//        [&continue=T][&resourceVersion=RV[&resourceVersionMatch=M]]
//        a PodList. The field selector is requirements joined by commas
//        (FIELD=V, FIELD==V, FIELD!=V) over the fields Pods support;
//        another field is 400; the label selector's are K=V, K!=V,
//        K in (..), K notin (..), K, !K. Paged (limit) from one snapshot:
//        a page reads the next N pods in key order (namespace, name) and
//        gives those the selectors keep, so a page may hold fewer, or
//        none, and still have a continue token; with a selector no
//        remainingItemCount is said. A continue token whose version
//        was compacted away is 410 Expired, and the Status's
//        metadata.continue an inconsistent token (the rest, read at the
//        current version), as etcd3's store gives. resourceVersion unset: the
//        most recent (a consistent read, as from etcd); "0": any, as the
//        watch cache serves it: limit ignored, all at once; N (match
//        NotOlderThan, or unset): not older than N, 504 when N is ahead.
//        Items carry no kind or apiVersion (the list's do).
//   GET  /api/v1/[namespaces/NS/]pods?fieldSelector=F&watch=1[&resourceVersion=RV]
//        [&allowWatchBookmarks=true][&timeoutSeconds=S]
//        a chunked stream of {"type","object"} lines: from RV unset or
//        "0", an ADDED for each pod the selector keeps, then the changes;
//        from RV, the changes after it; then each as it happens. A change
//        is judged by the selector before and after it: a pod it starts
//        to keep is ADDED, one it stops keeping DELETED (the pod as it
//        was, at the new version), as the watch cache does. BOOKMARKs
//        every bookmark_ms, a Pod's shape with the current version only;
//        ended after S; an RV older than the history kept is answered
//        with an ERROR event 410 (Gone) and the end of the stream.
// CustomResourceDefinitions (kubecrds.js; kubecrapi.js serves them as it
// serves a custom resource, cluster-scoped), one served at a time:
//   GET, POST, PUT, PATCH (apply too), DELETE
//        /apis/apiextensions.k8s.io/v1/customresourcedefinitions[/NAME[/status]]
//        a CRD judged as the server judges it (422), and by kubecrd.js,
//        which must serve its objects (500 else: the stand-in's limit); its
//        status written after each write as the server's controllers write
//        it: names accepted (its objects served from then), then
//        Established (in discovery from then). Deleted: its objects go
//        (DELETED), their watches end, its group is 404 again.
// The CRD in $KUBEAPI_CRD (default: the chart's deploy/helm/procctl-node/
// files/processconfig-crd.yaml) is there, established, from the start
// unless --without-crd, as the chart installs it: ProcessConfig,
// procctl.io/v1alpha1, namespaced, with a status subresource. Its objects,
// under /apis/procctl.io/v1alpha1 (kubecrapi.js serves them, kubecrd.js
// judges them by the CRD's schema, kubessa.js keeps managedFields):
//   GET  [namespaces/NS/]processconfigs?...   a ProcessConfigList, as the
//        PodList above (fields: metadata.name, metadata.namespace), its
//        items with kind and apiVersion, as custom resources are stored
//   GET  [namespaces/NS/]processconfigs?watch=1&...   a watch, as above;
//        a BOOKMARK is {kind, apiVersion, metadata: {resourceVersion}}
//   GET  namespaces/NS/processconfigs/NAME[/status]   the object (404)
//   POST namespaces/NS/processconfigs         create (201): JSON or YAML
//        (415 else), kind and apiVersion defaulted, apiVersion the URL's
//        (400), metadata.namespace the URL's or none (400), generateName,
//        then uid, creationTimestamp, generation 1; status dropped;
//        resourceVersion given: 500; a name taken: 409 AlreadyExists
//   PUT  namespaces/NS/processconfigs/NAME[/status]   update (200): the
//        name the URL's (400); none: 404; metadata.resourceVersion needed
//        (422) and current (409 Conflict); through the object status is
//        kept, and generation goes up when anything but metadata changed;
//        through /status only status changes; nothing changed: nothing
//        written (same resourceVersion, no event)
//   PATCH namespaces/NS/processconfigs/NAME[/status]   application/merge-
//        patch+json (RFC 7386), application/json-patch+json (RFC 6902:
//        one that does not apply is 422), else 415; then as PUT (a
//        resourceVersion the patch sets is a precondition).
//        application/apply-patch+yaml: server-side apply, fieldManager
//        needed (422, PatchOptions), force=true to take fields: the
//        config merged (list-type maps, as status.nodes by node, item by
//        item), what the manager applied before and leaves out removed
//        unless another owns it, another manager's field changed: 409
//        Conflict (reason Conflict, a cause per field); a field the schema
//        does not declare: 500, as the API server; none yet: made (201),
//        not through /status (404). force elsewhere: 422
//   DELETE namespaces/NS/processconfigs/NAME   the object as deleted (at
//        its deletion's version; DELETED); with finalizers, marked
//        (deletionTimestamp) and deleted when the last goes; DeleteOptions'
//        preconditions (409). DELETE namespaces/NS/processconfigs: each
//        one the selectors keep. Other methods: 405 MethodNotAllowed
//        Every write: unknown fields pruned (a Warning header each, or 400
//        with fieldValidation=Strict), nulls dropped, then judged by the
//        schema (type, required, enum, pattern, lengths, bounds, items,
//        properties, formats byte and date-time, list-map keys once, the
//        x-kubernetes-validations rules; ObjectMeta's name, labels and
//        annotations): 422 Invalid, a cause for each error; on update an
//        unchanged value's errors are not said (ratcheting). managedFields
//        kept as the API server keeps them (Update: fieldManager, else the
//        User-Agent's first word). dryRun=All: judged, not stored. A body
//        past 3 MiB: 413 RequestEntityTooLarge; an object past etcd's 1.5
//        MiB request: 500 "etcdserver: request is too large".
// Events (kubeevents.js), one store served as core v1 and events.k8s.io/v1:
//   POST /apis/events.k8s.io/v1/namespaces/NS/events, /api/v1/namespaces/NS/events
//        create (201): decoded and validated as the server does each
//        version (422 Invalid, 400 for a bad MicroTime or type, 409
//        AlreadyExists); the object as the request's version gives it
//   GET  .../[namespaces/NS/]events[/NAME][?watch=1]   the Event(s) in the
//        URL's version, with its field selectors (core: involvedObject.*,
//        reason, reportingComponent, source, type; events.k8s.io:
//        regarding.*, reportingController, ...); DELETE .../NAME
// Namespaces: GET /api/v1/namespaces[/NAME], POST /api/v1/namespaces
//        (JSON or protobuf, as kubectl create sends it): the cluster's four,
//        those made, and each one an object was written in (there is no
//        NamespaceLifecycle admission here); never deleted.
// Discovery and the rest kubectl reads (kubemeta.js):
//   GET  /api, /apis   legacy (APIVersions, APIGroupList), or aggregated
//        (apidiscovery.k8s.io v2, v2beta1) as Accept asks; /api/v1,
//        /apis/GROUP, /apis/GROUP/VERSION: what is served (Pods, Events,
//        Namespaces, EndpointSlices, CRDs; the CRD's objects once established)
//   GET  /openapi/v3[/api/v1, /apis/GROUP/VERSION]   each group version's
//        paths and operations with their query parameters, no schemas (kubectl
//        apply reads a PATCH's fieldValidation there); /openapi/v2: 404
//   GET  /version   kube-apiserver v1.32.3
// A GET of a resource answers as Accept asks: JSON, YAML, a meta.k8s.io/v1
// Table (a watch's too) where the server has a printer that is here (CRDs:
// Name, Created At; the CRD's objects: Name and its printer columns;
// Events: the event printer's; Namespaces), PartialObjectMetadata; else
// 406 NotAcceptable (Pods and EndpointSlices have no Table here: JSON).
// resourceVersions are one counter for every change of every kind, as
// etcd's revision, with one history (kubestore.js); each watch sees its
// collection's.
// There is no cluster here: the objects come from OBJECTS.json and from the
// test, which validates them against their schemas (kubernetes-models).
// The test drives it on a Unix socket (CONTROL_SOCKET: reached from any
// network namespace), plain HTTP, JSON in and out:
//   POST /pods                  a Pod, added or changed (it gets the next version)
//   DELETE /pods/UID            it goes (DELETED)
//   DELETE /pods/UID?graceful=1 its deletionTimestamp is set (MODIFIED), as
//                               the API server's first step of a deletion
//   POST /compact               the history goes: a watch from an older version is Gone
//   POST /tokens?expire=1       every continue token comes back expired, as
//                               if compacted between pages (0: as they are)
//   POST /expire                every open watch gets ERROR 410 and ends
//   POST /close                 every open watch ends, as at its timeout
//   POST /cut                   every open watch's connection is cut mid-stream
//   POST /fail?code=C&count=K[&retry_after=S][&path=P][&message=M]
//                               the next K requests of the API (whose path
//                               ends with P) are answered C (429, 500,
//                               ...), with Retry-After: S, their Status's
//                               message M (a hostile server's text)
//   POST /restart?down_ms=N     every connection is cut, nothing listens for N ms
//   POST /slow?ms=N             every answer waits N ms first (0: none)
//   POST /pad?bytes=N[&small=1] every page of a list carries about N bytes
//                               more of valid JSON, in small fields the
//                               client does not know (a hostile server);
//                               small: an array of zeros, a value in 2 bytes
//   POST /bookmarks?ms=N        BOOKMARK every N ms (0: none)
//   POST /inject                the body, as it is, on every open watch (a hostile server)
//   POST /churn?per_s=N         N label changes a second, to pods taken in turn (0: stop)
//   GET  /stats                 what was asked of the Pods: lists (listsBy:
//                               per node; listed: each list's node,
//                               resourceVersion, resourceVersionMatch and
//                               limit), pages, watches (with their node and
//                               resourceVersion), open watches (openBy),
//                               expired (continue tokens answered 410);
//                               failed (answered by /fail); events: the
//                               Events stored; collections: per collection
//                               (pods, events, customresourcedefinitions,
//                               and processconfigs while its CRD is served)
//                               its objects, lists, pages, watches, open,
//                               expired and writes, and backlog: the most
//                               bytes a watch of it has written that its
//                               client has not read (TCP pushed back)
// The controls (but /pods, /churn) act on every collection alike.
// Usage: node kubeapi.js [--without-crd] PORT CERT KEY TOKEN OBJECTS.json
// [CONTROL_SOCKET] (listens on $KUBEAPI_HOST, default 127.0.0.1)
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const path = require('node:path');
const YAML = require('yaml');
const kubecrd = require('./kubecrd');
const kubecrds = require('./kubecrds');
const kubeevents = require('./kubeevents');
const meta = require('./kubemeta');
const { endpoints } = require('./kubecrapi');
const { createStore, collection, podKey } = require('./kubestore');

const argv = process.argv.slice(2);
const withoutCrd = argv.includes('--without-crd');
const [port, cert, key, token, objects, controlSocket] = argv.filter((a) => !a.startsWith('--'));
const host = process.env.KUBEAPI_HOST || '127.0.0.1';
const crdFile = process.env.KUBEAPI_CRD
  || path.join(__dirname, '..', '..', 'deploy', 'helm', 'procctl-node', 'files', 'processconfig-crd.yaml');

const status = (code, reason, message, details) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message,
  reason, ...(details ? { details } : {}), code });

// ---- the store ----------------------------------------------------------

// A Pod's fields a field selector may name (the API server's list), as text.
const POD_FIELDS = {
  'metadata.name': (p) => p.metadata.name,
  'metadata.namespace': (p) => p.metadata.namespace,
  'spec.nodeName': (p) => (p.spec && p.spec.nodeName) || '',
  'spec.restartPolicy': (p) => (p.spec && p.spec.restartPolicy) || '',
  'spec.schedulerName': (p) => (p.spec && p.spec.schedulerName) || '',
  'spec.serviceAccountName': (p) => (p.spec && p.spec.serviceAccountName) || '',
  'spec.hostNetwork': (p) => String(Boolean(p.spec && p.spec.hostNetwork)),
  'status.phase': (p) => (p.status && p.status.phase) || '',
  'status.podIP': (p) => (p.status && p.status.podIP) || '',
  'status.nominatedNodeName': (p) => (p.status && p.status.nominatedNodeName) || '',
};
// A custom resource's: its name and namespace only (no selectableFields);
// a cluster-scoped one's, its name.
const META_FIELDS = { 'metadata.name': POD_FIELDS['metadata.name'], 'metadata.namespace': POD_FIELDS['metadata.namespace'] };
const NAME_FIELDS = { 'metadata.name': POD_FIELDS['metadata.name'] };

// The store (kubestore.js): its counter, history, watches and stats. The
// CRD there from the start is older than the objects given, which are
// 1001 onwards; an object written in a namespace makes it.
const db = createStore(990, (o) => o.metadata.namespace && namespace(o.metadata.namespace));
const { change, selector, sorted, served, list, watch, open } = db;
const objs = [];          // every object but Pods and custom resources, as given
let slowMs = 0;
let churn = null;
let churned = 0;
let down = false;
let failing = null; // /fail's: { code, count, retryAfter, path, message }
const copy = (o) => JSON.parse(JSON.stringify(o));

// Pods by UID, their list items bare, their bookmark a Pod's shape with
// the version alone; Events (core's, stored as v1) by namespace/name;
// CustomResourceDefinitions and the custom resource (CRS, while its CRD
// is served) by [namespace]/name, as stored.
const PODS = collection('pods', 'Pod', 'v1', (p) => p.metadata.uid, POD_FIELDS, false,
  () => ({ kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(db.rv), creationTimestamp: null },
    spec: { containers: null }, status: {} }));
const EVENTS = collection('events', 'Event', 'v1', podKey, kubeevents.FIELDS.v1, false, null);
const CRDS = collection('customresourcedefinitions', 'CustomResourceDefinition', 'apiextensions.k8s.io/v1', podKey, NAME_FIELDS,
  true, () => ({ kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.k8s.io/v1', metadata: { resourceVersion: String(db.rv) } }));
let CRS = null;
const pods = PODS.items;
db.pods = PODS;

// ---- the custom resource and its definition ---------------------------------

// A store of coll for kubecrapi.js's endpoints (coll(): the collection now).
const storeOf = (coll, written = () => {}) => ({
  get coll() {
    return coll();
  },
  write(type, obj) {
    coll().counts.writes += 1;
    change(coll(), type, obj);
    const o = db.history.at(-1).object;
    written(type, o);
    return o;
  },
  list: (u, ns) => list(u, coll(), ns),
  watch: (u, res, ns) => watch(u, res, coll(), ns),
  select(u, ns) {
    const { keep } = selector(u, coll().fields);
    return sorted(coll(), ns).filter((p) => !keep || keep(p));
  },
  rv: () => String(db.rv),
});

// The CRD served (kubecrd.js's, null: none), its object's name and spec,
// and its objects' endpoints (kubecrapi.js) over CRS.
let crd = null;
let crdName = null;
let crdSpec = null;
let crs = null;
const crStore = storeOf(() => CRS);

// CustomResourceDefinitions (kubecrds.js), their endpoints kubecrapi.js's
// over CRDS; each write reconciled as the server's controllers do.
const crdDef = kubecrds.definition(() => (crdName ? CRDS.items.get(`/${crdName}`) : null));
const crdApi = endpoints(crdDef, storeOf(() => CRDS, (type, o) => reconcile(type, o)));
const BUILTIN_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

// A CRD whose names are accepted is served (its objects' endpoints made,
// or remade for a new spec); a CRD deleted takes its objects with it.
let settling = false;
function reconcile(type, o) {
  if (type === 'DELETED') {
    if (o.metadata.name === crdName) uninstall();
    return;
  }
  if (kubecrds.isTrue(o, 'NamesAccepted')) install(o);
  if (!settling) setImmediate(settle, o.metadata.name);
}

function install(o) {
  if (crd && kubecrd.deepEqual(crdSpec, o.spec)) return;
  crd = kubecrd.fromObject(o, `the CustomResourceDefinition ${o.metadata.name}`);
  crdName = o.metadata.name;
  crdSpec = copy(o.spec);
  if (!CRS) {
    CRS = collection(crd.plural, crd.kind, crd.apiVersion, podKey, crd.namespaced ? META_FIELDS : NAME_FIELDS, true,
      () => ({ kind: crd.kind, apiVersion: crd.apiVersion, metadata: { resourceVersion: String(db.rv) } }));
  }
  CRS.listKind = crd.listKind;
  crs = endpoints(crd, crStore);
}

function uninstall() {
  for (const o of sorted(CRS, null)) change(CRS, 'DELETED', o);
  for (const w of [...db.watches]) if (w.coll === CRS) w.end();
  crd = crdName = crdSpec = crs = CRS = null;
}

// The naming and establishing controllers' writes to the CRD name
// (kubecrds.settled), each as kube-apiserver's, until neither has one.
function settle(name) {
  settling = true;
  try {
    for (const step of [1, 2]) {
      const live = CRDS.items.get(`/${name}`);
      const s = live && kubecrds.settled(live, step);
      if (s) crdApi.change(null, name, 'status', (o) => { o.status = s; }, 'kube-apiserver');
    }
  } finally {
    settling = false;
  }
}

// ---- namespaces ---------------------------------------------------------------

// Namespaces: the cluster's four from the start, one made by POST, and one
// made the first time an object is written in it, at that write's
// version (the stand-in has no NamespaceLifecycle admission: an object may
// be written in any namespace, and its namespace is then there, as
// kubectl expects of an object's); never deleted.
const namespaces = new Map();
const nowSec = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
function namespace(name) {
  if (!namespaces.has(name)) {
    namespaces.set(name, { kind: 'Namespace', apiVersion: 'v1', metadata: { name, uid: crypto.randomUUID(), resourceVersion: String(db.rv),
      creationTimestamp: nowSec(), labels: { 'kubernetes.io/metadata.name': name } }, spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' } });
  }
  return namespaces.get(name);
}
for (const ns of ['default', 'kube-node-lease', 'kube-public', 'kube-system']) namespace(ns);

// The namespace printer's columns and cells.
const NS_TABLE = { columns: [meta.DEFAULT_COLUMNS[0], { name: 'Status', type: 'string', format: '',
  description: 'The status of the namespace', priority: 0 }, { ...meta.DEFAULT_COLUMNS[1], name: 'Age', type: 'string' }],
cells: (o) => [o.metadata.name, o.status.phase, meta.age(o.metadata.creationTimestamp)] };

// GET /api/v1/namespaces[/NAME], POST /api/v1/namespaces (JSON or
// protobuf; a name: a DNS label, not taken).
function namespaceAnswer(req, name, body) {
  const nsNotFound = (n) => status(404, 'NotFound', `namespaces "${n}" not found`, { name: n, kind: 'namespaces' });
  if (req.method === 'GET' && name) return namespaces.has(name) ? [200, namespaces.get(name)] : [404, nsNotFound(name)];
  if (req.method === 'GET') {
    const items = [...namespaces.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
      .map(({ kind, apiVersion, ...o }) => o); // a built-in list's items: no kind, no apiVersion
    return [200, { kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: String(db.rv) }, items }];
  }
  if (req.method !== 'POST' || name) {
    return [405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {})];
  }
  let o = meta.protobufMeta(body.data); // kubectl create sends protobuf
  try {
    if (!o) o = JSON.parse(body.data.toString('utf8'));
  } catch (e) {
    return [400, status(400, 'BadRequest', `couldn't get version/kind; json parse error: ${e.message}`)];
  }
  const n = (o.metadata || {}).name || '';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n) || n.length > 63) {
    const why = n ? 'a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end '
      + 'with an alphanumeric character (e.g. \'my-name\',  or \'123-abc\', regex used for validation is '
      + '\'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')' : 'name or generateName is required';
    return [422, kubecrd.invalid('Namespace', '', n, [kubecrd.fieldError(n ? 'FieldValueInvalid' : 'FieldValueRequired',
      'metadata.name', n, why)])];
  }
  if (namespaces.has(n)) return [409, status(409, 'AlreadyExists', `namespaces "${n}" already exists`, { name: n, kind: 'namespaces' })];
  db.rv += 1;
  const made = namespace(n);
  if (o.metadata.labels) made.metadata.labels = { ...o.metadata.labels, ...made.metadata.labels };
  return [201, made];
}

// ---- events -------------------------------------------------------------------

const eventsApi = kubeevents.events(storeOf(() => EVENTS), { nowSec,
  manager: (req, u) => u.searchParams.get('fieldManager') || (req.headers['user-agent'] || '').split('/')[0] });
// Events as version serves them (core's v1 or events.k8s.io/v1).
const eventsAs = (version) => ({ fields: kubeevents.FIELDS[version], view: (o, inList) => kubeevents.view(o, version, !inList),
  bookmark: () => ({ metadata: { resourceVersion: String(db.rv), creationTimestamp: null } }), render: null });
const EVENT_PATH = /^\/(?:api\/(v1)|apis\/events\.k8s\.io\/(v1))\/(?:namespaces\/([^/]+)\/)?events(?:\/([^/]+))?$/;

// ---- start-up -----------------------------------------------------------------

// The CRD of $KUBEAPI_CRD, there from the start unless --without-crd (as
// the chart installs it), established; then the objects given.
if (!withoutCrd) {
  kubecrd.load(crdFile); // one it cannot serve stops it here, saying why
  const o = YAML.parse(fs.readFileSync(crdFile, 'utf8'));
  crdApi.make(o, 'kubectl');
  settle(o.metadata.name);
}
db.rv = Math.max(db.rv, 1000);
for (const o of JSON.parse(fs.readFileSync(objects, 'utf8'))) {
  if (o.kind === 'Pod') change(PODS, 'ADDED', o);
  else objs.push(o);
  if (o.metadata && o.metadata.namespace) namespace(o.metadata.namespace);
}
db.oldest = 1000;

// ---- the API ------------------------------------------------------------

// What discovery says is served: [{ name, versions: [{ version,
// resources }] }] (kubemeta.discovery), the core group first, then the
// named groups in the server's order, the CRD's last once established.
function groups() {
  const r = (name, singular, kind, hash, more = {}) => ({ name, singular, kind, namespaced: true, verbs: BUILTIN_VERBS, hash, ...more });
  const events = r('events', 'event', 'Event', meta.versionHash('/v1/Event'), { shortNames: ['ev'] });
  const live = crdName && CRDS.items.get(`/${crdName}`);
  return [
    { name: '', versions: [{ version: 'v1', resources: [events,
      r('namespaces', 'namespace', 'Namespace', meta.versionHash('/v1/Namespace'), { namespaced: false, shortNames: ['ns'],
        verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] }),
      r('pods', 'pod', 'Pod', meta.versionHash('/v1/Pod'), { shortNames: ['po'], categories: ['all'] })] }] },
    { name: 'events.k8s.io', versions: [{ version: 'v1', resources: [events] }] },
    { name: 'apiextensions.k8s.io', versions: [{ version: 'v1', resources: [{ ...crdApi.described, verbs: BUILTIN_VERBS }] }] },
    { name: 'discovery.k8s.io', versions: [{ version: 'v1', resources: [r('endpointslices', 'endpointslice', 'EndpointSlice',
      meta.versionHash('discovery.k8s.io/v1/EndpointSlice'))] }] },
    ...(crs && live && kubecrds.established(live) ? [{ name: crd.group, crd: true, versions: [{ version: crd.version,
      resources: [crs.described] }] }] : []),
  ];
}

const REASONS = { 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable' };
const notFound = () => [404, status(404, 'NotFound', 'the server could not find the requested resource', {})];

// The resource of pathname that takes writes: { api: kubecrapi's endpoints,
// route } or { events: match }; null: none.
function writable(pathname) {
  const cr = crs && crs.route(pathname);
  if (cr) return { api: crs, route: cr, table: meta.crTable(crd.columns) };
  const def = crdApi.route(pathname);
  if (def) return { api: crdApi, route: def, table: { columns: meta.DEFAULT_COLUMNS, cells: meta.defaultCells } };
  const m = EVENT_PATH.exec(pathname);
  if (m) return { events: m };
  const ns = /^\/api\/v1\/namespaces(?:\/([^/]+))?$/.exec(pathname);
  return ns ? { namespaces: ns[1] || null, table: NS_TABLE } : null;
}

// A GET's answer as mode asks (negotiated): a Table (table: its columns and
// cells), PartialObjectMetadata, or as it is.
function rendered(r, mode, u, table) {
  if (!r || r[0] !== 200 || r[1].kind === 'Status') return r;
  if (mode === 'table') return [200, meta.table(r[1], u, table.columns, table.cells)];
  if (mode === 'partial') return [200, meta.partial(r[1])];
  return r;
}

// The answer of a request: [code, object, mode] (null: a watch, answering
// as it goes); mode: the media type negotiated (kubemeta.negotiate).
function answer(req, res, body) {
  const u = new URL(req.url, 'https://kubernetes.default.svc');
  const w = writable(u.pathname);
  if (!w && req.method !== 'GET') return [405, status(405, 'MethodNotAllowed', 'only GET here')];
  if (req.headers.authorization !== `Bearer ${token}`) return [401, status(401, 'Unauthorized', 'Unauthorized')];
  if (failing && failing.count > 0 && u.pathname.endsWith(failing.path)) {
    failing.count -= 1;
    db.stats.failed += 1;
    if (failing.retryAfter !== null) res.setHeader('Retry-After', String(failing.retryAfter));
    return [failing.code, status(failing.code, REASONS[failing.code] || 'InternalError',
      failing.message === null ? `failing on purpose (${failing.code})` : failing.message)];
  }
  const get = req.method === 'GET';
  const watching = ['1', 'true'].includes(u.searchParams.get('watch'));
  const p = u.pathname.replace(/\/$/, '') || '/';
  if (get && (p === '/api' || p === '/apis')) {
    const mode = meta.negotiate(req, { discovery: true });
    if (!mode) return [406, meta.notAcceptable()];
    const d = meta.discovery(groups(), `${req.socket.localAddress.replace(/^::ffff:/, '')}:${req.socket.localPort}`);
    return mode === 'v2' || mode === 'v2beta1' ? [200, d.aggregated(p, mode), mode] : [200, d.legacy(p), mode];
  }
  if (get && p.startsWith('/openapi/v3')) { // the paths clients read, no schemas (kubemeta.openapi)
    const o = meta.openapi(groups());
    const doc = p === '/openapi/v3' ? o.root() : o.doc(p.slice('/openapi/v3/'.length));
    if (doc) {
      const mode = meta.negotiate(req);
      return mode === 'json' ? [200, doc, mode] : [406, meta.notAcceptable()];
    }
  }
  if (get && (p === '/version' || /^\/apis?(\/[^/]+){1,2}$/.test(p))) {
    const doc = p === '/version' ? meta.VERSION : meta.discovery(groups(), '').legacy(p);
    if (doc) {
      const mode = meta.negotiate(req);
      return mode ? [200, doc, mode] : [406, meta.notAcceptable()];
    }
  }
  // A resource: its GETs as the Accept header asks, a Table where the
  // server has a table convertor for it here.
  const table = w && (w.table || (w.events && kubeevents.table(meta.NAME_DOC)));
  const mode = get ? meta.negotiate(req, { table: Boolean(table), partial: Boolean(w) && !watching }) : 'json';
  if (!mode) return [406, meta.notAcceptable()];
  const render = (how) => (mode === 'table' ? { ...how, render: (o, first) => meta.table(o, first ? u : noHeaders(u),
    table.columns, table.cells) } : how);
  if (w && w.api) {
    if (watching && get && w.route.name === null && !w.route.bad) {
      const coll = w.api === crs ? CRS : CRDS;
      return watch(u, res, coll, w.route.ns, render(served(coll)));
    }
    const r = w.api.answer(req, res, u, w.route, body);
    return get ? [...rendered(r, mode, u, table), mode] : r;
  }
  if (w && Object.hasOwn(w, 'namespaces')) {
    const r = namespaceAnswer(req, w.namespaces, body);
    return get ? [...rendered(r, mode, u, table), mode] : r;
  }
  if (w && w.events) {
    const [, core, , ns = null, name = null] = w.events;
    const version = core ? 'v1' : 'events.k8s.io/v1';
    if (get && name === null) {
      if (watching) return watch(u, res, EVENTS, ns, render(eventsAs(version)));
      return [...rendered(list(u, EVENTS, ns, eventsAs(version)), mode, u, table), mode];
    }
    if (get && ns !== null) return [...rendered(eventsApi.get(version, ns, name), mode, u, table), mode];
    if (req.method === 'POST' && ns !== null && name === null) {
      if (body.big) throw status(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${crdApi.LIMIT_BODY}`);
      return eventsApi.create(req, u, version, ns, body.data.toString('utf8'), res);
    }
    if (req.method === 'DELETE' && ns !== null && name !== null) return eventsApi.remove(version, ns, name);
    if (ns === null && name !== null) return notFound();
    return [405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {})];
  }
  let m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(u.pathname);
  if (m) {
    const pod = [...pods.values()].find((o) => o.metadata.namespace === m[1] && o.metadata.name === m[2]);
    return pod ? [200, pod] : [404, status(404, 'NotFound', `pods "${m[2]}" not found`)];
  }
  m = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods$/.exec(u.pathname);
  if (m) {
    const ns = m[1] === undefined ? null : m[1];
    if (watching) return watch(u, res, PODS, ns);
    return list(u, PODS, ns);
  }
  m = /^\/apis\/discovery\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?endpointslices$/.exec(u.pathname);
  if (m) {
    const want = (u.searchParams.get('labelSelector') || '').split(',').filter(Boolean).map((x) => x.split('='));
    const items = objs.filter((o) => o.kind === 'EndpointSlice' && (m[1] === undefined || o.metadata.namespace === m[1]) &&
      want.every(([k, v]) => (o.metadata.labels || {})[k] === v));
    return [200, { kind: 'EndpointSliceList', apiVersion: 'discovery.k8s.io/v1', metadata: { resourceVersion: String(db.rv) }, items }];
  }
  return notFound();
}

// u with noHeaders: a Table watch's objects after the first have no columns.
function noHeaders(u) {
  const v = new URL(u);
  v.searchParams.set('noHeaders', 'true');
  return v;
}

// The media types an answer's mode is written in.
const TYPES = { json: 'application/json', yaml: 'application/yaml', table: meta.TABLE,
  partial: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1', ...meta.DISCOVERY };

const sockets = new Set();
const api = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (d) => {
    size += d.length;
    if (size <= crdApi.LIMIT_BODY) chunks.push(d);
  });
  req.on('end', () => {
    const body = { data: Buffer.concat(chunks), big: size > crdApi.LIMIT_BODY };
    const go = () => {
      let r;
      try {
        r = answer(req, res, body);
      } catch (e) {
        if (!e.kind) throw e;
        r = [e.code, e];
      }
      console.log(`request method=${req.method} path=${req.url} code=${r ? r[0] : 200}`);
      if (!r) return; // a watch: it answers as it goes
      const yaml = r[2] === 'yaml';
      const type = r[1].kind === 'Status' && !yaml ? TYPES.json
        : r[1].kind === 'PartialObjectMetadata' ? TYPES.partial.replace('List;', ';') : TYPES[r[2] || 'json'];
      res.writeHead(r[0], { 'Content-Type': type });
      res.end(yaml ? YAML.stringify(r[1]) : JSON.stringify(r[1]));
    };
    if (slowMs) setTimeout(go, slowMs);
    else go();
  });
});
api.on('connection', (s) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
const listen = (then) => api.listen(Number(port), host, then);

// ---- the test's controls --------------------------------------------------

function control(req, body) {
  const u = new URL(req.url, 'http://control');
  const n = Number(u.searchParams.get('ms') || u.searchParams.get('down_ms') || 0);
  if (req.method === 'GET' && u.pathname === '/stats') {
    const openBy = {};
    for (const w of db.watches) if (w.coll === PODS) openBy[w.node] = (openBy[w.node] || 0) + 1;
    const collections = Object.fromEntries([PODS, EVENTS, CRDS, CRS].filter(Boolean)
      .map((c) => [c.name, { ...c.counts, objects: c.items.size, open: open(c),
        backlog: Math.max(0, ...[...db.watches].filter((w) => w.coll === c).map((w) => w.backlog())) }]));
    return { ...db.stats, openBy, churned, resourceVersion: String(db.rv), oldest: String(db.oldest), down, events: EVENTS.items.size,
      collections };
  }
  if (req.method === 'POST' && u.pathname === '/pods') {
    const pod = JSON.parse(body);
    return { resourceVersion: String(change(PODS, pods.has(pod.metadata.uid) ? 'MODIFIED' : 'ADDED', pod)) };
  }
  let m = /^\/pods\/([^/]+)$/.exec(u.pathname);
  if (req.method === 'DELETE' && m) {
    const pod = pods.get(m[1]);
    if (!pod) throw new Error(`no pod ${m[1]}`);
    if (u.searchParams.get('graceful') === '1') {
      const o = copy(pod);
      o.metadata.deletionTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      o.metadata.deletionGracePeriodSeconds = 30;
      return { resourceVersion: String(change(PODS, 'MODIFIED', o)) };
    }
    return { resourceVersion: String(change(PODS, 'DELETED', pod)) };
  }
  if (req.method !== 'POST') throw new Error(`${req.method} ${u.pathname}: no such control`);
  m = u.pathname;
  if (m === '/compact') {
    db.oldest = db.rv; // etcd keeps the current revision

    db.history.length = 0;
  } else if (m === '/tokens') {
    db.tokensExpire = u.searchParams.get('expire') === '1';
  } else if (m === '/expire') {
    for (const w of [...db.watches]) w.expire();
  } else if (m === '/close') {
    for (const w of [...db.watches]) w.end();
  } else if (m === '/cut') {
    for (const w of [...db.watches]) w.cut();
  } else if (m === '/fail') {
    const ra = u.searchParams.get('retry_after');
    failing = { code: Number(u.searchParams.get('code')), count: Number(u.searchParams.get('count') || 1),
      retryAfter: ra === null ? null : ra, path: u.searchParams.get('path') || '', message: u.searchParams.get('message') };
  } else if (m === '/restart') {
    down = true;
    api.close();
    for (const s of sockets) s.destroy();
    setTimeout(() => listen(() => {
      down = false;
      console.log(`listening port=${port}`);
    }), n);
  } else if (m === '/inject') {
    for (const w of db.watches) w.raw(body);
  } else if (m === '/churn') {
    const perTick = Number(u.searchParams.get('per_s') || 0) / 100;
    clearInterval(churn);
    let owed = 0;
    churn = perTick > 0 ? setInterval(() => {
      const all = [...pods.values()];
      for (owed += perTick; owed >= 1 && all.length; owed -= 1) {
        const p = copy(all[churned % all.length]);
        churned += 1;
        p.metadata.labels = { ...p.metadata.labels, churn: String(churned) };
        change(PODS, 'MODIFIED', p);
      }
    }, 10) : null;
  } else if (m === '/slow') {
    slowMs = n;
  } else if (m === '/pad') {
    const bytes = Number(u.searchParams.get('bytes') || 0);
    if (!bytes) db.padding = null;
    else if (u.searchParams.get('small') === '1') db.padding = new Array(Math.ceil(bytes / 2)).fill(0);
    else db.padding = Object.fromEntries(Array.from({ length: Math.ceil(bytes / 76) }, (_, i) => [`p${i}`, 'x'.repeat(64)]));
  } else if (m === '/bookmarks') {
    db.bookmarkMs = n;
    for (const w of db.watches) w.bookmarks();
  } else {
    throw new Error(`${m}: no such control`);
  }
  return { resourceVersion: String(db.rv) };
}

if (controlSocket) {
  http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      let code = 200;
      let out;
      try {
        out = control(req, body);
      } catch (e) {
        code = 400;
        out = { error: e.message };
      }
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(out));
    });
  }).listen(controlSocket);
}
listen(() => console.log(`listening port=${port}`));
