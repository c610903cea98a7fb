// 051: malformed backend responses (tests/conformance/responses).
//
// For each case a fresh daemon and a raw backend: the backend's FIRST
// connection gets the case's bytes (then the backend closes it, or leaves
// it hanging open); every later connection gets a good `200 ok`. The client
// must get 502 backend-bad-response, the bad backend connection must be
// discarded (closed by wtproxy, never reused), and a second request on a
// new client connection must get the good answer over a new backend
// connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { loadCases, requestResponder, exchange, frameMessage, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

const cases = loadCases('responses', 'response');
const show = (raw) => JSON.stringify(raw.length > 400 ? raw.slice(0, 400) + '...' : raw);
const GOOD = 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood';

for (const c of cases) {
  test(`backend response: ${c.name}`, async (t) => {
    const firstClosed = { at: null };
    const good = requestResponder(() => GOOD);
    const backend = await rawBackend(t, (s, info) => {
      if (info.connections > 1) return good(s, info);
      const t0 = Date.now();
      s.on('close', () => { firstClosed.at = Date.now() - t0; });
      let sent = false;
      s.on('data', (d) => {
        if (sent || !d.toString('latin1').includes('\r\n\r\n')) return;
        sent = true;
        const done = () => { if (c.after === 'close') s.end(); };
        if (c.bytes.length) s.write(c.bytes, done); else done();
      });
    });
    // response_timeout well above the test's wait: a hanging bad response
    // must be recognised as malformed, not time out into a 504.
    const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`, '--response-timeout', '20s']);

    await t.test('first request: 502 backend-bad-response', async (st) => {
      const r = await exchange(proxy.port, 'GET /first HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 5000, closeWait: 500 });
      const why = `${c.file}: ${c.why}\nresponse: ${show(r.raw)}\nstderr: ${proxy.stderr().slice(-800)}`;
      if (c.truncated_ok && r.status === 200) {
        // wtproxy relayed the head before the body went bad: the client must
        // see it cut short, never a complete message.
        const m = frameMessage(r.raw, 'response', false);
        assert.ok(!m, `a complete-looking response was relayed from a broken body\n${why}`);
        assert.ok(r.closed, `client connection not closed after a broken response body\n${why}`);
        st.diagnostic(`${c.name}: head was relayed, then the connection was closed short (allowed)`);
      } else {
        assert.equal(r.status, c.expect_status, `status\n${why}`);
        assert.equal(r.error, c.error, `X-Wtproxy-Error\n${why}`);
        assert.ok(r.complete, `error response incomplete\n${why}`);
        assert.ok(!r.raw.includes('\r\n\r\nok'), `the bad backend body was relayed\n${why}`);
      }
    });

    await t.test('bad backend connection discarded, next request served', async () => {
      const why = `${c.file}\nstderr: ${proxy.stderr().slice(-800)}`;
      // The bad backend connection is discarded: closed by wtproxy.
      for (let i = 0; i < 40 && firstClosed.at === null; i++) await sleep(50);
      assert.notEqual(firstClosed.at, null, `wtproxy kept the bad backend connection open\n${why}`);
      const r2 = await exchange(proxy.port, 'GET /second HTTP/1.1\r\nHost: x\r\n\r\n', { ms: 5000 });
      assert.equal(r2.status, 200, `second request: ${show(r2.raw)}\n${why}`);
      assert.equal(r2.decoded, 'good', `second request body: ${show(r2.raw)}`);
      assert.ok(backend.connections >= 2, 'second request did not use a new backend connection');
      const seconds = (backend.requests || []).filter((q) => q.start.startsWith('GET /second '));
      assert.equal(seconds.length, 1, 'backend should see /second exactly once, on a new connection');
      assert.ok(seconds[0].conn >= 2);
      assert.ok(!backend.received.slice(backend.received.indexOf('GET /first')).includes('GET /first', 1),
        'wtproxy retried the request');
      assertNoSanitizerReport(proxy);
    });
  });
}
