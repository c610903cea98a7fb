// 188: wtproxy run and wtproxy register from inside a pid namespace of
// their own, as agents' sandboxes run commands (bwrap --unshare-pid,
// unshare --pid). The wrapper registered its own pid as that namespace
// numbers it (1 under unshare --pid --fork), which names another process
// in the daemon's (init, kthreadd): the entry never expired after a kill
// -9 of the whole sandbox, its worktree stayed "already served", and a
// kill of "the pid ls shows" would have hit that other process. The
// daemon now numbers a wrapper by its connection (SO_PEERCRED and
// /proc/PID/status's NSpid); a pid of that namespace other than the
// caller's own is refused, saying so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { makeWorktrees, startDaemon, cliEnv, cli, lsJson, getWorktree, get, autostartEnv, waitFor, sanitizerClean, wtServer } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { freePort } from './lib/whoami.mjs';
import { runToExit } from './lib/conformance.mjs';

// `unshare --pid --fork --mount-proc ARGS` in cwd, in a process group of
// its own (killed whole at the test's end); { proc, out() }.
function inPidNamespace(t, tmp, cwd, args, env = {}) {
  const proc = spawn('unshare', ['--pid', '--fork', '--mount-proc', ...args], {
    cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp), ...env },
  });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  t.after(() => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } });
  return { proc, out: () => out };
}

test('wtproxy run in a pid namespace: registered by its pid here, served, and dropped when the sandbox is killed', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = inPidNamespace(t, tmp, tmp.wt.a,
    [wtproxyBin, 'run', '--front', String(px.port), '--', process.execPath, wtServer, '{port}']);
  await waitFor(() => /is ready on/.test(run.out()), 15000, `ready:\n${run.out()}`);
  const [e] = await lsJson(tmp);
  assert.notEqual(e.pid, 1, 'not its pid in the sandbox');
  const cmdline = fs.readFileSync(`/proc/${e.pid}/cmdline`, 'utf8').split('\0');
  assert.deepEqual(cmdline.slice(1, 3), ['run', '--front'], `pid ${e.pid} is the wrapper: ${cmdline.join(' ')}`);
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  process.kill(-run.proc.pid, 'SIGKILL'); // the sandbox, whole, as Playwright's teardown
  await waitFor(async () => (await lsJson(tmp)).length === 0, 10000, 'the entry dropped');
  sanitizerClean(assert, px.stderr());
});

test('wtproxy register --pid of another process of its pid namespace: refused, saying why and what to do', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const reg = inPidNamespace(t, tmp, tmp.wt.a, ['sh', '-c',
    `sleep 30 & ${wtproxyBin} register --front ${px.port} --port 9 --pid $!; echo "exit $?"`]);
  await waitFor(() => /exit \d+/.test(reg.out()), 10000, reg.out());
  assert.match(reg.out(), /exit 1/, reg.out());
  assert.match(reg.out(), /pid \d+ is a pid of the pid namespace your command runs in \(a sandbox: bwrap --unshare-pid, unshare --pid, a container\), which this daemon cannot see nor name: register it from outside that namespace, or start the server with wtproxy run/, reg.out());
  assert.equal((await lsJson(tmp)).length, 0);
  sanitizerClean(assert, px.stderr());
});

// A daemon autostarted by a `wtproxy run` inside a sandbox runs in the
// sandbox's pid namespace: it cannot place a caller from outside. Its
// ping said pid 1 (its own number), doctor called it ok, and `stop
// --daemon` would signal pid 1 here. doctor now says it is sandboxed,
// with the fix; `stop --daemon` stops the daemon itself, by the pid the
// kernel gives this side of the control socket.
test('a daemon started inside a pid namespace: doctor says it cannot place callers from outside; stop --daemon stops it, not pid 1', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const daemon = inPidNamespace(t, tmp, tmp.root, [wtproxyBin, 'serve', '--control', tmp.control,
    '--state', tmp.state, '--listen', `127.0.0.1:${front}`]);
  await waitFor(async () => (await cli(tmp, ['ls'])).code === 0, 10000, `the daemon up:\n${daemon.out()}`);
  const doc = await cli(tmp, ['doctor', '--front', String(front)], { cwd: tmp.wt.a });
  assert.match(doc.stdout, /^problem +daemon +the daemon \(pid (\d+) here, 1 in its own pid namespace\) runs inside a pid namespace of its own \(started from a sandbox: bwrap --unshare-pid, unshare --pid\): it cannot see the processes outside it, so it places no caller from here/m, doc.stdout);
  const pid = Number(/the daemon \(pid (\d+) here/.exec(doc.stdout)[1]);
  assert.ok(pid > 1 && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('serve'), `pid ${pid} is the daemon`);
  assert.match(doc.stdout, new RegExp(`fix: outside the sandbox: kill ${pid} && tail --pid=${pid} -f /dev/null; `), doc.stdout);
  const stop = await cli(tmp, ['stop', '--daemon'], { cwd: tmp.wt.a, ms: 40000 });
  assert.equal(stop.code, 0, stop.stdout + stop.stderr);
  assert.match(stop.stdout, new RegExp(`stopped the daemon \\(pid ${pid}\\)`), stop.stdout);
  assert.equal(fs.existsSync(`/proc/${pid}`), false, 'the daemon is gone');
});

// The same daemon, autostarted by a wtproxy run inside the sandbox, as an
// agent's test run starts it when no daemon answers: the run says that it
// sees only the sandbox, and a caller outside gets a 503 saying why it
// could not be placed (it said only "send X-Wtproxy-Worktree").
test('a daemon autostarted inside a pid namespace: the run warns, and an unplaced caller outside is told why', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const run = inPidNamespace(t, tmp, tmp.wt.a,
    [wtproxyBin, 'run', '--', process.execPath, wtServer, '{port}'], autostartEnv(t, tmp));
  await waitFor(() => /is ready on .*\(front :\d+\)/.test(run.out()), 15000, `ready:\n${run.out()}`);
  assert.match(run.out(), /wtproxy: started the daemon \(pid \d+\)/, run.out());
  assert.match(run.out(), /warning: this daemon runs in a pid namespace of its own \(no kernel threads are seen here: a sandbox or a container\): it sees only this namespace's processes/, run.out());
  const front = Number(/\(front :(\d+)\)/.exec(run.out())[1]);
  const r = await get(front, {}, '/');
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /its caller could not be placed; send X-Wtproxy-Worktree: <path>\. This daemon runs in a pid namespace of its own \(it sees no kernel threads: it was started inside a sandbox or a container\)/, r.body);
  assert.ok(r.body.includes(`stop it there (wtproxy stop --daemon) and start it outside: wtproxy serve --listen ${front}.`), r.body);
});

// A worktree bind-mounted at another path, as a sandbox or a devcontainer
// shows it (bwrap --bind WT /workspace): doctor's note said "if it was
// moved, run `git worktree repair` in it", which, pasted there, recorded
// the sandbox's path in git, and the worktree became prunable outside. It
// now says that this is one folder at two paths, and not to repair.
test('a worktree bind-mounted at another path: the note says it is one folder at two paths, never to run git worktree repair', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const seen = `${tmp.root}/workspace`;
  fs.mkdirSync(seen);
  const r = await runToExit('unshare', ['-m', '--propagation', 'private', 'sh', '-c',
    `mount --bind ${tmp.wt.a} ${seen} && cd ${seen} && ${wtproxyBin} doctor`], { env: cliEnv(tmp) });
  assert.match(r.stdout, new RegExp(`^ok +worktree +${seen} \\(branch a\\); ${seen} is the worktree git records as ${tmp.wt.a}, seen here at another path \\(a bind mount: a sandbox or a container\\); do not run \`git worktree repair\` here`, 'm'), r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /if \S+ was moved, run `git worktree repair`/, r.stdout);
});

// The daemon started inside one sandbox, a wrapper run outside it (on the
// machine, or in another sandbox): the wrapper's pid names no process the
// daemon can see, or another one (two sandboxes' wrappers both said pid
// 2, and `wtproxy stop` in one worktree stopped the other's server). Its
// register is refused at once, saying why and the way out, never bound.
test('a wtproxy run outside the pid namespace of a sandboxed daemon: refused at once, never bound to a pid it cannot see', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const daemon = inPidNamespace(t, tmp, tmp.root, [wtproxyBin, 'serve', '--control', tmp.control,
    '--state', tmp.state, '--listen', `127.0.0.1:${front}`]);
  await waitFor(async () => (await cli(tmp, ['ls'])).code === 0, 10000, `the daemon up:\n${daemon.out()}`);
  const run = await cli(tmp, ['run', '--front', String(front), '--', process.execPath, wtServer, '{port}'],
    { cwd: tmp.wt.a, ms: 20000 });
  assert.notEqual(run.code, 0, run.stderr);
  assert.match(run.stderr, /your command runs outside the pid namespace this daemon runs in \(it was started inside a sandbox or a container, and sees none of your processes\)/, run.stderr);
  assert.equal((await lsJson(tmp)).length, 0, 'nothing registered');
});
