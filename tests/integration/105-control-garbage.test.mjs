// 105: hostile input on the control socket. Garbage gets an error reply
// and the connection stays usable; a line over 64 KiB gets too-large and
// the connection is closed; a half-sent line is closed after 10 s of
// silence. Meanwhile other clients (`wtproxy ls`) are served at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { makeWorktrees, startDaemon, cli } from './lib/registry.mjs';

// A control connection that collects reply lines.
function control(sockPath) {
  const s = net.connect(sockPath);
  const c = { s, buf: '', closed: false, waiters: [] };
  const wake = () => { for (const w of c.waiters.splice(0)) w(); };
  s.on('data', (d) => { c.buf += d; wake(); });
  s.on('close', () => { c.closed = true; wake(); });
  s.on('error', () => {});
  c.ready = new Promise((res) => s.on('connect', res));
  c.line = async (ms = 3000) => {
    const deadline = Date.now() + ms;
    while (!c.buf.includes('\n')) {
      if (c.closed || Date.now() > deadline) return null;
      await new Promise((res) => { c.waiters.push(res); setTimeout(res, 50); });
    }
    const i = c.buf.indexOf('\n');
    const l = c.buf.slice(0, i);
    c.buf = c.buf.slice(i + 1);
    return JSON.parse(l);
  };
  c.waitClosed = async (ms) => {
    const deadline = Date.now() + ms;
    while (!c.closed && Date.now() < deadline) await new Promise((res) => { c.waiters.push(res); setTimeout(res, 100); });
    return c.closed;
  };
  return c;
}

async function lsWorks(tmp) {
  const started = Date.now();
  const r = await cli(tmp, ['ls', '--json'], { ms: 5000 });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(Array.isArray(JSON.parse(r.stdout)));
  assert.ok(Date.now() - started < 3000, `ls took ${Date.now() - started} ms`);
}

test('garbage and unknown ops: error replies, connection stays usable', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  await startDaemon(t, tmp);
  const c = control(tmp.control);
  t.after(() => c.s.destroy());
  await c.ready;
  for (const [line, code] of [['hello there', 'bad-request'], ['[1,2,3]', 'bad-request'], ['{"op":42}', null],
    ['{"op":"frobnicate"}', 'unknown-op'], ['{"op":"register","front":"x"}', 'bad-request'], ['\x00\xff\xfe', 'bad-request']]) {
    c.s.write(Buffer.from(`${line}\n`, 'latin1'));
    const r = await c.line();
    assert.ok(r, `no reply to ${JSON.stringify(line)}`);
    assert.equal(r.ok, false, JSON.stringify(r));
    if (code) assert.equal(r.error, code, JSON.stringify(r));
    assert.ok(r.message, 'no message');
  }
  c.s.write('{"op":"ping"}\n');
  const pong = await c.line();
  assert.equal(pong.ok, true, JSON.stringify(pong));
});

test('a line over 64 KiB: too-large and closed; others unaffected', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  await startDaemon(t, tmp);
  const c = control(tmp.control);
  t.after(() => c.s.destroy());
  await c.ready;
  c.s.write(`{"op":"ping","pad":"${'x'.repeat(70 * 1024)}"}\n`);
  const r = await c.line();
  assert.ok(r, 'no reply before close');
  assert.equal(r.error, 'too-large', JSON.stringify(r));
  assert.ok(await c.waitClosed(3000), 'connection not closed');
  await lsWorks(tmp);
});

test('half-sent lines: others served at once; closed after 10 s of silence', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const half = [];
  for (let i = 0; i < 20; i++) {
    const c = control(tmp.control);
    t.after(() => c.s.destroy());
    await c.ready;
    c.s.write('{"op":"pi');
    half.push(c);
  }
  await lsWorks(tmp);
  const closed = await Promise.all(half.map((c) => c.waitClosed(13000)));
  assert.ok(closed.every(Boolean), `${closed.filter((x) => !x).length} half-sent connections still open after 13 s`);
  await lsWorks(tmp);
  assert.equal(px.proc.exitCode, null);
});
