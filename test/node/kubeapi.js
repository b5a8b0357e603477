// SPDX-License-Identifier: Apache-2.0
// kubeapi.js - the two reads of the Kubernetes API a controller of pods
// makes, answered from a file of objects, over HTTPS with a bearer token,
// as the API server answers them: GET a pod, and LIST EndpointSlices by
// label selector (kubernetes.io/service-name=NAME). There is no cluster
// here; the objects are validated against their schemas by the test that
// writes them. The file is read again on every request.
// Usage: node kubeapi.js PORT CERT KEY TOKEN OBJECTS.json   (listens on 127.0.0.1)
'use strict';

const fs = require('node:fs');
const https = require('node:https');

const [port, cert, key, token, objects] = process.argv.slice(2);

const status = (code, reason, message) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

function answer(req) {
  if (req.method !== 'GET') return [405, status(405, 'MethodNotAllowed', 'only GET here')];
  if (req.headers.authorization !== `Bearer ${token}`) return [401, status(401, 'Unauthorized', 'Unauthorized')];
  const u = new URL(req.url, 'https://kubernetes.default.svc');
  const items = JSON.parse(fs.readFileSync(objects, 'utf8'));
  let m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(u.pathname);
  if (m) {
    const pod = items.find((o) => o.kind === 'Pod' && o.metadata.namespace === m[1] && o.metadata.name === m[2]);
    return pod ? [200, pod] : [404, status(404, 'NotFound', `pods "${m[2]}" not found`)];
  }
  m = /^\/apis\/discovery\.k8s\.io\/v1\/namespaces\/([^/]+)\/endpointslices$/.exec(u.pathname);
  if (m) {
    const want = (u.searchParams.get('labelSelector') || '').split(',').filter(Boolean).map((x) => x.split('='));
    const list = items.filter((o) => o.kind === 'EndpointSlice' && o.metadata.namespace === m[1] &&
      want.every(([k, v]) => (o.metadata.labels || {})[k] === v));
    return [200, { kind: 'EndpointSliceList', apiVersion: 'discovery.k8s.io/v1', metadata: { resourceVersion: '1' }, items: list }];
  }
  return [404, status(404, 'NotFound', 'the server could not find the requested resource')];
}

https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  const [code, body] = answer(req);
  console.log(`request method=${req.method} path=${req.url} code=${code}`);
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}).listen(Number(port), '127.0.0.1', () => console.log(`listening port=${port}`));
