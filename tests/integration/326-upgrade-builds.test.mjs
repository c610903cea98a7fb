// 326: after an upgrade, old and new builds tell themselves apart. Every
// build said "wtproxy 0.1.0", 299 commits apart; installed over a running
// wtproxy, the daemon and the `wtproxy run` wrappers went on running the
// old binary (its deleted inode) while the new CLI said nothing: doctor
// "ok daemon", ls no word. Now --version, the daemon's ping, its dashboard
// and MCP say the build (the version, the commit, a mark for uncommitted
// changes); doctor's daemon check is a problem when the daemon is another
// build than the CLI, or runs a binary replaced on disk (an install does
// that: here a copy of the binary, deleted under its process), with the
// restart that fixes it; ls says it in a line, and names each wrapper of
// a replaced binary with the stop that replaces it (`wtproxy restart`
// restarts its server, not the wrapper). An older daemon, which does not
// say its build, is a control socket answering ping as b72a000 did.
// `wtproxy stop --daemon` with a request in flight says at once what it
// waits for, and for how long at most, rather than 10 s of silence; a
// `serve` meeting the old daemon on its socket names the stop to run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, cli, cliEnv, get, getWorktree, waitFor, control, lsJson, pidAlive, sanitizerClean, stopDaemonsAfter, curlFrom, wtServer } from './lib/registry.mjs';
import { wtproxyBin, repoRoot } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';

// A command pasted as printed, in a shell of this user with tmp's socket:
// async, so that this process reaps the daemon it started meanwhile.
const paste = (tmp, cmd, cwd = tmp.root) =>
  runToExit('/bin/sh', ['-c', cmd], { cwd, env: { ...process.env, ...cliEnv(tmp), ...env }, ms: 60000 });

const NO_PG = { PGHOST: '', PGPORT: '', PGDATABASE: '', WTPROXY_DB_SERVER: '', WTPROXY_REGISTRY: '' };
const env = { ...NO_PG, PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
const version = /version:\s*'([^']+)'/.exec(fs.readFileSync(path.join(repoRoot, 'meson.build'), 'utf8'))[1];
const build = execFileSync(wtproxyBin, ['--version']).toString().trim().replace(/^wtproxy /, '');

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// This binary copied into tmp, as an install puts one: deleted later under
// the process it runs, as the next install does.
function installedCopy(tmp) {
  const dir = path.join(tmp.root, 'old-install');
  fs.mkdirSync(dir);
  fs.copyFileSync(wtproxyBin, path.join(dir, 'wtproxy'));
  fs.chmodSync(path.join(dir, 'wtproxy'), 0o755);
  return path.join(dir, 'wtproxy');
}

async function doctorDaemon(tmp, cwd, front) {
  const r = await cli(tmp, ['doctor', '--json', '--front', String(front)], { cwd, env, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  return JSON.parse(r.stdout).checks.find((c) => c.name === 'daemon');
}

async function ls(tmp, cwd = tmp.root) {
  const r = await cli(tmp, ['ls'], { cwd, env });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  return r;
}

// A daemon of another build on tmp's control socket: ping answered with
// reply, list with no entries, any other op unknown, as an older daemon
// answers a newer op.
function otherDaemon(t, tmp, reply) {
  const server = net.createServer((s) => {
    let buf = '';
    s.on('data', (d) => {
      buf += d;
      for (let nl; (nl = buf.indexOf('\n')) >= 0; buf = buf.slice(nl + 1)) {
        const op = JSON.parse(buf.slice(0, nl)).op;
        const answer = op === 'ping' ? reply : op === 'list' ? { ok: true, entries: [] }
          : { ok: false, error: 'unknown-op', message: `unknown op "${op}"` };
        s.write(`${JSON.stringify(answer)}\n`);
      }
    });
    s.on('error', () => {});
  });
  t.after(() => server.close());
  return new Promise((resolve) => server.listen(tmp.control, resolve));
}

test('--version, the ping and the dashboard say the build: the version, then the commit of the source', async (t) => {
  const head = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short=12', 'HEAD']).toString().trim();
  assert.match(execFileSync(wtproxyBin, ['--version']).toString(),
    new RegExp(`^wtproxy ${version.replaceAll('.', '\\.')}\\+${head}(\\.dirty\\.[0-9a-f]{6})?\n$`));
  const tmp = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp);
  const ping = await control(tmp.control, { op: 'ping' });
  assert.equal(ping.build, build);
  assert.equal(ping.version, version, 'version stays the plain one, for older CLIs');
  const api = await get(px.port, {}, '/__wtproxy/api/daemon');
  assert.equal(api.status, 200, api.body);
  assert.equal(JSON.parse(api.body).build, build);
});

test('a daemon whose binary was replaced on disk: doctor a problem with the restart, ls one line; quiet before and after', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  stopDaemonsAfter(t, tmp);
  const copy = installedCopy(tmp);
  const px = await startDaemon(t, tmp, [], { bin: copy });
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;

  assert.equal((await doctorDaemon(tmp, tmp.wt.a, px.port)).status, 'ok', 'one build: nothing to say');
  assert.doesNotMatch((await ls(tmp)).stderr, /WARNING/);

  fs.rmSync(copy); // an install over it
  const d = await doctorDaemon(tmp, tmp.wt.a, px.port);
  assert.equal(d.status, 'problem', JSON.stringify(d));
  assert.equal(d.detail, `the daemon (pid ${px.proc.pid}) runs ${copy} as it was before that file was replaced on disk (an install or a rebuild since it started), so it may be another wtproxy than this command, both saying build ${build}: it behaves as the binary it started from until it is restarted`);
  assert.match(d.fix, new RegExp(`^wtproxy stop --daemon && setsid -f wtproxy serve --control ${tmp.control} --state ${tmp.state} --listen ${px.port} >>\\S+ 2>&1$`));
  const warned = (await ls(tmp)).stderr;
  assert.equal(warned, `wtproxy: WARNING: ${d.detail}; restart it as this one: ${d.fix}\n`);

  // Pasted as said: this build's daemon takes the server over; all quiet.
  const sh = await paste(tmp, d.fix, tmp.wt.a);
  assert.equal(sh.code, 0, sh.stderr + px.stderr());
  let ping;
  await waitFor(async () => (ping = await control(tmp.control, { op: 'ping' }).catch(() => null)) !== null, 15000, 'the new daemon');
  assert.notEqual(ping.pid, px.proc.pid);
  assert.equal((await doctorDaemon(tmp, tmp.wt.a, px.port)).status, 'ok');
  assert.doesNotMatch((await ls(tmp)).stderr, /WARNING/);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200, 'the server runs on, routed to');
});

test('a daemon of another build, or an older one that does not say its build: doctor and ls name both builds', async (t) => {
  for (const [reply, said] of [
    [{ ok: true, version: '0.1.0', pid: process.pid, machine: 'm', listen: null },
      `the daemon (pid ${process.pid}) is wtproxy 0.1.0, an older build than this command's ${build}, one that does not say its build`],
    [{ ok: true, version, build: `${version}+0123456789ab`, pid: process.pid, machine: 'm', listen: null },
      `the daemon (pid ${process.pid}) is wtproxy ${version}+0123456789ab, another build than this command's ${build}`],
  ]) {
    const tmp = makeWorktrees(t, ['a']);
    await otherDaemon(t, tmp, reply);
    const front = await freePort();
    const d = await doctorDaemon(tmp, tmp.wt.a, front);
    assert.equal(d.status, 'problem', JSON.stringify(d));
    assert.equal(d.detail, `${said}: it behaves as that build until it is restarted`);
    assert.match(d.fix, new RegExp(`^wtproxy stop --daemon && setsid -f wtproxy serve --listen ${front} >>\\S+ 2>&1$`));
    const r = await ls(tmp);
    assert.match(r.stderr, new RegExp(`^wtproxy: WARNING: ${said.replace(/[()+.]/g, '\\$&')}: it behaves as that build until it is restarted; restart it as this one: wtproxy stop --daemon && setsid -f wtproxy serve `));
    assert.equal(r.stderr.split('\n').length, 2, `one line: ${r.stderr}`);
  }
});

test('a wrapper of a replaced binary: ls names it and the stop that replaces it; pasted, the next one is this build', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const copy = installedCopy(tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, bin: copy });
  await run.ready;
  assert.doesNotMatch((await ls(tmp)).stderr, /WARNING/);
  fs.rmSync(copy);
  const warned = (await ls(tmp)).stderr;
  const fix = `cd ${tmp.wt.a} && wtproxy stop --front ${px.port}`;
  assert.equal(warned, `wtproxy: WARNING: ${tmp.wt.a}'s server on front ${px.port} runs under the wtproxy run (pid ${run.pid}) of ${copy}, replaced on disk since it started: that wrapper keeps its own build's behaviour (an older one's server outlives its kill -9), and wtproxy restart restarts the server, not the wrapper. Replace both: ${fix}; then the next wtproxy run starts it under this build\n`);
  const sh = await paste(tmp, fix);
  assert.equal(sh.code, 0, sh.stderr);
  await run.exited;
  startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await waitFor(async () => (await lsJson(tmp)).length === 1, 15000, 'the next wtproxy run');
  assert.doesNotMatch((await ls(tmp)).stderr, /WARNING/);
});

test('an upgrade under a daemon-started server: the daemon first, then its wrapper, each as ls says', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  stopDaemonsAfter(t, tmp);
  const front = await freePort();
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} ${wtServer} {port}\nfront = ${front}\n`);
  const copy = installedCopy(tmp);
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`], { bin: copy });
  assert.equal((await curlFrom(tmp.wt.a, front)).status, 200, 'started on demand');
  const [entry] = await lsJson(tmp);
  t.after(() => { try { process.kill(entry.pid, 'SIGKILL'); } catch { /* gone */ } });
  fs.rmSync(copy);

  const first = (await ls(tmp, tmp.wt.a)).stderr.split('\n');
  assert.equal(first.length, 3, first.join('\n'));
  assert.match(first[0], new RegExp(`^wtproxy: WARNING: the daemon \\(pid ${px.proc.pid}\\) runs ${copy} as it was before`));
  const restart = /restart it as this one: (.*)$/.exec(first[0])[1];
  const fix = `cd ${tmp.wt.a} && wtproxy stop --front ${front} && wtproxy restart --front ${front}`;
  assert.match(first[1], new RegExp(`runs under the wtproxy run \\(pid ${entry.pid}\\) of ${copy}, .* Replace both: ${fix.replace(/[.]/g, '\\.')}$`));

  const daemon = await paste(tmp, restart, tmp.wt.a);
  assert.equal(daemon.code, 0, daemon.stderr);
  await waitFor(async () => (await control(tmp.control, { op: 'ping' }).catch(() => null))?.pid > 0, 15000, 'the new daemon');
  const second = (await ls(tmp, tmp.wt.a)).stderr.split('\n');
  assert.equal(second.length, 2, `the wrapper alone now: ${second.join('\n')}`);
  const sh = await paste(tmp, fix, tmp.wt.a);
  assert.equal(sh.code, 0, sh.stdout + sh.stderr);
  const [now] = await lsJson(tmp);
  assert.notEqual(now.pid, entry.pid, 'a new wrapper');
  t.after(() => { try { process.kill(now.pid, 'SIGKILL'); } catch { /* gone */ } });
  assert.ok(!pidAlive(entry.pid), 'the old wrapper is gone');
  assert.doesNotMatch((await ls(tmp, tmp.wt.a)).stderr, /WARNING/);
});

test('stop --daemon with a request in flight says at once what it waits for, and how long at most', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const slow = getWorktree(px.port, tmp.wt.a, '/slow?ms=4000').catch((e) => e);
  await waitFor(async () => (await lsJson(tmp))[0].requests === 1, 5000, 'the request routed');
  const t0 = Date.now();
  const stop = spawn(wtproxyBin, ['stop', '--daemon'], { env: { ...process.env, ...cliEnv(tmp) } });
  let err = '', saidAt = 0;
  stop.stderr.on('data', (d) => { err += d; saidAt ||= Date.now() - t0; });
  const code = await new Promise((res) => stop.on('exit', res));
  const took = Date.now() - t0;
  assert.equal(code, 0, err);
  assert.equal(err, `wtproxy: the daemon (pid ${px.proc.pid}) refuses new connections and lets the 1 connection it had open finish first (requests in flight, WebSockets, open pages' event streams), for 10 s at most (its shutdown_timeout), then closes what is left; waiting\n`);
  assert.ok(saidAt < 2000 && took > 3000, `said after ${saidAt} ms, stopped after ${took} ms`);
  assert.equal((await slow).status, 200, 'the request in flight was answered');
});

// After an upgrade, the pasted `setsid -f wtproxy serve ...` meets the old
// daemon still serving: it exits in the background, its reason only in its
// log, which said "stop it first" without the command.
test('serve where a daemon already serves the control socket: the stop to run, and whose build to ask', async (t) => {
  const tmp = makeWorktrees(t, []);
  await startDaemon(t, tmp);
  const r = await runToExit(wtproxyBin, ['serve', '--control', tmp.control, '--state', tmp.state, '--listen', '127.0.0.1:0'],
    { env: { ...process.env, ...cliEnv(tmp) }, ms: 10000 });
  sanitizerClean(assert, r.stderr);
  assert.notEqual(r.code, 0);
  assert.ok(r.stderr.includes(`another wtproxy daemon already serves ${tmp.control} (wtproxy doctor says whether it is another build); stop it first, then run this command again: wtproxy stop --daemon; or give this one --control PATH\n`), r.stderr);
});
