// 019: a backend that writes each response's head and body in two sends,
// with Nagle on (Django's runserver, python3 -m http.server), does not make
// keep-alive requests through wtproxy wait for a delayed ACK. Without an
// immediate ACK from wtproxy's side, Linux delays the ACK of the head once
// the connection looks interactive, the backend's Nagle holds the body until
// it arrives, and each request waits about 40 ms: 20 requests take 700 ms
// or more. With it they take a few ms each. wtproxy then relays each head
// and body in two writes too: without TCP_NODELAY on the client socket the
// client's own delayed ACK would stall them the same way, and this test
// fails as well.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { RawConn, requestHead, answerHeads, stopClean } from './lib/backends.mjs';

const N = 20;
const BUDGET_MS = 400; // the stall costs ~40 ms a request: N x 40 = 800

// A backend that answers each GET with the head in one write and the body
// in a second, on a socket with Nagle on.
async function splitSendBackend(t) {
  return rawBackend(t, (s) => {
    s.setNoDelay(false);
    answerHeads((head, i, sock) => {
      const body = JSON.stringify({ i, ok: true });
      sock.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      sock.write(body);
      return null;
    })(s);
  });
}

// N keep-alive GETs on one new connection to port; the total ms.
async function timeRequests(port) {
  const c = await RawConn.open(port);
  try {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      c.write(requestHead('GET', `/r/${i}`, [['Host', 'localhost']]));
      const r = await c.readResponse();
      assert.equal(r.status, 200, `request ${i}: ${r.raw}`);
      assert.ok(JSON.parse(r.body.toString()).ok, `request ${i}: ${r.raw}`);
    }
    return performance.now() - t0;
  } finally {
    c.close();
  }
}

test(`${N} keep-alive requests to a backend that sends head and body apart take under ${BUDGET_MS} ms`, async (t) => {
  const be = await splitSendBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`, '--whoami', 'off']);
  const direct = await timeRequests(be.port);
  const proxied = await timeRequests(px.port);
  t.diagnostic(`${N} requests: direct ${direct.toFixed(0)} ms (the client's own delayed ACKs), through wtproxy ${proxied.toFixed(0)} ms`);
  assert.ok(proxied < BUDGET_MS,
    `${N} requests through wtproxy took ${proxied.toFixed(0)} ms: a delayed ACK held each body (about 40 ms a request): no immediate ACK on the backend socket, or Nagle on the client's`);
  assert.equal(be.connections, 2, 'wtproxy kept one pooled backend connection for all the requests');
  await stopClean(px);
});
