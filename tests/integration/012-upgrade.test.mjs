// 012: Upgrade. A WebSocket (the `ws` package on both ends) works through
// the proxy: 100 messages each way plus a 1 MiB binary one. A raw Upgrade to
// a non-WebSocket protocol: after the backend's 101 the sockets are joined
// byte for byte, both directions, until one side closes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import WebSocket from 'ws';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { wsBackend, RawConn, requestHead, parseHead, header, MiB, stopClean } from './lib/backends.mjs';

function nextMessage(ws, ms = 5000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message in time')), ms);
    ws.once('message', (data, isBinary) => { clearTimeout(timer); resolve({ data, isBinary }); });
  });
}

test('WebSocket through the proxy: 100 messages each way and a 1 MiB binary echo', async (t) => {
  const be = await wsBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const ws = new WebSocket(`ws://127.0.0.1:${px.port}/chat?room=1`, { maxPayload: 64 * MiB });
  t.after(() => ws.terminate());
  await new Promise((res, rej) => { ws.once('open', res); ws.once('error', rej); ws.once('unexpected-response', (req, r) => rej(new Error(`upgrade refused: ${r.statusCode}`))); });
  assert.equal(be.connections, 1);
  assert.equal(be.upgrades[0].url, '/chat?room=1');

  // 100 messages: sent in a burst, echoes must come back complete, in order
  const got = [];
  const all = new Promise((resolve) => {
    const on = (data, isBinary) => { got.push({ data: data.toString(), isBinary }); if (got.length === 100) { ws.off('message', on); resolve(); } };
    ws.on('message', on);
  });
  for (let i = 0; i < 100; i++) ws.send(`message ${i} ${'.'.repeat(i * 37)}`);
  let timer;
  await Promise.race([all, new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`only ${got.length} of 100 echoes`)), 10000); })]);
  clearTimeout(timer);
  got.forEach((m, i) => {
    assert.equal(m.isBinary, false);
    assert.equal(m.data, `message ${i} ${'.'.repeat(i * 37)}`);
  });

  // 100 messages the server sends on its own
  const pushed = [];
  const allPushed = new Promise((resolve) => {
    const on = (data) => { pushed.push(data.toString()); if (pushed.length === 100) { ws.off('message', on); resolve(); } };
    ws.on('message', on);
  });
  ws.send('push:100');
  let timer2;
  await Promise.race([allPushed, new Promise((_, rej) => { timer2 = setTimeout(() => rej(new Error(`only ${pushed.length} of 100 pushed messages`)), 10000); })]);
  clearTimeout(timer2);
  assert.deepEqual(pushed, Array.from({ length: 100 }, (_, i) => `push ${i}`));

  const big = crypto.randomBytes(MiB);
  const p = nextMessage(ws, 10000);
  ws.send(big, { binary: true });
  const echo = await p;
  assert.equal(echo.isBinary, true);
  assert.equal(echo.data.length, big.length);
  assert.ok(Buffer.compare(echo.data, big) === 0, '1 MiB binary message corrupted');

  // clean close handshake passes too
  const closed = new Promise((res) => ws.once('close', (code) => res(code)));
  ws.close(1000, 'bye');
  assert.equal(await closed, 1000);
  await stopClean(px);
});

test('raw Upgrade to another protocol: joined byte for byte until close', async (t) => {
  const backendEvents = [];
  const be = await rawBackend(t, (s) => {
    let head = '';
    let upgraded = false;
    s.on('data', (d) => {
      if (upgraded) { s.write(d); return; } // echo
      head += d.toString('latin1');
      const i = head.indexOf('\r\n\r\n');
      if (i < 0) return;
      upgraded = true;
      s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-echo/1\r\n\r\n');
      s.write('hello from backend\n'); // backend speaks first, unprompted
      const early = head.slice(i + 4);
      if (early) s.write(Buffer.from(early, 'latin1'));
    });
    s.on('end', () => { backendEvents.push('end'); s.end(); });
    s.on('close', () => backendEvents.push('close'));
  });
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/tunnel', [['Host', 'localhost'], ['Connection', 'Upgrade'], ['Upgrade', 'x-echo/1']]));
  await c.until((x) => x.buf.indexOf('\r\n\r\n') >= 0, 5000, '101 head');
  const h = parseHead(c.buf.toString('latin1'));
  assert.equal(h.status, 101, c.buf.toString('latin1'));
  assert.equal(header(h, 'upgrade'), 'x-echo/1', 'the 101 must carry the Upgrade header to the client');
  c.take(h.headLength);
  assert.match(be.received, /\r\nupgrade: x-echo\/1\r\n/i, `backend did not receive the Upgrade header:\n${be.received}`);

  await c.until((x) => x.buf.toString('latin1').includes('hello from backend\n'), 5000, 'unprompted backend bytes');
  assert.equal(c.take(19).toString(), 'hello from backend\n');

  // several round trips, then a large one (well over buffer_size), binary
  for (let i = 0; i < 5; i++) {
    const msg = `ping ${i}\r\n\r\nHTTP/1.1 200 OK\r\n\r\n`; // HTTP-looking bytes must not be parsed
    c.write(msg);
    await c.until((x) => x.buf.length >= msg.length, 5000, `echo ${i}`);
    assert.equal(c.take(msg.length).toString('latin1'), msg);
  }
  const big = crypto.randomBytes(3 * MiB);
  c.write(big);
  await c.until((x) => x.buf.length >= big.length, 15000, '3 MiB echo');
  assert.ok(Buffer.compare(c.take(big.length), big) === 0, 'tunnelled bytes corrupted');
  assert.equal(c.buf.length, 0);

  // client closes its side: the backend sees it, and the client connection ends
  c.sock.end();
  assert.ok(await c.waitClosed(5000), 'client connection not closed after the tunnel ended');
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(backendEvents.includes('end') || backendEvents.includes('close'), 'backend never saw the client close');
  await stopClean(px);
});

test('raw Upgrade: the backend closing ends the client connection', async (t) => {
  const be = await rawBackend(t, (s) => {
    let head = '';
    let done = false;
    s.on('data', (d) => {
      if (done) return;
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      done = true;
      s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-bye\r\n\r\nlast words');
      setTimeout(() => s.end(), 100);
    });
  });
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('GET', '/bye', [['Host', 'localhost'], ['Connection', 'Upgrade'], ['Upgrade', 'x-bye']]));
  assert.ok(await c.waitClosed(5000), 'client connection still open after the backend closed the tunnel');
  const s = c.buf.toString('latin1');
  assert.equal(parseHead(s)?.status, 101, s);
  assert.ok(s.endsWith('\r\n\r\nlast words'), `tunnel bytes lost or extra bytes added:\n${JSON.stringify(s)}`);
  await stopClean(px);
});
