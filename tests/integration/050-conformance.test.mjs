// 050: the request conformance / smuggling corpus (tests/conformance/requests).
//
// One daemon, one raw backend that answers `200 ok` to every request it can
// frame. For each case: send its bytes (for rejected cases followed, in the
// same write, by a valid `GET /smuggled...` request), then check the status,
// X-Wtproxy-Error on wtproxy's own answers, that the connection is closed
// after a rejection, and whether any byte reached the backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { loadCases, requestResponder, exchange, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

const cases = loadCases('requests', 'request');
const smuggled = (name) => Buffer.from(`GET /smuggled?case=${name} HTTP/1.1\r\nHost: x\r\n\r\n`, 'latin1');
const show = (raw) => JSON.stringify(raw.length > 600 ? raw.slice(0, 600) + '...' : raw);

test('request conformance corpus', async (t) => {
  assert.ok(cases.length >= 40, `corpus has ${cases.length} cases`);
  const backend = await rawBackend(t, requestResponder());
  backend.requests = [];
  const proxy = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`]);

  for (const c of cases) {
    await t.test(c.name, async () => {
      const rejected = !c.reaches_backend;
      const bytes = c.append_smuggled ? Buffer.concat([c.bytes, smuggled(c.name)]) : c.bytes;
      const recvBefore = backend.received.length;
      const reqsBefore = backend.requests.length;
      const r = await exchange(proxy.port, bytes, { ms: 5000, closeWait: rejected ? 2000 : 200 });
      await sleep(rejected ? 150 : 50); // let any stray forwarded byte land
      const got = backend.received.slice(recvBefore);
      const newReqs = backend.requests.slice(reqsBefore);
      const why = `${c.file}: ${c.why}\nresponse: ${show(r.raw)}\nbackend got: ${show(got)}`;

      // Worst first: a request smuggled past wtproxy.
      if (c.append_smuggled) {
        assert.ok(!backend.received.includes(`/smuggled?case=${c.name}`), `SMUGGLED: the pipelined /smuggled request reached the backend\n${why}`);
      }
      const statuses = Array.isArray(c.expect_status) ? c.expect_status : [c.expect_status];
      assert.ok(statuses.includes(r.status), `status ${r.status}, want ${statuses.join(' or ')}\n${why}`);

      if (rejected) {
        assert.ok(r.error, `no X-Wtproxy-Error header on wtproxy's own ${r.status}\n${why}`);
        const reason = c.error && typeof c.error === 'object' ? c.error[String(r.status)] : c.error;
        if (reason) assert.equal(r.error, reason, `X-Wtproxy-Error\n${why}`);
        assert.ok(r.closed, `connection left open after ${r.status}\n${why}`);
        assert.match(r.head.get('connection') || '', /close/i, `no Connection: close on a closing ${r.status}\n${why}`);
        assert.equal(got, '', `bytes of the rejected request reached the backend (RELAY.md: no byte of it may)\n${why}`);
      } else {
        assert.equal(r.error, undefined, `unexpected X-Wtproxy-Error\n${why}`);
        assert.ok(r.complete, `incomplete response\n${why}`);
        assert.equal(r.decoded, 'ok', `body\n${why}`);
        assert.equal(newReqs.length, 1, `backend saw ${newReqs.length} requests\n${why}`);
        if (c.backend_body !== undefined) assert.equal(newReqs[0].decoded, c.backend_body, `body the backend got\n${why}`);
        for (const s of c.backend_must_contain || []) assert.ok(got.includes(s), `backend did not get ${JSON.stringify(s)}\n${why}`);
        for (const s of c.backend_must_not_contain || []) assert.ok(!got.includes(s), `backend got ${JSON.stringify(s)}\n${why}`);
      }
    });
  }

  await t.test('daemon still serving, nothing smuggled', async () => {
    assert.ok(proxy.proc.exitCode === null && proxy.proc.signalCode === null,
      `daemon gone (${proxy.proc.exitCode ?? proxy.proc.signalCode}):\n${proxy.stderr().slice(-3000)}`);
    const r = await exchange(proxy.port, 'GET /c/after-corpus HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(r.status, 200, show(r.raw));
    assert.ok(!backend.received.includes('/smuggled'), 'a /smuggled request reached the backend');
    assertNoSanitizerReport(proxy);
  });
});
