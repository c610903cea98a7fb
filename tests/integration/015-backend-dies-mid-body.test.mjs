// 015: a backend that dies mid-body makes the client connection close short:
// with Content-Length the client gets fewer bytes than announced, with
// chunked no terminating 0-chunk; never an error page appended to the
// started response (no X-Wtproxy-Error, no second status line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startProxy, rawBackend, statusOf } from './lib/wtproxy.mjs';
import { RawConn, requestHead, header, stopClean } from './lib/backends.mjs';

// kill: 'fin' destroys the socket (the proxy reads EOF mid-body), 'rst'
// resets it (the proxy gets ECONNRESET).
function dyingBackend(t, headAndBody, kill = 'fin') {
  return rawBackend(t, (s) => {
    let head = '';
    let done = false;
    s.on('data', (d) => {
      if (done) return;
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      done = true;
      s.write(headAndBody);
      // let the bytes leave, then kill the connection
      setTimeout(() => (kill === 'rst' ? s.resetAndDestroy() : s.destroy()), 200);
    });
  });
}

function assertNoErrorPage(all) {
  assert.doesNotMatch(all, /X-Wtproxy-Error/i, `an error page was appended to a started response:\n${all.slice(0, 2000)}`);
  const statusLines = all.match(/HTTP\/1\.[01] \d{3} /g) || [];
  assert.equal(statusLines.length, 1, `more than one status line in the stream: ${statusLines.join(' | ')}`);
}

for (const kill of ['fin', 'rst']) test(`Content-Length response cut short (${kill}): fewer bytes than announced, connection closed`, async (t) => {
  const sent = crypto.randomBytes(1000);
  const be = await dyingBackend(t, Buffer.concat([
    Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n'), sent]), kill);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/dies', [['Host', 'localhost']]));
  assert.ok(await c.waitClosed(8000), 'client connection left open after the backend died mid-body');
  const all = c.buf.toString('latin1');
  assert.equal(statusOf(all), 200, all.slice(0, 300));
  const r = await c.readResponse({ ms: 1000 });
  assert.equal(header(r, 'content-length'), '100000', `the announced length must reach the client so it can tell the body is short:\n${r.raw.slice(0, 300)}`);
  assert.equal(r.complete, false);
  assert.ok(r.body.length < 100000, `client got ${r.body.length} bytes`);
  assert.ok(Buffer.compare(r.body, sent.subarray(0, r.body.length)) === 0, 'the bytes that did arrive are wrong');
  assertNoErrorPage(all);
  await stopClean(px);
});

for (const kill of ['fin', 'rst']) test(`chunked response cut mid-chunk (${kill}): no terminating chunk, connection closed`, async (t) => {
  const first = crypto.randomBytes(1000);
  const partial = crypto.randomBytes(500);
  const be = await dyingBackend(t, Buffer.concat([
    Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n'),
    Buffer.from('3e8\r\n'), first, Buffer.from('\r\n'),
    Buffer.from('2710\r\n'), partial, // announces 10000, sends 500, dies
  ]), kill);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/dies-chunked', [['Host', 'localhost']]));
  assert.ok(await c.waitClosed(8000), 'client connection left open after the backend died mid-chunk');
  const all = c.buf.toString('latin1');
  assert.equal(statusOf(all), 200, all.slice(0, 300));
  const r = await c.readResponse({ ms: 1000 });
  assert.ok(r.framing === 'chunked' || r.framing === 'length',
    `a close-delimited response to an HTTP/1.1 client would look complete when cut: framing ${r.framing}\n${r.raw.slice(0, 300)}`);
  assert.equal(r.complete, false, 'the client got a terminating 0-chunk (or a full length) for a truncated body');
  assert.doesNotMatch(all, /\r\n0\r\n\r\n/, 'terminating chunk present');
  assert.ok(r.body.length < 1000 + 10000);
  const expect = Buffer.concat([first, partial]);
  assert.ok(Buffer.compare(r.body, expect.subarray(0, r.body.length)) === 0, 'the bytes that did arrive are wrong');
  assertNoErrorPage(all);
  await stopClean(px);
});

test('the daemon keeps serving after backends die mid-body', async (t) => {
  const dying = await dyingBackend(t, 'HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nshort');
  const px = await startProxy(t, ['--backend', `127.0.0.1:${dying.port}`]);
  for (let i = 0; i < 5; i++) {
    const c = await RawConn.open(px.port);
    c.write(requestHead('GET', `/dies/${i}`, [['Host', 'localhost']]));
    assert.ok(await c.waitClosed(8000));
    c.close();
  }
  assert.equal(px.proc.exitCode, null, `daemon exited:\n${px.stderr()}`);
  await stopClean(px);
});
