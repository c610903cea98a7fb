// 312: a backend that answers the first request on a connection and then
// accepts the next one on the same (pooled) connection and never answers
// it (062/063 cover a backend that never connects or never answers at
// all). On one kept-alive client connection: GET -> 200; HEAD -> 504
// after response_timeout, with no body (a body would be read as the next
// response: found by tests/fuzz/fuzz_response); GET -> 200 from a fresh
// backend connection, never the silent one's late bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { RawConn, requestHead, header, stopClean } from './lib/backends.mjs';
import { sleep } from './lib/conformance.mjs';

test('a pooled backend connection that goes silent: 504 without a body to HEAD, then served fresh', async (t) => {
  const backend = await rawBackend(t, (s) => {
    let answered = false;
    let seen = '';
    s.on('data', (d) => {
      seen += d.toString('latin1');
      if (!answered && seen.includes('\r\n\r\n')) {
        answered = true;
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst');
      }
      // every later request on this connection: accepted, read, never answered
    });
  });
  const px = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`, '--response-timeout', '1s']);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());

  c.write(requestHead('GET', '/one', [['Host', 'x']]));
  const one = await c.readResponse();
  assert.equal(one.status, 200);
  assert.equal(one.body.toString(), 'first');

  const t0 = Date.now();
  c.write(requestHead('HEAD', '/two', [['Host', 'x']]));
  const two = await c.readResponse({ noBody: true, ms: 8000 });
  assert.equal(two.status, 504, two.raw);
  assert.equal(header(two, 'x-wtproxy-error'), 'backend-timeout');
  assert.ok(Date.now() - t0 >= 900, 'after response_timeout');
  assert.equal(backend.connections, 1, 'the HEAD went on the pooled connection');

  c.write(requestHead('GET', '/three', [['Host', 'x']]));
  const three = await c.readResponse();
  assert.equal(three.status, 200, `the third response on the connection: ${three.raw}`);
  assert.equal(three.body.toString(), 'first', 'answered on a fresh backend connection');
  assert.equal(backend.connections, 2);
  await sleep(100);
  assert.equal(c.buf.length, 0, `bytes after the last response: ${c.buf.toString('latin1')}`);
  await stopClean(px);
});
