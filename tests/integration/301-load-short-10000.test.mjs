// 301: 10,000 short connections one after the other (one request each,
// Connection: close) from a process inside worktree wt-b, routed by
// caller identification: every one answered by wt-b's server, none by
// wt-a's; the daemon's fds back to their baseline and its RSS flat
// (nothing kept per connection once it is closed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, getWorktree } from './lib/registry.mjs';
import { memoryKiB } from './lib/wtproxy.mjs';
import { stopClean } from './lib/backends.mjs';
import { startLoad, fdsBackTo, fdKinds, measurableEnv } from './lib/load.mjs';

const CONNECTIONS = 10000;
const WARMUP = 500;
// What the daemon's peak RSS may grow by over 10,000 connections once warm:
// memory that grows with the count of closed connections is a leak.
const MAX_GROWTH_KIB = 16 * 1024;

async function run(t, tmp, port, n) {
  const load = startLoad(t, tmp.wt.b, ['short', port, n], { EXPECT_WORKTREE: tmp.wt.b });
  const counts = await load.next();
  const { code, stderr } = await load.exited;
  assert.equal(code, 0, stderr);
  assert.equal(counts.errors, 0, `errors: ${counts.firstError}`);
  assert.equal(counts.wrong, 0, `a request reached another worktree's server: ${counts.firstError}`);
  assert.equal(counts.ok, n);
}

test('10,000 sequential short connections routed by caller: no error, fds back, RSS flat', { timeout: 240000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--pool-idle', '1s'], { env: measurableEnv });
  const runs = ['a', 'b'].map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }));
  await Promise.all(runs.map((r) => r.ready));
  // One request per worktree first: the /__whoami gate's inotify watch of
  // each (one fd per worktree, kept) belongs to the baseline, not to the load.
  for (const wt of Object.values(tmp.wt)) assert.equal((await getWorktree(px.port, wt)).status, 200);
  await new Promise((r) => setTimeout(r, 1500)); // its pooled connection idles out (--pool-idle 1s)
  const baseline = fdKinds(px.proc.pid);
  await run(t, tmp, px.port, WARMUP); // allocator pools and caches settle
  const before = memoryKiB(px.proc.pid);
  const started = Date.now();
  await run(t, tmp, px.port, CONNECTIONS);
  const secs = (Date.now() - started) / 1000;
  const after = memoryKiB(px.proc.pid);
  const growth = after.hwm - before.hwm;
  t.diagnostic(`${CONNECTIONS} connections in ${secs.toFixed(1)} s (${Math.round(CONNECTIONS / secs)}/s); ` +
    `RSS ${before.rss} -> ${after.rss} KiB, VmHWM ${before.hwm} -> ${after.hwm} KiB (+${growth})`);
  assert.ok(growth < MAX_GROWTH_KIB, `VmHWM grew by ${growth} KiB over ${CONNECTIONS} closed connections`);
  const fds = await fdsBackTo(px.proc.pid, baseline);
  t.diagnostic(`daemon fds after: ${JSON.stringify(fds)} (baseline ${JSON.stringify(baseline)})`);
  await stopClean(px);
});
