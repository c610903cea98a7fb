// 017: errors about the backend, answered by wtproxy itself: no backend
// configured -> 503 no-backend with a text body that says what to run; the
// backend's port closed -> 502 backend-unreachable naming that backend and
// the commands that fix it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { RawConn, requestHead, header, closedPort, stopClean } from './lib/backends.mjs';

test('no backend configured: 503 no-backend, plain text saying what to run', async (t) => {
  const px = await startProxy(t, []);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/anything', [['Host', 'localhost']]));
  const r = await c.readResponse();
  assert.equal(r.status, 503, r.raw);
  assert.equal(header(r, 'x-wtproxy-error'), 'no-backend');
  assert.match(header(r, 'content-type') || '', /^text\/plain/);
  const body = r.body.toString();
  assert.ok(body.length > 20, `body too short to explain anything: ${JSON.stringify(body)}`);
  assert.match(body, /backend/i, `body does not say what is missing:\n${body}`);
  assert.match(body, /wtproxy\s+\S+|--backend/, `body does not say what to run:\n${body}`);
  // the connection either stays usable (no Connection: close) or is closed
  if (/close/i.test(header(r, 'connection') || '')) {
    assert.ok(await c.waitClosed(3000), 'Connection: close announced but the connection stayed open');
  } else {
    c.write(requestHead('GET', '/again', [['Host', 'localhost']]));
    const r2 = await c.readResponse();
    assert.equal(r2.status, 503);
    assert.equal(header(r2, 'x-wtproxy-error'), 'no-backend');
  }
  await stopClean(px);
});

test('backend down (port closed): 502 backend-unreachable', async (t) => {
  const port = await closedPort();
  const px = await startProxy(t, ['--backend', `127.0.0.1:${port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  const started = Date.now();
  c.write(requestHead('GET', '/down', [['Host', 'localhost']]));
  const r = await c.readResponse({ ms: 8000 });
  assert.equal(r.status, 502, r.raw);
  assert.equal(header(r, 'x-wtproxy-error'), 'backend-unreachable');
  assert.ok(Date.now() - started < 3000, 'a refused connect should be answered at once, not after connect_timeout');
  const body = r.body.toString();
  assert.ok(body.length > 20, `body too short to say what happened: ${JSON.stringify(body)}`);
  assert.ok(body.includes(`connect to 127.0.0.1:${port}: Connection refused; it is the default ` +
    `backend (wtproxy serve --backend 127.0.0.1:${port})`), `the 502 does not say whose server:\n${body}`);
  assert.match(body, /^Fix: Read why the dev server stopped answering: wtproxy logs.*wtproxy restart/m, body);
  assert.equal(r.complete, true);
  await stopClean(px);
});

test('a POST with a body to a down backend: 502, body not left to corrupt the connection', async (t) => {
  const port = await closedPort();
  const px = await startProxy(t, ['--backend', `127.0.0.1:${port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  const body = 'GET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n';
  c.write(requestHead('POST', '/down', [['Host', 'localhost'], ['Content-Length', String(body.length)]]) + body);
  const r = await c.readResponse({ ms: 8000 });
  assert.equal(r.status, 502, r.raw);
  assert.equal(header(r, 'x-wtproxy-error'), 'backend-unreachable');
  // the request body must not be parsed as a second request
  if (/close/i.test(header(r, 'connection') || '')) {
    assert.ok(await c.waitClosed(3000));
    assert.equal(c.buf.length, 0, `a second response followed: ${c.buf.toString('latin1')}`);
  } else {
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(c.buf.length, 0, `the request body was answered as a request: ${c.buf.toString('latin1')}`);
  }
  await stopClean(px);
});
