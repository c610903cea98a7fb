// 170: the /__whoami gate with stand-in dev servers (lib/wt-server.mjs,
// whose /__whoami is fixed at its start like the middleware's): a verified
// server serves; an edit makes it stale (held for stale_grace, then 409
// naming the files); --restart-on-stale restarts it and answers from the
// new process (again when an edit lands while it starts; one that comes
// back stale gets one more restart, then a 409 at once, and is restarted
// after the next edit); one whose /__whoami says taking_in for ever is
// held past stale_grace only until start_timeout, then refused saying so;
// an edit outside the declared patterns changes nothing; the
// inotify-less stat scan sees edits too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, get, getWorktree, lsJson, waitFor, sanitizerClean,
} from './lib/registry.mjs';

async function setup(t, daemonArgs = []) {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '400ms', ...daemonArgs]);
  return { tmp, px };
}

async function runIn(t, tmp, px, name, runArgs = []) {
  const run = startRun(t, tmp, { cwd: tmp.wt[name], front: px.port, runArgs });
  await run.ready;
  return run;
}

function refusedAs(r, reason) {
  assert.equal(r.headers['x-wtproxy-refused'], reason, `expected ${reason}: ${r.status} ${r.body}`);
  assert.ok(r.status >= 404, `a refusal's status is 404 or above, got ${r.status}`);
}

test('a verified server serves, and ls shows it verified', async (t) => {
  const { tmp, px } = await setup(t);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  await runIn(t, tmp, px, 'a');
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).worktree, tmp.wt.a);
  const [e] = (await lsJson(tmp)).filter((x) => x.worktree === tmp.wt.a);
  assert.equal(e.whoami.state, 'verified');
  assert.equal(e.whoami.checkout, tmp.wt.a);
  assert.equal(e.whoami.hash, e.whoami.disk_hash);
  sanitizerClean(assert, px.stderr());
});

test('an edit makes the server stale: refused after the grace, naming the file and the fix', async (t) => {
  const { tmp, px } = await setup(t);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const run = await runIn(t, tmp, px, 'a');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await new Promise((r) => setTimeout(r, 20)); // a later mtime than the server's start
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  const t0 = Date.now();
  const r = await getWorktree(px.port, tmp.wt.a);
  const held = Date.now() - t0;
  refusedAs(r, 'stale-code');
  assert.equal(r.status, 409);
  assert.ok(held >= 350, `held for the stale grace (400 ms), was ${held} ms`);
  assert.match(r.body, /your own server for .*wt-a/);
  assert.match(r.body, /1 file: app\.py/);
  assert.match(r.body, /wtproxy run --restart-on-stale/);
  const [e] = (await lsJson(tmp)).filter((x) => x.worktree === tmp.wt.a);
  assert.equal(e.whoami.state, 'stale');
  assert.notEqual(e.whoami.hash, e.whoami.disk_hash);
  assert.ok(e.whoami.refused >= 1);
  // The dashboard's API says the same, and lists the refusal.
  const [row] = JSON.parse((await get(px.port, {}, '/__wtproxy/api/backends')).body);
  assert.equal(row.status, 'stale');
  assert.match(row.status_reason, /app\.py/);
  const list = JSON.parse((await get(px.port, {}, '/__wtproxy/api/refusals')).body);
  assert.ok(list.some((x) => x.reason === 'stale-code' && x.status === 409), JSON.stringify(list));
  // The wrapper was not asked to restart: it was started without the flag.
  assert.doesNotMatch(run.stderr(), /restarting/);
});

test('--restart-on-stale: the request is held, the server restarted, the answer new', async (t) => {
  const { tmp, px } = await setup(t);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const run = await runIn(t, tmp, px, 'a', ['--restart-on-stale']);
  const before = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body);
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  const after = JSON.parse(r.body);
  assert.notEqual(after.pid, before.pid, 'answered by the restarted server');
  assert.equal(after.port, before.port, 'on the same port');
  assert.match(run.stderr(), /restarting it/);
  const [e] = (await lsJson(tmp)).filter((x) => x.worktree === tmp.wt.a);
  assert.equal(e.whoami.state, 'verified');
  assert.equal(e.restart_on_stale, true);
});

test('--restart-on-stale: an edit landing while the restarted server starts restarts it again, the request held', async (t) => {
  const { tmp, px } = await setup(t, ['--start-timeout', '15s']);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const pids = path.join(tmp.root, 'pids');
  // Each process fingerprints at its start and listens 1.2 s later: an edit
  // in between is one it never loaded, as a Go server's second save
  // landing while `go run` rebuilds.
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--restart-on-stale'],
    serverArgs: ['--delay', '1200', '--pids', pids] });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  const t0 = Date.now();
  const held = getWorktree(px.port, tmp.wt.a);
  await waitFor(() => fs.readFileSync(pids, 'utf8').trim().split('\n').length === 2, 10000);
  await new Promise((r) => setTimeout(r, 600)); // it has fingerprinted, not yet listening
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(3)\n');
  const r = await held;
  assert.equal(r.status, 200, r.body);
  const started = fs.readFileSync(pids, 'utf8').trim().split('\n').map(Number);
  assert.equal(started.length, 3, 'restarted twice');
  assert.equal(JSON.parse(r.body).pid, started[2], 'answered by the third process');
  assert.ok(Date.now() - t0 < 10000, `well before start_timeout (15 s): ${Date.now() - t0} ms`);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
});

test('--restart-on-stale: restarted and still stale: one more restart, then 409 at once; a later edit restarts it again', async (t) => {
  const { tmp, px } = await setup(t, ['--start-timeout', '15s']);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const stale = path.join(tmp.root, 'stale');
  const pids = path.join(tmp.root, 'pids');
  const started = () => fs.readFileSync(pids, 'utf8').trim().split('\n').map(Number);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--restart-on-stale'],
    serverArgs: ['--stale-while', stale, '--pids', pids] });
  await run.ready;
  const first = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body);
  // Its next process comes back with older code than the disk's.
  fs.writeFileSync(stale, '');
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  const t0 = Date.now();
  let r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'stale-code');
  assert.match(r.body, /wtproxy restarted your server for .*wt-a .*and it still reports older code/);
  assert.ok(Date.now() - t0 < 8000, `refused once it answered, not at start_timeout (15 s): ${Date.now() - t0} ms`);
  assert.equal(started().length, 3, 'restarted twice (one more for stale bytecode), not in a loop');
  assert.match(run.stderr(), /restarting it/);
  // The next edit is a new staleness: restarted, and served.
  fs.rmSync(stale);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(3)\n');
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).pid, started()[3], 'answered by the process the edit restarted');
  assert.notEqual(started()[3], first.pid);
  sanitizerClean(assert, px.stderr());
});

test('a server that says taking_in and never takes the change in: held past stale_grace for start_timeout, then 409 saying so', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '400ms', '--start-timeout', '3s']);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs: ['--taking-in'] });
  const own = await (await fetch(`http://127.0.0.1:${await run.ready}/__whoami`)).json();
  const since = Date.parse(own.taking_in.since);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200, 'taking_in never stops the disk\'s fingerprint passing');
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  // Held past stale_grace, until its taking_in is start_timeout old.
  let t0 = Date.now();
  let r = await getWorktree(px.port, tmp.wt.a);
  const held = Date.now() - t0;
  refusedAs(r, 'stale-code');
  assert.ok(held >= 400 && Date.now() - since >= 2950,
    `refused only once its taking_in was start_timeout (3 s) old: ${Date.now() - since} ms (held ${held} ms)`);
  assert.match(r.body, /it said it was taking the change in \(taking_in in its \/__whoami, since \d+s ago\) but did not report the new code within start_timeout/);
  assert.match(r.body, /Restart it: cd .*wt-a && wtproxy restart/);
  // Its taking_in is older than start_timeout now: stale_grace alone.
  t0 = Date.now();
  r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'stale-code');
  assert.ok(Date.now() - t0 < 1000, `a taking_in already start_timeout old holds no request longer than stale_grace, was ${Date.now() - t0} ms`);
  assert.doesNotMatch(run.stderr(), /restarting/);
  sanitizerClean(assert, px.stderr());
});

test('an edit outside the declared patterns (an e2e .ts test) does not make it stale', async (t) => {
  const { tmp, px } = await setup(t);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  await runIn(t, tmp, px, 'a');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  fs.mkdirSync(path.join(tmp.wt.a, 'e2e'));
  fs.writeFileSync(path.join(tmp.wt.a, 'e2e', 'cart.spec.ts'), 'test("x", () => {});\n');
  fs.mkdirSync(path.join(tmp.wt.a, 'node_modules', 'x'), { recursive: true });
  fs.writeFileSync(path.join(tmp.wt.a, 'node_modules', 'x', 'gen.py'), 'x = 1\n');
  const t0 = Date.now();
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.ok(Date.now() - t0 < 300, 'not held: nothing it loaded changed');
});

test('without inotify (whoami_inotify = off) every request scans, and sees the edit', async (t) => {
  const { tmp, px } = await setup(t, ['--whoami-inotify', 'off']);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  await runIn(t, tmp, px, 'a');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'lib.py'), 'y = 2\n');
  refusedAs(await getWorktree(px.port, tmp.wt.a), 'stale-code');
});

test('another worktree keeps being served while one is stale', async (t) => {
  const { tmp, px } = await setup(t, ['--stale-grace', '1500ms']);
  await runIn(t, tmp, px, 'a');
  await runIn(t, tmp, px, 'b');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  const stale = getWorktree(px.port, tmp.wt.a);
  const t0 = Date.now();
  const b = await getWorktree(px.port, tmp.wt.b);
  assert.equal(b.status, 200);
  assert.ok(Date.now() - t0 < 500, 'b is not held behind a\'s grace');
  refusedAs(await stale, 'stale-code');
  await waitFor(async () => (await lsJson(tmp)).length === 2, 2000, 'both entries live');
});

// The inotify watches pid holds: the `inotify wd:` lines of its inotify fds
// (the gate has one per watched worktree, a watch per folder).
function inotifyWatches(pid) {
  let n = 0;
  for (const f of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${f}`) !== 'anon_inode:inotify') continue;
      n += (fs.readFileSync(`/proc/${pid}/fdinfo/${f}`, 'utf8').match(/^inotify wd:/gm) || []).length;
    } catch { /* closed meanwhile */ }
  }
  return n;
}

test('a worktree whose server is gone is watched no more; a new server there is gated as before', async (t) => {
  const { tmp, px } = await setup(t);
  const pid = px.proc.pid;
  await runIn(t, tmp, px, 'b');
  assert.equal((await getWorktree(px.port, tmp.wt.b)).status, 200);
  const onlyB = await waitFor(() => inotifyWatches(pid), 2000, 'wt-b watched once verified');
  fs.mkdirSync(path.join(tmp.wt.a, 'pkg'));
  fs.writeFileSync(path.join(tmp.wt.a, 'pkg', 'app.py'), 'print(1)\n');
  const run = await runIn(t, tmp, px, 'a');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  const both = inotifyWatches(pid);
  assert.ok(both > onlyB, `wt-a's folders watched too: ${both} watches, ${onlyB} before`);

  run.proc.kill('SIGTERM'); // the wrapper stops its server and unregisters
  await run.exited;
  await waitFor(() => inotifyWatches(pid) === onlyB, 3000,
    `wt-a watched no more once its server is gone (${onlyB} watches, wt-b's, stay)`);
  fs.writeFileSync(path.join(tmp.wt.a, 'pkg', 'app.py'), 'print(2)\n'); // nobody to tell
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(inotifyWatches(pid), onlyB, 'an edit in a worktree nobody serves watches nothing');
  assert.equal((await getWorktree(px.port, tmp.wt.b)).status, 200, 'wt-b still served');

  // A new server for wt-a: watched again, and an edit after it started is caught.
  await runIn(t, tmp, px, 'a');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  assert.equal(inotifyWatches(pid), both, 'wt-a watched again');
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'pkg', 'app.py'), 'print(3)\n');
  const r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'stale-code');
  assert.match(r.body, /1 file: pkg\/app\.py/);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});
