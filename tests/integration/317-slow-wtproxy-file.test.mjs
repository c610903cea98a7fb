// 317: a slow filesystem holds no other request. Opening any file named
// .wtproxy takes 1.5 s (fixtures/slow-wtproxy-file.c in LD_PRELOAD: a
// worktree on NFS or FUSE). While a request from worktree b, which has no
// server yet, waits for its .wtproxy to be read, requests to worktree a's
// registered server and the dashboard's API keep being answered within
// 400 ms: the file is read on a worker, never on the loop. b's request
// then proceeds as it always did: the server its file declares is started
// and serves it, and the dashboard shows what b's file declares.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, declaring, startPreloadedDaemon, startRun, get, getWorktree, wtServer, waitFor, sanitizerClean } from './lib/registry.mjs';

const OPEN_MS = 1500;
const FAST_MS = 400;

async function timed(fn) {
  const s = Date.now();
  const r = await fn();
  return { ...r, ms: Date.now() - s };
}

test('a slow .wtproxy read: other requests and the dashboard stay fast, the request waiting for it is served', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startPreloadedDaemon(t, tmp0, 'slow-wtproxy-file', { WTPROXY_TEST_OPEN_MS: String(OPEN_MS) });
  const run = startRun(t, tmp0, { cwd: tmp0.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp0.wt.a)).status, 200);

  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);
  let b = null;
  const t0 = Date.now();
  const started = timed(() => getWorktree(px.port, tmp.wt.b)).then((r) => { b = r; });
  const took = [], dash = [];
  while (!b && Date.now() - t0 < OPEN_MS) {
    const r = await timed(() => getWorktree(px.port, tmp0.wt.a));
    assert.equal(r.status, 200, r.body);
    took.push(r.ms);
    const d = await timed(() => get(px.port, {}, '/__wtproxy/api/backends'));
    assert.equal(d.status, 200, d.body);
    dash.push(d.ms);
    await new Promise((res) => setTimeout(res, 20));
  }
  await started;
  t.diagnostic(`b's request took ${b.ms} ms; meanwhile ${took.length} requests to a, worst ${Math.max(...took)} ms; ` +
    `dashboard worst ${Math.max(...dash)} ms`);
  assert.equal(b.status, 200, b.body);
  assert.equal(JSON.parse(b.body).worktree, tmp.wt.b, "b is served by the server its .wtproxy declares");
  assert.ok(b.ms >= OPEN_MS, `b's request waited for its slow .wtproxy (${b.ms} ms)`);
  assert.ok(took.length >= 3, `requests were sent while it was read: ${took.length}`);
  assert.ok(Math.max(...took) < FAST_MS, `each request to a answered within ${FAST_MS} ms: ${took.join(', ')}`);
  assert.ok(Math.max(...dash) < FAST_MS, `each dashboard answer within ${FAST_MS} ms: ${dash.join(', ')}`);

  // The dashboard shows b's declared server, from the file a worker read.
  await waitFor(async () => {
    const list = JSON.parse((await get(px.port, {}, '/__wtproxy/api/backends')).body);
    const eb = list.find((e) => e.worktree === tmp.wt.b);
    return eb && eb.declared && eb.declared.services.length === 1 && eb.declared.services[0].front === px.port;
  }, 10000, "the dashboard's declared for b");
  sanitizerClean(assert, px.stderr());
});
