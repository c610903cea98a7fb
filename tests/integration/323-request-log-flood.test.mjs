// 323: per-request events other than refusals do not flood the daemon's
// log either (306 is the refusals'). A client that sends a header the
// proxy drops (X_Forwarded_For, a forged client address to a WSGI
// backend) on each of 2,000 requests, and a backend that ends every
// response mid-body, hit 300 times: each writes its first line at once
// (an agent tailing the log sees it), then one summary with the exact
// count of the rest ("... and 1,999 more like it in the last 10 s (KIND)"),
// written when the 10 s window ends or when the daemon stops.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { httpBackend, stopClean } from './lib/backends.mjs';
import { waitFor } from './lib/registry.mjs';

// n GETs, `width` at once (keep-alive unless agent is false); resolves with
// how many ended (a response read to its end, or cut short).
async function hammer(port, n, { headers = {}, width = 50, keepAlive = true } = {}) {
  const agent = new http.Agent({ keepAlive, maxSockets: width });
  let next = 0;
  let ended = 0;
  const one = () => new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/poll/${next}`, headers, agent }, (res) => {
      res.on('error', () => {});
      res.on('close', resolve);
      res.resume();
    });
    req.on('error', resolve);
  }).then(() => { ended++; });
  const worker = async () => { while (next++ < n) await one(); };
  await Promise.all(Array.from({ length: width }, worker));
  agent.destroy();
  return ended;
}

const linesOf = (log, re) => log.split('\n').filter((l) => re.test(l) && !l.includes('... and'));
const counted = (log, kind) => [...log.matchAll(/\.\.\. and ([\d,]+) more like it in the last (\d+) s \(([^)]*)\)/g)]
  .filter((m) => m[3].startsWith(kind));
const total = (ms) => ms.reduce((n, m) => n + Number(m[1].replace(/,/g, '')), 0);

test('2,000 requests with a dropped header: one line at once, then the exact count', { timeout: 60000 }, async (t) => {
  const N = 2000;
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const before = px.stderr().length;
  const headers = { X_Forwarded_For: '6.6.6.6' };
  const dropped = /wtproxy: dropped header X_Forwarded_For of GET \/poll\/\d+ from 127\.0\.0\.1/;

  assert.equal(await hammer(px.port, 1, { headers, width: 1 }), 1);
  await waitFor(() => linesOf(px.stderr(), dropped).length === 1, 2000, 'the first dropped header logged at once');

  const started = Date.now();
  assert.equal(await hammer(px.port, N - 1, { headers }), N - 1);
  const floodMs = Date.now() - started;
  assert.equal(be.requests.length, N, 'every request reached the backend');
  assert.ok(be.requests.every((r) => !r.headers['x_forwarded_for']), 'the header was dropped');
  const during = px.stderr().slice(before);
  assert.equal(linesOf(during, dropped).length, 1, `lines written during the flood:\n${during.slice(0, 2000)}`);

  // The window's end writes the count: exactly the requests not written.
  const kind = 'dropped header x_forwarded_for,';
  await waitFor(() => total(counted(px.stderr(), kind)) === N - 1, floodMs + 12000, `summaries counting ${N - 1}`);
  const all = px.stderr().slice(before);
  for (const m of counted(all, kind)) {
    assert.ok(Number(m[2]) >= 9 && Number(m[2]) <= 11, m[0]);
    // Dropped before routing: the kind is the header, the caller's worktree
    // and the one the request named (here none: the default backend).
    assert.match(m[3], /^dropped header x_forwarded_for, caller's worktree -, named -, backend -$/, m[0]);
  }
  assert.ok(all.split('\n').length - 1 <= 4, `${all.split('\n').length - 1} lines for ${N} dropped headers:\n${all}`);
  process.stderr.write(`323: ${N} requests with a dropped header in ${floodMs} ms wrote ${all.length} bytes of log (${all.split('\n').length - 1} lines)\n`);
  await stopClean(px);
});

test('300 responses ended mid-body: one line at once, the exact count at the stop', { timeout: 60000 }, async (t) => {
  const N = 300;
  // Promises 1,000 bytes, sends 10, closes: every response ends mid-body.
  const be = await rawBackend(t, (s) => {
    let head = '';
    s.on('data', (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.end('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789');
    });
  });
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const before = px.stderr().length;
  const short = new RegExp(`wtproxy: closed GET /poll/\\d+ from 127\\.0\\.0\\.1 short: 127\\.0\\.0\\.1:${be.port} ended mid-body`);

  assert.equal(await hammer(px.port, 1, { width: 1, keepAlive: false }), 1);
  await waitFor(() => linesOf(px.stderr(), short).length === 1, 2000, 'the first short response logged at once');

  assert.equal(await hammer(px.port, N - 1, { width: 20, keepAlive: false }), N - 1);
  assert.equal(be.connections, N, 'every request reached the backend');
  // Settle: the daemon closes each client after the backend's EOF.
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(linesOf(px.stderr().slice(before), short).length, 1, px.stderr().slice(before, before + 2000));

  // A stop writes the counts still open (log_flood_free).
  await stopClean(px);
  const all = px.stderr().slice(before);
  const kind = 'closed short: ended mid-body,';
  assert.equal(total(counted(all, kind)), N - 1, all);
  assert.match(counted(all, kind)[0][3], new RegExp(`backend 127\\.0\\.0\\.1:${be.port}$`));
  assert.ok(all.split('\n').length - 1 <= 6, `${all.split('\n').length - 1} lines for ${N} short responses:\n${all}`);
});
