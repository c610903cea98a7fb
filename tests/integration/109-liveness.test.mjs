// 109: entries end by themselves: one whose worktree folder is removed is
// dropped within ~1-2 s; a manual one expires at its TTL; one whose pid
// exits is dropped at once. The daemon's log says why each went, and a
// `wtproxy run` server's own log how it ended.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { makeWorktrees, startDaemon, startRun, cli, git, lsJson, sleeper, waitFor } from './lib/registry.mjs';

test('worktree folder removed: entry dropped', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const server = sleeper(t);
  for (const n of ['a', 'b']) {
    const r = await cli(tmp, ['register', '--port', '5000', '--pid', String(server.pid), '--front', String(px.port)], { cwd: tmp.wt[n] });
    assert.equal(r.code, 0, r.stderr);
  }
  assert.equal((await lsJson(tmp)).length, 2);
  fs.rmSync(tmp.wt.b, { recursive: true, force: true });
  const removed = Date.now();
  await waitFor(async () => (await lsJson(tmp)).length === 1, 2500, 'entry of the removed worktree dropped');
  const left = await lsJson(tmp);
  assert.equal(left[0].worktree, tmp.wt.a, 'the other entry was dropped instead');
  assert.ok(Date.now() - removed < 2500);
});

test('register --ttl 1s: entry expires', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '1s', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  const [e] = await lsJson(tmp);
  assert.equal(e.pid, 0);
  assert.equal(e.state, 'ready');
  assert.ok(e.expires_ms > Date.now() && e.expires_ms <= Date.now() + 1500, JSON.stringify(e));
  await waitFor(async () => (await lsJson(tmp)).length === 0, 3000, 'entry expired');
});

test('registered pid exits: entry dropped at once', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const server = sleeper(t);
  const r = await cli(tmp, ['register', '--port', '5000', '--pid', String(server.pid), '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  const [e] = await lsJson(tmp);
  assert.equal(e.pid, server.pid);
  assert.match(e.command, /sleep 1000/);
  server.kill('SIGKILL');
  await waitFor(async () => (await lsJson(tmp)).length === 0, 1000, 'entry dropped when its pid exited');
});

// CMD's pid: the wrapper's child running wt-server.mjs (its other child is
// its keeper).
function serverPid(wrapper) {
  const kids = fs.readFileSync(`/proc/${wrapper}/task/${wrapper}/children`, 'utf8').trim().split(/\s+/).map(Number);
  return kids.find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('wt-server.mjs'));
}

// A Hugo user's report: a kill -9 of a server, a removed worktree and an
// unregister all read "dropped ...: unregistered", and the killed server's
// log ended with no word of its end.
test('the daemon log says why each entry went: killed, worktree removed, stopped, unregistered', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const px = await startDaemon(t, tmp);
  const runs = {};
  for (const n of ['b', 'c', 'd']) runs[n] = startRun(t, tmp, { cwd: tmp.wt[n], front: px.port });
  for (const n of ['b', 'c', 'd']) await runs[n].ready;
  const server = sleeper(t);
  const reg = await cli(tmp, ['register', '--port', '5000', '--pid', String(server.pid), '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  const dropped = (wt) => new RegExp(`^wtproxy: dropped ${wt} \\(front :${px.port}, port \\d+\\): (.*)$`, 'm');
  const said = async (wt, what) => {
    await waitFor(() => dropped(wt).test(px.stderr()), 5000, `the daemon's drop of ${wt} (${what}):\n${px.stderr()}`);
    return dropped(wt).exec(px.stderr())[1];
  };

  const killed = serverPid(runs.c.pid);
  process.kill(killed, 'SIGKILL');
  assert.match(await said(tmp.wt.c, 'its server killed'),
    new RegExp(`^its server \\(pid ${killed}: .*wt-server\\.mjs \\d+\\) was killed by signal 9 \\(SIGKILL\\)$`));
  await runs.c.exited;
  const log = (await cli(tmp, ['logs', tmp.wt.c, '--front', String(px.port)])).stdout;
  assert.match(log, new RegExp(`\\n--- the server \\(pid ${killed}: .*\\) was killed by signal 9 \\(SIGKILL\\), at \\d\\d:\\d\\d:\\d\\d ---\\n?$`), log);

  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.b);
  // its wrapper or the daemon's sweep, whichever looks first
  assert.match(await said(tmp.wt.b, 'its worktree removed'),
    new RegExp(`^(its server was stopped by its wrapper: its worktree was removed \\(its \\.git or its gitdir is gone: git worktree remove\\)|worktree ${tmp.wt.b} was removed)$`));

  const stop = await cli(tmp, ['stop', '--front', String(px.port)], { cwd: tmp.wt.d, ms: 30000 });
  assert.equal(stop.code, 0, stop.stderr);
  assert.match(await said(tmp.wt.d, 'wtproxy stop'),
    /^the daemon stopped it: the stop op from pid \d+ \(\S*wtproxy stop --front \d+\), by .*\(uid \d+\)$/);

  const unreg = await cli(tmp, ['unregister', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(unreg.code, 0, unreg.stderr);
  assert.match(await said(tmp.wt.a, 'wtproxy unregister'),
    /^unregistered by pid \d+ \(\S*wtproxy unregister --front \d+\)$/);
});
