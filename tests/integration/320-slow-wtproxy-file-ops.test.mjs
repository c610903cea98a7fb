// 320: the `services` and `start` control ops on a slow filesystem hold no
// request. Opening any file named .wtproxy takes 1.5 s (fixtures/
// slow-wtproxy-file.c in LD_PRELOAD, as in 317). While the daemon reads
// worktree b's .wtproxy for a `services` op, then for a `start` op,
// requests to worktree a's registered server keep being answered within
// 400 ms: the file is read on a worker and the op's reply is held until
// it is read. Each reply is still right: the service b's file declares,
// then its start, whose server registers and serves b. With a
// start_timeout shorter than the read, both ops answer `timeout` once it
// passes, naming the file and what to do, and the start starts nothing.
// A daemon that stops while both wait answers them `stopping`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, declaring, startPreloadedDaemon, startRun, getWorktree, wtServer, waitFor, lsJson, sanitizerClean, control } from './lib/registry.mjs';

const OPEN_MS = 1500;
const FAST_MS = 400;

// Send op; while its reply is awaited, time requests to a's server.
// Resolves { reply, ms, took: [ms of each request to a] }.
async function whileWaiting(sock, req, port, wtA) {
  const s = Date.now();
  let reply = null;
  const pending = control(sock, req).then((r) => { reply = r; });
  const took = [];
  while (!reply && Date.now() - s < 30000) {
    const t0 = Date.now();
    const r = await getWorktree(port, wtA);
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).worktree, wtA);
    took.push(Date.now() - t0);
    await new Promise((res) => setTimeout(res, 20));
  }
  await pending;
  return { reply, ms: Date.now() - s, took };
}

function assertFast(t, what, w) {
  t.diagnostic(`${what}: reply after ${w.ms} ms; meanwhile ${w.took.length} requests to a, worst ${Math.max(...w.took)} ms`);
  assert.ok(w.ms >= OPEN_MS, `${what}'s reply waited for the slow .wtproxy (${w.ms} ms)`);
  assert.ok(w.took.length >= 3, `requests were sent while ${what} waited: ${w.took.length}`);
  assert.ok(Math.max(...w.took) < FAST_MS, `each request to a answered within ${FAST_MS} ms during ${what}: ${w.took.join(', ')}`);
}

test('services and start on a slow .wtproxy: requests to a stay fast, the replies are right', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startPreloadedDaemon(t, tmp0, 'slow-wtproxy-file', { WTPROXY_TEST_OPEN_MS: String(OPEN_MS) });
  const run = startRun(t, tmp0, { cwd: tmp0.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp0.wt.a)).status, 200);

  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);
  const svc = await whileWaiting(tmp0.control, { op: 'services', worktree: tmp.wt.b }, px.port, tmp0.wt.a);
  assertFast(t, 'services', svc);
  assert.equal(svc.reply.ok, true, JSON.stringify(svc.reply));
  assert.equal(svc.reply.services.length, 1, JSON.stringify(svc.reply));
  assert.equal(svc.reply.services[0].front, px.port);
  assert.equal(svc.reply.services[0].running, false, 'nothing runs for b yet');

  const st = await whileWaiting(tmp0.control, { op: 'start', worktree: tmp.wt.b, front: px.port }, px.port, tmp0.wt.a);
  assertFast(t, 'start', st);
  assert.equal(st.reply.ok, true, JSON.stringify(st.reply));
  assert.equal(st.reply.worktree, tmp.wt.b);
  assert.equal(st.reply.front, px.port);
  assert.equal(st.reply.running, false, 'the op started it');

  // The server it started registers and serves b.
  await waitFor(async () => (await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.b && e.state === 'ready'),
    20000, "b's started server ready");
  const b = await getWorktree(px.port, tmp.wt.b);
  assert.equal(b.status, 200, b.body);
  assert.equal(JSON.parse(b.body).worktree, tmp.wt.b);
  sanitizerClean(assert, px.stderr());
});

test('services and start on a .wtproxy read longer than start_timeout: timeout, nothing started', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startPreloadedDaemon(t, tmp0, 'slow-wtproxy-file', { WTPROXY_TEST_OPEN_MS: String(OPEN_MS) },
    ['--start-timeout', '500ms']);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);
  const file = `${tmp.wt.b}/.wtproxy`;
  for (const req of [{ op: 'services', worktree: tmp.wt.b }, { op: 'start', worktree: tmp.wt.b, front: px.port }]) {
    const s = Date.now();
    const r = await control(tmp0.control, req);
    const ms = Date.now() - s;
    t.diagnostic(`${req.op}: ${JSON.stringify(r)} after ${ms} ms`);
    assert.equal(r.ok, false, JSON.stringify(r));
    assert.equal(r.error, 'timeout', JSON.stringify(r));
    assert.ok(r.message.includes(file), `the message names ${file}: ${r.message}`);
    assert.match(r.message, /start_timeout \(500 ms\)/);
    assert.ok(ms >= 450 && ms < OPEN_MS, `${req.op} answered at start_timeout, before the read ended: ${ms} ms`);
  }
  assert.match((await control(tmp0.control, { op: 'start', worktree: tmp.wt.b, front: px.port })).message,
    /wtproxy run -- CMD \{port\}/, "the start's timeout says how to run the server instead");
  // The reads end after the answers; the starts they were for stay cancelled.
  await new Promise((res) => setTimeout(res, OPEN_MS + 500));
  assert.equal((await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.b), false, 'nothing started for b');
  await px.stop('SIGTERM');
  sanitizerClean(assert, px.stderr());
});

test('services and start waiting for a slow .wtproxy when the daemon stops: stopping, nothing started', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startPreloadedDaemon(t, tmp0, 'slow-wtproxy-file', { WTPROXY_TEST_OPEN_MS: String(OPEN_MS) });
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);
  const replies = Promise.all([
    control(tmp0.control, { op: 'services', worktree: tmp.wt.b }),
    control(tmp0.control, { op: 'start', worktree: tmp.wt.b, front: px.port }),
  ]);
  await new Promise((res) => setTimeout(res, 300)); // both wait for the read
  const exited = px.stop('SIGTERM');
  for (const r of await replies) {
    assert.equal(r.error, 'stopping', JSON.stringify(r));
    assert.equal(r.message, 'the daemon is stopping, so nothing was done: run the command again once it is back ' +
      '(wtproxy doctor says whether it is)');
  }
  await exited;
  sanitizerClean(assert, px.stderr());
});
