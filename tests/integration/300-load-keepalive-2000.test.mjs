// 300: 2,000 keep-alive connections open at once, from a process inside
// worktree wt-a, routed by caller identification (wt-a and wt-b both
// registered, no request names its worktree): every request answered by
// wt-a's own server, the second one on each kept connection too; the
// daemon's fd count back to its baseline once they close; RSS bounded and
// reported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { makeWorktrees, startDaemon, startRun, getWorktree } from './lib/registry.mjs';
import { fdCount, memoryKiB } from './lib/wtproxy.mjs';
import { stopClean } from './lib/backends.mjs';
import { startLoad, fdsBackTo, fdKinds, measurableEnv } from './lib/load.mjs';

const CONNECTIONS = 2000;
// Under ASan each connection costs more than in a release build; this bound
// is what 2,000 idle keep-alive connections may take, with room, not a goal.
const MAX_GROWTH_KIB = 256 * 1024;

function fdLimit(pid) {
  const line = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  return Number(line.split(/\s+/)[3]);
}

// Each new connection's caller is found by reading the fd table of the
// process that opened the last ones (proxy/identify.c): with one process
// holding up to 2,000 sockets that is O(n^2) readlinks in total, about
// 10 s on a quiet 2-core machine with ASan, far longer on a loaded one.
test('2,000 concurrent keep-alive connections routed by caller: no error, fds back, RSS bounded', { timeout: 300000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  // the first connections wait, idle, for the last ones: keepalive_timeout
  // (75 s) must not end them on a slow machine
  const px = await startDaemon(t, tmp, ['--pool-idle', '1s', '--keepalive-timeout', '10m'], { env: measurableEnv });
  // the daemon raises its soft fd limit to the hard one (server.c); it
  // needs a client and a backend fd per connection
  assert.ok(fdLimit(px.proc.pid) > 2 * CONNECTIONS + 100,
    `the daemon's fd limit ${fdLimit(px.proc.pid)} is too small for ${CONNECTIONS} connections: raise the hard limit (ulimit -Hn)`);
  const runs = ['a', 'b'].map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }));
  await Promise.all(runs.map((r) => r.ready));
  // One request per worktree first: the /__whoami gate's inotify watch of
  // each (one fd per worktree, kept) belongs to the baseline, not to the load.
  for (const wt of Object.values(tmp.wt)) assert.equal((await getWorktree(px.port, wt)).status, 200);
  await new Promise((r) => setTimeout(r, 1500)); // its pooled connection idles out (--pool-idle 1s)
  const baseline = fdKinds(px.proc.pid);
  const before = memoryKiB(px.proc.pid);

  const started = Date.now();
  const load = startLoad(t, tmp.wt.a, ['keepalive', px.port, CONNECTIONS], { EXPECT_WORKTREE: tmp.wt.a });
  const held = await load.next();
  const during = { fds: fdCount(px.proc.pid), ...memoryKiB(px.proc.pid) };
  const secs = (Date.now() - started) / 1000;
  load.proc.stdin.write('close\n');
  const { code, stderr } = await load.exited;
  assert.equal(code, 0, stderr);

  assert.equal(held.held, CONNECTIONS, JSON.stringify(held));
  assert.equal(held.errors, 0, `errors: ${held.firstError}`);
  assert.equal(held.wrong, 0, `a request reached another worktree's server: ${held.firstError}`);
  assert.equal(held.ok, 2 * CONNECTIONS, 'two answered requests per connection');
  assert.ok(during.fds >= baseline.total + CONNECTIONS, `the daemon held the connections (${during.fds} fds)`);

  const growth = during.hwm - before.hwm;
  t.diagnostic(`${CONNECTIONS} connections x 2 requests in ${secs.toFixed(1)} s; daemon fds ${baseline.total} -> ${during.fds}; ` +
    `RSS ${before.rss} -> ${during.rss} KiB, VmHWM +${growth} KiB (${Math.round(growth / CONNECTIONS)} KiB per connection)`);
  assert.ok(growth < MAX_GROWTH_KIB, `VmHWM grew by ${growth} KiB for ${CONNECTIONS} connections`);

  const after = await fdsBackTo(px.proc.pid, baseline);
  t.diagnostic(`daemon fds after: ${JSON.stringify(after)} (baseline ${JSON.stringify(baseline)})`);
  await stopClean(px);
});
