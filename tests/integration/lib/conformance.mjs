// conformance.mjs - helpers for the conformance corpus and the limit,
// timeout and lifecycle tests (050-099). Built on lib/wtproxy.mjs; adds
// nothing it already has.
//
// Corpus files (tests/conformance/{requests,responses}/*.json) hold their
// bytes as JSON strings, so CR, LF, NUL and every other byte are written as
// explicit escapes. A byte field is either one string or an array of parts,
// each a string or {"repeat": "...", "times": N} for long inputs. Strings
// must only hold U+0000..U+00FF; each char is one byte (latin1).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { repoRoot } from './wtproxy.mjs';

export const conformanceDir = path.join(repoRoot, 'tests/conformance');

// The bytes of a corpus byte field, as a Buffer.
export function bytesOf(field) {
  const parts = Array.isArray(field) ? field : [field];
  const out = [];
  for (const p of parts) {
    let s;
    if (typeof p === 'string') s = p;
    else if (p && typeof p.repeat === 'string' && Number.isInteger(p.times)) s = p.repeat.repeat(p.times);
    else throw new Error(`bad byte part: ${JSON.stringify(p)}`);
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) > 0xff) throw new Error(`non-byte char U+${s.charCodeAt(i).toString(16)} in ${JSON.stringify(s.slice(0, 40))}`);
    }
    out.push(Buffer.from(s, 'latin1'));
  }
  return Buffer.concat(out);
}

// Every case of a corpus directory ("requests" or "responses"), sorted by
// file name, each with .file and .bytes added.
export function loadCases(kind, field) {
  const dir = path.join(conformanceDir, kind);
  return fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => {
    const c = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    c.file = f;
    c.bytes = bytesOf(c[field]);
    return c;
  });
}

// ---------------------------------------------------------------------------
// Minimal HTTP/1.1 message framing, for reading what wtproxy sends. It is
// only used on wtproxy's output, which must be well-formed; anything it
// cannot frame is reported as incomplete, never guessed.

// Parse a head (start line + fields) from the start of buf (latin1 string).
// Returns null when the blank line has not arrived yet.
export function parseHead(s) {
  const end = s.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = s.slice(0, end).split('\r\n');
  const start = lines.shift();
  const headers = [];
  for (const l of lines) {
    const i = l.indexOf(':');
    headers.push([i < 0 ? l : l.slice(0, i), i < 0 ? '' : l.slice(i + 1).trim()]);
  }
  const get = (name) => {
    const v = headers.filter(([k]) => k.toLowerCase() === name.toLowerCase()).map(([, v]) => v);
    return v.length ? v.join(', ') : undefined;
  };
  return { start, headers, get, headLength: end + 4 };
}

// Length of a complete chunked body at s[from..], or -1 if incomplete.
function chunkedLength(s, from) {
  let p = from;
  for (;;) {
    const eol = s.indexOf('\r\n', p);
    if (eol < 0) return -1;
    const size = parseInt(s.slice(p, eol).split(';')[0].trim(), 16);
    if (Number.isNaN(size)) return -1;
    p = eol + 2;
    if (size === 0) {
      // trailers, then an empty line
      for (;;) {
        const e = s.indexOf('\r\n', p);
        if (e < 0) return -1;
        const empty = e === p;
        p = e + 2;
        if (empty) return p - from;
      }
    }
    if (s.length < p + size + 2) return -1;
    p += size + 2;
  }
}

// Decode a complete chunked body (no validation beyond framing).
export function dechunk(s) {
  let p = 0;
  let out = '';
  for (;;) {
    const eol = s.indexOf('\r\n', p);
    if (eol < 0) return out;
    const size = parseInt(s.slice(p, eol).split(';')[0].trim(), 16);
    if (!size) return out;
    out += s.slice(eol + 2, eol + 2 + size);
    p = eol + 2 + size + 2;
  }
}

// Split one message off the front of s. kind 'request' or 'response'
// (responses without framing run to close; `closed` says the peer closed).
// Returns { head, body (raw framed), length } or null when incomplete.
export function frameMessage(s, kind, closed = false, method = 'GET') {
  const head = parseHead(s);
  if (!head) return null;
  const te = head.get('transfer-encoding');
  const cl = head.get('content-length');
  const status = kind === 'response' ? Number(head.start.split(' ')[1]) : 0;
  let bodyLen;
  if (kind === 'response' && (method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200))) bodyLen = 0;
  else if (te && /chunked\s*$/i.test(te)) {
    bodyLen = chunkedLength(s, head.headLength);
    if (bodyLen < 0) return null;
  } else if (cl !== undefined) {
    bodyLen = Number(cl);
    if (!Number.isInteger(bodyLen) || bodyLen < 0) return null;
    if (s.length < head.headLength + bodyLen) return null;
  } else if (kind === 'request') bodyLen = 0;
  else {
    if (!closed) return null;
    bodyLen = s.length - head.headLength;
  }
  const body = s.slice(head.headLength, head.headLength + bodyLen);
  const decoded = te && /chunked\s*$/i.test(te) ? dechunk(body) : body;
  return { head, status, body, decoded, length: head.headLength + bodyLen };
}

// A backend that answers every complete request it can frame with
// `respond(req, info, socket)` (default: 200 "ok"). info.requests lists
// { start, head, decoded, conn } for every request seen, in order;
// info.closedConns counts backend connections that were closed.
export function requestResponder(respond) {
  const answer = respond || (() => 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  return (socket, info) => {
    info.requests ||= [];
    info.closedConns ||= 0;
    const conn = info.connections;
    let buf = '';
    socket.on('close', () => { info.closedConns++; });
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const m = frameMessage(buf, 'request');
        if (!m) return;
        buf = buf.slice(m.length);
        const req = { start: m.head.start, head: m.head, decoded: m.decoded, conn };
        info.requests.push(req);
        const out = answer(req, info, socket);
        if (out != null && !socket.destroyed) socket.write(Buffer.isBuffer(out) ? out : Buffer.from(out, 'latin1'));
      }
    });
  };
}

// Send bytes to 127.0.0.1:port and read ONE response. Resolves when the
// response is complete and then either the peer closed or `closeWait` ms
// passed; or when `ms` pass in all. Resolves with
// { raw, status, head, decoded, complete, closed, ms (time to first byte
// of the response), closeMs (time to close, or null) }.
export function exchange(port, bytes, { ms = 5000, closeWait = 300, method, host = '127.0.0.1', onSocket } = {}) {
  const reqMethod = method || (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1')).toString('latin1').split(' ')[0];
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, host);
    let raw = '';
    let done = false;
    let firstMs = null;
    let closeMs = null;
    let closed = false;
    let msg = null;
    let graceTimer = null;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      s.destroy();
      // 1xx interim responses are skipped: report the final one.
      let rest = raw;
      let m = frameMessage(rest, 'response', closed, reqMethod);
      while (m && m.status >= 100 && m.status < 200 && m.status !== 101) {
        rest = rest.slice(m.length);
        m = frameMessage(rest, 'response', closed, reqMethod);
      }
      const head = m ? m.head : parseHead(rest);
      const status = m ? m.status : (/^HTTP\/1\.[01] (\d{3})/.exec(rest) || [0, 0])[1] * 1;
      resolve({ raw, status, head, decoded: m ? m.decoded : null, complete: !!m, closed, ms: firstMs, closeMs, error: head && head.get('x-wtproxy-error') });
    };
    const timer = setTimeout(finish, ms);
    const check = () => {
      if (msg) return;
      let rest = raw;
      let m = frameMessage(rest, 'response', closed, reqMethod);
      while (m && m.status >= 100 && m.status < 200 && m.status !== 101) {
        rest = rest.slice(m.length);
        m = frameMessage(rest, 'response', closed, reqMethod);
      }
      if (m) {
        msg = m;
        if (closed) finish();
        else graceTimer = setTimeout(finish, closeWait);
      }
    };
    if (onSocket) onSocket(s);
    s.on('connect', () => { if (bytes != null && bytes.length) s.write(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1')); });
    s.on('data', (d) => { if (firstMs === null) firstMs = Date.now() - t0; raw += d.toString('latin1'); check(); });
    const onClose = () => { if (!closed) { closed = true; closeMs = Date.now() - t0; } check(); finish(); };
    s.on('end', onClose);
    s.on('close', onClose);
    s.on('error', onClose);
  });
}

// Connect to port and resolve with the socket once connected (rejects on
// error).
export function connect(port, host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host);
    s.once('connect', () => { s.removeListener('error', reject); resolve(s); });
    s.once('error', reject);
  });
}

// Watch a socket: returns { data(), closed(), closedAt, whenClosed }.
export function watch(s) {
  const w = { raw: '', closedAt: null };
  const t0 = Date.now();
  w.whenClosed = new Promise((res) => {
    const done = () => { if (w.closedAt === null) w.closedAt = Date.now() - t0; res(w.closedAt); };
    s.on('end', done); s.on('close', done); s.on('error', done);
  });
  s.on('data', (d) => { w.raw += d.toString('latin1'); });
  return w;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Run `bin args` to completion (no daemon stays behind): resolves with
// { code, signal, stdout, stderr }; kills it by pid after `ms`.
export function runToExit(bin, args, { ms = 10000, cwd, env } = {}) {
  return new Promise((resolve) => {
    const p = spawn(bin, args, { cwd, env: { ...process.env, ...(env || {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), ms);
    // 'close', not 'exit': only then has all of its output been read (under
    // load, 'exit' came with stderr still in the pipe and a message lost).
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, pid: p.pid });
    });
  });
}

// Start a helper process (e.g. /usr/bin/python3) that prints a line on
// stdout matching `ready`; resolves with { proc, match, stop() } and stops
// it by pid in t.after.
export function startHelper(t, bin, args, ready, { cwd, ms = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const stop = () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); };
    if (t) t.after(stop);
    const timer = setTimeout(() => { stop(); reject(new Error(`${bin} not ready in ${ms} ms:\n${out}`)); }, ms);
    const check = (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc, match: m, stop, output: () => out }); }
    };
    proc.stdout.on('data', check);
    proc.stderr.on('data', check);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${bin} exited ${code}:\n${out}`)); });
  });
}

// Fail when the daemon's stderr holds an AddressSanitizer, LeakSanitizer or
// UBSan report (UBSan does not abort by default, so a test could pass over
// one).
export function assertNoSanitizerReport(proxy) {
  const err = proxy.stderr();
  const m = /(ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:)[^\n]*/.exec(err);
  if (m) throw new Error(`sanitizer report from wtproxy: ${m[0]}\n${err.slice(m.index, m.index + 3000)}`);
}
