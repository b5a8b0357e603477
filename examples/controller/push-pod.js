#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// push-pod.js - a controller's round trip, small and real: give one pod's
// processes a config and wait for their acks. It reads the pod from the
// Kubernetes API (its UID and spec.nodeName), finds that node's
// procctl-node in the EndpointSlices of the chart's headless Service
// (<fullname>-nodes: ready daemons only, each endpoint with its nodeName),
// dials that pod IP over mTLS checking the Service's DNS name, publishes
// (or, with --desired, sets a desired config for the pod, which its later
// processes get too), and prints a line per process. Given the pod's UID
// alone, it asks every ready daemon which has the pod's processes.
//
// What it adds to `procctl --server`: the lookup a controller does in its
// reconcile loop (pod -> node -> daemon address), from the API server, with
// the controller's own service account.
//
// Usage: push-pod.js (--pod NAMESPACE/NAME | --pod-uid UID) --consumer NAME [--schema N]
//          (--data STRING | --file PATH) [--desired] [--timeout SECONDS]
//          [--daemons NAMESPACE/SERVICE] --tls-ca FILE --tls-cert FILE --tls-key FILE
//          [--tls-server-name NAME] [--kube-api URL --kube-token FILE --kube-ca FILE]
// Exit status as procctl's: 0 every process applied it, 1 failed (a process
// refused it, was not written, or a call failed), 2 bad usage, 3 not acked
// within --timeout, 4 no process of the pod (without --desired).
// Needs @grpc/grpc-js and @grpc/proto-loader (npm install, here).
'use strict';

const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const SA = '/var/run/secrets/kubernetes.io/serviceaccount';
const OPTS = ['pod', 'pod-uid', 'consumer', 'schema', 'data', 'file', 'timeout', 'daemons', 'tls-ca', 'tls-cert', 'tls-key',
  'tls-server-name', 'kube-api', 'kube-token', 'kube-ca', 'proto-dir'];

class Failure extends Error {
  constructor(msg, code = 1) {
    super(msg);
    this.code = code;
  }
}

function parseArgs(argv) {
  const o = { schema: '1', timeout: '10', daemons: 'procctl/procctl-node-nodes', desired: false,
    'proto-dir': path.join(__dirname, '..', '..', 'proto') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--desired') {
      o.desired = true;
    } else if (a.startsWith('--') && OPTS.includes(a.slice(2)) && i + 1 < argv.length) {
      o[a.slice(2)] = argv[++i];
    } else {
      throw new Failure(`${a}: ${a.startsWith('--') && OPTS.includes(a.slice(2)) ? 'needs a value' : 'not an option'}`, 2);
    }
  }
  for (const need of ['consumer', 'tls-ca', 'tls-cert', 'tls-key'])
    if (!o[need]) throw new Failure(`--${need} is required`, 2);
  if (!o.pod === !o['pod-uid']) throw new Failure('give the pod once: --pod NAMESPACE/NAME or --pod-uid UID', 2);
  if ((o.pod && !o.pod.includes('/')) || !o.daemons.includes('/')) throw new Failure('--pod and --daemons are NAMESPACE/NAME', 2);
  if (o['pod-uid'] && o.desired) throw new Failure('--desired takes --pod: a pod that has no process yet is found by its name', 2);
  if ((o.data === undefined) === (o.file === undefined)) throw new Failure('give the config once: --data or --file', 2);
  if (!/^[1-9][0-9]*$/.test(o.schema)) throw new Failure(`--schema: '${o.schema}' is not a schema version`, 2);
  if (!(Number(o.timeout) > 0 && Number(o.timeout) <= 86400)) throw new Failure(`--timeout: '${o.timeout}' is not seconds`, 2);
  return o;
}

// A GET of the Kubernetes API: the parsed object.
function kubeGet(o, urlPath) {
  const base = o['kube-api'] || `https://${process.env.KUBERNETES_SERVICE_HOST}:${process.env.KUBERNETES_SERVICE_PORT}`;
  const token = fs.readFileSync(o['kube-token'] || `${SA}/token`, 'utf8').trim();
  const ca = fs.readFileSync(o['kube-ca'] || `${SA}/ca.crt`);
  return new Promise((resolve, reject) => {
    const req = https.get(new URL(urlPath, base), { ca, headers: { Authorization: `Bearer ${token}` }, timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s) => (body += s));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Failure(`GET ${urlPath}: ${res.statusCode} ${body.slice(0, 200)}`));
        try {
          return resolve(JSON.parse(body));
        } catch (e) {
          return reject(new Failure(`GET ${urlPath}: not JSON (${e.message})`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Failure(`GET ${urlPath}: no answer in 10 s`)));
    req.on('error', (e) => reject(e instanceof Failure ? e : new Failure(`GET ${urlPath}: ${e.message}`)));
  });
}

// Every ready daemon of the headless Service: [{ node, addr }].
async function daemons(o) {
  const [dns, svc] = o.daemons.split('/');
  const sel = encodeURIComponent(`kubernetes.io/service-name=${svc}`);
  const slices = await kubeGet(o, `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(dns)}/endpointslices?labelSelector=${sel}`);
  const out = [];
  for (const s of slices.items || []) {
    const port = (s.ports || []).find((p) => p.name === 'grpc');
    for (const e of (port && s.endpoints) || []) {
      if (e.nodeName && e.addresses && e.addresses.length && (!e.conditions || e.conditions.ready !== false))
        out.push({ node: e.nodeName, addr: `${s.addressType === 'IPv6' ? `[${e.addresses[0]}]` : e.addresses[0]}:${port.port}` });
    }
  }
  return out;
}

// What to do about a call that failed, when the failure says.
function hint(err) {
  if (err.code !== grpc.status.UNAVAILABLE) return '';
  if (/certificate verify failed|self.signed|unable to get (local )?issuer/i.test(err.details))
    return ' (the daemon\'s certificate is not of --tls-ca)';
  if (/does not match|not in peer certificate|altname|hostname/i.test(err.details))
    return ' (the daemon\'s certificate does not carry --tls-server-name, or the Service\'s DNS name)';
  if (/ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ENOTFOUND/.test(err.details)) return ''; // nobody there: said
  return ' (if the TLS handshake failed: --tls-cert must be of the daemon\'s tls_client_ca and for client ' +
    'authentication (extendedKeyUsage clientAuth), and --tls-ca the CA of the daemon\'s certificate)';
}

function call(client, method, req, deadline) {
  return new Promise((resolve, reject) => {
    client[method](req, { deadline }, (err, resp) => (err
      ? reject(new Failure(`${method}: ${grpc.status[err.code]}: ${err.details}${hint(err)}`))
      : resolve(resp)));
  });
}

let NodeService; // the API, loaded by main

// A client of the daemon at addr, checking the Service's name.
function dial(o, addr) {
  const [dns, svc] = o.daemons.split('/');
  const name = o['tls-server-name'] || `${svc}.${dns}.svc`;
  const creds = grpc.credentials.createSsl(fs.readFileSync(o['tls-ca']), fs.readFileSync(o['tls-key']), fs.readFileSync(o['tls-cert']));
  // A daemon restarted (an update, a crash) serves again within about a
  // second: reconnect after 250 ms at first, never more than 5 s apart
  // (gRPC's defaults, 1 s growing to 120 s, leave a long-lived channel
  // unable to see the successor for seconds).
  return new NodeService(addr, creds, { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name,
    'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 5000 });
}

// Where the pod's processes are: [{ node, addr }] and its UID. --pod: the
// pod's spec.nodeName, and that node's daemon. --pod-uid (the pod's name
// unknown): the daemons that have a process of it, asked all at once.
async function locate(o) {
  const all = await daemons(o);
  if (o['pod-uid']) {
    const has = await Promise.all(all.map(async (at) => {
      const c = dial(o, at.addr);
      try {
        const r = await call(c, 'ListProcesses', { filter: { consumer: o.consumer, schemaVersion: Number(o.schema), podUid: o['pod-uid'] } },
          Date.now() + 10000);
        return r.processes.length > 0;
      } finally {
        c.close();
      }
    }));
    return { uid: o['pod-uid'], at: all.filter((_, i) => has[i]), where: `pod ${o['pod-uid']} (asked ${all.length} daemons)` };
  }
  const [ns, name] = o.pod.split('/');
  const pod = await kubeGet(o, `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`);
  const node = pod.spec && pod.spec.nodeName;
  if (!node) throw new Failure(`pod ${o.pod} is not scheduled on a node yet`);
  const at = all.filter((d) => d.node === node).slice(0, 1);
  if (!at.length) throw new Failure(`no ready procctl-node on node ${node} (EndpointSlices of ${o.daemons})`);
  return { uid: pod.metadata.uid, at, where: `pod ${o.pod} on node ${node}` };
}

// Publish (or set the desired config) on one daemon: its results.
async function push(o, uid, at) {
  const client = dial(o, at.addr);
  const waitMs = Math.round(Number(o.timeout) * 1000);
  const selector = { consumer: o.consumer, schemaVersion: Number(o.schema), podUid: uid };
  const payload = o.file !== undefined ? fs.readFileSync(o.file) : Buffer.from(o.data);
  const deadline = Date.now() + waitMs + 5000;
  try {
    return o.desired
      ? (await call(client, 'SetDesiredConfig', { config: { selector, payload }, waitMs }, deadline)).results
      : (await call(client, 'Publish', { selector, payload, waitMs }, deadline)).results;
  } finally {
    client.close();
  }
}

async function main(argv) {
  const o = parseArgs(argv);
  // defaults: a field at its proto3 default (a process_status of 0) is there, as 0
  const pkg = protoLoader.loadSync('procctl/v1/node.proto', { includeDirs: [o['proto-dir']], enums: String, longs: String,
    arrays: true, defaults: true });
  ({ NodeService } = grpc.loadPackageDefinition(pkg).procctl.v1);
  const t0 = process.hrtime.bigint();
  const where = await locate(o);
  const t1 = process.hrtime.bigint();
  const results = [];
  for (const at of where.at) {
    for (const r of await push(o, where.uid, at)) {
      results.push(r);
      console.log(`node=${at.node} daemon=${at.addr} pid=${r.process.pid} instance=${r.process.instanceId} ` +
        `generation=${r.generation} status=${r.status.replace('PUBLISH_STATUS_', '')} process_status=${r.processStatus}` +
        `${r.error ? ` error=${JSON.stringify(r.error)}` : ''}`);
    }
  }
  const ms = (a, b) => (Number(b - a) / 1e6).toFixed(1);
  console.log(`pod=${o.pod || ''} uid=${where.uid} processes=${results.length} lookup_ms=${ms(t0, t1)} ` +
    `push_ms=${ms(t1, process.hrtime.bigint())}`);
  if (!results.length && !o.desired) throw new Failure(`no attached process of ${o.consumer} in ${where.where}`, 4);
  const st = results.map((r) => r.status);
  if (st.some((x) => !['PUBLISH_STATUS_APPLIED', 'PUBLISH_STATUS_PENDING', 'PUBLISH_STATUS_SUPERSEDED'].includes(x))) return 1;
  return st.includes('PUBLISH_STATUS_PENDING') ? 3 : 0;
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
}, (e) => {
  console.error(`push-pod: ${e.message}`);
  process.exitCode = e instanceof Failure ? e.code : 1;
});
