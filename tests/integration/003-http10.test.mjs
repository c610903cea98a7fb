// 003: HTTP/1.0 on both sides. A 1.0 client gets a 1.x response and the
// connection closed after it (1.0 has no keep-alive unless asked); a chunked
// backend response is not sent chunked to a 1.0 client (it cannot decode
// it). A 1.0 backend that delimits its body by closing is relayed whole,
// with Connection: close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend, rawRequest, statusOf } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, header, pattern, sha256, patternSha256, KiB, MiB, stopClean } from './lib/backends.mjs';

test('HTTP/1.0 client: 1.x response, then the connection is closed', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const { data, closed } = await rawRequest(px.port, 'GET /one-oh HTTP/1.0\r\nHost: localhost\r\n\r\n', 5000);
  assert.equal(statusOf(data), 200, data);
  assert.ok(closed, `the proxy did not close the HTTP/1.0 connection after the response:\n${data}`);
  const body = data.slice(data.indexOf('\r\n\r\n') + 4);
  assert.equal(JSON.parse(body).url, '/one-oh');
  assert.equal(be.requests.length, 1);
  await stopClean(px);
});

test('HTTP/1.0 client without Host is served', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const { data, closed } = await rawRequest(px.port, 'GET /no-host HTTP/1.0\r\n\r\n', 5000);
  assert.equal(statusOf(data), 200, data);
  assert.ok(closed);
  await stopClean(px);
});

test('HTTP/1.0 client gets a chunked backend response de-chunked, delimited by close', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const n = 300 * KiB + 3;
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(`GET /stream?bytes=${n}&mode=chunked HTTP/1.0\r\nHost: localhost\r\n\r\n`);
  const r = await c.readResponse({ ms: 10000 });
  assert.equal(r.status, 200);
  assert.match(r.version, /^1\.[01]$/);
  assert.equal(header(r, 'transfer-encoding'), undefined,
    `Transfer-Encoding sent to an HTTP/1.0 client:\n${r.raw.slice(0, 400)}`);
  assert.ok(r.framing === 'close' || r.framing === 'length', r.framing);
  if (r.framing === 'close') {
    // body is whatever came before the close
    assert.ok(r.complete);
  }
  assert.equal(r.body.length, n);
  assert.equal(sha256(r.body), patternSha256(n));
  assert.ok(await c.waitClosed(3000), 'connection to the 1.0 client stays open');
  await stopClean(px);
});

test('HTTP/1.0 backend answering without Content-Length, closing: relayed completely', async (t) => {
  const n = MiB + 17;
  const body = Buffer.concat([...pattern(n)]);
  const be = await rawBackend(t, (s) => {
    let head = '';
    s.on('data', (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.write('HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n');
      s.end(body); // close delimits the body
      head = '';
    });
  });
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);

  // an HTTP/1.1 client
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/from-1.0', [['Host', 'localhost']]));
  const r = await c.readResponse({ ms: 10000 });
  assert.equal(r.status, 200);
  assert.ok(r.complete, 'response framing says the body was cut short');
  assert.equal(r.body.length, n, `got ${r.body.length} of ${n} bytes`);
  assert.equal(sha256(r.body), sha256(body));
  assert.match(header(r, 'connection') || '', /close/i,
    'a close-delimited backend response must be passed on with Connection: close');
  assert.ok(await c.waitClosed(3000));
  assert.match(be.received, /^GET \/from-1\.0 HTTP\/1\.[01]\r\n/);

  // and an HTTP/1.0 client
  const { data, closed } = await rawRequest(px.port, 'GET /from-1.0 HTTP/1.0\r\nHost: localhost\r\n\r\n', 10000);
  assert.ok(closed);
  assert.equal(statusOf(data), 200);
  const got = Buffer.from(data.slice(data.indexOf('\r\n\r\n') + 4), 'latin1');
  assert.equal(got.length, n);
  assert.equal(sha256(got), sha256(body));
  await stopClean(px);
});
