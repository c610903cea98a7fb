// 005: response bodies relayed intact: a chunked response (re-chunked by the
// proxy) and a Content-Length response (passed with its length).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, header, sha256, patternSha256, httpGet, MiB, stopClean } from './lib/backends.mjs';

const N = 5 * MiB + 321;

test('chunked response relayed intact', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', `/stream?bytes=${N}&mode=chunked`, [['Host', 'localhost']]));
  const r = await c.readResponse({ ms: 15000 });
  assert.equal(r.status, 200);
  assert.equal(r.framing, 'chunked', `expected a chunked response to an HTTP/1.1 client:\n${r.raw.slice(0, 300)}`);
  assert.ok(r.complete, 'no terminating chunk');
  assert.equal(r.body.length, N);
  assert.equal(sha256(r.body), patternSha256(N));
  assert.equal(header(r, 'x-pattern-sha256'), patternSha256(N), 'end-to-end response header lost');
  // the connection stays usable
  c.write(requestHead('GET', '/stream?bytes=10&mode=chunked', [['Host', 'localhost']]));
  const r2 = await c.readResponse();
  assert.equal(r2.body.length, 10);
  await stopClean(px);
});

test('Content-Length response relayed intact with its length', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', `/stream?bytes=${N}&mode=length`, [['Host', 'localhost']]));
  const r = await c.readResponse({ ms: 15000 });
  assert.equal(r.status, 200);
  assert.equal(header(r, 'content-length'), String(N));
  assert.equal(header(r, 'transfer-encoding'), undefined);
  assert.equal(r.body.length, N);
  assert.equal(sha256(r.body), patternSha256(N));
  c.write(requestHead('GET', '/stream?bytes=10&mode=length', [['Host', 'localhost']]));
  const r2 = await c.readResponse();
  assert.equal(r2.body.length, 10);
  await stopClean(px);
});

test('node:http client sees both intact', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  for (const mode of ['chunked', 'length']) {
    const r = await httpGet(px.port, `/stream?bytes=${N}&mode=${mode}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.length, N, mode);
    assert.equal(sha256(r.body), patternSha256(N), mode);
  }
  await stopClean(px);
});
