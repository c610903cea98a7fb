// 061: an idle keep-alive client connection is closed after
// keepalive_timeout, and not before (still open at half of it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend, statusOf } from './lib/wtproxy.mjs';
import { requestResponder, connect, watch, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

test('idle keep-alive connection closed after keepalive_timeout', async (t) => {
  const backend = await rawBackend(t, requestResponder());
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--keepalive-timeout', '1s', '--head-timeout', '10s']);
  const s = await connect(proxy.port);
  const w = watch(s);
  t.after(() => s.destroy());
  s.write('GET /ka HTTP/1.1\r\nHost: x\r\n\r\n');
  for (let i = 0; i < 60 && !w.raw.endsWith('ok'); i++) await sleep(50);
  assert.equal(statusOf(w.raw), 200, JSON.stringify(w.raw));
  const idleFrom = Date.now();

  await sleep(500);
  assert.equal(w.closedAt, null, 'closed at half of keepalive_timeout');

  // Still usable at half time? No: a request now would restart the idle
  // clock. Just wait for the close.
  const winner = await Promise.race([w.whenClosed, sleep(4000).then(() => 'timeout')]);
  const idle = Date.now() - idleFrom;
  assert.notEqual(winner, 'timeout', 'idle connection still open 4.5 s after its response');
  assert.ok(idle >= 900, `closed after ${idle} ms idle, before keepalive_timeout (1 s)`);
  assert.ok(idle <= 2500, `closed after ${idle} ms idle, want about 1 s`);
  assert.equal(w.raw.split('HTTP/1.1').length - 1, 1, `wtproxy wrote something on idle close: ${JSON.stringify(w.raw)}`);
  assertNoSanitizerReport(proxy);
});

test('a request inside keepalive_timeout restarts the idle clock', async (t) => {
  const backend = await rawBackend(t, requestResponder());
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`, '--keepalive-timeout', '1s']);
  const s = await connect(proxy.port);
  const w = watch(s);
  t.after(() => s.destroy());
  for (let n = 1; n <= 3; n++) {
    s.write(`GET /ka${n} HTTP/1.1\r\nHost: x\r\n\r\n`);
    for (let i = 0; i < 60 && (w.raw.match(/\r\n\r\nok/g) || []).length < n; i++) await sleep(50);
    assert.equal((w.raw.match(/\r\n\r\nok/g) || []).length, n, `request ${n}: ${JSON.stringify(w.raw)}`);
    await sleep(700); // 3 x 0.7 s > 1 s in all, < 1 s each time
    assert.equal(w.closedAt, null, `closed after request ${n}`);
  }
});
