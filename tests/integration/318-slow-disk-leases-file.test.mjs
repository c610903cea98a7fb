// 318: a busy disk holds no proxied request while a lease is claimed.
// Every fsync of the daemon takes 600 ms more (fixtures/slow-fsync.c in
// LD_PRELOAD, as in 313: a save of leases.json, which syncs the file and
// its folder, takes 1.2 s). While `wtproxy claim` and `wtproxy release`
// change the embedded lease store, requests to a registered worktree's
// server keep being answered within 400 ms: leases.json is written on its
// own thread, not on the loop. A claim or release is still acknowledged
// only once it is on disk: when the CLI exits, leases.json says so; so for
// four claims made at once. A release whose write is in flight when the
// daemon gets SIGTERM is in the file after it exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startRun, cli, getWorktree, sanitizerClean, waitFor } from './lib/registry.mjs';
import { startSlowFsyncDaemon, requestsDuring } from './lib/slow-disk.mjs';

const FSYNC_MS = 600;
const FAST_MS = 400;

function leaseIds(tmp) {
  try {
    return JSON.parse(fs.readFileSync(path.join(tmp.root, 'leases.json'), 'utf8')).leases.map((l) => l.id);
  } catch { return []; }
}

test('a slow disk: requests stay fast while a lease is saved, which is on disk when acknowledged', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startSlowFsyncDaemon(t, tmp, FSYNC_MS);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);

  for (const [what, args, held] of [['claim', ['claim', 'emu', '--ttl', '1h'], true],
    ['release', ['release', 'emu'], false]]) {
    const { r, done, took } = await requestsDuring(px.port, tmp.wt.a, () => cli(tmp, args, { cwd: tmp.wt.b, ms: 20000 }),
      (res) => { res.fileThen = leaseIds(tmp); });
    assert.equal(r.code, 0, r.stderr);
    t.diagnostic(`${what} took ${done} ms; ${took.length} requests meanwhile, worst ${Math.max(...took)} ms: ${took.join(' ')}`);
    assert.equal(r.fileThen.includes('emu'), held, `leases.json says the ${what} when the CLI exits: ${r.fileThen}`);
    assert.ok(done >= 2 * FSYNC_MS, `the ${what}'s reply waited for the disk (${done} ms)`);
    assert.ok(took.length >= 3, `requests were sent during the ${what}: ${took.length}`);
    assert.ok(Math.max(...took) < FAST_MS, `each request answered within ${FAST_MS} ms: ${took.join(', ')}`);
  }

  // Four at once: each is acknowledged on disk.
  const ids = ['l1', 'l2', 'l3', 'l4'];
  const many = await Promise.all(ids.map((id) =>
    cli(tmp, ['claim', id, '--ttl', '1h'], { cwd: tmp.wt.b, ms: 30000 }).then((r) => { r.fileThen = leaseIds(tmp); return r; })));
  many.forEach((m, i) => {
    assert.equal(m.code, 0, m.stderr);
    assert.ok(m.fileThen.includes(ids[i]), `${ids[i]} is in leases.json when its claim exits: ${m.fileThen}`);
  });

  // A release in flight when SIGTERM comes is in the file after the exit.
  const last = cli(tmp, ['release', 'l4'], { cwd: tmp.wt.b, ms: 20000 });
  await waitFor(async () => {
    const r = await cli(tmp, ['leases', '--json']);
    return r.code === 0 && !JSON.parse(r.stdout).some((l) => l.id === 'l4');
  }, 20000, 'the daemon took the release');
  await px.stop();
  await last;
  assert.ok(!leaseIds(tmp).includes('l4'), 'the release reached the disk at exit');
  assert.deepEqual(leaseIds(tmp).sort(), ['l1', 'l2', 'l3'], 'and the rest is kept');
  sanitizerClean(assert, px.stderr());
});
