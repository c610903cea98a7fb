// 075: systemd socket activation, without systemd. fixtures/sd-launch.py
// does what systemd does for wtproxy.socket: it makes the listening
// sockets, puts them at fd 3.., sets LISTEN_PID (its own pid, which the
// daemon keeps: it execs it), LISTEN_FDS and LISTEN_FDNAMES, and execs
// `wtproxy serve`. The daemon must serve those sockets (and only them),
// answer a connection queued before it ran, refuse an fd that is no
// listening TCP socket, take a Unix socket as its control socket, ignore
// sockets meant for another pid, keep the variables from its children, and
// drain on SIGTERM.
// (Not run under valgrind: the launcher would have to exec valgrind.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { repoRoot, wtproxyBin, rawBackend } from './lib/wtproxy.mjs';
import { requestResponder, exchange, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';
import { makeWorktrees, waitFor, cli } from './lib/registry.mjs';

const launcher = path.join(repoRoot, 'tests/integration/fixtures/sd-launch.py');
const python = '/usr/bin/python3';

// Launch `wtproxy serve ARGS` with sockets of `kinds` (see sd-launch.py) at
// fd 3... Resolves once the launcher has made them, with { proc, fds
// ([{fd, kind, addr, port}]), stderr(), exited, go() (--wait: let the
// daemon start), listening(n) (resolves with the ports of the daemon's
// first n "listening on" lines), stop(sig) }. Stopped by pid in t.after.
async function launch(t, kinds, args, { wait = false, pid = 'self', names, tmp } = {}) {
  const own = tmp || makeWorktrees(t, []);
  const argv = [launcher, ...(wait ? ['--wait'] : []), '--pid', pid, ...(names ? ['--names', names] : []),
    kinds.join(','), '--', wtproxyBin, 'serve', '--control', own.control, '--state', own.state, ...args];
  const proc = spawn(python, argv, { stdio: [wait ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  let err = '';
  const grew = new Set();
  const onData = (d) => { err += d; for (const f of grew) f(); };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  const exited = new Promise((res) => proc.on('close', (code, sig) => res({ code, sig })));
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); return exited; });
  // Resolves when fn(err) returns a value, rejects at exit or after 10 s.
  const until = (fn, what) => new Promise((resolve, reject) => {
    const check = () => {
      const v = fn(err);
      if (v === undefined) return;
      grew.delete(check); clearTimeout(timer); resolve(v);
    };
    const timer = setTimeout(() => { grew.delete(check); reject(new Error(`${what}: not in 10 s\n${err}`)); }, 10000);
    grew.add(check);
    exited.then(() => { if (grew.has(check)) { grew.delete(check); clearTimeout(timer); reject(new Error(`${what}: exited first\n${err}`)); } });
    check();
  });
  const fds = await until((e) => {
    const lines = [...e.matchAll(/^sd-launch: fd (\d+) (\S+) (\S+) (\d+)$/gm)];
    return lines.length === kinds.length
      ? lines.map((m) => ({ fd: Number(m[1]), kind: m[2], addr: m[3], port: Number(m[4]) })) : undefined;
  }, 'the launcher\'s sockets');
  return {
    proc, fds, exited,
    stderr: () => err,
    go: () => proc.stdin.end('go\n'),
    listening: (n) => until((e) => {
      const ports = [...e.matchAll(/^wtproxy: listening on (\S+):(\d+)/gm)].map((m) => Number(m[2]));
      return ports.length >= n ? ports : undefined;
    }, 'the daemon\'s listening lines'),
    stop(sig = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(sig);
      return exited;
    },
  };
}

function okBackend(t) {
  return rawBackend(t, requestResponder(() => 'HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nbackend'));
}

function getJson(port, urlPath) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => { try { resolve(JSON.parse(body)); } catch (e) { reject(new Error(`${res.statusCode}: ${body}`)); } });
    }).on('error', reject);
  });
}

const ipv6 = (() => {
  try {
    execFileSync(python, ['-c', 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))'], { stdio: 'ignore' });
    return true;
  } catch { return false; }
})();

test('the inherited sockets are served, and only they: one front port, from their bound port', { skip: !ipv6 && 'no IPv6 loopback here' }, async (t) => {
  const backend = await okBackend(t);
  const d = await launch(t, ['listen4', 'listen6'], ['--backend', `127.0.0.1:${backend.port}`, '--listen', '127.0.0.1:0'],
    { names: 'wtproxy.socket:wtproxy.socket' });
  const port = d.fds[0].port;
  assert.deepEqual(await d.listening(2), [port, port], d.stderr());
  await sleep(200); // any third "listening on" (the configured 127.0.0.1:0) would be out by now
  const err = d.stderr();
  assert.match(err, /listening on 127\.0\.0\.1:\d+ \(fd 3 wtproxy\.socket, socket activation\)/);
  assert.match(err, /listening on \[::1\]:\d+ \(fd 4 wtproxy\.socket, socket activation\)/);
  assert.match(err, /socket activation: serving the 2 socket\(s\) passed in LISTEN_FDS; the configured listen addresses are not bound/);
  assert.equal([...err.matchAll(/listening on/g)].length, 2, `only the inherited sockets:\n${err}`);
  assert.doesNotMatch(err, /warning/i, 'loopback sockets: no warning');

  for (const host of ['127.0.0.1', '::1']) {
    const r = await exchange(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', { host });
    assert.equal(r.status, 200, `via ${host}: ${r.raw}`);
    assert.equal(r.decoded, 'backend');
  }
  const daemon = await getJson(port, '/__wtproxy/api/daemon');
  assert.deepEqual(daemon.fronts, [port], 'the front port is the inherited sockets\' port');
  assert.deepEqual(daemon.listen, [`127.0.0.1:${port}`, `[::1]:${port}`]);

  // SIGHUP reloads and the inherited sockets keep serving.
  d.proc.kill('SIGHUP');
  await waitFor(() => /reloaded configuration/.test(d.stderr()), 5000, 'reloaded');
  const r = await exchange(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  assert.equal(r.status, 200, `after SIGHUP: ${r.raw}`);
  const exit = await d.stop();
  assert.equal(exit.code, 0, d.stderr());
  assertNoSanitizerReport(d);
});

// 074's warning holds for a socket systemd made, with the socket unit's fix.
test('an inherited socket that is not loopback gets the WARNING', async (t) => {
  const d = await launch(t, ['listenany'], []);
  const port = d.fds[0].port;
  assert.deepEqual(await d.listening(1), [port]);
  const warn = d.stderr().split('\n').filter((l) => /warning/i.test(l)).join('\n');
  assert.match(warn, new RegExp(`WARNING: listening on 0\\.0\\.0\\.0:${port}, which is not loopback`), d.stderr());
  assert.match(warn, /ListenStream=127\.0\.0\.1:\d+/, 'the fix is in the socket unit, not --listen');
  assert.equal((await d.stop()).code, 0, d.stderr());
});

test('a connection made before the daemon runs is answered once it is up', async (t) => {
  const backend = await okBackend(t);
  const d = await launch(t, ['listen4'], ['--backend', `127.0.0.1:${backend.port}`], { wait: true });
  const port = d.fds[0].port;
  // The kernel completes the handshake into the listen backlog: nobody
  // has accepted yet, and nothing answers.
  let answered = null;
  const early = exchange(port, 'GET /early HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', { ms: 15000 })
    .then((r) => { answered = Date.now(); return r; });
  await sleep(500);
  assert.equal(answered, null, 'answered before the daemon ran?');
  assert.doesNotMatch(d.stderr(), /^wtproxy:/m, 'the daemon is not running yet');
  const goAt = Date.now();
  d.go();
  const r = await early;
  assert.equal(r.status, 200, `the queued connection: ${r.raw}\n${d.stderr()}`);
  assert.equal(r.decoded, 'backend');
  assert.ok(answered >= goAt);
  assert.ok(backend.requests.some((q) => q.start.startsWith('GET /early ')), 'the queued request reached the backend');
  assert.equal((await d.stop()).code, 0, d.stderr());
  assertNoSanitizerReport(d);
});

// The CLI talks to the daemon on its control socket: systemd holds that
// one too, so `wtproxy ls` before any request starts the daemon instead of
// a second daemon that could not have the port.
test('a CLI call before the daemon runs is answered on the inherited control socket', async (t) => {
  const tmp = makeWorktrees(t, []);
  const d = await launch(t, ['listen4', `control=${tmp.control}`], [], { wait: true, tmp, names: 'wtproxy.socket:wtproxy.socket' });
  const ls = cli(tmp, ['ls', '--json']); // WTPROXY_NO_AUTOSTART=1: no second daemon
  await sleep(500);
  assert.doesNotMatch(d.stderr(), /^wtproxy:/m, 'the daemon is not running yet');
  d.go();
  const r = await ls;
  assert.equal(r.code, 0, `wtproxy ls: ${r.stderr}\n${d.stderr()}`);
  assert.deepEqual(JSON.parse(r.stdout), []);
  assert.match(d.stderr(), new RegExp(`control socket ${tmp.control} \\(socket activation\\)`));
  assert.deepEqual(await d.listening(1), [d.fds[0].port], 'one front: the Unix socket is not one');
  assert.equal((await d.stop()).code, 0, d.stderr());
  assert.ok(fs.existsSync(tmp.control), 'the socket file is left to systemd, which still listens there');
  assertNoSanitizerReport(d);
});

test('an inherited fd wtproxy cannot serve is refused at start, naming fd 3', async (t) => {
  const what = { pipe: /a pipe/, unlistened: /not listening/, udp: /a UDP socket/,
    unix: /is the Unix socket \/tmp\/sd-launch-\S+, but this daemon's control socket is \// };
  for (const [kind, says] of Object.entries(what)) {
    const d = await launch(t, [kind], ['--listen', '127.0.0.1:0'], { names: 'wtproxy.socket' });
    const exit = await Promise.race([d.exited, sleep(10000).then(() => ({ code: 'still running' }))]);
    const lines = d.stderr().split('\n').filter((l) => l.startsWith('wtproxy:'));
    assert.notEqual(exit.code, 0, `${kind}: exit ${exit.code ?? exit.sig}\n${d.stderr()}`);
    assert.equal(exit.code, 1, `${kind}: exit status 1 (cannot start)\n${d.stderr()}`);
    assert.equal(lines.length, 1, `${kind}: one line:\n${d.stderr()}`);
    assert.match(lines[0], /fd 3 /, `${kind}: names fd 3`);
    assert.match(lines[0], says, `${kind}: says what it is`);
    assert.match(lines[0], /ListenStream=/, `${kind}: says the fix`);
  }
});

test('LISTEN_PID of another process: the sockets are ignored, the configured address is bound', async (t) => {
  const backend = await okBackend(t);
  const d = await launch(t, ['listen4'], ['--backend', `127.0.0.1:${backend.port}`, '--listen', '127.0.0.1:0'], { pid: 'parent' });
  const [port] = await d.listening(1);
  const inherited = d.fds[0].port;
  assert.notEqual(port, inherited, 'the configured 127.0.0.1:0, not the inherited socket');
  assert.match(d.stderr(), /LISTEN_PID=\d+ is another process \(this is \d+\): its LISTEN_FDS are ignored/);
  assert.doesNotMatch(d.stderr(), /socket activation/);
  const r = await exchange(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  assert.equal(r.status, 200, r.raw);
  // The inherited socket stays open in the daemon (not its to close) but
  // nobody accepts on it: no answer.
  const none = await exchange(inherited, 'GET / HTTP/1.1\r\nHost: localhost\r\n\r\n', { ms: 800 });
  assert.equal(none.raw, '', 'nobody serves the socket meant for another pid');
  assert.equal((await d.stop()).code, 0, d.stderr());
  assertNoSanitizerReport(d);
});

test('the servers the daemon starts do not see LISTEN_*', async (t) => {
  const tmp = makeWorktrees(t, []);
  const d = await launch(t, ['listen4'], [], { tmp });
  const port = d.fds[0].port;
  await d.listening(1);
  // A committed .wtproxy whose "server" writes its environment and exits:
  // the daemon starts it for the first request from the worktree.
  const dump = path.join(tmp.root, 'env.txt');
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), `start = env > ${dump}; exit 3\nfront = ${port}\n`);
  const git = (...a) => execFileSync('git', a, { cwd: tmp.repo, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
  git('add', '.wtproxy');
  git('commit', '-q', '-m', 'declare the dev server');
  const wt = path.join(tmp.root, 'wt-a');
  git('worktree', 'add', '-q', wt, '-b', 'a');
  const status = await new Promise((resolve) => execFile('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${port}/`],
    { cwd: wt, timeout: 20000 }, (e, stdout) => resolve(stdout)));
  assert.match(d.stderr(), /started .*wt-a's server from its \.wtproxy/, `the daemon started it (curl: ${status})\n${d.stderr()}`);
  await waitFor(() => fs.existsSync(dump) && fs.readFileSync(dump, 'utf8').includes('PORT='), 10000, 'the started server wrote its environment');
  const env = fs.readFileSync(dump, 'utf8');
  assert.match(env, /^WTPROXY_CONTROL=/m, 'this is the environment of the daemon\'s child');
  assert.doesNotMatch(env, /^LISTEN_(PID|FDS|FDNAMES)=/m, `a child of the daemon sees:\n${env}`);
  assert.equal((await d.stop()).code, 0, d.stderr());
});

test('SIGTERM drains a request in flight on an inherited socket, closes it, exits 0', async (t) => {
  const BODY = 'y'.repeat(100000);
  const backend = await rawBackend(t, requestResponder((req, info, s) => {
    setTimeout(() => { if (!s.destroyed) s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`); }, 1200);
    return null;
  }));
  const d = await launch(t, ['listen4'], ['--backend', `127.0.0.1:${backend.port}`, '--shutdown-timeout', '8s']);
  const port = d.fds[0].port;
  await d.listening(1);
  const slow = exchange(port, 'GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n', { ms: 9000, closeWait: 500 });
  await waitFor(() => (backend.requests || []).length === 1, 5000, 'the slow request at the backend');
  const sigAt = Date.now();
  d.proc.kill('SIGTERM');
  await sleep(300);
  // The daemon held the only copy of the socket (systemd would keep its
  // own): once closed, a new connection is refused.
  const refused = await new Promise((res) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); res('connected'); });
    s.on('error', (e) => res(e.code));
  });
  assert.equal(refused, 'ECONNREFUSED', `a new connection after SIGTERM: ${refused}`);
  const r = await slow;
  assert.equal(r.status, 200, r.raw.slice(0, 300));
  assert.equal(r.decoded.length, BODY.length, 'the in-flight response is whole');
  const exit = await d.exited;
  assert.equal(exit.code, 0, d.stderr());
  assert.ok(Date.now() - sigAt < 6000, 'exit waited for shutdown_timeout instead of the request');
  assertNoSanitizerReport(d);
});

// The same hand-over by systemd's own tool, where it is installed (the
// systemd package; CI's container may not have it): wtproxy understands
// what systemd really sets, names included.
const activateTool = '/usr/bin/systemd-socket-activate';
test('systemd-socket-activate starts wtproxy on the first connection', { skip: !fs.existsSync(activateTool) && `${activateTool} is not installed` }, async (t) => {
  const backend = await okBackend(t);
  const tmp = makeWorktrees(t, []);
  // The tool binds fixed ports only: take one the kernel just gave out.
  const free = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
  const proc = spawn(activateTool, ['-l', `127.0.0.1:${free}`, '-l', tmp.control, '--fdname=wtproxy.socket',
    wtproxyBin, 'serve', '--control', tmp.control, '--state', tmp.state, '--backend', `127.0.0.1:${backend.port}`],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stdout.on('data', (d) => { err += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((res) => proc.on('close', (code, sig) => res({ code, sig })));
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); return exited; });
  await waitFor(() => /Listening on .*control\.sock/.test(err), 5000, `the tool listens:\n${err}`);
  assert.doesNotMatch(err, /^wtproxy:/m, 'nothing started before the first connection');
  const r = await exchange(free, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', { ms: 10000 });
  assert.equal(r.status, 200, `${r.raw}\n${err}`);
  assert.equal(r.decoded, 'backend');
  assert.match(err, new RegExp(`listening on 127\\.0\\.0\\.1:${free} \\(fd 3 wtproxy\\.socket, socket activation\\)`));
  assert.match(err, /control socket .* \(socket activation\)/);
  proc.kill('SIGTERM');
  assert.equal((await exited).code, 0, err);
  assertNoSanitizerReport({ stderr: () => err });
});
