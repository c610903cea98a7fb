// 133: several services per worktree (`[service NAME]` sections in a
// committed .wtproxy). One repository with a Django API (service `api`,
// Debian's /usr/bin/python3, `ready = /api/health` since its / is 404) and
// a Vite front end (service `web`, `after = api`) whose committed config
// proxies /api to `localhost:$WTPROXY_FRONT_API`: the same config in every
// worktree. The daemon listens on two fronts (web's and api's). In three
// worktrees at once, real Chromium (started in the worktree, as test 131's
// runs are) loads the web front: the daemon starts that worktree's api,
// waits until /api/health answers, then starts its web; the page's
// fetch('/api/whoami-ish') goes through Vite's proxy to the api front,
// where wtproxy places Vite in its worktree and routes to ITS Django.
// Checked too: api was ready before web started, WTPROXY_FRONT_API in
// web's environment and WTPROXY_SERVICE / WTPROXY_FRONT_WEB in api's, the
// `services` op, `ls`'s SERVICE column, the dashboard's `declared` (its
// JSON and its page).
// Second part: a bad .wtproxy (a cycle in `after`, two services on one
// front, `after` naming an unknown service, a duplicate or invalid name)
// gets a 503 naming the file, the line and the fix, also in the daemon's
// output; a service whose `after` dies is refused naming that one's log.
// Last, `wtproxy run --health /PATH` on its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon, lsJson, cli, cliEnv, get, git, makeWorktrees, waitFor, sanitizerClean, wtServer, control } from './lib/registry.mjs';
import { repoRoot as root0, wtproxyBin } from './lib/wtproxy.mjs';
import { processesUnder, nodeModules, chromium } from './lib/playwright.mjs';
import { python, pythonPath, writeDjangoProject, freePort } from './lib/whoami.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = path.join(here, 'fixtures', 'services');
const plugin = path.join(root0, 'whoami/node/vite.mjs');
const names = ['a', 'b', 'c'];

function wtproxyFile(webFront, apiFront) {
  return `# the shop: a Django API and a Vite front end
[service api]
start = ${python} manage.py runserver --noreload 127.0.0.1:{port}
front = ${apiFront}
ready = /api/health   # its / is 404
idle_stop = 0

[service web]
start = ${process.execPath} node_modules/vite/bin/vite.js --port {port} --strictPort --host 127.0.0.1
front = ${webFront}
after = api
idle_stop = 0
`;
}

// ROOT/repo with the Django API, the Vite page and .wtproxy committed on
// main, and worktrees ROOT/wt-X on branch X, each with node_modules.
function shop(root, webFront, apiFront) {
  const repo = path.join(root, 'repo');
  fs.mkdirSync(repo);
  writeDjangoProject(repo);
  fs.writeFileSync(path.join(repo, 'site_cfg/urls.py'), `from django.urls import path
from app import views
urlpatterns = [path('api/health', views.health), path('api/whoami-ish', views.whoami_ish)]
`);
  fs.copyFileSync(path.join(fixture, 'views.py'), path.join(repo, 'app/views.py'));
  fs.copyFileSync(path.join(fixture, 'index.html'), path.join(repo, 'index.html'));
  fs.mkdirSync(path.join(repo, 'src'));
  fs.copyFileSync(path.join(fixture, 'main.js'), path.join(repo, 'src/main.js'));
  fs.writeFileSync(path.join(repo, 'vite.config.mjs'),
    fs.readFileSync(path.join(fixture, 'vite.config.mjs.in'), 'utf8').replace('@PLUGIN@', plugin));
  fs.writeFileSync(path.join(repo, '.wtproxy'), wtproxyFile(webFront, apiFront));
  fs.writeFileSync(path.join(repo, '.gitignore'), 'node_modules\n__pycache__/\n');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'shop');
  const wt = {};
  for (const n of names) {
    wt[n] = path.join(root, `wt-${n}`);
    git(repo, 'worktree', 'add', '-q', wt[n], '-b', n);
    fs.symlinkSync(nodeModules, path.join(wt[n], 'node_modules'));
  }
  return wt;
}

// Chromium from cwd loads url (and waits for selector, if given);
// resolves { code, out, result }.
function browse(t, cwd, url, selector) {
  const clean = { ...process.env };
  delete clean.WTPROXY_WORKTREE; // placed by its cwd only
  const proc = spawn(process.execPath, [path.join(fixture, 'browse.mjs'), url, ...(selector ? [selector] : [])], {
    cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: clean,
  });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const kill = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  t.after(kill);
  const timer = setTimeout(kill, 150000);
  return new Promise((resolve) => proc.on('close', (code) => {
    clearTimeout(timer);
    let result = null;
    try { result = JSON.parse(out.trim().split('\n').pop()); } catch { /* said why in out */ }
    resolve({ code, out, result });
  }));
}

const killAll = (pids) => { for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } };

function serverLogs(tmp) {
  const dir = path.join(path.dirname(tmp.state), 'servers');
  if (!fs.existsSync(dir)) return '(no server logs)';
  return fs.readdirSync(dir).map((f) => `--- ${f} ---\n${fs.readFileSync(path.join(dir, f), 'utf8')}`).join('\n');
}

test('Vite + Django in three worktrees: each page\'s /api reaches its own worktree\'s Django', {
  timeout: 240000,
}, async (t) => {
  assert.ok(fs.existsSync(chromium), `${chromium} is missing: apt-get install chromium (scripts/bootstrap)`);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-svc-')));
  removeAfter(t, root);
  t.after(() => killAll(processesUnder(root)));
  const tmp = { root, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
  const [webFront, apiFront] = [await freePort(), await freePort()];
  const px = await startDaemon(t, tmp,
    ['--listen', `127.0.0.1:${webFront}`, '--listen', `127.0.0.1:${apiFront}`],
    { listeners: 2, env: { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' } });
  const wt = shop(root, webFront, apiFront);
  const why = () => `--- daemon ---\n${px.stderr()}\n${serverLogs(tmp)}`;

  const runs = await Promise.all(names.map((n) => browse(t, wt[n], `http://localhost:${webFront}/`)));
  const answers = {};
  runs.forEach((r, i) => {
    const n = names[i];
    assert.equal(r.code, 0, `the browser in wt-${n}:\n${r.out}\n${why()}`);
    assert.equal(r.result.status, 200, `wt-${n}'s page: ${r.out}`);
    const m = /^(\d+) (.*)$/s.exec(r.result.text);
    assert.ok(m && m[1] === '200', `wt-${n}'s fetch('/api/whoami-ish') answered: ${r.result.text}\n${why()}`);
    const a = JSON.parse(m[2]);
    assert.equal(a.worktree, wt[n], `wt-${n}'s page reached wt-${n}'s Django, not another's`);
    assert.equal(a.branch, n, `and its branch`);
    assert.equal(a.service, 'api', 'WTPROXY_SERVICE in the API\'s environment');
    assert.equal(a.front_web, String(webFront), 'its sibling\'s front port: WTPROXY_FRONT_WEB');
    answers[n] = a;
  });

  const entries = await lsJson(tmp);
  assert.equal(entries.length, 6, `an api and a web per worktree: ${JSON.stringify(entries, null, 1)}`);
  for (const n of names) {
    const api = entries.find((e) => e.worktree === wt[n] && e.service === 'api');
    const web = entries.find((e) => e.worktree === wt[n] && e.service === 'web');
    assert.ok(api && web, `wt-${n}'s two services are registered with their labels: ${JSON.stringify(entries)}`);
    assert.equal(api.front, apiFront);
    assert.equal(web.front, webFront);
    // ready = /api/health: api's wrapper asked it before calling api ready;
    // after = api: web's wrapper started once it had answered (started_ms
    // has the kernel's 10 ms clock ticks)
    assert.ok(answers[n].first_health_ms > 0, `wt-${n}: /api/health was asked (ready = /api/health)`);
    assert.ok(web.started_ms + 10 >= answers[n].first_health_ms,
      `wt-${n}: web started at ${web.started_ms}, before api was ready (${answers[n].first_health_ms})`);
    const env = fs.readFileSync(`/proc/${web.pid}/environ`, 'utf8').split('\0');
    assert.ok(env.includes(`WTPROXY_FRONT_API=${apiFront}`), `WTPROXY_FRONT_API in web's environment: ${env.filter((v) => v.startsWith('WTPROXY'))}`);
  }
  assert.match(px.stderr(), /started .*wt-a's server for service api from its \.wtproxy/);

  const ls = await cli(tmp, ['ls']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout.split('\n')[0], /BRANCH\s+SERVICE\s+FRONT/, ls.stdout);
  assert.match(ls.stdout, new RegExp(`wt-a\\s+a\\s+api\\s+${apiFront}`), ls.stdout);

  const svc = await control(tmp.control, { op: 'services', worktree: wt.a });
  assert.equal(svc.ok, true, JSON.stringify(svc));
  assert.equal(svc.file, path.join(wt.a, '.wtproxy'));
  assert.deepEqual(svc.services.map((s) => [s.name, s.front, s.running, s.state]),
    [['api', apiFront, true, 'ready'], ['web', webFront, true, 'ready']]);
  assert.deepEqual(svc.services[1].after, ['api']);
  assert.equal(svc.services[0].ready, '/api/health');
  assert.equal(svc.services[0].idle_stop_ms, 0);

  const dash = JSON.parse((await get(webFront, {}, '/__wtproxy/api/backends')).body);
  for (const b of dash) {
    assert.deepEqual(b.declared.services.map((s) => s.name), ['api', 'web'], JSON.stringify(b.declared));
  }
  // and the dashboard page shows them under each worktree
  const page = await browse(t, root, `http://127.0.0.1:${webFront}/__wtproxy/`, '.declared');
  assert.equal(page.code, 0, page.out);
  assert.equal(page.result.texts.length, 6, page.out);
  for (const text of page.result.texts) {
    assert.equal(text, `services: api :${apiFront} ready · web :${webFront} ready`);
  }
  for (const e of entries) { try { process.kill(-e.pid, 'SIGTERM'); } catch { /* gone */ } }
  await waitFor(async () => (await lsJson(tmp)).length === 0, 10000, 'the servers stopped');
  // declared, not running, once the daemon has reaped the wrappers it started
  await waitFor(async () => (await control(tmp.control, { op: 'services', worktree: wt.b })).services
    .every((s) => !s.running), 10000, 'declared, not running');

  // the start op (the dashboard's Start, mcp) starts a declared service and the one it needs
  const unknown = await control(tmp.control, { op: 'start', worktree: wt.b, service: 'nope' });
  assert.equal(unknown.error, 'not-declared', JSON.stringify(unknown));
  const started = await control(tmp.control, { op: 'start', worktree: wt.b, service: 'web' });
  assert.equal(started.ok, true, JSON.stringify(started));
  assert.equal(started.front, webFront);
  // wt-b's two, whatever else a caller may start meanwhile. Seen failing
  // once in a CI run and once on a loaded machine (counting every
  // worktree's entries), never reproduced (9 runs, 5 at once beside two
  // next dev tests): what the daemon knew then is in the failure.
  const readyInB = async () => (await lsJson(tmp)).filter((e) => e.worktree === wt.b && e.state === 'ready');
  await waitFor(async () => (await readyInB()).length === 2, 90000,
    'web, and the api it is started after, started by the start op').catch(async (err) => {
    const known = { ls: await lsJson(tmp), services: await control(tmp.control, { op: 'services', worktree: wt.b }),
      starts: await control(tmp.control, { op: 'starts' }) };
    throw new Error(`${err.message}\n${JSON.stringify(known)}\n${why()}`);
  });
  assert.deepEqual((await readyInB()).map((e) => e.service).sort(), ['api', 'web']);
  for (const e of await lsJson(tmp)) { try { process.kill(-e.pid, 'SIGTERM'); } catch { /* gone */ } }
  await waitFor(async () => (await lsJson(tmp)).length === 0, 10000, 'the started servers stopped');
  sanitizerClean(assert, px.stderr());
});

// A repo with worktree a whose .wtproxy the tests rewrite (uncommitted:
// the daemon reads the worktree's own file).
async function declaring(t) {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const write = (text) => fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), text);
  const ask = () => get(px.port, { 'X-Wtproxy-Worktree': tmp.wt.a });
  return { tmp, px, write, ask };
}

test('a bad .wtproxy: 503 and the daemon\'s output name the file, the line and the fix', async (t) => {
  const { tmp, px, write, ask } = await declaring(t);
  const srv = `${process.execPath} ${wtServer} {port}`;
  const cases = [
    ['a cycle in after', `[service api]\nstart = ${srv}\nfront = 9001\nafter = web\n[service web]\nstart = ${srv}\nfront = ${px.port}\nafter = api\n`,
      /\.wtproxy:4: `after` makes a cycle: api -> web -> api; remove one of these `after`s/],
    ['two services on one front', `[service api]\nstart = ${srv}\nfront = ${px.port}\n[service web]\nstart = ${srv}\nfront = ${px.port}\n`,
      /\.wtproxy:6: services `api` and `web` both serve front \d+; a front port routes to one service: give each its own `front`/],
    ['after naming an unknown service', `[service web]\nstart = ${srv}\nfront = ${px.port}\nafter = apx\n`,
      /\.wtproxy:4: `after` names `apx`, which this file does not declare: fix the name or add a \[service apx\] section/],
    ['a duplicate name', `[service web]\nstart = ${srv}\nfront = ${px.port}\n[service web]\nstart = ${srv}\nfront = 9002\n`,
      /\.wtproxy:4: service `web` is declared twice \(first at line 1\)/],
    ['an invalid name', `[service Web!]\nstart = ${srv}\nfront = ${px.port}\n`,
      /\.wtproxy:1: the service name "Web!" is not 1-32 of a-z, 0-9/],
  ];
  for (const [what, text, want] of cases) {
    write(text);
    const r = await ask();
    assert.equal(r.status, 503, `${what}: ${r.body}`);
    assert.equal(r.headers['x-wtproxy-error'], 'bad-wtproxy-file', `${what}: ${JSON.stringify(r.headers)}`);
    assert.ok(r.body.includes(path.join(tmp.wt.a, '.wtproxy')), `${what}: the 503 names the file: ${r.body}`);
    assert.match(r.body, want, what);
    await waitFor(() => want.test(px.stderr()), 3000, `${what}: in the daemon's output`);
    const op = await control(tmp.control, { op: 'services', worktree: tmp.wt.a });
    assert.equal(op.error, 'bad-wtproxy-file', JSON.stringify(op));
    assert.match(op.message, want, `${what}: the services op says it too`);
  }
  assert.deepEqual(await lsJson(tmp), [], 'nothing was started from a bad file');
  sanitizerClean(assert, px.stderr());
});

test('a service whose `after` dies before it is ready: 503 naming that one\'s log', async (t) => {
  const { tmp, px, write, ask } = await declaring(t);
  write(`[service api]\nstart = echo "boom: no database" >&2; exit 3\nfront = 9003\n` +
    `[service web]\nstart = ${process.execPath} ${wtServer} {port}\nfront = ${px.port}\nafter = api\n`);
  const r = await ask();
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /service `web` of .* was not started: `api`, which it is started after, exited before it was ready/);
  const log = /its output: (\S+\.log)/.exec(r.body);
  assert.ok(log, r.body);
  assert.match(path.basename(log[1]), /^wt-a-[0-9a-f]{8}-9003-api\.log$/, 'api\'s log: the worktree\'s name, its path\'s hash, front and service');
  assert.match(fs.readFileSync(log[1], 'utf8'), /boom: no database/);
  assert.deepEqual(await lsJson(tmp), [], 'web was never started');
  sanitizerClean(assert, px.stderr());
});

// A server that listens at once but whose /health answers 404 for its
// first 1.5 s, then 200 (it prints when): `wtproxy run --health /health`
// calls it ready only after that; without --health, as soon as it listens.
const lateHealth = `const http = require('node:http'); const t0 = Date.now(); let said = false;
http.createServer((req, res) => {
  const ok = Date.now() - t0 >= 1500;
  if (ok && !said) { said = true; console.log('healthy-at ' + Date.now()); }
  res.writeHead(req.url === '/health' && ok ? 200 : 404); res.end();
}).listen(Number(process.argv[1]), '127.0.0.1');`;

function runLate(t, tmp, cwd, front, runArgs) {
  const proc = spawn(wtproxyBin, ['run', '--front', String(front), ...runArgs, '--',
    process.execPath, '-e', lateHealth, '{port}'], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp) } });
  let out = '';
  let readyAt = 0;
  const seen = (d) => { out += d; if (!readyAt && /is ready on/.test(out)) readyAt = Date.now(); };
  proc.stdout.on('data', seen);
  proc.stderr.on('data', seen);
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); });
  return { proc, out: () => out, readyAt: () => readyAt };
}

test('wtproxy run --health /PATH: ready once the path answers 2xx, not when it listens', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const r = runLate(t, tmp, tmp.wt.a, px.port, ['--health', '/health']);
  // The server's line is relayed by the wrapper's log thread, which may
  // print it after the wrapper's own "is ready" (seen under load in CI):
  // both are waited for; a ready said before /health answered would have
  // no healthy-at line to wait for, nothing asking /health after it.
  await waitFor(() => r.readyAt() && /healthy-at/.test(r.out()), 15000, `ready:\n${r.out()}`);
  const healthy = Number((/healthy-at (\d+)/.exec(r.out()) || [])[1]);
  assert.ok(healthy > 0 && r.readyAt() >= healthy, `called ready only after /health answered 200:\n${r.out()}`);
  assert.match(r.out(), /GET \/health answered 404, waiting for 2xx or 3xx \(--health\)/);
  // without --health the same server is ready while /health is still 404
  const plain = runLate(t, tmp, tmp.wt.b, px.port, []);
  await waitFor(() => plain.readyAt(), 15000, `ready:\n${plain.out()}`);
  assert.doesNotMatch(plain.out(), /healthy-at/, 'ready as soon as it listened');
  const bad = await cli(tmp, ['run', '--health', 'health', '--', 'true'], { cwd: tmp.wt.a });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--health takes a path such as \/api\/health, not "health"/);
  sanitizerClean(assert, px.stderr());
});
