// 324: a server's log is its worktree's, keyed by the worktree's path and
// not only its folder name. An orchestrator makes worktrees with repeated
// folder names (x/t2 and y/t2 at once) and at reused paths: each worktree's
// `wtproxy logs` shows its own server's lines only, a new worktree at a
// removed one's path starts with none of the removed one's, a server
// stopped because its worktree was removed says why in its log, and
// `wtproxy logs --prune` removes the logs of worktrees that are gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, wtServer, lsJson, declaring, cli, curlFrom, git, waitFor } from './lib/registry.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// A worktree of tmp.repo at tmp.root/REL on a new branch.
function addWorktree(tmp, rel, branch) {
  const dir = path.join(tmp.root, rel);
  git(tmp.repo, 'worktree', 'add', '-q', dir, '-b', branch);
  return dir;
}

test('two worktrees with one folder name at once: each `wtproxy logs` shows its own server only', async (t) => {
  const tmp = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp);
  const x = addWorktree(tmp, 'x/t2', 'x'), y = addWorktree(tmp, 'y/t2', 'y');
  const serve = (who) => ['/bin/sh', '-c', `echo "hello from ${who}"; exec ${process.execPath} ${wtServer} {port}`];
  const rx = startRun(t, tmp, { cwd: x, front: px.port, command: serve('x/t2') });
  const ry = startRun(t, tmp, { cwd: y, front: px.port, command: serve('y/t2') });
  await Promise.all([rx.ready, ry.ready]);
  for (const [wt, own, other] of [[x, 'x/t2', 'y/t2'], [y, 'y/t2', 'x/t2']]) {
    const logs = await cli(tmp, ['logs'], { cwd: wt });
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, new RegExp(`hello from ${own}`), logs.stdout);
    assert.doesNotMatch(logs.stdout, new RegExp(`hello from ${other}`), `${wt}'s log holds the other t2's server:\n${logs.stdout}`);
    // each run begins with a line naming its worktree
    assert.match(logs.stdout, new RegExp(`^--- wtproxy run of ${esc(wt)} \\(front ${px.port}\\), \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d ---$`, 'm'));
  }
  const log = Object.fromEntries((await lsJson(tmp)).map((e) => [e.worktree, e.log]));
  assert.notEqual(log[x], log[y]);
  for (const wt of [x, y]) assert.match(path.basename(log[wt]), new RegExp(`^t2-[0-9a-f]{8}-${px.port}\\.log$`));

  // x/t2 removed while its server runs: the wrapper stops it, its log
  // saying why (`wtproxy logs --prune` removes it); the other t2's untouched
  git(tmp.repo, 'worktree', 'remove', '--force', x);
  await rx.exited;
  assert.match(fs.readFileSync(log[x], 'utf8'), /was removed .*: stopping its server/);
  assert.doesNotMatch(fs.readFileSync(log[y], 'utf8'), /stopping its server/);
});

test('a worktree at a removed one\'s path: its `wtproxy logs` shows none of the removed one\'s lines', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [
    `start = echo "server of branch $(git rev-parse --abbrev-ref HEAD)"; exec ${process.execPath} ${wtServer} {port}`,
    `front = ${px.port}`], ['t2']);
  const wt = tmp.wt.t2;
  assert.equal((await curlFrom(wt, px.port)).status, 200);
  const first = await cli(tmp0, ['logs'], { cwd: wt });
  assert.match(first.stdout, /server of branch t2\n/);
  // Stopped before the removal (no wrapper to take the log), then a new
  // worktree at the same path, a second later.
  assert.equal((await cli(tmp0, ['stop'], { cwd: wt })).code, 0);
  await waitFor(async () => (await lsJson(tmp0)).length === 0, 8000, 'stopped');
  git(tmp.repo, 'worktree', 'remove', '--force', wt);
  await sleep(1500);
  git(tmp.repo, 'worktree', 'add', '-q', wt, '-b', 't2-again');

  const before = await cli(tmp0, ['logs'], { cwd: wt });
  assert.doesNotMatch(before.stdout, /server of branch t2\n/, `the new worktree's logs show the removed one's server:\n${before.stdout}${before.stderr}`);
  assert.equal(before.code, 1, before.stderr);
  assert.match(before.stderr, new RegExp(`no server of ${esc(wt)} is registered`));

  assert.equal((await curlFrom(wt, px.port)).status, 200);
  const after = await cli(tmp0, ['logs'], { cwd: wt });
  assert.equal(after.code, 0, after.stderr);
  assert.match(after.stdout, /server of branch t2-again\n/);
  assert.doesNotMatch(after.stdout, /server of branch t2\n/, `its first start kept the removed one's lines:\n${after.stdout}`);
  await cli(tmp0, ['stop'], { cwd: wt });
});

test('wtproxy logs --prune removes the logs of worktrees that are gone and an older wtproxy\'s, never a live one\'s', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const env = { XDG_STATE_HOME: path.join(tmp.root, 'state') }; // this test's logs only
  for (const n of ['a', 'b']) {
    const r = await cli(tmp, ['run', '--front', String(px.port), '--', '/bin/sh', '-c', `echo "bye from ${n}"; exit 1`], { cwd: tmp.wt[n], env });
    assert.equal(r.code, 1, r.stderr);
  }
  const dir = path.join(env.XDG_STATE_HOME, 'wtproxy', 'servers');
  const [logA] = fs.readdirSync(dir).filter((f) => f.startsWith('wt-a-'));
  const [logB] = fs.readdirSync(dir).filter((f) => f.startsWith('wt-b-'));
  assert.ok(logA && logB, fs.readdirSync(dir).join(' '));
  fs.writeFileSync(path.join(dir, 'wt-a.log'), 'a log named by the folder only\n');
  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.b); // no server runs: its log stays

  const r = await cli(tmp, ['logs', '--prune'], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^removed ${esc(path.join(dir, logB))}: ${esc(tmp.wt.b)} is gone$`, 'm'));
  assert.match(r.stdout, new RegExp(`^removed ${esc(path.join(dir, 'wt-a.log'))}: an older wtproxy's, which named logs by the folder only$`, 'm'));
  assert.match(r.stdout, new RegExp(`^wtproxy logs --prune: removed 2 logs of worktrees that no longer exist; kept 1 in ${esc(dir)}$`, 'm'));
  assert.deepEqual(fs.readdirSync(dir), [logA]);
});
