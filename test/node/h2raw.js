// SPDX-License-Identifier: Apache-2.0
// h2raw.js - HTTP/2 written by hand, as a client that ignores the
// server's limits writes it: the preface, empty SETTINGS, then as many
// HEADERS frames as it likes, each a stream that never sends its message.
// What the server answers is counted (SETTINGS, RST_STREAM, GOAWAY). Or
// as one that heeds them (held): as many such streams as the server's
// SETTINGS_MAX_CONCURRENT_STREAMS allows, held open. Or as one that asks
// and never reads (unread).
'use strict';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const SETTINGS = 4;
const HEADERS = 1;
const DATA = 0;
const RST_STREAM = 3;
const PING = 6;
const GOAWAY = 7;
const WINDOW_UPDATE = 8;
const ACK = 1;
const END_STREAM = 1;
const END_HEADERS = 4;

function frame(type, flags, id, payload = Buffer.alloc(0)) {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(id, 5);
  return Buffer.concat([head, payload]);
}

// HPACK: each header a literal without indexing, with a new name (no
// table state at either end); names and values under 127 bytes.
function hpack(headers) {
  const str = (s) => {
    const b = Buffer.from(s);
    if (b.length > 126) throw new Error(`${s}: too long for a one-byte length`);
    return Buffer.concat([Buffer.from([b.length]), b]);
  };
  return Buffer.concat(headers.map(([k, v]) => Buffer.concat([Buffer.from([0]), str(k), str(v)])));
}

// The server's frames as they come: its SETTINGS (acknowledged only with
// ack), RST_STREAMs and GOAWAYs counted, PINGs answered.
function reader(sock, st, ack) {
  let buf = Buffer.alloc(0);
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      const [type, flags] = [buf[3], buf[4]];
      const p = buf.subarray(9, 9 + len);
      if (type === SETTINGS && !(flags & ACK)) {
        st.settings = {};
        for (let i = 0; i + 6 <= p.length; i += 6) st.settings[p.readUInt16BE(i)] = p.readUInt32BE(i + 2);
        if (ack) sock.write(frame(SETTINGS, ACK, 0));
      } else if (type === RST_STREAM) {
        st.rst++;
      } else if (type === GOAWAY) {
        st.goaway++;
      } else if (type === PING && !(flags & ACK)) {
        sock.write(frame(PING, ACK, 0, p));
      } else if (type === PING) {
        st.pong = true;
      }
      buf = buf.subarray(9 + len);
    }
  });
}

// On a connected socket (net or tls): n streams on path, all written at
// once, before the server's SETTINGS are read (so before they are
// acknowledged). Returns what the server answered, as it answers:
// { settings, rst, goaway, closed }.
function flood(sock, n, path, { ack = true } = {}) {
  const st = { settings: null, rst: 0, goaway: 0, closed: false };
  reader(sock, st, ack);
  sock.on('close', () => { st.closed = true; });
  sock.on('error', () => {}); // the server cuts it: that is the point
  const block = hpack([[':method', 'POST'], [':scheme', 'http'], [':path', path], [':authority', 'procctl'],
    ['content-type', 'application/grpc'], ['te', 'trailers']]);
  const out = [PREFACE, frame(SETTINGS, 0, 0)];
  for (let i = 0, id = 1; i < n; i++, id += 2) out.push(frame(HEADERS, END_HEADERS, id, block));
  sock.write(Buffer.concat(out));
  return st;
}

// On a connected socket (net or tls): once the server's SETTINGS come,
// acknowledged, as many streams on path as they allow (100 when they do
// not say), then a PING. Resolves with how many were opened once the PING
// is answered: the server has read every one by then.
function held(sock, path) {
  const st = { settings: null, rst: 0, goaway: 0 };
  reader(sock, st, true);
  sock.on('error', () => {});
  const block = hpack([[':method', 'POST'], [':scheme', 'http'], [':path', path], [':authority', 'procctl'],
    ['content-type', 'application/grpc'], ['te', 'trailers']]);
  return new Promise((resolve, reject) => {
    let opened = 0;
    sock.on('close', () => reject(new Error(`closed with ${opened} streams open`)));
    sock.on('data', () => {
      if (st.settings && !opened) {
        opened = st.settings[3] === undefined ? 100 : st.settings[3];
        const out = [];
        for (let i = 0, id = 1; i < opened; i++, id += 2) out.push(frame(HEADERS, END_HEADERS, id, block));
        sock.write(Buffer.concat([...out, frame(PING, 0, 0, Buffer.alloc(8))]));
      }
      if (st.pong) resolve(opened);
    });
    sock.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)]));
  });
}

// On a connected socket (net or tls): n calls of path, each with an empty
// request message, under windows as large as HTTP/2 allows, and nothing
// of the answers ever read: the server's sends fill the socket and its
// writes would block (flow control never stops them).
function unread(sock, n, path) {
  sock.on('error', () => {});
  sock.pause();
  const block = hpack([[':method', 'POST'], [':scheme', 'http'], [':path', path], [':authority', 'procctl'],
    ['content-type', 'application/grpc'], ['te', 'trailers']]);
  const win = Buffer.alloc(6);
  win.writeUInt16BE(4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
  win.writeUInt32BE(0x7fffffff, 2);
  const inc = Buffer.alloc(4);
  inc.writeUInt32BE(0x7fffffff - 65535, 0);
  const out = [PREFACE, frame(SETTINGS, 0, 0, win), frame(WINDOW_UPDATE, 0, 0, inc)];
  for (let i = 0, id = 1; i < n; i++, id += 2) {
    out.push(frame(HEADERS, END_HEADERS, id, block), frame(DATA, END_STREAM, id, Buffer.alloc(5)));
  }
  sock.write(Buffer.concat(out));
}

module.exports = { flood, held, unread };
