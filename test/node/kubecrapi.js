// SPDX-License-Identifier: Apache-2.0
// kubecrapi.js - a custom resource's endpoints as kube-apiserver serves
// them, for kubeapi.js: get, create, update, patch (JSON, merge, apply),
// delete and deletecollection, of the object and of its status
// subresource, namespaced or cluster-scoped, with the API server's answers
// and Status errors; and the server's own writes (make, change: its
// controllers', an object there from the start). It owns the REST
// semantics (media types, options, preconditions, the registry's create
// and update steps, the size limits); the resource (kubecrd.js's load of a
// CRD, or kubecrds.js's CustomResourceDefinitions) judges the objects and
// may prepare them (defaults, a status to start with), kubessa.js keeps
// managedFields, and the store, lists and watches are kubeapi.js's,
// reached through store: { coll (items by [namespace]/name), write(type,
// obj) -> the object stored, list(u, ns), watch(u, res, ns), select(u,
// ns) -> the objects a query's selectors keep, rv() }. Discovery is
// kubemeta.js's, of the resource as described here.
'use strict';

const crypto = require('node:crypto');
const YAML = require('yaml');
const kubecrd = require('./kubecrd');
const { tracker, typeErrors } = require('./kubessa');

const status = (code, reason, message, details) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message,
  reason, ...(details ? { details } : {}), code });
const copy = (o) => JSON.parse(JSON.stringify(o));
// The store's key of an object, or of a namespace (null: cluster-scoped) and name.
const keyFor = (ns, name) => `${ns || ''}/${name}`;
const keyOf = (o) => keyFor(o.metadata.namespace, o.metadata.name);
// o with every object's keys sorted, as Go encodes the unstructured map a
// custom resource is (so payload.json comes back with its keys sorted too).
const sortKeys = (o) => (Array.isArray(o) ? o.map(sortKeys) : o !== null && typeof o === 'object'
  ? Object.fromEntries(Object.keys(o).sort().map((k) => [k, sortKeys(o[k])])) : o);

// The endpoints of crd (kubecrd.load's) over store: route(pathname) ->
// null (not the CRD's group), { bad } or { ns, name, sub }, and
// answer(req, res, u, route, body) -> [code, object] (null: a watch,
// answering as it goes); body: { data (a Buffer), big (past the limit) }.
function endpoints(crd, store) {
  const ssa = tracker(crd);
  const LIMIT_BODY = 3 * 1024 * 1024; // the API server's MaxRequestBodyBytes
  // etcd's --max-request-bytes (1.5 MiB by default) bounds the whole put
  // request: the object (a CR is stored as JSON) and, in the transaction
  // the API server sends, its key three times and some framing. Past it etcd
  // answers "etcdserver: request is too large", which the API server does not
  // map to a Status (kubernetes#74600, #112152, open): it reaches the client
  // as 500 with that message and no reason, as every error that is not a
  // Status does (responsewriters.ErrorToAPIStatus).
  const LIMIT_ETCD = 1.5 * 1024 * 1024;
  const BODY_TYPES = ['application/json', 'application/yaml'];
  const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
  const resource = `${crd.plural}.${crd.group}`;
  const details = (name) => ({ name, group: crd.group, kind: crd.plural });
  const notFound = (name) => status(404, 'NotFound', `${resource} "${name}" not found`, details(name));
  const stale = (name) => status(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": the object has been `
    + 'modified; please apply your changes to the latest version and try again', details(name));
  const badRequest = (message) => status(400, 'BadRequest', message);
  const fe = kubecrd.fieldError;
  const nowSec = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const truthy = (v) => ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v);

  // The media type of req's body, refused (415) unless one of types; a
  // create or update that says none is JSON, a patch must say.
  function mediaType(req, types) {
    const t = (req.headers['content-type'] || '').split(';')[0].trim().toLowerCase() || (types === BODY_TYPES ? types[0] : '');
    if (!types.includes(t)) {
      throw status(415, 'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: ${types.join(', ')}`);
    }
    return t;
  }

  // The body, refused (413) past the API server's limit.
  function sized(body) {
    if (body.big) throw status(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${LIMIT_BODY}`);
    return body.data.toString('utf8');
  }

  // The query's options (KIND: CreateOptions, UpdateOptions, PatchOptions,
  // DeleteOptions), judged as ValidateKINDOptions does: the manager
  // (fieldManager, else the User-Agent's first word), dry run, field
  // validation, force.
  function options(req, u, kind, apply = false) {
    const q = u.searchParams;
    const errs = [];
    const fm = q.get('fieldManager') || '';
    if (kind === 'PatchOptions' && apply && !fm) errs.push(fe('FieldValueRequired', 'fieldManager', '', 'is required for apply patch'));
    if (kind === 'PatchOptions' && !apply && q.has('force')) {
      errs.push(fe('FieldValueForbidden', 'force', '', 'may not be specified for non-apply patch'));
    }
    if ([...fm].length > 128) errs.push(fe('FieldValueTooLong', 'fieldManager', fm, 'may not be more than 128 bytes'));
    const dry = q.getAll('dryRun');
    if (dry.some((d) => d !== 'All')) errs.push(fe('FieldValueNotSupported', 'dryRun', dry, 'supported values: "All"'));
    const fv = q.get('fieldValidation') || '';
    if (fv && !['Ignore', 'Warn', 'Strict'].includes(fv)) {
      errs.push(fe('FieldValueNotSupported', 'fieldValidation', fv, 'supported values: "Ignore", "Strict", "Warn"'));
    }
    if (errs.length) throw kubecrd.invalid(`${kind}.meta.k8s.io`, 'meta.k8s.io', '', errs);
    const ua = [...(req.headers['user-agent'] || '').split('/')[0]].filter((c) => c >= ' ' && c !== '\x7f').join('').slice(0, 128);
    return { manager: fm || ua, dryRun: dry.length > 0, validation: fv || 'Warn', force: truthy(q.get('force')) };
  }

  // A create's or update's object: JSON or YAML, kind and apiVersion
  // defaulted from the URL as the decoder does, the apiVersion the URL's.
  function decode(type, text) {
    let o;
    try {
      o = type === 'application/json' ? JSON.parse(text) : YAML.parse(text);
    } catch (e) {
      throw badRequest(type === 'application/json' ? `couldn't get version/kind; json parse error: ${e.message}`
        : `error converting YAML to JSON: ${e.message}`);
    }
    return typeMeta(o);
  }

  function typeMeta(o) {
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(o)}'`);
    if (o.apiVersion === undefined) o.apiVersion = crd.apiVersion;
    if (o.kind === undefined) o.kind = crd.kind;
    if (o.apiVersion !== crd.apiVersion) {
      throw badRequest(`the API version in the data (${o.apiVersion}) does not match the expected API version (${crd.apiVersion})`);
    }
    if (o.metadata === undefined || o.metadata === null) o.metadata = {};
    if (typeof o.metadata !== 'object' || Array.isArray(o.metadata)) throw badRequest('metadata: expected an object');
    return o;
  }

  // obj pruned; its unknown fields said as fieldValidation asks: warnings
  // (Warn, the default), a 400 (Strict) or nothing (Ignore).
  function prune(obj, o, res) {
    const unknown = crd.prune(obj).map((p) => `unknown field "${p}"`);
    if (!unknown.length || o.validation === 'Ignore') return;
    if (o.validation === 'Strict') throw badRequest(`strict decoding error: ${unknown.join(', ')}`);
    res.setHeader('Warning', [...[res.getHeader('Warning') || []].flat(), ...unknown.map((w) => `299 - ${JSON.stringify(w)}`)]);
  }

  function judge(obj, old) {
    const errs = crd.validate(obj, old);
    if (errs.length) throw crd.invalid(obj.metadata.name, errs);
  }

  // next stored in place of live (null: a new object), as the registry
  // does: nothing written when nothing changed; an object being deleted
  // whose last finalizer went is deleted; past etcd's limit, refused. What
  // is stored, or would be (dry run).
  function commit(live, next, dryRun) {
    const m = next.metadata;
    if (live && kubecrd.deepEqual({ ...next, metadata: { ...m, resourceVersion: live.metadata.resourceVersion } }, live)) {
      return live; // as etcd3's GuaranteedUpdate: the same bytes are not written again
    }
    const k = `/registry/${crd.group}/${crd.plural}/${keyOf(next)}`;
    if (Buffer.byteLength(JSON.stringify(next)) + 3 * Buffer.byteLength(k) + 64 > LIMIT_ETCD) {
      throw status(500, undefined, 'etcdserver: request is too large');
    }
    if (!live && store.coll.items.has(keyOf(next))) {
      throw status(409, 'AlreadyExists', `${resource} "${m.name}" already exists`, details(m.name));
    }
    if (dryRun) return sortKeys(next);
    const gone = live && m.deletionTimestamp && !(m.finalizers || []).length;
    m.resourceVersion = ''; // the store's to set; here for its place in the sorted keys
    return store.write(gone ? 'DELETED' : live ? 'MODIFIED' : 'ADDED', sortKeys(next));
  }

  // A new object (a create's, an apply's that finds none) as
  // rest.BeforeCreate and the strategy make it, judged and stored.
  function born(obj, o) {
    const m = obj.metadata;
    if (crd.status) delete obj.status; // a create cannot set status
    if (crd.prepare) crd.prepare(obj, null);
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    m.generation = 1;
    m.uid = crypto.randomUUID();
    m.creationTimestamp = nowSec();
    if (!m.name && m.generateName) {
      m.name = m.generateName.slice(0, 58) + Array.from({ length: 5 }, () => 'bcdfghjklmnpqrstvwxz2456789'[crypto.randomInt(27)]).join('');
    }
    judge(obj, null);
    if (m.resourceVersion) throw status(500, undefined, 'resourceVersion should not be set on objects to be created');
    return commit(null, obj, o.dryRun);
  }

  // next written through sub ('' or 'status') over live, as the strategy
  // (PrepareForUpdate) and rest.BeforeUpdate make it: through the object,
  // status stays as it was, and generation goes up when anything but
  // metadata changed; through status, only status changes. manage: a
  // write that is not an apply, whose manager takes what it changed, as
  // prepared (what the strategy reset is no one's, as WipeManagedFields
  // has it). Judged and stored.
  function save(live, next, sub, o, manage = false) {
    const lm = live.metadata;
    if (!next.metadata.resourceVersion) { // custom resources allow no unconditional update
      throw kubecrd.invalid(resource, crd.group, lm.name,
        [fe('FieldValueInvalid', 'metadata.resourceVersion', new kubecrd.Go('0x0'), 'must be specified for an update')]);
    }
    if (next.metadata.resourceVersion !== lm.resourceVersion) throw stale(lm.name);
    let obj = next;
    if (sub === 'status') {
      obj = copy(live);
      if (next.status !== undefined) obj.status = next.status;
      else delete obj.status;
      obj.metadata.managedFields = next.metadata.managedFields;
    } else if (crd.status) {
      if (live.status !== undefined) obj.status = live.status;
      else delete obj.status;
    }
    if (sub !== 'status' && crd.prepare) crd.prepare(obj, live);
    const m = obj.metadata;
    const { metadata: a, ...after } = obj;
    const { metadata: b, ...before } = live;
    m.generation = lm.generation + (sub !== 'status' && !kubecrd.deepEqual(after, before) ? 1 : 0);
    if (!m.uid) m.uid = lm.uid;
    m.creationTimestamp = lm.creationTimestamp;
    for (const f of ['deletionTimestamp', 'deletionGracePeriodSeconds']) {
      if (lm[f] !== undefined) m[f] = lm[f];
      else delete m[f];
    }
    if (manage) m.managedFields = ssa.update(live, obj, { manager: o.manager, sub, given: sub ? null : next.metadata.managedFields });
    judge(obj, live);
    return commit(live, obj, o.dryRun);
  }

  function create(req, u, ns, body, res) {
    const type = mediaType(req, BODY_TYPES);
    const text = sized(body);
    const o = options(req, u, 'CreateOptions');
    const obj = decode(type, text);
    if (crd.namespaced && obj.metadata.namespace && obj.metadata.namespace !== ns) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    prune(obj, o, res);
    if (crd.namespaced) obj.metadata.namespace = ns;
    else delete obj.metadata.namespace; // as rest.BeforeCreate clears a cluster-scoped object's
    obj.metadata.managedFields = ssa.update(null, obj, { manager: o.manager, given: obj.metadata.managedFields });
    return [201, born(obj, o)];
  }

  // The patched or given object's name and namespace, the URL's (checkName);
  // a cluster-scoped object's namespace cleared (rest.BeforeUpdate).
  function named(obj, ns, name) {
    const m = obj.metadata;
    if (m.name !== name) throw badRequest(`the name of the object (${m.name || ''}) does not match the name on the URL (${name})`);
    if (!crd.namespaced) {
      delete m.namespace;
      return;
    }
    if (m.namespace && m.namespace !== ns) {
      throw badRequest(`the namespace of the object (${m.namespace}) does not match the namespace on the request (${ns})`);
    }
    m.namespace = ns;
  }

  function update(req, u, ns, name, sub, body, res) {
    const type = mediaType(req, BODY_TYPES);
    const text = sized(body);
    const o = options(req, u, 'UpdateOptions');
    const obj = decode(type, text);
    named(obj, ns, name);
    prune(obj, o, res);
    const live = store.coll.items.get(keyFor(ns, name));
    if (!live) throw notFound(name); // custom resources are not created by an update
    return [200, save(live, obj, sub, o, true)];
  }

  // The group/version, kind of an object, as GroupVersionKind.String().
  function gvk(o) {
    const v = typeof o.apiVersion === 'string' ? o.apiVersion : '';
    const [g, ver] = v.includes('/') ? v.split('/') : ['', v];
    return `${g}/${ver}, Kind=${typeof o.kind === 'string' ? o.kind : ''}`;
  }

  // Server-side apply of text by o.manager through sub: the object made or
  // changed (201 when made).
  function apply(text, o, live, ns, name, sub, res) {
    if (!live && sub) throw notFound(name);
    let config;
    try {
      config = YAML.parse(text);
    } catch (e) {
      throw badRequest(`error decoding YAML: ${e.message}`);
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config)) {
      throw badRequest('error decoding YAML: error unmarshaling JSON: json: cannot unmarshal into Go value of type '
        + 'map[string]interface {}');
    }
    if (gvk(config) !== `${crd.apiVersion}, Kind=${crd.kind}`) throw badRequest(`invalid object type: ${gvk(config)}`);
    const meta = typeof config.metadata === 'object' && config.metadata !== null ? config.metadata : {};
    if (meta.managedFields !== undefined) throw badRequest('metadata.managedFields must be nil');
    const bad = typeErrors(config, crd.schema);
    if (bad.length) {
      throw status(500, undefined, `failed to create typed patch object (${meta.namespace || ''}/${meta.name || ''}; `
        + `${crd.apiVersion}, Kind=${crd.kind}): ${bad.join('\n')}`);
    }
    const next = ssa.apply(live, config, { manager: o.manager, sub, force: o.force, name, namespace: ns });
    typeMeta(next);
    named(next, ns, name);
    prune(next, { validation: 'Ignore' }, res); // nulls
    if (!live) return [201, born(next, o)];
    return [200, save(live, next, sub, o)];
  }

  function patch(req, u, ns, name, sub, body, res) {
    const type = mediaType(req, PATCH_TYPES);
    const text = sized(body);
    const o = options(req, u, 'PatchOptions', type === 'application/apply-patch+yaml');
    const live = store.coll.items.get(keyFor(ns, name)) || null;
    if (type === 'application/apply-patch+yaml') return apply(text, o, live, ns, name, sub, res);
    if (!live) throw notFound(name);
    let patched;
    if (type === 'application/merge-patch+json') {
      let p;
      try {
        p = JSON.parse(text);
      } catch {
        throw badRequest('Invalid JSON Patch');
      }
      patched = kubecrd.mergePatch(live, p);
    } else {
      let ops;
      try {
        ops = JSON.parse(text);
      } catch (e) {
        throw badRequest(e.message);
      }
      if (!Array.isArray(ops)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
      try {
        patched = kubecrd.jsonPatch(live, ops);
      } catch (e) {
        throw status(422, 'Invalid', e.message);
      }
    }
    typeMeta(patched);
    named(patched, ns, name);
    prune(patched, o, res);
    return [200, save(live, patched, sub, o, true)];
  }

  // The deletion of live (with DeleteOptions opts): gone at once, or, with
  // finalizers, marked (deletionTimestamp) until the last goes.
  function drop(live, opts, dryRun) {
    const pre = opts.preconditions || {};
    const name = live.metadata.name;
    const failed = (what, want, have) => status(409, 'Conflict', `Operation cannot be fulfilled on ${resource} "${name}": `
      + `Precondition failed: ${what} in precondition: ${want}, ${what} in object meta: ${have}`, details(name));
    if (pre.uid && pre.uid !== live.metadata.uid) throw failed('UID', pre.uid, live.metadata.uid);
    if (pre.resourceVersion && pre.resourceVersion !== live.metadata.resourceVersion) {
      throw failed('ResourceVersion', pre.resourceVersion, live.metadata.resourceVersion);
    }
    if ((live.metadata.finalizers || []).length) {
      if (live.metadata.deletionTimestamp) return live;
      const next = copy(live);
      next.metadata.deletionTimestamp = nowSec();
      next.metadata.deletionGracePeriodSeconds = 0;
      next.metadata.generation += 1;
      return commit(live, next, dryRun);
    }
    if (dryRun) return live;
    return store.write('DELETED', live);
  }

  function remove(req, u, ns, name, body) {
    const text = sized(body);
    const o = options(req, u, 'DeleteOptions');
    let opts = {};
    try {
      if (text.trim()) opts = JSON.parse(text);
    } catch (e) {
      throw badRequest(`couldn't get version/kind; json parse error: ${e.message}`);
    }
    const live = name === null ? null : store.coll.items.get(keyFor(ns, name));
    if (name !== null && !live) throw notFound(name);
    if (live) return [200, drop(live, opts, o.dryRun)];
    const items = store.select(u, ns).map((p) => drop(p, opts, o.dryRun)); // deletecollection: each one selected
    return [200, { kind: crd.listKind, apiVersion: crd.apiVersion, metadata: { resourceVersion: store.rv() }, items }];
  }

  // The resource as discovery describes it (kubemeta.js): the CRD
  // handler's verbs, and its status subresource's.
  const described = { name: crd.plural, singular: crd.singular, kind: crd.kind, namespaced: crd.namespaced,
    verbs: ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'],
    shortNames: crd.shortNames, categories: crd.categories, hash: crd.hash,
    subresources: crd.status ? [{ name: 'status', verbs: ['get', 'patch', 'update'] }] : [] };

  // The resource's paths: /apis/GROUP/VERSION/[namespaces/NS/]PLURAL
  // [/NAME[/status]] (a namespace for a namespaced resource's object, none
  // for a cluster-scoped one's); under /apis/GROUP/, anything else is bad
  // (404).
  const crPath = new RegExp(`^/apis/${crd.group.replace(/\./g, '\\.')}/${crd.version}/(?:namespaces/([^/]+)/)?${crd.plural}`
    + '(?:/([^/]+)(?:/(status))?)?$');
  function crRoute(pathname) {
    if (!pathname.startsWith(`/apis/${crd.group}/`)) return null;
    const m = crPath.exec(pathname);
    if (!m || (crd.namespaced && m[1] === undefined && m[2] !== undefined) || (!crd.namespaced && m[1] !== undefined)
      || (m[3] && !crd.status)) return { bad: true };
    try {
      return { ns: m[1] === undefined ? null : decodeURIComponent(m[1]), name: m[2] === undefined ? null : decodeURIComponent(m[2]),
        sub: m[3] || '' };
    } catch {
      return { bad: true }; // a malformed escape
    }
  }

  function crAnswer(req, res, u, { bad, ns, name, sub }, body) {
    const not = [405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {})];
    if (bad) return [404, status(404, 'NotFound', 'the server could not find the requested resource')];
    const m = req.method;
    const whole = ns !== null || !crd.namespaced; // a namespace's collection, or a cluster-scoped one
    if (name === null) {
      if (m === 'GET') {
        const w = u.searchParams.get('watch');
        return w === '1' || w === 'true' ? store.watch(u, res, ns) : store.list(u, ns);
      }
      if (m === 'POST' && whole) return create(req, u, ns, body, res);
      if (m === 'DELETE' && whole) return remove(req, u, ns, null, body);
      return not;
    }
    if (m === 'GET') {
      const o = store.coll.items.get(keyFor(ns, name));
      return o ? [200, o] : [404, notFound(name)];
    }
    if (m === 'PUT') return update(req, u, ns, name, sub, body, res);
    if (m === 'PATCH') return patch(req, u, ns, name, sub, body, res);
    if (m === 'DELETE' && !sub) return remove(req, u, ns, name, body);
    return not;
  }

  // The server's own writes (its controllers', a resource there from the
  // start): make(obj, manager) creates obj; change(ns, name, sub, fn,
  // manager) writes fn's change of a copy of the object through sub.
  const own = (manager) => ({ manager, dryRun: false, validation: 'Ignore', force: false });
  function make(obj, manager) {
    obj.metadata.managedFields = ssa.update(null, obj, { manager });
    return born(obj, own(manager));
  }
  function change(ns, name, sub, fn, manager) {
    const live = store.coll.items.get(keyFor(ns, name));
    if (!live) return null;
    const next = copy(live);
    fn(next);
    return save(live, next, sub, own(manager), true);
  }

  return { route: crRoute, answer: crAnswer, LIMIT_BODY, described, make, change };
}

module.exports = { endpoints };
