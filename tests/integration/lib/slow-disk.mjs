// slow-disk.mjs - a daemon on a slow disk, and requests sent while a CLI
// op waits for that disk: what tests 313 (the state file) and 318 (the
// leases file) share. Every fsync of the daemon takes fsyncMs more
// (fixtures/slow-fsync.c in LD_PRELOAD), so a save, which syncs the file
// and its folder, takes twice that.
import assert from 'node:assert/strict';
import { startDaemon, buildPreload, getWorktree } from './registry.mjs';

// startDaemon (registry.mjs) with every fsync fsyncMs slower.
export function startSlowFsyncDaemon(t, tmp, fsyncMs) {
  return startDaemon(t, tmp, [], {
    env: {
      LD_PRELOAD: buildPreload(tmp, 'slow-fsync'),
      WTPROXY_TEST_FSYNC_MS: String(fsyncMs),
      // ours comes before the sanitizer's runtime in the library list
      ASAN_OPTIONS: `${process.env.ASAN_OPTIONS || ''}:verify_asan_link_order=0`,
    },
  });
}

// Start job() (a CLI op, a promise of its result) and, until it ends (20 s
// at most), send requests to worktree's server through port one after
// another, 20 ms apart; each must answer 200. onDone(result) runs the
// moment the job ends, to see a file as the CLI left it. Resolves with
// { r: the job's result, done: the ms it took, took: each request's ms }.
export async function requestsDuring(port, worktree, job, onDone = () => {}) {
  const t0 = Date.now();
  let done = 0;
  const running = job().then((r) => { done = Date.now() - t0; onDone(r); return r; });
  const took = [];
  while (!done && Date.now() - t0 < 20000) {
    const s = Date.now();
    const res = await getWorktree(port, worktree);
    took.push(Date.now() - s);
    assert.equal(res.status, 200, res.body);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { r: await running, done, took };
}
