// backends.mjs - real loopback backends and client helpers for the relay
// tests (001-049). Everything listens on 127.0.0.1 with a kernel-picked port
// and is closed in the test's after() hook.
//
//   httpBackend(t)   a node:http server:
//     any path          echo: JSON {method, url, httpVersion, headers,
//                       rawHeaders, bodyLength, bodySha256}
//     /stream?bytes=N[&mode=chunked|length]
//                       N bytes of pattern() data, chunked (default) or with
//                       Content-Length; the generator honours backpressure
//     /slow-read[?every=BYTES&pause=MS]
//                       consumes the request body slowly: after every BYTES
//                       read it pauses the socket for MS, then answers
//                       JSON {length, sha256, pauses}
//     /hash             JSON {length, sha256, headers} of the request body
//     /delay/MS/TAG     answers the path as body after MS milliseconds
//     /status/CODE      answers with that status and a short body
//   wsBackend(t)     a `ws` WebSocket echo server (same binary/text flag);
//                    a text message "push:N" makes it send N messages itself.
//
//   pattern / patternSha256: deterministic pseudo-random bytes, so a sender
//   and a receiver agree on content without sending it twice.
//   RawConn: one raw client socket with a response parser, for tests that
//   need exact control over what goes on one connection.
import http from 'node:http';
import net from 'node:net';
import crypto from 'node:crypto';
import { WebSocketServer } from 'ws';

export const KiB = 1024;
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

// ---------------------------------------------------------------- pattern data

// A block of pseudo-random bytes whose length is deliberately not a power of
// two, so block boundaries never line up with socket or proxy buffers: a
// lost, duplicated or reordered buffer changes the hash.
const BLOCK_LEN = MiB + 7;
let block = null;
function patternBlock() {
  if (!block) {
    const out = Buffer.alloc(BLOCK_LEN);
    let x = 0x9e3779b9;
    for (let i = 0; i < BLOCK_LEN; i += 4) {
      // xorshift32
      x ^= x << 13; x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5; x >>>= 0;
      out.writeUInt32LE(x, i <= BLOCK_LEN - 4 ? i : BLOCK_LEN - 4);
    }
    block = out;
  }
  return block;
}

// Yields Buffers totalling exactly n bytes of pattern data.
export function* pattern(n, chunk = 256 * KiB) {
  const b = patternBlock();
  let off = 0;
  let left = n;
  while (left > 0) {
    const take = Math.min(chunk, left, BLOCK_LEN - off);
    yield b.subarray(off, off + take);
    off = (off + take) % BLOCK_LEN;
    left -= take;
  }
}

const shaCache = new Map();
// sha256 hex of the first n bytes of pattern data.
export function patternSha256(n) {
  if (!shaCache.has(n)) {
    const h = crypto.createHash('sha256');
    for (const c of pattern(n, 4 * MiB)) h.update(c);
    shaCache.set(n, h.digest('hex'));
  }
  return shaCache.get(n);
}

export function sha256(buf) {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

// Write the iterable `chunks` to a writable stream honouring backpressure,
// then end it. Resolves when everything was handed to the stream.
export async function writeAll(stream, chunks, { end = true } = {}) {
  for (const c of chunks) {
    if (stream.destroyed) throw new Error('stream destroyed while writing');
    if (!stream.write(c)) {
      await new Promise((res, rej) => {
        const onDrain = () => { cleanup(); res(); };
        const onClose = () => { cleanup(); rej(new Error('stream closed while writing')); };
        const cleanup = () => { stream.off('drain', onDrain); stream.off('close', onClose); };
        stream.on('drain', onDrain);
        stream.on('close', onClose);
      });
    }
  }
  if (end) stream.end();
}

// ---------------------------------------------------------------- http backend

function sendJSON(res, obj, status = 200) {
  const body = Buffer.from(JSON.stringify(obj));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

// Read a request body fully; resolves { length, sha256, body? }.
function consume(req, { keep = false } = {}) {
  return new Promise((resolve, reject) => {
    const h = crypto.createHash('sha256');
    let length = 0;
    const parts = [];
    req.on('data', (d) => { h.update(d); length += d.length; if (keep) parts.push(d); });
    req.on('end', () => resolve({ length, sha256: h.digest('hex'), body: keep ? Buffer.concat(parts) : undefined }));
    req.on('error', reject);
  });
}

export async function httpBackend(t, opts = {}) {
  const info = { port: 0, connections: 0, requests: [], server: null };
  const sockets = new Set();
  const server = http.createServer(opts.serverOptions || {}, async (req, res) => {
    res.on('error', () => {});
    const u = new URL(req.url, 'http://x');
    info.requests.push({ method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders });
    try {
      if (u.pathname === '/stream') {
        const n = Number(u.searchParams.get('bytes') || 0);
        const mode = u.searchParams.get('mode') || 'chunked';
        const headers = { 'Content-Type': 'application/octet-stream', 'X-Pattern-Sha256': patternSha256(n) };
        if (mode === 'length') headers['Content-Length'] = n;
        res.writeHead(200, headers);
        if (req.method === 'HEAD') { res.end(); return; }
        await writeAll(res, pattern(n));
        return;
      }
      if (u.pathname === '/slow-read') {
        const every = Number(u.searchParams.get('every') || 32 * MiB);
        const pause = Number(u.searchParams.get('pause') || 250);
        const h = crypto.createHash('sha256');
        let length = 0;
        let sincePause = 0;
        let pauses = 0;
        req.on('data', (d) => {
          h.update(d);
          length += d.length;
          sincePause += d.length;
          if (sincePause >= every) {
            sincePause = 0;
            pauses++;
            req.pause();
            setTimeout(() => req.resume(), pause);
          }
        });
        await new Promise((res2, rej) => { req.on('end', res2); req.on('error', rej); });
        sendJSON(res, { length, sha256: h.digest('hex'), pauses });
        return;
      }
      if (u.pathname === '/hash') {
        const r = await consume(req);
        sendJSON(res, { length: r.length, sha256: r.sha256, headers: req.headers, rawHeaders: req.rawHeaders });
        return;
      }
      let m = /^\/delay\/(\d+)\//.exec(u.pathname);
      if (m) {
        await consume(req);
        setTimeout(() => {
          res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(req.url) });
          res.end(req.url);
        }, Number(m[1]));
        return;
      }
      m = /^\/status\/(\d{3})$/.exec(u.pathname);
      if (m) {
        await consume(req);
        const body = `status ${m[1]}\n`;
        res.writeHead(Number(m[1]), { 'Content-Type': 'text/plain', 'Content-Length': body.length });
        res.end(body);
        return;
      }
      const r = await consume(req);
      sendJSON(res, {
        method: req.method, url: req.url, httpVersion: req.httpVersion,
        headers: req.headers, rawHeaders: req.rawHeaders,
        bodyLength: r.length, bodySha256: r.sha256,
      });
    } catch (e) {
      res.destroy(e);
    }
  });
  server.keepAliveTimeout = 60000;
  server.headersTimeout = 65000;
  server.requestTimeout = 0;
  server.on('connection', (s) => {
    info.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('clientError', (err, s) => { s.destroy(); });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  info.port = server.address().port;
  info.server = server;
  info.close = () => new Promise((res) => {
    for (const s of sockets) s.destroy();
    server.close(() => res());
  });
  if (t) t.after(info.close);
  return info;
}

// ---------------------------------------------------------------- ws backend

export async function wsBackend(t) {
  const info = { port: 0, connections: 0, upgrades: [] };
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * MiB });
  wss.on('connection', (ws, req) => {
    info.connections++;
    info.upgrades.push({ url: req.url, headers: req.headers });
    ws.on('message', (data, isBinary) => {
      // "push:N" makes the server send N messages of its own ("push 0".."push N-1")
      const m = !isBinary && /^push:(\d+)$/.exec(data.toString());
      if (m) { for (let i = 0; i < Number(m[1]); i++) ws.send(`push ${i}`); return; }
      ws.send(data, { binary: isBinary });
    });
    ws.on('error', () => {});
  });
  await new Promise((res) => wss.on('listening', res));
  info.port = wss.address().port;
  info.close = () => new Promise((res) => {
    for (const c of wss.clients) c.terminate();
    wss.close(() => res());
  });
  if (t) t.after(info.close);
  return info;
}

// A port that nothing listens on (bound, then released).
export async function closedPort() {
  const s = net.createServer();
  await new Promise((res) => s.listen(0, '127.0.0.1', res));
  const { port } = s.address();
  await new Promise((res) => s.close(res));
  return port;
}

// Answer every request head a raw backend connection receives (no bodies:
// GET/HEAD only) with respond(headText, index) -> string|Buffer|null. Use as
// the onConn of rawBackend().
export function answerHeads(respond) {
  let index = 0;
  return (s) => {
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString('latin1');
      let i;
      while ((i = buf.indexOf('\r\n\r\n')) >= 0) {
        const head = buf.slice(0, i + 4);
        buf = buf.slice(i + 4);
        const out = respond(head, index++, s);
        if (out != null && !s.destroyed) s.write(typeof out === 'string' ? Buffer.from(out, 'latin1') : out);
      }
    });
  };
}

// ---------------------------------------------------------------- raw client

// Parse one HTTP response head from a latin1 string. Returns null when the
// head is incomplete, else { status, version, reason, headers (lowercase
// name -> array of values), headerLines, headLength }.
export function parseHead(s) {
  const end = s.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = s.slice(0, end).split('\r\n');
  const m = /^HTTP\/(1\.[01]) (\d{3})(?: (.*))?$/.exec(lines[0]);
  if (!m) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
  const headers = {};
  for (const l of lines.slice(1)) {
    const c = l.indexOf(':');
    const k = l.slice(0, c).trim().toLowerCase();
    (headers[k] ||= []).push(l.slice(c + 1).trim());
  }
  return { version: m[1], status: Number(m[2]), reason: m[3] || '', headers, headerLines: lines.slice(1), headLength: end + 4 };
}

export function header(h, name) {
  const v = h.headers[name.toLowerCase()];
  return v ? v.join(', ') : undefined;
}

// One raw client connection. Data accumulates in this.buf (a Buffer);
// readResponse() takes one complete response off its front.
export class RawConn {
  constructor(port, host = '127.0.0.1') {
    this.buf = Buffer.alloc(0);
    this.ended = false;
    this.waiters = [];
    this.sock = net.connect(port, host);
    this.sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.wake(); });
    this.sock.on('end', () => { this.ended = true; this.wake(); });
    this.sock.on('close', () => { this.ended = true; this.wake(); });
    this.sock.on('error', (e) => { this.error = e; this.ended = true; this.wake(); });
    this.connected = new Promise((res, rej) => { this.sock.once('connect', res); this.sock.once('error', rej); });
  }

  static async open(port, host) {
    const c = new RawConn(port, host);
    await c.connected;
    return c;
  }

  wake() { const w = this.waiters; this.waiters = []; for (const f of w) f(); }

  write(data) { this.sock.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data); }

  close() { this.sock.destroy(); }

  // Wait until pred(this) is true (checked on every event), or throw after ms.
  async until(pred, ms = 5000, what = 'condition') {
    const deadline = Date.now() + ms;
    while (!pred(this)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms waiting for ${what}; have ${this.buf.length} bytes${this.ended ? ' (connection closed)' : ''}: ${JSON.stringify(this.buf.subarray(0, 400).toString('latin1'))}`);
      let timer;
      await new Promise((res) => { timer = setTimeout(res, left); this.waiters.push(res); });
      clearTimeout(timer);
    }
  }

  // Resolves true once the peer closed, false if it is still open after ms.
  async waitClosed(ms = 3000) {
    try { await this.until((c) => c.ended, ms, 'close'); return true; } catch { return false; }
  }

  take(n) { const out = this.buf.subarray(0, n); this.buf = this.buf.subarray(n); return out; }

  // Read one response. opts.noBody: the request was HEAD (no body whatever
  // the headers say). Interim 1xx responses other than 101 are returned
  // like any other (call again for the final one). Returns the parsed head
  // plus body (Buffer), framing ('length'|'chunked'|'close'|'none'),
  // complete (false when the connection closed before the framing said the
  // body ended) and raw (latin1 of the whole response).
  async readResponse({ noBody = false, ms = 5000 } = {}) {
    await this.until((c) => c.buf.indexOf('\r\n\r\n') >= 0 || c.ended, ms, 'response head');
    const h = parseHead(this.buf.toString('latin1'));
    if (!h) throw new Error(`connection closed before a response head; got ${JSON.stringify(this.buf.toString('latin1'))}`);
    const headRaw = this.take(h.headLength);
    const te = (header(h, 'transfer-encoding') || '').toLowerCase();
    const cl = header(h, 'content-length');
    let body = Buffer.alloc(0);
    let framing;
    let complete = true;
    if (noBody || (h.status >= 100 && h.status < 200) || h.status === 204 || h.status === 304) {
      framing = 'none';
    } else if (te.includes('chunked')) {
      framing = 'chunked';
      const parts = [];
      let raw = Buffer.alloc(0);
      for (;;) {
        try {
          await this.until((c) => c.buf.indexOf('\r\n') >= 0 || c.ended, ms, 'chunk size');
        } catch (e) { throw e; }
        const i = this.buf.indexOf('\r\n');
        if (i < 0) { complete = false; break; }
        const sizeLine = this.take(i + 2);
        raw = Buffer.concat([raw, sizeLine]);
        const size = parseInt(sizeLine.toString('latin1'), 16);
        if (Number.isNaN(size)) throw new Error(`bad chunk size line ${JSON.stringify(sizeLine.toString('latin1'))}`);
        if (size === 0) {
          // trailers until an empty line
          await this.until((c) => c.buf.indexOf('\r\n\r\n') >= 0 || c.buf.subarray(0, 2).toString() === '\r\n' || c.ended, ms, 'chunked trailer');
          if (this.buf.subarray(0, 2).toString() === '\r\n') raw = Buffer.concat([raw, this.take(2)]);
          else {
            const j = this.buf.indexOf('\r\n\r\n');
            if (j < 0) { complete = false; break; }
            raw = Buffer.concat([raw, this.take(j + 4)]);
          }
          break;
        }
        await this.until((c) => c.buf.length >= size + 2 || c.ended, ms, `chunk of ${size}`);
        if (this.buf.length < size + 2) { parts.push(this.take(this.buf.length)); complete = false; break; }
        parts.push(this.take(size));
        raw = Buffer.concat([raw, this.take(2)]);
      }
      body = Buffer.concat(parts);
      return { ...h, body, framing, complete, chunkedRaw: raw, raw: headRaw.toString('latin1') + raw.toString('latin1') };
    } else if (cl !== undefined) {
      framing = 'length';
      const n = Number(cl);
      await this.until((c) => c.buf.length >= n || c.ended, ms, `body of ${n}`);
      complete = this.buf.length >= n;
      body = this.take(Math.min(n, this.buf.length));
    } else {
      framing = 'close';
      await this.until((c) => c.ended, ms, 'close-delimited body');
      body = this.take(this.buf.length);
    }
    return { ...h, body, framing, complete, raw: headRaw.toString('latin1') + body.toString('latin1') };
  }
}

// A request head string. headers: array of [name, value] or object.
export function requestHead(method, target, headers = {}, version = '1.1') {
  const list = Array.isArray(headers) ? headers : Object.entries(headers);
  return `${method} ${target} HTTP/${version}\r\n${list.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

// node:http request through port; resolves { status, headers, body (Buffer) }.
export function httpGet(port, path, { method = 'GET', headers = {}, agent, body, host = '127.0.0.1' } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, path, method, headers, agent }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(parts), socket: res.socket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.end(body); else req.end();
  });
}

// ---------------------------------------------------------------- clean stop

// Stop the daemon with SIGTERM at the end of a test and check it exited 0
// with no sanitizer report: UBSan reports and continues, and LeakSanitizer
// only reports at exit, so neither would show otherwise (the harness's own
// cleanup uses SIGKILL). Connections the test still holds are idle, so the
// graceful stop is quick.
export async function stopClean(px, ms = 15000) {
  let timer;
  const res = await Promise.race([
    px.stop('SIGTERM'),
    new Promise((r) => { timer = setTimeout(() => r(null), ms); }),
  ]);
  clearTimeout(timer);
  const err = px.stderr();
  if (res === null) throw new Error(`wtproxy did not exit within ${ms} ms of SIGTERM:\n${err.slice(-2000)}`);
  const m = /(runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|SUMMARY: \w+Sanitizer)[^\n]*/.exec(err);
  if (m) throw new Error(`sanitizer report from wtproxy: ${m[0]}\n${err.slice(m.index, m.index + 4000)}`);
  if (res.code !== 0) throw new Error(`wtproxy exited ${res.code ?? res.sig} on SIGTERM:\n${err.slice(-2000)}`);
}
