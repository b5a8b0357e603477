// SPDX-License-Identifier: Apache-2.0
// kubeevents.js - Events as kube-apiserver keeps them, for kubeapi.js: one
// store of core's Event (its storage version, v1), served as two versions,
// events.k8s.io/v1 and core v1, converted as the server converts them
// (note <-> message, regarding <-> involvedObject, reportingController <->
// reportingComponent, deprecatedSource <-> source, deprecatedFirstTimestamp,
// deprecatedLastTimestamp and deprecatedCount <-> firstTimestamp,
// lastTimestamp and count); each version's field selectors (core's
// ToSelectableFields, events.k8s.io's labels mapped onto them); create
// through either, decoded as the server decodes it (unknown fields a
// Warning, a MicroTime of exactly six decimals, a field of the wrong type
// 400) and judged as ValidateEventCreate judges it (the legacy rules for
// both, and for events.k8s.io/v1 ObjectMeta, eventTime, type, series and the
// deprecated fields unset): 422 Invalid, 409 AlreadyExists; get and delete;
// and the Table of the server's event printer. The store, lists and
// watches are kubeapi.js's, reached through store: { coll (items by
// namespace/name), write(type, obj) -> the object stored }.
'use strict';

const crypto = require('node:crypto');
const YAML = require('yaml');
const kubecrd = require('./kubecrd');
const { age } = require('./kubemeta');

const status = (code, reason, message, details) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message,
  reason, ...(details ? { details } : {}), code });
const fe = kubecrd.fieldError;

// The versions: their group and the fields of their Event, in Go's order
// (each: its type; a MicroTime, a Time, a string, an int32, an object
// reference, a struct).
const VERSIONS = {
  v1: { group: '', apiVersion: 'v1', fields: { involvedObject: 'ref', reason: 'string', message: 'string', source: 'source',
    firstTimestamp: 'time', lastTimestamp: 'time', count: 'int32', type: 'string', eventTime: 'microtime', series: 'series',
    action: 'string', related: 'ref', reportingComponent: 'string', reportingInstance: 'string' } },
  'events.k8s.io/v1': { group: 'events.k8s.io', apiVersion: 'events.k8s.io/v1', fields: { eventTime: 'microtime', series: 'series',
    reportingController: 'string', reportingInstance: 'string', action: 'string', reason: 'string', regarding: 'ref',
    related: 'ref', note: 'string', type: 'string', deprecatedSource: 'source', deprecatedFirstTimestamp: 'time',
    deprecatedLastTimestamp: 'time', deprecatedCount: 'int32' } },
};
const REF = ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'];
const STRUCTS = { ref: Object.fromEntries(REF.map((k) => [k, 'string'])), source: { component: 'string', host: 'string' },
  series: { count: 'int32', lastObservedTime: 'microtime' } };
// events.k8s.io/v1's names of core's fields.
const RENAMED = { regarding: 'involvedObject', note: 'message', reportingController: 'reportingComponent',
  deprecatedSource: 'source', deprecatedFirstTimestamp: 'firstTimestamp', deprecatedLastTimestamp: 'lastTimestamp',
  deprecatedCount: 'count' };
const CORE_NAME = Object.fromEntries(Object.entries(RENAMED).map(([a, b]) => [b, a]));

// ---- time -------------------------------------------------------------------

const MICRO = '2006-01-02T15:04:05.000000Z07:00';
const RFC3339 = '2006-01-02T15:04:05Z07:00';

// v parsed as Go's time.Parse(layout) would (MICRO or RFC3339): its
// milliseconds and the text Go writes again in UTC, or a thrown Go error.
function goTime(v, layout) {
  const micro = layout === MICRO;
  const steps = [['2006', /^\d{4}/], ['-', /^-/], ['01', /^\d\d/], ['-', /^-/], ['02', /^\d\d/], ['T', /^T/], ['15', /^\d\d/],
    [':', /^:/], ['04', /^\d\d/], [':', /^:/], ['05', /^\d\d/], ...(micro ? [['.000000', /^[.,]\d{6}/]] : [['', /^(?:[.,]\d+)?/]]),
    ['Z07:00', /^(?:Z|[+-]\d\d:\d\d)/]];
  let rest = v;
  const got = [];
  for (const [elem, re] of steps) {
    const m = re.exec(rest);
    if (!m) throw new Error(`parsing time ${JSON.stringify(v)} as ${JSON.stringify(layout)}: cannot parse ${JSON.stringify(rest)} as `
      + JSON.stringify(elem));
    got.push(m[0]);
    rest = rest.slice(m[0].length);
  }
  if (rest) throw new Error(`parsing time ${JSON.stringify(v)}: extra text: ${JSON.stringify(rest)}`);
  const [y, , mo, , d, , h, , mi, , s, frac, zone] = got;
  const range = (what) => new Error(`parsing time ${JSON.stringify(v)}: ${what} out of range`);
  if (+mo < 1 || +mo > 12) throw range('month');
  if (+d < 1 || +d > new Date(Date.UTC(+y, +mo, 0)).getUTCDate()) throw range('day');
  if (+h > 23) throw range('hour');
  if (+mi > 59) throw range('minute');
  if (+s > 59) throw range('second');
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}${zone}`);
  const us = frac ? frac.slice(1, 7).padEnd(6, '0') : '000000';
  const iso = new Date(ms).toISOString().slice(0, 19);
  return { ms: ms + Number(us) / 1000, text: micro ? `${iso}.${us}Z` : `${iso}Z` };
}

// ---- decoding ---------------------------------------------------------------

// A decode error, as the create handler says it (transformDecodeError):
// the kind and version decoded, Event and v1 in both groups.
const cannot = (why) => status(400, 'BadRequest', `Event in version "v1" cannot be handled as a Event: ${why}`);

// The JSON type Go's decoder names for v.
const jsonType = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v);

// A field's value v of type t, decoded (a time normalized), or a thrown
// 400; where: the Go struct field's name for the error (Event.note).
function decodeField(where, t, v) {
  const bad = (go) => cannot(`json: cannot unmarshal ${jsonType(v)} into Go struct field ${where} of type ${go}`);
  if (v === null) return undefined; // null is the zero value
  if (t === 'string') {
    if (typeof v !== 'string') throw bad('string');
    return v;
  }
  if (t === 'int32') {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) throw bad('int32');
    return v;
  }
  if (t === 'microtime' || t === 'time') {
    if (typeof v !== 'string') throw cannot(`json: cannot unmarshal ${jsonType(v)} into Go value of type string`);
    try {
      return goTime(v, t === 'microtime' ? MICRO : RFC3339).text;
    } catch (e) {
      throw cannot(e.message);
    }
  }
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw bad(`v1.${t === 'ref' ? 'ObjectReference' : t === 'source' ? 'EventSource' : 'EventSeries'}`);
  }
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    const kt = STRUCTS[t][k];
    if (kt === undefined) continue; // an unknown field: said by unknown()
    const d = decodeField(`${where}.${k}`, kt, x);
    if (d !== undefined) out[k] = d;
  }
  return out;
}

// The unknown fields of o in version: their paths.
function unknown(o, fields) {
  const out = [];
  for (const [k, v] of Object.entries(o)) {
    if (['kind', 'apiVersion', 'metadata'].includes(k)) continue;
    const t = fields[k];
    if (t === undefined) out.push(k);
    else if (STRUCTS[t] && v !== null && typeof v === 'object') {
      for (const x of Object.keys(v)) if (STRUCTS[t][x] === undefined) out.push(`${k}.${x}`);
    }
  }
  return out;
}

// o (an Event of version) as core's stored Event: fields decoded and renamed.
function toCore(o, version) {
  const { fields } = VERSIONS[version];
  const out = { kind: 'Event', apiVersion: 'v1', metadata: o.metadata };
  for (const [k, t] of Object.entries(fields)) {
    if (!Object.hasOwn(o, k)) continue;
    const d = decodeField(`Event.${k}`, t, o[k]);
    if (d !== undefined) out[version === 'v1' ? k : RENAMED[k] || k] = d;
  }
  return out;
}

// ---- the versions' views ----------------------------------------------------

// The stored e as version serves it: Go's fields in their order, each zero
// value as Go's encoder writes it (omitempty or not).
function view(e, version, withType = true) {
  const tm = withType ? { kind: 'Event', apiVersion: version } : {};
  const g = (k) => e[k];
  if (version === 'v1') {
    return { ...tm, metadata: e.metadata, involvedObject: g('involvedObject') || {}, ...(g('reason') ? { reason: g('reason') } : {}),
      ...(g('message') ? { message: g('message') } : {}), source: g('source') || {}, firstTimestamp: g('firstTimestamp') || null,
      lastTimestamp: g('lastTimestamp') || null, ...(g('count') ? { count: g('count') } : {}), ...(g('type') ? { type: g('type') } : {}),
      eventTime: g('eventTime') || null, ...(g('series') ? { series: g('series') } : {}), ...(g('action') ? { action: g('action') } : {}),
      ...(g('related') ? { related: g('related') } : {}), reportingComponent: g('reportingComponent') || '',
      reportingInstance: g('reportingInstance') || '' };
  }
  const opt = (k, name = k) => (g(k) ? { [CORE_NAME[k] || name]: g(k) } : {});
  return { ...tm, metadata: e.metadata, eventTime: g('eventTime') || null, ...opt('series'), ...opt('reportingComponent'),
    ...opt('reportingInstance'), ...opt('action'), ...opt('reason'), regarding: g('involvedObject') || {}, ...opt('related'),
    ...opt('message'), ...opt('type'), deprecatedSource: g('source') || {}, deprecatedFirstTimestamp: g('firstTimestamp') || null,
    deprecatedLastTimestamp: g('lastTimestamp') || null, ...opt('count') };
}

// The fields a selector may name, by version: core's (ToSelectableFields,
// of the stored Event), and events.k8s.io's labels for them.
const ref = (k) => (e) => String((e.involvedObject || {})[k] || '');
const CORE_FIELDS = {
  'metadata.name': (e) => e.metadata.name, 'metadata.namespace': (e) => e.metadata.namespace,
  ...Object.fromEntries(REF.map((k) => [`involvedObject.${k}`, ref(k)])),
  reason: (e) => e.reason || '', reportingComponent: (e) => e.reportingComponent || '',
  source: (e) => (e.source || {}).component || e.reportingComponent || '', type: (e) => e.type || '',
};
const FIELDS = {
  v1: CORE_FIELDS,
  'events.k8s.io/v1': { reason: CORE_FIELDS.reason, ...Object.fromEntries(REF.map((k) => [`regarding.${k}`, ref(k)])),
    reportingController: CORE_FIELDS.reportingComponent, source: CORE_FIELDS.source, type: CORE_FIELDS.type,
    'metadata.namespace': CORE_FIELDS['metadata.namespace'], 'metadata.name': CORE_FIELDS['metadata.name'] },
};

// ---- validation -------------------------------------------------------------

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_MSG = 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must '
  + 'start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is '
  + '\'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')';
const QNAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const QNAME_MSG = 'must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end with an alphanumeric '
  + 'character (e.g. \'MyName\',  or \'my.name\',  or \'123-abc\', regex used for validation is '
  + '\'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\')';

// validation.IsDNS1123Subdomain's messages.
function dnsSubdomain(v) {
  const out = [];
  if (v.length > 253) out.push('must be no more than 253 characters');
  if (!DNS1123.test(v)) out.push(DNS1123_MSG);
  return out;
}

// validation.IsQualifiedName's messages.
function qualifiedName(v) {
  const parts = v.split('/');
  const out = [];
  if (parts.length > 2) {
    return [`a qualified name ${QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  const name = parts.at(-1);
  if (parts.length === 2) {
    if (!parts[0]) out.push('prefix part must be non-empty');
    else out.push(...dnsSubdomain(parts[0]).map((m) => `prefix part ${m}`));
  }
  if (!name) out.push('name part must be non-empty');
  else if (name.length > 63) out.push('name part must be no more than 63 characters');
  if (!QNAME.test(name)) out.push(`name part ${QNAME_MSG}`);
  return out;
}

// legacyValidateEvent, then (events.k8s.io/v1) the strict rules.
function validate(e, version) {
  const errs = [];
  const io = e.involvedObject || {};
  const m = e.metadata;
  const len = (k) => Buffer.byteLength(e[k] || ''); // Go's len: bytes
  if (!e.eventTime) {
    if (!io.namespace ? m.namespace && m.namespace !== 'default' : m.namespace !== io.namespace) {
      errs.push(fe('FieldValueInvalid', 'involvedObject.namespace', io.namespace || '', 'does not match event.namespace'));
    }
  } else {
    if (!io.namespace && m.namespace !== 'default' && m.namespace !== 'kube-system') {
      errs.push(fe('FieldValueInvalid', 'involvedObject.namespace', io.namespace || '', 'does not match event.namespace'));
    }
    const rc = e.reportingComponent || '';
    if (!rc) errs.push(fe('FieldValueRequired', 'reportingController', ''));
    for (const msg of qualifiedName(rc)) errs.push(fe('FieldValueInvalid', 'reportingController', rc, msg));
    for (const [k, limit] of [['reportingInstance', 128], ['action', 128], ['reason', 128]]) {
      if (!len(k)) errs.push(fe('FieldValueRequired', k, ''));
      if (len(k) > limit) errs.push(fe('FieldValueInvalid', k, '', `can have at most ${limit} characters`));
    }
    if (len('message') > 1024) errs.push(fe('FieldValueInvalid', 'message', '', 'can have at most 1024 characters'));
  }
  for (const msg of dnsSubdomain(m.namespace || '')) errs.push(fe('FieldValueInvalid', 'namespace', m.namespace || '', msg));
  if (version === 'v1') return errs;
  if (!m.name) errs.push(fe('FieldValueRequired', 'metadata.name', '', 'name or generateName is required'));
  else for (const msg of dnsSubdomain(m.name)) errs.push(fe('FieldValueInvalid', 'metadata.name', m.name, msg));
  if (e.series) {
    if (!(e.series.count >= 2)) errs.push(fe('FieldValueInvalid', 'series.count', '', 'should be at least 2'));
    if (!e.series.lastObservedTime) errs.push(fe('FieldValueRequired', 'series.lastObservedTime', ''));
  }
  if (!e.eventTime) errs.push(fe('FieldValueRequired', 'eventTime', ''));
  if (e.type !== 'Normal' && e.type !== 'Warning') errs.push(fe('FieldValueInvalid', 'type', '', `has invalid value: ${e.type || ''}`));
  for (const k of ['firstTimestamp', 'lastTimestamp', 'count']) if (e[k]) errs.push(fe('FieldValueInvalid', k, '', 'needs to be unset'));
  if (e.source && (e.source.component || e.source.host)) errs.push(fe('FieldValueInvalid', 'source', '', 'needs to be unset'));
  return errs;
}

// ValidateObjectMetaAccessor's name rule (path.ValidatePathSegmentName).
function pathSegment(name) {
  if (!name) return [fe('FieldValueRequired', 'metadata.name', '', 'name or generateName is required')];
  if (name === '.' || name === '..') return [fe('FieldValueInvalid', 'metadata.name', name, `may not be '${name}'`)];
  return ['/', '%'].filter((c) => name.includes(c)).map((c) => fe('FieldValueInvalid', 'metadata.name', name, `may not contain '${c}'`));
}

// ---- the Table --------------------------------------------------------------

// The event printer's columns (printers.go) and cells: Last Seen, Type,
// Reason, Object, Message, and the wide ones (the server makes them all).
const DOC = {
  lastTimestamp: 'The time at which the most recent occurrence of this event was recorded.',
  type: 'Type of this event (Normal, Warning), new types could be added in the future',
  reason: 'This should be a short, machine understandable string that gives the reason for the transition into the object\'s '
    + 'current status.',
  involvedObject: 'The object that this event is about.',
  fieldPath: 'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go '
    + 'field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a '
    + 'container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of '
    + 'the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with '
    + 'index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
  source: 'The component reporting this event. Should be a short machine understandable string.',
  message: 'A human-readable description of the status of this operation.',
  firstTimestamp: 'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)',
  count: 'The number of times this event has occurred.',
};
const column = (name, doc, priority = 0, format = '') => ({ name, type: 'string', format, description: doc, priority });
function tableOf(nameDoc) { // the Name column's description: ObjectMeta's
  return {
    columns: [column('Last Seen', DOC.lastTimestamp), column('Type', DOC.type), column('Reason', DOC.reason),
      column('Object', DOC.involvedObject), column('Subobject', DOC.fieldPath, 1), column('Source', DOC.source, 1),
      column('Message', DOC.message), column('First Seen', DOC.firstTimestamp, 1), column('Count', DOC.count, 1),
      column('Name', nameDoc, 1, 'name')],
    // A row of an Event of either version, as printEvent makes it (Wide).
    cells(o) {
      const e = Object.hasOwn(o, 'regarding') ? toCoreView(o) : o;
      const first = e.firstTimestamp ? age(e.firstTimestamp) : age(e.eventTime);
      let last = e.lastTimestamp ? age(e.lastTimestamp) : first;
      let count = e.count || 1;
      if (e.series) {
        last = age(e.series.lastObservedTime);
        count = e.series.count;
      }
      const io = e.involvedObject || {};
      const target = io.name ? `${(io.kind || '').toLowerCase()}/${io.name}` : (io.kind || '').toLowerCase();
      const src = e.source || {};
      const component = src.component || e.reportingComponent || '';
      const instance = src.host || e.reportingInstance || '';
      return [last, e.type || '', e.reason || '', target, io.fieldPath || '', instance ? `${component}, ${instance}` : component,
        (e.message || '').trim(), first, count, e.metadata.name];
    },
  };
}

// An events.k8s.io/v1 view turned back into core's names.
function toCoreView(o) {
  const out = { metadata: o.metadata };
  for (const [k, v] of Object.entries(o)) if (k !== 'metadata') out[RENAMED[k] || k] = v;
  return out;
}

// ---- the endpoints ----------------------------------------------------------

// The Event endpoints over store, each answering [code, object] in the
// request's version ('v1' or 'events.k8s.io/v1'): create(req, u, version,
// ns, text, res), get(version, ns, name), remove(version, ns, name).
// nowSec() -> a timestamp; manager(req, u) -> a write's field manager.
function events(store, { nowSec, manager }) {
  const resource = (version) => (version === 'v1' ? 'events' : 'events.events.k8s.io');
  const details = (version, name) => ({ name, ...(version === 'v1' ? {} : { group: 'events.k8s.io' }), kind: 'events' });
  const notFound = (version, name) => status(404, 'NotFound', `${resource(version)} "${name}" not found`, details(version, name));

  function decode(req, version, text) {
    const type = (req.headers['content-type'] || 'application/json').split(';')[0].trim().toLowerCase();
    if (type !== 'application/json' && type !== 'application/yaml') {
      throw status(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: '
        + 'application/json, application/yaml, application/vnd.kubernetes.protobuf');
    }
    let o;
    try {
      o = type === 'application/json' ? JSON.parse(text) : YAML.parse(text);
    } catch (e) {
      throw status(400, 'BadRequest', type === 'application/json' ? `couldn't get version/kind; json parse error: ${e.message}`
        : `error converting YAML to JSON: ${e.message}`);
    }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw status(400, 'BadRequest', `Object 'Kind' is missing in '${text}'`);
    if (o.apiVersion === undefined) o.apiVersion = version;
    if (o.kind === undefined) o.kind = 'Event';
    if (o.apiVersion !== version) {
      throw status(400, 'BadRequest', `the API version in the data (${o.apiVersion}) does not match the expected API version (${version})`);
    }
    if (o.kind !== 'Event') throw cannot(`no kind "${o.kind}" is registered for version "${version}"`);
    if (o.metadata === undefined || o.metadata === null) o.metadata = {};
    if (typeof o.metadata !== 'object' || Array.isArray(o.metadata)) {
      throw cannot(`json: cannot unmarshal ${jsonType(o.metadata)} into Go struct field Event.metadata of type v1.ObjectMeta`);
    }
    return o;
  }

  function create(req, u, version, ns, text, res) {
    const q = u.searchParams;
    const fv = q.get('fieldValidation') || 'Warn';
    const o = decode(req, version, text);
    const extra = unknown(o, VERSIONS[version].fields).map((p) => `unknown field "${p}"`);
    if (extra.length && fv === 'Strict') throw status(400, 'BadRequest', `strict decoding error: ${extra.join(', ')}`);
    if (extra.length && fv !== 'Ignore') res.setHeader('Warning', extra.map((w) => `299 - ${JSON.stringify(w)}`));
    const e = toCore(o, version);
    const m = { ...o.metadata };
    delete m.resourceVersion; // (the registry refuses one below, after validation)
    if (m.namespace && m.namespace !== ns) {
      throw status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    m.namespace = ns;
    if (!m.name && m.generateName) {
      m.name = m.generateName.slice(0, 58) + Array.from({ length: 5 }, () => 'bcdfghjklmnpqrstvwxz2456789'[crypto.randomInt(27)]).join('');
    }
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.generation;
    m.uid = crypto.randomUUID();
    m.creationTimestamp = nowSec();
    e.metadata = m;
    let errs = validate(e, version);
    if (!errs.length) errs = pathSegment(m.name);
    if (errs.length) throw kubecrd.invalid('Event', '', m.name, errs);
    if (o.metadata.resourceVersion) throw status(500, undefined, 'resourceVersion should not be set on objects to be created');
    if (store.coll.items.has(`${ns}/${m.name}`)) {
      throw status(409, 'AlreadyExists', `${resource(version)} "${m.name}" already exists`, details(version, m.name));
    }
    m.managedFields = [managed(e, version, manager(req, u))];
    if (q.getAll('dryRun').length) return [201, view(e, version)];
    return [201, view(store.write('ADDED', e), version)];
  }

  // What the creator set, as an Update's managedFields entry: each field
  // (an ObjectReference is atomic, a series' fields each), labels and
  // annotations by key.
  function managed(e, version, who) {
    const set = {};
    const v = view(e, version, false);
    for (const [k, x] of Object.entries(v)) {
      if (k === 'metadata' || x === null || x === '' || (typeof x === 'object' && !Object.keys(x).length)) continue;
      set[`f:${k}`] = k === 'series' ? Object.fromEntries(Object.keys(x).map((s) => [`f:${s}`, {}])) : {};
    }
    for (const k of ['labels', 'annotations']) {
      if (!e.metadata[k]) continue;
      set['f:metadata'] = { ...set['f:metadata'], [`f:${k}`]: Object.fromEntries(Object.keys(e.metadata[k]).map((x) => [`f:${x}`, {}])) };
    }
    const sorted = Object.fromEntries(Object.keys(set).sort().map((k) => [k, set[k]]));
    return { manager: who, operation: 'Update', apiVersion: version, time: nowSec(), fieldsType: 'FieldsV1', fieldsV1: sorted };
  }

  function get(version, ns, name) {
    const e = store.coll.items.get(`${ns}/${name}`);
    return e ? [200, view(e, version)] : [404, notFound(version, name)];
  }

  // A deletion's answer: the Status the registry gives when it does not
  // return the object.
  function remove(version, ns, name) {
    const e = store.coll.items.get(`${ns}/${name}`);
    if (!e) return [404, notFound(version, name)];
    store.write('DELETED', e);
    return [200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success',
      details: { ...details(version, name), uid: e.metadata.uid } }];
  }

  return { create, get, remove };
}

module.exports = { events, view, FIELDS, table: tableOf, goTime, MICRO, validate, qualifiedName };
