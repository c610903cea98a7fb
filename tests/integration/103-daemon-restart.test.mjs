// 103: registrations survive kill -9 of the daemon. With 3 live backends
// registered by `wtproxy run`, the daemon is killed with SIGKILL and
// restarted with the same --state (and the same front port): all 3 are
// routed again, without any wrapper re-registering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { makeWorktrees, startDaemon, startRun, lsJson, getWorktree, cli, cliEnv, waitFor, control } from './lib/registry.mjs';

test('kill -9 of the daemon, restart with the same state: all 3 routed again', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c']);
  const px = await startDaemon(t, tmp);
  const names = Object.keys(tmp.wt);
  const runs = names.map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }));
  const ports = await Promise.all(runs.map((r) => r.ready));
  for (const [i, n] of names.entries()) assert.equal((await getWorktree(px.port, tmp.wt[n])).status, 200);

  await px.stop('SIGKILL');
  const again = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${px.port}`]);
  assert.equal(again.port, px.port);

  const entries = await lsJson(tmp);
  assert.deepEqual(entries.map((e) => e.worktree).sort(), names.map((n) => tmp.wt[n]).sort());
  for (const [i, n] of names.entries()) {
    const res = await getWorktree(again.port, tmp.wt[n]);
    assert.equal(res.status, 200, `${n}: ${res.body}\n${again.stderr()}`);
    assert.equal(JSON.parse(res.body).port, ports[i]);
  }
  for (const r of runs) assert.equal(r.proc.exitCode, null, `a wrapper exited:\n${r.stderr()}`);
});

test('a server run with --service keeps its label across a daemon kill -9 (ls --json)', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--service', 'api'] });
  await run.ready;
  const before = await lsJson(tmp);
  assert.equal(before.length, 1);
  assert.equal(before[0].service, 'api', JSON.stringify(before));

  await px.stop('SIGKILL');
  await startDaemon(t, tmp, ['--listen', `127.0.0.1:${px.port}`]);
  const after = await lsJson(tmp);
  assert.equal(after.length, 1, JSON.stringify(after));
  assert.equal(after[0].service, 'api', JSON.stringify(after));
});

// An upgrade or an uninstall needs the daemon gone: it took `kill PID` with
// the pid doctor prints, and a wait nobody wrote. `wtproxy stop --daemon`
// stops it and waits; the server runs on, and the command it prints
// starts a daemon on the same port that routes to it again.
test('wtproxy stop --daemon: the daemon is gone when it returns; its server runs on and is routed to again', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);

  const r = await cli(tmp, ['stop', '--daemon']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^wtproxy: stopped the daemon \\(pid ${px.proc.pid}\\)\n`));
  assert.match(r.stdout, new RegExp(`the 1 dev server it routed to runs on, registered; a daemon started again on the same ports routes to it: setsid -f \\S+ serve --control ${tmp.control} --state ${tmp.state} --listen ${px.port} >>\\S+ 2>&1\n$`));
  assert.notEqual(px.proc.exitCode, null, 'the daemon had exited when stop returned');
  assert.equal(run.proc.exitCode, null, 'the server runs on');

  const again = await cli(tmp, ['stop', '--daemon']);
  assert.equal(again.code, 0);
  assert.match(again.stdout, /^wtproxy: no daemon answers on \S+: none to stop\n$/);
  assert.equal((await cli(tmp, ['stop', '--daemon', '--front', String(px.port)])).code, 2);

  const next = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${px.port}`]);
  assert.equal((await getWorktree(next.port, tmp.wt.a)).status, 200);
});

// A daemon started with --trust-registry serves a server without
// /__whoami. Stopped, the command said to start it again was `serve
// --listen N` alone: pasted (by a Rails user), the same server got 502
// no-whoami. The command keeps the flags it ran with (its control socket
// and state file too: on another state file it adopts no server), but
// where it listens, which it writes as before.
test('wtproxy stop --daemon: the command said to start it again keeps its flags (--trust-registry); pasted, it serves as before', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs: ['--no-whoami'] });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200, 'trusted, without /__whoami');

  const r = await cli(tmp, ['stop', '--daemon']);
  assert.equal(r.code, 0, r.stderr);
  const said = /routes to it: (setsid -f .*)\n$/.exec(r.stdout);
  assert.ok(said, r.stdout);
  assert.match(said[1], new RegExp(`^setsid -f \\S+ serve --control ${tmp.control} --state ${tmp.state} --trust-registry --listen ${px.port} >>\\S+ 2>&1$`));

  // Pasted as said, in a shell of this user.
  const env = { ...process.env, ...cliEnv(tmp), PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  const sh = spawnSync('/bin/sh', ['-c', said[1]], { cwd: tmp.wt.a, env, encoding: 'utf8', timeout: 20000 });
  assert.equal(sh.status, 0, sh.stderr);
  let ping;
  await waitFor(async () => (ping = await control(tmp.control, { op: 'ping' }).catch(() => null)) !== null, 15000,
    'the daemon started again, on this shell\'s control socket');
  t.after(() => { try { process.kill(ping.pid, 'SIGKILL'); } catch { /* gone */ } });
  assert.notEqual(ping.pid, px.proc.pid, 'a new daemon');
  let got;
  await waitFor(async () => (got = await getWorktree(px.port, tmp.wt.a)).status === 200, 15000,
    'the server without /__whoami served again, trusted').catch((e) => { throw new Error(`${e.message}: ${got.status} ${got.body}`); });
  assert.equal(run.proc.exitCode, null, 'the server ran on');
});
