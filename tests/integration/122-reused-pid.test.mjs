// 122: a reused pid is not taken for the process that had it before. The
// daemon caches a process's placing per pid; a new process that gets the
// same pid (forced here through /proc/sys/kernel/ns_last_pid, as root)
// from another worktree must be placed by its own cwd, not by the cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { makeWorktrees, startDaemon, startRun } from './lib/registry.mjs';

// python3 in cwd: print its pid, GET / through the proxy, print the worktree
// that answered, exit.
function client(cwd, port) {
  const code = `import os,sys,json,urllib.request
print(os.getpid(), flush=True)
print(json.load(urllib.request.urlopen('http://127.0.0.1:${port}/'))['worktree'], flush=True)`;
  return new Promise((resolve) => {
    const p = spawn('/usr/bin/python3', ['-c', code], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('exit', () => {
      const [pid, worktree] = out.trim().split('\n');
      resolve({ pid: Number(pid), worktree, spawned: p.pid });
    });
  });
}

test('a new process with a reused pid is placed by its own worktree', async (t) => {
  if (process.getuid() !== 0 || !fs.existsSync('/proc/sys/kernel/ns_last_pid')) {
    return t.skip('forcing a pid needs root and /proc/sys/kernel/ns_last_pid');
  }
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  await Promise.all(['a', 'b'].map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }).ready));
  for (let attempt = 0; attempt < 30; attempt++) {
    const first = await client(tmp.wt.a, px.port);
    assert.equal(first.worktree, tmp.wt.a, 'the first process is placed in wt-a');
    fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(first.pid - 1));
    const second = await client(tmp.wt.b, px.port);
    if (second.pid !== first.pid) continue; // another process took the pid meanwhile
    assert.equal(second.worktree, tmp.wt.b, `pid ${second.pid} reused: placed by its own cwd, not the cache`);
    return;
  }
  t.skip('could not get the same pid twice in 30 tries (a busy machine)');
});
