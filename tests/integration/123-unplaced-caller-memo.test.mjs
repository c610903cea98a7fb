// 123: a process placed nowhere (its cwd in no worktree wtproxy knows) is
// remembered as such, as a placed one is: its next connections get the very
// same 503 without a walk each on the identification worker (the daemon's
// stats op counts those). The memo never outlives what would place it: the
// same process after a chdir into a worktree, after a registration of its
// repository, and a new process given its pid are placed at their next
// connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeWorktrees, startDaemon, startRun, control } from './lib/registry.mjs';
import { startClient } from './lib/py-client.mjs';
import { removeAfter } from './lib/cleanup.mjs';

// How many identifications have waited for a worker so far.
async function onWorker(tmp) {
  const r = await control(tmp.control, { op: 'stats' });
  assert.ok(r.ok, JSON.stringify(r));
  return r.identify.worker.count;
}

function outsideDir(t) {
  const d = fs.realpathSync(fs.mkdtempSync('/tmp/wtproxy-outside-'));
  removeAfter(t, d);
  return d;
}

async function oneWorktree(t) {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  await startRun(t, tmp, { cwd: tmp.wt.a, front: px.port }).ready;
  return { tmp, px };
}

test('a process placed nowhere gets the same 503 each time, without a walk each', async (t) => {
  const { tmp, px } = await oneWorktree(t);
  const outside = outsideDir(t);
  const c = startClient(t, outside, px.port);
  const pid = await c.pid;
  const first = await c.send('get');
  assert.equal(first.status, 503, first.body);
  assert.ok(first.body.includes(`pid ${pid}`) && first.body.includes(outside),
    `the 503 names the process and its cwd:\n${first.body}`);
  // Older than the processes the loop guesses among (1-2 s), as a browser
  // or a script that has run a while: found by its fds, not as a new one.
  await new Promise((r) => setTimeout(r, 2500));
  const before = await onWorker(tmp);
  const n = 30;
  for (let i = 0; i < n; i++) {
    const r = await c.send('get');
    assert.equal(r.status, first.status);
    assert.equal(r.body, first.body, `connection ${i + 2} gets the first one's answer`);
  }
  const walks = (await onWorker(tmp)) - before;
  t.diagnostic(`${n} connections waited for the worker ${walks} times`);
  // Without the memo: one or two per connection (at its accept and at its
  // request). With it: one walk each UNPLACED_MS (1 s), and the odd
  // connection whose process the loop did not find (the finder's, then).
  assert.ok(walks <= n / 3, `${n} connections waited for the worker ${walks} times`);
});

test('a process placed nowhere that moves into a worktree is placed at its next connection', async (t) => {
  const { tmp, px } = await oneWorktree(t);
  const c = startClient(t, outsideDir(t), px.port);
  await c.pid;
  assert.equal((await c.send('get')).status, 503);
  assert.equal((await c.send('get')).status, 503, 'answered from the memo');
  await c.send(`cd ${tmp.wt.a}`);
  const r = await c.send('get');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.worktree, tmp.wt.a, 'placed by its new cwd, not the memo');
});

test('a registration of its repository places a process placed nowhere at once', async (t) => {
  const { tmp, px } = await oneWorktree(t);
  const other = path.join(tmp.root, 'other');
  fs.mkdirSync(other);
  git(other, 'init', '-q', '-b', 'main');
  git(other, 'commit', '-q', '--allow-empty', '-m', 'init');
  const c = startClient(t, other, px.port);
  await c.pid;
  assert.equal((await c.send('get')).status, 503, 'a repository nothing registered');
  const stop = path.join(tmp.root, 'stop');
  c.proc.stdin.write(`loop 20 ${stop}\n`);
  await new Promise((r) => setTimeout(r, 300));
  await startRun(t, tmp, { cwd: other, front: px.port }).ready;
  const registered = Date.now();
  // Were a memo taken before the registration kept, it would answer here.
  await new Promise((r) => setTimeout(r, 600));
  const ended = c.until((l) => l.t === undefined);
  fs.writeFileSync(stop, '');
  await ended;
  const after = c.lines.filter((l) => l.t > registered);
  assert.ok(after.length >= 5, `${after.length} requests after the registration`);
  for (const l of after) {
    assert.equal(l.status, 200, `a request ${Math.round(l.t - registered)} ms after it: ${l.body}`);
    assert.equal(l.worktree, other);
  }
});

test('a new process given the pid of one placed nowhere is placed by its own cwd', async (t) => {
  if (process.getuid() !== 0 || !fs.existsSync('/proc/sys/kernel/ns_last_pid')) {
    return t.skip('forcing a pid needs root and /proc/sys/kernel/ns_last_pid');
  }
  const { tmp, px } = await oneWorktree(t);
  const outside = outsideDir(t);
  for (let attempt = 0; attempt < 30; attempt++) {
    const first = startClient(t, outside, px.port);
    const pid = await first.pid;
    assert.equal((await first.send('get')).status, 503);
    first.proc.stdin.end();
    await new Promise((r) => first.proc.on('exit', r));
    fs.writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
    const second = startClient(t, tmp.wt.a, px.port);
    if ((await second.pid) !== pid) continue; // another process took the pid meanwhile
    const r = await second.send('get');
    assert.equal(r.status, 200, `pid ${pid} reused: ${r.body}`);
    assert.equal(r.worktree, tmp.wt.a, 'placed by its own cwd, not the memo');
    return;
  }
  t.skip('could not get the same pid twice in 30 tries (a busy machine)');
});
