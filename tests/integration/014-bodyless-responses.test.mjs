// 014: responses that never have a body whatever their headers say -- a
// response to HEAD, 204 and 304, each sent with a Content-Length -- leave the
// client connection reusable: the next request on the same socket gets its
// own, correct response (a proxy waiting for the announced body would hang,
// or hand the next response's bytes out as this one's body).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { answerHeads, RawConn, requestHead, header, stopClean } from './lib/backends.mjs';

function backend(t) {
  return rawBackend(t, answerHeads((head) => {
    const [method, target] = head.split(' ');
    if (method === 'HEAD' && target === '/head-chunked') return 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n';
    if (method === 'HEAD') return 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1234\r\n\r\n';
    if (target === '/204') return 'HTTP/1.1 204 No Content\r\nContent-Length: 50\r\n\r\n';
    if (target === '/103') return 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nContent-Length: 2\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nfinal:103';
    if (target === '/304') return 'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 4321\r\n\r\n';
    const body = `next:${target}`;
    return `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  }));
}

for (const [name, method, target, status] of [
  ['HEAD', 'HEAD', '/head', 200],
  ['HEAD answered with Transfer-Encoding: chunked', 'HEAD', '/head-chunked', 200],
  ['204', 'GET', '/204', 204],
  ['304', 'GET', '/304', 304],
]) {
  test(`${name} (Content-Length or chunked announced, no body), then another request on the same socket`, async (t) => {
    const be = await backend(t);
    const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
    const c = await RawConn.open(px.port);
    t.after(() => c.close());
    const hdrs = [['Host', 'localhost']];
    if (status === 304) hdrs.push(['If-None-Match', '"v1"']);
    c.write(requestHead(method, target, hdrs));
    const r = await c.readResponse({ noBody: true, ms: 5000 });
    assert.equal(r.status, status, r.raw);
    if (target === '/head') {
      assert.equal(header(r, 'content-length'), '1234', 'HEAD must keep the Content-Length of the GET');
      assert.equal(header(r, 'transfer-encoding'), undefined, `bodyless response re-framed as chunked:\n${r.raw}`);
    }
    if (status === 304) assert.equal(header(r, 'etag'), '"v1"');
    // RFC 9110 §8.6: a 204 carries no Content-Length; a client honouring
    // the backend's would take the next response as this one's body
    if (status === 204) assert.equal(header(r, 'content-length'), undefined, r.raw);
    // nothing may follow the head (no body, no chunk terminator)
    await new Promise((res) => setTimeout(res, 150));
    assert.equal(c.buf.length, 0, `bytes after a bodyless response: ${JSON.stringify(c.buf.toString('latin1'))}`);
    assert.ok(!c.ended, 'proxy closed the connection after a bodyless response');

    c.write(requestHead('GET', '/next', [['Host', 'localhost']]));
    const r2 = await c.readResponse({ ms: 5000 });
    assert.equal(r2.status, 200, r2.raw);
    assert.equal(r2.body.toString(), 'next:/next');

    // a third one, to be sure the backend side is in step as well
    c.write(requestHead('GET', '/third', [['Host', 'localhost']]));
    const r3 = await c.readResponse({ ms: 5000 });
    assert.equal(r3.body.toString(), 'next:/third');
    await stopClean(px);
  });
}

test('HEAD, 204, 304 and GET pipelined in one write', async (t) => {
  const be = await backend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('HEAD', '/h', [['Host', 'localhost']]) +
    requestHead('GET', '/204', [['Host', 'localhost']]) +
    requestHead('GET', '/304', [['Host', 'localhost']]) +
    requestHead('GET', '/last', [['Host', 'localhost']]));
  assert.equal((await c.readResponse({ noBody: true })).status, 200);
  assert.equal((await c.readResponse()).status, 204);
  assert.equal((await c.readResponse()).status, 304);
  const r = await c.readResponse();
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), 'next:/last');
  await stopClean(px);
});

// Found by tests/fuzz/fuzz_response: a backend's interim response carrying a
// Content-Length was relayed with it, and a client honouring it (llhttp 8.1
// does) read the final response's first bytes as the interim one's body.
test('103 Early Hints sent with a Content-Length: relayed without it, then the final response intact', async (t) => {
  const be = await backend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/103', [['Host', 'localhost']]));
  const hints = await c.readResponse({ ms: 5000 });
  assert.equal(hints.status, 103, hints.raw);
  assert.equal(header(hints, 'link'), '</a.css>; rel=preload');
  assert.equal(header(hints, 'content-length'), undefined, hints.raw);
  const final = await c.readResponse({ ms: 5000 });
  assert.equal(final.status, 200, final.raw);
  assert.equal(final.body.toString(), 'final:103');
  c.write(requestHead('GET', '/next', [['Host', 'localhost']]));
  const r2 = await c.readResponse({ ms: 5000 });
  assert.equal(r2.body.toString(), 'next:/next');
  await stopClean(px);
});
