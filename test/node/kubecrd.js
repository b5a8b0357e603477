// SPDX-License-Identifier: Apache-2.0
// kubecrd.js - a CustomResourceDefinition's rules for the objects of its
// served version, as kube-apiserver (apiextensions-apiserver) keeps them:
// read from the CRD's YAML at start, or from a CRD written to kubeapi.js
// (kubecrds.js), for kubeapi.js. It owns the schema's
// judgement of an object and nothing of the store: pruning (structural
// schema: unknown fields and nulls dropped, metadata kept as an
// ObjectMeta), validation (the OpenAPI keywords, ObjectMeta, list-type map
// keys, then the x-kubernetes-validations rules unless a blocking error
// came first, and ratcheting on update: an unchanged value's errors are not
// said), the Invalid Status, and the merge (RFC 7386) and JSON (RFC 6902)
// patches. kubessa.js (server-side apply), kubecrapi.js (the endpoints)
// and kubeapi.js call it.
// The CEL rules are JS functions keyed by their exact text (RULES): a rule
// or schema keyword this file does not know throws at load, so a change of
// the CRD forces a change here; so does a CRD field it does not serve (a
// second served version, a conversion webhook, selectableFields, a printer
// column's JSON path that is not simple).
'use strict';

const fs = require('node:fs');
const YAML = require('yaml');
const { jsonPath, versionHash } = require('./kubemeta');

// A CEL evaluation error (no such key, ...), said as the API server says it.
class CelError extends Error {}
const has = (o, f) => o !== null && typeof o === 'object' && !Array.isArray(o) && Object.hasOwn(o, f);
// CEL's field selection: a missing field is an error, not null.
function sel(o, f) {
  if (!has(o, f)) throw new CelError(`no such key: ${f}`);
  return o[f];
}

// Each x-kubernetes-validations rule of the CRD, by its text: self -> bool
// (or CelError).
const RULES = {
  "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0":
    (self) => (['In', 'NotIn'].includes(sel(self, 'operator')) ? has(self, 'values') && sel(self, 'values').length > 0
      : !has(self, 'values') || sel(self, 'values').length === 0),
  'has(self.data) != has(self.json)': (self) => has(self, 'data') !== has(self, 'json'),
};

// The schema keywords judged here; any other one is refused at load.
const KEYWORDS = new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum',
  'pattern', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems',
  'maxItems', 'minProperties', 'maxProperties', 'format', 'nullable', 'example', 'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type', 'x-kubernetes-validations']);
const RULE_KEYS = new Set(['rule', 'message', 'reason', 'fieldPath']);

// ObjectMeta as the API server types it (metadata of every object), for
// pruning and for server-side apply's field sets.
const str = { type: 'string' };
const int = { type: 'integer' };
const strMap = { type: 'object', additionalProperties: str };
const OBJECT_META = { type: 'object', properties: {
  name: str, generateName: str, namespace: str, selfLink: str, uid: str, resourceVersion: str, generation: int,
  creationTimestamp: str, deletionTimestamp: str, deletionGracePeriodSeconds: int, labels: strMap, annotations: strMap,
  ownerReferences: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['uid'],
    items: { type: 'object', properties: { apiVersion: str, kind: str, name: str, uid: str, controller: { type: 'boolean' },
      blockOwnerDeletion: { type: 'boolean' } } } },
  finalizers: { type: 'array', 'x-kubernetes-list-type': 'set', items: str },
  managedFields: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
} };

// ---- errors ---------------------------------------------------------------

// A bad value written as Go writes it where that is not JSON's way (0x0).
class Go {
  constructor(text) {
    this.text = text;
  }
}

// A field error (k8s.io/apimachinery's field.Error): its reason, path,
// bad value and detail.
const fieldError = (reason, field, value, detail = '') => ({ reason, field, value, detail });
const SAYS = { FieldValueInvalid: 'Invalid value', FieldValueTypeInvalid: 'Invalid value', FieldValueRequired: 'Required value',
  FieldValueNotSupported: 'Unsupported value', FieldValueDuplicate: 'Duplicate value', FieldValueTooMany: 'Too many',
  FieldValueTooLong: 'Too long', FieldValueForbidden: 'Forbidden', FieldValueNotFound: 'Not found' };

// A value as Go's %#v writes an unstructured one (the bad values of
// Duplicate and the like).
function goValue(v) {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (Array.isArray(v)) return `[]interface {}{${v.map(goValue).join(', ')}}`;
  if (typeof v === 'object') {
    return `map[string]interface {}{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${goValue(v[k])}`).join(', ')}}`;
  }
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

// What field.Error.ErrorBody says: the reason's words, the value (not for
// Required, Forbidden, TooLong) and the detail.
function body(e) {
  let s = SAYS[e.reason];
  if (!['FieldValueRequired', 'FieldValueForbidden', 'FieldValueTooLong'].includes(e.reason)) {
    const v = e.value;
    s += `: ${v instanceof Go ? v.text : v === null || v === undefined ? '"null"' : typeof v === 'string' ? JSON.stringify(v)
      : typeof v === 'object' ? goValue(v) : String(v)}`;
  }
  return e.detail ? `${s}: ${e.detail}` : s;
}

// The Status of an object refused as invalid (errors.NewInvalid): its
// message names the kind, the object and every error.
function invalid(groupKind, group, name, errs) {
  const each = errs.map((e) => `${e.field}: ${body(e)}`).filter((s, i, all) => all.indexOf(s) === i);
  const list = each.length === 1 ? each[0] : `[${each.join(', ')}]`;
  const kind = groupKind.split('.')[0];
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
    message: `${groupKind} "${name}" is invalid: ${list}`, reason: 'Invalid',
    details: { ...(name ? { name } : {}), ...(group ? { group } : {}), kind,
      causes: errs.map((e) => ({ reason: e.reason, message: body(e), field: e.field })) },
    code: 422 };
}

// ---- the schema -------------------------------------------------------------

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object'
  : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v);
const child = (path, key) => (path ? `${path}.${key}` : key);
const clone = (o) => (o === undefined ? undefined : JSON.parse(JSON.stringify(o)));

function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

// Refuse a schema this file would judge wrongly: an unknown keyword, a
// rule not in RULES.
function checkSchema(node, path) {
  for (const k of Object.keys(node)) {
    if (!KEYWORDS.has(k)) throw new Error(`kubecrd: ${path || 'the schema'} uses ${k}, which kubecrd.js does not implement`);
  }
  for (const r of node['x-kubernetes-validations'] || []) {
    for (const k of Object.keys(r)) {
      if (!RULE_KEYS.has(k)) throw new Error(`kubecrd: ${path}: a rule's ${k} is not implemented`);
    }
    if (!RULES[r.rule]) throw new Error(`kubecrd: ${path}: no JS function for the CEL rule ${JSON.stringify(r.rule)}: add it to RULES`);
  }
  for (const [k, v] of Object.entries(node.properties || {})) checkSchema(v, child(path, k));
  if (node.items) checkSchema(node.items, `${path}[]`);
  if (typeof node.additionalProperties === 'object') checkSchema(node.additionalProperties, `${path}[*]`);
}

// The schema of key under node: its property's, additionalProperties', a
// preserved unknown's (PRESERVED) or undefined (an unknown field).
const PRESERVED = { 'x-kubernetes-preserve-unknown-fields': true };
function childSchema(node, key) {
  if (node.properties && Object.hasOwn(node.properties, key)) return node.properties[key];
  if (typeof node.additionalProperties === 'object') return node.additionalProperties;
  if (node.additionalProperties === true || node['x-kubernetes-preserve-unknown-fields']) return PRESERVED;
  return undefined;
}

// Prune v (in place) as node says, as the API server does before anything
// else: unknown fields go (their paths pushed on unknown), and nulls where
// the schema does not say nullable.
function prune(v, node, path, unknown) {
  if (Array.isArray(v)) {
    if (node.items) v.forEach((x, i) => prune(x, node.items, `${path}[${i}]`, unknown));
    return;
  }
  if (typeOf(v) !== 'object' || node === PRESERVED || (node['x-kubernetes-preserve-unknown-fields'] && !node.properties
    && !node.additionalProperties)) return;
  for (const [k, x] of Object.entries(v)) {
    const s = childSchema(node, k);
    if (s === undefined) {
      unknown.push(child(path, k));
      delete v[k];
    } else if (x === null && !s.nullable && s !== PRESERVED) {
      delete v[k];
    } else {
      prune(x, s, child(path, k), unknown);
    }
  }
}

// ---- validation -------------------------------------------------------------

const FORMATS = {
  // Go's base64.StdEncoding (newlines ignored, padding required).
  byte: (s) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s.replace(/[\r\n]/g, '')),
  'date-time': (s) => {
    const m = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/.exec(s);
    if (!m) return false;
    const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
    return d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3] && +m[4] < 24 && +m[5] < 60 && +m[6] < 61;
  },
};

// The errors of v against node at path (kube-openapi's validator, as the
// CRD validator turns its results into field errors), then the list-type
// map keys; rules: the x-kubernetes-validations to run after, pushed as
// { node, v, path }. old: the value at the same place before an update
// (undefined: none), for ratcheting.
function check(v, node, path, old, errs, rules) {
  if (old !== undefined && deepEqual(v, old)) return; // ratcheted: unchanged, so not judged again
  if (node === PRESERVED) return;
  const t = typeOf(v);
  if (node.type && !(t === node.type || (node.type === 'number' && t === 'integer'))) {
    errs.push(fieldError('FieldValueTypeInvalid', path, v, `${path} in body must be of type ${node.type}: "${t}"`));
    return;
  }
  if (node.enum && !node.enum.some((e) => deepEqual(e, v))) {
    errs.push(fieldError('FieldValueNotSupported', path, v, `supported values: ${node.enum.map((e) => JSON.stringify(e)).join(', ')}`));
  }
  if (t === 'string') {
    const n = [...v].length;
    if (node.maxLength !== undefined && n > node.maxLength) {
      errs.push(fieldError('FieldValueTooLong', path, v, `may not be more than ${node.maxLength} bytes`));
    }
    if (node.minLength !== undefined && n < node.minLength) {
      errs.push(fieldError('FieldValueInvalid', path, v, `${path} in body should be at least ${node.minLength} chars long`));
    }
    if (node.pattern !== undefined && !new RegExp(node.pattern, 'u').test(v)) {
      errs.push(fieldError('FieldValueInvalid', path, v, `${path} in body should match '${node.pattern}'`));
    }
    if (FORMATS[node.format] && !FORMATS[node.format](v)) {
      errs.push(fieldError('FieldValueInvalid', path, v, `${path} in body must be of type ${node.format}: ${JSON.stringify(v)}`));
    }
  }
  if (t === 'integer' || t === 'number') {
    if (node.minimum !== undefined && (node.exclusiveMinimum ? v <= node.minimum : v < node.minimum)) {
      errs.push(fieldError('FieldValueInvalid', path, v,
        `${path} in body should be greater than ${node.exclusiveMinimum ? '' : 'or equal to '}${node.minimum}`));
    }
    if (node.maximum !== undefined && (node.exclusiveMaximum ? v >= node.maximum : v > node.maximum)) {
      errs.push(fieldError('FieldValueInvalid', path, v,
        `${path} in body should be less than ${node.exclusiveMaximum ? '' : 'or equal to '}${node.maximum}`));
    }
  }
  if (t === 'array') checkArray(v, node, path, old, errs, rules);
  if (t === 'object') checkObject(v, node, path, old, errs, rules);
  if (node['x-kubernetes-validations']) rules.push({ node, v, path });
}

function checkObject(v, node, path, old, errs, rules) {
  const keys = Object.keys(v);
  if (node.maxProperties !== undefined && keys.length > node.maxProperties) {
    errs.push(fieldError('FieldValueTooMany', path, keys.length, `must have at most ${node.maxProperties} items`));
  }
  if (node.minProperties !== undefined && keys.length < node.minProperties) {
    errs.push(fieldError('FieldValueInvalid', path, keys.length, `${path} in body should have at least ${node.minProperties} properties`));
  }
  for (const r of node.required || []) {
    if (!Object.hasOwn(v, r)) errs.push(fieldError('FieldValueRequired', child(path, r), '', ''));
  }
  const before = typeOf(old) === 'object' ? old : {};
  for (const k of keys) {
    const s = childSchema(node, k);
    const at = node.properties && Object.hasOwn(node.properties, k) ? child(path, k) : `${path}[${k}]`;
    if (s) check(v[k], s, at, before[k], errs, rules);
  }
}

// The key of a list-type map's item (its key fields, as an object).
const mapKey = (node, x) => Object.fromEntries(node['x-kubernetes-list-map-keys']
  .map((k) => [k, typeOf(x) === 'object' ? x[k] : undefined]));

function checkArray(v, node, path, old, errs, rules) {
  if (node.maxItems !== undefined && v.length > node.maxItems) {
    errs.push(fieldError('FieldValueTooMany', path, v.length, `must have at most ${node.maxItems} items`));
  }
  if (node.minItems !== undefined && v.length < node.minItems) {
    errs.push(fieldError('FieldValueInvalid', path, v.length, `${path} in body should have at least ${node.minItems} items`));
  }
  const type = node['x-kubernetes-list-type'];
  // Ratcheting correlates the items of a map by key and of a set by value;
  // an atomic list's are not correlated.
  const was = (x) => {
    if (!Array.isArray(old)) return undefined;
    if (type === 'map') return old.find((o) => deepEqual(mapKey(node, o), mapKey(node, x)));
    if (type === 'set') return old.find((o) => deepEqual(o, x));
    return undefined;
  };
  if (node.items) v.forEach((x, i) => check(x, node.items, `${path}[${i}]`, was(x), errs, rules));
}

// The list-type map and set invariants (structurallisttype): each key, or
// value, once.
function checkLists(v, node, path, errs) {
  if (Array.isArray(v)) {
    const type = node['x-kubernetes-list-type'];
    const seen = [];
    v.forEach((x, i) => {
      const k = type === 'map' ? mapKey(node, x) : x;
      if ((type === 'map' || type === 'set') && seen.some((s) => deepEqual(s, k))) {
        errs.push(fieldError('FieldValueDuplicate', `${path}[${i}]`, k));
      }
      seen.push(k);
      if (node.items) checkLists(x, node.items, `${path}[${i}]`, errs);
    });
  } else if (typeOf(v) === 'object' && node !== PRESERVED) {
    for (const [k, x] of Object.entries(v)) {
      const s = childSchema(node, k);
      if (s) checkLists(x, s, node.properties && node.properties[k] ? child(path, k) : `${path}[${k}]`, errs);
    }
  }
}

// The x-kubernetes-validations of each place collected by check.
function runRules(rules, errs) {
  for (const { node, v, path } of rules) {
    for (const r of node['x-kubernetes-validations']) {
      const say = r.message ? r.message.trim() : r.rule.trim();
      const at = r.fieldPath ? `${path}${r.fieldPath}` : path;
      let ok;
      try {
        ok = RULES[r.rule](v);
      } catch (e) {
        if (!(e instanceof CelError)) throw e;
        errs.push(fieldError('FieldValueInvalid', at, typeOf(v), `${e.message} evaluating rule: ${say}`));
        continue;
      }
      if (!ok) errs.push(fieldError(r.reason || 'FieldValueInvalid', at, typeOf(v), r.message ? say : `failed rule: ${say}`));
    }
  }
}

// ---- ObjectMeta -------------------------------------------------------------

const DNS1123 = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const LABEL_VALUE = '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?';
const NAME_PART = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const full = (re) => new RegExp(`^${re}$`);

// The errors of a qualified name (a label's or annotation's key).
function qualifiedName(k, path, errs) {
  const parts = k.split('/');
  const name = parts.at(-1);
  if (parts.length > 2 || (parts.length === 2 && (!full(DNS1123).test(parts[0]) || parts[0].length > 253))) {
    errs.push(fieldError('FieldValueInvalid', path, k, 'prefix part a lowercase RFC 1123 subdomain must consist of lower case '
      + `alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`));
  }
  if (!name || name.length > 63 || !full(NAME_PART).test(name)) {
    errs.push(fieldError('FieldValueInvalid', path, k, "name part must consist of alphanumeric characters, '-', '_' or '.', "
      + "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
      + `regex used for validation is '${NAME_PART}')`));
  }
}

// ValidateObjectMetaAccessor, with names as DNS subdomains (a CR's); old:
// the object's metadata before an update.
function checkMeta(m, old, errs) {
  if (!m.name) {
    errs.push(fieldError('FieldValueRequired', 'metadata.name', '', 'name or generateName is required'));
  } else if (m.name.length > 253) {
    errs.push(fieldError('FieldValueInvalid', 'metadata.name', m.name, 'must be no more than 253 characters'));
  } else if (!full(DNS1123).test(m.name)) {
    errs.push(fieldError('FieldValueInvalid', 'metadata.name', m.name, 'a lowercase RFC 1123 subdomain must consist of lower case '
      + "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
      + `regex used for validation is '${DNS1123}')`));
  }
  for (const [k, v] of Object.entries(m.labels || {})) {
    qualifiedName(k, 'metadata.labels', errs);
    if (typeof v !== 'string' || v.length > 63 || !full(LABEL_VALUE).test(v)) {
      errs.push(fieldError('FieldValueInvalid', 'metadata.labels', v, "a valid label must be an empty string or consist of "
        + "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
        + `or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`));
    }
  }
  let size = 0;
  for (const [k, v] of Object.entries(m.annotations || {})) {
    qualifiedName(k, 'metadata.annotations', errs);
    size += k.length + String(v).length;
  }
  if (size > 262144) errs.push(fieldError('FieldValueTooLong', 'metadata.annotations', '', 'must have at most 262144 bytes'));
  if (old) {
    if (m.uid && m.uid !== old.uid) errs.push(fieldError('FieldValueInvalid', 'metadata.uid', m.uid, 'field is immutable'));
    const added = (m.finalizers || []).filter((f) => !(old.finalizers || []).includes(f));
    if (old.deletionTimestamp && added.length) {
      errs.push(fieldError('FieldValueForbidden', 'metadata.finalizers', '', 'no new finalizers can be added if the object is '
        + `being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`));
    }
  }
}

// ---- the CRD ----------------------------------------------------------------

// The CRD of file, its version served (the storage one): names, schema,
// and the judgement of its objects.
const load = (file) => fromObject(YAML.parse(fs.readFileSync(file, 'utf8')), file);

// The keys of a CRD's spec and of its version that this file serves; any
// other one (a conversion webhook, selectableFields, a deprecation) is
// refused, as a schema keyword is.
const SPEC_KEYS = new Set(['group', 'names', 'scope', 'versions', 'conversion', 'preserveUnknownFields']);
const VERSION_KEYS = new Set(['name', 'served', 'storage', 'schema', 'subresources', 'additionalPrinterColumns']);

// The same of doc, a CRD object (what: how an error names it).
function fromObject(doc, what = 'the CRD') {
  if (!doc || doc.kind !== 'CustomResourceDefinition') throw new Error(`kubecrd: ${what} is not a CustomResourceDefinition`);
  for (const k of Object.keys(doc.spec || {})) {
    if (!SPEC_KEYS.has(k)) throw new Error(`kubecrd: ${what} uses spec.${k}, which kubecrd.js does not implement`);
  }
  if ((doc.spec.conversion && doc.spec.conversion.strategy !== 'None') || doc.spec.preserveUnknownFields) {
    throw new Error(`kubecrd: ${what}: only a structural schema without conversion is implemented`);
  }
  const { group, names, scope } = doc.spec;
  const served = doc.spec.versions.filter((v) => v.served);
  if (served.length > 1) throw new Error(`kubecrd: ${what} serves ${served.length} versions; one is implemented`);
  const version = doc.spec.versions.find((v) => v.storage && v.served);
  if (!version) throw new Error(`kubecrd: ${what} serves no storage version`);
  for (const k of Object.keys(version)) {
    if (!VERSION_KEYS.has(k)) throw new Error(`kubecrd: ${what} uses versions[].${k}, which kubecrd.js does not implement`);
  }
  for (const k of Object.keys(version.subresources || {})) {
    if (k !== 'status') throw new Error(`kubecrd: the ${k} subresource is not implemented`);
  }
  const columns = version.additionalPrinterColumns || [];
  for (const c of columns) {
    if (!jsonPath(c.jsonPath)) throw new Error(`kubecrd: the printer column ${c.name}'s JSON path ${c.jsonPath} is not implemented`);
  }
  const root = version.schema.openAPIV3Schema;
  checkSchema(root, '');
  const apiVersion = `${group}/${version.name}`;
  // The schema with metadata as the API server types it.
  const typed = { ...root, properties: { ...root.properties, metadata: OBJECT_META } };
  const groupKind = `${names.kind}.${group}`;
  return {
    group, version: version.name, apiVersion, kind: names.kind, listKind: names.listKind || `${names.kind}List`,
    plural: names.plural, singular: names.singular || names.kind.toLowerCase(), shortNames: names.shortNames,
    categories: names.categories, namespaced: scope === 'Namespaced', status: Boolean((version.subresources || {}).status),
    schema: typed, columns, hash: versionHash(`${apiVersion}/${names.kind}`),
    // Prune obj in place; the paths of the unknown fields dropped.
    prune(obj) {
      const unknown = [];
      prune(obj, typed, '', unknown);
      return unknown;
    },
    // The field errors of obj (old: before an update, for ratcheting).
    validate(obj, old) {
      const errs = [];
      const rules = [];
      if (obj.kind !== names.kind) errs.push(fieldError('FieldValueInvalid', 'kind', obj.kind, `must be ${names.kind}`));
      if (obj.apiVersion !== apiVersion) errs.push(fieldError('FieldValueInvalid', 'apiVersion', obj.apiVersion, `must be ${apiVersion}`));
      if (errs.length) return errs;
      checkMeta(obj.metadata || {}, old && old.metadata, errs);
      const { metadata, ...rest } = obj;
      const { metadata: oldMeta, ...oldRest } = old || {};
      check(rest, { ...root, properties: { ...root.properties, metadata: PRESERVED } }, '', old ? oldRest : undefined, errs, rules);
      checkLists(rest, root, '', errs);
      const blocking = ['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid'];
      if (errs.some((e) => blocking.includes(e.reason))) {
        errs.push(fieldError('FieldValueInvalid', '<nil>', null, 'some validation rules were not checked because the object was '
          + 'invalid; correct the existing errors to complete validation'));
      } else {
        runRules(rules, errs);
      }
      return errs;
    },
    invalid: (name, errs) => invalid(groupKind, group, name, errs),
  };
}

// ---- patches ----------------------------------------------------------------

// RFC 7386: patch merged into target (a copy).
function mergePatch(target, patch) {
  if (typeOf(patch) !== 'object') return clone(patch);
  const out = typeOf(target) === 'object' ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// RFC 6902: ops applied to doc (a copy); an error says why one does not apply.
function jsonPatch(doc, ops) {
  let out = clone(doc);
  const parse = (p) => {
    if (typeof p !== 'string' || (p !== '' && p[0] !== '/')) throw new Error(`invalid JSON pointer: ${JSON.stringify(p)}`);
    return p === '' ? [] : p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  };
  const missing = (op, p) => new Error(`${op} operation does not apply: doc is missing path: ${p}`);
  const parent = (p, op) => {
    const parts = parse(p);
    let c = out;
    for (const s of parts.slice(0, -1)) {
      if (typeOf(c) !== 'object' && !Array.isArray(c)) c = undefined;
      c = c === undefined ? undefined : c[s];
      if (c === undefined) throw missing(op, p);
    }
    return [c, parts.at(-1)];
  };
  const get = (p, op) => {
    if (p === '') return out;
    const [c, k] = parent(p, op);
    if (c === null || typeof c !== 'object' || !Object.hasOwn(c, k)) throw missing(op, p);
    return c[k];
  };
  const remove = (p, op) => {
    const [c, k] = parent(p, op);
    if (c === null || typeof c !== 'object' || !Object.hasOwn(c, k)) throw missing(op, p);
    const v = c[k];
    if (Array.isArray(c)) c.splice(Number(k), 1);
    else delete c[k];
    return v;
  };
  const add = (p, v, op) => {
    if (p === '') {
      out = v;
      return;
    }
    const [c, k] = parent(p, op);
    if (Array.isArray(c)) {
      const i = k === '-' ? c.length : Number(k);
      if (!Number.isInteger(i) || i < 0 || i > c.length) throw new Error(`${op} operation does not apply: index out of bounds: ${p}`);
      c.splice(i, 0, v);
    } else if (c !== null && typeof c === 'object') {
      c[k] = v;
    } else {
      throw missing(op, p);
    }
  };
  for (const o of ops) {
    switch (o.op) {
      case 'add': add(o.path, clone(o.value), 'add'); break;
      case 'remove': remove(o.path, 'remove'); break;
      case 'replace': remove(o.path, 'replace'); add(o.path, clone(o.value), 'replace'); break;
      case 'move': add(o.path, remove(o.from, 'move'), 'move'); break;
      case 'copy': add(o.path, clone(get(o.from, 'copy')), 'copy'); break;
      case 'test':
        if (!deepEqual(get(o.path, 'test'), o.value)) throw new Error(`testing value ${o.path} failed: test failed`);
        break;
      default: throw new Error(`Unexpected kind: ${o.op}`);
    }
  }
  return out;
}

module.exports = { Go, load, fromObject, objectMeta: checkMeta, invalid, mergePatch, jsonPatch, deepEqual, clone, typeOf, childSchema,
  PRESERVED, fieldError, body, RULES };
