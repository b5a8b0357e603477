// SPDX-License-Identifier: Apache-2.0
// kubereq.js - requests to a Kubernetes API server, as a client in the
// cluster's network makes them (kubectl's calls: server-side apply,
// get, delete), for a test whose API server is only reached from there.
// stdin: a JSON array of { method, path, type, body (an object: sent as
// JSON; a string: as it is) }; stdout: a JSON array of { code, body }
// (parsed when JSON), in order, each sent after the one before it
// answered. Usage: node kubereq.js URL TOKEN_FILE CA_FILE
'use strict';

const fs = require('node:fs');
const https = require('node:https');

const [url, tokenFile, caFile] = process.argv.slice(2);
const token = fs.readFileSync(tokenFile, 'utf8').trim();
const ca = fs.readFileSync(caFile);
const base = new URL(url);

function one({ method, path, type = 'application/json', body }) {
  const data = body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request({ host: base.hostname, port: base.port, method, path, ca, agent: false,
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...(data !== null ? { 'Content-Type': type } : {}) } },
    (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed = text;
        try { parsed = JSON.parse(text); } catch { /* not JSON: as it is */ }
        resolve({ code: res.statusCode, body: parsed });
      });
    });
    req.setTimeout(20000, () => req.destroy(new Error(`${method} ${path}: no answer in 20 s`)));
    req.on('error', reject);
    req.end(data === null ? undefined : data);
  });
}

(async () => {
  const out = [];
  for (const r of JSON.parse(fs.readFileSync(0, 'utf8'))) out.push(await one(r));
  process.stdout.write(JSON.stringify(out));
})().catch((e) => {
  process.stderr.write(`kubereq: ${e.message}\n`);
  process.exit(1);
});
