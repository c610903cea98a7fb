// 315: what a request carries as a secret never reaches the daemon's log:
// Authorization, Cookie and Proxy-Authorization values and a token in the
// query string, on requests that are relayed, refused as malformed (400),
// refused for an unreachable backend (502) and unroutable (503).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawRequest, statusOf } from './lib/wtproxy.mjs';
import { httpBackend, closedPort, stopClean } from './lib/backends.mjs';
import { sleep } from './lib/conformance.mjs';

const SECRET = 'S3cr3t-7f1d9c';
const secretHeaders = `Authorization: Bearer ${SECRET}-auth\r\nCookie: session=${SECRET}-cookie\r\n` +
  `Proxy-Authorization: Basic ${SECRET}-proxy\r\nX-Api-Key: ${SECRET}-key\r\n`;
const req = (extra = '', target = `/p?token=${SECRET}-query`) =>
  `GET ${target} HTTP/1.1\r\nHost: x\r\n${secretHeaders}${extra}Connection: close\r\n\r\n`;

test('no Authorization, Cookie or query token in the daemon\'s stderr, whatever the outcome', async (t) => {
  const be = await httpBackend(t);
  const ok = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const dead = await startProxy(t, ['--backend', `127.0.0.1:${await closedPort()}`]);
  const none = await startProxy(t, []);

  const outcomes = [
    [ok, req(), 200],
    [ok, req('Content-Length: 1\r\nTransfer-Encoding: chunked\r\n'), 400], // smuggling shape
    [ok, req('', `/p?token=${SECRET}-query x`), 400],                     // a bad request line
    [dead, req(), 502],
    [none, req(), 503],
  ];
  for (const [px, bytes, status] of outcomes) {
    const r = await rawRequest(px.port, bytes);
    assert.equal(statusOf(r.data), status, r.data.slice(0, 300));
  }
  assert.ok(be.requests.some((r) => r.headers.authorization === `Bearer ${SECRET}-auth`),
    'the relayed request carried its Authorization to the backend (end-to-end, as sent)');
  await sleep(200);
  for (const px of [ok, dead, none]) {
    const err = px.stderr();
    assert.ok(err.includes('wtproxy:'), 'the daemon did log');
    assert.ok(!err.includes(SECRET), `a secret in the daemon's log:\n${err}`);
    await stopClean(px);
  }
});
