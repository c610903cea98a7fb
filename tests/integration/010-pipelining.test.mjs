// 010: pipelining: requests written in one write on one socket get their
// responses in request order even when the backend finishes them out of
// order (the first is the slowest).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, sha256, patternSha256, MiB, stopClean } from './lib/backends.mjs';

test('3 pipelined requests answered in order', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  const paths = ['/delay/600/first', '/delay/0/second', '/delay/200/third'];
  c.write(paths.map((p) => requestHead('GET', p, [['Host', 'localhost']])).join(''));
  for (const p of paths) {
    const r = await c.readResponse({ ms: 5000 });
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.body.toString(), p, 'responses out of order');
  }
  assert.equal(c.buf.length, 0, `extra bytes after the 3 responses: ${c.buf.toString('latin1')}`);
  // the connection is still usable afterwards
  c.write(requestHead('GET', '/delay/0/fourth', [['Host', 'localhost']]));
  const r4 = await c.readResponse();
  assert.equal(r4.body.toString(), '/delay/0/fourth');
  await stopClean(px);
});

test('pipelined requests with bodies, mixed methods', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  const reqs = [];
  for (let i = 0; i < 10; i++) {
    const body = 'x'.repeat(i * 1000);
    reqs.push(requestHead('POST', `/delay/${(10 - i) * 20}/p${i}`, [['Host', 'localhost'], ['Content-Length', String(body.length)]]) + body);
  }
  c.write(reqs.join(''));
  for (let i = 0; i < 10; i++) {
    const r = await c.readResponse({ ms: 5000 });
    assert.equal(r.body.toString(), `/delay/${(10 - i) * 20}/p${i}`);
  }
  await stopClean(px);
});

test('a request pipelined behind a large streamed response waits its turn', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  const n = 4 * MiB + 5;
  c.write(requestHead('GET', `/stream?bytes=${n}&mode=chunked`, [['Host', 'localhost']]) +
    requestHead('GET', '/delay/0/small', [['Host', 'localhost']]) +
    requestHead('GET', `/stream?bytes=${n}&mode=length`, [['Host', 'localhost']]));
  const r1 = await c.readResponse({ ms: 15000 });
  assert.equal(r1.body.length, n);
  assert.equal(sha256(r1.body), patternSha256(n), 'first response corrupted (interleaved with the second?)');
  const r2 = await c.readResponse();
  assert.equal(r2.body.toString(), '/delay/0/small');
  const r3 = await c.readResponse({ ms: 15000 });
  assert.equal(r3.body.length, n);
  assert.equal(sha256(r3.body), patternSha256(n));
  await stopClean(px);
});
