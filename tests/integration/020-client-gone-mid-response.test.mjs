// 020: a client that closes its connection while a response streams (a
// browser closing an EventSource, a page navigated away, an aborted
// fetch). wtproxy took the EOF for a half-close, a client still reading,
// and kept the backend's connection until a write to the gone client
// failed: an event stream's next ping, 15 to 30 s later, or never for one
// that writes nothing. uvicorn --reload waits for its open connections
// before it reloads: an edit made meanwhile was not taken in, and every
// request got a 502 (a Starlette user's SSE page, after a Playwright run).
// The backend's connection is now closed at once, as a direct client's
// close would, and as nginx does. A client that half-closes after a whole
// request, before its answer starts (`nc -N`), still gets all of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { connect, watch, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

const streamHead = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n';
const chunk = (s) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;

test('the client closes mid-stream: the backend connection closes at once, not at the next write', async (t) => {
  let backendClosedAt = null;
  const backend = await rawBackend(t, (s) => {
    s.once('data', () => s.write(streamHead + chunk('data: hello\n\n'))); // then nothing: no ping
    s.on('close', () => { backendClosedAt = Date.now(); });
  });
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`, '--body-timeout', '30s']);
  const s = await connect(proxy.port);
  const w = watch(s);
  s.write('GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
  for (let i = 0; i < 100 && !w.raw.includes('data: hello'); i++) await sleep(20);
  assert.match(w.raw, /data: hello/, 'the stream began');
  const closedAt = Date.now();
  s.destroy();
  for (let i = 0; i < 60 && backendClosedAt === null; i++) await sleep(50);
  assert.notEqual(backendClosedAt, null, 'the backend connection still open 3 s after the client closed');
  assert.ok(backendClosedAt - closedAt < 1000, `closed ${backendClosedAt - closedAt} ms after the client`);
  assertNoSanitizerReport(proxy);
});

test('a client that half-closes after its request, before the answer, still gets all of it', async (t) => {
  const body = 'x'.repeat(200000);
  const backend = await rawBackend(t, (s) => {
    s.once('data', () => setTimeout(() => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`), 200));
  });
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`]);
  const s = await connect(proxy.port);
  const w = watch(s);
  s.end('GET /all HTTP/1.1\r\nHost: x\r\n\r\n');
  await Promise.race([w.whenClosed, sleep(5000)]);
  assert.ok(w.raw.startsWith('HTTP/1.1 200 OK'), w.raw.slice(0, 200));
  assert.ok(w.raw.endsWith(body), `got ${w.raw.length} bytes`);
  assertNoSanitizerReport(proxy);
});
