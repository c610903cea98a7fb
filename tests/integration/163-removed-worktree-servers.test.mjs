// 163: a worktree removed (`git worktree remove`) while its servers run.
// Seen in an adoption walk: the daemon dropped the entries of a removed
// worktree, but the servers it had started from its .wtproxy (a Vite and a
// Django runserver, with their wrappers) ran on for ever: idle_stop never
// came for a server the daemon no longer listed, so each removed worktree
// kept its ports, its memory and its database connections. And a Vite
// still writing its .vite cache into the tree made the remove fail
// ("Directory not empty"), leaving a folder without .git whose servers the
// daemon kept listing as verified. Now each wrapper stops its server within
// about a second of its worktree's .git going, and says why: a worktree
// removed whole (b), one whose folder outlived its .git (c), a server run
// by hand with `wtproxy run` (d), and one whose .git file outlived the
// gitdir it names (e: seen with next dev writing .next while git removed
// the folder: git stops at the first entry it cannot delete, and deletes
// the gitdir anyway; its servers ran on, listed with branch "-"). A
// worktree that stays (a) keeps its server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorktrees, declaring, startDaemon, startRun, wtServer, lsJson, curlFrom, waitFor, pidAlive,
  sanitizerClean, git,
} from './lib/registry.mjs';

// The wt-server answer of a request placed in cwd: { worktree, pid }.
async function served(cwd, port) {
  const r = await curlFrom(cwd, port);
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

test('a removed worktree\'s servers stop, the daemon\'s and a hand-run one; the others stay', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const port = px.port;
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${port}`],
    ['a', 'b', 'c', 'd', 'e']);

  // d's server is run by hand (no .wtproxy start: --front names it).
  const hand = startRun(t, tmp0, { cwd: tmp.wt.d, front: port, detached: true });
  await hand.ready;
  const pids = {};
  for (const n of ['a', 'b', 'c', 'e']) pids[n] = (await served(tmp.wt[n], port)).pid;
  const entries = await lsJson(tmp0);
  const wrapper = (n) => entries.find((e) => e.worktree === tmp.wt[n]).pid;
  const logOf = (n) => entries.find((e) => e.worktree === tmp.wt[n]).log;
  const wrappers = { a: wrapper('a'), b: wrapper('b'), c: wrapper('c'), e: wrapper('e') };
  t.after(() => {
    for (const w of Object.values(wrappers)) {
      if (pidAlive(w)) try { process.kill(-w, 'SIGKILL'); } catch { /* gone */ }
    }
  });

  // b removed whole; c's folder outlives its .git (a server wrote into it
  // while git removed it); d removed under its hand-run server.
  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.b);
  fs.rmSync(path.join(tmp.wt.c, '.git'));
  git(tmp.repo, 'worktree', 'prune');
  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.d);
  const gitdirOfE = fs.readFileSync(path.join(tmp.wt.e, '.git'), 'utf8').replace(/^gitdir: /, '').trim();
  fs.rmSync(path.resolve(tmp.wt.e, gitdirOfE), { recursive: true });
  const removed = Date.now();

  await waitFor(() => !pidAlive(pids.b) && !pidAlive(wrappers.b) && !pidAlive(pids.c) &&
    !pidAlive(wrappers.c) && !pidAlive(pids.e) && !pidAlive(wrappers.e) && hand.proc.exitCode !== null, 8000,
  `the removed worktrees' servers stopped; the daemon's log:\n${px.stderr()}\nd's wrapper:\n${hand.stderr()}`);
  const took = Date.now() - removed;
  assert.ok(took < 5000, `stopped ${took} ms after the removal`);

  const said = /was removed \(its \.git or its gitdir is gone: git worktree remove\): stopping its server/;
  assert.match(hand.stderr(), said);
  assert.match(fs.readFileSync(logOf('c'), 'utf8'), said, 'c\'s server log says why it stopped');
  assert.match(fs.readFileSync(logOf('e'), 'utf8'), said, 'e\'s server log says why it stopped');
  await waitFor(async () => (await lsJson(tmp0)).map((e) => e.worktree).join() === tmp.wt.a, 5000,
    'wtproxy ls lists a alone');

  // a stays: its server, the same process, still serves it.
  assert.ok(pidAlive(pids.a) && pidAlive(wrappers.a), 'a\'s server was stopped');
  assert.equal((await served(tmp.wt.a, port)).pid, pids.a);
  sanitizerClean(assert, px.stderr());
});

// `git worktree move` under a running server: its .git is gone from the
// old path, and the wrapper said "was removed", so its reader looked for
// who removed it. The folder it holds says where it went: now "was moved
// to NEW", and the next request from NEW starts a server there.
test('a worktree moved under its server: said as moved, with where, and served from there', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['f']);
  const run = startRun(t, tmp0, { cwd: tmp.wt.f, front: px.port, detached: true });
  await run.ready;
  assert.equal((await served(tmp.wt.f, px.port)).worktree, tmp.wt.f);
  const to = path.join(tmp.root, 'wt-f-moved');
  git(tmp.repo, 'worktree', 'move', tmp.wt.f, to);
  await waitFor(() => run.proc.exitCode !== null, 8000, `the wrapper stopped:\n${run.stderr()}`);
  assert.match(run.stderr(), new RegExp(`${tmp.wt.f} was moved to ${to} \\(git worktree move, or a folder above it renamed\\): its server was started and registered at the old path; the next request from ${to}, or \`wtproxy run\` there, starts one: stopping its server`), run.stderr());
  assert.doesNotMatch(run.stderr(), /was removed/);
  assert.equal((await served(to, px.port)).worktree, to, 'served from the new path');
});
