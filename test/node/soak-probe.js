// SPDX-License-Identifier: Apache-2.0
// soak-probe.js - the healthy client of make soak, in a process of its
// own so the attackers' event loop does not time it: Publish with a wait
// to one process, one after another, for SECONDS; prints one JSON line:
// { n, failed, p50, p99, max } in milliseconds. With SOAK_CALLS_OUT, each
// call's start (seconds on CLOCK_MONOTONIC, perf's -k CLOCK_MONOTONIC
// clock) and milliseconds go to that file as JSON, to find what a CPU ran
// during the slow ones (perf sched timehist).
// Usage: node soak-probe.js ADDR PID SECONDS
'use strict';

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// Not the harness: it hooks node's test runner, and this is no test.
const api = grpc.loadPackageDefinition(protoLoader.loadSync('procctl/v1/node.proto', {
  includeDirs: [process.env.PROTO_DIR], longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true,
})).procctl.v1;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const publish = (c, req) => new Promise((resolve, reject) => {
  c.Publish(req, { deadline: Date.now() + 20000 }, (err, r) => (err ? reject(err) : resolve(r)));
});

async function main() {
  const [addr, pid, seconds] = process.argv.slice(2);
  const c = new api.NodeService(addr, grpc.credentials.createInsecure());
  const ms = [];
  const calls = [];
  let failed = 0;
  const end = Date.now() + Number(seconds) * 1000;
  for (let i = 0; Date.now() < end; i++) {
    const t0 = process.hrtime.bigint();
    try {
      const r = await publish(c, { selector: { pid: Number(pid) }, payload: Buffer.from(`probe ${i}`), waitMs: 10000 });
      if (r.results.length !== 1 || r.results[0].status !== 'PUBLISH_STATUS_APPLIED') failed++;
    } catch (e) {
      failed++;
    }
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    calls.push([Number(t0) / 1e9, ms[ms.length - 1]]);
    await sleep(20);
  }
  c.close();
  if (process.env.SOAK_CALLS_OUT) require('fs').writeFileSync(process.env.SOAK_CALLS_OUT, JSON.stringify(calls));
  ms.sort((a, b) => a - b);
  const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
  process.stdout.write(`${JSON.stringify({ n: ms.length, failed, p50: at(0.5), p99: at(0.99), max: ms[ms.length - 1] })}\n`);
}

main().catch((e) => {
  process.stderr.write(`${e.stack}\n`);
  process.exit(1);
});
