// 321: the dashboard's start button on a slow filesystem holds no request.
// Opening any file named .wtproxy takes 1.5 s (fixtures/slow-wtproxy-file.c
// in LD_PRELOAD, as in 317 and 320). While the daemon reads worktree b's
// .wtproxy for a POST /__wtproxy/api/start (sent with every proof the
// dashboard page sends: Host, Origin, Sec-Fetch-Site, JSON, the token),
// requests to worktree a's registered server keep being answered within
// 400 ms, and the button's reply is still right: b's server starts,
// registers and serves b. A read longer than start_timeout answers 504
// naming the file, and starts nothing. Clients that close while their start waits for
// the file, and a daemon stopped while one waits, crash nothing and leak
// nothing (the ASan build's exit says so). The worktree path is resolved
// with the read, off the loop: a link answers with the real path, a
// missing folder is not found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makeWorktrees, declaring, startDaemon, startRun, getWorktree, startPreloadedDaemon, wtServer, waitFor, lsJson, sanitizerClean } from './lib/registry.mjs';
import { request, token } from './lib/ctl.mjs';

const OPEN_MS = 1500;
const FAST_MS = 400;

function slowDaemon(t, tmp, args = []) {
  return startPreloadedDaemon(t, tmp, 'slow-wtproxy-file', { WTPROXY_TEST_OPEN_MS: String(OPEN_MS) }, args);
}

// The headers the dashboard page sends with an action.
async function proofs(port) {
  const host = `127.0.0.1:${port}`;
  return { Host: host, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin',
    'Content-Type': 'application/json', 'X-Wtproxy-Token': await token(port) };
}

// How many dashboard starts the daemon has taken for worktree.
function startsLogged(px, worktree) {
  return px.stderr().split('\n').filter((l) => l.includes(`dashboard action /api/start for ${worktree} `)).length;
}

// A start sent on a raw socket, which is closed once the daemon has
// taken the action (its .wtproxy read then still has ~1.5 s to go).
async function startThenClose(px, headers, worktree) {
  const before = startsLogged(px, worktree);
  const body = JSON.stringify({ worktree, front: px.port });
  const s = net.createConnection(px.port, '127.0.0.1');
  s.on('error', () => {});
  const head = Object.entries({ ...headers, 'Content-Length': Buffer.byteLength(body) })
    .map(([k, v]) => `${k}: ${v}\r\n`).join('');
  s.write(`POST /__wtproxy/api/start HTTP/1.1\r\n${head}\r\n${body}`);
  let answered = false;
  s.on('data', () => { answered = true; });
  await waitFor(async () => startsLogged(px, worktree) > before, 10000, 'the daemon took the start');
  assert.equal(answered, false, 'the start waits for the slow .wtproxy');
  s.destroy();
}

test('the dashboard start button on a slow .wtproxy: requests to a stay fast, the reply is right', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await slowDaemon(t, tmp0);
  const run = startRun(t, tmp0, { cwd: tmp0.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp0.wt.a)).status, 200);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);
  const headers = await proofs(px.port);

  const s = Date.now();
  let reply = null;
  const pending = request(px.port, 'POST', '/__wtproxy/api/start', headers,
    JSON.stringify({ worktree: tmp.wt.b, front: px.port })).then((r) => { reply = r; });
  const took = [];
  while (!reply && Date.now() - s < 30000) {
    const t0 = Date.now();
    const r = await getWorktree(px.port, tmp0.wt.a);
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).worktree, tmp0.wt.a);
    took.push(Date.now() - t0);
    await new Promise((res) => setTimeout(res, 20));
  }
  await pending;
  const ms = Date.now() - s;
  t.diagnostic(`start: reply after ${ms} ms; meanwhile ${took.length} requests to a, worst ${Math.max(...took)} ms`);
  assert.ok(ms >= OPEN_MS, `the start's reply waited for the slow .wtproxy (${ms} ms)`);
  assert.ok(took.length >= 3, `requests were sent while the start waited: ${took.length}`);
  assert.ok(Math.max(...took) < FAST_MS, `each request to a answered within ${FAST_MS} ms: ${took.join(', ')}`);

  assert.equal(reply.status, 200, reply.body);
  const j = JSON.parse(reply.body);
  assert.equal(j.ok, true, reply.body);
  assert.equal(j.worktree, tmp.wt.b);
  assert.equal(j.front, px.port);
  assert.equal(j.running, false, 'the button started it');
  await waitFor(async () => (await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.b && e.state === 'ready'),
    20000, "b's started server ready");
  const b = await getWorktree(px.port, tmp.wt.b);
  assert.equal(b.status, 200, b.body);
  assert.equal(JSON.parse(b.body).worktree, tmp.wt.b);
  sanitizerClean(assert, px.stderr());
});

test('a read longer than start_timeout: 504 naming the file and the fix, nothing started', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await slowDaemon(t, tmp0, ['--start-timeout', '500ms']);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);
  const r = await request(px.port, 'POST', '/__wtproxy/api/start', await proofs(px.port),
    JSON.stringify({ worktree: tmp.wt.b, front: px.port }));
  assert.equal(r.status, 504, r.body);
  const j = JSON.parse(r.body);
  assert.equal(j.error, 'timeout', r.body);
  assert.ok(j.message.includes(`${tmp.wt.b}/.wtproxy`), `the message names the file: ${j.message}`);
  assert.match(j.message, /start_timeout \(500 ms\)/);
  assert.match(j.message, /wtproxy run -- CMD \{port\}/);
  // The read ends after the answer; the start it was for stays cancelled.
  await new Promise((res) => setTimeout(res, OPEN_MS + 500));
  assert.equal((await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.b), false, 'nothing started for b');
  const tok = await request(px.port, 'GET', '/__wtproxy/api/token');
  assert.equal(tok.status, 200, tok.body);
  await px.stop('SIGTERM');
  sanitizerClean(assert, px.stderr());
});

test('clients that close while their start waits, and a stop meanwhile: no crash, no leak', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await slowDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['c']);
  const headers = await proofs(px.port);

  for (let i = 0; i < 3; i++)
    await startThenClose(px, headers, tmp.wt.c);
  // The reads they waited for end; the daemon goes on answering.
  await new Promise((res) => setTimeout(res, OPEN_MS + 500));
  const tok = await request(px.port, 'GET', '/__wtproxy/api/token');
  assert.equal(tok.status, 200, tok.body);

  // A start still waiting when the daemon is told to stop.
  const before = startsLogged(px, tmp.wt.c);
  const waiting = request(px.port, 'POST', '/__wtproxy/api/start', headers,
    JSON.stringify({ worktree: tmp.wt.c, front: px.port })).catch((e) => e);
  await waitFor(async () => startsLogged(px, tmp.wt.c) > before, 10000, 'the daemon took the last start');
  const exit = await px.stop('SIGTERM');
  await waiting;
  sanitizerClean(assert, px.stderr());
  assert.equal(exit.code, 0, `the daemon stopped cleanly (${exit.code ?? exit.sig}):\n${px.stderr()}`);
});

test('the start button resolves the worktree path it is given: a link names the real one, a missing folder is not found', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['d']);
  const headers = await proofs(px.port);
  const link = path.join(path.dirname(tmp.wt.d), 'link-to-d');
  fs.symlinkSync(tmp.wt.d, link);

  const gone = await request(px.port, 'POST', '/__wtproxy/api/start', headers,
    JSON.stringify({ worktree: path.join(link, 'no-such-folder'), front: px.port }));
  assert.equal(gone.status, 404, gone.body);
  assert.equal(JSON.parse(gone.body).error, 'not-found');
  assert.match(JSON.parse(gone.body).message, /no-such-folder does not exist/);

  const r = await request(px.port, 'POST', '/__wtproxy/api/start', headers,
    JSON.stringify({ worktree: link, front: px.port }));
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).worktree, fs.realpathSync(tmp.wt.d), 'the real path, not the link');
  await waitFor(async () => (await lsJson(tmp0)).some((e) => e.worktree === fs.realpathSync(tmp.wt.d) && e.state === 'ready'),
    20000, "d's started server ready");
  sanitizerClean(assert, px.stderr());
});
