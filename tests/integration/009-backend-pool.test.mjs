// 009: idle backend connections are pooled: 50 sequential requests through
// the proxy are served over far fewer backend connections than requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, RawConn, requestHead, stopClean } from './lib/backends.mjs';

test('50 requests from a keep-alive client use at most 2 backend connections', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  for (let i = 0; i < 50; i++) {
    const r = await httpGet(px.port, `/pool/${i}`, { agent });
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body.toString()).url, `/pool/${i}`);
  }
  assert.equal(be.requests.length, 50);
  assert.ok(be.connections <= 2, `backend saw ${be.connections} connections for 50 requests: no pooling`);
  await stopClean(px);
});

test('the pool is per backend, not per client connection: 50 short client connections', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  for (let i = 0; i < 50; i++) {
    const c = await RawConn.open(px.port);
    c.write(requestHead('GET', `/short/${i}`, [['Host', 'localhost'], ['Connection', 'close']]));
    const r = await c.readResponse();
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body.toString()).url, `/short/${i}`);
    await c.waitClosed(2000);
    c.close();
  }
  assert.equal(be.requests.length, 50);
  assert.ok(be.connections <= 2, `backend saw ${be.connections} connections for 50 requests: no pooling across client connections`);
  await stopClean(px);
});
