// 001: a GET is relayed; Host is preserved; X-Forwarded-For is the client
// address (a forged one is replaced, not appended to); X-Forwarded-Host and
// X-Forwarded-Proto are set. Checked on what the backend actually received.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, header, stopClean, answerHeads } from './lib/backends.mjs';
import { echoRequest } from './lib/echo.mjs';

// every value a header name has in node's rawHeaders (name case-insensitive)
function rawValues(rawHeaders, name) {
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() === name.toLowerCase()) out.push(rawHeaders[i + 1]);
  }
  return out;
}

test('GET relayed with Host preserved and X-Forwarded-* set by the proxy', async (t) => {
  const { be, px, r, got } = await echoRequest(t, requestHead('GET', '/some/path?q=1&r=two', [
    ['Host', 'app.example.test:4321'],
    ['X-Forwarded-For', '6.6.6.6'],
    ['X-Forwarded-For', '7.7.7.7, 8.8.8.8'],
    ['X-Forwarded-Host', 'evil.example'],
    ['X-Forwarded-Proto', 'https'],
    ['X-End-To-End', 'kept'],
  ]));
  assert.match(header(r, 'content-type') || '', /application\/json/);

  assert.equal(got.method, 'GET');
  assert.equal(got.url, '/some/path?q=1&r=two', 'request target relayed unchanged');
  assert.deepEqual(rawValues(got.rawHeaders, 'host'), ['app.example.test:4321'], 'Host preserved, exactly once');
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-for'), ['127.0.0.1'],
    'X-Forwarded-For replaced by the real client address (forged lines dropped, not appended to)');
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-host'), ['app.example.test:4321'],
    'X-Forwarded-Host set to the Host');
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-proto'), ['http'], 'X-Forwarded-Proto set to http');
  assert.deepEqual(rawValues(got.rawHeaders, 'x-end-to-end'), ['kept']);
  assert.equal(be.requests.length, 1, 'exactly one request reached the backend');
  await stopClean(px);
});

test('X-Forwarded-For is set when the client sent none', async (t) => {
  const { px, got } = await echoRequest(t, requestHead('GET', '/', [['Host', 'localhost']]));
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-for'), ['127.0.0.1']);
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-host'), ['localhost']);
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-proto'), ['http']);
  assert.deepEqual(rawValues(got.rawHeaders, 'host'), ['localhost']);
  await stopClean(px);
});

// Heads are put together in a 4 KiB buffer (proxy/http_head.c) and added
// in pieces when larger: a 12 KiB request head and a 12 KiB response head,
// one field alone longer than the buffer, arrive whole and in order.
test('heads larger than the assembly buffer, one field longer than it, relayed whole and in order', async (t) => {
  const fields = Array.from({ length: 10 }, (_, i) => [`X-Big-${i}`, `${i}`.repeat(700)]);
  fields.splice(5, 0, ['X-Huge', 'h'.repeat(5000)]);
  const { px, got: { rawHeaders: raw } } = await echoRequest(t, requestHead('GET', '/big', [['Host', 'localhost'], ...fields]));
  const got = [];
  for (let i = 0; i < raw.length; i += 2) if (/^x-(big|huge)/i.test(raw[i])) got.push([raw[i], raw[i + 1]]);
  assert.deepEqual(got, fields, 'every big field reached the backend, in order, byte for byte');

  const head = fields.map(([n, v]) => `${n}: ${v}\r\n`).join('');
  const raw2 = await rawBackend(t, answerHeads(() => `HTTP/1.1 200 OK\r\n${head}Content-Length: 2\r\n\r\nok`));
  const px2 = await startProxy(t, ['--backend', `127.0.0.1:${raw2.port}`]);
  const c2 = await RawConn.open(px2.port);
  t.after(() => c2.close());
  c2.write(requestHead('GET', '/', [['Host', 'localhost']]));
  const r2 = await c2.readResponse();
  assert.equal(r2.status, 200);
  for (const [n, v] of fields) assert.equal(header(r2, n), v, `${n} relayed whole to the client`);
  assert.equal(r2.body.toString(), 'ok');
  await stopClean(px);
  await stopClean(px2);
});

// The client's IPv4 address is written by proxy/client.c itself (no
// inet_ntop): octets of one, two and three digits, zeros among them.
test('X-Forwarded-For is the exact IPv4 address of clients bound to other loopback addresses', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const http = await import('node:http');
  for (const addr of ['127.0.0.1', '127.10.200.3', '127.255.0.99', '127.100.20.255', '127.0.9.10']) {
    const body = await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: px.port, path: '/', localAddress: addr,
                                 agent: false, headers: { Host: 'localhost' } }, (res) => {
        let b = '';
        res.on('data', (d) => { b += d; });
        res.on('end', () => (res.statusCode === 200 ? resolve(b) : reject(new Error(`${res.statusCode}: ${b}`))));
      });
      req.on('error', reject);
      req.end();
    });
    assert.deepEqual(rawValues(JSON.parse(body).rawHeaders, 'x-forwarded-for'), [addr], `client bound to ${addr}`);
  }
  await stopClean(px);
});
