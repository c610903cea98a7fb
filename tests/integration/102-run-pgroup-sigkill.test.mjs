// 102: Playwright stops its webServer with SIGKILL to the process group of
// the command it started. `wtproxy run` keeps its server in its own group,
// so the server and the server's children die with it; the daemon notices
// the wrapper's death itself and drops the entry within 1 s; the next
// request for that worktree gets 503 naming it. Killing the wrapper alone
// takes the server down too, and its whole tree when CMD is a shell that
// would die first and leave its server to init (as `/bin/sh -c START`, a
// .wtproxy server, does): the wrapper's keeper stops it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, lsJson, getWorktree, waitFor, pidAlive, wtServer } from './lib/registry.mjs';

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

test('SIGKILL to the wrapper of a shell: the server below the shell stops too, its port freed', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const pids = path.join(tmp.root, 'pids');
  // sh waits for its server: SIGTERM kills the shell and leaves the server
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port,
    command: ['/bin/sh', '-c', `"${process.execPath}" "${wtServer}" {port} --pids "${pids}" & wait`],
  });
  const port = await run.ready;
  const [server] = readPids(pids);
  t.after(() => { try { process.kill(server, 'SIGKILL'); } catch { /* gone */ } });
  // The keeper says what it is in ps, not a second `wtproxy run` line.
  const cmdlines = fs.readFileSync(`/proc/${run.pid}/task/${run.pid}/children`, 'utf8').trim().split(/\s+/)
    .map((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0+$/, ''));
  assert.ok(cmdlines.includes(`wtproxy-keeper of wtproxy run ${run.pid} (${tmp.wt.a})`), cmdlines.join('\n'));
  run.proc.kill('SIGKILL');
  await waitFor(() => !pidAlive(server), 3000, `the server (pid ${server}) below the shell stops when its wrapper is killed`);
  await waitFor(async () => (await lsJson(tmp)).length === 0, 1000, 'entry dropped');
  await waitFor(() => new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.on('connect', () => { c.destroy(); resolve(false); });
    c.on('error', () => resolve(true));
  }), 1000, `port ${port} freed`);
  assert.match(run.stderr(), new RegExp(`wtproxy: the wrapper of ${tmp.wt.a}'s server \\(pid ${run.pid}\\) ended without stopping it`), run.stderr());
});
