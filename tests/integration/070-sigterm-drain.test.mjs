// 070: SIGTERM with a request in flight. The slow request (backend answers
// after 1.5 s) completes with its full body; idle connections are closed;
// new connections are refused once the signal is handled; the daemon exits 0
// as soon as the in-flight request is done (well before shutdown_timeout).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startProxy, rawBackend, statusOf } from './lib/wtproxy.mjs';
import { requestResponder, exchange, connect, watch, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

const BODY = 'x'.repeat(200000);

test('SIGTERM drains the in-flight request, refuses new ones, exits 0', async (t) => {
  const backend = await rawBackend(t, requestResponder((req, info, s) => {
    const out = `HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`;
    if (req.start.startsWith('GET /slow ')) { setTimeout(() => { if (!s.destroyed) s.write(out); }, 1500); return null; }
    return 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
  }));
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--shutdown-timeout', '8s', '--response-timeout', '10s']);

  // An idle keep-alive connection, served once.
  const idle = await connect(proxy.port);
  const idleW = watch(idle);
  t.after(() => idle.destroy());
  idle.write('GET /quick HTTP/1.1\r\nHost: x\r\n\r\n');
  for (let i = 0; i < 60 && !idleW.raw.endsWith('ok'); i++) await sleep(50);
  assert.equal(statusOf(idleW.raw), 200);

  const t0 = Date.now();
  const slow = exchange(proxy.port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 9000, closeWait: 500 });
  await sleep(400);
  assert.ok(backend.received.includes('GET /slow '), 'slow request not at the backend yet');
  proxy.proc.kill('SIGTERM');
  const sigAt = Date.now();
  await sleep(300);

  // New connections are refused.
  const refused = await new Promise((res) => {
    const s = net.connect(proxy.port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); res('connected'); });
    s.on('error', (e) => res(e.code));
  });
  assert.equal(refused, 'ECONNREFUSED', `a new connection after SIGTERM: ${refused}`);

  // The idle connection is closed without waiting for the slow one.
  const idleClosed = await Promise.race([idleW.whenClosed, sleep(1000).then(() => null)]);
  assert.notEqual(idleClosed, null, 'idle keep-alive connection still open 1.3 s after SIGTERM');

  const r = await slow;
  assert.equal(r.status, 200, `in-flight response: ${JSON.stringify(r.raw.slice(0, 300))}`);
  assert.ok(r.complete, `in-flight response incomplete: ${r.raw.length} bytes`);
  assert.equal(r.decoded.length, BODY.length);
  assert.ok(Date.now() - t0 >= 1400);

  const exit = await Promise.race([proxy.exited, sleep(5000).then(() => null)]);
  assert.notEqual(exit, null, `daemon still running ${Date.now() - sigAt} ms after SIGTERM\n${proxy.stderr()}`);
  assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}\n${proxy.stderr()}`);
  assert.ok(Date.now() - sigAt < 6000, 'exit waited for shutdown_timeout instead of the request');
  assertNoSanitizerReport(proxy);
});

test('SIGINT with nothing in flight exits 0 promptly', async (t) => {
  const proxy = await startProxy(t, []);
  await sleep(300); // past startup; the next test covers a signal at the listening line
  const t0 = Date.now();
  proxy.proc.kill('SIGINT');
  const exit = await Promise.race([proxy.exited, sleep(5000).then(() => null)]);
  assert.notEqual(exit, null, 'daemon still running 5 s after SIGINT');
  assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}\n${proxy.stderr()}`);
  assert.ok(Date.now() - t0 < 2000, `idle daemon took ${Date.now() - t0} ms to exit`);
  assertNoSanitizerReport(proxy);
});

// "listening on" is the daemon's readiness line (the harness and any
// supervisor act on it), so SIGTERM must be handled from then on: a signal
// sent the moment the line appears must still get a clean exit 0, not the
// default action (death by signal).
test('SIGTERM right at the listening line is handled (exit 0)', async (t) => {
  const results = [];
  for (let i = 0; i < 10; i++) {
    const proxy = await startProxy(t, []);
    proxy.proc.kill('SIGTERM');
    const exit = await Promise.race([proxy.exited, sleep(5000).then(() => ({ code: 'still running' }))]);
    results.push(exit.sig || exit.code);
  }
  assert.deepEqual(results, Array(10).fill(0), `exits of 10 daemons sent SIGTERM at their listening line: ${results.join(', ')}`);
});
