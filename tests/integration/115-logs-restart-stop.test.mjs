// 115: `wtproxy logs`, `wtproxy restart` and `wtproxy stop` on a worktree's
// server started by `wtproxy run`: the wrapper keeps the server's output
// on its own stdout AND in a log the registration names; restart gives a
// new server on the same port behind the same wrapper; stop ends the
// server's tree, its registration, and a response still streaming from it;
// a server not started by wtproxy run, a worktree with nothing registered
// and a server that will not come back are refused or reported with what
// to do (and the log's last lines); a restart of one that never listens
// says at once what it waits for; restart and stop reach the processes
// the command left in the background.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, cli, cliEnv, lsJson, getWorktree, waitFor, pidAlive, sleeper } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { runServer, ready, ctlServer } from './lib/ctl.mjs';

test('logs: the output is relayed and logged; -n; -f follows', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const run = runServer(t, tmp, tmp.wt.a, px.port);
  const e = await ready(tmp, tmp.wt.a);
  assert.ok(e.log && e.log.startsWith(path.join(process.env.XDG_STATE_HOME, 'wtproxy', 'servers')), JSON.stringify(e));
  // Still on the wrapper's stdout, as a terminal or Playwright's webServer reads it.
  await waitFor(() => /ctl-server \d+ starting <script>/.test(run.out.stdout), 5000, 'relayed stdout');
  const logs = await cli(tmp, ['logs'], { cwd: tmp.wt.a });
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /ctl-server \d+ starting <script>alert\(1\)<\/script>/);
  assert.equal((await getWorktree(px.port, tmp.wt.a, '/hello')).status, 200);
  await waitFor(async () => /request 1 \/hello/.test((await cli(tmp, ['logs', tmp.wt.a, '-n', '1'])).stdout), 5000, 'the request logged');
  const last = await cli(tmp, ['logs', tmp.wt.a, '-n', '1']);
  assert.equal(last.stdout.trim().split('\n').length, 1, last.stdout);

  // -n 1: the last line, printed once -f has its place at the end (a
  // request before that would be missed, however slow the CLI starts).
  const follow = spawn(wtproxyBin, ['logs', '-f', '-n', '1'], { cwd: tmp.wt.a, env: { ...process.env, ...cliEnv(tmp) } });
  t.after(() => follow.kill('SIGKILL'));
  let followed = '';
  follow.stdout.on('data', (d) => { followed += d; });
  await waitFor(() => /request 1 \/hello/.test(followed), 10000, 'logs -f -n 1 printed the last line');
  assert.equal((await getWorktree(px.port, tmp.wt.a, '/followed')).status, 200);
  await waitFor(() => /request 2 \/followed/.test(followed), 5000, 'logs -f printed the new line');
  assert.doesNotMatch(followed, /starting/, '-n 1 printed older lines');
  follow.kill('SIGINT');

  const usage = await cli(tmp, ['logs', '--front', 'x'], { cwd: tmp.wt.a });
  assert.equal(usage.code, 2);
});

test('logs and refusals given a subfolder mean its worktree; a folder in none is said to be', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  runServer(t, tmp, tmp.wt.a, px.port);
  await ready(tmp, tmp.wt.a);
  // An agent cd'ed into app/ of wt-a, frontend/ of wt-b.
  fs.mkdirSync(path.join(tmp.wt.a, 'app'));
  fs.mkdirSync(path.join(tmp.wt.b, 'frontend'));
  await waitFor(async () => /ctl-server \d+ starting/.test((await cli(tmp, ['logs', 'app'], { cwd: tmp.wt.a })).stdout), 5000,
    'logs app shows wt-a\'s server log');
  assert.equal((await getWorktree(px.port, tmp.wt.b)).status, 503);
  const refused = await cli(tmp, ['refusals', path.join(tmp.wt.b, 'frontend')]);
  assert.equal(refused.code, 0, refused.stderr);
  assert.match(refused.stdout, /GET \/ -> 503 no-backend on :\d+/, refused.stdout);
  for (const cmd of ['logs', 'refusals']) {
    const nowhere = await cli(tmp, [cmd, tmp.root]);
    assert.equal(nowhere.code, 2, nowhere.stdout);
    assert.match(nowhere.stderr, new RegExp(`wtproxy ${cmd}: ${tmp.root} is not inside a git worktree`), nowhere.stderr);
  }
});

test('restart: a new server behind the same wrapper, ready again', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  runServer(t, tmp, tmp.wt.a, px.port);
  const before = await ready(tmp, tmp.wt.a);
  const first = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body);
  const r = await cli(tmp, ['restart'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /restarted and ready/);
  const [after] = await lsJson(tmp);
  assert.equal(after.state, 'ready');
  assert.equal(after.pid, before.pid, 'the wrapper is the same');
  assert.equal(after.port, before.port, 'the port is the same');
  const second = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body);
  assert.notEqual(second.pid, first.pid, 'the server is new');
  assert.equal(pidAlive(first.pid), false, 'the old server still runs');
  // The restart is in the log too.
  assert.match((await cli(tmp, ['logs', tmp.wt.a])).stdout, /wtproxy: the daemon asked to restart .*: restarting it/);
});

test('restart of a server run as the daemon runs a .wtproxy start (/bin/sh -c START): its log names START, not /bin/sh', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const start = `${process.execPath} ${ctlServer} {port}`;
  const proc = spawn(wtproxyBin, ['run', '--front', String(px.port), '--', '/bin/sh', '-c', start],
    { cwd: tmp.wt.a, stdio: 'ignore', env: { ...process.env, ...cliEnv(tmp) } });
  // SIGTERM: the wrapper stops its server's whole tree (a SIGKILL of the
  // wrapper left the server running after the test)
  t.after(async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    const stopped = await Promise.race([gone.then(() => true), new Promise((r) => setTimeout(r, 10000, false))]);
    if (!stopped) proc.kill('SIGKILL');
  });
  const e = await ready(tmp, tmp.wt.a);
  const r = await cli(tmp, ['restart'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
  const server = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;
  t.after(async () => {
    await waitFor(() => !pidAlive(server), 5000, 'the server to end').catch(() => {});
    assert.equal(pidAlive(server), false, `the test left its server (pid ${server}) running`);
  });
  const logs = (await cli(tmp, ['logs', tmp.wt.a])).stdout;
  const line = logs.split('\n').find((l) => l.includes('the daemon asked to restart'));
  assert.equal(line, `wtproxy: the daemon asked to restart wt-a's server, ${start.replace('{port}', e.port)} ` +
    '(its code changed and it did not reload it, or wtproxy restart): restarting it', logs);
});

// What a server's command left behind is its tree's too. A helper a shell
// put in the background, or Vite under `sh -c` once the shell died first,
// is an orphan: the wrapper adopts it (a subreaper), so a restart and a
// stop reach it, and reaps it before anything starts again. Before, such
// an orphan ran on after both, or, dead, waited as init's zombie, and Vite
// 8's project lock took that zombie for a running Vite and refused the
// restarted one ("Found another Vite dev process").
test('restart and stop reach a process the command left in the background, gone and reaped before the new start', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const pidFile = path.join(tmp.root, 'helper.pid');
  // An orphan from the start, and a child of the server in a session of
  // its own (setsid, as a detached spawn makes), both stopped with it.
  const start = `(sleep 1000 & echo $! >>${pidFile}); setsid sleep 1000 & echo $! >>${pidFile}; ` +
    `exec ${process.execPath} ${ctlServer} {port}`;
  const proc = spawn(wtproxyBin, ['run', '--front', String(px.port), '--', '/bin/sh', '-c', start],
    { cwd: tmp.wt.a, stdio: 'ignore', env: { ...process.env, ...cliEnv(tmp) } });
  const helpers = () => (fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').trim().split('\n').map(Number) : []);
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    for (const pid of helpers()) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  });
  await ready(tmp, tmp.wt.a);
  const first = helpers();
  assert.equal(first.length, 2);
  assert.ok(first.every(pidAlive), 'the helpers run');
  let r = await cli(tmp, ['restart'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
  for (const pid of first)
    assert.ok(!fs.existsSync(`/proc/${pid}`), `the old helper (pid ${pid}) is ${pidAlive(pid) ? 'still running' : 'an unreaped zombie'}`);
  const second = helpers().slice(2);
  assert.ok(second.length === 2 && second.every(pidAlive), 'the new start has its own helpers');
  r = await cli(tmp, ['stop'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
  await waitFor(() => !second.some(pidAlive), 5000, `the helpers (pids ${second}) to end with the stop`);
});

test('refusals: not started by wtproxy run, nothing registered, a bad service', async (t) => {
  const tmp = makeWorktrees(t, ['b', 'c']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const sl = sleeper(t);
  const reg = await cli(tmp, ['register', '--port', '45999', '--pid', String(sl.pid), '--front', String(px.port)], { cwd: tmp.wt.b });
  assert.equal(reg.code, 0, reg.stderr);
  for (const cmd of ['restart', 'stop']) {
    const r = await cli(tmp, [cmd], { cwd: tmp.wt.b });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /wtproxy register, not started by wtproxy run/, r.stderr);
    assert.match(r.stderr, /wtproxy run -- CMD/);
  }
  assert.ok(pidAlive(sl.pid), 'the registered process was signalled');
  assert.equal((await lsJson(tmp)).length, 1);
  const logs = await cli(tmp, ['logs'], { cwd: tmp.wt.b });
  assert.equal(logs.code, 1);
  assert.match(logs.stderr, /registered with wtproxy register/);

  const none = await cli(tmp, ['restart', tmp.wt.c]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no server of .*wt-c matches; registered for it: nothing/, none.stderr);
  const svc = await cli(tmp, ['stop', '--service', 'api'], { cwd: tmp.wt.b });
  assert.equal(svc.code, 1);
  assert.match(svc.stderr, /with service api matches; registered for it: front \d+/, svc.stderr);
  const bad = await cli(tmp, ['stop', '--service', 'Bad Name'], { cwd: tmp.wt.b });
  assert.equal(bad.code, 2);
});

test('a server that will not come back: exit 1, its log named with its last lines', async (t) => {
  const tmp = makeWorktrees(t, ['d']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const marker = path.join(tmp.root, 'ran-once');
  const run = runServer(t, tmp, tmp.wt.d, px.port, ['--once', marker]);
  const e = await ready(tmp, tmp.wt.d);
  const r = await cli(tmp, ['restart'], { cwd: tmp.wt.d, ms: 30000 });
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stderr, /did not come back/);
  assert.ok(r.stderr.includes(`its log, ${e.log}, ends with:`), r.stderr);
  assert.match(r.stderr, /ctl-server: giving up: .*ran-once says I ran before/);
  const { code } = await run.exited;
  assert.equal(code, 3, 'the wrapper passes on the server\'s status');
  assert.equal((await lsJson(tmp)).length, 0);
});

test('stop: the tree ends, the entry goes, a streaming response ends cleanly', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const run = runServer(t, tmp, tmp.wt.a, px.port);
  await ready(tmp, tmp.wt.a);
  const serverPid = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;
  // A response in flight: a chunked body that never ends on its own.
  const stream = { body: '', ended: false, closed: false, error: null };
  const done = new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: px.port, path: '/stream', agent: false,
      headers: { 'X-Wtproxy-Worktree': tmp.wt.a } }, (res) => {
      res.on('data', (d) => { stream.body += d; });
      res.on('end', () => { stream.ended = true; resolve(); });
      res.on('aborted', () => { stream.closed = true; resolve(); });
      res.on('close', () => { stream.closed = true; resolve(); });
      res.on('error', (e) => { stream.error = e; resolve(); });
    });
    req.on('error', (e) => { stream.error = e; resolve(); });
  });
  await waitFor(() => stream.body.split('tick').length > 3, 5000, 'the stream flows');
  const r = await cli(tmp, ['stop'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /stopped/);
  await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error('the streaming client was left hanging')), 10000))]);
  assert.ok(stream.ended || stream.closed, JSON.stringify(stream).slice(0, 200));
  assert.equal((await lsJson(tmp)).length, 0);
  assert.equal(pidAlive(serverPid), false, 'the server still runs');
  const { code, signal } = await run.exited;
  assert.ok(code !== null || signal, 'the wrapper exited');
});

// A server stuck starting (it never listens): `restart --front N` waited
// up to 60 s saying nothing, and a person or an agent at a terminal took
// it for a hang. It says at once what it waits for, how long at most and
// where the log is; when it gives up, the log's last lines.
test('restart of a server that never listens: says at once what it waits for, then the log', async (t) => {
  const tmp = makeWorktrees(t, ['e']);
  // restart waits as long as the daemon gives a start: its start_timeout
  const px = await startDaemon(t, tmp, ['--trust-registry', '--start-timeout', '4s']);
  startRun(t, tmp, { cwd: tmp.wt.e, front: px.port, serverArgs: ['--delay', '600000'] });
  const [e] = await waitFor(async () => { const l = await lsJson(tmp); return l.length && l; }, 10000, 'registered');
  assert.equal(e.state, 'starting');
  const started = Date.now();
  const p = spawn(wtproxyBin, ['restart', '--front', String(px.port)],
    { cwd: tmp.wt.e, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp) } });
  t.after(() => { if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); });
  let stderr = '', stdout = '';
  p.stderr.on('data', (d) => { stderr += d; });
  p.stdout.on('data', (d) => { stdout += d; });
  const exited = new Promise((res) => p.on('exit', (code) => res(code)));
  await waitFor(() => /waiting for/.test(stderr), 5000, 'restart to say what it waits for');
  assert.match(stderr, new RegExp(`^wtproxy restart: waiting for ${tmp.wt.e}'s server on front ${px.port} to listen \\(up to 4 s; its log: wtproxy logs ${tmp.wt.e} --front ${px.port}\\)\\n$`), stderr);
  assert.ok(Date.now() - started < 5000);
  const code = await Promise.race([exited, new Promise((res) => setTimeout(() => res('still running'), 30000))]);
  assert.equal(code, 1, stdout + stderr);
  assert.match(stderr, /did not come back: it did not listen within 4 s/, stderr);
  assert.ok(stderr.includes(`its log, ${e.log}, ends with:`), stderr);
  assert.match(stderr, /the daemon asked to restart .*: restarting it/, stderr);
  assert.match(stderr, new RegExp(`read it all: wtproxy logs ${tmp.wt.e} --front ${px.port}\\n$`), stderr);
});
