// 060: slowloris. A head that trickles in one byte at a time, slower than
// head_timeout allows, gets 408 head-timeout and a closed connection, about
// head_timeout after its first byte (not reset by every byte), and nothing
// reaches the backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend, statusOf } from './lib/wtproxy.mjs';
import { requestResponder, connect, watch, sleep, parseHead, assertNoSanitizerReport } from './lib/conformance.mjs';

test('slowloris head gets 408 head-timeout within a bound', async (t) => {
  const backend = await rawBackend(t, requestResponder());
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--head-timeout', '1s', '--keepalive-timeout', '10s', '--body-timeout', '10s']);

  const head = 'GET /slowloris HTTP/1.1\r\nHost: x\r\nUser-Agent: trickle\r\nX-Pad: 0123456789\r\n\r\n';
  const s = await connect(proxy.port);
  const w = watch(s);
  t.after(() => s.destroy());
  const t0 = Date.now();
  let sent = 0;
  // 1 byte / 100 ms: the head needs ~7 s, the deadline is 1 s.
  const writer = (async () => {
    for (const ch of head) {
      if (w.closedAt !== null || s.destroyed) return;
      s.write(ch);
      sent++;
      await sleep(100);
    }
  })();
  const winner = await Promise.race([w.whenClosed, sleep(6000).then(() => 'timeout')]);
  const elapsed = Date.now() - t0;
  await writer;
  assert.notEqual(winner, 'timeout', `connection not closed after 6 s (sent ${sent} bytes); got ${JSON.stringify(w.raw)}`);
  assert.ok(elapsed >= 900, `closed after ${elapsed} ms, before head_timeout (1 s)`);
  assert.ok(elapsed <= 2500, `closed after ${elapsed} ms, want about 1 s`);
  assert.ok(sent < head.length, 'the whole head was sent before the deadline');
  assert.equal(statusOf(w.raw), 408, `response: ${JSON.stringify(w.raw)}`);
  const h = parseHead(w.raw);
  assert.equal(h && h.get('x-wtproxy-error'), 'head-timeout', `response: ${JSON.stringify(w.raw)}`);
  assert.equal(backend.received, '', 'a byte of the timed-out head reached the backend');
  assertNoSanitizerReport(proxy);
});

test('a head finishing inside head_timeout is served', async (t) => {
  const backend = await rawBackend(t, requestResponder());
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`, '--head-timeout', '1s']);
  const s = await connect(proxy.port);
  const w = watch(s);
  t.after(() => s.destroy());
  for (const part of ['GET /slow-but-ok HTTP/1.1\r\n', 'Host: x\r\n', '\r\n']) { s.write(part); await sleep(250); }
  for (let i = 0; i < 40 && !w.raw.includes('\r\n\r\nok'); i++) await sleep(50);
  assert.equal(statusOf(w.raw), 200, JSON.stringify(w.raw));
});
