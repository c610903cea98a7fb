// 063: a backend that accepts, reads the request and never answers ->
// 504 backend-timeout about response_timeout after the request was sent;
// the silent backend connection is then dropped (a late answer on it must
// never be taken for the next request's response).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { exchange, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

test('silent backend -> 504 backend-timeout after response_timeout', async (t) => {
  const closes = [];
  const backend = await rawBackend(t, (s) => {
    const t0 = Date.now();
    s.on('close', () => closes.push(Date.now() - t0));
  });
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--response-timeout', '1s', '--connect-timeout', '5s']);
  const t0 = Date.now();
  const r = await exchange(proxy.port, 'GET /silent HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 8000 });
  const elapsed = Date.now() - t0;
  assert.equal(r.status, 504, `after ${elapsed} ms: ${JSON.stringify(r.raw)}`);
  assert.equal(r.error, 'backend-timeout', JSON.stringify(r.raw));
  assert.ok(elapsed >= 900, `504 after ${elapsed} ms, before response_timeout (1 s)`);
  assert.ok(elapsed <= 3000, `504 after ${elapsed} ms, want about 1 s`);
  assert.ok(backend.received.includes('GET /silent '), 'the request never reached the backend');
  for (let i = 0; i < 40 && closes.length === 0; i++) await sleep(50);
  assert.equal(closes.length, 1, 'the timed-out backend connection was not closed');
  assertNoSanitizerReport(proxy);
});

// The connection's timer stays armed for the earliest deadline it was given
// (head_timeout) while later ones (response_timeout) only move the deadline
// (proxy/client.c): firing early, it must re-arm for the rest, neither cut a
// slow response at head_timeout nor forget response_timeout.
test('a response slower than head_timeout but inside response_timeout is served', async (t) => {
  const backend = await rawBackend(t, (s) => {
    s.once('data', () => setTimeout(() => s.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow'), 1200));
  });
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--head-timeout', '300ms', '--response-timeout', '5s']);
  const r = await exchange(proxy.port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 8000 });
  assert.equal(r.status, 200, JSON.stringify(r.raw));
  assert.ok(r.raw.endsWith('slow'), JSON.stringify(r.raw));
  assertNoSanitizerReport(proxy);
});

test('response_timeout longer than head_timeout still fires, at its own time', async (t) => {
  const backend = await rawBackend(t, () => {});
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--head-timeout', '300ms', '--response-timeout', '1500ms']);
  const t0 = Date.now();
  const r = await exchange(proxy.port, 'GET /silent HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 8000 });
  const elapsed = Date.now() - t0;
  assert.equal(r.status, 504, `after ${elapsed} ms: ${JSON.stringify(r.raw)}`);
  assert.equal(r.error, 'backend-timeout', JSON.stringify(r.raw));
  assert.ok(elapsed >= 1400, `504 after ${elapsed} ms, before response_timeout (1.5 s)`);
  assert.ok(elapsed <= 4000, `504 after ${elapsed} ms, want about 1.5 s`);
  assertNoSanitizerReport(proxy);
});
