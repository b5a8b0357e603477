// SPDX-License-Identifier: Apache-2.0
// kubessa.js - field ownership as kube-apiserver keeps it in
// metadata.managedFields (structured-merge-diff, "Server-Side Apply"), for
// kubecrapi.js's custom resources: each write's manager owns what it set
// (operation Update: what it changed; Apply: what its applied config
// names); an apply merges its config into the object (list-type maps by
// key, atomic lists and maps whole), removes what the manager applied last
// time and leaves out now unless another manager owns it, and is refused
// (409 Conflict) where it would change another manager's field, unless
// forced (then the field changes hands). The field sets are FieldsV1
// (f:name, k:{"key":...}, v:value; "." when a list item or map is owned
// itself and has owned fields). Uses kubecrd.js's schema; keeps no state.
'use strict';

const { deepEqual, clone, typeOf, childSchema, PRESERVED } = require('./kubecrd');

const SEP = '\u0000'; // between a path's elements, in a set's strings
const join = (path, pe) => (path === '' ? pe : `${path}${SEP}${pe}`);
const elements = (p) => (p === '' ? [] : p.split(SEP));

// How structured-merge-diff treats a value of node (v: the value, for a
// preserved unknown one, whose shape is deduced).
function shape(node, v) {
  if (v === null || v === undefined) return 'leaf';
  if (node === undefined || node === PRESERVED || (!node.type && node['x-kubernetes-preserve-unknown-fields'])) {
    return typeOf(v) === 'object' ? 'map' : 'leaf'; // deduced: maps granular, lists atomic
  }
  if (node.type === 'object') return node['x-kubernetes-map-type'] === 'atomic' ? 'leaf' : 'map';
  if (node.type === 'array') {
    const t = node['x-kubernetes-list-type'];
    return t === 'map' ? 'listmap' : t === 'set' ? 'set' : 'leaf';
  }
  return 'leaf';
}
const childOf = (node, k) => (node === undefined || node === PRESERVED || !node.type ? PRESERVED : childSchema(node, k));
const declared = (node, k) => Boolean(node && node.properties && Object.hasOwn(node.properties, k));

// A list item's path element: k:{keys} for a list-type map, v:value for a set.
function itemElement(node, x) {
  if (node['x-kubernetes-list-type'] === 'set') return `v:${JSON.stringify(x)}`;
  const keys = [...node['x-kubernetes-list-map-keys']].sort();
  return `k:${JSON.stringify(Object.fromEntries(keys.filter((k) => x[k] !== undefined).map((k) => [k, x[k]])))}`;
}

// The items of a list by their path element.
const byElement = (node, list) => new Map((list || []).map((x) => [itemElement(node, x), x]));

// The field set of v (typed.ToFieldSet): leaves, atomic values, list items,
// map entries that are not a struct's declared fields, and empty maps.
function fieldSet(v, node, path = '', set = new Set()) {
  const s = shape(node, v);
  if (s === 'leaf') {
    if (path !== '') set.add(path);
  } else if (s === 'listmap' || s === 'set') {
    for (const x of v) {
      const p = join(path, itemElement(node, x));
      set.add(p);
      if (s === 'listmap') fieldSet(x, node.items, p, set);
    }
  } else {
    for (const [k, x] of Object.entries(v)) {
      const p = join(path, `f:${k}`);
      if (x === null || (typeOf(x) === 'object' && Object.keys(x).length === 0) || !declared(node, k)) set.add(p);
      fieldSet(x, childOf(node, k), p, set);
    }
  }
  return set;
}

// What changed from l to r (typed.Compare): leaves added, modified or
// removed; a list item or map added or removed whole is itself too.
function compare(l, r, node, path = '', out = { added: new Set(), modified: new Set(), removed: new Set() }) {
  const s = shape(node, r === undefined ? l : l === undefined ? r : shape(node, l) === shape(node, r) ? r : null);
  if (s === 'leaf') {
    if (l === undefined) out.added.add(path);
    else if (r === undefined) out.removed.add(path);
    else if (!deepEqual(l, r)) out.modified.add(path);
    return out;
  }
  if (s === 'listmap' || s === 'set') {
    const a = byElement(node, l);
    const b = byElement(node, r);
    for (const pe of new Set([...a.keys(), ...b.keys()])) {
      if (s === 'set') compare(a.get(pe), b.get(pe), undefined, join(path, pe), out);
      else compare(a.get(pe), b.get(pe), node.items, join(path, pe), out);
    }
  } else {
    for (const k of new Set([...Object.keys(l || {}), ...Object.keys(r || {})])) {
      compare((l || {})[k], (r || {})[k], childOf(node, k), join(path, `f:${k}`), out);
    }
  }
  if (path !== '' && l === undefined) out.added.add(path);
  else if (path !== '' && r === undefined) out.removed.add(path);
  return out;
}

// config merged into live (a new value): maps field by field, list-type
// maps item by item (by key), sets by value, the rest replaced.
function merge(l, r, node) {
  if (r === undefined) return clone(l);
  if (l === undefined || shape(node, l) !== shape(node, r)) return clone(r);
  const s = shape(node, r);
  if (s === 'leaf') return clone(r);
  if (s === 'set') return [...clone(l), ...clone(r).filter((x) => !l.some((y) => deepEqual(x, y)))];
  if (s === 'listmap') {
    const out = clone(l);
    for (const x of r) {
      const i = out.findIndex((y) => itemElement(node, y) === itemElement(node, x));
      if (i >= 0) out[i] = merge(out[i], x, node.items);
      else out.push(clone(x));
    }
    return out;
  }
  const out = clone(l);
  for (const [k, x] of Object.entries(r)) out[k] = merge(l[k], x, childOf(node, k));
  return out;
}

// v without the paths of set (and what is under them).
function removeItems(v, set, node, path = '') {
  if (set.size === 0) return clone(v);
  const under = new Set();
  for (const p of set) {
    const e = elements(p);
    for (let i = 1; i < e.length; i++) under.add(e.slice(0, i).join(SEP));
  }
  const walk = (x, n, p) => {
    if (p !== '' && !under.has(p)) return clone(x);
    const s = shape(n, x);
    if (s === 'listmap' || s === 'set') {
      return x.filter((y) => !set.has(join(p, itemElement(n, y))))
        .map((y) => (s === 'listmap' ? walk(y, n.items, join(p, itemElement(n, y))) : y));
    }
    if (s !== 'map') return clone(x);
    const out = {};
    for (const [k, y] of Object.entries(x)) {
      const q = join(p, `f:${k}`);
      if (!set.has(q)) out[k] = walk(y, childOf(n, k), q);
    }
    return out;
  };
  return walk(v, node, path);
}

// set with every declared field above a member a member too
// (EnsureNamedFieldsAreMembers).
function named(set) {
  const out = new Set(set);
  for (const p of set) {
    const e = elements(p);
    for (let i = 1; i < e.length; i++) if (e[i - 1].startsWith('f:')) out.add(e.slice(0, i).join(SEP));
  }
  return out;
}
const minus = (a, b) => new Set([...a].filter((x) => !b.has(x)));
const and = (a, b) => new Set([...a].filter((x) => b.has(x)));
// a without what is in, or under, a path of b (RecursiveDifference).
const minusUnder = (a, b) => new Set([...a].filter((x) => ![...b].some((y) => x === y || x.startsWith(y + SEP))));

// The paths no manager owns: the server's fields, never tracked (stripMeta).
const STRIP = new Set(['f:apiVersion', 'f:kind', 'f:metadata', ...['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid',
  'clusterName', 'generation', 'managedFields', 'resourceVersion'].map((k) => `f:metadata${SEP}f:${k}`)]);

// ---- FieldsV1 ---------------------------------------------------------------

const ORDER = { f: 0, k: 1, v: 2, i: 3 };
const byElementOrder = (a, b) => (ORDER[a[0]] - ORDER[b[0]]) || (a < b ? -1 : a > b ? 1 : 0);

function toFieldsV1(set) {
  const tree = { member: false, children: new Map() };
  for (const p of set) {
    let n = tree;
    for (const pe of elements(p)) {
      if (!n.children.has(pe)) n.children.set(pe, { member: false, children: new Map() });
      n = n.children.get(pe);
    }
    n.member = true;
  }
  const emit = (n) => {
    const o = {};
    if (n.member && n.children.size) o['.'] = {};
    for (const k of [...n.children.keys()].sort(byElementOrder)) o[k] = emit(n.children.get(k));
    return o;
  };
  return emit(tree);
}

function fromFieldsV1(o, path = '', set = new Set()) {
  for (const [k, c] of Object.entries(o || {})) {
    if (k === '.') continue;
    const p = join(path, k);
    if (Object.hasOwn(c, '.') || Object.keys(c).length === 0) set.add(p);
    fromFieldsV1(c, p, set);
  }
  return set;
}

// A path as a conflict names it: .status.nodes[node="node-a"].applied.
function pathString(p) {
  return elements(p).map((pe) => {
    const v = pe.slice(2);
    if (pe[0] === 'f') return `.${v}`;
    if (pe[0] === 'v') return `[=${v}]`;
    return `[${Object.entries(JSON.parse(v)).map(([k, x]) => `${k}=${JSON.stringify(x)}`).join(',')}]`;
  }).join('');
}

// ---- managers ----------------------------------------------------------------

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
// A manager's identity: its name, operation and subresource, and for
// Update the apiVersion it wrote (BuildManagerIdentifier).
const identity = (m) => JSON.stringify([m.manager, m.operation, m.operation === 'Apply' ? '' : m.apiVersion, m.subresource || '']);

function decode(entries) {
  return (entries || []).map((e) => ({ manager: e.manager, operation: e.operation, apiVersion: e.apiVersion, time: e.time,
    subresource: e.subresource, set: fromFieldsV1(e.fieldsV1) }));
}

// The managers as metadata.managedFields, sorted as the API server sorts
// them (operation, time, manager, apiVersion, subresource).
function encode(managers) {
  const secs = (m) => (m.time ? Date.parse(m.time) / 1000 : 0);
  return managers.filter((m) => m.set.size).sort((a, b) => (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0)
    || secs(a) - secs(b) || (a.manager < b.manager ? -1 : a.manager > b.manager ? 1 : 0)
    || (a.apiVersion < b.apiVersion ? -1 : a.apiVersion > b.apiVersion ? 1 : 0)
    || ((a.subresource || '') < (b.subresource || '') ? -1 : 1))
    .map((m) => ({ manager: m.manager, operation: m.operation, apiVersion: m.apiVersion, ...(m.time ? { time: m.time } : {}),
      fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(m.set), ...(m.subresource ? { subresource: m.subresource } : {}) }));
}

const bare = (o) => {
  const c = clone(o);
  if (c.metadata) delete c.metadata.managedFields;
  return c;
};

// The tracker of crd's objects. ignored(sub): the paths a write to
// subresource sub (''|'status') resets (the strategy's reset fields).
function tracker(crd) {
  const ignored = (sub) => new Set(crd.status ? [sub === 'status' ? 'f:spec' : 'f:status'] : []);
  // What a write through sub may own once the strategy prepared it: through
  // status, status alone (WipeManagedFields).
  const wipe = (set, sub) => (sub === 'status' ? new Set([...set].filter((p) => p === 'f:status' || p.startsWith(`f:status${SEP}`))) : set);
  const typed = crd.schema;

  // The managers of live, after a write (not an apply) by manager through
  // sub turned live into next: next's fields it changed are its own now,
  // taken from any other; the ones removed are no one's.
  function update(live, next, { manager, sub = '', given = null }) {
    const managers = decode(given && given.length ? given : live && live.metadata.managedFields);
    const cmp = compare(live ? bare(live) : { apiVersion: crd.apiVersion, kind: crd.kind }, bare(next), typed);
    const skip = ignored(sub);
    const took = minusUnder(new Set([...cmp.modified, ...cmp.added]), skip);
    const removed = minusUnder(cmp.removed, skip);
    for (const m of managers) m.set = minus(minus(m.set, took), removed);
    const mine = wipe(minus(minus(took, removed), STRIP), sub);
    if (mine.size) {
      const me = { manager, operation: 'Update', apiVersion: crd.apiVersion, subresource: sub || undefined };
      const old = managers.find((m) => identity(m) === identity(me));
      if (old) {
        old.set = new Set([...old.set, ...mine]);
        old.time = now();
      } else {
        managers.push({ ...me, time: now(), set: mine });
      }
    }
    return encode(managers);
  }

  // config applied by manager through sub to live (null: none yet, made
  // as { apiVersion, kind, metadata: { name, namespace } }, no namespace
  // for a cluster-scoped one): the new object
  // with its managedFields, or a thrown Status (a conflict, a config
  // refused).
  function apply(live, config, { manager, sub = '', force = false, name, namespace }) {
    const base = live ? bare(live) : { apiVersion: crd.apiVersion, kind: crd.kind,
      metadata: { name, ...(namespace ? { namespace } : {}) } };
    const managers = decode(live && live.metadata.managedFields);
    const me = { manager, operation: 'Apply', apiVersion: crd.apiVersion, subresource: sub || undefined };
    const id = identity(me);
    const mine = managers.find((m) => identity(m) === id);
    const last = mine ? mine.set : null;
    const skip = ignored(sub);
    // Stripped of the server's fields only at the end (stripMeta wraps the
    // merge): until then they count as the applier's, so that prune keeps
    // metadata.
    const set = minusUnder(fieldSet(config, typed), skip);
    if (mine) mine.set = set;
    else managers.push({ ...me, set });
    let merged = merge(base, config, typed);
    if (last && last.size) { // prune: what it applied last time and not now, unless someone owns it
      const owned = named(new Set(managers.flatMap((m) => [...m.set])));
      const lastN = named(last);
      const all = named(fieldSet(merged, typed));
      const pruned = removeItems(merged, lastN, typed);
      const back = removeItems(merged, minus(all, new Set([...named(fieldSet(pruned, typed)), ...owned])), typed);
      merged = removeItems(merged, and(minus(all, named(fieldSet(back, typed))), lastN), typed);
    }
    const cmp = compare(base, merged, typed);
    const changed = minusUnder(new Set([...cmp.modified, ...cmp.added]), skip);
    const removed = minusUnder(cmp.removed, skip);
    const conflicts = [];
    for (const m of managers) {
      if (identity(m) === id) continue;
      for (const p of and(m.set, changed)) conflicts.push({ m, p });
    }
    if (conflicts.length && !force) throw conflict(conflicts);
    for (const m of managers) {
      if (identity(m) === id) continue;
      m.set = minus(minus(m.set, changed), removed);
    }
    const same = deepEqual(base, merged);
    const self = managers.find((m) => identity(m) === id);
    if (!same) self.time = now();
    self.set = wipe(minus(self.set, STRIP), sub);
    const out = same ? base : merged;
    out.metadata = { ...out.metadata, managedFields: encode(managers) };
    return out;
  }

  return { update, apply, fieldSet: (v) => fieldSet(v, typed) };
}

// The 409 of an apply that would change other managers' fields
// (NewConflictError): each field a cause, the message by manager.
function conflict(list) {
  const who = ({ m }) => `${JSON.stringify(m.manager)}${m.subresource ? ` with subresource ${JSON.stringify(m.subresource)}` : ''}`
    + (m.operation === 'Update' ? ` using ${m.apiVersion}${m.time ? ` at ${m.time}` : ''}` : '');
  let message;
  if (list.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${who(list[0])}: ${pathString(list[0].p)}`;
  } else {
    const by = new Map();
    for (const c of list) by.set(who(c), [...(by.get(who(c)) || []), pathString(c.p)]);
    const lines = [...by.keys()].sort().flatMap((w) => [`conflicts with ${w}:`, ...by.get(w).map((p) => `- ${p}`)]);
    message = `Apply failed with ${list.length} conflicts: ${lines.join('\n')}`;
  }
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Conflict',
    details: { causes: list.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${who(c)}`, field: pathString(c.p) })) },
    code: 409 };
}

// The errors of an applied config that structured-merge-diff cannot type
// (a field the schema does not declare, a list-type map item without its
// key, a duplicate, a value of the wrong kind), each "PATH: why".
function typeErrors(v, node, path = '') {
  if (v === null || node === undefined || node === PRESERVED || !node.type) return [];
  const t = typeOf(v);
  const want = { object: 'map', array: 'list', string: 'string', integer: 'numeric (int or float)', number: 'numeric (int or float)',
    boolean: 'boolean' }[node.type];
  if (!(t === node.type || ((node.type === 'number' || node.type === 'integer') && (t === 'integer' || t === 'number')))) {
    return [`${path}: expected ${want}, got ${t}`];
  }
  const errs = [];
  if (t === 'array' && shape(node, v) === 'listmap') {
    const seen = new Set();
    v.forEach((x, i) => {
      const miss = node['x-kubernetes-list-map-keys'].find((k) => typeOf(x) !== 'object' || x[k] === undefined);
      if (miss) {
        errs.push(`${path}: element ${i}: associative list with keys has an element that omits key field "${miss}"`);
        return;
      }
      const pe = itemElement(node, x);
      if (seen.has(pe)) errs.push(`${path}: duplicate entries for key ${pathString(pe)}`);
      seen.add(pe);
      errs.push(...typeErrors(x, node.items, `${path}${pathString(pe)}`));
    });
  } else if (t === 'array' && node.items) {
    v.forEach((x, i) => errs.push(...typeErrors(x, node.items, `${path}[${i}]`)));
  } else if (t === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const c = childOf(node, k);
      if (c === undefined) errs.push(`${path}.${k}: field not declared in schema`);
      else errs.push(...typeErrors(x, c, `${path}.${k}`));
    }
  }
  return errs;
}

module.exports = { tracker, typeErrors, toFieldsV1, fromFieldsV1 };
