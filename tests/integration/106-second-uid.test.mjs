// 106: a registration belongs to the uid that made it. Another uid
// (nobody, through setpriv) sharing the daemon's control socket can
// neither remove it (not-permitted) nor replace it (conflict naming the
// holder); the entry is unchanged afterwards. A daemon answers no caller
// of another user with its own user's servers, and starts no other
// user's .wtproxy. Needs root (CI runs as root).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { wtproxyBin, startProxy, repoRoot } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { httpBackend, httpGet } from './lib/backends.mjs';
import { removeAfter } from './lib/cleanup.mjs';
import { makeWorktrees, startDaemon, cli, lsJson, sleeper, cliEnv, sanitizerClean } from './lib/registry.mjs';

const canSwitch = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

const asNobody = (tmp, args, cwd) => runToExit('setpriv',
  ['--reuid=65534', '--regid=65534', '--clear-groups', wtproxyBin, ...args],
  { cwd, env: cliEnv(tmp, { HOME: '/nonexistent' }) });

test('another uid can neither remove nor replace a registration', { skip: !canSwitch && 'needs root and setpriv' }, async (t) => {
  // The socket is shared between uids on purpose: its folder is 0755.
  const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
  const px = await startDaemon(t, tmp);
  fs.chmodSync(tmp.control, 0o666);
  const server = sleeper(t);
  const mine = await cli(tmp, ['register', '--port', '5000', '--pid', String(server.pid), '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(mine.code, 0, mine.stderr);
  const before = await lsJson(tmp);
  assert.equal(before.length, 1);

  // nobody reaches the daemon (so the refusals below are the daemon's)
  const ls = await asNobody(tmp, ['ls', '--json'], tmp.wt.a);
  assert.equal(ls.code, 0, ls.stderr);
  assert.equal(JSON.parse(ls.stdout).length, 1);

  const rm = await asNobody(tmp, ['unregister', '--front', String(px.port)], tmp.wt.a);
  sanitizerClean(assert, rm.stderr);
  assert.equal(rm.code, 1, rm.stderr);
  assert.match(rm.stderr, /not-permitted/);

  const take = await asNobody(tmp, ['register', '--port', '5001', '--ttl', '1h', '--front', String(px.port)], tmp.wt.a);
  sanitizerClean(assert, take.stderr);
  assert.equal(take.code, 1, take.stderr);
  // refused as a conflict naming the holder, or as not permitted
  assert.match(take.stderr, new RegExp(`by pid ${server.pid}\\b|not-permitted`), take.stderr);

  const after = await lsJson(tmp);
  assert.equal(after.length, 1);
  assert.equal(after[0].pid, server.pid);
  assert.equal(after[0].port, 5000);
  assert.equal(after[0].uid, 0);
});

// A daemon of one user cannot see another user's processes, so it cannot
// place their callers: such a caller is refused, saying whose daemon holds
// the port and how two users share it, never answered by this user's
// default backend (a shared dev box: bob's suite passed on alice's code)
// nor told to send X-Wtproxy-Worktree.
test('a caller of another user than the daemon\'s gets neither its default backend nor a guess',
  { skip: !canSwitch && 'needs root and setpriv' }, async (t) => {
    const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-nobody-'));
    removeAfter(t, home);
    fs.chownSync(home, 65534, 65534);
    const env = { HOME: home, XDG_RUNTIME_DIR: home, XDG_STATE_HOME: path.join(home, 'state') };
    const control = path.join(home, 'control.sock');
    const theirs = await httpBackend(t);
    const px = await startProxy(t, ['--whoami', 'off', '--backend', `127.0.0.1:${theirs.port}`, '--control', control,
      '--state', path.join(home, 'registry.json')], { uid: 65534, gid: 65534, env });
    // nobody's own server, registered: callers are looked for
    const reg = await runToExit('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', wtproxyBin,
      'register', '--port', String(theirs.port), '--ttl', '1h', '--front', String(px.port), '--worktree', tmp.wt.a],
    { cwd: tmp.wt.a, env: { ...env, WTPROXY_CONTROL: control, WTPROXY_NO_AUTOSTART: '1' } });
    assert.equal(reg.code, 0, reg.stderr);
    const before = theirs.requests.length;
    // this test runs as root: another user than the daemon's
    const r = await httpGet(px.port, '/api/greeting', { agent: false });
    const body = r.body.toString();
    assert.equal(r.status, 421, body);
    assert.equal(r.headers['x-wtproxy-error'], 'other-user');
    assert.equal(theirs.requests.length, before, 'nothing reached the daemon user\'s server');
    assert.match(body, new RegExp(`your process runs as uid 0, and this wtproxy daemon on :${px.port} as nobody \\(uid 65534\\)`), body);
    assert.match(body, /Fix: This port is held by the daemon of nobody \(uid 65534\): ask that user to stop it \(as them: wtproxy stop --daemon\)/, body);
    assert.doesNotMatch(body, /send X-Wtproxy-Worktree/, body);
  });

// A .wtproxy of another user than the daemon's is never started by it: its
// start line would run as the daemon's user (root, here), the same as that
// user running their code as this one. Not by a request naming its
// worktree, nor by `wtproxy restart`.
test('the daemon never starts another user\'s .wtproxy', { skip: !canSwitch && 'needs root and setpriv' }, async (t) => {
  const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
  const ran = path.join(tmp.root, 'ran-as');
  const px = await startDaemon(t, tmp);
  const file = path.join(tmp.wt.a, '.wtproxy');
  fs.writeFileSync(file, `start = id -u > ${ran}; sleep 30 # {port}\nfront = ${px.port}\n`);
  fs.chownSync(file, 65534, 65534);
  const r = await httpGet(px.port, '/', { agent: false, headers: { 'X-Wtproxy-Worktree': tmp.wt.a } });
  const body = r.body.toString();
  assert.equal(r.status, 421, body);
  assert.equal(r.headers['x-wtproxy-error'], 'other-user');
  assert.match(body, new RegExp(`${file} belongs to uid 65534, and this daemon runs as root \\(uid 0\\): it starts servers only from its own user's \\.wtproxy files`), body);
  const restart = await cli(tmp, ['restart'], { cwd: tmp.wt.a });
  assert.notEqual(restart.code, 0, restart.stdout);
  assert.match(restart.stderr, /belongs to uid 65534, and this daemon runs as root \(uid 0\)/, restart.stderr);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(fs.existsSync(ran), false, `nothing ran: ${fs.existsSync(ran) ? fs.readFileSync(ran, 'utf8') : ''}`);
  assert.deepEqual(await lsJson(tmp), []);
});

// A test runner of another user than the daemon's (runuser -u nobody --
// npx playwright test) in a worktree whose .wtproxy declares the front
// that daemon holds: each request gets its 421 other-user, and the
// Playwright reporter, which asks `wtproxy refusals` as that user (no
// daemon of its own answers), said "no wtproxy daemon answered when asked
// at the start of this run" though one had answered every request. It
// names the daemon holding the port and the way out.
test('another user\'s Playwright reporter names the daemon of another user that holds its port, and the way out',
  { skip: !canSwitch && 'needs root and setpriv' }, async (t) => {
    const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
    const px = await startDaemon(t, tmp);
    fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = node server.js {port}\nfront = ${px.port}\n`);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-nobody-'));
    removeAfter(t, home);
    fs.chownSync(home, 65534, 65534);
    const reporter = path.join(repoRoot, 'whoami/node/playwright-reporter.mjs');
    const config = path.join(tmp.wt.a, 'playwright.config.mjs');
    // Playwright's first call: a run no daemon answers, in a worktree with a
    // .wtproxy, is said before its tests as an error
    const script = `import R from ${JSON.stringify(reporter)};
      try { new R().onBegin({ configFile: ${JSON.stringify(config)}, workers: 1 }); console.log('nothing said'); }
      catch (e) { console.log(e.message); }`;
    const r = await runToExit('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups',
      process.execPath, '--input-type=module', '-e', script], {
      cwd: tmp.wt.a,
      // not in a CI (CI=true, as .ci/run runs): there the reporter says nothing
      env: { PATH: process.env.PATH, HOME: home, XDG_STATE_HOME: path.join(home, 'state'),
        WTPROXY_CONTROL: path.join(home, 'control.sock'), WTPROXY_BIN: wtproxyBin, CI: '' },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /no wtproxy daemon answered when asked at the start of this run, so/, r.stdout);
    assert.ok(r.stdout.includes(`(wtproxy-whoami/playwright: no wtproxy daemon of this user answered when asked at the start of this run: port ${px.port} is held by user root's wtproxy daemon (uid 0, pid ${px.proc.pid}), which serves that user's worktrees only and refuses this user's requests (421 other-user), so the tests' requests through it reached no server of this worktree; as root: wtproxy stop --daemon; or serve a port of your own: `), r.stdout);
    assert.match(r.stdout, new RegExp(`point your app's tests at port \\d+ \\(their baseURL or port setting\\); this run fails: its verdict is not on this worktree's code\\)`), r.stdout);
  });
