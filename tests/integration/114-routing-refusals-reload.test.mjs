// 114: what a request that names a worktree gets when the registry cannot
// serve it as asked, and the reload gap of a live dev server.
// - a folder name that matches two registrations: 409 ambiguous-worktree,
//   both candidates listed; the full path still routes;
// - a worktree with no registration: 503 no-backend naming it, listing
//   what is registered, with the `wtproxy run` line;
// - no worktree named and no default backend: 503 listing the registered;
// - a server whose process lives but stops listening for 700 ms: the
//   request waits the gap out and gets 200 (reload_grace), never a 502;
// - one that never listens again: 502 once reload_grace (500 ms) passes,
//   naming its worktree, `wtproxy logs WT --front N` and `wtproxy restart`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, get, getWorktree, cli, lsJson, waitFor } from './lib/registry.mjs';

test('a folder name registered in two repos is refused with both candidates', async (t) => {
  const one = makeWorktrees(t, ['a']);
  const two = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, one);
  const runA = startRun(t, one, { cwd: one.wt.a, front: px.port });
  const runB = startRun(t, one, { cwd: two.wt.a, front: px.port });
  await Promise.all([runA.ready, runB.ready]);
  const r = await getWorktree(px.port, 'wt-a');
  assert.equal(r.status, 409, r.body);
  assert.equal(r.headers['x-wtproxy-error'], 'ambiguous-worktree');
  assert.ok(r.body.includes(one.wt.a) && r.body.includes(two.wt.a), r.body);
  const byPath = await getWorktree(px.port, two.wt.a);
  assert.equal(byPath.status, 200, byPath.body);
  assert.equal(JSON.parse(byPath.body).worktree, two.wt.a);
});

test('an unregistered worktree gets its own 503, never another worktree\'s server', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const r = await getWorktree(px.port, tmp.wt.b);
  assert.equal(r.status, 503, r.body);
  assert.equal(r.headers['x-wtproxy-error'], 'no-backend');
  assert.match(r.body, new RegExp(`worktree ${tmp.wt.b}`), 'the 503 names the worktree asked for');
  assert.ok(r.body.includes(tmp.wt.a), `the 503 lists what is registered:\n${r.body}`);
  assert.match(r.body, new RegExp(`^Fix: .*wtproxy run --front ${px.port} -- `, 'm'), 'and how to start one, on this front');
  const none = await get(px.port);
  assert.equal(none.status, 503, none.body);
  assert.ok(none.body.includes(tmp.wt.a), `no worktree named: the registered are listed:\n${none.body}`);
});

test('a live server that stops listening for a moment is waited for, not 502', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--reload-grace', '5s']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, 'wt-a', '/__reload?ms=700')).status, 200);
  const started = Date.now();
  const r = await getWorktree(px.port, 'wt-a', '/after');
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).url, '/after');
  assert.ok(Date.now() - started >= 300, 'the request went through only once the server listened again');
});

test('a live server that never listens again: 502 after reload_grace', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--reload-grace', '500ms']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  const port = await run.ready;
  await waitFor(async () => (await lsJson(tmp))[0].whoami.state === 'verified', 5000, 'verified once ready');
  assert.equal((await getWorktree(px.port, 'wt-a', '/__reload')).status, 200);
  const started = Date.now();
  const r = await getWorktree(px.port, 'wt-a');
  const took = Date.now() - started;
  assert.equal(r.status, 502, r.body);
  assert.equal(r.headers['x-wtproxy-error'], 'backend-unreachable');
  assert.ok(took >= 400 && took < 3000, `502 after the grace, not before nor much after (${took} ms)`);
  assert.ok(r.body.includes(`it is the dev server of ${tmp.wt.a} (pid `), `the 502 names whose server:\n${r.body}`);
  assert.ok(r.body.includes(`its output: wtproxy logs ${tmp.wt.a} --front ${px.port}`),
    `the 502 gives the command that shows its output:\n${r.body}`);
  assert.match(r.body, new RegExp(`^Fix: .*wtproxy logs --front ${px.port} .*wtproxy restart --front ${px.port}`, 'm'),
    'and the commands that fix it, on this front');
  const ls = await lsJson(tmp);
  assert.equal(ls.length, 1, 'the registration stays: its process lives');
  // ls and the dashboard said "verified" of a server nobody answered for
  // (a NestJS user's node killed under its live watcher)
  // (a /__whoami exchange of the gate's in flight at the refusal keeps
  // its own outcome: seen once in CI; the next refused request says it)
  await waitFor(async () => {
    if ((await lsJson(tmp))[0].whoami.state === 'unchecked') return true;
    await getWorktree(px.port, 'wt-a');
    return false;
  }, 15000, 'unchecked after a refused connection');
  const [after] = await lsJson(tmp);
  assert.match(after.whoami.detail, new RegExp(`:${port}\\b.*refused|refused.*:${port}\\b|port ${port} refused`), after.whoami.detail);
});
