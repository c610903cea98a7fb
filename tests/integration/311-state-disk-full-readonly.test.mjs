// 311: the state file on a full disk, then on a read-only one (a 64 KiB
// tmpfs for --state; needs root to mount it): each registration still
// succeeds and is routed; the daemon says on stderr that it cannot save
// and why, and so does the `wtproxy run` that registered (its agent reads
// that, not the daemon's log); the state file keeps its last good content
// (never a truncated file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, getWorktree, waitFor } from './lib/registry.mjs';
import { stopClean } from './lib/backends.mjs';
import { removeQuietly } from './lib/cleanup.mjs';

const root = process.getuid() === 0;

// A 64 KiB tmpfs on a folder of its own (unmounted, then removed, after the test).
function mountSmallTmpfs(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', dir]);
  t.after(() => {
    try { execFileSync('umount', ['-l', dir]); } catch { /* gone */ }
    removeQuietly(t, dir);
  });
  return dir;
}

// Fill the filesystem holding dir until it refuses a byte more.
function fillDisk(dir) {
  const fd = fs.openSync(path.join(dir, 'filler'), 'w');
  try {
    for (let chunk = 4096; chunk >= 1;) {
      try { fs.writeSync(fd, Buffer.alloc(chunk)); } catch (e) {
        if (e.code !== 'ENOSPC') throw e;
        chunk = Math.floor(chunk / 2);
      }
    }
  } finally { fs.closeSync(fd); }
}

const worktreesIn = (file) => JSON.parse(fs.readFileSync(file, 'utf8')).entries.map((e) => e.worktree).sort();

test('state file on a full, then read-only disk: clear error, old state kept, still serving',
  { skip: !root && 'needs root to mount a small tmpfs for --state' }, async (t) => {
    const tmp = makeWorktrees(t, ['a', 'b', 'c']);
    const disk = mountSmallTmpfs(t);
    const state = path.join(disk, 'registry.json');
    const px = await startDaemon(t, tmp, ['--state', state]);
    await startRun(t, tmp, { cwd: tmp.wt.a, front: px.port }).ready;
    await waitFor(() => fs.existsSync(state) && worktreesIn(state).length === 1, 5000, 'wt-a saved');

    fillDisk(disk);
    const runB = startRun(t, tmp, { cwd: tmp.wt.b, front: px.port });
    await runB.ready;
    await waitFor(() => /cannot save/.test(px.stderr()), 5000, 'a save error logged');
    assert.match(px.stderr(), /cannot save registrations, the previous state file is kept: .*registry\.json.*No space left on device/);
    assert.deepEqual(worktreesIn(state), [tmp.wt.a], 'the state file keeps its last good content');
    // a save still in flight holds its temporary file for a moment (the
    // next registration's, a ready): none is left once it failed
    await waitFor(() => JSON.stringify(fs.readdirSync(disk).sort()) === '["filler","registry.json"]', 5000,
      `no temporary file left behind (${fs.readdirSync(disk).sort().join(', ')})`);
    assert.match(runB.stderr(), /wtproxy: warning: the daemon cannot save its registrations \(.*registry\.json.*No space left on device\): they are served now but forgotten if the daemon restarts; free space there, or restart the daemon with --state PATH/);

    execFileSync('mount', ['-o', 'remount,ro', disk]);
    const before = px.stderr().length;
    const runC = startRun(t, tmp, { cwd: tmp.wt.c, front: px.port });
    await runC.ready;
    await waitFor(() => /cannot save/.test(px.stderr().slice(before)), 5000, 'a save error logged');
    assert.match(px.stderr().slice(before), /cannot save registrations, the previous state file is kept: .*Read-only file system/);
    assert.deepEqual(worktreesIn(state), [tmp.wt.a]);
    assert.match(runC.stderr(), /warning: the daemon cannot save its registrations \(.*Read-only file system\)/);

    for (const n of ['a', 'b', 'c']) {
      const r = await getWorktree(px.port, tmp.wt[n]);
      assert.equal(r.status, 200, `wt-${n} still served: ${r.body}`);
      assert.equal(JSON.parse(r.body).worktree, tmp.wt[n]);
    }
    await stopClean(px);
  });
