// 110: `wtproxy ls` shows worktree, branch (read from the worktree's .git),
// front, backend port, pid, state, the gate's whoami verdict, age and
// requests; --json prints the daemon's entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, cli, lsJson, getWorktree, sleeper } from './lib/registry.mjs';
import { closedPort } from './lib/backends.mjs';
import fs from 'node:fs';
import path from 'node:path';

test('ls: a table with branches; --json: the entries', async (t) => {
  const tmp = makeWorktrees(t, ['feature-x']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt['feature-x'], front: px.port });
  const port = await run.ready;
  const server = sleeper(t);
  const idle = await closedPort(); // nothing listens there
  const reg = await cli(tmp, ['register', '--port', String(idle), '--pid', String(server.pid), '--front', String(px.port)], { cwd: tmp.repo });
  assert.equal(reg.code, 0, reg.stderr);
  assert.equal((await getWorktree(px.port, tmp.wt['feature-x'])).status, 200);

  const r = await cli(tmp, ['ls']);
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  assert.deepEqual(rows[0], ['WORKTREE', 'BRANCH', 'FRONT', 'PORT', 'PID', 'STATE', 'WHOAMI', 'AGE', 'REQUESTS']);
  const byWt = Object.fromEntries(rows.slice(1).map((c) => [c[0], c]));
  assert.deepEqual(byWt[tmp.wt['feature-x']].slice(1, 7),
    ['feature-x', String(px.port), String(port), String(run.pid), 'ready', 'verified']);
  assert.match(byWt[tmp.wt['feature-x']][7], /^\d+[smhd]$/);
  assert.equal(byWt[tmp.wt['feature-x']][8], '1');
  // asked at its registration (119), but nothing answers there yet
  assert.deepEqual(byWt[tmp.repo].slice(1, 7), ['main', String(px.port), String(idle), String(server.pid), 'ready', 'unchecked']);

  const entries = await lsJson(tmp);
  assert.equal(entries.length, 2);
  const e = entries.find((x) => x.worktree === tmp.wt['feature-x']);
  assert.equal(e.port, port);
  assert.equal(e.pid, run.pid);
  assert.equal(e.front, px.port);
  assert.equal(e.requests, 1);
  assert.match(e.command, /wt-server\.mjs \d+/);
});

// Nothing registered, in a worktree whose .wtproxy declares a server: ls
// says the daemon starts it at its first request and how to start it now,
// not "start one with wtproxy run" (a reader would add a second server).
test('ls with nothing registered: what this worktree\'s .wtproxy starts, and how', async (t) => {
  const tmp = makeWorktrees(t, ['feature-x']);
  const px = await startDaemon(t, tmp);
  const plain = await cli(tmp, ['ls'], { cwd: tmp.wt['feature-x'] });
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^no dev server is registered; start one in a worktree with: wtproxy run -- CMD/);

  fs.writeFileSync(path.join(tmp.wt['feature-x'], '.wtproxy'),
    `[service web]\nstart = node server.mjs {port}\nfront = ${px.port}\n`);
  const declared = await cli(tmp, ['ls'], { cwd: tmp.wt['feature-x'] });
  assert.equal(declared.code, 0, declared.stderr);
  assert.match(declared.stdout, new RegExp(`this worktree's \\.wtproxy declares :${px.port} \\(web\\): ` +
    'the daemon starts each at its first request there, or now with: wtproxy restart'));
  assert.doesNotMatch(declared.stdout, /wtproxy run --/);
});
