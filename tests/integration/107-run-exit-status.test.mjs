// 107: `wtproxy run` exits with its command's status: the code it exited
// with, or 128+N when signal N killed it; a command that cannot be run is
// 127, named with the fix. SIGTERM to the wrapper is forwarded to the command. Each time the
// entry is removed when the command ends, and what it left in the
// background ends with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, cli, lsJson, sanitizerClean, pidAlive } from './lib/registry.mjs';

test('exit status of run equals its command\'s', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = (...cmd) => cli(tmp, ['run', '--front', String(px.port), '--', ...cmd], { cwd: tmp.wt.a });
  for (const [cmd, want] of [
    [['sh', '-c', 'exit 3'], 3],
    [['sh', '-c', 'exit 0'], 0],
    [['sh', '-c', 'kill -TERM $$'], 128 + 15],
    [['sh', '-c', 'kill -KILL $$'], 128 + 9],
    [['/nonexistent/server'], 127],
  ]) {
    const r = await run(...cmd);
    sanitizerClean(assert, r.stderr);
    assert.equal(r.signal, null, r.stderr);
    assert.equal(r.code, want, `${cmd.join(' ')}: ${r.stderr}`);
    assert.deepEqual(await lsJson(tmp), [], `${cmd.join(' ')} left its entry`);
    if (want === 127) {
      assert.match(r.stderr, /cannot run \/nonexistent\/server: No such file or directory; after -- give a program on PATH, or its path/,
        'a command that cannot be run is named, with the fix');
    }
  }
});

test('what the command left in the background ends with it, reaped before run exits', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const pidFile = path.join(tmp.root, 'helper.pid');
  const r = await cli(tmp, ['run', '--front', String(px.port), '--', 'sh', '-c',
    `(sleep 1000 >/dev/null 2>&1 & echo $! >${pidFile}); exit 3`], { cwd: tmp.wt.a });
  const helper = Number(fs.readFileSync(pidFile, 'utf8'));
  t.after(() => { try { process.kill(helper, 'SIGKILL'); } catch { /* gone */ } });
  assert.equal(r.code, 3, r.stderr);
  assert.ok(!fs.existsSync(`/proc/${helper}`), `the helper (pid ${helper}) ${pidAlive(helper) ? 'still runs' : 'is an unreaped zombie'}`);
  assert.deepEqual(await lsJson(tmp), []);
});

test('the command sees its port in ARGS and the environment', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const r = await cli(tmp, ['run', '--front', String(px.port), '--', 'sh', '-c',
    'echo "arg=$0 at=$1 port=$PORT wtport=$WTPROXY_PORT wt=$WTPROXY_WORKTREE"', '{port}', '127.0.0.1:{port}/{port}'],
  { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  const m = /arg=(\d+) at=127\.0\.0\.1:(\d+)\/(\d+) port=(\d+) wtport=(\d+) wt=(\S+)/.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.ok(Number(m[1]) > 0);
  for (let i = 2; i <= 5; i++) assert.equal(m[i], m[1]);
  assert.equal(m[6], tmp.wt.a);
});

test('SIGTERM to the wrapper is forwarded; it exits with the command\'s status', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  run.proc.kill('SIGTERM');
  const timeout = new Promise((res) => setTimeout(() => res({ code: 'still running 5 s after SIGTERM' }), 5000));
  const { code, signal } = await Promise.race([run.exited, timeout]);
  assert.equal(signal, null, run.stderr());
  assert.equal(code, 0, run.stderr()); // wt-server exits 0 on SIGTERM
  assert.deepEqual(await lsJson(tmp), []);
});

test('daemon gone when the command exits: a warning, the command\'s status kept', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  await px.stop('SIGKILL');
  run.proc.kill('SIGTERM');
  const { code } = await run.exited;
  assert.equal(code, 0, run.stderr());
  assert.match(run.stderr(), /warning: could not unregister .*wt-a: no daemon answers/);
});
