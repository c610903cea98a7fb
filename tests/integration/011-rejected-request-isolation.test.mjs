// 011: after a rejected (400) request, the connection is closed and no byte
// of that request, nor anything pipelined after it, reaches the backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend, rawRequest, statusOf } from './lib/wtproxy.mjs';
import { answerHeads, parseHead, stopClean } from './lib/backends.mjs';

test('valid GET, malformed request, GET in one write', async (t) => {
  const be = await rawBackend(t, answerHeads((head) => {
    const path = head.split(' ')[1];
    return `HTTP/1.1 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${path}`;
  }));
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const bytes =
    'GET /first HTTP/1.1\r\nHost: localhost\r\n\r\n' +
    'GET /second-malformed HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\nX-Smuggle: yes\r\n\r\n' +
    'GET /third-smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n';
  const { data, closed } = await rawRequest(px.port, bytes, 5000);

  assert.equal(statusOf(data), 200, `first response:\n${data}`);
  const h1 = parseHead(data);
  const rest = data.slice(h1.headLength);
  assert.ok(rest.startsWith('/first'), `first body: ${rest.slice(0, 100)}`);
  const second = rest.slice('/first'.length);
  assert.equal(statusOf(second), 400, `second response should be 400:\n${second}`);
  const h2 = parseHead(second);
  assert.match(h2.headers['x-wtproxy-error']?.[0] || '', /bad-request/);
  assert.match((h2.headers.connection || []).join(','), /close/i);
  assert.equal((second.match(/HTTP\/1\.[01] \d{3}/g) || []).length, 1, `more than one response after the first:\n${second}`);
  assert.ok(closed, 'connection not closed after the 400');

  // give a buggy proxy time to forward the leftovers
  await new Promise((r) => setTimeout(r, 300));
  assert.match(be.received, /GET \/first /);
  assert.doesNotMatch(be.received, /second-malformed|X-Smuggle/, `the rejected request reached the backend:\n${be.received}`);
  assert.doesNotMatch(be.received, /third-smuggled/, `bytes pipelined after the rejected request reached the backend:\n${be.received}`);
  await stopClean(px);
});

test('a malformed first request: nothing at all reaches the backend', async (t) => {
  const be = await rawBackend(t, answerHeads(() => 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const { data, closed } = await rawRequest(px.port,
    'POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello' +
    'GET /after HTTP/1.1\r\nHost: localhost\r\n\r\n', 5000);
  assert.equal(statusOf(data), 400, data);
  assert.ok(closed);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(be.received, '', `bytes reached the backend:\n${be.received}`);
  await stopClean(px);
});
