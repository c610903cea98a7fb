// 102: Playwright stops its webServer with SIGKILL to the process group of
// the command it started. `wtproxy run` keeps its server in its own group,
// so the server and the server's children die with it; the daemon notices
// the wrapper's death itself and drops the entry within 1 s; the next
// request for that worktree gets 503 naming it. Killing the wrapper alone
// takes the server down too (PR_SET_PDEATHSIG).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, lsJson, getWorktree, waitFor, pidAlive } from './lib/registry.mjs';

const readPids = (f) => fs.readFileSync(f, 'utf8').trim().split('\n').map(Number);

test('SIGKILL to the group of wtproxy run: server and children die, entry gone, 503', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const pids = path.join(tmp.root, 'pids');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, detached: true, serverArgs: ['--reloader', '--pids', pids] });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  const server = readPids(pids);
  assert.equal(server.length, 2, 'the reloader and its serving child');

  const killed = Date.now();
  process.kill(-run.pid, 'SIGKILL');
  await waitFor(async () => (await lsJson(tmp)).length === 0, 1000, 'entry dropped after the group was killed');
  const dropped = Date.now() - killed;
  await waitFor(() => [run.pid, ...server].every((p) => !pidAlive(p)), 2000, 'every process of the group died');

  const res = await getWorktree(px.port, tmp.wt.a);
  assert.equal(res.status, 503, res.body);
  assert.match(res.body, /wt-a/);
  assert.ok(dropped <= 1000, `dropped after ${dropped} ms`);
});

test('SIGKILL to the wrapper alone: its server gets SIGTERM and exits, entry gone', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const pids = path.join(tmp.root, 'pids');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs: ['--pids', pids] });
  await run.ready;
  const [server] = readPids(pids);
  run.proc.kill('SIGKILL');
  await waitFor(() => !pidAlive(server), 2000, 'server exits when its wrapper dies');
  await waitFor(async () => (await lsJson(tmp)).length === 0, 1000, 'entry dropped');
});
