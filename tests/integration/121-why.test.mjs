// 121: `wtproxy why` explains a process's routing: from a worktree's
// subfolder it names the worktree, the deciding process and the backend
// (exit 0); from outside every worktree it says how to place the process
// (exit 1); --pid explains another process, with its env override.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { makeWorktrees, startDaemon, startRun, cli } from './lib/registry.mjs';

test('wtproxy why names the worktree, the decider and the backend', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  const port = await run.ready;
  const sub = path.join(tmp.wt.a, 'sub');
  fs.mkdirSync(sub);
  const r = await cli(tmp, ['why', '--front', String(px.port)], { cwd: sub });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`worktree ${tmp.wt.a}\\n`));
  assert.match(r.stdout, /decided by pid \d+ \(its cwd\)/);
  assert.match(r.stdout, new RegExp(`backend: 127\\.0\\.0\\.1:${port} .*ready`));

  const none = await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.b });
  assert.equal(none.code, 1, none.stdout);
  assert.match(none.stdout, new RegExp(`backend: none .* wtproxy run --front ${px.port} -- `));
});

test('wtproxy why --pid explains another process; outside every worktree it says how to place it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const p = spawn('sleep', ['30'], { cwd: '/', env: { ...process.env, WTPROXY_WORKTREE: tmp.wt.a } });
  t.after(() => p.kill('SIGKILL'));
  const r = await cli(tmp, ['why', '--pid', String(p.pid), '--front', String(px.port)]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /its WTPROXY_WORKTREE/);
  const out = await cli(tmp, ['why', '--front', String(px.port)], { cwd: '/' });
  assert.equal(out.code, 1, out.stdout);
  assert.match(out.stdout, /not placed: .*\n.*WTPROXY_WORKTREE=\/path\/to\/worktree/);
  const bad = await cli(tmp, ['why', '--pid', 'nope']);
  assert.equal(bad.code, 2, bad.stderr);
});

test('without --front, why judges the port the worktree declares, else the one the daemon listens on', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp); // on a port the kernel picked: never 8000
  const port = await startRun(t, tmp, { cwd: tmp.wt.a, front: px.port }).ready;
  const r = await cli(tmp, ['why'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`backend: 127\\.0\\.0\\.1:${port} .* on front :${px.port}`),
    `the daemon's only port, not 8000:\n${r.stdout}`);
  // a .wtproxy naming another front wins: that is the port its tests use
  fs.writeFileSync(path.join(tmp.wt.b, '.wtproxy'), `front = ${px.port + 1}\nstart = true\n`);
  const declared = await cli(tmp, ['why'], { cwd: tmp.wt.b });
  assert.match(declared.stdout, new RegExp(`none runs on front :${px.port + 1} yet; the worktree's \\.wtproxy declares one, which the daemon starts at the first request`), declared.stdout);
  assert.equal(declared.code, 0, 'its requests will be served');
});

test('a .wtproxy of two services: why explains each front; without one, its fix names the front', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const port = await startRun(t, tmp, { cwd: tmp.wt.a, front: px.port }).ready;
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `[service web]\nstart = true\nfront = ${px.port}\n\n[service api]\nstart = true\nfront = 65002\n`);
  const r = await cli(tmp, ['why'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`backend: 127\\.0\\.0\\.1:${port} .* on front :${px.port}\n`), r.stdout);
  assert.match(r.stdout, /backend: none runs on front :65002 yet; the worktree's \.wtproxy declares one \(service api\), which the daemon starts at the first request\n$/, r.stdout);
  // wt-b declares nothing: its fix registers on the port asked about, not 8000
  const b = await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.b });
  assert.equal(b.code, 1, b.stdout);
  assert.ok(b.stdout.includes(`Start one from the worktree: wtproxy run --front ${px.port} -- <server command with {port}>`), b.stdout);
});
