// 008: keep-alive to the client: 100 requests on one client connection are
// all answered, and the client never needs a second connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, httpGet, stopClean } from './lib/backends.mjs';

test('100 sequential requests on one raw socket', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  for (let i = 0; i < 100; i++) {
    const method = i % 3 === 2 ? 'POST' : 'GET';
    const body = method === 'POST' ? `body-${i}` : '';
    const hdrs = [['Host', 'localhost']];
    if (body) hdrs.push(['Content-Length', String(body.length)]);
    c.write(requestHead(method, `/req/${i}`, hdrs) + body);
    const r = await c.readResponse();
    assert.equal(r.status, 200, `request ${i}: ${r.raw}`);
    const got = JSON.parse(r.body.toString());
    assert.equal(got.url, `/req/${i}`, `request ${i} got the answer to ${got.url}`);
    assert.equal(got.bodyLength, body.length);
    assert.ok(!c.ended, `proxy closed the client connection after request ${i}`);
  }
  assert.equal(be.requests.length, 100);
  await stopClean(px);
});

test('node http.Agent keepAlive maxSockets 1: 100 requests, one connection', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  let sockets = 0;
  const orig = agent.createConnection.bind(agent);
  agent.createConnection = (...a) => { sockets++; return orig(...a); };
  const seen = new Set();
  for (let i = 0; i < 100; i++) {
    const r = await httpGet(px.port, `/agent/${i}`, { agent });
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body.toString()).url, `/agent/${i}`);
    seen.add(r.socket);
  }
  // and 20 more issued at once: they queue on the single socket
  const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => httpGet(px.port, `/burst/${i}`, { agent })));
  rs.forEach((r, i) => assert.equal(JSON.parse(r.body.toString()).url, `/burst/${i}`));
  assert.equal(sockets, 1, `the client had to open ${sockets} connections: the proxy closed keep-alive connections`);
  assert.equal(seen.size, 1);
  await stopClean(px);
});
