// SPDX-License-Identifier: Apache-2.0
// kubestand.js - the kube tests' Kubernetes API server: kubeapi.js started
// as a child with the test's certificate (with the ProcessConfig CRD
// installed or not), its controls reached over its Unix socket (ctl), its
// API by request(), and Pods made as the API server stores them,
// validated against the Kubernetes schemas (kubernetes-models).
// file is the test's scratch file namer (certs.js's), which holds
// apiserver.crt, apiserver.key, ca.crt and token.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const https = require('node:https');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const h = require('./harness');

const KUBEAPI = path.join(__dirname, 'kubeapi.js');
const TOKEN = 'node-agent-token';
let Pod;

// The schemas (an ES module): loaded before the first pod().
async function load() {
  ({ Pod } = await import(pathToFileURL(path.join(process.env.NODE_PATH, 'kubernetes-models', 'v1', 'index.js'))));
}

// A Pod of node nodeName. container: a running container's 64-hex ID
// (status.containerStatuses); phase: status.phase; ephemeral: a `kubectl
// debug` container's ID (spec.ephemeralContainers, and its status);
// annotations: metadata's.
function pod(name, { ns = 'prod', uid = crypto.randomUUID(), labels = {}, nodeName = 'node-a', container = null,
  phase = null, ephemeral = null, annotations = null } = {}) {
  const running = (n, id) => ({ name: n, containerID: `containerd://${id}`, image: `${n}:1`, imageID: '', ready: true,
    restartCount: 0, started: true });
  const status = {};
  if (phase || container || ephemeral) status.phase = phase || 'Running';
  if (container) status.containerStatuses = [running('app', container)];
  if (ephemeral) status.ephemeralContainerStatuses = [running('debugger', ephemeral)];
  const p = new Pod({ metadata: { name, namespace: ns, uid, labels, ...(annotations ? { annotations } : {}) },
    spec: { nodeName, containers: [{ name: 'app', image: 'app:1' }],
      ...(ephemeral ? { ephemeralContainers: [{ name: 'debugger', image: 'busybox:1', targetContainerName: 'app' }] } : {}) },
    ...(Object.keys(status).length ? { status } : {}) });
  p.validate();
  return p.toJSON();
}

// The stand-in with objs: its API on host:port (in a cluster's network
// with prefix), its controls on a socket (ctl(method, path, body)). crd:
// whether it starts with the ProcessConfig CRD installed (as the chart
// installs it), else its API has no procctl.io until one applies the CRD.
async function apiServer(file, objs, { port, host = '127.0.0.1', prefix = [], crd = true }) {
  const objects = file(`objects-${port}.json`);
  fs.writeFileSync(objects, JSON.stringify(objs));
  const sock = file(`control-${port}.sock`);
  const child = new h.Child(process.execPath, [KUBEAPI, ...(crd ? [] : ['--without-crd']), String(port), file('apiserver.crt'),
    file('apiserver.key'), TOKEN, objects, sock], { prefix, env: { ...process.env, KUBEAPI_HOST: host } });
  await child.line(/^listening /, { out: true });
  child.ctl = (method, p, body) => new Promise((resolve, reject) => {
    const req = http.request({ socketPath: sock, method, path: p }, (res) => {
      let out = '';
      res.on('data', (d) => { out += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(out)) : reject(new Error(out))));
    });
    req.on('error', reject);
    req.end(body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body));
  });
  return child;
}

// A request to the stand-in on 127.0.0.1:port, over HTTPS with the token:
// { code, body (parsed when JSON), text, headers }. body: an object (sent
// as JSON) or text; type: its Content-Type; token: null for none.
function request(file, port, method, p, body, { type = 'application/json', token = TOKEN, headers = {} } = {}) {
  const data = body === undefined ? null : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, method, path: p, ca: fs.readFileSync(file('ca.crt')), agent: false,
      headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(data !== null ? { 'Content-Type': type } : {}),
        ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed = null;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          parsed = null; // not JSON (YAML, a page)
        }
        resolve({ code: res.statusCode, body: parsed, text, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.setTimeout(20000, () => req.destroy(new Error(`${method} ${p}: no answer in 20 s`)));
    req.end(data === null ? undefined : data);
  });
}

// The daemon's arguments for the API at url, as node-a.
const kubeArgs = (file, url, more = []) => ['--kubernetes-api', url, '--kubernetes-node', 'node-a',
  '--kubernetes-token-file', file('token'), '--kubernetes-ca-file', file('ca.crt'), '--kubernetes-watch-s', '60', ...more];

// The certificate, key and token the stand-in serves with, made by the
// test's certs.js (ca, leaf) under the names kubeArgs and apiServer use.
function credentials(file, ca, leaf) {
  ca('ca');
  leaf('apiserver', 'kubernetes', 'ca', 'subjectAltName = IP:10.77.1.1, IP:10.77.2.1, IP:127.0.0.1\n' +
    'extendedKeyUsage = serverAuth');
  fs.writeFileSync(file('token'), `${TOKEN}\n`);
}

module.exports = { load, pod, apiServer, request, kubeArgs, credentials, TOKEN };
