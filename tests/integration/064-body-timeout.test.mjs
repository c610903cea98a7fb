// 064: body idle timeout. A client sends a head with Content-Length: 1000
// and 10 body bytes, then stalls: after body_timeout without a body byte
// the client connection is closed, and the backend connection too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { connect, watch, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

test('stalled request body: both connections closed after body_timeout', async (t) => {
  let backendClosedAt = null;
  let backendConnAt = null;
  const backend = await rawBackend(t, (s) => {
    backendConnAt = Date.now();
    s.on('close', () => { backendClosedAt = Date.now(); });
  });
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--body-timeout', '1s', '--response-timeout', '30s', '--head-timeout', '10s', '--keepalive-timeout', '10s']);
  const s = await connect(proxy.port);
  const w = watch(s);
  t.after(() => s.destroy());
  s.write('POST /stall HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789');
  const stallFrom = Date.now();

  // The 10 bytes make it to the backend (streaming), and nothing closes early.
  await sleep(500);
  assert.equal(w.closedAt, null, 'client connection closed at half of body_timeout');
  assert.ok(backend.received.includes('0123456789'), `backend got ${JSON.stringify(backend.received)}`);
  assert.equal(backendClosedAt, null, 'backend connection closed at half of body_timeout');

  const winner = await Promise.race([w.whenClosed, sleep(4000).then(() => 'timeout')]);
  const stalled = Date.now() - stallFrom;
  assert.notEqual(winner, 'timeout', 'client connection still open 4.5 s into the stall');
  assert.ok(stalled >= 900, `client closed after ${stalled} ms, before body_timeout (1 s)`);
  assert.ok(stalled <= 2500, `client closed after ${stalled} ms, want about 1 s`);
  t.diagnostic(`client got ${JSON.stringify(w.raw.slice(0, 200))} before the close`);

  for (let i = 0; i < 40 && backendClosedAt === null; i++) await sleep(50);
  assert.notEqual(backendConnAt, null, 'no backend connection was made');
  assert.notEqual(backendClosedAt, null, 'backend connection still open after the client was dropped');
  assert.ok(backendClosedAt - stallFrom <= 3000, `backend closed ${backendClosedAt - stallFrom} ms into the stall`);
  // A body that was cut short must not look complete to the backend.
  assert.ok(!/0123456789.{990}/s.test(backend.received));
  assertNoSanitizerReport(proxy);
});
