// 112: `wtproxy run` registers its server as starting and marks it ready
// only once the server (here a grandchild, as with Django's autoreloader)
// listens on its port; a request sent meanwhile waits for it instead of
// failing. With --health, a path that answers nothing is said as such,
// and one that answers an error is said with its body's first line (a
// whoami route's 501 says what to fix: the user reads it there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, cli, lsJson, getWorktree, waitFor } from './lib/registry.mjs';

test('starting until the server listens, then ready; a request meanwhile waits', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs: ['--reloader', '--delay', '1500'] });
  const [e] = await waitFor(async () => { const l = await lsJson(tmp); return l.length ? l : null; }, 3000, 'registered');
  assert.equal(e.state, 'starting', JSON.stringify(e));
  assert.equal(e.pid, run.pid);
  assert.doesNotMatch(run.stderr(), /is ready/, 'said ready before listening');

  const sent = Date.now();
  const res = await getWorktree(px.port, tmp.wt.a);
  assert.equal(res.status, 200, res.body);
  assert.equal(JSON.parse(res.body).worktree, tmp.wt.a);
  const port = await run.ready;
  assert.equal(JSON.parse(res.body).port, port);
  assert.ok(Date.now() - sent > 500, 'answered before the server listened?');
  const [after] = await lsJson(tmp);
  assert.equal(after.state, 'ready');
});

test('--health whose path answers nothing in time: said so, and not ready', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--health', '/slow?ms=60000'] });
  await waitFor(() => /answered nothing/.test(run.stderr()), 15000, `the wait said:\n${run.stderr()}`);
  assert.match(run.stderr(), /; GET \/slow\?ms=60000 answered nothing in time, waiting for 2xx or 3xx \(--health\)\n/);
  assert.doesNotMatch(run.stderr(), /is ready/);
});

test('--health whose path answers an error: said with what its body says', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const say = 'wtproxy-whoami: next.config does not wrap its config in withWtproxyWhoami()';
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--health', `/status?code=501&say=${encodeURIComponent(say)}`] });
  await waitFor(() => /answered 501/.test(run.stderr()), 15000, `the wait said:\n${run.stderr()}`);
  assert.ok(run.stderr().includes(` answered 501 ("${say}"), waiting for 2xx or 3xx (--health)\n`), run.stderr());
  assert.doesNotMatch(run.stderr(), /is ready/);
});

// A start that timed out said "it did not listen, or its ready path did
// not answer 2xx or 3xx" after start_timeout: its reader looked for both
// (found by a FastAPI user whose ready path answered 500 before its
// tables existed). The wrapper tells the daemon what its --health path
// answered; the 503, `why` and `ls --json` say which wait it was.
test('a start that times out says which: its ready path answered 500 each time, or it did not listen', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--start-timeout', '3s']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--health', '/status?code=500&say=no%20such%20table'] });
  await waitFor(() => /answered 500/.test(run.stderr()), 15000, `the wait said:\n${run.stderr()}`);
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /it listens, but its ready path \(ready = in the \.wtproxy, --health\) did not answer 2xx or 3xx: GET \/status\?code=500&say=no%20such%20table answered 500 \("no such table"\), each time for the last \d+s/);
  assert.doesNotMatch(r.body, /it did not listen/);
  const [e] = await lsJson(tmp);
  assert.match(e.not_ready?.said ?? '', /answered 500/, JSON.stringify(e));
  const why = await cli(tmp, ['why'], { cwd: tmp.wt.a });
  assert.match(why.stdout, /starting: it listens on port \d+, but its ready path did not answer 2xx or 3xx: GET \S+ answered 500/, why.stdout);

  startRun(t, tmp, { cwd: tmp.wt.b, front: px.port, serverArgs: ['--delay', '60000'] });
  await waitFor(async () => (await lsJson(tmp)).length === 2, 5000, 'b registered');
  const silent = await getWorktree(px.port, tmp.wt.b);
  assert.equal(silent.status, 503, silent.body);
  assert.match(silent.body, /was not ready on port \d+ within start_timeout \(3000 ms\): it did not listen there/);
  assert.doesNotMatch(silent.body, /ready path/);
});

// Vite 8 first listens on 0.0.0.0 and :: and closes at once, to see
// whether its port is free, then listens for real. The wrapper called it
// ready on such a probe, and a request in between was refused (CI, test
// 145). This server probes like that, 40 times, each probe 20 ms (Vite's
// last a few) and 20 ms apart, then listens and writes down when: the
// wrapper says ready only after that.
test('a server that probes its port (listens, closes) before listening: ready only once it listens for good', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const good = path.join(tmp.root, 'listening-since');
  const script = `const net = require('node:net'), http = require('node:http'), fs = require('node:fs');
const port = Number(process.argv[1]);
let probes = 40;
const probe = () => {
  if (probes-- === 0) return http.createServer((q, s) => { if (q.url === '/__whoami') s.statusCode = 404; s.end('real'); })
    .listen(port, '127.0.0.1', () => fs.writeFileSync(${JSON.stringify(good)}, String(Date.now())));
  const p = net.createServer().listen(port, '0.0.0.0', () => setTimeout(() => p.close(() => setTimeout(probe, 20)), 20));
};
probe();`;
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: [process.execPath, '-e', script, '{port}'] });
  await run.ready;
  const readyAt = Date.now();
  const since = await waitFor(() => fs.existsSync(good) && Number(fs.readFileSync(good, 'utf8')), 10000, 'it listens for good');
  assert.ok(readyAt >= since, `said ready ${since - readyAt} ms before it listened for good:\n${run.stderr()}`);
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.body, 'real');
});
