// 002: hop-by-hop headers are removed in both directions: Connection and
// every header it names, Keep-Alive, TE, Trailer, Proxy-*, and Upgrade on a
// request that is not an upgrade. End-to-end headers pass untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { answerHeads, RawConn, requestHead, header, stopClean } from './lib/backends.mjs';
import { echoRequest } from './lib/echo.mjs';

// The proxy may send its own Connection header on each hop, but only with
// its own framing tokens, never a token copied from the other side.
function assertOwnConnectionOnly(value, where) {
  if (value === undefined) return;
  for (const tok of value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)) {
    assert.ok(['keep-alive', 'close'].includes(tok), `${where}: Connection carries a foreign token "${tok}" (${value})`);
  }
}

test('hop-by-hop request headers are not forwarded, end-to-end ones are', async (t) => {
  const { px, got: { headers: h } } = await echoRequest(t, requestHead('GET', '/echo', [
    ['Host', 'localhost'],
    ['Connection', 'keep-alive, X-Secret, X-Other-Secret'],
    ['X-Secret', 'must-not-pass'],
    ['X-Other-Secret', 'must-not-pass-either'],
    ['Keep-Alive', 'timeout=5, max=100'],
    ['TE', 'trailers, deflate'],
    ['Trailer', 'X-Checksum'],
    ['Proxy-Authorization', 'Basic cHJveHk6c2VjcmV0'],
    ['Proxy-Foo', 'bar'],
    ['Proxy-Connection', 'keep-alive'],
    ['Upgrade', 'h2c'],
    ['Accept', 'application/json'],
    ['User-Agent', 'wtproxy-test/1'],
    ['Cookie', 'a=1; b=2'],
    ['Authorization', 'Bearer end-to-end'],
    ['X-Keep', 'yes'],
  ]));

  // The proxy may announce its own Keep-Alive parameters, never the client's.
  assert.notEqual(h['keep-alive'], 'timeout=5, max=100', 'the client\'s Keep-Alive header reached the backend');
  for (const gone of ['x-secret', 'x-other-secret', 'te', 'trailer',
    'proxy-authorization', 'proxy-foo', 'proxy-connection', 'upgrade']) {
    assert.equal(h[gone], undefined, `backend received hop-by-hop header ${gone}: ${h[gone]}`);
  }
  assertOwnConnectionOnly(h.connection, 'request to backend');
  assert.equal(h.accept, 'application/json');
  assert.equal(h['user-agent'], 'wtproxy-test/1');
  assert.equal(h.cookie, 'a=1; b=2');
  assert.equal(h.authorization, 'Bearer end-to-end');
  assert.equal(h['x-keep'], 'yes');
  assert.equal(h.host, 'localhost');
  await stopClean(px);
});

test('Connection: close, X-Secret drops X-Secret and still answers', async (t) => {
  const { px, c, got: { headers: h } } = await echoRequest(t, requestHead('GET', '/echo', [
    ['Host', 'localhost'],
    ['Connection', 'close, X-Secret'],
    ['X-Secret', 'must-not-pass'],
    ['X-Keep', 'yes'],
  ]));
  assert.equal(h['x-secret'], undefined, 'a header named in Connection reached the backend');
  assert.equal(h['x-keep'], 'yes');
  assertOwnConnectionOnly(h.connection, 'request to backend');
  assert.ok(await c.waitClosed(3000), 'client asked for Connection: close; the proxy kept the connection open');
  await stopClean(px);
});

test('hop-by-hop response headers are not relayed to the client', async (t) => {
  const be = await rawBackend(t, answerHeads(() => [
    'HTTP/1.1 200 OK',
    'Connection: X-Resp-Secret, keep-alive',
    'X-Resp-Secret: must-not-pass',
    'Keep-Alive: timeout=5, max=1000',
    'Proxy-Authenticate: Basic realm="x"',
    'Proxy-Foo: 1',
    'Trailer: X-Checksum',
    'Upgrade: h2c',
    'TE: trailers',
    'X-End: kept',
    'Set-Cookie: s=1; Path=/',
    'Cache-Control: no-store',
    'Content-Length: 2',
    '', 'ok'].join('\r\n')));
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/', [['Host', 'localhost']]));
  const r = await c.readResponse();
  assert.equal(r.status, 200, r.raw);
  assert.equal(r.body.toString(), 'ok');
  assert.notEqual(header(r, 'keep-alive'), 'timeout=5, max=1000', 'the backend\'s Keep-Alive header reached the client');
  for (const gone of ['x-resp-secret', 'proxy-authenticate', 'proxy-foo', 'trailer', 'upgrade', 'te']) {
    assert.equal(header(r, gone), undefined, `client received hop-by-hop response header ${gone}:\n${r.raw}`);
  }
  assertOwnConnectionOnly(header(r, 'connection'), 'response to client');
  assert.equal(header(r, 'x-end'), 'kept');
  assert.equal(header(r, 'set-cookie'), 's=1; Path=/');
  assert.equal(header(r, 'cache-control'), 'no-store');

  // and the connection is still usable for another request
  c.write(requestHead('GET', '/again', [['Host', 'localhost']]));
  const r2 = await c.readResponse();
  assert.equal(r2.status, 200, r2.raw);
  assert.equal(r2.body.toString(), 'ok');
  await stopClean(px);
});
