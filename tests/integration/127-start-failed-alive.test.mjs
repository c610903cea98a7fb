// 127: a dev server whose start failed but whose process lives on. Django's
// runserver, when its server thread dies at start (here a syntax error in
// urls.py), prints the traceback and its autoreloader waits for a file to
// change: alive, never listening. wtproxy held each request for the whole
// start_timeout (60 s) before its 503, so Playwright's own 30 s timeout
// fired first and the agent never read why. Now the `wtproxy run` wrapper
// reads the reloader's "Exception in thread django-main-thread:" in its
// output and tells the daemon: a request gets its 503 within seconds, with
// the traceback's last line and the fix; `wtproxy ls`, `why` and the dashboard say failed;
// once the file is fixed, the reloader starts the server again and the next
// request is served by the same wrapper. Both for a server the daemon
// starts from a `.wtproxy` and for `wtproxy run` in the foreground; and
// for `node --watch`, which waits the same way for a script that threw.
// A failure outlives its daemon: the next daemon (after a kill -9) answers
// its 503 at once too, from the state file, and a change the wrapper could
// not tell a dead daemon (the fix, the server listening) is told to the
// next one. A ready server an edit broke is said to be that, never "failed
// at start": its reader looks for the cause in the edit, not the start
// command.
// (An error in settings.py itself is not this case: manage.py exits at once,
// and the daemon already says so as an exit.) A stale .wtproxy server the
// daemon restarts into such an exit is said at once too, with its log.
// A new worktree has no node_modules, so a server importing wtproxy-whoami
// stops at its import (its python likewise without wtproxy_whoami): the
// 503, `ls`, `why` and the wrapper say the package is missing and the link
// to this wtproxy's that `wtproxy doctor` prints, never `npm install`.
// A package the app's requirements.txt declares and its python lacks (a
// new worktree's, or a branch that added one): the install, not an edit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, declaring, lsJson, cli, cliEnv, curlFrom, startRun, waitFor, wtServer, pidAlive, get } from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { python, pythonPath, writeDjangoProject } from './lib/whoami.mjs';
import { repoRoot } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';

const brokenUrls = `from django.urls import path
from app import views
urlpatterns = [path('hello/', views.hello)
`; // '[' never closed: a SyntaxError when the system checks import it
const goodUrls = `from django.urls import path
from app import views
urlpatterns = [path('hello/', views.hello)]
`;
const env = { PYTHONPATH: pythonPath };
const FAST_MS = 10000; // it took start_timeout (60 s); now the traceback's burst and a poll

function brokenApp(dir) {
  writeDjangoProject(dir);
  fs.writeFileSync(path.join(dir, 'site_cfg/urls.py'), brokenUrls);
}

// The 503 a request waiting for the failed server gets, at once.
function assertFailedAtStart(t, r, front) {
  t.diagnostic(`the 503 came after ${r.ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, /failed at start and waits for a change to its files/);
  assert.match(r.body, /SyntaxError: '\[' was never closed/, 'the traceback\'s last line');
  assert.match(r.body, /'s server \(pid \d+, under Django's autoreloader\) does not serve on port \d+; its last lines:/);
  assert.match(r.body, new RegExp(`Fix: Fix the error its last lines above name and save the file: .* wtproxy logs --front ${front} \\(in its worktree\\)`));
  // Each thing once: the log's command is not said twice (it was in the
  // detail and in the fix, each with a fix of its own).
  assert.equal(r.body.match(/wtproxy logs/g).length, 1, r.body);
}

// A `wtproxy restart` whose server failed at start and lives on: exit 1
// within seconds, saying so, with its log's end.
function assertRestartFailed(t, r, ms, what) {
  t.diagnostic(`restart exited after ${ms} ms`);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.ok(ms < 30000, `restart said it after ${ms} ms, not at once`);
  assert.match(r.stderr, new RegExp(`${what}: it failed at start and lives on without listening, waiting for a change to its files: fix the error its log's last lines name and save \\(Django's autoreloader restarts it\\)`), r.stderr);
  assert.match(r.stderr, /SyntaxError: '\[' was never closed[\s\S]*read it all: wtproxy logs/, r.stderr);
}

// The 503 of a ready server an edit broke: said as that, not a failed start.
function assertEditBroke(body, folder, front) {
  assert.match(body, /An edit broke the dev server of this worktree: it was serving, its autoreloader restarted it after a change to its files, and the new server failed/);
  assert.match(body, new RegExp(`\\S+/${folder}'s server \\(pid \\d+, under Django's autoreloader\\) does not serve on port \\d+; its last lines:`));
  assert.match(body, new RegExp(`wtproxy logs --front ${front} \\(in its worktree\\)`));
  assert.equal(body.match(/wtproxy logs/g).length, 1, body);
  assert.doesNotMatch(body, /failed at start/);
}

// The dashboard's rows (/__wtproxy/api/backends).
async function dashboard(front) {
  const r = await get(front, {}, '/__wtproxy/api/backends');
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

// The fixed file is served once the reloader saw it. Its StatReloader
// looks every second and takes a file it first sees (urls.py joins its
// watched files when the import fails) as it is then: a fix written before
// that look is never seen as a change, so the fix waits past it, as a
// person's edit does.
async function servedAfterFix(dir, front) {
  await new Promise((r) => setTimeout(r, 1500));
  fs.writeFileSync(path.join(dir, 'site_cfg/urls.py'), goodUrls);
  return waitFor(async () => {
    const r = await curlFrom(dir, front, '/hello/', { timeout: 20000 });
    return r.status === 200 ? r : new Error(`${r.status}: ${r.body}`);
  }, 20000, 'served after the fix');
}

test('a .wtproxy Django whose urls.py does not compile: 503 with its traceback at once, served once fixed', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, [], { env });
  const tmp = declaring(t, [`start = ${python} manage.py runserver 127.0.0.1:{port}`, `front = ${px.port}`,
    'idle_stop = 0'], ['a']);
  brokenApp(tmp.wt.a);
  // `wtproxy restart` starts it from the .wtproxy and says at once that it
  // failed, with the traceback's end (it waited its whole 60 s).
  const restart = ['restart', '--front', String(px.port)];
  let at = Date.now();
  const started = await cli(tmp0, restart, { cwd: tmp.wt.a, ms: 70000 });
  assertRestartFailed(t, started, Date.now() - at, 'did not come up');
  assert.match(started.stdout, /the server of \S+ does not run; starting it from its \.wtproxy/);
  const r = await curlFrom(tmp.wt.a, px.port, '/hello/', { timeout: 20000 });
  assertFailedAtStart(t, r, px.port);

  const [e] = await lsJson(tmp0);
  assert.equal(e.state, 'starting');
  assert.match(e.start_failed.lines, /SyntaxError/);
  assert.equal(e.start_failed.reloader, "Django's autoreloader");
  assert.equal(e.start_failed.when, 'start');
  const ls = await cli(tmp0, ['ls']);
  assert.match(ls.stdout, new RegExp(`${tmp.wt.a}\\s+a\\s+${px.port}\\s+\\d+\\s+${e.pid}\\s+failed\\s`), ls.stdout);
  const why = await cli(tmp0, ['why', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.match(why.stdout, /failed at start: it lives on without listening; fix it and save: Django's autoreloader restarts it/, why.stdout);
  assert.match(why.stdout, /SyntaxError/, why.stdout);
  assert.doesNotMatch(why.stdout, /an edit broke/, why.stdout);
  // Restarted, it fails the same way: said as soon.
  at = Date.now();
  const restarted = await cli(tmp0, restart, { cwd: tmp.wt.a, ms: 70000 });
  assertRestartFailed(t, restarted, Date.now() - at, 'did not come back');
  const again = await curlFrom(tmp.wt.a, px.port, '/hello/', { timeout: 20000 });
  assertFailedAtStart(t, again, px.port);

  const ok = await servedAfterFix(tmp.wt.a, px.port);
  assert.equal(ok.body, 'hello v1');
  const [after] = await lsJson(tmp0);
  assert.equal(after.pid, e.pid, 'the same wrapper serves: the reloader restarted its server');
  assert.equal(after.state, 'ready');
  assert.equal(after.start_failed, undefined);
  const log = fs.readFileSync(after.log, 'utf8');
  assert.match(log, /server failed at start and lives on without listening \(Django's autoreloader waits/);
  assert.match(log, /server is starting again after its failed start/);
});

test('`wtproxy run` in the foreground says its Django failed at start; requests get the 503 at once', async (t) => {
  const tmp = makeWorktrees(t, ['b']);
  const px = await startDaemon(t, tmp, [], { env });
  brokenApp(tmp.wt.b);
  const run = startRun(t, tmp, {
    cwd: tmp.wt.b, front: px.port, env, detached: true, stopSignal: 'SIGKILL',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  await waitFor(() => /failed at start and lives on without listening/.test(run.stderr()), 15000,
    'the wrapper says the start failed');
  assert.match(run.stderr(), /SyntaxError: '\[' was never closed[\s\S]*wtproxy: wt-b's server failed at start and lives on without listening \(Django's autoreloader waits for a change to its files\): fix the error above and save/);
  const r = await curlFrom(tmp.wt.b, px.port, '/hello/', { timeout: 20000 });
  assertFailedAtStart(t, r, px.port);
  const ok = await servedAfterFix(tmp.wt.b, px.port);
  assert.equal(ok.body, 'hello v1');
  // Said on the wrapper's stderr, a pipe this process reads in its own
  // time: the 200 can come first.
  await waitFor(() => /wt-b is ready on 127\.0\.0\.1:\d+/.test(run.stderr()), 5000, `the wrapper says it is ready:\n${run.stderr()}`);
});

// node --watch waits the same way for a script that threw.
test('`wtproxy run -- node --watch` whose script throws at start: the 503 at once, served once fixed', async (t) => {
  const tmp = makeWorktrees(t, ['c']);
  const px = await startDaemon(t, tmp);
  const script = path.join(tmp.wt.c, 'server.js');
  fs.writeFileSync(script, "throw new Error('boom: DATABASE_URL is not set');\n");
  const run = startRun(t, tmp, {
    cwd: tmp.wt.c, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '--watch', 'server.js', '{port}'],
  });
  await waitFor(() => /failed at start and lives on without listening \(node --watch waits/.test(run.stderr()),
    15000, 'the wrapper says the start failed');
  const r = await curlFrom(tmp.wt.c, px.port, '/', { timeout: 20000 });
  t.diagnostic(`the 503 came after ${r.ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, /Error: boom: DATABASE_URL is not set/);
  assert.match(r.body, /'s server \(pid \d+, under node --watch\) does not serve on port \d+/);
  await new Promise((res) => setTimeout(res, 500));
  fs.writeFileSync(script, `import(${JSON.stringify(wtServer)});\n`); // it answers /__whoami too
  const ok = await waitFor(async () => {
    const a = await curlFrom(tmp.wt.c, px.port, '/', { timeout: 20000 });
    return a.status === 200 ? a : new Error(`${a.status}: ${a.body}`);
  }, 20000, 'served after the fix');
  assert.equal(ok.worktree, tmp.wt.c, 'served by the fixed script');
  assert.match(run.stderr(), /wt-c's server is starting again after its failed start/);
});

// Under load Django's traceback can pause between two frames for longer
// than the 300 ms of quiet that ends it (seen in CI: the 503 quoted a
// traceback cut at a frame, and the rest of it read as a new start). This
// server prints Django's lines in two bursts 1 s apart, the first ending
// where first ends, and lives on without listening, as its autoreloader does.
async function pausedTraceback(t, name, first, rest) {
  const tmp = makeWorktrees(t, [name]);
  const px = await startDaemon(t, tmp);
  const script = `console.error(${JSON.stringify(first.join('\n'))});
setTimeout(() => console.error(${JSON.stringify(rest.join('\n'))}), 1000);
setInterval(() => {}, 1000);`;
  const run = startRun(t, tmp, {
    cwd: tmp.wt[name], front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '-e', script, '{port}'],
  });
  await waitFor(async () => (await lsJson(tmp)).length === 1, 10000, 'the run registered');
  const r = await curlFrom(tmp.wt[name], px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, /line 3\n.*path\('hello\/', hello\n.*\^\nSyntaxError: '\(' was never closed/, 'the traceback whole, its error line last');
  await new Promise((res) => setTimeout(res, 800));
  assert.equal((run.stderr().match(/failed at start and lives on/g) || []).length, 1, run.stderr());
  assert.doesNotMatch(run.stderr(), /is starting again after its failed start/);
}

const djangoStart = ['Watching for file changes with StatReloader', 'Performing system checks...', ''];
const threadHead = ['Exception in thread django-main-thread:', 'Traceback (most recent call last):',
  '  File "/usr/lib/python3.11/threading.py", line 1038, in _bootstrap_inner', '    self.run()'];
const urlsError = ['  File "/src/shop/urls.py", line 3', "    path('hello/', hello", '        ^',
  "SyntaxError: '(' was never closed"];

test('a Django traceback that pauses at a frame: told once it ends, with its error line, never as a new start', async (t) => {
  await pausedTraceback(t, 's', [...djangoStart, ...threadHead], urlsError);
});

// Python's threading.excepthook flushes its "Exception in thread NAME:"
// line, then formats the traceback, reading each frame's source file: a
// pause there (seen in CI, test 127's daemon-restart case: the failure
// told at the header, the traceback read as a new start, its entry
// "starting" for a moment) ends at an unindented line that announces
// more (a colon ends it), as does a chained exception's "During handling
// of the above exception, another exception occurred:".
test('a Django traceback that pauses after a header line (ending in a colon): told once, whole', async (t) => {
  await pausedTraceback(t, 'h', [...djangoStart, 'Exception in thread django-main-thread:'], [...threadHead.slice(1), ...urlsError]);
});

test('a chained traceback that pauses at "During handling of the above exception": told once, whole', async (t) => {
  await pausedTraceback(t, 'k', [...djangoStart, ...threadHead, 'KeyError: \'ROOT_URLCONF\'', '',
    'During handling of the above exception, another exception occurred:'], ['', ...threadHead.slice(1), ...urlsError]);
});

// A server's stdout and stderr reach its wrapper through two pipes, and
// which of two writes a moment apart is read first is the scheduler's:
// Django's "Performing system checks..." (stdout) came after the
// traceback (stderr) in a CI run, and the dashboard quoted it as the
// failure's "last line". The line quoted alone is the error line.
test('a failed start whose stdout line is read after its traceback: the dashboard quotes its error line', async (t) => {
  const tmp = makeWorktrees(t, ['o']);
  const px = await startDaemon(t, tmp);
  const script = `console.error(${JSON.stringify([...threadHead, ...urlsError].join('\n'))});
setTimeout(() => console.log('Performing system checks...\\n'), 50);
setInterval(() => {}, 1000);`;
  startRun(t, tmp, {
    cwd: tmp.wt.o, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '-e', script, '{port}'],
  });
  await waitFor(async () => (await lsJson(tmp))[0]?.start_failed, 10000, 'the failure told');
  const [e] = await lsJson(tmp);
  assert.match(e.start_failed.lines, /SyntaxError[^]*\nPerforming system checks\.\.\.$/, 'the stdout line read last');
  const [dash] = await dashboard(px.port);
  assert.equal(dash.status, 'failed');
  assert.match(dash.status_reason, /its error: SyntaxError: '\(' was never closed$/, dash.status_reason);
});

// tsc --watch (nest start --watch) whose compile failed starts nothing and
// waits for a change: a NestJS user's request waited 63 s for a 502
// "Connection refused" that never named the error. "Found 1 error.
// Watching for file changes." is its marker; "Found 0 errors." is a
// compile that passed, after which the server starts.
test('tsc --watch whose compile failed: the 503 at once with its error; "Found 0 errors" is no failure', async (t) => {
  const tmp = makeWorktrees(t, ['ts', 'ok']);
  const px = await startDaemon(t, tmp);
  const lines = ['[5:45:00 AM] Starting compilation in watch mode...', '',
    "src/label.ts:2:14 - error TS2322: Type 'string' is not assignable to type 'number'.", '',
    '2 export const LABEL: number = "Notes v1";', '               ~~~~~', '',
    '[5:45:03 AM] Found 1 error. Watching for file changes.'];
  startRun(t, tmp, {
    cwd: tmp.wt.ts, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '-e', `console.log(${JSON.stringify(lines.join('\n'))}); setInterval(() => {}, 1000);`, '{port}'],
  });
  await waitFor(async () => (await lsJson(tmp)).some((e) => e.worktree === tmp.wt.ts), 10000, 'the run registered');
  const r = await curlFrom(tmp.wt.ts, px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, /error TS2322/);
  assert.match(r.body, /under tsc --watch\) does not serve on port \d+; its last lines:/);

  const ok = startRun(t, tmp, {
    cwd: tmp.wt.ok, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: ['sh', '-c', `echo '[5:45:03 AM] Found 0 errors. Watching for file changes.'; exec ${process.execPath} ${wtServer} "$1"`, 'sh', '{port}'],
  });
  await ok.ready;
  const served = await curlFrom(tmp.wt.ok, px.port, '/', { timeout: 20000 });
  assert.equal(served.status, 200, served.body);
  assert.doesNotMatch(ok.stderr(), /failed at start/);
});

// ng serve (Angular 17) whose first build failed serves nothing and waits
// for a change: an Angular user's requests were held 60 s each for a 502,
// then a 503 "did not become ready in time" whose fixes (restart, raise
// start_timeout) could not help; neither quoted the TypeScript error.
test('ng serve whose build failed at start: the 503 at once with its TypeScript error', async (t) => {
  const tmp = makeWorktrees(t, ['ng']);
  const px = await startDaemon(t, tmp);
  const lines = ['Application bundle generation failed. [1.883 seconds]', '',
    "\u2718 [ERROR] TS2322: Type 'string' is not assignable to type 'number'. [plugin angular-compiler]", '',
    '    src/app/app.component.ts:12:2:', "      12 \u2502   broken: number = 'oops';", '         \u2575   ~~~~~~', '',
    'Watch mode enabled. Watching for file changes...'];
  startRun(t, tmp, {
    cwd: tmp.wt.ng, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '-e', `console.log(${JSON.stringify(lines.join('\n'))}); setInterval(() => {}, 1000);`, '{port}'],
  });
  await waitFor(async () => (await lsJson(tmp)).some((e) => e.worktree === tmp.wt.ng), 10000, 'the run registered');
  const r = await curlFrom(tmp.wt.ng, px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, /TS2322: Type 'string' is not assignable to type 'number'/);
  assert.match(r.body, /under ng serve\) does not serve on port \d+; its last lines:/);
});

// The agent's usual case: the server was ready and serving, then an edit
// broke it. Django's autoreloader restarts its server, which fails the same
// way and lives on without listening. Requests were retried for
// reload_grace (10 s), then got a 502 backend-unreachable without the
// traceback; now the wrapper tells the daemon as for a failed start.
test('a ready `wtproxy run` Django whose urls.py an edit breaks: the 503 with its traceback within seconds, served once fixed', async (t) => {
  const tmp = makeWorktrees(t, ['d']);
  const px = await startDaemon(t, tmp, [], { env });
  writeDjangoProject(tmp.wt.d);
  const run = startRun(t, tmp, {
    cwd: tmp.wt.d, front: px.port, env, detached: true, stopSignal: 'SIGKILL',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  await run.ready;
  const first = await curlFrom(tmp.wt.d, px.port, '/hello/', { timeout: 20000 });
  assert.equal(first.status, 200, first.body);
  const [ready] = await lsJson(tmp);

  const savedAt = Date.now();
  fs.writeFileSync(path.join(tmp.wt.d, 'site_cfg/urls.py'), brokenUrls);
  const r = await curlFrom(tmp.wt.d, px.port, '/hello/', { timeout: 30000 });
  const ms = Date.now() - savedAt;
  t.diagnostic(`from the broken save to the refusal: ${ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(ms < 7000, `the refusal came ${ms} ms after the save, not within seconds`);
  assert.match(r.body, /SyntaxError: '\[' was never closed/, 'the traceback\'s last line');
  assertEditBroke(r.body, 'wt-d', px.port);
  const ls = await cli(tmp, ['ls']);
  assert.match(ls.stdout, new RegExp(`${tmp.wt.d}\\s+\\S+\\s+${px.port}\\s+\\d+\\s+${ready.pid}\\s+failed\\s`), ls.stdout);
  const why = await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.d });
  assert.match(why.stdout, /an edit broke it: its reloader restarted it and the new server failed: it lives on without listening; fix it and save: Django's autoreloader restarts it/, why.stdout);
  assert.doesNotMatch(why.stdout, /failed at start/, why.stdout);
  const [failed] = await lsJson(tmp);
  assert.equal(failed.start_failed.when, 'edit');
  const [dash] = await dashboard(px.port);
  assert.equal(dash.status, 'failed');
  assert.match(dash.status_reason, /^an edit broke it: its reloader restarted it and the new server failed; pid \d+ lives on without listening.*its error: SyntaxError/);
  const again = await curlFrom(tmp.wt.d, px.port, '/hello/', { timeout: 30000 });
  assert.equal(again.status, 503, again.body);
  assert.ok(again.ms < 2000, `the next request waited ${again.ms} ms for its 503`);
  assert.match(again.body, /SyntaxError: '\[' was never closed/);
  assert.match(again.body, /An edit broke the dev server of this worktree/);
  assert.match(run.stderr(), /SyntaxError[\s\S]*wtproxy: an edit broke wt-d's server: Django's autoreloader restarted it after a change to its files and the new one failed; it lives on without listening: fix the error above and save/);
  assert.doesNotMatch(run.stderr(), /failed at start/);

  const ok = await servedAfterFix(tmp.wt.d, px.port);
  assert.equal(ok.body, 'hello v1');
  const [after] = await lsJson(tmp);
  assert.equal(after.pid, ready.pid, 'the same wrapper serves: the reloader restarted its server');
  assert.equal(after.state, 'ready');
  assert.equal(after.start_failed, undefined);
  assert.equal(after.whoami.state, 'verified', 'its /__whoami asked again, as after any reload');
});

// node --watch restarts a ready script on a change ("Restarting 'server.js'"),
// and waits the same way when the new one throws.
test('a ready `wtproxy run -- node --watch` whose script an edit makes throw: the 503 within seconds, served once fixed', async (t) => {
  const tmp = makeWorktrees(t, ['e']);
  const px = await startDaemon(t, tmp);
  const script = path.join(tmp.wt.e, 'server.js');
  fs.writeFileSync(script, `import(${JSON.stringify(wtServer)});\n`);
  const run = startRun(t, tmp, {
    cwd: tmp.wt.e, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '--watch', 'server.js', '{port}'],
  });
  await run.ready;
  assert.equal((await curlFrom(tmp.wt.e, px.port, '/', { timeout: 20000 })).status, 200);
  const savedAt = Date.now();
  fs.writeFileSync(script, "throw new Error('boom: an edit broke it');\n");
  // The old script serves until node saw the change: asked once it failed.
  await waitFor(() => /Failed running '/.test(run.stderr()), 15000, 'node says it failed');
  const r = await curlFrom(tmp.wt.e, px.port, '/', { timeout: 30000 });
  const ms = Date.now() - savedAt;
  t.diagnostic(`from the broken save to the refusal: ${ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(ms < 7000, `the refusal came ${ms} ms after the save, not within seconds`);
  assert.match(r.body, /Error: boom: an edit broke it/);
  assert.match(r.body, /An edit broke the dev server of this worktree/);
  assert.match(r.body, /\S+\/wt-e's server \(pid \d+, under node --watch\) does not serve on port \d+/);
  await new Promise((res) => setTimeout(res, 500));
  fs.writeFileSync(script, `import(${JSON.stringify(wtServer)});\n`);
  const ok = await waitFor(async () => {
    const a = await curlFrom(tmp.wt.e, px.port, '/', { timeout: 20000 });
    return a.status === 200 ? a : new Error(`${a.status}: ${a.body}`);
  }, 20000, 'served after the fix');
  assert.equal(ok.worktree, tmp.wt.e, 'served by the fixed script');
  assert.match(run.stderr(), /an edit broke wt-e's server: node --watch restarted it[\s\S]*wt-e's server is starting again after the edit that broke it/);
});

// node --watch prints "Failed running 'server.js'" after any end of its
// child, a kill -9's too, and waits for a change. A ready server's child
// killed (kill -9, an OOM kill) was called an edit that broke it, whose
// fix, "fix the error its last lines name and save", named no error: no
// file had changed, and node --watch had printed no "Restarting".
test('a ready `wtproxy run -- node --watch` whose server process is killed -9: a death, not an edit, with the restart', async (t) => {
  const tmp = makeWorktrees(t, ['k']);
  const px = await startDaemon(t, tmp);
  const script = path.join(tmp.wt.k, 'server.js');
  fs.writeFileSync(script, `import(${JSON.stringify(wtServer)});\n`);
  const run = startRun(t, tmp, {
    cwd: tmp.wt.k, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '--watch', 'server.js', '{port}'],
  });
  await run.ready;
  const served = await curlFrom(tmp.wt.k, px.port, '/', { timeout: 20000 });
  assert.equal(served.status, 200, served.body);
  const child = JSON.parse(served.body).pid; // node --watch's child, the server process
  process.kill(child, 'SIGKILL');
  await waitFor(() => /Failed running '/.test(run.stderr()), 15000, 'node says its child ended');
  const r = await curlFrom(tmp.wt.k, px.port, '/', { timeout: 30000 });
  assert.equal(r.status, 503, r.body);
  assert.doesNotMatch(r.body, /An edit broke|Fix the error/, r.body);
  assert.match(r.body, /the process that served died/, r.body);
  assert.ok(r.body.includes(`wt-k's server process (pid ${child}) ended with no error and no change to its files: killed (kill -9, the OOM killer) or exited by itself; node --watch, which said only that it ended, lives on and starts it again only after a change to a file it watches: wtproxy restart --front ${px.port} (or save a file it watches)`), r.body);
  assert.equal((await lsJson(tmp))[0].start_failed?.when, 'died');
  // Saving a file it watches starts it again, as the message says.
  fs.writeFileSync(script, `import(${JSON.stringify(wtServer)});\n// saved\n`);
  await waitFor(async () => {
    const a = await curlFrom(tmp.wt.k, px.port, '/', { timeout: 20000 });
    return a.status === 200 ? a : new Error(`${a.status}: ${a.body}`);
  }, 20000, 'served after the save');
  assert.match(run.stderr(), /wt-k's server is starting again after its server process died/);
});

// A daemon killed -9 while a `wtproxy run` Django it serves has failed at
// start, and a new daemon on the same state file and front. That daemon
// answered as for any starting server: each request held for start_timeout
// (60 s), and `ls` said starting. The failure is kept with the entry.
async function failedUnderRun(t, name) {
  const tmp = makeWorktrees(t, [name]);
  const px = await startDaemon(t, tmp, [], { env });
  brokenApp(tmp.wt[name]);
  const run = startRun(t, tmp, {
    cwd: tmp.wt[name], front: px.port, env, detached: true, stopSignal: 'SIGKILL',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  // The wrapper's start-failed is answered once it is in the state file.
  await waitFor(() => {
    const entries = JSON.parse(fs.readFileSync(tmp.state, 'utf8')).entries;
    return entries.length === 1 && entries[0].start_failed?.when === 'start';
  }, 15000, 'the failure saved with the entry');
  return { tmp, px, run, wt: tmp.wt[name] };
}

// kill -9 d and wait until it is gone (its listening socket with it).
async function killDaemon(d) {
  d.proc.kill('SIGKILL');
  await d.exited;
}

// A daemon on the same control socket, state file and front as the dead one.
const nextDaemon = (t, tmp, front) => startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`], { env });

test('a failed start outlives its daemon: the next daemon answers its 503 at once, and serves it once fixed', async (t) => {
  const { tmp, px, run, wt } = await failedUnderRun(t, 'f');
  await killDaemon(px);
  const px2 = await nextDaemon(t, tmp, px.port);
  assert.match(px2.stderr(), new RegExp(`restored ${wt} on front :${px.port}`));

  const r = await curlFrom(wt, px.port, '/hello/', { timeout: 70000 });
  assertFailedAtStart(t, r, px.port);
  const [e] = await lsJson(tmp);
  assert.equal(e.pid, run.pid);
  assert.deepEqual([e.state, e.start_failed?.when, e.start_failed?.reloader], ['starting', 'start', "Django's autoreloader"]);
  const ls = await cli(tmp, ['ls']);
  assert.match(ls.stdout, new RegExp(`${wt}\\s+\\S+\\s+${px.port}\\s+\\d+\\s+${run.pid}\\s+failed\\s`), ls.stdout);
  const [dash] = await dashboard(px.port);
  assert.equal(dash.status, 'failed');
  assert.match(dash.status_reason, /^failed at start; pid \d+ lives on without listening.*its error: SyntaxError/);

  const ok = await servedAfterFix(wt, px.port);
  assert.equal(ok.body, 'hello v1');
  const [after] = await lsJson(tmp);
  assert.deepEqual([after.pid, after.state, after.start_failed], [run.pid, 'ready', undefined]);
  assert.match(run.stderr(), /wt-f's server is starting again after its failed start/);
});

// The fix lands while no daemon runs: the wrapper cannot say that its
// server starts again, nor that it listens. The state file still says it
// failed; the next daemon must not keep saying so once the wrapper tells
// it, within a second, and the request is served.
test('a failed start fixed while no daemon runs: the wrapper tells the next daemon, which serves it', async (t) => {
  const { tmp, px, run, wt } = await failedUnderRun(t, 'g');
  await killDaemon(px);
  await new Promise((r) => setTimeout(r, 1500)); // the reloader's first look at urls.py, as above
  fs.writeFileSync(path.join(wt, 'site_cfg/urls.py'), goodUrls);
  await waitFor(() => /could not mark \S+ ready: .*asking again every 1 s/.test(run.stderr()), 20000,
    `the server listens with no daemon to tell:\n${run.stderr()}`);
  assert.match(run.stderr(), /wt-g's server is starting again after its failed start[\s\S]*warning: could not tell the daemon: [^\n]*; telling it again every 1 s/);

  const px2 = await nextDaemon(t, tmp, px.port);
  await waitFor(() => /the daemon answers again: wt-g is marked ready/.test(run.stderr()), 5000,
    `the wrapper told the next daemon:\n${run.stderr()}`);
  const r = await curlFrom(wt, px.port, '/hello/', { timeout: 20000 });
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'hello v1');
  const [e] = await lsJson(tmp);
  assert.deepEqual([e.pid, e.state, e.start_failed], [run.pid, 'ready', undefined]);
  assert.ok(pidAlive(run.pid));
  assert.match(px2.stderr(), /restored/);
});

// Playwright's webServer runs its `wtproxy run` again when nothing answered
// on its front (its daemon died). Meeting the failed server that outlived
// that daemon, the run waited 15 s for a verdict that never comes; now it
// stops it at once and starts its own, whose traceback its runner reads.
test('a second `wtproxy run` meeting the failed server that outlived its daemon replaces it at once', async (t) => {
  const { tmp, px, run, wt } = await failedUnderRun(t, 'h');
  await killDaemon(px);
  await nextDaemon(t, tmp, px.port);
  const startedAt = Date.now();
  const second = startRun(t, tmp, {
    cwd: wt, front: px.port, env, detached: true, stopSignal: 'SIGKILL',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  await waitFor(() => /stopping it to run this one/.test(second.stderr()), 20000, 'the second run says what it does');
  const ms = Date.now() - startedAt;
  t.diagnostic(`the second run decided after ${ms} ms`);
  assert.ok(ms < 7000, `it decided after ${ms} ms, not at once (it waited 15 s)`);
  assert.match(second.stderr(), new RegExp(`wt-h's server on front :${px.port} \\(pid ${run.pid}, [^\\n]*\\) outlived the daemon it was registered with, and it failed at start and waits for a change to its files \\(its error: SyntaxError[^\\n]*\\); stopping it to run this one`), second.stderr());
  await run.exited;
  await waitFor(() => /wt-h's server failed at start and lives on without listening/.test(second.stderr()), 15000,
    `the second run's own server fails the same way:\n${second.stderr()}`);
  assert.match(second.stderr(), /stopping it to run this one[\s\S]*SyntaxError: '\[' was never closed[\s\S]*failed at start and lives on/,
    'the traceback is in its runner\'s output');
  const r = await curlFrom(wt, px.port, '/hello/', { timeout: 20000 });
  assertFailedAtStart(t, r, px.port);
  assert.deepEqual((await lsJson(tmp)).map((e) => e.pid), [second.pid]);
});

// An agent's `restart` tool (wtproxy mcp) waited its whole 30 s for a
// server that failed and waits for a change, then said "not ready". Now it
// says at once that it failed, with its last lines, and that an edit, not
// a restart, is what helps: for the server it starts from the .wtproxy and
// for the one it restarts.
test('the MCP restart tool says at once that the server failed and lives on, and to fix and save', async (t) => {
  const tmp = makeWorktrees(t, ['m']);
  const px = await startDaemon(t, tmp, ['--whoami', 'off']);
  fs.writeFileSync(path.join(tmp.wt.m, 'server.js'), "throw new Error('boom: DATABASE_URL is not set');\n");
  fs.writeFileSync(path.join(tmp.wt.m, '.wtproxy'),
    `start = ${process.execPath} --watch server.js {port}\nfront = ${px.port}\nidle_stop = 0\n`);
  const mcp = startMcp(t, { cwd: tmp.wt.m, env: cliEnv(tmp, { XDG_STATE_HOME: path.join(tmp.root, 'state') }) });
  await initialize(mcp);
  for (const [id, what] of [[1, 'was started'], [2, 'was restarted']]) {
    const at = Date.now();
    const r = await mcp.call(id, 'restart');
    const ms = Date.now() - at;
    t.diagnostic(`restart (${what}) answered after ${ms} ms`);
    assert.equal(r.isError, true, r.content[0].text);
    assert.equal(r.structuredContent.error, 'failed', r.content[0].text);
    assert.ok(ms < 20000, `it answered after ${ms} ms, not at once (it waited 30 s)`);
    assert.match(r.content[0].text, new RegExp(`${what} but it failed at start and lives on without listening, waiting for a change to its files: fix the error its log's last lines name and save \\(node --watch restarts it\\)`));
    assert.match(r.content[0].text, /boom: DATABASE_URL is not set[\s\S]*\nFix the error its last lines name and save the file: its reloader starts it again; then check with servers$/);
  }
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

// Django's autoreloader takes its first look at the files after its
// server thread failed: a fix saved before that (right after `restart`
// said the failure) is never seen, and the server stays down. The 503 kept
// asking for that edit, and the MCP servers tool said "starting" (its
// server is restarting: wait). Now the 503 says the files changed since and
// to restart it, servers says failed, and a server run with
// --restart-on-stale is restarted by the daemon. This one prints Django's
// traceback naming its urls.py while that file says broken, and never looks
// again; with it fixed, it serves.
test('a failed server whose fix its reloader never saw: the 503 says restart, servers says failed; --restart-on-stale restarts it', async (t) => {
  const tmp = makeWorktrees(t, ['f', 'g']);
  const px = await startDaemon(t, tmp);
  const start = (wt, runArgs = []) => {
    const urls = path.join(wt, 'urls.py');
    fs.writeFileSync(urls, brokenUrls);
    const traceback = [...djangoStart, ...threadHead, `  File "${urls}", line 3`, "    path('hello/', hello", '        ^',
      "SyntaxError: '(' was never closed"].join('\n');
    const script = `const fs = require('node:fs');
if (fs.readFileSync(${JSON.stringify(urls)}, 'utf8').includes('hello)]')) import(${JSON.stringify(wtServer)});
else { console.error(${JSON.stringify(traceback)}); setInterval(() => {}, 1000); }`;
    fs.writeFileSync(path.join(wt, 'server.js'), script);
    const run = startRun(t, tmp, {
      cwd: wt, front: px.port, detached: true, stopSignal: 'SIGKILL', runArgs,
      command: [process.execPath, 'server.js', '{port}'],
    });
    return { urls, run };
  };
  const f = start(tmp.wt.f);
  const g = start(tmp.wt.g, ['--restart-on-stale']);
  for (const { run } of [f, g])
    await waitFor(() => /failed at start and lives on/.test(run.stderr()), 10000, 'the wrapper says the start failed');
  const r = await curlFrom(tmp.wt.f, px.port, '/', { timeout: 20000 });
  assert.match(r.body, /failed at start and waits for a change to its files/);
  fs.writeFileSync(f.urls, goodUrls);
  fs.writeFileSync(g.urls, goodUrls);
  const told = await waitFor(async () => {
    const a = await curlFrom(tmp.wt.f, px.port, '/', { timeout: 20000 });
    return /did not start it again/.test(a.body) ? a : new Error(`${a.status}: ${a.body}`);
  }, 8000, 'the 503 says its reloader did not start it again');
  assert.equal(told.status, 503);
  assert.ok(told.body.includes(`its files changed since it failed (${f.urls}), yet its reloader did not start it again: wtproxy restart --front ${px.port}`), told.body);
  const mcp = startMcp(t, { cwd: tmp.wt.f, env: cliEnv(tmp) });
  await initialize(mcp);
  const [e] = (await mcp.call(1, 'servers')).structuredContent.servers;
  assert.equal(e.state, 'failed', JSON.stringify(e));
  assert.match(e.failed, /its files changed since it failed .*: wtproxy restart --front/);
  assert.doesNotMatch(JSON.stringify(e), /its server is restarting/);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
  // --restart-on-stale: the daemon restarts it, and the request is served
  const ok = await curlFrom(tmp.wt.g, px.port, '/', { timeout: 20000 });
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.worktree, tmp.wt.g);
});

// A server the daemon starts from a .wtproxy that does not reload (`node
// server.mjs`) is restarted by the daemon once an edit makes it stale.
// When the edit broke it and the new process exits at start, the request
// that asked for the restart waited in the gate for the whole
// start_timeout (its registration was gone, the gate still asked the dead
// port), then got a 502 "Connection refused" naming the dead pid:
// Playwright's own 30 s timeout fired first, with nothing said. Now it gets
// at once the 503 of a server that exited, naming its log.
test('a stale .wtproxy server restarted into a crash: the 503 that names its log at once', async (t) => {
  const tmp = makeWorktrees(t, ['r']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '200ms', '--start-timeout', '20s']);
  const wt = tmp.wt.r;
  fs.writeFileSync(path.join(wt, 'server.mjs'), "import fs from 'node:fs';\n" +
    "if (fs.existsSync('broken')) { console.error('SyntaxError: Unexpected end of input'); process.exit(1); }\n" +
    `import(${JSON.stringify(wtServer)});\n`);
  fs.writeFileSync(path.join(wt, 'app.py'), 'print(1)\n');
  fs.writeFileSync(path.join(wt, '.wtproxy'),
    `start = ${process.execPath} server.mjs {port}\nfront = ${px.port}\nidle_stop = 0\n`);
  assert.equal((await curlFrom(wt, px.port, '/')).status, 200, 'served, verified');
  fs.writeFileSync(path.join(wt, 'broken'), '');
  fs.writeFileSync(path.join(wt, 'app.py'), 'print(2)\n'); // stale: the daemon restarts it
  const r = await curlFrom(wt, px.port, '/', { timeout: 30000 });
  t.diagnostic(`answered ${r.status} after ${r.ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `answered after ${r.ms} ms, not at once`);
  assert.match(r.body, /exited with status 1 before it listened; its output: \S+\.log \(wtproxy logs /);
  fs.rmSync(path.join(wt, 'broken'));
  assert.equal((await curlFrom(wt, px.port, '/')).status, 200, 'started again by the next request, once fixed');

  // The same server adopted by the next daemon after a kill -9: its end
  // was "no dev server is registered ... wtproxy run -- <server command>",
  // a fix for a server of one's own, not a .wtproxy's, and no log.
  await killDaemon(px);
  const px2 = await nextDaemon(t, tmp, px.port);
  fs.writeFileSync(path.join(wt, 'broken'), '');
  fs.writeFileSync(path.join(wt, 'app.py'), 'print(3)\n');
  const a = await curlFrom(wt, px2.port, '/', { timeout: 30000 });
  assert.equal(a.status, 503, a.body);
  assert.ok(a.ms < FAST_MS, `answered after ${a.ms} ms, not at once`);
  assert.match(a.body, /declares \(wrapper pid \d+\) exited before it served this request; its output: \S+\.log \(wtproxy logs /);
  // It served before the edit: its headline said "exited before it listened".
  assert.match(a.body, /: The dev server of this worktree served, then exited \(an edit may have broken it, or the restart after one/);
  assert.doesNotMatch(a.body, /before it listened/);
  assert.match(a.body, /\nFix: Fix the error its last lines above name, then send the request again: the daemon starts the server its \.wtproxy declares again\n$/);
});

// node_modules is never committed: a worktree made after its app adopted
// wtproxy has no node_modules/wtproxy-whoami, and its server stops at its
// import. The 503 said to fix the error its lines name, and an agent ran
// `npm install wtproxy-whoami`: another package, or none. Now each place
// says the package is missing and the link to this wtproxy's package
// (`wtproxy doctor`'s), which, run as printed, makes the server start.
test('a worktree without node_modules/wtproxy-whoami, or a python without wtproxy_whoami: the 503 names the missing package and its link', async (t) => {
  const tmp = makeWorktrees(t, ['n']);
  const wt = tmp.wt.n;
  const px = await startDaemon(t, tmp);
  const front = String(px.port);
  fs.writeFileSync(path.join(wt, 'server.mjs'), `import 'wtproxy-whoami';\nawait import(${JSON.stringify(wtServer)});\n`);
  const link = `mkdir -p ${wt}/node_modules && ln -sfn ${repoRoot}/whoami/node ${wt}/node_modules/wtproxy-whoami`;
  const says = (text) => {
    assert.match(text, /[Tt]his worktree lacks the wtproxy-whoami package its server imports/, text);
    assert.ok(text.includes(link), `the link command is named:\n${text}`);
    assert.doesNotMatch(text, /npm install wtproxy-whoami/, text);
  };

  // `node server.mjs` exits at its import.
  const run = await cli(tmp, ['run', '--front', front, '--', process.execPath, 'server.mjs', '{port}'], { cwd: wt });
  assert.equal(run.code, 1, run.stderr);
  const r = await curlFrom(wt, px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 503, r.body);
  says(r.body);
  assert.match(r.body, /\nFix: This worktree lacks the wtproxy-whoami package/, 'the link is the page\'s fix');
  assert.match(run.stderr, /Cannot find package 'wtproxy-whoami' imported from/);
  assert.match(run.stderr, /wtproxy: wt-n's server exited: this worktree lacks/);
  says(run.stderr);
  says((await cli(tmp, ['ls'], { cwd: wt })).stdout);
  // require() too, whose error Node prints above ten stack frames.
  fs.writeFileSync(path.join(wt, 'server.cjs'), "require('wtproxy-whoami');\n");
  const req = await cli(tmp, ['run', '--front', front, '--', process.execPath, 'server.cjs', '{port}'], { cwd: wt });
  assert.equal(req.code, 1, req.stderr);
  assert.match(req.stderr, /Error: Cannot find module 'wtproxy-whoami'\nRequire stack:/);
  says(req.stderr);

  // `node --watch` lives on after it: the 503 at once, its own kind.
  const watch = startRun(t, tmp, {
    cwd: wt, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '--watch', 'server.mjs', '{port}'],
  });
  await waitFor(() => /failed at start and lives on without listening: this worktree lacks/.test(watch.stderr()),
    15000, 'the wrapper says the package is missing');
  says(watch.stderr());
  const w = await curlFrom(wt, px.port, '/', { timeout: 20000 });
  assert.equal(w.status, 503, w.body);
  assert.ok(w.ms < FAST_MS, `the 503 came after ${w.ms} ms, not at once`);
  assert.match(w.body, /it imports wtproxy's \/__whoami middleware package, which this worktree \(or its python\) lacks/);
  assert.match(w.body, new RegExp(`then start the server again: wtproxy restart --front ${front}`));
  says(w.body);
  says((await cli(tmp, ['why', '--front', front], { cwd: wt })).stdout);

  // The link as printed, then the restart the page names: served.
  const sh = await runToExit('/bin/sh', ['-c', link], { cwd: wt });
  assert.equal(sh.code, 0, sh.stderr);
  await cli(tmp, ['restart', '--front', front], { cwd: wt, ms: 20000 });
  const ok = await curlFrom(wt, px.port, '/', { timeout: 20000 });
  assert.equal(ok.status, 200, ok.body);
  assert.equal((await cli(tmp, ['stop', '--front', front], { cwd: wt, ms: 20000 })).code, 0);
  await watch.exited;

  // Python: what makes this wtproxy's wtproxy_whoami importable.
  fs.writeFileSync(path.join(wt, 'server.py'), 'import wtproxy_whoami\n');
  const py = await cli(tmp, ['run', '--front', front, '--', python, 'server.py', '{port}'],
    { cwd: wt, env: { PYTHONPATH: '' } });
  assert.equal(py.code, 1, py.stderr);
  const p = await curlFrom(wt, px.port, '/', { timeout: 20000 });
  assert.equal(p.status, 503, p.body);
  assert.match(p.body, /\nFix: The python that runs this worktree's server lacks the wtproxy_whoami package it imports/);
  assert.ok(p.body.includes(`PYTHONPATH=${pythonPath} before the command that starts it`), p.body);
  assert.doesNotMatch(p.body, /pip install wtproxy/);
});

test('a Django importing a package its requirements.txt declares, not installed: the 503 names the install, not an edit', async (t) => {
  const tmp = makeWorktrees(t, ['d']);
  const wt = tmp.wt.d;
  const px = await startDaemon(t, tmp, [], { env });
  writeDjangoProject(wt);
  fs.writeFileSync(path.join(wt, 'requirements.txt'), 'Django>=3.2\nwtp-absent-dep==1.0\n');
  const views = path.join(wt, 'app/views.py');
  fs.writeFileSync(views, `import wtp_absent_dep\n${fs.readFileSync(views, 'utf8')}`);
  const run = startRun(t, tmp, {
    cwd: wt, front: px.port, env, detached: true, stopSignal: 'SIGKILL',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  const install = `cd ${wt} && ${python} -m pip install -r requirements.txt`;
  await waitFor(() => /failed at start and lives on without listening: .* has no module wtp_absent_dep/.test(run.stderr()),
    15000, 'the wrapper says the package is not installed');
  assert.ok(run.stderr().includes(install), run.stderr());
  const r = await curlFrom(wt, px.port, '/hello/', { timeout: 20000 });
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, /a package the app needs is not installed where it runs/);
  assert.ok(r.body.includes(install), r.body);
  assert.match(r.body, /\nFix: Install them with the command above/);
  assert.doesNotMatch(r.body, /Fix the error its last lines above name/);
  const why = await cli(tmp, ['why', '--front', String(px.port)], { cwd: wt });
  assert.ok(why.stdout.includes(install), why.stdout);
  // restart, which an agent runs next, names the install too, not an edit
  const again = await cli(tmp, ['restart', '--front', String(px.port)], { cwd: wt, ms: 30000 });
  assert.equal(again.code, 1, again.stderr);
  assert.ok(`${again.stdout}${again.stderr}`.includes(install), `${again.stdout}${again.stderr}`);
  assert.doesNotMatch(`${again.stdout}${again.stderr}`, /fix the error its log's last lines name and save/);
});

// flask run --reload, as `wtproxy init` writes its start, is the other
// way round: its server process, restarted by its reloader after an edit
// that broke the app, prints the traceback and serves on, answering every
// request, /__whoami too, with a 500 of that error. The 502 said "answers
// GET /__whoami with HTTP 500 ... If you added the whoami middleware after
// it started, restart it ... Otherwise wrap the WSGI app": a middleware to
// add, while the SyntaxError and its line were only in the server's log.
// Now the wrapper reads Flask's traceback and tells the daemon as for
// Django: the 503 with its traceback's end at once, served once fixed.
const flaskApp = (body) => `from flask import Flask
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware

app = Flask(__name__)


@app.route('/hello')
def hello():
    return ${body}


app.wsgi_app = WhoamiWSGIMiddleware(app.wsgi_app)
`;

test('a flask run --reload whose app.py an edit breaks: the 503 with its SyntaxError at once, served once fixed', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, [], { env: { ...env, PYTHONDONTWRITEBYTECODE: '1' } });
  const tmp = declaring(t, [`start = ${python} -m flask --app app run --host 127.0.0.1 --port {port} --reload`,
    `front = ${px.port}`, 'idle_stop = 0'], ['fl']);
  const wt = tmp.wt.fl;
  const app = path.join(wt, 'app.py');
  fs.writeFileSync(app, flaskApp("'hello v1'"));
  const first = await curlFrom(wt, px.port, '/hello', { timeout: 30000 });
  assert.equal(first.status, 200, first.body);
  assert.equal(first.body, 'hello v1');
  const [ready] = await lsJson(tmp0);

  const savedAt = Date.now();
  fs.writeFileSync(app, flaskApp("'hello v2'") + 'def broken(:\n');
  const r = await curlFrom(wt, px.port, '/hello', { timeout: 30000 });
  const ms = Date.now() - savedAt;
  t.diagnostic(`from the broken save to the refusal: ${ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(ms < 7000, `the refusal came ${ms} ms after the save, not within seconds`);
  assert.match(r.body, /An edit broke the dev server of this worktree/);
  assert.ok(r.body.includes(`File "${app}", line 13\n    def broken(:\n`), r.body);
  assert.match(r.body, /\nSyntaxError: invalid syntax\n/, 'the traceback\'s last line');
  assert.match(r.body, new RegExp(`${wt}'s server \\(pid \\d+, under flask run's reloader\\) does not serve on port \\d+; its last lines:`));
  assert.doesNotMatch(r.body, /whoami middleware|WSGI/);
  const [failed] = await lsJson(tmp0);
  assert.equal(failed.pid, ready.pid);
  assert.equal(failed.start_failed.when, 'edit');
  assert.equal(failed.start_failed.reloader, "flask run's reloader");
  const again = await curlFrom(wt, px.port, '/hello', { timeout: 30000 });
  assert.equal(again.status, 503, again.body);
  assert.ok(again.ms < 2000, `the next request waited ${again.ms} ms for its 503`);
  assert.match(fs.readFileSync(failed.log, 'utf8'), /SyntaxError: invalid syntax\n[\s\S]*wtproxy: an edit broke wt-fl's server: flask run's reloader restarted it after a change to its files and the new one failed; it answers every request with that error: fix the error above and save/);

  // Fixed: its reloader starts a new server, which the same wrapper
  // serves (the reloader's first look at app.py came before the fix).
  await new Promise((res) => setTimeout(res, 1500));
  fs.writeFileSync(app, flaskApp("'hello v3'"));
  const ok = await waitFor(async () => {
    const a = await curlFrom(wt, px.port, '/hello', { timeout: 20000 });
    return a.status === 200 ? a : new Error(`${a.status}: ${a.body}`);
  }, 20000, 'served after the fix');
  assert.equal(ok.body, 'hello v3');
  const [after] = await lsJson(tmp0);
  assert.equal(after.pid, ready.pid, 'the same wrapper serves: the reloader restarted its server');
  assert.equal(after.state, 'ready');
  assert.equal(after.start_failed, undefined);
  assert.match(fs.readFileSync(after.log, 'utf8'), /wt-fl's server is starting again after the edit that broke it/);
});
