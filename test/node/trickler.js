// SPDX-License-Identifier: Apache-2.0
// trickler.js - the slowloris of slowloris.test.js, in a process of its
// own (its descriptors under a limit of their own, its event loop apart
// from the probes'): COUNT connections to 127.0.0.1:PORT, from 127.0.0.2
// onwards (ten a source address), each sending one byte of a request
// that never ends every EVERY_MS; one the server closes is opened again,
// so COUNT stay open as long as the server lets them. Prints a JSON line
// each second: { open, opened, closed }. Ends when its stdin does,
// closing every socket first.
// Usage: node trickler.js PORT COUNT EVERY_MS
'use strict';

const net = require('node:net');

const [port, count, every] = process.argv.slice(2).map(Number);
const REQUEST = 'GET /healthz HTTP/1.1\r\nHost: procctl\r\nX-Trickle: ';
const stats = { open: 0, opened: 0, closed: 0 };
const socks = new Set();
let stopping = false;

// Connection i: its request's bytes, one at a time, at a phase of its
// own so that the server sees a steady trickle rather than bursts.
function open(i) {
  if (stopping) return;
  const s = net.connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${2 + Math.floor(i / 10)}` });
  let sent = 0, timer = null, connected = false;
  socks.add(s);
  const drip = () => {
    s.write(sent < REQUEST.length ? REQUEST[sent] : 'a');
    sent++;
  };
  s.on('connect', () => {
    connected = true;
    stats.open++;
    stats.opened++;
    drip();
    timer = setTimeout(function again() {
      drip();
      timer = setTimeout(again, every);
    }, Math.floor(Math.random() * every));
  });
  s.on('error', () => {}); // a reset: 'close' follows
  s.on('close', () => {
    clearTimeout(timer);
    socks.delete(s);
    if (connected) {
      stats.open--;
      stats.closed++;
    }
    if (!stopping) setTimeout(() => open(i), 500);
  });
}

for (let i = 0; i < count; i++) open(i);
const report = setInterval(() => process.stdout.write(`${JSON.stringify(stats)}\n`), 1000);
process.stdin.resume();
process.stdin.on('end', () => {
  stopping = true;
  clearInterval(report);
  for (const s of socks) s.destroy();
  process.stdout.write(`${JSON.stringify(stats)}\n`);
});
