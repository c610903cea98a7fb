// 004: request bodies. A chunked body of several MB from node:http is
// streamed to the backend intact; chunk extensions and trailers are dropped
// (re-chunked); a Content-Length body passes with its Content-Length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import crypto from 'node:crypto';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, MiB, stopClean } from './lib/backends.mjs';

test('chunked request body of 8 MiB reaches the backend intact', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const body = crypto.randomBytes(8 * MiB + 123);
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: px.port, method: 'POST', path: '/hash',
      headers: { 'Content-Type': 'application/octet-stream' } }, (r) => {
      let b = '';
      r.on('data', (d) => { b += d; });
      r.on('end', () => resolve({ status: r.statusCode, body: b }));
    });
    req.on('error', reject);
    // uneven chunk sizes, written without Content-Length: node sends chunked
    let off = 0;
    const sizes = [1, 7, 4096, 65536, 333333, 1 << 20];
    let i = 0;
    const pump = () => {
      while (off < body.length) {
        const n = Math.min(sizes[i++ % sizes.length], body.length - off);
        const ok = req.write(body.subarray(off, off + n));
        off += n;
        if (!ok) { req.once('drain', pump); return; }
      }
      req.end();
    };
    pump();
  });
  assert.equal(res.status, 200, res.body);
  const got = JSON.parse(res.body);
  assert.equal(got.length, body.length);
  assert.equal(got.sha256, crypto.createHash('sha256').update(body).digest('hex'));
  assert.equal(got.headers['content-type'], 'application/octet-stream');
  await stopClean(px);
});

// chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
// (RFC 9112 7.1.1); chunk-ext-val = token / quoted-string.
const extCases = [
  ['token value, quoted value, name only, extension on the last chunk, trailer',
    '5;name=value\r\nhello\r\n' + '1;a="q;d"\r\n \r\n' + '5;flag\r\nworld\r\n' + '0;last=1\r\nX-Sum: abc\r\n\r\n'],
  ['several extensions on one chunk (;a=b;c=d and ;a=b;c="d")',
    '5;a=b;c=d\r\nhello\r\n' + '1;a=b;c="d"\r\n \r\n' + '5\r\nworld\r\n' + '0\r\n\r\n',
    // A known limitation, kept visible: Debian's llhttp 8.1 answers
    // HPE_INVALID_CHUNK_SIZE for a token-valued extension followed by
    // another (llhttp 9 accepts it). wtproxy then refuses with 400 and
    // nothing reaches the backend: safe, but a valid request is refused.
    'llhttp 8.1 rejects ";a=b;c=d" (a token extension followed by another)'],
];

for (const [name, chunks, todo] of extCases) {
  test(`chunk extensions and trailers are dropped, data kept: ${name}`, { todo }, async (t) => {
    const be = await httpBackend(t);
    const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
    const c = await RawConn.open(px.port);
    t.after(() => c.close());
    c.write(requestHead('POST', '/echo', [['Host', 'localhost'], ['Transfer-Encoding', 'chunked'], ['Trailer', 'X-Sum']]) + chunks);
    const r = await c.readResponse();
    assert.equal(r.status, 200, r.raw);
    const got = JSON.parse(r.body.toString());
    assert.equal(got.bodyLength, 11);
    assert.equal(got.bodySha256, crypto.createHash('sha256').update('hello world').digest('hex'));
    assert.equal(got.headers['x-sum'], undefined, 'trailer field reached the backend as a header');
    assert.doesNotMatch(got.rawHeaders.join('\n'), /name=value|last=1/);
    // the backend must see a framed body: chunked or Content-Length 11
    assert.ok(got.headers['transfer-encoding'] === 'chunked' || got.headers['content-length'] === '11',
      JSON.stringify(got.headers));
    await stopClean(px);
  });
}

test('Content-Length request body passes with its Content-Length', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const body = crypto.randomBytes(3 * MiB + 5);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('PUT', '/hash', [['Host', 'localhost'], ['Content-Length', String(body.length)]]));
  c.write(body);
  const r = await c.readResponse({ ms: 10000 });
  assert.equal(r.status, 200, r.raw.slice(0, 500));
  const got = JSON.parse(r.body.toString());
  assert.equal(got.length, body.length);
  assert.equal(got.sha256, crypto.createHash('sha256').update(body).digest('hex'));
  assert.equal(got.headers['content-length'], String(body.length));
  assert.equal(got.headers['transfer-encoding'], undefined);
  await stopClean(px);
});
