// SPDX-License-Identifier: Apache-2.0
// validate.mjs - every object of a rendered chart (helm template output)
// against its Kubernetes schema (kubernetes-models, and
// @kubernetes-models/prometheus-operator for the monitors), and the
// daemon's config out of the ConfigMap into a file for
// `procctl-node --check-config` (and the flags it is started with into
// CONFIG_OUT.args, one a line). With kubernetes.processConfigs, the
// ProcessConfig CRD is files/processconfig-crd.yaml as it is, and a
// structural schema an API server takes (structural.mjs).
// Usage: node validate.mjs PEERS_DIR RENDERED.yaml CONFIG_OUT [--defaults]
//   --defaults: also assert what the chart promises with default values.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';
import { structuralErrors, selfTest } from './structural.mjs';

const [peers, rendered, confOut, ...flags] = process.argv.slice(2);
const nm = path.join(peers, 'node_modules');
const yaml = await import(pathToFileURL(path.join(nm, 'yaml', 'dist', 'index.js')));

// apiVersion -> the module with its models.
async function models(apiVersion) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : [null, apiVersion];
  const file = group === 'monitoring.coreos.com'
    ? path.join(nm, '@kubernetes-models', 'prometheus-operator', group, version, 'index.js')
    : path.join(nm, 'kubernetes-models', ...(group ? [group, version] : [version]), 'index.js');
  if (!fs.existsSync(file)) throw new Error(`no schema for apiVersion ${apiVersion}`);
  return import(pathToFileURL(file));
}

const docs = yaml.parseAllDocuments(fs.readFileSync(rendered, 'utf8'))
  .map((d) => d.toJS())
  .filter((d) => d);
assert.ok(docs.length > 0, 'nothing rendered');
const byKind = {};
for (const doc of docs) {
  const Model = (await models(doc.apiVersion))[doc.kind];
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate(); // throws with the path of what is wrong
  (byKind[doc.kind] ||= []).push(doc);
}

const cms = (byKind.ConfigMap || []).filter((m) => 'procctl-node.conf' in m.data);
assert.equal(cms.length, 1, 'one ConfigMap of the config');
fs.writeFileSync(confOut, cms[0].data['procctl-node.conf']);
// The dashboard's, labelled for the Grafana sidecar, is the file as it is.
const dash = (byKind.ConfigMap || []).filter((m) => 'procctl-node.json' in m.data);
for (const m of dash) {
  assert.equal(m.metadata.labels.grafana_dashboard, '1');
  const file = fs.readFileSync(new URL('../../deploy/helm/procctl-node/files/dashboard.json', import.meta.url), 'utf8');
  assert.deepEqual(JSON.parse(m.data['procctl-node.json']), JSON.parse(file));
}

const ds = byKind.DaemonSet?.[0];
assert.ok(ds, 'a DaemonSet');
const pod = ds.spec.template.spec;
const c = pod.containers[0];
// The config the daemon is started with is the ConfigMap's.
assert.equal(pod.volumes.find((v) => v.name === 'config').configMap.name, cms[0].metadata.name);
assert.deepEqual(c.args.slice(0, 2), ['--config', '/etc/procctl/config/procctl-node.conf']);
assert.ok(c.env.some((e) => e.name === 'NODE_NAME' && e.valueFrom.fieldRef.fieldPath === 'spec.nodeName'));
// The flags after it, one a line, as the kubelet expands them on node-1:
// for `procctl-node --check-config` with the config.
fs.writeFileSync(`${confOut}.args`, c.args.slice(2).map((a) => a.replace('$(NODE_NAME)', 'node-1')).join('\n'));
assert.equal(c.readinessProbe.httpGet.path, '/readyz');
assert.deepEqual(c.livenessProbe.exec.command.slice(-1), ['health']);
// Every hostPath is mounted at the same path in the container.
for (const v of pod.volumes.filter((x) => x.hostPath)) {
  assert.equal(c.volumeMounts.find((m) => m.name === v.name).mountPath, v.hostPath.path);
}
// With TCP, a headless Service of the ready daemons' gRPC port: what a
// controller reads to find a node's daemon (EndpointSlices carry nodeName).
const tcp = c.ports.find((p) => p.name === 'grpc');
const headless = (byKind.Service || []).filter((s) => s.spec.clusterIP === 'None' && s.spec.ports.some((p) => p.name === 'grpc'));
if (tcp) {
  assert.equal(headless.length, 1, 'one headless gRPC Service with TCP on');
  const hs = headless[0].spec;
  assert.equal(hs.publishNotReadyAddresses, false);
  assert.deepEqual(hs.selector, ds.spec.selector.matchLabels);
  assert.deepEqual(hs.ports.find((p) => p.name === 'grpc'), { name: 'grpc', port: tcp.containerPort, targetPort: 'grpc',
    protocol: 'TCP', appProtocol: 'grpc' });
} else {
  assert.equal(headless.length, 0, 'no gRPC Service with TCP off');
}
// kubernetes.enabled: the daemon watches its node's pods with its service
// account's token, under a ClusterRole that reads pods and nothing else;
// off, no RBAC, no token, no flag. kubernetes.processConfigs adds the flag
// --kubernetes-processconfigs, the CRD, and exactly three rules: read the
// ProcessConfigs, patch their status, create Events; off, none of them.
const roles = byKind.ClusterRole || [];
const bindings = byKind.ClusterRoleBinding || [];
const kubeFlags = ['--kubernetes-api', 'in-cluster', '--kubernetes-node', '$(NODE_NAME)'];
const pcFlags = ['--kubernetes-processconfigs', 'true'];
const pc = c.args.includes(pcFlags[0]);
const podRule = { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] };
const pcRules = [
  { apiGroups: ['procctl.io'], resources: ['processconfigs'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['procctl.io'], resources: ['processconfigs/status'], verbs: ['patch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
];
const sa = (byKind.ServiceAccount || [])[0];
if (pc) {
  assert.ok(roles.length, '--kubernetes-processconfigs without the ClusterRole');
  assert.deepEqual(c.args.slice(6, 8), pcFlags, '--kubernetes-processconfigs true, after the watch of the pods');
  assert.equal(c.args.filter((a) => a === pcFlags[0]).length, 1);
}
for (const r of roles.flatMap((x) => x.rules)) {
  const touches = (r.apiGroups || []).some((g) => g === 'procctl.io' || g === 'events.k8s.io') ||
    (r.resources || []).some((x) => x.startsWith('processconfigs') || x === 'events');
  if (!pc) assert.ok(!touches, `a ProcessConfig rule without kubernetes.processConfigs: ${JSON.stringify(r)}`);
}
if (roles.length) {
  assert.equal(roles.length, 1);
  assert.deepEqual(roles[0].rules, [podRule, ...(pc ? pcRules : [])]);
  assert.equal(bindings.length, 1);
  assert.deepEqual(bindings[0].roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roles[0].metadata.name });
  assert.deepEqual(bindings[0].subjects, [{ kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: 'procctl' }]);
  assert.equal(pod.automountServiceAccountToken, true);
  if (sa) assert.equal(sa.automountServiceAccountToken, true);
  assert.deepEqual(c.args.slice(2, 6), kubeFlags);
} else {
  assert.equal(bindings.length, 0);
  assert.equal(pod.automountServiceAccountToken, false);
  if (sa) assert.equal(sa.automountServiceAccountToken, false);
  assert.ok(!c.args.includes('--kubernetes-api'));
}
if (rendered.endsWith('privileged-values.yaml')) assert.equal(roles.length, 0, 'kubernetes.enabled: false');
// The CRD: there with the flag alone; files/processconfig-crd.yaml as it
// is, with the chart's labels and helm.sh/resource-policy: keep (an
// uninstall must not delete every ProcessConfig of the cluster); a
// structural schema the API server takes. (Its type, kubernetes-models'
// apiextensions.k8s.io/v1 CustomResourceDefinition, is checked above with
// every object's.)
const crds = byKind.CustomResourceDefinition || [];
if (pc) {
  assert.equal(crds.length, 1, 'the ProcessConfig CRD with --kubernetes-processconfigs');
  const crd = crds[0];
  const file = yaml.parse(fs.readFileSync(new URL('../../deploy/helm/procctl-node/files/processconfig-crd.yaml',
    import.meta.url), 'utf8'));
  assert.ok(!file.metadata.labels && !file.metadata.annotations, 'the file has no labels or annotations (the chart sets them)');
  const { labels, annotations, ...meta } = crd.metadata;
  assert.deepEqual({ ...crd, metadata: meta }, file, 'the rendered CRD is not files/processconfig-crd.yaml');
  assert.deepEqual(annotations, { 'helm.sh/resource-policy': 'keep' });
  assert.deepEqual(labels, ds.metadata.labels, 'the chart\'s labels');
  assert.equal(crd.metadata.name, 'processconfigs.procctl.io');
  // what the daemon asks for: the group, version and resource, and the status subresource it patches
  assert.equal(crd.spec.group, 'procctl.io');
  assert.equal(crd.spec.names.plural, 'processconfigs');
  assert.equal(crd.spec.scope, 'Namespaced');
  const v1a1 = crd.spec.versions.find((v) => v.name === 'v1alpha1');
  assert.ok(v1a1?.served && v1a1.storage, 'v1alpha1 served and stored');
  assert.deepEqual(v1a1.subresources?.status, {});
  const nodes = v1a1.schema.openAPIV3Schema.properties.status.properties.nodes;
  assert.equal(nodes['x-kubernetes-list-type'], 'map', 'status.nodes a map list: each node applies its own entry');
  assert.deepEqual(nodes['x-kubernetes-list-map-keys'], ['node']);
  assert.deepEqual(structuralErrors(crd), [], 'the CRD is not one an API server takes');
  assert.deepEqual(selfTest(crd), [], 'structural.mjs misses these mistakes');
} else {
  assert.equal(crds.length, 0, 'no CRD without kubernetes.processConfigs');
}
if (rendered.endsWith('processconfigs-values.yaml')) assert.ok(pc, 'kubernetes.processConfigs.enabled: true');
if (flags.includes('--defaults')) {
  assert.equal(roles.length, 1, 'the watch of the node\'s pods is on by default');
  assert.ok(!pc, 'ProcessConfigs are off by default');
  const sc = c.securityContext;
  assert.equal(pod.hostPID, true);
  assert.equal(sc.privileged, false);
  assert.equal(sc.allowPrivilegeEscalation, false);
  assert.equal(sc.readOnlyRootFilesystem, true);
  assert.deepEqual(sc.capabilities.drop, ['ALL']);
  assert.deepEqual(sc.capabilities.add.slice().sort(),
    ['CHECKPOINT_RESTORE', 'DAC_READ_SEARCH', 'IPC_LOCK', 'PERFMON', 'SYS_PTRACE']);
  assert.equal(sc.seccompProfile.type, 'RuntimeDefault');
  assert.equal(pod.priorityClassName, 'system-node-critical');
  assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
  assert.deepEqual(pod.nodeSelector, { 'kubernetes.io/os': 'linux' });
  assert.equal(ds.spec.updateStrategy.type, 'RollingUpdate');
  assert.deepEqual(pod.volumes.filter((v) => v.hostPath).map((v) => v.hostPath.path).sort(),
    ['/run/procctl', '/run/procctl/locks', '/var/lib/procctl']);
  assert.ok(!byKind.Service, 'no Service without TCP or a ServiceMonitor');
  assert.ok(!byKind.ServiceMonitor && !byKind.PodMonitor, 'monitors off by default');
  assert.ok(!byKind.PrometheusRule, 'rules off by default');
  assert.equal(dash.length, 0, 'no dashboard by default');
}
// The rules carry the thresholds of the values.
for (const pr of byKind.PrometheusRule || []) {
  const alerts = pr.spec.groups.flatMap((g) => g.rules).filter((r) => r.alert);
  assert.ok(alerts.length >= 10, 'the alerts');
  for (const r of alerts) {
    assert.ok(['critical', 'warning', 'info'].includes(r.labels.severity), `${r.alert}: a severity`);
    assert.match(r.annotations.runbook_url, new RegExp(`#${r.alert.toLowerCase()}$`), `${r.alert}: its runbook section`);
    assert.ok(r.annotations.summary && r.annotations.description, `${r.alert}: summary and description`);
  }
}
// ci/mtls-values.yaml: a desired config by namespace and labels, as written.
if (rendered.endsWith('mtls-values.yaml')) {
  assert.match(cms[0].data['procctl-node.conf'],
    /\[desired shop-canaries\]\nconsumer = echo\nschema = 1\nnamespace = shop\nlabel_selector = app=web,track in \(canary\),!frozen\n/);
}
// ci/options-values.yaml: each option lands where it says.
if (rendered.endsWith('options-values.yaml')) {
  assert.match(c.image, /^ghcr\.io\/procctl\/procctl-node@sha256:[0-9a-f]{64}$/);
  assert.equal(pod.runtimeClassName, 'runc');
  assert.deepEqual(pod.securityContext, { fsGroup: 2000 });
  assert.equal(c.securityContext.readOnlyRootFilesystem, false); // overridden
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']); // the rest kept
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.deepEqual([c.livenessProbe.initialDelaySeconds, c.livenessProbe.periodSeconds, c.livenessProbe.timeoutSeconds,
    c.livenessProbe.failureThreshold], [30, 60, 15, 5]);
  assert.deepEqual([c.readinessProbe.initialDelaySeconds, c.readinessProbe.periodSeconds,
    c.readinessProbe.timeoutSeconds, c.readinessProbe.failureThreshold], [2, 10, 3, 6]);
  assert.deepEqual(pod.volumes.find((v) => v.name === 'cuda').hostPath, { path: '/usr/local/cuda', type: 'Directory' });
  assert.deepEqual(c.volumeMounts.find((m) => m.name === 'cuda'), { name: 'cuda', mountPath: '/usr/local/cuda', readOnly: true });
  const ann = ds.spec.template.metadata.annotations;
  assert.deepEqual(ann, { team: 'gpu', 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9464',
    'prometheus.io/path': '/metrics' });
  const sm = byKind.ServiceMonitor[0];
  assert.equal(sm.metadata.namespace, 'monitoring');
  assert.deepEqual(sm.spec.namespaceSelector, { matchNames: ['procctl'] });
  const ep = sm.spec.endpoints[0];
  assert.equal(ep.scrapeTimeout, '10s');
  assert.equal(ep.scheme, 'https');
  assert.equal(ep.tlsConfig.serverName, 'procctl-node-metrics');
  assert.deepEqual(ep.relabelings.map((r) => r.targetLabel), ['node', 'cluster']);
  assert.equal(ep.metricRelabelings[0].action, 'drop');
  const pm = byKind.PodMonitor[0];
  assert.equal(pm.metadata.namespace, 'monitoring');
  assert.equal(pm.spec.podMetricsEndpoints[0].scrapeTimeout, '5s');
  assert.deepEqual(pm.spec.podMetricsEndpoints[0].relabelings.map((r) => r.targetLabel), ['node', 'cluster']);
}
console.log(`${rendered}: ${docs.length} objects valid (${Object.keys(byKind).sort().join(', ')})`);
