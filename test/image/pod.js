// SPDX-License-Identifier: Apache-2.0
// pod.js - the chart's DaemonSet pod as a `podman run`: what its rendered
// spec asks of a container runtime, read from the YAML (helm template),
// never retyped. Every field of the pod and its container is either
// carried over or named here as what only a cluster does (scheduling,
// pulling, the API's service account); anything else is an error, so a
// field added to the chart cannot go untested.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');

// What a runtime has no part in: the scheduler's, the kubelet's pulls,
// the API server's.
const POD_CLUSTER_ONLY = ['serviceAccountName', 'priorityClassName', 'imagePullSecrets', 'nodeSelector',
  'tolerations', 'affinity'];
const POD_HANDLED = ['hostPID', 'hostNetwork', 'automountServiceAccountToken', 'terminationGracePeriodSeconds',
  'containers', 'volumes', ...POD_CLUSTER_ONLY];
const CONTAINER_HANDLED = ['name', 'image', 'imagePullPolicy', 'command', 'args', 'env', 'ports', 'livenessProbe',
  'readinessProbe', 'securityContext', 'resources', 'volumeMounts'];
const SECURITY_HANDLED = ['privileged', 'allowPrivilegeEscalation', 'capabilities', 'readOnlyRootFilesystem',
  'runAsUser', 'runAsGroup', 'seccompProfile'];

function only(obj, allowed, what) {
  for (const k of Object.keys(obj || {})) {
    if (!allowed.includes(k)) throw new Error(`${what}.${k}: not handled by test/image/pod.js`);
  }
}

// The rendered objects by kind.
function parse(text) {
  const byKind = {};
  for (const d of YAML.parseAllDocuments(text).map((x) => x.toJS()).filter((x) => x)) {
    (byKind[d.kind] ||= []).push(d);
  }
  return byKind;
}

// A Kubernetes quantity of bytes ("256Mi", "1G", "500000") in bytes.
function bytes(q) {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) throw new Error(`a memory quantity not handled: ${q}`);
  const mult = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? mult[m[2]] : 1);
}

// A CPU quantity ("500m", "2") in CPUs.
function cpus(q) {
  const m = /^(\d+(?:\.\d+)?)(m)?$/.exec(String(q));
  if (!m) throw new Error(`a cpu quantity not handled: ${q}`);
  return Number(m[1]) / (m[2] ? 1000 : 1);
}

// A volume's files as the kubelet writes a ConfigMap or Secret volume: a
// timestamped directory with the files, `..data` a symlink to it, and each
// key a symlink through `..data`. Returns swap(files): the kubelet's update
// (a new directory, `..data` renamed over, the old one removed).
function atomicDir(dir, files) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  let seq = 0;
  const write = (data) => {
    const ts = `..${new Date().toISOString().replace(/[-:]/g, '_').replace('T', '_').replace('Z', '')}.${seq++}`;
    fs.mkdirSync(path.join(dir, ts), { mode: 0o755 });
    for (const [k, v] of Object.entries(data)) fs.writeFileSync(path.join(dir, ts, k), v, { mode: 0o644 });
    return ts;
  };
  let cur = write(files);
  fs.symlinkSync(cur, path.join(dir, '..data'));
  for (const k of Object.keys(files)) fs.symlinkSync(path.join('..data', k), path.join(dir, k));
  return (next) => {
    const ts = write(next);
    fs.symlinkSync(ts, path.join(dir, '..data_tmp'));
    fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
    fs.rmSync(path.join(dir, cur), { recursive: true, force: true });
    cur = ts;
  };
}

// The run. opts: name (the container's, and the pod's hostname), nodeName
// (spec.nodeName), dir (where ConfigMap and Secret volumes are made),
// secrets ({secretName: {file: contents}}), seccomp (the file that is the
// runtime's default profile, or null for podman's own), edit (a function
// given the container to change it first: a capability taken away).
// Returns {args, image, grace, liveness, readiness, swapConfig}.
function podmanRun(rendered, opts) {
  const kinds = parse(rendered);
  const ds = kinds.DaemonSet?.[0];
  if (!ds) throw new Error('no DaemonSet rendered');
  const pod = structuredClone(ds.spec.template.spec);
  only(pod, POD_HANDLED, 'spec.template.spec');
  if (pod.containers.length !== 1) throw new Error('one container expected');
  const c = pod.containers[0];
  if (opts.edit) opts.edit(c);
  only(c, CONTAINER_HANDLED, 'container');
  const sc = c.securityContext || {};
  only(sc, SECURITY_HANDLED, 'container.securityContext');
  if (pod.automountServiceAccountToken !== false) throw new Error('a service account token would be mounted');

  const args = ['run', '--detach', '--name', opts.name, '--hostname', opts.name];
  if (pod.hostPID) args.push('--pid', 'host');
  if (pod.hostNetwork) args.push('--network', 'host');
  if (sc.runAsUser !== undefined) args.push('--user', `${sc.runAsUser}:${sc.runAsGroup ?? 0}`);
  if (sc.privileged) {
    args.push('--privileged');
  } else {
    for (const cap of sc.capabilities?.drop || []) args.push('--cap-drop', cap);
    for (const cap of sc.capabilities?.add || []) args.push('--cap-add', cap);
  }
  if (sc.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges');
  if (sc.readOnlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false'); // no tmpfs a pod lacks
  const seccomp = sc.seccompProfile?.type;
  if (seccomp === 'RuntimeDefault' || seccomp === undefined) {
    if (opts.seccomp) args.push('--security-opt', `seccomp=${opts.seccomp}`);
  } else if (seccomp === 'Unconfined') {
    args.push('--security-opt', 'seccomp=unconfined');
  } else {
    throw new Error(`seccompProfile ${seccomp}: not handled`);
  }
  const limits = c.resources?.limits || {};
  if (limits.memory) args.push('--memory', String(bytes(limits.memory)));
  if (limits.cpu) args.push('--cpus', String(cpus(limits.cpu)));

  for (const e of c.env || []) {
    if (e.value !== undefined) {
      args.push('--env', `${e.name}=${e.value}`);
    } else if (e.valueFrom?.fieldRef?.fieldPath === 'spec.nodeName') {
      args.push('--env', `${e.name}=${opts.nodeName}`);
    } else {
      throw new Error(`env ${e.name}: not handled`);
    }
  }

  const volumes = Object.fromEntries(pod.volumes.map((v) => [v.name, v]));
  let swapConfig = null;
  for (const m of c.volumeMounts || []) {
    const v = volumes[m.name];
    if (!v) throw new Error(`volumeMount ${m.name}: no such volume`);
    let src;
    if (v.hostPath) {
      if (v.hostPath.type === 'DirectoryOrCreate') fs.mkdirSync(v.hostPath.path, { recursive: true, mode: 0o755 });
      else if (v.hostPath.type && v.hostPath.type !== 'Directory') throw new Error(`hostPath type ${v.hostPath.type}`);
      src = v.hostPath.path;
    } else if (v.configMap) {
      const cm = (kinds.ConfigMap || []).find((x) => x.metadata.name === v.configMap.name);
      if (!cm) throw new Error(`ConfigMap ${v.configMap.name} not rendered`);
      src = path.join(opts.dir, `${opts.name}-configmap-${m.name}`); // each pod's own, as the kubelet's
      swapConfig = atomicDir(src, cm.data);
    } else if (v.secret) {
      const files = opts.secrets?.[v.secret.secretName];
      if (!files) throw new Error(`Secret ${v.secret.secretName}: the test gives none`);
      src = path.join(opts.dir, `${opts.name}-secret-${m.name}`);
      atomicDir(src, files);
    } else {
      throw new Error(`volume ${m.name}: a kind not handled`);
    }
    args.push('--volume', `${src}:${m.mountPath}${m.readOnly ? ':ro' : ''}`);
  }
  if (c.command) args.push('--entrypoint', JSON.stringify(c.command));
  args.push(c.image, ...(c.args || []));
  return {
    args,
    image: c.image,
    grace: pod.terminationGracePeriodSeconds ?? 30,
    liveness: c.livenessProbe?.exec?.command,
    readiness: c.readinessProbe?.httpGet,
    ports: Object.fromEntries((c.ports || []).map((p) => [p.name, p.containerPort])),
    swapConfig,
  };
}

module.exports = { podmanRun, parse, atomicDir };
