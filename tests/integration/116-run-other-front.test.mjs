// 116: an app tested on another port than 8000 (baseURL localhost:18000,
// a daemon listening there). `wtproxy run` (and `register`, `unregister`)
// without --front act on the one port the daemon listens on, and the
// server is served there; a worktree whose .wtproxy names the front (of
// --service, or of its one service) registers there, whatever the daemon
// listens on. Given a front
// the daemon does not listen on (--front 8000), it registers there, where
// no request comes: it says so as it starts, with the flag to pass; the
// 503 its worktree then gets on the daemon's port names the server on the
// other front, and the command it suggests carries --front, so pasting it
// works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, sanitizerClean, cli, lsJson, curlFrom } from './lib/registry.mjs';

test('wtproxy run without --front serves the daemon\'s one port', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp); // on a port the kernel picked, never 8000
  const run = startRun(t, tmp, { cwd: tmp.wt.a });
  await run.ready;
  assert.match(run.stderr(), new RegExp(`is ready on 127\\.0\\.0\\.1:\\d+ \\(front :${px.port}\\)`));
  assert.doesNotMatch(run.stderr(), /warning/);
  assert.equal((await curlFrom(tmp.wt.a, px.port)).status, 200);
});

test('register and unregister without --front act on the daemon\'s one port too', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const reg = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  assert.match(reg.stderr, new RegExp(`registered ${tmp.wt.a} on front :${px.port} -> `));
  assert.deepEqual((await lsJson(tmp)).map((e) => e.front), [px.port]);
  const un = await cli(tmp, ['unregister'], { cwd: tmp.wt.a });
  assert.equal(un.code, 0, un.stderr);
  assert.match(un.stderr, new RegExp(`unregistered ${tmp.wt.a} from front :${px.port}`));
  assert.deepEqual(await lsJson(tmp), []);
});

test('run and register without --front take the front the worktree\'s .wtproxy gives the server', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0', '--listen', '127.0.0.1:0'], { listeners: 2 });
  const [web, api] = px.ports;
  // One front for the whole file: a daemon on two ports cannot say which.
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./serve {port}\nfront = ${api}\n`);
  const run = startRun(t, tmp, { cwd: tmp.wt.a });
  await run.ready;
  assert.match(run.stderr(), new RegExp(`\\(front :${api}\\)`));
  assert.doesNotMatch(run.stderr(), /warning/);
  // A file of two services: --service picks its front.
  fs.writeFileSync(path.join(tmp.wt.b, '.wtproxy'), `[service web]\nstart = ./web {port}\nfront = ${web}\n\n` +
    `[service api]\nstart = ./api {port}\nfront = ${api}\n`);
  const apiRun = startRun(t, tmp, { cwd: tmp.wt.b, runArgs: ['--service', 'api'] });
  await apiRun.ready;
  const reg = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m', '--service', 'web'], { cwd: tmp.wt.b });
  assert.equal(reg.code, 0, reg.stderr);
  const fronts = (await lsJson(tmp)).map((e) => `${path.basename(e.worktree)} ${e.service || '-'} ${e.front}`).sort();
  assert.deepEqual(fronts, [`wt-a - ${api}`, `wt-b api ${api}`, `wt-b web ${web}`].sort());
  sanitizerClean(assert, px.stderr());
});

test('wtproxy run on a front the daemon does not listen on: warned, and the 503 names it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const wrong = startRun(t, tmp, { cwd: tmp.wt.a, front: 8000 });
  await wrong.ready;
  assert.match(wrong.stderr(), new RegExp(`wtproxy: warning: the daemon \\(pid \\d+\\) listens on \\["127\\.0\\.0\\.1:${px.port}"\\], not on port 8000: no request reaches a server registered on front 8000; to serve the daemon's port, run: wtproxy run --front ${px.port} -- \\.\\.\\.`));

  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, new RegExp(`which has no dev server on front :${px.port}\\. Its server on front :8000 \\(pid ${wrong.pid}\\) gets no request sent to :${px.port}: was it started without --front ${px.port}\\?`));
  assert.match(r.body, new RegExp(`Start yours from its worktree: wtproxy run --front ${px.port} -- <server command with \\{port\\}>`));

  // The suggested command works: the same worktree's requests are served.
  const right = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await right.ready;
  assert.doesNotMatch(right.stderr(), /warning/);
  assert.equal((await curlFrom(tmp.wt.a, px.port)).status, 200);
  sanitizerClean(assert, px.stderr());
});

// The daemon started on another port than the one the worktree's
// .wtproxy declares (a typo: 8711 for 8710): the warning offered
// `wtproxy run --front 8711`, moving the server off the port its tests
// call, and Playwright waited 60 s on 8710. The daemon's listen is what
// is wrong: its restart with both ports.
test('wtproxy run on the .wtproxy\'s front, which the daemon does not listen on: the daemon\'s restart, not another front', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const front = px.port === 8710 ? 8711 : 8710;
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./serve {port}\nfront = ${front}\n`);
  const run = startRun(t, tmp, { cwd: tmp.wt.a });
  await run.ready;
  const warning = run.stderr().split('\n').find((l) => l.startsWith('wtproxy: warning: the daemon')) ?? '';
  assert.ok(warning.startsWith(`wtproxy: warning: the daemon (pid ${px.proc.pid}) listens on ["127.0.0.1:${px.port}"], not on port ${front}, ` +
    `the front ${tmp.wt.a}/.wtproxy declares for this server: no request reaches it there. Make the daemon listen on it too ` +
    `(its servers are adopted): kill ${px.proc.pid} && tail --pid=${px.proc.pid} -f /dev/null; setsid -f `), run.stderr());
  assert.match(warning, new RegExp(` serve .*--listen ${px.port} --listen ${front} >>`), warning);
  assert.doesNotMatch(warning, /wtproxy run --front/, warning);
  sanitizerClean(assert, px.stderr());
});

test('a server rightly on its own front is named as a fact, not guessed to lack --front', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0', '--listen', '127.0.0.1:0'], { listeners: 2 });
  const [web, api] = px.ports;
  // Like a Vite server on :5173 registered with --front 5173, while the
  // request went to the API's port.
  const vite = startRun(t, tmp, { cwd: tmp.wt.a, front: web });
  await vite.ready;
  const r = await curlFrom(tmp.wt.a, api);
  assert.equal(r.status, 503, r.body);
  assert.doesNotMatch(r.body, /was it started without --front/, r.body);
  assert.match(r.body, new RegExp(`which has no dev server on front :${api}\\. Its server on front :${web} \\(pid ${vite.pid}\\) serves that front only\\.`));
  assert.match(r.body, new RegExp(`Start yours from its worktree: wtproxy run --front ${api} -- <server command with \\{port\\}>`));
  sanitizerClean(assert, px.stderr());
});
