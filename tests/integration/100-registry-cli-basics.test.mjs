// 100: the registry CLI without a daemon, and its usage errors. Bad
// arguments exit 2 with one line that names the problem; a missing
// daemon with --no-autostart (or WTPROXY_NO_AUTOSTART=1) exits 1 naming
// `wtproxy serve`, and `run` then never starts its command. A --pid that
// does not run is refused by the daemon, with what to give instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, cli, git, lsJson, sanitizerClean, startDaemon } from './lib/registry.mjs';

const lines = (s) => s.trim().split('\n').length;

test('register without --pid and without --ttl: exit 2, says a TTL is needed', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const r = await cli(tmp, ['register', '--port', '5000'], { cwd: tmp.wt.a });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--ttl/);
  assert.match(r.stderr, /--pid/);
  assert.ok(lines(r.stderr) <= 2, r.stderr);
});

test('bad arguments: exit 2, one line naming the problem', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const cases = [
    [['register', '--port', 'abc', '--ttl', '1m'], /--port "abc"/],
    [['register', '--port', '5000', '--ttl', '30'], /--ttl "30"/],
    [['register', '--port', '5000', '--pid', '-4', '--ttl', '1m'], /--pid "-4"/],
    [['register', '--bogus'], /--bogus/],
    [['unregister', '--front', '70000'], /--front "70000"/],
    [['ls', 'extra'], /extra/],
    [['run', '--front', '8000'], /command to run/],
    [['run', '--nope', '--', 'true'], /--nope/],
    [['run', '--service', 'Web!', '--', 'true'], /service name "Web!"/],
    [['register', '--port', '5000', '--ttl', '1m', '--service', '-x'], /service name "-x"/],
  ];
  for (const [args, re] of cases) {
    const r = await cli(tmp, args, { cwd: tmp.wt.a });
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re, args.join(' '));
    assert.equal(lines(r.stderr), 1, `${args.join(' ')}: ${r.stderr}`);
  }
});

test('outside any worktree: exit 2, suggests --worktree', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m'], { cwd: tmp.root });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /not inside a git worktree/);
  assert.match(r.stderr, /--worktree/);
});

// The daemon places a caller only in a worktree git knows (host/worktree.c);
// run and register refuse any other folder at once, rather than register
// a server no request will ever reach (a 503 with no visible cause).
test('a pruned worktree, a broken .git, a subfolder as --worktree: run and register refuse, exit 2', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'p', 'g']);
  const px = await startDaemon(t, tmp);
  const front = ['--front', String(px.port)];
  // pruned: git forgets wt-p while its folder is away, and it comes back
  fs.renameSync(tmp.wt.p, `${tmp.wt.p}.away`);
  git(tmp.repo, 'worktree', 'prune');
  fs.renameSync(`${tmp.wt.p}.away`, tmp.wt.p);
  fs.writeFileSync(path.join(tmp.wt.g, '.git'), 'not a gitfile\n');
  fs.mkdirSync(path.join(tmp.wt.a, 'src'));
  const marker = path.join(tmp.root, 'started');
  const cases = [
    { cwd: tmp.wt.p, args: [], says: new RegExp(`${tmp.wt.p} is a worktree git no longer knows: .*gone.*git worktree add`) },
    { cwd: path.join(tmp.wt.a, 'src'), args: ['--worktree', tmp.wt.p], says: /is a worktree git no longer knows/ },
    { cwd: tmp.wt.g, args: [], says: /\.git is no valid \.git file .*git worktree repair/ },
    { cwd: tmp.root, args: ['--worktree', path.join(tmp.wt.a, 'src')],
      says: new RegExp(`inside the worktree ${tmp.wt.a}, not its top folder.*--worktree ${tmp.wt.a}`) },
  ];
  for (const { cwd, args, says } of cases) {
    const run = await cli(tmp, ['run', ...front, ...args, '--', 'touch', marker], { cwd });
    sanitizerClean(assert, run.stderr);
    assert.equal(run.code, 2, `run ${args.join(' ')} in ${cwd}: ${run.stderr}`);
    assert.match(run.stderr, says);
    assert.equal(lines(run.stderr), 1, run.stderr);
    const reg = await cli(tmp, ['register', ...front, ...args, '--port', '5000', '--ttl', '1m'], { cwd });
    assert.equal(reg.code, 2, `register ${args.join(' ')} in ${cwd}: ${reg.stderr}`);
    assert.match(reg.stderr, says);
  }
  assert.ok(!fs.existsSync(marker), 'run started its command in a folder it refused');
  assert.deepEqual(await lsJson(tmp), [], 'nothing was registered');
});

test('register --pid of a process that exited: exit 1, says so and what to give instead', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const pid = String(spawnSync('true').pid); // a process that ran and exited
  const r = await cli(tmp, ['register', '--front', String(px.port), '--port', '5000', '--pid', pid], { cwd: tmp.wt.a });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(lines(r.stderr), 1, r.stderr);
  assert.match(r.stderr.trim(), new RegExp(`pid ${pid} does not run \\(it exited, or is mistyped\\); give your server's pid .*--ttl 1h \\(bad-request\\)$`));
  assert.deepEqual(await lsJson(tmp), [], 'nothing was registered');
});

test('--help of each subcommand: exit 0, usage on stdout', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  for (const cmd of ['run', 'register', 'unregister', 'ls']) {
    const r = await cli(tmp, [cmd, '--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`usage: wtproxy ${cmd}`));
  }
  const top = await cli(tmp, ['--help']);
  for (const cmd of ['run', 'register', 'unregister', 'ls']) assert.match(top.stdout, new RegExp(`\\b${cmd}\\b`));
});

test('no daemon, --no-autostart: exit 1 naming `wtproxy serve`; run never starts CMD', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  // a daemon started by mistake would log to daemon.log under XDG_STATE_HOME
  // (the folder itself may be made: the message names that log)
  const env = { WTPROXY_NO_AUTOSTART: '', XDG_STATE_HOME: path.join(tmp.root, 'state') };
  const r = await cli(tmp, ['register', '--no-autostart', '--port', '5000', '--ttl', '1m'], { cwd: tmp.wt.a, env });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /no daemon answers on .*control\.sock/);
  assert.match(r.stderr, /wtproxy serve/);
  assert.match(r.stderr, new RegExp(`setsid -f wtproxy serve --control \\S+ >>${tmp.root}/state/wtproxy/daemon\\.log 2>&1`));
  assert.ok(!fs.existsSync(path.join(tmp.root, 'state', 'wtproxy', 'daemon.log')), 'a daemon was started');

  const marker = path.join(tmp.root, 'started');
  const run = await cli(tmp, ['run', '--no-autostart', '--', 'touch', marker], { cwd: tmp.wt.a, env });
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, /wtproxy serve/);
  assert.ok(!fs.existsSync(marker), 'run started its command without a daemon');

  // the variable does the same as the flag; ls never starts a daemon
  for (const args of [['register', '--port', '5000', '--ttl', '1m'], ['ls'], ['unregister']]) {
    const v = await cli(tmp, args, { cwd: tmp.wt.a });
    assert.equal(v.code, 1, `${args[0]}: ${v.stderr}`);
    assert.match(v.stderr, /wtproxy serve/, args[0]);
  }
});
