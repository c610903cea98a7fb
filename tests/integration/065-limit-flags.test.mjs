// 065: --max-head-size, --max-header-count and --max-request-line move the
// 431/414 thresholds. Each is checked just under/at and just over the new
// limit, and the "over" requests are checked to be fine with the defaults.
//
// Units (proxy/proxy_limits.h): the head is request line + headers + blank line,
// so max_head_size counts the final CRLF; max_header_count counts header
// lines, Host included. The request line is tested with a margin (1000 vs
// 1100 bytes against 1k), since whether its CRLF counts is not specified.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { requestResponder, exchange, assertNoSanitizerReport } from './lib/conformance.mjs';

// A GET whose head is exactly `size` bytes (final CRLF included).
function headOfSize(size) {
  const start = 'GET /sized HTTP/1.1\r\nHost: x\r\nX-Pad: ';
  const n = size - start.length - 4;
  return start + 'p'.repeat(n) + '\r\n\r\n';
}
function headers(count) { // Host + (count-1) others
  return 'GET /count HTTP/1.1\r\nHost: x\r\n' + 'X-F: v\r\n'.repeat(count - 1) + '\r\n';
}
function line(len) { // request line of `len` bytes, CRLF not counted
  const pre = 'GET /';
  const post = ' HTTP/1.1';
  return pre + 'l'.repeat(len - pre.length - post.length) + post + '\r\nHost: x\r\n\r\n';
}

const cases = [
  ['head exactly 4096 bytes', headOfSize(4096), 200, null],
  ['head 4097 bytes', headOfSize(4097), 431, 'head-too-large'],
  ['head 5000 bytes', headOfSize(5000), 431, 'head-too-large'],
  ['10 header lines', headers(10), 200, null],
  ['11 header lines', headers(11), 431, 'too-many-headers'],
  ['request line 1000 bytes', line(1000), 200, null],
  ['request line 1100 bytes', line(1100), 414, 'request-line-too-long'],
];

test('limit flags move the thresholds', async (t) => {
  const backend = await rawBackend(t, requestResponder());
  const tight = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`,
    '--max-head-size', '4k', '--max-header-count', '10', '--max-request-line', '1k']);
  const dflt = await startProxy(t, ['--backend', `127.0.0.1:${backend.port}`]);
  for (const [name, req, status, error] of cases) {
    await t.test(`tight: ${name} -> ${status}`, async () => {
      const r = await exchange(tight.port, req, { closeWait: status === 200 ? 200 : 2000 });
      assert.equal(r.status, status, JSON.stringify(r.raw.slice(0, 300)));
      if (error) {
        assert.equal(r.error, error, JSON.stringify(r.raw.slice(0, 300)));
        assert.ok(r.closed, 'connection not closed after the rejection');
      } else {
        assert.equal(r.decoded, 'ok');
      }
    });
    if (status !== 200) {
      await t.test(`defaults: ${name} -> 200`, async () => {
        const r = await exchange(dflt.port, req);
        assert.equal(r.status, 200, JSON.stringify(r.raw.slice(0, 300)));
      });
    }
  }
  assertNoSanitizerReport(tight);
  assertNoSanitizerReport(dflt);
});
