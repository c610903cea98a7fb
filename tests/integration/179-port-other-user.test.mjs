// 179: a port held by another user's socket, on a shared dev box with one
// daemon per user (alice's daemon holds the port the team's Playwright
// config names). Bob cannot see alice's process in /proc, so the daemon's
// bind failure and doctor used to say "a process this user cannot see" /
// "a process of another user" with `ss -ltnp` as the fix, which shows bob
// nothing. Now they name whose it is (the socket's uid and its user, known
// from the kernel), say when it is that user's wtproxy daemon (it answers
// /__wtproxy/api/daemon as one, with its pid), and the way out: that user's
// `wtproxy stop --daemon`, or a port of bob's own that his tests must name.
// Alice is nobody (65534), bob is uid 65533 with a HOME of his own; the
// test runs as root, who sees every process, so both run under setpriv.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { startProxy, wtproxyBin } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const ALICE = 65534;
const BOB = 65533;
const canSwitch = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;
const skip = !canSwitch && 'needs root and setpriv to run processes as two other users';
// Alice's user name, as getpwuid(3) gives it ("nobody" on most systems).
const aliceName = canSwitch ? spawnSync('getent', ['passwd', String(ALICE)], { encoding: 'utf8' }).stdout.split(':')[0] : '';
const SELF_RE = fs.realpathSync(wtproxyBin).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const re = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// A folder only uid may enter, for a HOME, state and control socket.
function home(t, uid, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  removeAfter(t, dir);
  fs.chownSync(dir, uid, uid);
  fs.chmodSync(dir, 0o700);
  return dir;
}

// Bob's environment: his HOME, state and control socket; no autostart.
function bobEnv(dir) {
  return {
    HOME: dir, XDG_RUNTIME_DIR: dir, XDG_STATE_HOME: path.join(dir, 'state'),
    WTPROXY_CONTROL: path.join(dir, 'control.sock'), WTPROXY_NO_AUTOSTART: '1',
  };
}

// `wtproxy ARGS...` as bob, in his HOME (no worktree: the daemon check
// does not need one).
function asBob(dir, args, ms = 20000) {
  return runToExit('setpriv', [`--reuid=${BOB}`, `--regid=${BOB}`, '--clear-groups', wtproxyBin, ...args],
    { cwd: dir, env: bobEnv(dir), ms });
}

async function bobDoctor(dir, port) {
  const r = await asBob(dir, ['doctor', '--json', '--front', String(port)]);
  let report;
  try { report = JSON.parse(r.stdout); } catch { assert.fail(`doctor --json printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`); }
  return report.checks.find((c) => c.name === 'daemon');
}

// Alice's wtproxy daemon, on a port the kernel picks.
async function aliceDaemon(t) {
  const dir = home(t, ALICE, 'wtproxy-alice-');
  return startProxy(t, ['--control', path.join(dir, 'control.sock'), '--state', path.join(dir, 'registry.json')],
    { uid: ALICE, gid: ALICE, env: { HOME: dir, XDG_RUNTIME_DIR: dir, XDG_STATE_HOME: path.join(dir, 'state') } });
}

// Alice's program that is no wtproxy: a TCP listener that answers nothing.
async function aliceListener(t) {
  const code = "const s = require('node:net').createServer(() => {}); s.listen(0, '127.0.0.1', () => console.log(s.address().port));";
  const p = spawn(process.execPath, ['-e', code], { uid: ALICE, gid: ALICE, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => { try { p.kill('SIGKILL'); } catch { /* gone */ } });
  const port = await new Promise((resolve, reject) => {
    p.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    p.once('exit', (c) => reject(new Error(`alice's listener exited ${c}`)));
  });
  return { pid: p.pid, port };
}

test("another user's wtproxy daemon on the port: bob's daemon start and doctor name its user and pid, and the way out", { skip }, async (t) => {
  const alice = await aliceDaemon(t);
  const P = alice.port;
  const bob = home(t, BOB, 'wtproxy-bob-');
  const whose = `user ${re(aliceName)}'s wtproxy daemon \\(uid ${ALICE}, pid ${alice.proc.pid}\\), which serves that user's worktrees only`;

  // The daemon's bind failure: wtproxy serve, as the CLI's autostart runs it.
  const serve = await asBob(bob, ['serve', '--listen', String(P), '--control', path.join(bob, 'control.sock'),
    '--state', path.join(bob, 'registry.json')]);
  assert.equal(serve.code, 1, serve.stderr);
  assert.match(serve.stderr, new RegExp(`port ${P} on 127\\.0\\.0\\.1 is already in use by ${whose}; `
    + `as ${re(aliceName)}: wtproxy stop --daemon; or serve a port of your own: wtproxy serve --listen ${P + 1}, `
    + "and point your app's tests at it \\(their baseURL or port setting\\)"), serve.stderr);
  assert.doesNotMatch(serve.stderr, /cannot see/, serve.stderr);

  // The daemon a command autostarts: its log's end says the same.
  const conf = path.join(bob, 'wtproxy.conf');
  fs.writeFileSync(conf, `listen = ${P}\n`);
  fs.chownSync(conf, BOB, BOB);
  const auto = await runToExit('setpriv', [`--reuid=${BOB}`, `--regid=${BOB}`, '--clear-groups', wtproxyBin, 'dashboard'],
    { cwd: bob, env: { ...bobEnv(bob), WTPROXY_NO_AUTOSTART: '', WTPROXY_CONFIG: conf }, ms: 20000 });
  assert.equal(auto.code, 1, auto.stderr);
  assert.match(auto.stderr, new RegExp(`already in use by ${whose}; as ${re(aliceName)}: wtproxy stop --daemon;`), auto.stderr);

  // doctor with no daemon of bob's.
  let d = await bobDoctor(bob, P);
  assert.equal(d.status, 'problem');
  assert.match(d.detail, new RegExp(`^no wtproxy daemon answers for port ${P} \\(--front\\) \\(.*\\), and port ${P} is held by ${whose}$`), d.detail);
  assert.match(d.fix, new RegExp(`^as ${re(aliceName)}: wtproxy stop --daemon; or serve a port of your own: `
    + `setsid -f ${SELF_RE} serve --listen ${P + 1} >>\\S+ 2>&1, and point your app's tests at port ${P + 1} `), d.fix);

  // A command that starts no daemon (ls, why, refusals) gave the start
  // that fails on alice's port: now it names her daemon and the way out.
  const wtfile = path.join(bob, '.wtproxy');
  fs.writeFileSync(wtfile, `start = ${process.execPath} server.js {port}\nfront = ${P}\n`);
  fs.chownSync(wtfile, BOB, BOB);
  const ls = await asBob(bob, ['ls']);
  assert.equal(ls.code, 1, ls.stderr);
  assert.match(ls.stderr, new RegExp(`no daemon answers on ${re(path.join(bob, 'control.sock'))}, and port ${P}, `
    + `where one of yours would listen, is held by ${whose}: as ${re(aliceName)}: wtproxy stop --daemon; `
    + `or serve a port of your own: setsid -f wtproxy serve --control ${re(path.join(bob, 'control.sock'))} `
    + `--listen ${P + 1} >>\\S+ 2>&1, and point your app's tests at port ${P + 1} `), ls.stderr);
  fs.rmSync(wtfile);

  // doctor with bob's daemon running elsewhere: his is stopped before his own port is served.
  const bobs = await startProxy(t, ['--control', path.join(bob, 'control.sock'), '--state', path.join(bob, 'registry.json')],
    { uid: BOB, gid: BOB, env: bobEnv(bob) });
  d = await bobDoctor(bob, P);
  assert.equal(d.status, 'problem');
  assert.match(d.detail, new RegExp(`^the daemon \\(pid ${bobs.proc.pid}\\) listens on .*, not on port ${P} \\(--front\\): `
    + `requests to that port do not reach it, and port ${P} is held by ${whose}$`), d.detail);
  assert.match(d.fix, new RegExp(`^as ${re(aliceName)}: wtproxy stop --daemon; or serve a port of your own: `
    + `${SELF_RE} stop --daemon && setsid -f ${SELF_RE} serve --control ${re(path.join(bob, 'control.sock'))} `
    + `--state ${re(path.join(bob, 'registry.json'))} --listen ${bobs.port} --listen ${P + 1} `), d.fix);
});

test("another user's program that is no wtproxy: named with its user, never called a daemon", { skip }, async (t) => {
  const alice = await aliceListener(t);
  const P = alice.port;
  const bob = home(t, BOB, 'wtproxy-bob-');
  const whose = `a process of user ${re(aliceName)} \\(uid ${ALICE}\\)`;
  const ask = `ask ${re(aliceName)} to stop it \\(root sees which: sudo ss -ltnp 'sport = :${P}'\\); or serve a port of your own: `;

  const t0 = Date.now();
  const serve = await asBob(bob, ['serve', '--listen', String(P), '--control', path.join(bob, 'control.sock'),
    '--state', path.join(bob, 'registry.json')]);
  assert.equal(serve.code, 1, serve.stderr);
  assert.match(serve.stderr, new RegExp(`port ${P} on 127\\.0\\.0\\.1 is already in use by ${whose}; ${ask}`
    + `wtproxy serve --listen ${P + 1}, and point your app's tests at it`), serve.stderr);
  assert.doesNotMatch(serve.stderr, /wtproxy daemon \(|cannot see/, serve.stderr);
  assert.ok(Date.now() - t0 < 8000, 'a listener that never answers costs the start the probe\'s bound, not more');

  const d = await bobDoctor(bob, P);
  assert.equal(d.status, 'problem');
  assert.match(d.detail, new RegExp(`, and port ${P} is held by ${whose}$`), d.detail);
  assert.match(d.fix, new RegExp(`^${ask}setsid -f ${SELF_RE} serve --listen ${P + 1} `), d.fix);
});
