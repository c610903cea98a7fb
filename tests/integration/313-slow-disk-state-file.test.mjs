// 313: a busy disk holds no proxied request. Every fsync of the daemon
// takes 600 ms more (fixtures/slow-fsync.c in LD_PRELOAD: a save, which
// syncs the file and its folder, takes 1.2 s). While `wtproxy register`
// saves a new entry, requests to another worktree's server keep being
// answered within 400 ms: the state file is written on its own thread, not
// on the loop. The registration is still acknowledged only once it is on
// disk (registry/PROTOCOL.md: "saved before the reply is sent"): when the
// CLI exits, the file holds the entry; so for four made at once. A change
// whose write is in flight when the daemon gets SIGTERM is in the file
// after it exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { makeWorktrees, startRun, cli, getWorktree, sanitizerClean, waitFor } from './lib/registry.mjs';
import { startSlowFsyncDaemon, requestsDuring } from './lib/slow-disk.mjs';

const FSYNC_MS = 600;
const FAST_MS = 400;

function stateWorktrees(tmp) {
  const doc = JSON.parse(fs.readFileSync(tmp.state, 'utf8'));
  return doc.entries.map((e) => e.worktree);
}

test('a slow disk: requests stay fast while a registration is saved, which is on disk when acknowledged', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd', 'e', 'f']);
  const px = await startSlowFsyncDaemon(t, tmp, FSYNC_MS);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);

  const { r, done, took } = await requestsDuring(px.port, tmp.wt.a,
    () => cli(tmp, ['register', '--port', '1', '--ttl', '1h', '--front', String(px.port)], { cwd: tmp.wt.b, ms: 20000 }),
    (res) => { res.fileThen = stateWorktrees(tmp); });
  assert.equal(r.code, 0, r.stderr);
  t.diagnostic(`register took ${done} ms; ${took.length} requests meanwhile, worst ${Math.max(...took)} ms: ${took.join(" ")}`);
  assert.ok(r.fileThen.includes(tmp.wt.b), `the entry is in the state file when the CLI exits: ${r.fileThen}`);
  assert.ok(done >= 2 * FSYNC_MS, `the reply waited for the disk (${done} ms)`);
  assert.ok(took.length >= 3, `requests were sent while it saved: ${took.length}`);
  assert.ok(Math.max(...took) < FAST_MS, `each request answered within ${FAST_MS} ms: ${took.join(', ')}`);

  // Four at once: each is acknowledged on disk.
  const saves0 = Date.now();
  const many = await Promise.all(['c', 'd', 'e', 'f'].map((n) =>
    cli(tmp, ['register', '--port', '1', '--ttl', '1h', '--front', String(px.port)], { cwd: tmp.wt[n], ms: 30000 })));
  for (const m of many) assert.equal(m.code, 0, m.stderr);
  t.diagnostic(`4 concurrent registrations acknowledged in ${Date.now() - saves0} ms`);
  for (const n of ['c', 'd', 'e', 'f']) assert.ok(stateWorktrees(tmp).includes(tmp.wt[n]), n);

  // A change in flight when SIGTERM comes is in the file after the exit.
  const last = cli(tmp, ['unregister', '--front', String(px.port)], { cwd: tmp.wt.f, ms: 20000 });
  await waitFor(() => px.stderr().includes(`dropped ${tmp.wt.f} `), 20000, 'the daemon took the unregistration');
  await px.stop();
  await last;
  assert.ok(!stateWorktrees(tmp).includes(tmp.wt.f), 'the unregistration reached the disk at exit');
  assert.ok(stateWorktrees(tmp).includes(tmp.wt.e), 'and the rest is kept');
  sanitizerClean(assert, px.stderr());
});
