// 172: the gate in front of real Django dev servers (Debian's
// python3-django, the wtproxy_whoami middleware from whoami/python):
// 1. a recycled port: wt-old's server outlived its deleted worktree, and
//    its port is registered for wt-a: refused, naming the old checkout;
// 2. the agent's own old server: runserver --noreload, a .py edited: the
//    next request is refused as stale at once (nothing reloads it); with
//    --restart-on-stale it succeeds and shows the new behaviour; with the
//    autoreloader on, an edit followed at once by a request gets the new
//    behaviour, never a refusal and never the old one;
// 3. an edit outside the declared patterns (an e2e .ts test) is not stale;
// 4. settings read from .env at start (django-environ, python-dotenv): an
//    edit of .env, which Django's reloader does not watch, makes the server
//    stale; with --restart-on-stale the request gets the new setting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeWorktrees, startDaemon, startRun, cli, get, sanitizerClean } from './lib/registry.mjs';
import { python, pythonPath, writeDjangoProject, startDjango } from './lib/whoami.mjs';

// A repo whose main branch holds the Django project, and worktrees of it.
function djangoWorktrees(t, names) {
  const tmp = makeWorktrees(t, []);
  writeDjangoProject(tmp.repo);
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), '__pycache__/\n');
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'shop');
  for (const n of names) {
    tmp.wt[n] = path.join(tmp.root, `wt-${n}`);
    git(tmp.repo, 'worktree', 'add', '-q', tmp.wt[n], '-b', n);
  }
  return tmp;
}

const pythonEnv = { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };

// `wtproxy run [runArgs] -- python3 manage.py runserver [--noreload]
// 127.0.0.1:{port}` in worktree dir; resolves once ready.
async function runDjango(t, tmp, dir, front, { runArgs = [], reload = false } = {}) {
  const run = startRun(t, tmp, {
    cwd: dir, front, runArgs, readyMs: 30000, stopSignal: 'SIGTERM', env: pythonEnv,
    command: [python, 'manage.py', 'runserver', ...(reload ? [] : ['--noreload']), '127.0.0.1:{port}'],
  });
  await run.ready;
  return { proc: run.proc, output: run.stderr };
}

const hello = (px, wt) => get(px.port, { 'X-Wtproxy-Worktree': wt }, '/hello/');

function edit(wt, greeting) {
  const views = path.join(wt, 'app/views.py');
  fs.writeFileSync(views, fs.readFileSync(views, 'utf8').replace(/GREETING = .*/, `GREETING = ${JSON.stringify(greeting)}`));
}

test('a recycled port: the old checkout\'s server is refused, named with its pid', async (t) => {
  const tmp = djangoWorktrees(t, ['a', 'old']);
  const px = await startDaemon(t, tmp);
  const stray = await startDjango(t, tmp.wt.old);
  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.old); // its server runs on
  // --no-wait: register would say the refusal itself (147); the relay's is tested here
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(stray.port),
    '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  const r = await hello(px, tmp.wt.a);
  assert.equal(r.status, 421, r.body);
  assert.equal(r.headers['x-wtproxy-refused'], 'checkout-mismatch');
  assert.match(r.body, new RegExp(`port ${stray.port} is served by ${tmp.wt.old}, not by ${tmp.wt.a}`));
  assert.match(r.body, new RegExp(`kill ${stray.pid}`));
  sanitizerClean(assert, px.stderr());
});

test('own old server (--noreload): stale after an edit, refused at once since nothing reloads it', async (t) => {
  const tmp = djangoWorktrees(t, ['a']);
  // a grace the request would time out in: nothing reloads this server
  // ("reloads": false), so it is not waited for (test 174)
  const px = await startDaemon(t, tmp, ['--stale-grace', '60s']);
  await runDjango(t, tmp, tmp.wt.a, px.port);
  assert.equal((await hello(px, tmp.wt.a)).body, 'hello v1');
  edit(tmp.wt.a, 'hello v2');
  const r = await hello(px, tmp.wt.a);
  assert.equal(r.status, 409, r.body);
  assert.equal(r.headers['x-wtproxy-refused'], 'stale-code');
  assert.match(r.body, /app\/views\.py/);
  assert.match(r.body, /nothing reloads it/);
  assert.doesNotMatch(r.body, /hello v1/, 'never the old code\'s answer');
});

test('own old server with --restart-on-stale: restarted, the request answered by the new code', async (t) => {
  const tmp = djangoWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '500ms']);
  const run = await runDjango(t, tmp, tmp.wt.a, px.port, { runArgs: ['--restart-on-stale'] });
  assert.equal((await hello(px, tmp.wt.a)).body, 'hello v1');
  edit(tmp.wt.a, 'hello v2');
  const t0 = Date.now();
  const r = await hello(px, tmp.wt.a);
  assert.equal(r.status, 200, `${r.status} after ${Date.now() - t0} ms: ${r.body}\n${run.output()}`);
  assert.equal(r.body, 'hello v2');
  assert.match(run.output(), /restarting it/);
});

test('autoreloader on: an edit followed at once by a request gets the new code, never a refusal', async (t) => {
  const tmp = djangoWorktrees(t, ['a']);
  // The defaults: stale_grace covers Django noticing the edit (it polls
  // once a second), reload_grace its start again (not listening meanwhile).
  const px = await startDaemon(t, tmp);
  await runDjango(t, tmp, tmp.wt.a, px.port, { reload: true });
  assert.equal((await hello(px, tmp.wt.a)).body, 'hello v1');
  const held = [];
  for (const v of ['hello v2', 'hello v3', 'hello v4']) {
    // Django's reloader takes its first snapshot of mtimes about a second
    // after each start, the first one included: an edit before it is never
    // seen, and that server really keeps the older code (the gate then
    // rightly says stale-code, as CI saw twice: once between edits, once
    // for the first edit, 0.9 s after a start). An agent edits, tests,
    // edits again: give it that.
    await new Promise((r) => setTimeout(r, 1500));
    edit(tmp.wt.a, v);
    const t0 = Date.now();
    const r = await hello(px, tmp.wt.a);
    held.push(Date.now() - t0);
    assert.equal(r.status, 200, `${r.status} after ${Date.now() - t0} ms: ${r.body}`);
    assert.equal(r.body, v, 'the new behaviour, at once');
  }
  t.diagnostic(`held while Django reloaded: ${held.join(', ')} ms`);
});

test('an edit outside the declared patterns (e2e/*.spec.ts) does not make the server stale', async (t) => {
  const tmp = djangoWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '5s']);
  await runDjango(t, tmp, tmp.wt.a, px.port);
  assert.equal((await hello(px, tmp.wt.a)).body, 'hello v1');
  fs.writeFileSync(path.join(tmp.wt.a, 'e2e/app.spec.ts'), 'test("edited", () => {});\n');
  const t0 = Date.now();
  const r = await hello(px, tmp.wt.a);
  assert.equal(r.body, 'hello v1');
  assert.ok(Date.now() - t0 < 1000, 'answered without waiting');
});

test('an edit of the .env its settings read at start makes the server stale: restarted, the new setting served', async (t) => {
  const tmp = djangoWorktrees(t, ['a']);
  const wt = tmp.wt.a;
  // As django-environ or python-dotenv do, once, when settings load.
  fs.appendFileSync(path.join(wt, 'site_cfg/settings.py'),
    "GREETING = dict(l.split('=', 1) for l in (BASE_DIR / '.env').read_text().splitlines())['GREETING']\n");
  fs.writeFileSync(path.join(wt, 'app/views.py'), 'from django.conf import settings\nfrom django.http import HttpResponse\n' +
    'def hello(request):\n    return HttpResponse(settings.GREETING)\n');
  fs.writeFileSync(path.join(wt, '.env'), 'GREETING=hello from .env v1\n');
  const px = await startDaemon(t, tmp, ['--stale-grace', '500ms']);
  const run = await runDjango(t, tmp, wt, px.port, { runArgs: ['--restart-on-stale'] });
  assert.equal((await hello(px, wt)).body, 'hello from .env v1');
  fs.writeFileSync(path.join(wt, '.env'), 'GREETING=hello from .env v2\n');
  const r = await hello(px, wt);
  assert.equal(r.status, 200, `${r.status}: ${r.body}\n${run.output()}`);
  assert.equal(r.body, 'hello from .env v2', 'the settings of the edited .env, not the ones loaded at start');
  assert.match(run.output(), /restarting it/);
});
