// 153: /__wtproxy/events is a long-lived connection that the daemon's
// timeouts leave alone (keepalive, head, response and body timeouts of 1 s
// pass over it) and that still carries a change within a second; at most
// 32 streams are open at once (WTP_DASH_MAX_STREAMS: the next gets 503, and
// a slot freed is usable again); streams that end leave no descriptor
// behind; and SIGTERM closes open streams at once: the daemon exits 0
// well before shutdown_timeout, with no leak report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { makeWorktrees, startDaemon, startRun, sanitizerClean } from './lib/registry.mjs';
import { fdCount, pidfdCount } from './lib/wtproxy.mjs';

const MAX_STREAMS = 32;

// A raw event stream: { sock, text(), closed, status(), waitFor(re, ms) }.
function openStream(t, port) {
  const sock = net.connect(port, '127.0.0.1');
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (d) => { buf += d; });
  sock.on('error', () => {});
  const closed = new Promise((r) => sock.on('close', r));
  sock.write(`GET /__wtproxy/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  t.after(() => sock.destroy());
  const s = {
    sock, closed, text: () => buf,
    status: () => Number((/^HTTP\/1\.1 (\d+)/.exec(buf) || [])[1] || 0),
    async waitFor(re, ms) {
      const end = Date.now() + ms;
      while (!re.test(buf)) {
        if (Date.now() > end) throw new Error(`stream: ${re} not within ${ms} ms; got:\n${buf}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return Date.now() - (end - ms);
    },
  };
  return s;
}

test('event streams outlive the timeouts, are capped, leak nothing, end on SIGTERM', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--keepalive-timeout', '1s', '--head-timeout', '1s',
    '--response-timeout', '1s', '--body-timeout', '1s']);

  const s = openStream(t, px.port);
  await s.waitFor(/event: refusals\ndata: \[\]\n\n/, 3000);
  assert.equal(s.status(), 200);
  assert.match(s.text(), /Content-Type: text\/event-stream/);
  assert.match(s.text(), /event: daemon\ndata: \{.*"pid":/);
  assert.match(s.text(), /event: backends\ndata: \[\]\n\n/);
  await new Promise((r) => setTimeout(r, 2500)); // past every 1 s timeout
  let closedEarly = false;
  s.closed.then(() => { closedEarly = true; });
  assert.equal(closedEarly, false, 'the stream is still open after the timeouts');

  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const took = await s.waitFor(new RegExp(`event: backends\\ndata: \\[\\{[^\\n]*"worktree":"${tmp.wt.a}"[^\\n]*"state":"ready"`), 1000);
  t.diagnostic(`the ready backend reached the stream ${took} ms after wtproxy run said ready`);

  // Let `wtproxy run`'s control connections finish closing first (on a busy
  // machine the daemon may see their end after the stream's event).
  await new Promise((r) => setTimeout(r, 300));
  const fdsBefore = fdCount(px.proc.pid); // s and the backend's liveness watch are open

  // The cap: MAX_STREAMS open (s is one), the next is refused.
  const more = [];
  for (let i = 1; i < MAX_STREAMS; i++) more.push(openStream(t, px.port));
  await Promise.all(more.map((m) => m.waitFor(/event: daemon/, 5000)));
  const over = openStream(t, px.port);
  await over.waitFor(/\r\n\r\n[^]*streams are open already/, 3000);
  assert.equal(over.status(), 503);
  await over.closed;
  // Freeing slots makes room again; closed streams leave no descriptor.
  for (const m of more) m.sock.destroy();
  await new Promise((r) => setTimeout(r, 300));
  const again = openStream(t, px.port);
  await again.waitFor(/event: daemon/, 3000);
  assert.equal(again.status(), 200);
  again.sock.destroy();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(fdCount(px.proc.pid), fdsBefore, 'the closed streams left no descriptor');
  assert.ok(pidfdCount(px.proc.pid) <= 32, 'the cache of recent callers stays bounded');

  const t0 = Date.now();
  const exit = await px.stop('SIGTERM');
  await s.closed;
  t.diagnostic(`daemon stopped ${Date.now() - t0} ms after SIGTERM with a stream open`);
  assert.equal(exit.code, 0);
  assert.ok(Date.now() - t0 < 5000, 'open streams do not hold the shutdown');
  sanitizerClean(assert, px.stderr());
});
