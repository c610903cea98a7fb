// 111: with no daemon, `register` and `run` start one in the background
// (and `restart` in a worktree whose .wtproxy declares its servers),
// say so on stderr (its pid and log under $XDG_STATE_HOME/wtproxy/), and
// proceed. The daemon outlives the command that started it and is not in
// its process group. Concurrent commands start one daemon between them.
// The config (WTPROXY_CONFIG) makes it listen on a kernel-picked port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { makeWorktrees, cli, cliEnv, lsJson, pidAlive, sanitizerClean, waitFor, autostartEnv, wtServer, startRun, curlFrom, control } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';

test('register with no daemon starts one, says so, and registers', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = autostartEnv(t, tmp);
  const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '10m'], { cwd: tmp.wt.a, env });
  const m = /wtproxy: started the daemon \(pid (\d+)\); log: (\S+)/.exec(r.stderr);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(m, r.stderr);
  const pid = Number(m[1]);
  assert.equal(m[2], path.join(tmp.root, 'state', 'wtproxy', 'daemon.log'));
  assert.match(fs.readFileSync(m[2], 'utf8'), /listening on 127\.0\.0\.1:\d+/);
  assert.ok(pidAlive(pid), 'the daemon did not outlive the command');
  const pgrp = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[2];
  assert.equal(pgrp, String(pid), 'the daemon does not lead its own process group (setsid)');
  const entries = await lsJson(tmp);
  assert.equal(entries.length, 1);
  assert.equal(entries[0].worktree, tmp.wt.a);

  // the next command finds it: no second start
  const again = await cli(tmp, ['unregister'], { cwd: tmp.wt.a, env });
  assert.equal(again.code, 0, again.stderr);
  assert.doesNotMatch(again.stderr, /started the daemon/);
  process.kill(pid, 'SIGTERM');
  await waitFor(() => !pidAlive(pid), 5000, 'daemon stopped');
  // Its log says who stopped it: a stray kill is found by its sender.
  assert.match(fs.readFileSync(m[2], 'utf8'), new RegExp(`stopping on SIGTERM from pid ${process.pid} \\(\\S*node\\b.*\\), uid ${process.getuid()}, whose parent is pid ${process.ppid} \\(\\S*node\\b.*\\): 0 connection\\(s\\) to finish\n`));
});

test('concurrent runs with no daemon start exactly one', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd', 'e', 'f']);
  const env = autostartEnv(t, tmp);
  const rs = await Promise.all(Object.values(tmp.wt).map((cwd) =>
    cli(tmp, ['run', '--', 'sh', '-c', 'exit 7'], { cwd, env })));
  const started = rs.flatMap((r) => [...r.stderr.matchAll(/started the daemon \(pid (\d+)\)/g)].map((m) => Number(m[1])));
  // On failure: the daemon's stop line first (it names its sender), the
  // run in question, the daemon's log (the only place a daemon that died
  // says why), then every run's words.
  const log = path.join(tmp.root, 'state', 'wtproxy', 'daemon.log');
  const text = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '');
  const said = (first = '') => `${/^wtproxy: stopping on .*$/m.exec(text())?.[0] ?? ''}\n${first}\n--- ${log}:\n` +
    `${text().slice(-2000) || '(none)'}\n` +
    rs.map((r) => `--- a run, exit ${r.code ?? r.signal}:\n${r.stderr}`).join('\n');
  for (const r of rs) assert.equal(r.code, 7, said(r.stderr));
  assert.equal(started.length, 1, said());
  const ls = await cli(tmp, ['ls', '--json']);
  assert.equal(ls.code, 0, said(ls.stderr));
  assert.deepEqual(JSON.parse(ls.stdout), [], said());
});

// In a container every process's session is 0 (its session leader is
// outside the pid namespace). The wrapper stops what its command left
// behind, sparing its own children in another session (the daemon it
// autostarted); session 0 was taken for "any session" there, and the
// wrapper that started the daemon stopped it when its command exited:
// the other runs could not unregister (CI twice, its runner in session 0).
// Here in a new pid namespace, as root (unshare); each run's exit code and
// words, then `ls`, from inside (the namespace's processes end with it).
test('in a container (session 0), the run that autostarted the daemon leaves it running when its command exits', async (t) => {
  const probe = await runToExit('unshare', ['--pid', '--fork', '--mount-proc', 'true']);
  if (probe.code !== 0) {
    t.skip(`no pid namespace here (unshare: ${probe.stderr.trim()})`);
    return;
  }
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd', 'e', 'f']);
  const env = autostartEnv(t, tmp);
  const script = [
    'ps -o sid= -p $$ > sid',
    ...Object.entries(tmp.wt).map(([k, wt]) =>
      `(cd ${wt} && "$WTP" run -- sh -c 'exit 7' 2>"$OUT/${k}.err"; echo $? > "$OUT/${k}.code") &`),
    'wait',
    '"$WTP" ls --json > ls.json 2> ls.err; echo $? > ls.code',
  ].join('\n');
  const r = await runToExit('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', script],
    { cwd: tmp.root, env: { ...cliEnv(tmp, env), WTP: wtproxyBin, OUT: tmp.root }, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
  const read = (f) => fs.readFileSync(path.join(tmp.root, f), 'utf8');
  assert.equal(read('sid').trim(), '0', 'the runs are in session 0');
  const log = path.join(tmp.root, 'state', 'wtproxy', 'daemon.log');
  const said = () => `${fs.existsSync(log) ? fs.readFileSync(log, 'utf8').slice(-2000) : '(no log)'}\n` +
    Object.keys(tmp.wt).map((k) => `--- ${k}: exit ${read(`${k}.code`).trim()}\n${read(`${k}.err`)}`).join('\n');
  assert.doesNotMatch(said(), /stopping on|could not unregister/, said());
  for (const k of Object.keys(tmp.wt)) assert.equal(read(`${k}.code`).trim(), '7', said());
  assert.equal(Object.keys(tmp.wt).filter((k) => /started the daemon/.test(read(`${k}.err`))).length, 1, said());
  assert.equal(read('ls.code').trim(), '0', read('ls.err'));
  assert.deepEqual(JSON.parse(read('ls.json')), [], said());
});

test('a daemon that cannot start: its log is shown, exit 1', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = autostartEnv(t, tmp);
  fs.writeFileSync(env.WTPROXY_CONFIG, 'no_such_key = 1\n');
  const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '10m'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /daemon\.log ends with:\n[^]*no_such_key/);
  assert.match(r.stderr, /unknown key "no_such_key" \(wtproxy serve --help lists the keys\)/);
  assert.match(r.stderr, /the daemon exited \(status 2\) before answering on \S+; its log \S+daemon\.log \(above\) says why; .*run it in the foreground to see: wtproxy serve$/m);
});

test('restart with no daemon, in a worktree whose .wtproxy declares a server: starts the daemon, then the server', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = autostartEnv(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} ${wtServer} {port}\n`);
  // WTPROXY_NO_AUTOSTART=1: the user's choice; the fix is said, nothing started.
  const off = await cli(tmp, ['restart'], { cwd: tmp.wt.a, env: { ...env, WTPROXY_NO_AUTOSTART: '1' } });
  assert.equal(off.code, 1, off.stderr);
  assert.match(off.stderr, /no daemon answers on \S+; start one, in the background: setsid -f wtproxy serve/);
  const r = await cli(tmp, ['restart'], { cwd: tmp.wt.a, env, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stderr, /wtproxy: started the daemon \(pid \d+\); log: /);
  // A .wtproxy without sections: its one server has no name to print.
  // It says what it waits for meanwhile, and the time the start took, as a
  // restarted server's lines do: a long start is never a silent command.
  // So does its /__whoami verdict, as a restarted server's line does.
  const took = /^wtproxy: (\S+)'s server on front 8000 started and ready in (\d+\.\d) s, /m.exec(r.stdout);
  assert.equal(r.stdout, `wtproxy: the server of ${tmp.wt.a} does not run; starting it from its .wtproxy\n` +
    `wtproxy: ${tmp.wt.a}'s server on front 8000 started and ready in ${took?.[2]} s, verified: serves the code on disk\n`);
  assert.ok(Number(took[2]) > 0 && Number(took[2]) < 30, r.stdout);
  assert.match(r.stderr, new RegExp(`^wtproxy restart: waiting for the server of ${tmp.wt.a} \\(front 8000\\) to listen \\(up to 60 s; its log: wtproxy logs ${tmp.wt.a}\\)$`, 'm'), r.stderr);
  const entries = await lsJson(tmp);
  assert.deepEqual(entries.map((e) => [e.worktree, e.state]), [[tmp.wt.a, 'ready']]);
  // A server the daemon started outlives it: stop it here, by its worktree.
  const stop = await cli(tmp, ['stop'], { cwd: tmp.wt.a, env, ms: 30000 });
  assert.equal(stop.code, 0, stop.stderr);
  await waitFor(() => !pidAlive(entries[0].pid), 10000, 'the server to end');
});

// Without a config, the daemon a command starts listens where that command
// says its server's callers call: `run --front F` in an app with no
// .wtproxy got a daemon on 8000 and a warning that it did not listen on F.
test('run --front F with no daemon and no config: the daemon it starts listens on F', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = autostartEnv(t, tmp, { WTPROXY_CONFIG: '' });
  const free = net.createServer();
  await new Promise((r) => free.listen(0, '127.0.0.1', r));
  const front = free.address().port;
  await new Promise((r) => free.close(r));
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front, env });
  await run.ready;
  assert.doesNotMatch(run.stderr(), /does not listen|listens on .*not on port/, run.stderr());
  const got = await curlFrom(tmp.wt.a, front, '/');
  assert.equal(got.status, 200, `the --front answers: ${got.body}\n${run.stderr()}`);
  assert.equal(got.worktree, tmp.wt.a);
  const ping = await control(tmp.control, { op: 'ping' });
  assert.deepEqual(ping.listen.map((a) => a.replace(/^.*:/, '')).filter((p) => p !== String(front)), [],
    `it listens on ${front} only, not also 8000: ${JSON.stringify(ping.listen)}`);
});

test("ls with no daemon and a config without listen lines: the start it prints serves the .wtproxy's fronts", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const conf = path.join(tmp.root, 'registry-only.conf');
  fs.writeFileSync(conf, '# a config for the registry only: no listen lines\nregistry =\n');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `[service web]\nfront = 8101\nstart = true {port}\n\n[service api]\nfront = 8100\nstart = true {port}\n`);
  const r = await cli(tmp, ['ls'], { cwd: tmp.wt.a, env: { WTPROXY_CONFIG: conf } });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`start one, in the background: setsid -f wtproxy serve --control ${tmp.control} --listen 8101 --listen 8100 >>`));
});

// A daemon that died left registrations on front P in the state file. The
// start a command prints from a folder outside any worktree listened on
// 8000 alone: the next daemon adopted the servers, and P, where their
// callers call, answered nothing. It names P, and pasted, serves it.
test('ls outside any worktree after the daemon died: the start it prints listens on the fronts of the registrations it adopts', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = autostartEnv(t, tmp, { WTPROXY_CONFIG: '' });
  const free = net.createServer();
  await new Promise((r) => free.listen(0, '127.0.0.1', r));
  const front = free.address().port;
  await new Promise((r) => free.close(r));
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front, env });
  await run.ready;
  const first = await control(tmp.control, { op: 'ping' });
  process.kill(first.pid, 'SIGKILL');
  await waitFor(() => !pidAlive(first.pid), 5000, 'the daemon to die');

  const r = await cli(tmp, ['ls'], { cwd: tmp.root, env: { ...env, WTPROXY_NO_AUTOSTART: '1' } });
  assert.equal(r.code, 1, r.stderr);
  const m = /start one, in the background: (setsid -f wtproxy serve .*)$/m.exec(r.stderr);
  assert.ok(m, r.stderr);
  assert.match(m[1], new RegExp(`^setsid -f wtproxy serve --control ${tmp.control} --listen ${front} >>\\S+ 2>&1$`));

  const pasted = await runToExit('/bin/sh', ['-c', m[1]], {
    cwd: tmp.root,
    env: { ...cliEnv(tmp, env), PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` },
  });
  assert.equal(pasted.code, 0, pasted.stderr);
  await waitFor(async () => (await control(tmp.control, { op: 'ping' }).catch(() => null)) !== null, 5000, 'the pasted daemon to answer');
  const got = await curlFrom(tmp.wt.a, front, '/');
  assert.equal(got.status, 200, `the adopted server's front answers: ${got.body}`);
  assert.equal(got.worktree, tmp.wt.a);
});

// `wtproxy stop --daemon` and, at once, `wtproxy run` (a Playwright
// webServer started as an upgrade stops the daemon): the stopping daemon
// closes the run's connection unanswered (it resets the connections it
// did not accept yet). The run waits for it to be gone and starts the next
// one, as with none; it used to fail with "the daemon closed the
// connection without a reply". The real race is rare here (one run in
// twenty), so a stand-in for the stopping daemon, a process that resets
// every connection on the control socket for 300 ms and exits, makes the
// case certain. The race itself is not run: a stop that lands after the
// run started the next daemon stops that one, as asked, and the run
// then fails by design (seen once in a session-0 CI run).
test('a run while the daemon stops: it waits for it to exit, then starts one', { timeout: 30000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = cliEnv(tmp, autostartEnv(t, tmp));
  const stopping = spawn(process.execPath, ['-e', `
    const net = require('node:net');
    const srv = net.createServer((c) => c.on('data', () => c.resetAndDestroy()));
    srv.listen(process.argv[1], () => { console.log('listening'); setTimeout(() => srv.close(() => process.exit(0)), 300); });
  `, tmp.control], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => stopping.kill('SIGKILL'));
  await new Promise((resolve) => stopping.stdout.once('data', resolve));
  const run = await cli(tmp, ['run', '--', 'sh', '-c', 'exit 7'], { cwd: tmp.wt.a, env });
  assert.equal(run.code, 7, run.stderr);
  assert.notEqual(stopping.exitCode, null, 'the run went on only once the stopping one had exited');
  assert.match(run.stderr, /wtproxy: the daemon \(pid \d+\) closed the connection without a reply: it is stopping; waiting for it to exit \(at most 10 s\)\n(.*\n)*.*started the daemon \(pid \d+\)/,
    `it says why it waits, then that it started one:\n${run.stderr}`);
});
