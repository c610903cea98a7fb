// 303: an idle keep-alive connection routed by its caller is cheap to hold.
// This test's own process moves into worktree wt-a and opens 1,000
// connections, 100 at a time, one GET each, answered by wt-a's server and
// then left idle: the daemon's resident memory grows by less than 8 KiB per
// connection (measured: 3.8 KiB in a debugoptimized build, 6 KiB under
// ASan). Each connection used to keep a 12 KiB copy of its caller's
// identification (three PATH_MAX buffers): 16 KiB per connection, 22 KiB
// under ASan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, getWorktree } from './lib/registry.mjs';
import { memoryKiB } from './lib/wtproxy.mjs';
import { RawConn, requestHead, stopClean } from './lib/backends.mjs';
import { measurableEnv } from './lib/load.mjs';

const CONNECTIONS = 1000;
const BATCH = 100;
const MAX_BYTES_PER_CONNECTION = 8 * 1024;

test(`${CONNECTIONS} idle keep-alive connections routed by caller cost under 8 KiB each`, { timeout: 120000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--keepalive-timeout', '10m'], { env: measurableEnv });
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  // warm: the gate's check of wt-a's server, the backend pool
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  const home = process.cwd();
  process.chdir(tmp.wt.a); // our connections are placed in wt-a by our cwd
  const conns = [];
  t.after(() => { process.chdir(home); for (const c of conns) c.close(); });
  const before = memoryKiB(px.proc.pid);

  for (let i = 0; i < CONNECTIONS; i += BATCH) {
    const batch = await Promise.all(Array.from({ length: BATCH }, () => RawConn.open(px.port)));
    conns.push(...batch);
    for (const c of batch) c.write(requestHead('GET', '/idle', [['Host', 'localhost']]));
    for (const c of batch) {
      const r = await c.readResponse({ ms: 20000 });
      assert.equal(r.status, 200, r.raw);
      assert.ok(!c.ended, 'the daemon closed a keep-alive connection');
    }
  }
  await new Promise((r) => setTimeout(r, 500)); // every connection back to idle
  const during = memoryKiB(px.proc.pid);

  const per = ((during.rss - before.rss) * 1024) / CONNECTIONS;
  t.diagnostic(`RSS ${before.rss} -> ${during.rss} KiB with ${CONNECTIONS} idle connections: ${per.toFixed(0)} bytes each`);
  assert.ok(per < MAX_BYTES_PER_CONNECTION,
    `each idle connection holds ${per.toFixed(0)} bytes of the daemon's memory (over ${MAX_BYTES_PER_CONNECTION})`);
  for (const c of conns) c.close();
  await stopClean(px);
});
