// 124: a process placed in a worktree is remembered there (its next
// connections are answered from the daemon's per-pid cache) only while its
// cwd is the one it was placed by. One long-lived caller (a test runner, a
// REPL, an agent's helper process) that moves into another worktree is
// that worktree's caller at its next connection, and one that leaves every
// worktree gets the 503 that names it: never the old worktree's server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun } from './lib/registry.mjs';
import { startClient } from './lib/py-client.mjs';
import { removeAfter } from './lib/cleanup.mjs';

test('a placed process that moves to another worktree, or out of all, is placed again at its next connection', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  await Promise.all(['a', 'b'].map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }).ready));
  const c = startClient(t, tmp.wt.a, px.port);
  const pid = await c.pid;
  for (let i = 0; i < 3; i++) {
    const r = await c.send('get');
    assert.equal(r.status, 200, r.body);
    assert.equal(r.worktree, tmp.wt.a, `connection ${i + 1} from wt-a`);
  }

  await c.send(`cd ${tmp.wt.b}`);
  const moved = await c.send('get');
  assert.equal(moved.status, 200, moved.body);
  assert.equal(moved.worktree, tmp.wt.b, 'after a chdir into wt-b: wt-b\'s server, not the cached wt-a');

  const sub = path.join(tmp.wt.b, 'sub');
  fs.mkdirSync(sub);
  await c.send(`cd ${sub}`);
  assert.equal((await c.send('get')).worktree, tmp.wt.b, 'a folder inside wt-b is still wt-b');

  const outside = fs.realpathSync(fs.mkdtempSync('/tmp/wtproxy-outside-'));
  removeAfter(t, outside);
  await c.send(`cd ${outside}`);
  const left = await c.send('get');
  assert.equal(left.status, 503, `after leaving every worktree: ${left.body}`);
  assert.ok(left.body.includes(`pid ${pid}`) && left.body.includes(outside),
    `the 503 names the process and its new cwd:\n${left.body}`);
});
