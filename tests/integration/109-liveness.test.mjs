// 109: entries end by themselves: one whose worktree folder is removed is
// dropped within ~1-2 s; a manual one expires at its TTL; one whose pid
// exits is dropped at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { makeWorktrees, startDaemon, cli, lsJson, sleeper, waitFor } from './lib/registry.mjs';

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
