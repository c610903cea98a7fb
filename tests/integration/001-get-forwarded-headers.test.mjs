// 001: a GET is relayed; Host is preserved; X-Forwarded-For is the client
// address (a forged one is replaced, not appended to); X-Forwarded-Host and
// X-Forwarded-Proto are set. Checked on what the backend actually received.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, header, stopClean } from './lib/backends.mjs';

// every value a header name has in node's rawHeaders (name case-insensitive)
function rawValues(rawHeaders, name) {
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() === name.toLowerCase()) out.push(rawHeaders[i + 1]);
  }
  return out;
}

test('GET relayed with Host preserved and X-Forwarded-* set by the proxy', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/some/path?q=1&r=two', [
    ['Host', 'app.example.test:4321'],
    ['X-Forwarded-For', '6.6.6.6'],
    ['X-Forwarded-For', '7.7.7.7, 8.8.8.8'],
    ['X-Forwarded-Host', 'evil.example'],
    ['X-Forwarded-Proto', 'https'],
    ['X-End-To-End', 'kept'],
  ]));
  const r = await c.readResponse();
  assert.equal(r.status, 200, r.raw);
  assert.match(header(r, 'content-type') || '', /application\/json/);
  const got = JSON.parse(r.body.toString());

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
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/', [['Host', 'localhost']]));
  const r = await c.readResponse();
  assert.equal(r.status, 200, r.raw);
  const got = JSON.parse(r.body.toString());
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-for'), ['127.0.0.1']);
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-host'), ['localhost']);
  assert.deepEqual(rawValues(got.rawHeaders, 'x-forwarded-proto'), ['http']);
  assert.deepEqual(rawValues(got.rawHeaders, 'host'), ['localhost']);
  await stopClean(px);
});
