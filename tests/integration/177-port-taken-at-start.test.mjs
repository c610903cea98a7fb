// 177: the port the daemon reserved for a `wtproxy run` is taken by
// another program before the server binds it (another daemon's server:
// two users, or two test runs, each with a daemon; any program binding
// ports of its own choosing). Seen in CI: a Django runserver exited
// "Error: That port is already in use" and its requests got the 503 of a
// server that exited. The wrapper now starts the server again on another
// port, names who took the first, and the daemon's entry moves with it:
// the request sent meanwhile reaches the server, never the taker. A server
// that moves on by itself (Vite without --strictPort) is started again on
// the new port too; one that fails on a port other than its own is left
// to fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { spawn } from 'node:child_process';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, getWorktree, lsJson, waitFor, pidAlive, curlFrom,
} from './lib/registry.mjs';
import { python, pythonPath, writeDjangoProject } from './lib/whoami.mjs';

// A node:http server given {port}, a file it appends "PID PORT" to at each
// start, and a file it waits for before it binds (so that the test can
// take the port first). On EADDRINUSE: exits 1 (onBusy 'exit', as Django
// and Vite --strictPort do), or listens on a port of the kernel's choosing
// ('move', as Vite does without --strictPort).
const server = `const http = require('node:http'), fs = require('node:fs');
const [port, starts, go, onBusy] = process.argv.slice(1);
fs.appendFileSync(starts, process.pid + ' ' + port + '\\n');
const srv = http.createServer((q, s) => { if (q.url === '/__whoami') s.statusCode = 404; s.end('server ' + process.pid); });
srv.on('error', (e) => {
  console.error('listen ' + port + ': ' + e.code);
  if (onBusy === 'exit') process.exit(1);
  srv.listen(0, '127.0.0.1', () => console.log('moved on to ' + srv.address().port));
});
const bind = () => fs.existsSync(go) ? srv.listen(Number(port), '127.0.0.1', () => console.log('listening on ' + port)) : setTimeout(bind, 50);
bind();`;

// Start `wtproxy run` of that server in worktree a; once it started, take
// its port (take: a listener answering "taker" by default), then let it
// bind.
async function raceForPort(t, onBusy, take = listenOn) {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const starts = path.join(tmp.root, 'starts.txt');
  const go = path.join(tmp.root, 'go');
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, stopSignal: 'SIGTERM', readyMs: 30000,
    command: [process.execPath, '-e', server, '{port}', starts, go, onBusy],
  });
  const first = await waitFor(() => fs.existsSync(starts) && fs.readFileSync(starts, 'utf8').split(/\s+/), 10000, 'the server started');
  const taken = Number(first[1]);
  await take(t, taken);
  const request = getWorktree(px.port, tmp.wt.a); // waits for the server, meanwhile
  fs.writeFileSync(go, '');
  return { tmp, px, run, starts, taken, firstPid: Number(first[0]), request };
}

// Listen on port in this process, answering "taker".
async function listenOn(t, port) {
  const taker = net.createServer((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\ntaker'));
  await new Promise((res, rej) => taker.once('error', rej).listen(port, '127.0.0.1', res));
  t.after(() => taker.close());
}

// Hold port with a socket bound and never listening (what a connection
// holds its local port with), in a Python process stopped at the end.
async function bindOnly(t, port) {
  const holder = spawn(python, ['-c', 'import socket, sys, time\ns = socket.socket()\ns.bind(("127.0.0.1", int(sys.argv[1])))\nprint("bound", flush=True)\ntime.sleep(120)', String(port)]);
  t.after(() => holder.kill('SIGKILL'));
  await new Promise((res, rej) => { holder.stdout.once('data', res); holder.once('exit', rej); });
}

// What every case of a taken port shows: the run says who took it (who, a
// pattern) and where the server went; the request reached the server; ls
// and the daemon's log have the new port.
async function assertMoved(t, { tmp, px, run, starts, taken, request }, who = `pid ${process.pid} \\([^)]*\\)`) {
  const port = await run.ready;
  assert.notEqual(port, taken);
  assert.match(run.stderr(), new RegExp(`port ${taken}, which wtproxy gave wt-a's server, was taken by ${who} before the server bound it: starting it again on port ${port}`));
  const r = await request;
  assert.equal(r.status, 200, `${r.status} ${r.body}`);
  const [pid2, port2] = fs.readFileSync(starts, 'utf8').trim().split('\n').at(-1).split(' ').map(Number);
  assert.equal(port2, port);
  assert.equal(r.body, `server ${pid2}`, 'the request reached the server started again, not the taker');
  const e = (await lsJson(tmp)).find((x) => x.worktree === tmp.wt.a);
  assert.equal(e.port, port);
  assert.equal(e.backend, `127.0.0.1:${port}`);
  assert.match(e.command, new RegExp(` ${port} `), 'ls shows the command that listens there');
  assert.match(px.stderr(), new RegExp(`moves from port ${taken} to ${port}`));
}

test('a server that exits on its taken port is started again on another, said with who took it; the waiting request reaches it', async (t) => {
  const race = await raceForPort(t, 'exit');
  await assertMoved(t, race);
  assert.match(race.run.stderr(), new RegExp(`listen ${race.taken}: EADDRINUSE`), 'its own error stays in its output');
});

test('a server that moves on to a port of its own (Vite without --strictPort) is started again on another port', async (t) => {
  const race = await raceForPort(t, 'move');
  await assertMoved(t, race);
  assert.match(race.run.stderr(), /moved on to \d+/);
  assert.doesNotMatch(race.run.stderr(), /its command ignores \{port\}/);
  await waitFor(() => !pidAlive(race.firstPid), 5000, 'the first server stopped');
});

test('a port held by a socket that does not listen (a connection\'s local port): the server is started again on another, said so', async (t) => {
  const race = await raceForPort(t, 'exit', bindOnly);
  await assertMoved(t, race, `a socket that does not listen \\(another program's connection\\? ss -tanp 'sport = :${race.taken}' names it\\)`);
});

test('a server that fails on a port other than its own is not moved: it exits with its status', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const busy = net.createServer();
  await new Promise((res) => busy.listen(0, '127.0.0.1', res));
  t.after(() => busy.close());
  const script = `require('node:http').createServer().on('error', (e) => { console.error(e.code); process.exit(1); }).listen(${busy.address().port}, '127.0.0.1');`;
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: [process.execPath, '-e', script, '{port}'] });
  const { code } = await run.exited;
  assert.equal(code, 1, run.stderr());
  assert.match(run.stderr(), /EADDRINUSE/);
  assert.doesNotMatch(run.stderr(), /was taken by/);
  assert.doesNotMatch(px.stderr(), /moves from port/);
});

// The case CI saw, with Django's runserver and its autoreloader as people
// run it. Its settings take a second to import, so that the test takes
// the port (read from ls, where the entry is before the server starts)
// before Django binds it.
test("Django's runserver whose port was taken: 'That port is already in use', then started again on another and served", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = { PYTHONPATH: pythonPath };
  const px = await startDaemon(t, tmp, [], { env });
  writeDjangoProject(tmp.wt.a);
  fs.appendFileSync(path.join(tmp.wt.a, 'site_cfg/settings.py'), 'import time\ntime.sleep(1)\n');
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, env, detached: true, stopSignal: 'SIGTERM', readyMs: 40000,
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  const taken = await waitFor(async () => (await lsJson(tmp))[0]?.port, 10000, 'the run registered');
  const taker = net.createServer((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\ntaker'));
  await new Promise((res, rej) => taker.once('error', rej).listen(taken, '127.0.0.1', res));
  t.after(() => taker.close());
  const port = await run.ready;
  assert.notEqual(port, taken);
  assert.match(run.stderr(), /Error: That port is already in use\./);
  assert.match(run.stderr(), new RegExp(`port ${taken}, which wtproxy gave wt-a's server, was taken by pid ${process.pid} \\([^)]*\\) before the server bound it: starting it again on port ${port}`));
  const r = await curlFrom(tmp.wt.a, px.port, '/hello/');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'hello v1');
});
