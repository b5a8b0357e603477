// SPDX-License-Identifier: Apache-2.0
// structural.mjs - what an API server checks of an apiextensions.k8s.io/v1
// CustomResourceDefinition beyond its type (kubernetes-models checks the
// type alone, and takes a schema with a misspelt key): a structural
// schema (a type on every node but under x-kubernetes-preserve-unknown-fields
// or -int-or-string; no type, description, default, additionalProperties,
// nullable or x-kubernetes-* under allOf, anyOf, oneOf, not; nothing there
// the skeleton lacks), what v1 forbids ($ref, definitions, dependencies,
// patternProperties, additionalItems, uniqueItems: true, additionalProperties:
// false, item tuples), the x-kubernetes-* extensions where they belong
// (list-map keys scalar properties of the items, each required), names and
// versions as the API server wants them, printer columns that resolve. And
// what would be a mistake of ours though the server takes it: bounds on a
// node of another type, a required field that is no property, a pattern RE2
// cannot compile, a CEL rule that reads a field it does not have, or an
// optional one before has() checks it (a "no such key" error instead of
// the rule's message), a rule under a list or map without a bound (its
// cost cannot be estimated).
// Used by validate.mjs: structuralErrors(crd) is [] or what is wrong, each
// with its path; selfTest(crd) is [] or the mutations of crd it missed.

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const KEYS = new Set(['$ref', '$schema', 'additionalItems', 'additionalProperties', 'allOf', 'anyOf', 'default',
  'definitions', 'dependencies', 'description', 'enum', 'example', 'exclusiveMaximum', 'exclusiveMinimum',
  'externalDocs', 'format', 'id', 'items', 'maxItems', 'maxLength', 'maxProperties', 'maximum', 'minItems',
  'minLength', 'minProperties', 'minimum', 'multipleOf', 'not', 'nullable', 'oneOf', 'pattern', 'patternProperties',
  'properties', 'required', 'title', 'type', 'uniqueItems', 'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string', 'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-validations']);
const FORBIDDEN_V1 = ['$ref', '$schema', 'id', 'definitions', 'dependencies', 'patternProperties', 'additionalItems'];
const JUNCTORS = ['allOf', 'anyOf', 'oneOf', 'not'];
// The formats the API server validates (JSONSchemaProps' format); others are ignored: a typo there checks nothing.
const FORMATS = new Set(['bsonobjectid', 'uri', 'email', 'hostname', 'ipv4', 'ipv6', 'cidr', 'mac', 'uuid', 'uuid3',
  'uuid4', 'uuid5', 'isbn', 'isbn10', 'isbn13', 'creditcard', 'ssn', 'hexcolor', 'rgbcolor', 'byte', 'password', 'date',
  'duration', 'datetime', 'date-time', 'int32', 'int64', 'float', 'double']);
const BOUNDS = { string: ['maxLength', 'minLength', 'pattern'], array: ['maxItems', 'minItems'],
  object: ['maxProperties', 'minProperties'], number: ['maximum', 'minimum', 'multipleOf'] };
const RULE_KEYS = new Set(['rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf']);
const SCALAR = new Set(['string', 'integer', 'number', 'boolean']);
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const preserves = (s) => s['x-kubernetes-preserve-unknown-fields'] === true;
const typeOf = (s) => (s.type === 'integer' ? 'number' : s.type);

// The value-validation keys a type does not take (maxLength on an integer: the server ignores it).
function misplacedBounds(s) {
  const own = BOUNDS[typeOf(s)] || [];
  return Object.values(BOUNDS).flat().filter((k) => k in s && !own.includes(k));
}

// CEL: each self.FIELD the rule reads is a property of the node, and an
// optional one is read only after has(self.FIELD) (in the rule's text:
// `has(self.f) && self.f > 0`, `!has(self.f) || ...`).
function celErrors(rule, s, at) {
  const errs = [];
  const props = s.properties || {};
  const required = new Set(s.required || []);
  const seenHas = new Set();
  const re = /\bhas\(\s*self\.([A-Za-z_][A-Za-z0-9_]*)\s*\)|\bself\.([A-Za-z_][A-Za-z0-9_]*)/g;
  for (let m; (m = re.exec(rule));) {
    const field = m[1] || m[2];
    if (s.properties && !(field in props)) {
      if (!preserves(s)) errs.push(`${at}: rule reads self.${field}, which is no property`);
      continue;
    }
    if (m[1]) seenHas.add(field);
    else if (s.properties && !required.has(field) && !('default' in props[field]) && !seenHas.has(field))
      errs.push(`${at}: rule reads optional self.${field} before has(self.${field}) ("no such key" when it is missing)`);
  }
  return errs;
}

// One node of a schema (at: its path), its children after it. ctx: under a
// junctor, under a preserve-unknown-fields node, the root, the bounds
// of the lists and maps above it (null: one unbounded).
function walk(s, at, ctx, errs) {
  if (s === null || typeof s !== 'object' || Array.isArray(s)) {
    errs.push(`${at}: not a schema`);
    return;
  }
  for (const k of Object.keys(s)) if (!KEYS.has(k)) errs.push(`${at}: unknown key ${k}`);
  for (const k of FORBIDDEN_V1) if (k in s) errs.push(`${at}: ${k} is forbidden in apiextensions.k8s.io/v1`);
  if (s.uniqueItems === true) errs.push(`${at}: uniqueItems cannot be true`);
  if (s.additionalProperties === false) errs.push(`${at}: additionalProperties cannot be false`);
  if (s.properties && s.additionalProperties !== undefined)
    errs.push(`${at}: properties and additionalProperties are mutually exclusive`);
  if ('x-kubernetes-preserve-unknown-fields' in s && s['x-kubernetes-preserve-unknown-fields'] !== true)
    errs.push(`${at}: x-kubernetes-preserve-unknown-fields must be true or absent`);

  if (ctx.junctor) {
    // the int-or-string exception: anyOf [{type: integer}, {type: string}]
    const intOrString = ctx.intOrString && Object.keys(s).length === 1 && ['integer', 'string'].includes(s.type);
    for (const k of ['type', 'description', 'default', 'additionalProperties', 'nullable', 'title'])
      if (k in s && !(k === 'type' && intOrString)) errs.push(`${at}: ${k} is forbidden inside ${ctx.junctor}`);
    if (s.properties?.metadata) errs.push(`${at}.properties.metadata: forbidden inside ${ctx.junctor}`);
    for (const k of Object.keys(s).filter((x) => x.startsWith('x-kubernetes-')))
      errs.push(`${at}: ${k} is forbidden inside ${ctx.junctor}`);
    // what a junctor says of a property or of items, the skeleton has
    for (const p of Object.keys(s.properties || {}))
      if (!ctx.skeleton?.properties?.[p]) errs.push(`${at}.properties.${p}: not in the structural schema beside it`);
    if (s.items && !ctx.skeleton?.items) errs.push(`${at}.items: not in the structural schema beside it`);
  } else if (s.type === undefined) {
    if (!preserves(s) && s['x-kubernetes-int-or-string'] !== true) errs.push(`${at}: no type`);
  } else if (!TYPES.has(s.type)) {
    errs.push(`${at}: type ${JSON.stringify(s.type)} is none of ${[...TYPES].join(', ')}`);
  }
  if (s['x-kubernetes-int-or-string'] === true && s.type !== undefined)
    errs.push(`${at}: x-kubernetes-int-or-string takes no type`);
  if (s['x-kubernetes-int-or-string'] === true && (preserves(s) || s['x-kubernetes-embedded-resource']))
    errs.push(`${at}: x-kubernetes-int-or-string with preserve-unknown-fields or embedded-resource`);
  if (s['x-kubernetes-embedded-resource'] === true) {
    if (s.type !== 'object') errs.push(`${at}: x-kubernetes-embedded-resource needs type object`);
    if (s.additionalProperties !== undefined) errs.push(`${at}: additionalProperties with x-kubernetes-embedded-resource`);
    if (!preserves(s) && !Object.keys(s.properties || {}).length)
      errs.push(`${at}: x-kubernetes-embedded-resource needs properties or x-kubernetes-preserve-unknown-fields`);
  }
  if (ctx.root && s.additionalProperties !== undefined) errs.push(`${at}: additionalProperties at the root`);
  if (ctx.root || s['x-kubernetes-embedded-resource'] === true) {
    for (const k of ['apiVersion', 'kind'])
      if (s.properties?.[k] && s.properties[k].type !== 'string') errs.push(`${at}.properties.${k}: type string`);
    if (s.properties?.metadata && s.properties.metadata.type !== 'object') errs.push(`${at}.properties.metadata: type object`);
  }

  if (!ctx.junctor && s.type) {
    for (const k of misplacedBounds(s)) errs.push(`${at}: ${k} on a node of type ${s.type}`);
    if (s.type !== 'object' && (s.properties || s.additionalProperties !== undefined || s.required))
      errs.push(`${at}: properties, additionalProperties or required on a node of type ${s.type}`);
    if (s.type !== 'array' && s.items) errs.push(`${at}: items on a node of type ${s.type}`);
    if (s.type === 'array' && !s.items && !preserves(s)) errs.push(`${at}: an array without items`);
  }
  if (s.format !== undefined && !FORMATS.has(s.format)) errs.push(`${at}: format ${s.format} is none the server checks`);
  if (s.format !== undefined && s.type && !ctx.junctor &&
      ({ integer: ['int32', 'int64'], number: ['float', 'double', 'int32', 'int64'] }[s.type] || [s.format]).indexOf(s.format) < 0)
    errs.push(`${at}: format ${s.format} on a node of type ${s.type}`);
  if (s.format !== undefined && ['object', 'array', 'boolean'].includes(s.type))
    errs.push(`${at}: format on a node of type ${s.type}`);
  if (s.pattern !== undefined) {
    if (/\(\?[=!<]|\\[1-9]/.test(s.pattern)) errs.push(`${at}: pattern has a lookaround or backreference (RE2 has none)`);
    try { new RegExp(s.pattern, 'u'); } catch (e) { errs.push(`${at}: pattern does not compile: ${e.message}`); }
  }
  if (s.enum) {
    const t = { string: 'string', integer: 'number', number: 'number', boolean: 'boolean' }[s.type];
    if (t && s.enum.some((v) => typeof v !== t)) errs.push(`${at}: an enum value not of type ${s.type}`);
  }
  for (const r of s.required || [])
    if (!(r in (s.properties || {})) && !preserves(s)) errs.push(`${at}: required ${r} is no property`);

  // x-kubernetes-list-type and -map-type, where they belong
  const lt = s['x-kubernetes-list-type'];
  if (lt !== undefined) {
    if (s.type !== 'array') errs.push(`${at}: x-kubernetes-list-type on a node of type ${s.type}`);
    else if (!['atomic', 'set', 'map'].includes(lt)) errs.push(`${at}: x-kubernetes-list-type ${lt}`);
    const it = s.items || {};
    if (lt === 'set' && !SCALAR.has(it.type) && it['x-kubernetes-map-type'] !== 'atomic' &&
        it['x-kubernetes-list-type'] !== 'atomic')
      errs.push(`${at}: a set's items must be scalars or atomic`);
    if (lt === 'map') {
      const keys = s['x-kubernetes-list-map-keys'];
      if (it.type !== 'object') errs.push(`${at}: a map list's items must be objects`);
      if (!Array.isArray(keys) || keys.length === 0) errs.push(`${at}: a map list needs x-kubernetes-list-map-keys`);
      for (const k of Array.isArray(keys) ? keys : []) {
        const p = it.properties?.[k];
        if (!p) errs.push(`${at}: list-map key ${k} is no property of the items`);
        else if (!SCALAR.has(p.type)) errs.push(`${at}: list-map key ${k} is not a scalar`);
        else if (!(it.required || []).includes(k) && !('default' in p))
          errs.push(`${at}: list-map key ${k} is neither required nor defaulted`);
        if (p?.nullable) errs.push(`${at}: list-map key ${k} is nullable`);
      }
    }
  }
  if ('x-kubernetes-list-map-keys' in s && lt !== 'map')
    errs.push(`${at}: x-kubernetes-list-map-keys without x-kubernetes-list-type: map`);
  const mt = s['x-kubernetes-map-type'];
  if (mt !== undefined) {
    if (s.type !== 'object') errs.push(`${at}: x-kubernetes-map-type on a node of type ${s.type}`);
    if (!['atomic', 'granular'].includes(mt)) errs.push(`${at}: x-kubernetes-map-type ${mt}`);
  }

  // CEL rules: well formed, reading what the node has, their cost bounded
  const rules = s['x-kubernetes-validations'];
  if (rules !== undefined) {
    if (!Array.isArray(rules)) errs.push(`${at}: x-kubernetes-validations is not a list`);
    if (ctx.preserved) errs.push(`${at}: a rule under x-kubernetes-preserve-unknown-fields sees no schema`);
    if (ctx.unbounded) errs.push(`${at}: a rule under ${ctx.unbounded}, which has no bound (its cost cannot be estimated)`);
    for (const [i, r] of (Array.isArray(rules) ? rules : []).entries()) {
      const rat = `${at}.x-kubernetes-validations[${i}]`;
      for (const k of Object.keys(r)) if (!RULE_KEYS.has(k)) errs.push(`${rat}: unknown key ${k}`);
      if (typeof r.rule !== 'string' || !r.rule.trim()) errs.push(`${rat}: no rule`);
      else errs.push(...celErrors(r.rule, s, rat));
      if (r.message !== undefined && (typeof r.message !== 'string' || /[\r\n]/.test(r.message) || !r.message.trim()))
        errs.push(`${rat}: message must be one line, not empty`);
    }
  }

  // the children; inside a junctor, beside the skeleton's same child
  const inner = { ...ctx, root: false, intOrString: false, preserved: ctx.preserved || preserves(s) };
  const sk = (pick) => (ctx.junctor ? { skeleton: ctx.skeleton && pick(ctx.skeleton) } : {});
  for (const [p, c] of Object.entries(s.properties || {})) {
    walk(c, `${at}.properties.${p}`, { ...inner, ...sk((x) => x.properties?.[p]) }, errs);
  }
  if (s.additionalProperties && typeof s.additionalProperties === 'object') {
    walk(s.additionalProperties, `${at}.additionalProperties`, { ...inner, ...sk((x) => x.additionalProperties),
      unbounded: inner.unbounded || (s.maxProperties === undefined ? at : null) }, errs);
  }
  if (s.items !== undefined) {
    if (Array.isArray(s.items)) errs.push(`${at}.items: a tuple (a list of schemas) is forbidden`);
    else walk(s.items, `${at}.items`, { ...inner, ...sk((x) => x.items),
      unbounded: inner.unbounded || (s.maxItems === undefined ? at : null) }, errs);
  }
  for (const j of JUNCTORS) {
    if (!(j in s)) continue;
    const subs = j === 'not' ? [s.not] : s[j];
    if (!Array.isArray(subs)) {
      errs.push(`${at}.${j}: not a list`);
      continue;
    }
    const intOrString = j === 'anyOf' && s['x-kubernetes-int-or-string'] === true && subs.length === 2;
    subs.forEach((c, i) => walk(c, `${at}.${j}${j === 'not' ? '' : `[${i}]`}`,
      { ...inner, junctor: ctx.junctor || j, skeleton: ctx.junctor ? ctx.skeleton : s, intOrString }, errs));
  }
}

// A path like .spec.consumer, resolved in a schema: its node, or null.
function resolve(schema, jsonPath) {
  let s = schema;
  for (const part of jsonPath.replace(/^\./, '').split('.')) {
    if (!s) return null;
    if (s.properties?.[part]) s = s.properties[part];
    else if (s.additionalProperties && typeof s.additionalProperties === 'object') s = s.additionalProperties;
    else return null;
  }
  return s;
}
const METADATA_COLUMNS = { creationTimestamp: 'date', name: 'string', namespace: 'string', generation: 'integer' };
const COLUMN_TYPES = { integer: ['integer'], number: ['number', 'integer'], string: ['string'], boolean: ['boolean'],
  date: ['string'] };

export function structuralErrors(crd) {
  const errs = [];
  if (crd.apiVersion !== 'apiextensions.k8s.io/v1' || crd.kind !== 'CustomResourceDefinition')
    return [`not an apiextensions.k8s.io/v1 CustomResourceDefinition: ${crd.apiVersion} ${crd.kind}`];
  const { group, names = {}, scope, versions = [] } = crd.spec || {};
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(group || ''))
    errs.push(`spec.group ${group}: a DNS subdomain with a dot`);
  if (crd.metadata?.name !== `${names.plural}.${group}`)
    errs.push(`metadata.name ${crd.metadata?.name} is not spec.names.plural.spec.group (${names.plural}.${group})`);
  for (const k of ['plural', 'singular']) if (names[k] !== undefined && !DNS_LABEL.test(names[k]))
    errs.push(`spec.names.${k} ${names[k]}: lower case, a DNS label`);
  for (const k of names.shortNames || []) if (!DNS_LABEL.test(k)) errs.push(`spec.names.shortNames ${k}: a DNS label`);
  for (const k of ['kind', 'listKind']) if (names[k] !== undefined && !/^[A-Z][A-Za-z0-9]*$/.test(names[k]))
    errs.push(`spec.names.${k} ${names[k]}: CamelCase`);
  if (names.kind && names.listKind && names.listKind === names.kind) errs.push('spec.names: listKind is kind');
  if (!['Namespaced', 'Cluster'].includes(scope)) errs.push(`spec.scope ${scope}`);
  if (versions.filter((v) => v.storage).length !== 1) errs.push('spec.versions: exactly one storage version');
  if (new Set(versions.map((v) => v.name)).size !== versions.length) errs.push('spec.versions: a name twice');
  if (crd.spec?.preserveUnknownFields === true) errs.push('spec.preserveUnknownFields: must be false in v1');
  for (const [i, v] of versions.entries()) {
    const at = `spec.versions[${i}]`;
    if (!/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(v.name)) errs.push(`${at}.name ${v.name}: vN, vNalphaM or vNbetaM`);
    const schema = v.schema?.openAPIV3Schema;
    if (!schema) {
      errs.push(`${at}.schema.openAPIV3Schema: missing (v1 requires one)`);
      continue;
    }
    const sat = `${at}.schema.openAPIV3Schema`;
    if (schema.type !== 'object') errs.push(`${sat}: the root's type must be object`);
    walk(schema, sat, { root: true, junctor: null, preserved: false, unbounded: null }, errs);
    // metadata at the root: type object, at most name and generateName restricted
    const md = schema.properties?.metadata;
    if (md) {
      for (const k of Object.keys(md)) if (!['type', 'properties'].includes(k)) errs.push(`${sat}.properties.metadata: ${k} is forbidden`);
      for (const [p, c] of Object.entries(md.properties || {})) {
        if (!['name', 'generateName'].includes(p)) errs.push(`${sat}.properties.metadata.properties.${p}: only name and generateName`);
        else if (c.type !== 'string') errs.push(`${sat}.properties.metadata.properties.${p}: type string`);
      }
    }
    if (v.subresources?.status && schema.properties?.status?.type !== 'object' && !preserves(schema))
      errs.push(`${at}.subresources.status: the schema has no status object`);
    const cols = v.additionalPrinterColumns || [];
    if (new Set(cols.map((c) => c.name)).size !== cols.length) errs.push(`${at}.additionalPrinterColumns: a name twice`);
    for (const [j, c] of cols.entries()) {
      const cat = `${at}.additionalPrinterColumns[${j}] (${c.name})`;
      if (!(c.type in COLUMN_TYPES)) errs.push(`${cat}: type ${c.type}`);
      const md2 = /^\.metadata\.([A-Za-z]+)$/.exec(c.jsonPath || '');
      const node = md2 ? { type: METADATA_COLUMNS[md2[1]] } : resolve(schema, c.jsonPath || '');
      if (!node?.type) errs.push(`${cat}: ${c.jsonPath} is no field of the schema`);
      else if (!COLUMN_TYPES[c.type]?.includes(node.type === 'date' ? 'string' : node.type))
        errs.push(`${cat}: type ${c.type} for a field of type ${node.type}`);
      if (c.type === 'date' && node && node.type !== 'date' && node.format !== 'date-time')
        errs.push(`${cat}: a date column of a field that is no date-time`);
    }
  }
  return errs;
}

// structuralErrors finds each of these mistakes in crd (its first version):
// the mutations it misses, [] when none.
export function selfTest(crd) {
  const mutations = {
    'a property without a type': (s) => { s.properties.spec.properties.untyped = { description: 'x' }; },
    'a misspelt key': (s) => { s.properties.spec.properties.consumer.maxlength = 3; },
    'uniqueItems': (s) => { s.properties.spec.properties.list = { type: 'array', items: { type: 'string' }, uniqueItems: true }; },
    'additionalProperties false': (s) => { s.properties.spec.additionalProperties = false; },
    'a type inside a junctor': (s) => { s.properties.spec.anyOf = [{ type: 'object' }]; },
    'a description inside a junctor\'s property': (s) => { s.properties.spec.allOf = [{ properties: { consumer: { description: 'x' } } }]; },
    'a junctor property not in the skeleton': (s) => { s.properties.spec.oneOf = [{ properties: { nope: {} } }]; },
    'a list-map key not required': (s) => { s.properties.status.properties.nodes = { type: 'array', maxItems: 1,
      'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['node'],
      items: { type: 'object', properties: { node: { type: 'string' } } } }; },
    'list-map keys without a map list': (s) => { s.properties.spec.properties.l = { type: 'array', items: { type: 'string' },
      'x-kubernetes-list-map-keys': ['a'] }; },
    'a required field that is none': (s) => { s.properties.spec.required = [...(s.properties.spec.required || []), 'nope']; },
    'maxLength on an integer': (s) => { s.properties.spec.properties.n = { type: 'integer', maxLength: 3 }; },
    'a rule reading an optional field unguarded': (s) => { s.properties.spec.properties.r = { type: 'object',
      properties: { a: { type: 'string', maxLength: 1 } }, 'x-kubernetes-validations': [{ rule: 'size(self.a) > 0' }] }; },
    'a rule reading no field': (s) => { s.properties.spec.properties.r = { type: 'object',
      properties: { a: { type: 'string', maxLength: 1 } }, 'x-kubernetes-validations': [{ rule: 'has(self.b)' }] }; },
    'a rule under an unbounded list': (s) => { s.properties.spec.properties.l = { type: 'array', items: { type: 'object',
      properties: { a: { type: 'string' } }, 'x-kubernetes-validations': [{ rule: 'true' }] } }; },
    'a pattern with a lookahead': (s) => { s.properties.spec.properties.p = { type: 'string', pattern: '^(?!x)' }; },
    'a printer column of no field': (s, v) => { v.additionalPrinterColumns = [{ name: 'X', type: 'string', jsonPath: '.spec.nope' }]; },
  };
  const missed = [];
  for (const [what, mutate] of Object.entries(mutations)) {
    const c = structuredClone(crd);
    const v = c.spec.versions[0];
    mutate(v.schema.openAPIV3Schema, v);
    if (structuralErrors(c).length === 0) missed.push(what);
  }
  return missed;
}
