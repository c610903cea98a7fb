// 106: a registration belongs to the uid that made it. Another uid
// (nobody, through setpriv) sharing the daemon's control socket can
// neither remove it (not-permitted) nor replace it (conflict naming the
// holder); the entry is unchanged afterwards. Needs root (CI runs as root).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { makeWorktrees, startDaemon, cli, lsJson, sleeper, cliEnv, sanitizerClean } from './lib/registry.mjs';

const canSwitch = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

const asNobody = (tmp, args, cwd) => runToExit('setpriv',
  ['--reuid=65534', '--regid=65534', '--clear-groups', wtproxyBin, ...args],
  { cwd, env: cliEnv(tmp, { HOME: '/nonexistent' }) });

test('another uid can neither remove nor replace a registration', { skip: !canSwitch && 'needs root and setpriv' }, async (t) => {
  // The socket is shared between uids on purpose: its folder is 0755.
  const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
  const px = await startDaemon(t, tmp);
  fs.chmodSync(tmp.control, 0o666);
  const server = sleeper(t);
  const mine = await cli(tmp, ['register', '--port', '5000', '--pid', String(server.pid), '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(mine.code, 0, mine.stderr);
  const before = await lsJson(tmp);
  assert.equal(before.length, 1);

  // nobody reaches the daemon (so the refusals below are the daemon's)
  const ls = await asNobody(tmp, ['ls', '--json'], tmp.wt.a);
  assert.equal(ls.code, 0, ls.stderr);
  assert.equal(JSON.parse(ls.stdout).length, 1);

  const rm = await asNobody(tmp, ['unregister', '--front', String(px.port)], tmp.wt.a);
  sanitizerClean(assert, rm.stderr);
  assert.equal(rm.code, 1, rm.stderr);
  assert.match(rm.stderr, /not-permitted/);

  const take = await asNobody(tmp, ['register', '--port', '5001', '--ttl', '1h', '--front', String(px.port)], tmp.wt.a);
  sanitizerClean(assert, take.stderr);
  assert.equal(take.code, 1, take.stderr);
  // refused as a conflict naming the holder, or as not permitted
  assert.match(take.stderr, new RegExp(`by pid ${server.pid}\\b|not-permitted`), take.stderr);

  const after = await lsJson(tmp);
  assert.equal(after.length, 1);
  assert.equal(after[0].pid, server.pid);
  assert.equal(after[0].port, 5000);
  assert.equal(after[0].uid, 0);
});
