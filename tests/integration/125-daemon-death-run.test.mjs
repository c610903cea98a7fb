// 125: the daemon dies (kill -9) while a `wtproxy run` and its server live
// on. Nothing answers on the front, so a test runner (Playwright's
// webServer with reuseExistingServer) runs its `wtproxy run` again, which
// starts a daemon that reloads the old server's entry. That run must not
// tell anyone to kill a good server: a verified one is reused (said, the
// command staying in the foreground while it serves, the server left
// running when the command is stopped), a stale one is stopped and
// replaced. A server that was still starting when the daemon died is
// marked ready with the new daemon by its wrapper, and then reused. A
// wrapper the next daemon never knew (a fresh state file), the worktree
// served by a newer wrapper since, changes nothing of that one's entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  makeWorktrees, startRun, cli, lsJson, getWorktree, pidAlive, waitFor, autostartEnv, sanitizerClean,
  control, stopDaemonsAfter,
} from './lib/registry.mjs';
import { startProxy } from './lib/wtproxy.mjs';

// A port free now: the front every daemon of the test listens on, as 8000
// is Playwright's.
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// A worktree, the environment of CLI commands that start their daemon on
// a fixed front, and a first `wtproxy run` (it starts the daemon) serving
// and verified (ready: false: registered, still starting). serverArgs: the
// first server's extra arguments.
async function setup(t, { serverArgs = [], ready = true } = {}) {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const env = autostartEnv(t, tmp);
  fs.writeFileSync(env.WTPROXY_CONFIG, `listen = 127.0.0.1:${front}\nstale_grace = 300ms\n`);
  const first = startRun(t, tmp, { cwd: tmp.wt.a, front, env, detached: true, serverArgs });
  const started = await waitFor(() => /started the daemon \(pid (\d+)\)/.exec(first.stderr()), 10000, 'the daemon started');
  if (ready) await first.ready;
  else await waitFor(async () => (await lsJson(tmp)).length === 1, 10000, 'the first run registered');
  return { tmp, front, env, first, daemon: Number(started[1]) };
}

// Wait until the second run says it reuses the server; on failure, its
// output and the daemons' log.
async function reuses(tmp, run) {
  try {
    await waitFor(() => /reusing it|stopping it/.test(run.stderr()), 40000, 'the second run says what it does');
    assert.match(run.stderr(), /reusing it/);
  } catch (e) {
    let log = '';
    try { log = fs.readFileSync(path.join(tmp.root, 'state', 'wtproxy', 'daemon.log'), 'utf8'); } catch { /* none */ }
    throw new Error(`${e.message}; it said:\n${run.stderr()}\nthe daemon log:\n${log}`);
  }
}

// Whether nothing accepts on the control socket any more.
function refused(sock) {
  return new Promise((resolve) => {
    const c = net.createConnection(sock);
    c.on('connect', () => { c.destroy(); resolve(false); });
    c.on('error', () => resolve(true));
  });
}

// kill -9, and wait until its control socket is closed: a killed daemon's
// main thread shows as a zombie while its other threads still exit, the
// socket open.
async function killDaemon(tmp, pid) {
  process.kill(pid, 'SIGKILL');
  await waitFor(() => !pidAlive(pid), 5000, `daemon ${pid} gone`);
  await waitFor(() => refused(tmp.control), 5000, `daemon ${pid}'s control socket closed`);
}

// The server's own pid, from its answer through the front.
async function servedBy(front, worktree) {
  const res = await getWorktree(front, worktree);
  assert.equal(res.status, 200, res.body);
  return JSON.parse(res.body);
}

test('a verified server that outlived its daemon: the next run reuses it, no kill instruction', async (t) => {
  const { tmp, front, env, first, daemon } = await setup(t);
  const before = await servedBy(front, tmp.wt.a);
  await killDaemon(tmp, daemon);

  const second = startRun(t, tmp, { cwd: tmp.wt.a, front, env, detached: true });
  await reuses(tmp, second);
  const said = second.stderr();
  sanitizerClean(assert, said);
  assert.match(said, /started the daemon/);
  assert.match(said, new RegExp(`wt-a is already served on front :${front} by pid ${first.pid} \\(.*wt-server\\.mjs.*\\), which outlived the daemon it was registered with, verified; reusing it`));
  assert.match(said, new RegExp(`to stop it: wtproxy stop ${tmp.wt.a} --front ${front}\n`));
  assert.doesNotMatch(said, /\bkill \d+/, 'no kill instruction');
  assert.doesNotMatch(said, /is ready on/, 'its command never ran');

  // Requests reach the surviving server; the command stays while it serves.
  const after = await servedBy(front, tmp.wt.a);
  assert.equal(after.pid, before.pid);
  assert.equal(after.port, before.port);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(second.proc.exitCode, null, `the run ended while its server serves:\n${second.stderr()}`);
  assert.deepEqual((await lsJson(tmp)).map((e) => e.pid), [first.pid]);

  // Stopping the run (a test runner's teardown) leaves the server it reused.
  process.kill(second.pid, 'SIGTERM');
  assert.deepEqual(await second.exited, { code: 0, signal: null });
  assert.ok(pidAlive(first.pid) && pidAlive(before.pid), 'the reused server was stopped');

  // Its own stop ends it; nothing is left running.
  const stop = await cli(tmp, ['stop', '--front', String(front)], { cwd: tmp.wt.a, env, ms: 20000 });
  assert.equal(stop.code, 0, stop.stderr);
  await first.exited;
  await waitFor(() => !pidAlive(before.pid), 5000, 'the server gone');
  assert.deepEqual(await lsJson(tmp), []);
});

test('a stale server that outlived its daemon: the next run stops it and serves in its place', async (t) => {
  const { tmp, front, env, first, daemon } = await setup(t);
  const before = await servedBy(front, tmp.wt.a);
  await killDaemon(tmp, daemon);
  await new Promise((r) => setTimeout(r, 20)); // a later mtime than the server's start
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');

  const second = startRun(t, tmp, { cwd: tmp.wt.a, front, env, detached: true });
  const port = await second.ready;
  const said = second.stderr();
  sanitizerClean(assert, said);
  assert.match(said, new RegExp(`wt-a's server on front :${front} \\(pid ${first.pid}, .*\\) outlived the daemon it was registered with, and the /__whoami gate refuses it \\(stale\\): .*app\\.py.*; stopping it to run this one\n`));
  assert.doesNotMatch(said, /\bkill \d+/, 'no kill instruction');
  await first.exited;
  await waitFor(() => !pidAlive(before.pid), 5000, 'the stale server gone');

  const after = await servedBy(front, tmp.wt.a);
  assert.equal(after.port, port);
  assert.notEqual(after.pid, before.pid);
  assert.deepEqual((await lsJson(tmp)).map((e) => [e.pid, e.port]), [[second.pid, port]]);

  const stop = await cli(tmp, ['stop', '--front', String(front)], { cwd: tmp.wt.a, env, ms: 20000 });
  assert.equal(stop.code, 0, stop.stderr);
  await second.exited;
  await waitFor(() => !pidAlive(after.pid), 5000, 'the server gone');
});

test('a server still starting when its daemon died: its wrapper tells the next daemon, and it is reused', async (t) => {
  const { tmp, front, env, first, daemon } = await setup(t, { serverArgs: ['--delay', '3000'], ready: false });
  await killDaemon(tmp, daemon);
  await first.ready; // it listens with no daemon to tell (said first, then the tell)
  await waitFor(() => /could not mark \S+ ready: .*asking again every 1 s/.test(first.stderr()), 5000,
    `the wrapper says the daemon did not hear it:\n${first.stderr()}`);

  const second = startRun(t, tmp, { cwd: tmp.wt.a, front, env, detached: true });
  await reuses(tmp, second);
  assert.doesNotMatch(second.stderr(), /\bkill \d+/, 'no kill instruction');
  await waitFor(() => /the daemon answers again: wt-a is marked ready/.test(first.stderr()), 5000, `the wrapper marked it ready:\n${first.stderr()}`);
  const served = await servedBy(front, tmp.wt.a);
  assert.deepEqual((await lsJson(tmp)).map((e) => [e.pid, e.state, e.whoami?.state]), [[first.pid, 'ready', 'verified']]);

  const stop = await cli(tmp, ['stop', '--front', String(front)], { cwd: tmp.wt.a, env, ms: 20000 });
  assert.equal(stop.code, 0, stop.stderr);
  await first.exited;
  await waitFor(() => !pidAlive(served.pid), 5000, 'the server gone');
  // The reusing run ends with the server it waited for.
  assert.deepEqual(await second.exited, { code: 0, signal: null });
  assert.match(second.stderr(), new RegExp(`pid ${first.pid}, which served wt-a, exited`));
});

// A user's report: the daemon was replaced by one that did not know the
// running wrapper (another state file), a second `wtproxy run` of the
// worktree registered with it, and the first wrapper, stopped with
// SIGTERM, unregistered by (front, worktree): the daemon dropped the
// second one's live server, every request of the worktree then waited
// start_timeout for a 503, and `restart`/`stop` said not-found.
test("an old wrapper the daemon never knew: its SIGTERM and ops leave the newer wrapper's entry", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  stopDaemonsAfter(t, tmp);
  const front = await freePort();
  const serve = (state) => startProxy(t, ['--listen', `127.0.0.1:${front}`, '--control', tmp.control, '--state', state]);
  const old = await serve(tmp.state);
  const first = startRun(t, tmp, { cwd: tmp.wt.a, front });
  await first.ready; // said before it is told: the daemon must have heard it
  await waitFor(async () => (await lsJson(tmp))[0]?.state === 'ready', 5000, 'the first server marked ready');
  await killDaemon(tmp, old.proc.pid);
  const px = await serve(path.join(tmp.root, 'fresh.json'));
  const second = startRun(t, tmp, { cwd: tmp.wt.a, front });
  const port = await second.ready;

  process.kill(first.pid, 'SIGTERM');
  await first.exited;
  assert.deepEqual((await lsJson(tmp)).map((e) => [e.pid, e.port, e.state]), [[second.pid, port, 'ready']]);
  assert.equal((await servedBy(front, tmp.wt.a)).port, port);
  assert.match(first.stderr(), new RegExp(`wtproxy: ${tmp.wt.a} on front :${front} is served by another wrapper now: pid ${second.pid} \\(.*wt-server\\.mjs.*\\), port ${port}, registered \\S+ ago\\. Pid ${first.pid}, which sent unregister, is not that entry's wrapper \\(its own registration was replaced\\), so the entry is left as it is\n`));
  assert.doesNotMatch(first.stderr(), /warning: could not unregister/);
  assert.doesNotMatch(px.stderr(), /dropped /);
  assert.match(px.stderr(), new RegExp(`left ${tmp.wt.a} \\(front :${front}, pid ${second.pid}, port ${port}\\) as it is: pid ${first.pid}, not its wrapper, sent unregister`));

  // Any other op of a wrapper that is not the entry's is refused too,
  // with the kill of the sender, whose own server gets no request.
  const late = await control(tmp.control, { op: 'restarting', front, worktree: tmp.wt.a, pid: process.pid });
  assert.equal(late.error, 'conflict', JSON.stringify(late));
  assert.match(late.message, new RegExp(`not that entry's wrapper .* left as it is; its own server gets no request through wtproxy: stop it: kill ${process.pid}$`));
  assert.equal(late.holder.pid, second.pid);
  assert.deepEqual((await lsJson(tmp)).map((e) => [e.pid, e.state]), [[second.pid, 'ready']]);

  // A person's `wtproxy unregister` (no wrapper's pid) still drops it.
  const un = await cli(tmp, ['unregister', '--front', String(front)], { cwd: tmp.wt.a });
  assert.equal(un.code, 0, un.stderr);
  assert.deepEqual(await lsJson(tmp), []);
});
