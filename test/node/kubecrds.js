// SPDX-License-Identifier: Apache-2.0
// kubecrds.js - CustomResourceDefinitions as apiextensions-apiserver keeps
// them, for kubeapi.js: the resource (apiextensions.k8s.io/v1
// customresourcedefinitions, cluster-scoped, with a status subresource),
// described for kubecrapi.js's endpoints as a custom resource is described
// (so create, get, list, watch, update, patch, server-side apply and delete
// are theirs), untyped (its fields are nobody's schema here: kept as sent,
// maps merged key by key and lists whole by an apply); defaulted as the
// server defaults it (names.singular, names.listKind, conversion None;
// status.storedVersions on create) and judged as ValidateCustomResource-
// Definition judges what the stand-in reads (metadata.name plural.group,
// group, scope, names, a schema for each served version, what may not
// change); then by kubecrd.js, which must be able to serve the CRD's
// objects: one it cannot is refused with 500, the stand-in's limit and not
// the server's. Its status as the naming and establishing controllers write
// it (acceptedNames and NamesAccepted, then Established).
'use strict';

const kubecrd = require('./kubecrd');
const { versionHash } = require('./kubemeta');

const status = (code, reason, message, details) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message,
  reason, ...(details ? { details } : {}), code });
const fe = kubecrd.fieldError;
const nowSec = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const GROUP = 'apiextensions.k8s.io';
const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

// The names with the server's defaults (SetDefaults_CustomResourceDefinitionSpec).
function defaulted(spec) {
  const n = spec.names && typeof spec.names === 'object' ? spec.names : {};
  if (!n.singular && typeof n.kind === 'string') n.singular = n.kind.toLowerCase();
  if (!n.listKind && n.kind) n.listKind = `${n.kind}List`;
  spec.names = n;
  if (spec.conversion === undefined) spec.conversion = { strategy: 'None' };
  return spec;
}

// The field errors of crd (old: before an update).
function judge(crd, old) {
  const errs = [];
  const spec = crd.spec && typeof crd.spec === 'object' ? crd.spec : {};
  const n = spec.names || {};
  kubecrd.objectMeta(crd.metadata || {}, old && old.metadata, errs);
  if (crd.metadata && crd.metadata.name && crd.metadata.name !== `${n.plural}.${spec.group}`) {
    errs.push(fe('FieldValueInvalid', 'metadata.name', crd.metadata.name, 'must be spec.names.plural+"."+spec.group'));
  }
  if (!spec.group) errs.push(fe('FieldValueRequired', 'spec.group', ''));
  else if (typeof spec.group !== 'string' || !DNS1123.test(spec.group) || spec.group.length > 253) {
    errs.push(fe('FieldValueInvalid', 'spec.group', spec.group, 'a lowercase RFC 1123 subdomain must consist of lower case '
      + 'alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', '
      + 'regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')'));
  } else if (!spec.group.includes('.')) {
    errs.push(fe('FieldValueInvalid', 'spec.group', spec.group, 'should be a domain with at least one dot'));
  }
  if (!spec.scope) errs.push(fe('FieldValueRequired', 'spec.scope', ''));
  else if (!['Cluster', 'Namespaced'].includes(spec.scope)) {
    errs.push(fe('FieldValueNotSupported', 'spec.scope', spec.scope, 'supported values: "Cluster", "Namespaced"'));
  }
  (Array.isArray(spec.versions) ? spec.versions : []).forEach((v, i) => {
    if (v && v.served && !(v.schema && v.schema.openAPIV3Schema)) {
      errs.push(fe('FieldValueRequired', `spec.versions[${i}].schema.openAPIV3Schema`, '', 'because otherwise all fields are pruned'));
    }
  });
  for (const k of ['plural', 'singular', 'kind', 'listKind']) if (!n[k]) errs.push(fe('FieldValueRequired', `spec.names.${k}`, ''));
  if (old) {
    const immutable = (path, a, b) => {
      if (a !== b) errs.push(fe('FieldValueInvalid', path, a === undefined ? '' : a, 'field is immutable'));
    };
    if (established(old)) {
      immutable('spec.scope', spec.scope, old.spec.scope);
      immutable('spec.names.kind', n.kind, old.spec.names.kind);
    }
    immutable('spec.group', spec.group, old.spec.group);
    immutable('spec.names.plural', n.plural, old.spec.names.plural);
  }
  return errs;
}

const condition = (crd, type) => ((crd.status || {}).conditions || []).find((c) => c.type === type);
const isTrue = (crd, type) => (condition(crd, type) || {}).status === 'True';
const established = (crd) => isTrue(crd, 'Established');

// The CRD resource for kubecrapi.js's endpoints. serving() -> the CRD
// the stand-in serves now (null: none): another one, of other names, is
// refused (it serves one).
function definition(serving) {
  return {
    group: GROUP, version: 'v1', apiVersion: `${GROUP}/v1`, kind: 'CustomResourceDefinition', listKind: 'CustomResourceDefinitionList',
    plural: 'customresourcedefinitions', singular: 'customresourcedefinition', shortNames: ['crd', 'crds'],
    categories: ['api-extensions'], namespaced: false, status: true, hash: versionHash(`${GROUP}/v1/CustomResourceDefinition`),
    schema: { 'x-kubernetes-preserve-unknown-fields': true }, // untyped: deduced, as the stand-in types it
    prune: () => [],
    // Defaults, and on create the status the strategy starts with.
    prepare(obj, live) {
      if (obj.spec && typeof obj.spec === 'object' && !Array.isArray(obj.spec)) defaulted(obj.spec);
      const storage = ((obj.spec || {}).versions || []).find((v) => v && v.storage);
      if (!live) obj.status = { ...(storage ? { storedVersions: [storage.name] } : {}) };
      else if (storage && obj.status && !(obj.status.storedVersions || []).includes(storage.name)) {
        obj.status.storedVersions = [...(obj.status.storedVersions || []), storage.name];
      }
    },
    validate(obj, old) {
      if (obj.kind !== 'CustomResourceDefinition') return [fe('FieldValueInvalid', 'kind', obj.kind, 'must be CustomResourceDefinition')];
      const errs = judge(obj, old);
      if (errs.length) return errs;
      if (old && kubecrd.deepEqual(obj.spec, old.spec)) return errs; // a status or metadata write
      try {
        kubecrd.fromObject(obj, `the CustomResourceDefinition ${obj.metadata.name}`);
      } catch (e) {
        throw status(500, 'InternalError', `kubeapi.js cannot serve this CustomResourceDefinition: ${e.message}`);
      }
      const now = serving();
      if (now && now.metadata.name !== obj.metadata.name) {
        throw status(500, 'InternalError', `kubeapi.js serves one CustomResourceDefinition, ${now.metadata.name}, `
          + `not ${obj.metadata.name} too`);
      }
      return errs;
    },
    invalid: (name, errs) => kubecrd.invalid(`CustomResourceDefinition.${GROUP}`, GROUP, name, errs),
  };
}

// The status of crd once the naming controller has accepted its names
// (Established still False), then (step 2) once the establishing
// controller has established it; null when it has nothing to write.
function settled(crd, step) {
  const s = { ...(crd.status || {}) };
  const n = crd.spec.names;
  const names = { plural: n.plural, singular: n.singular, ...(n.shortNames ? { shortNames: n.shortNames } : {}), kind: n.kind,
    listKind: n.listKind, ...(n.categories ? { categories: n.categories } : {}) };
  const cond = (type, st, reason, message) => {
    const was = condition(crd, type);
    const at = was && was.status === st ? was.lastTransitionTime : nowSec();
    return { type, status: st, lastTransitionTime: at, reason, message };
  };
  if (step === 1) {
    const est = established(crd) ? condition(crd, 'Established')
      : cond('Established', 'False', 'Installing', 'the initial names have been accepted');
    s.acceptedNames = names;
    s.conditions = [cond('NamesAccepted', 'True', 'NoConflicts', 'no conflicts found'), est];
  } else {
    if (established(crd)) return null;
    s.conditions = (s.conditions || []).map((c) => (c.type === 'Established'
      ? cond('Established', 'True', 'InitialNamesAccepted', 'the initial names have been accepted') : c));
  }
  return kubecrd.deepEqual(s, crd.status) ? null : s;
}

module.exports = { definition, settled, established, isTrue };
