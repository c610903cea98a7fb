// 112: `wtproxy run` registers its server as starting and marks it ready
// only once the server (here a grandchild, as with Django's autoreloader)
// listens on its port; a request sent meanwhile waits for it instead of
// failing. With --health, a path that answers nothing is said as such,
// and one that answers an error is said with its body's first line (a
// whoami route's 501 says what to fix: the user reads it there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, lsJson, getWorktree, waitFor } from './lib/registry.mjs';

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
