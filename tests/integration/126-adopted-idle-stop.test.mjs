// 126: a daemon dies (kill -9) while a server it started from a committed
// .wtproxy lives on. The next daemon adopts it: it routes to it, and counts
// its idle time as its own, so idle_stop still stops it (through its
// wrapper: the server's pid gone, `wtproxy ls` without it, a log line), and
// the next request starts it afresh. Before, an adopted server ran for
// ever: a machine whose daemon crashed kept every such server. A server
// registered by hand (`wtproxy run`) in a worktree of the same repository,
// on the same front, is never the daemon's to stop: it stays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import {
  makeWorktrees, declaring, startDaemon, startRun, wtServer, lsJson, curlFrom, waitFor, pidAlive,
  sanitizerClean,
} from './lib/registry.mjs';

// Whether nothing accepts on the control socket any more.
function refused(sock) {
  return new Promise((resolve) => {
    const c = net.createConnection(sock);
    c.on('connect', () => { c.destroy(); resolve(false); });
    c.on('error', () => resolve(true));
  });
}

// kill -9, and wait until its control socket is closed (its other threads
// may outlive its main one for a moment).
async function killDaemon(tmp, px) {
  px.proc.kill('SIGKILL');
  await px.exited;
  await waitFor(() => refused(tmp.control), 5000, 'the killed daemon\'s control socket closed');
}

// The wt-server answer of a request placed in cwd: { worktree, pid }.
async function served(cwd, port) {
  const r = await curlFrom(cwd, port);
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

test('a .wtproxy server adopted after its daemon died is stopped at idle_stop; a hand-run one is not', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const first = await startDaemon(t, tmp0);
  const port = first.port;
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${port}`,
    'idle_stop = 2s'], ['a', 'b']);

  // wt-b's server is run by hand, on the front its .wtproxy declares.
  const hand = startRun(t, tmp0, { cwd: tmp.wt.b, front: port, detached: true });
  await hand.ready;
  // wt-a's first request starts its declared server; the daemon dies at
  // once, well within idle_stop.
  const before = await served(tmp.wt.a, port);
  assert.equal(before.worktree, tmp.wt.a);
  const wrapper = (await lsJson(tmp0)).find((e) => e.worktree === tmp.wt.a).pid;
  t.after(() => { if (pidAlive(wrapper)) try { process.kill(-wrapper, 'SIGKILL'); } catch { /* gone */ } });
  await killDaemon(tmp0, first);
  sanitizerClean(assert, first.stderr());

  const second = await startDaemon(t, tmp0, ['--listen', `127.0.0.1:${port}`]);
  // The adopted server serves, and its idle time counts from that request.
  const again = await served(tmp.wt.a, port);
  assert.equal(again.pid, before.pid, 'the surviving server served it');
  const lastRequest = Date.now();
  await waitFor(() => !pidAlive(before.pid) && !pidAlive(wrapper), 10000,
    `the adopted server stopped at idle_stop; the new daemon's log:\n${second.stderr()}`);
  const idle = Date.now() - lastRequest;
  assert.ok(idle >= 1500, `stopped ${idle} ms after its last request, before idle_stop (2 s)`);
  const log = second.stderr();
  assert.match(log, /adopted .*wt-a's server \(wrapper pid \d+, front :\d+\), started from its \.wtproxy by the daemon before: idle_stop \(2000 ms\) counts from now/);
  assert.match(log, /stopping .*wt-a's server: idle for 2000 ms \(idle_stop\); it was adopted from the daemon that started it/);
  assert.doesNotMatch(log, /adopted .*wt-b/, 'the hand-run server is not the daemon\'s');
  await waitFor(async () => !(await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.a), 5000, 'wt-a gone from wtproxy ls');

  // The hand-run server outlives idle_stop, its entry kept.
  await new Promise((r) => setTimeout(r, 1500));
  assert.ok(pidAlive(hand.pid), `the hand-run server was stopped:\n${hand.stderr()}`);
  assert.equal(hand.proc.exitCode, null);
  assert.deepEqual((await lsJson(tmp0)).map((e) => e.worktree), [tmp.wt.b]);
  assert.doesNotMatch(second.stderr(), /stopping .*wt-b's server/);
  assert.equal((await served(tmp.wt.b, port)).worktree, tmp.wt.b);

  // The next request from wt-a starts its server again, with this daemon.
  const fresh = await served(tmp.wt.a, port);
  assert.equal(fresh.worktree, tmp.wt.a);
  assert.notEqual(fresh.pid, before.pid);
  assert.match(second.stderr(), /started .*wt-a's server from its \.wtproxy/);
  sanitizerClean(assert, second.stderr());
});
