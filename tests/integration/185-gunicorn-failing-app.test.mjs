// 185: a Django app under gunicorn --reload whose models.py does not
// compile (explore-gun, finding 2). gunicorn's workers live on, each
// answering every request, /__whoami too, with a 500 whose body is the
// traceback's frames (not the error: gunicorn prints that to its log).
// wtproxy held each request 10-70 s, then refused it 502 no-whoami ("wrap
// the WSGI app ... or --trust-registry"), and doctor's fix was `wtproxy
// init --apply`, which said "nothing to change". Now the wrapper reads
// gunicorn's failed load in its output, as it reads flask run's: a request
// gets a 503 at once naming the SyntaxError and models.py's line, with the
// fix "fix the error and save"; `wtproxy ls` says failed, `why` and doctor
// say the same; the fix saved, the next request is served. Skipped without
// Debian's gunicorn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startDaemon, makeWorktrees, declaring, lsJson, cli, curlFrom, waitFor, sanitizerClean } from './lib/registry.mjs';
import { pythonPath, writeDjangoProject, freePort } from './lib/whoami.mjs';

const gunicorn = '/usr/bin/gunicorn';
const skip = fs.existsSync(gunicorn) ? false : `no ${gunicorn} (apt-get install gunicorn)`;
const env = { PYTHONPATH: pythonPath };
const FAST_MS = 10000; // it took reload_grace (10 s) to start_timeout (60 s) and more

const goodModels = 'from django.db import models\n';
const brokenModels = 'from django.db import models\n\n\nclass Broken(\n'; // '(' never closed

// writeDjangoProject's app, served by gunicorn: a wsgi module, and an
// installed app whose models.py Django imports at setup.
function gunicornApp(dir, models) {
  writeDjangoProject(dir);
  const settings = path.join(dir, 'site_cfg/settings.py');
  fs.writeFileSync(settings, fs.readFileSync(settings, 'utf8').replace('INSTALLED_APPS = []', "INSTALLED_APPS = ['app']"));
  fs.writeFileSync(path.join(dir, 'site_cfg/wsgi.py'),
    "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'site_cfg.settings')\n" +
    'from django.core.wsgi import get_wsgi_application\napplication = get_wsgi_application()\n');
  fs.writeFileSync(path.join(dir, 'app/models.py'), models);
}

// The 503 of a server whose app fails to load, at once: its error and
// where, and the fix, never the middleware's.
function assertFailsToLoad(t, r, front, headline) {
  t.diagnostic(`the ${r.status} came after ${r.ms} ms`);
  assert.equal(r.status, 503, r.body);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms, not at once`);
  assert.match(r.body, headline);
  assert.match(r.body, /app\/models\.py", line 4/, 'the file and line');
  assert.match(r.body, /SyntaxError: '\(' was never closed/, 'the error');
  assert.match(r.body, /under gunicorn's reloader/);
  assert.match(r.body, new RegExp(`Fix: Fix the error its last lines above name and save the file: .* wtproxy logs --front ${front}`));
  assert.doesNotMatch(r.body, /whoami middleware|WhoamiWSGIMiddleware|trust-registry|wtproxy init/);
}

// Once the fix is saved, the workers load the app again and serve.
async function servedAfterFix(dir, front) {
  fs.writeFileSync(path.join(dir, 'app/models.py'), goodModels);
  return waitFor(async () => {
    const r = await curlFrom(dir, front, '/hello/', { timeout: 20000 });
    return r.status === 200 ? r : new Error(`${r.status}: ${r.body}`);
  }, 30000, 'served after the fix');
}

test('gunicorn --reload whose models.py does not compile: 503 at once with the error, ls/why/doctor say it, served once fixed', { skip }, async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, [], { env });
  const tmp = declaring(t, [`start = ${gunicorn} --reload --workers 2 --bind 127.0.0.1:{port} site_cfg.wsgi`,
    `front = ${px.port}`, 'idle_stop = 0'], ['a']);
  const dir = tmp.wt.a;
  gunicornApp(dir, brokenModels);

  const r = await curlFrom(dir, px.port, '/hello/', { timeout: 90000 });
  assertFailsToLoad(t, r, px.port, /failed at start and waits for a change to its files/);
  const again = await curlFrom(dir, px.port, '/__whoami', { timeout: 20000 });
  assertFailsToLoad(t, again, px.port, /failed at start/);

  const [e] = await lsJson(tmp0);
  assert.equal(e.start_failed.reloader, "gunicorn's reloader");
  assert.equal(e.start_failed.when, 'start');
  const ls = await cli(tmp0, ['ls']);
  assert.match(ls.stdout, new RegExp(`${dir}\\s+a\\s+${px.port}\\s+\\d+\\s+${e.pid}\\s+failed\\s`), ls.stdout);
  const why = await cli(tmp0, ['why', '--front', String(px.port)], { cwd: dir });
  assert.match(why.stdout, /failed at start: .*fix it and save: gunicorn's reloader restarts it/, why.stdout);
  assert.match(why.stdout, /SyntaxError: '\(' was never closed/, why.stdout);
  const doc = await cli(tmp0, ['doctor', '--front', String(px.port)], { cwd: dir });
  sanitizerClean(assert, doc.stderr);
  assert.match(doc.stdout, /^problem\s+whoami\s+the server \(pid \d+\) failed at start and waits for a change to its files \(gunicorn's reloader\): requests get 503 with its last lines: [\s\S]*app\/models\.py", line 4[\s\S]*SyntaxError: '\(' was never closed/m, doc.stdout);
  assert.match(doc.stdout, new RegExp(`fix: fix the error its last lines name and save \\(gunicorn's reloader starts it again\\); all its output: wtproxy logs --front ${px.port}$`, 'm'), doc.stdout);
  assert.doesNotMatch(doc.stdout, /init --apply/, doc.stdout);

  const ok = await servedAfterFix(dir, px.port);
  assert.equal(ok.body, 'hello v1');
  const [after] = await lsJson(tmp0);
  assert.equal(after.pid, e.pid, 'the same wrapper serves: gunicorn reloaded its workers');
  assert.equal(after.start_failed, undefined);

  // An edit that breaks it again: said as an edit, at once.
  fs.writeFileSync(path.join(dir, 'app/models.py'), brokenModels);
  const broke = await waitFor(async () => {
    const b = await curlFrom(dir, px.port, '/hello/', { timeout: 20000 });
    return b.status === 503 ? b : new Error(`${b.status}: ${b.body}`);
  }, 20000, 'refused after the edit');
  assertFailsToLoad(t, broke, px.port, /An edit broke the dev server of this worktree/);
});

// Without a wrapper to read its output (started by hand, registered with
// its pid), only its answer says it: a 500 of a Python traceback is
// waited for within reload_grace, then refused as an app that fails to
// load, with the traceback's end, never as a missing middleware; doctor
// says the same.
test('gunicorn started by hand and registered: its traceback answer is an app that fails to load, not a missing middleware', { skip }, async (t) => {
  const tmp = makeWorktrees(t, ['b']);
  const px = await startDaemon(t, tmp, ['--reload-grace', '1s'], { env });
  const dir = tmp.wt.b;
  gunicornApp(dir, brokenModels);
  const port = await freePort();
  const server = spawn(gunicorn, ['--reload', '--workers', '1', '--bind', `127.0.0.1:${port}`, 'site_cfg.wsgi'],
    { cwd: dir, env: { ...process.env, ...env }, stdio: 'ignore' });
  t.after(() => server.kill('SIGKILL'));
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(port),
    '--pid', String(server.pid)], { cwd: dir });
  assert.equal(reg.code, 0, reg.stderr);
  const r = await waitFor(async () => {
    const a = await curlFrom(dir, px.port, '/hello/', { timeout: 20000 });
    return a.status === 503 ? a : new Error(`${a.status}: ${a.body}`);
  }, 20000, 'refused as an app that fails to load');
  t.diagnostic(`the 503 came after ${r.ms} ms`);
  assert.ok(r.ms < FAST_MS, `the 503 came after ${r.ms} ms`);
  assert.match(r.body, /The dev server of this worktree fails to load its app: it answers every request with an error and a Python traceback/);
  assert.match(r.body, new RegExp(`pid ${server.pid}: .*gunicorn.*\\) answers every request, GET /__whoami too, with HTTP 500 and a Python traceback: its app fails to load`));
  assert.match(r.body, /line \d+, in _call_with_frames_removed/, 'the traceback\'s last lines');
  assert.match(r.body, /Fix: Fix the error the traceback names and save the file/);
  assert.doesNotMatch(r.body, /whoami middleware|WhoamiWSGIMiddleware|trust-registry|wtproxy init/);
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'app-error');
  const doc = await cli(tmp, ['doctor', '--front', String(px.port)], { cwd: dir });
  assert.match(doc.stdout, /^problem\s+whoami\s+GET http:\/\/127\.0\.0\.1:\d+\/__whoami answered 500 with a Python traceback: its app fails to load; the traceback's last lines:/m, doc.stdout);
  assert.match(doc.stdout, new RegExp(`fix: fix the error the traceback names and save \\(its autoreloader loads the app again; a server without one: kill ${server.pid} `), doc.stdout);
  assert.doesNotMatch(doc.stdout, /init --apply/, doc.stdout);
});
