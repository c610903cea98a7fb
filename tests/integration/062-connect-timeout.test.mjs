// 062: backend connect timeout and refusal -> 502 backend-unreachable.
//
// A connect that hangs on loopback: a python3 listener with backlog 0 that
// never accepts. Its accept queue holds one connection; once this test has
// filled it, Linux drops further SYNs (tcp_conn_request: accept queue full)
// so the next connect() neither completes nor fails until the SYN retries
// run out - long after connect_timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startProxy } from './lib/wtproxy.mjs';
import { exchange, startHelper, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

const NEVER_ACCEPTS = [
  '-c',
  'import socket, time\n' +
  's = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n' +
  "s.bind(('127.0.0.1', 0))\n" +
  's.listen(0)\n' +
  "print('port', s.getsockname()[1], flush=True)\n" +
  'time.sleep(120)\n',
];

// Open connections to port until one does not complete within 300 ms.
// Returns { hung: bool, sockets }.
async function fillBacklog(port) {
  const sockets = [];
  for (let i = 0; i < 16; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    sockets.push(s);
    const ok = await Promise.race([
      new Promise((res) => s.once('connect', () => res(true))),
      sleep(300).then(() => false),
    ]);
    if (!ok) return { hung: true, sockets };
  }
  return { hung: false, sockets };
}

test('backend connect that hangs -> 502 backend-unreachable after connect_timeout', async (t) => {
  const py = await startHelper(t, '/usr/bin/python3', NEVER_ACCEPTS, /port (\d+)/);
  const port = Number(py.match[1]);
  const { hung, sockets } = await fillBacklog(port);
  t.after(() => { for (const s of sockets) s.destroy(); });
  if (!hung) {
    t.skip('could not make a connect hang on loopback (accept queue never filled); see the refused-connect test');
    return;
  }
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${port}`,
    '--connect-timeout', '1s', '--response-timeout', '10s']);
  const t0 = Date.now();
  const r = await exchange(proxy.port, 'GET /hang HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 8000 });
  const elapsed = Date.now() - t0;
  assert.equal(r.status, 502, `after ${elapsed} ms: ${JSON.stringify(r.raw)}`);
  assert.equal(r.error, 'backend-unreachable', JSON.stringify(r.raw));
  assert.ok(elapsed >= 900, `502 after ${elapsed} ms, before connect_timeout (1 s)`);
  assert.ok(elapsed <= 3000, `502 after ${elapsed} ms, want about 1 s`);
  assertNoSanitizerReport(proxy);
});

test('backend connection refused -> 502 backend-unreachable at once', async (t) => {
  // A port that was just free: bind, read the port, close.
  const srv = net.createServer();
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  const port = srv.address().port;
  await new Promise((res) => srv.close(res));
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${port}`, '--connect-timeout', '5s']);
  const t0 = Date.now();
  const r = await exchange(proxy.port, 'GET /refused HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 8000 });
  const elapsed = Date.now() - t0;
  assert.equal(r.status, 502, JSON.stringify(r.raw));
  assert.equal(r.error, 'backend-unreachable', JSON.stringify(r.raw));
  assert.ok(elapsed < 2000, `refusal took ${elapsed} ms`);
  // The daemon keeps serving: a second request gets the same answer.
  const r2 = await exchange(proxy.port, 'GET /refused2 HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 8000 });
  assert.equal(r2.status, 502, JSON.stringify(r2.raw));
  assertNoSanitizerReport(proxy);
});
