// 081: `wtproxy doctor` checks a worktree's setup and prints each check as
// ok, problem (with the one command that fixes it) or skipped, and exits 1
// when any check found a problem. With no daemon, no git on PATH and no
// PostgreSQL it still runs every other check; it names the process holding
// the front port; it reads the .wtproxy as the daemon does (a bad line is
// a problem, named); it tells a verified server from a stale one by asking
// its /__whoami, and its fix (restart, unregister) works when run; it
// judges the Playwright recipe (a `wtproxy run` on another front than the
// url's is a problem), and before `init` checks the port its baseURL names
// (not 8000, not the daemon's), saying so; the leases, and the database server's connection
// headroom, with a real PostgreSQL; it asks the .wtproxy's python whether
// it imports the whoami middleware, before any server is started, and a
// Node start's folder whether it resolves wtproxy-whoami (and, when not,
// whether its `node FILE` imports it at all: one that does not has no
// /__whoami yet, and gets the lines to add). A daemon holding the front
// whose control socket this shell does not see (a sandbox's own /tmp) is
// named with its socket, by doctor, ls, why and run, and never killed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { makeWorktrees, declaring, startDaemon, startRun, cli, cliEnv, sanitizerClean, pidAlive, waitFor, curlFrom, lsJson } from './lib/registry.mjs';
import { wtproxyBin, repoRoot } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { pythonPath } from './lib/whoami.mjs';
import { startPostgres } from './lib/pg.mjs';

// The daemon fix's program: this binary's own path, as `wtproxy` on PATH
// (none, in most tests) is not this build's.
const SELF = fs.realpathSync(wtproxyBin);
const SELF_RE = SELF.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const NAMES = ['daemon', 'worktree', 'server', 'middleware', 'whoami', 'go-embed', 'inotify', 'playwright', 'vite-proxy',
  'leases', 'databases', 'load'];
// No PostgreSQL named: libpq's variables empty (doctor reads an empty one as unset).
const NO_PG = { PGHOST: '', PGPORT: '', PGDATABASE: '', WTPROXY_DB_SERVER: '' };

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

// `wtproxy doctor --json --front FRONT` in cwd (no --front when front is
// null): { code, report, byName, ms }.
async function doctor(tmp, cwd, front, env = {}) {
  const t0 = Date.now();
  const args = ['doctor', '--json', ...(front === null ? [] : ['--front', String(front)])];
  const r = await cli(tmp, args, { cwd, env: { ...NO_PG, ...env }, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  let report;
  try { report = JSON.parse(r.stdout); } catch { assert.fail(`doctor --json printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`); }
  const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
  assert.deepEqual(report.checks.map((c) => c.name), NAMES, 'every check reported, in order');
  for (const c of report.checks) {
    assert.ok(['ok', 'problem', 'skipped'].includes(c.status), `${c.name}: ${c.status}`);
    if (c.status === 'problem') assert.ok(c.fix, `${c.name} is a problem with a fix: ${c.detail}`);
  }
  assert.equal(r.code, report.checks.some((c) => c.status === 'problem') ? 1 : 0, 'exit 1 exactly when a check found a problem');
  assert.equal(report.ok, r.code === 0);
  return { code: r.code, report, byName, ms: Date.now() - t0 };
}

test('no daemon, no git on PATH, no PostgreSQL: every other check still runs', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const d = await doctor(tmp, tmp.wt.a, front, { PATH: '/nonexistent' });
  const c = d.byName;
  assert.equal(c.daemon.status, 'problem');
  assert.match(c.daemon.detail, /no wtproxy daemon answers/);
  assert.match(c.daemon.fix, new RegExp(`^setsid -f ${SELF_RE} serve --listen ${front} >>\\S+/daemon\\.log 2>&1$`),
    'a bare port (127.0.0.1 and ::1 both), in the background; no wtproxy on PATH: this binary by its path');
  assert.equal(c.worktree.status, 'ok');
  assert.ok(c.worktree.detail.startsWith(`${tmp.wt.a} (branch a)`), c.worktree.detail);
  const onPath = await doctor(tmp, tmp.wt.a, front, { PATH: `${path.dirname(wtproxyBin)}:/nonexistent` });
  assert.match(onPath.byName.daemon.fix, new RegExp(`^setsid -f wtproxy serve --listen ${front} `),
    'the wtproxy on PATH is this binary: named as typed');
  assert.equal(c.server.status, 'problem', 'no .wtproxy and no server');
  assert.equal(c.server.fix, 'wtproxy help wtproxy-file > .wtproxy, then edit its start, and make the server answer /__whoami as wtproxy help whoami-protocol says (wtproxy init knows no app here)',
    'an app init knows not (it refuses it): the guides, not init --apply');
  assert.equal(c.whoami.status, 'skipped');
  assert.equal(c.inotify.status, 'ok');
  assert.match(c.inotify.detail, /folders here .* x 2 worktrees = \d+ watches, within max_user_watches \d+/);
  assert.equal(c.playwright.status, 'skipped');
  assert.equal(c.leases.status, 'skipped', 'no daemon is started to ask for leases');
  assert.equal(c.databases.status, 'skipped');
  assert.match(c.load.detail, /^load [\d.]+ over 1 minute on \d+ CPUs?/);
  assert.equal(d.code, 1);
  assert.ok(d.ms < 20000, `bounded: took ${d.ms} ms`);
  assert.ok(!fs.existsSync(tmp.control), 'doctor started no daemon');

  // A .wtproxy on this worktree only: ok, the daemon starts from it (and
  // places this worktree's callers by it, test 136).
  const ok = "no server runs now; the .wtproxy makes the daemon start one on this worktree's first request";
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./dev {port}\nfront = ${front}\n`);
  const own = (await doctor(tmp, tmp.wt.a, front, { PATH: '/nonexistent' })).byName;
  let s = own.server;
  assert.equal(s.status, 'ok');
  assert.equal(s.detail, ok);
  assert.equal(own.middleware.status, 'skipped');
  assert.equal(own.middleware.detail, "the .wtproxy's start runs neither python (nor a Python script) nor node: its server answers /__whoami by itself (wtproxy help whoami-protocol)");
  // On the main checkout only (this branch predates it): a problem, as the
  // daemon's 503 says, and the fix doctor gives, pasted, makes it ok.
  fs.renameSync(path.join(tmp.wt.a, '.wtproxy'), path.join(tmp.repo, '.wtproxy'));
  s = (await doctor(tmp, tmp.wt.a, front, { PATH: '/nonexistent' })).byName.server;
  assert.equal(s.status, 'problem', s.detail);
  assert.equal(s.detail, `no server runs now, and this worktree (branch a) has no .wtproxy: the daemon starts a worktree's servers only from its own, and ${tmp.repo}/.wtproxy is in the main checkout only. Requests from here get 503 no-backend`);
  assert.equal(s.fix, `cp ${tmp.repo}/.wtproxy ${tmp.wt.a}/ (or merge the branch that added it)`);
  execSync(s.fix.replace(/ \(or .*/, ''), { cwd: tmp.wt.a });
  s = (await doctor(tmp, tmp.wt.a, front, { PATH: '/nonexistent' })).byName.server;
  assert.equal(s.detail, ok);
  // Declaring other fronts only: a problem naming them.
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), '[service web]\nstart = ./dev {port}\nfront = 65001\n');
  s = (await doctor(tmp, tmp.wt.a, front, { PATH: '/nonexistent' })).byName.server;
  assert.equal(s.status, 'problem', s.detail);
  assert.equal(s.detail, `no server runs now, and the .wtproxy declares none on front ${front}, only on :65001 (web): requests to :${front} from here get 503 no-backend`);
  fs.rmSync(path.join(tmp.wt.a, '.wtproxy'));
  fs.rmSync(path.join(tmp.repo, '.wtproxy'));

  // Outside any worktree: that check fails, the rest run.
  const out = await doctor(tmp, tmp.root, front, { PATH: '/nonexistent' });
  assert.equal(out.byName.worktree.status, 'problem');
  assert.match(out.byName.worktree.detail, /not inside a git worktree/);
  assert.equal(out.byName.server.status, 'skipped');
  assert.equal(out.byName.daemon.status, 'problem');

  // The text form: one line a check, a fix line under each problem.
  const r = await cli(tmp, ['doctor', '--front', String(front)], { cwd: tmp.wt.a, env: NO_PG });
  assert.equal(r.code, 1);
  const lines = r.stdout.trimEnd().split('\n');
  for (const n of NAMES) assert.ok(lines.some((l) => new RegExp(`^(ok|problem|skipped) +${n} `).test(l)), `a line for ${n}:\n${r.stdout}`);
  assert.match(r.stdout, /^problem +server .*\n +fix: wtproxy help wtproxy-file > \.wtproxy, then edit its start, .*whoami-protocol/m);
});

// No daemon: the fix starts one in the background, so that pasted in an
// agent's shell it returns, and the daemon then owns the front.
test("no daemon: doctor's fix, pasted, returns at once and the daemon it starts owns the front", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const state = { XDG_STATE_HOME: path.join(tmp.root, 'state') };
  const check = (await doctor(tmp, tmp.wt.a, front, state)).byName.daemon;
  const fix = check.fix;
  // One start, the fix's: not the client's own (no --listen: 8000) beside it.
  assert.doesNotMatch(check.detail, /wtproxy serve|start one/, check.detail);
  assert.match(fix, new RegExp(`wtproxy serve --listen ${front} `));
  const env = { ...process.env, ...cliEnv(tmp), ...state, PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  const sh = spawn('/bin/sh', ['-c', fix], { cwd: tmp.wt.a, env, stdio: 'ignore', detached: true });
  t.after(() => { try { process.kill(-sh.pid, 'SIGKILL'); } catch { /* gone */ } }); // a serve that stayed in it
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve('no exit within 10 s'), 10000);
    sh.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.equal(code, 0, `${fix}: does not return`);
  let c;
  await waitFor(async () => (c = (await doctor(tmp, tmp.wt.a, front, state)).byName.daemon).status === 'ok', 10000,
    'the daemon the fix started');
  const daemon = Number(/wtproxy daemon pid (\d+)/.exec(c.detail)[1]);
  t.after(() => { try { process.kill(daemon, 'SIGKILL'); } catch { /* gone */ } });
  assert.match(c.detail, new RegExp(`127\\.0\\.0\\.1:${front}"`));
  assert.match(fs.readFileSync(path.join(tmp.root, 'state/wtproxy/daemon.log'), 'utf8'), /listening on 127\.0\.0\.1:/,
    'its output is in the log the fix names');
  process.kill(daemon, 'SIGTERM');
});

// The middleware check asks the python the .wtproxy's start runs, with its
// inline settings, before any server is started: without the package on
// its path, a server would die at its first import; from a build folder
// the fix puts the checkout's package on PYTHONPATH.
// A daemon started with no port named (a start printed outside any
// worktree) listens on the default 8000 alone. doctor in a worktree whose
// .wtproxy says 8430 kept 8000 in its fix (`serve --listen 8000 --listen
// 8430`), a port no registration's callers call. In a network namespace of
// its own (as root), so that 8000 is the test's.
test("a daemon on the default port alone: doctor's fix serves the .wtproxy's front, without 8000", async (t) => {
  const probe = await runToExit('unshare', ['--net', 'true']);
  if (probe.code !== 0) {
    t.skip(`no network namespace here (unshare: ${probe.stderr.trim()})`);
    return;
  }
  const tmp = makeWorktrees(t, ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), 'start = ./dev {port}\nfront = 8430\n');
  const script = [
    'ip link set lo up',
    '"$WTP" serve --control "$WTPROXY_CONTROL" >"$OUT/serve.log" 2>&1 & d=$!',
    'i=0; until "$WTP" ls >/dev/null 2>&1 || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done',
    `cd ${tmp.wt.a} && "$WTP" doctor --json >"$OUT/doctor.json" 2>"$OUT/doctor.err"`,
    'kill $d; wait $d',
  ].join('\n');
  const env = { ...cliEnv(tmp, { ...NO_PG, XDG_STATE_HOME: path.join(tmp.root, 'state') }), WTP: wtproxyBin, OUT: tmp.root };
  const r = await runToExit('unshare', ['--net', 'sh', '-c', script], { cwd: tmp.root, env, ms: 30000 });
  const read = (f) => fs.readFileSync(path.join(tmp.root, f), 'utf8');
  assert.equal(r.code, 0, `${r.stderr}\n${read('serve.log')}`);
  const daemon = JSON.parse(read('doctor.json')).checks.find((c) => c.name === 'daemon');
  assert.match(daemon.detail, /listens on \["127\.0\.0\.1:8000".*not on port 8430/, daemon.detail);
  assert.match(daemon.fix, /serve --control \S+ --listen 8430 >>\S+ 2>&1$/, daemon.fix);
});

test("middleware: the .wtproxy's python cannot import wtproxy_whoami: a problem before any server starts", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const env = { PYTHONPATH: '', HOME: tmp.root };
  const start = (pre) => fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = ${pre}/usr/bin/python3 manage.py runserver 127.0.0.1:{port}\nfront = ${front}\n`);
  start('');
  let m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, /^\/usr\/bin\/python3 cannot import wtproxy_whoami: the server the \.wtproxy starts would stop at its first import/);
  assert.ok(m.fix.includes(`PYTHONPATH=${pythonPath} before the command that starts it`),
    `the setting that fixes it, not a guide: ${m.fix}`);
  start(`PYTHONPATH=${pythonPath} `);
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  assert.equal(m.detail, `PYTHONPATH=${pythonPath} /usr/bin/python3 imports wtproxy_whoami from ${pythonPath}/wtproxy_whoami`);
  // An API in a subfolder, as wtproxy init's note writes its start: asked there.
  fs.mkdirSync(path.join(tmp.wt.a, 'api'));
  start('cd api && ');
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', `cd api && ... runs a python: ${m.detail}`);
  assert.match(m.detail, /^cd api && \/usr\/bin\/python3 cannot import wtproxy_whoami/);
  start(`cd api && PYTHONPATH=${pythonPath} `);
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  // `exec` before it (the shell replaces itself with the server): the
  // same server, checked ("skipped": it ran neither python nor node)
  start('exec ');
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', `exec /usr/bin/python3 runs a python: ${m.detail}`);
  start(`PYTHONPATH=${pythonPath} exec `);
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  // under a watcher (an aiohttp user's entr): its python, checked
  // ("skipped": it ran neither python nor node; the server then stopped at
  // its import of wtproxy_whoami)
  start("find . -name '*.py' | entr -rn ");
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', `entr's python: ${m.detail}`);
  assert.match(m.detail, /^\/usr\/bin\/python3 cannot import wtproxy_whoami/);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./dev {port}\nfront = ${front}\n`);
  assert.equal((await doctor(tmp, tmp.wt.a, front, env)).byName.middleware.status, 'skipped');

  // A Python console script (uvicorn, gunicorn, flask: a virtualenv's
  // bin/ or a name on PATH) runs the python its first line names: that one
  // is asked. It was "skipped", and a FastAPI under uvicorn stopped at its
  // first import with every check ok.
  fs.mkdirSync(path.join(tmp.wt.a, 'api', '.venv', 'bin'), { recursive: true });
  fs.writeFileSync(path.join(tmp.wt.a, 'api', '.venv', 'bin', 'uvicorn'), '#!/usr/bin/python3\nraise SystemExit(0)\n', { mode: 0o755 });
  const scripted = (pre) => fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = cd api && ${pre}.venv/bin/uvicorn main:app --port {port}\nfront = ${front}\n`);
  scripted('');
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, /^cd api && \.venv\/bin\/uvicorn \(a \/usr\/bin\/python3 script\) cannot import wtproxy_whoami: the server the \.wtproxy starts would stop at its first import/);
  assert.ok(m.fix.includes(`PYTHONPATH=${pythonPath} before the command that starts it`), m.fix);
  scripted(`PYTHONPATH=${pythonPath} `);
  // The app module it serves is asked for too, in its folder: there is none.
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.equal(m.detail, `cd api && PYTHONPATH=${pythonPath} .venv/bin/uvicorn (a /usr/bin/python3 script) imports wtproxy_whoami, but not main, the app module its start serves: in ${tmp.wt.a}/api, \`import main\` fails with ModuleNotFoundError: No module named 'main': the server the .wtproxy starts would stop at its start`);
  assert.equal(m.fix, `see the whole error: cd ${tmp.wt.a}/api && /usr/bin/python3 -c "import main"; then correct the .wtproxy's start line, or the module's import`);
  fs.writeFileSync(path.join(tmp.wt.a, 'api', 'main.py'), 'app = None\n');
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  assert.equal(m.detail, `cd api && PYTHONPATH=${pythonPath} .venv/bin/uvicorn (a /usr/bin/python3 script) imports wtproxy_whoami from ${pythonPath}/wtproxy_whoami`);
  // found on PATH, through env
  const bin = path.join(tmp.root, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'gunicorn'), '#!/usr/bin/env python3\n', { mode: 0o755 });
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = gunicorn -b 127.0.0.1:{port} app:app\nfront = ${front}\n`);
  m = (await doctor(tmp, tmp.wt.a, front, { ...env, PATH: `${bin}:${process.env.PATH}` })).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, /^gunicorn \(a python3 script\) cannot import wtproxy_whoami/);
  // a shell script is no Python's, nor a first line of env alone
  for (const first of ['#!/bin/sh\nexec true\n', '#!/usr/bin/env\n', '#!/usr/bin/env']) {
    fs.writeFileSync(path.join(bin, 'gunicorn'), first, { mode: 0o755 });
    m = (await doctor(tmp, tmp.wt.a, front, { ...env, PATH: `${bin}:${process.env.PATH}` })).byName.middleware;
    assert.equal(m.status, 'skipped', `${JSON.stringify(first)}: ${m.detail}`);
  }
});

// A new worktree's virtualenv (or a python3 on PATH that is not Debian's)
// imports the middleware but not the app's framework: the server stopped
// at "No module named 'django'" with every check ok. Now the python that
// lacks it is named, with the install of the app's requirements for it
// (or, with none, Debian's /usr/bin/python3 when that one imports it).
test("middleware: the .wtproxy's python imports wtproxy_whoami but not Django: named, with its install", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const venv = path.join(tmp.wt.a, '.venv');
  const made = spawnSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const env = { PYTHONPATH: '', HOME: tmp.root };
  const start = (py) => fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = PYTHONPATH=${pythonPath} ${py} manage.py runserver 127.0.0.1:{port}\nfront = ${front}\n`);
  start('.venv/bin/python3');
  let m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.ok(m.detail.startsWith(`PYTHONPATH=${pythonPath} .venv/bin/python3 (the python ${venv}/bin/python3) cannot import django: the app's Python dependencies are not installed for it`), m.detail);
  const debian = spawnSync('/usr/bin/python3', ['-c', 'import django']).status === 0;
  assert.equal(m.fix, debian ? `in the .wtproxy's start line, run /usr/bin/python3 in place of ${venv}/bin/python3` : `${venv}/bin/python3 -m pip install django`);
  fs.writeFileSync(path.join(tmp.wt.a, 'requirements.txt'), 'django\n');
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.fix, `cd ${tmp.wt.a} && ${venv}/bin/python3 -m pip install -r requirements.txt`);
  if (!debian) return;
  start('/usr/bin/python3');
  m = (await doctor(tmp, tmp.wt.a, front, env)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
});

// A Node app's node_modules is per worktree: a worktree made after the app
// adopted wtproxy has no node_modules/wtproxy-whoami, and its server
// stopped at its first import while the middleware check said "skipped".
// Now it is a problem whose fix, pasted, links the package; Node's rule
// (that folder or one above it) decides.
test("middleware: a Node start whose folder does not resolve wtproxy-whoami: a problem, and the link that fixes it", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = exec node server.mjs\nfront = ${front}\n`);
  let m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', `exec node runs node: ${m.detail}`);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = node server.mjs\nfront = ${front}\n`);
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, new RegExp(`^\`node server\.mjs\` cannot import wtproxy-whoami: no node_modules/wtproxy-whoami in ${tmp.wt.a} or a folder above it \\(node_modules is per worktree`));
  // A server that does not import it (no middleware yet) would not stop
  // at an import: it has no /__whoami, and gets the lines to add.
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), "import http from 'node:http';\nhttp.createServer((q, s) => s.end('ok')).listen(8080);\n");
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.ok(m.detail.startsWith("`node server.mjs` runs server.mjs, which has no /__whoami middleware yet: wtproxy refuses its requests (502 no-whoami). " +
    "Add to server.mjs, once at start: `import { whoami } from 'wtproxy-whoami'; const mw = whoami();`, then `app.use(mw)` first (Express, Connect) " +
    'or `http.createServer((req, res) => mw(req, res, () => handler(req, res)))` (node:http)'), m.detail);
  assert.doesNotMatch(m.detail, /first import/);
  // once it imports it, the missing package stops it at that import
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), "import { whoami } from 'wtproxy-whoami';\n");
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.match(m.detail, /cannot import wtproxy-whoami: .*would stop at its first import/);
  const fixed = spawnSync('/bin/sh', ['-c', m.fix], { encoding: 'utf8' });
  assert.equal(fixed.status, 0, `${m.fix}: ${fixed.stderr}`);
  const imported = spawnSync(process.execPath, ['--input-type=module', '-e', "import { whoami } from 'wtproxy-whoami'; console.log(typeof whoami)"],
    { cwd: tmp.wt.a, encoding: 'utf8' });
  assert.equal(imported.stdout.trim(), 'function', `the linked package imports: ${imported.stderr}`);
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  assert.equal(m.detail, `\`node server.mjs\` finds wtproxy-whoami in ${tmp.wt.a}/node_modules/wtproxy-whoami`);
  // A start that loads its settings first (`. FILE &&`) is a Node start
  // still: the check was "skipped" for it, and a new worktree's API
  // without the package went unsaid.
  fs.mkdirSync(path.join(tmp.wt.a, 'api'));
  fs.writeFileSync(path.join(tmp.wt.a, 'api', 'server.mjs'), "import { whoami } from 'wtproxy-whoami';\n");
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = cd api && . ../.env.wt && PGHOST=127.0.0.1 node server.mjs\nfront = ${front}\n`);
  assert.equal((await doctor(tmp, tmp.wt.a, front)).byName.middleware.status, 'ok');
  fs.renameSync(path.join(tmp.wt.a, 'node_modules'), path.join(tmp.wt.a, 'node_modules.aside'));
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, /cannot import wtproxy-whoami: no node_modules\/wtproxy-whoami in \S+\/api or a folder above it/);
  fs.renameSync(path.join(tmp.wt.a, 'node_modules.aside'), path.join(tmp.wt.a, 'node_modules'));
  // An app in a subfolder is asked from there: the top's link is above it.
  fs.mkdirSync(path.join(tmp.wt.a, 'web'));
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = cd web && node_modules/.bin/vite --port {port}\nfront = ${front}\n`);
  assert.equal((await doctor(tmp, tmp.wt.a, front)).byName.middleware.status, 'ok');
  fs.rmSync(path.join(tmp.wt.a, 'node_modules'), { recursive: true });
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.fix, new RegExp(`^mkdir -p ${tmp.wt.a}/web/node_modules && ln -sfn \\S+ ${tmp.wt.a}/web/node_modules/wtproxy-whoami$`));
  assert.match(m.detail, /; npm install removes such a link \(no package\.json lists it\): link it again after each npm install, as wtproxy doctor then says$/, m.detail);
});

// A new worktree has no node_modules. Doctor's link made one holding only
// wtproxy-whoami, and then said ok while the Vite the start line runs was
// not there (and a later npm install deleted the link). Now a package.json
// whose dependencies no install made is the problem, and its fix installs
// first, by the lockfile, then links.
test('middleware: a start folder whose package.json has its dependencies not installed: install, then link', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const web = path.join(tmp.wt.a, 'frontend');
  fs.mkdirSync(web);
  fs.writeFileSync(path.join(web, 'package.json'), '{"devDependencies":{"vite":"^7"}}\n');
  fs.writeFileSync(path.join(web, 'package-lock.json'), '{}\n');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = cd frontend && node_modules/.bin/vite --port {port} --strictPort\nfront = ${front}\n`);
  let m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.ok(m.detail.startsWith(`\`cd frontend && node_modules/.bin/vite --port {port} --strictPort\` cannot start: this worktree has no node_modules in ${web} (a new worktree starts without them), so the server the .wtproxy starts would exit at once. Install them first, then link wtproxy-whoami`), m.detail);
  const link = new RegExp(`^cd ${web} && npm ci && mkdir -p ${web}/node_modules && ln -sfn \\S+ ${web}/node_modules/wtproxy-whoami$`);
  assert.match(m.fix, link);
  // the link alone (the old fix) does not make it ok
  spawnSync('/bin/sh', ['-c', m.fix.split(' && ').slice(2).join(' && ')]);
  assert.ok(fs.existsSync(path.join(web, 'node_modules', 'wtproxy-whoami', 'package.json')));
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, /frontend\/node_modules holds no installed dependencies \(only what was linked there\)/);
  assert.match(m.fix, link);
  // installed (as npm leaves it), without the Vite the start runs: still a problem
  fs.writeFileSync(path.join(web, 'node_modules', '.package-lock.json'), '{}\n');
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.match(m.detail, /frontend\/node_modules has no \.bin\/vite: its dependencies are not all installed/);
  fs.mkdirSync(path.join(web, 'node_modules', '.bin'));
  fs.writeFileSync(path.join(web, 'node_modules', '.bin', 'vite'), '');
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
});

// An npm workspace: one lockfile at the repository's top, the members'
// installs hoisted into the top's node_modules, none in apps/web. Doctor
// named `cd apps/web && npm install` for a new worktree, and once
// installed at the top still said apps/web had no node_modules.
test('middleware: a workspace member: the install runs at the workspace root, and hoisted installs count', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const web = path.join(tmp.wt.a, 'apps', 'web');
  fs.mkdirSync(web, { recursive: true });
  fs.writeFileSync(path.join(tmp.wt.a, 'package.json'), '{"private":true,"workspaces":["apps/*"]}\n');
  fs.writeFileSync(path.join(tmp.wt.a, 'package-lock.json'), '{}\n');
  fs.writeFileSync(path.join(web, 'package.json'), '{"scripts":{"dev":"vite"},"devDependencies":{"vite":"^7"}}\n');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = cd apps/web && npm run dev -- --port {port} --strictPort\nfront = ${front}\n`);
  let m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, new RegExp(`cannot start: this worktree has no node_modules in ${tmp.wt.a} \\(a new worktree`));
  assert.match(m.fix, new RegExp(`^cd ${tmp.wt.a} && npm ci && mkdir -p ${web}/node_modules && ln -sfn \\S+ ${web}/node_modules/wtproxy-whoami$`));
  // installed as npm does for a workspace: everything in the top's node_modules
  fs.mkdirSync(path.join(tmp.wt.a, 'node_modules', '.bin'), { recursive: true });
  fs.writeFileSync(path.join(tmp.wt.a, 'node_modules', '.package-lock.json'), '{}\n');
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(tmp.wt.a, 'node_modules/wtproxy-whoami'));
  m = (await doctor(tmp, tmp.wt.a, front)).byName.middleware;
  assert.doesNotMatch(m.detail, /cannot start/, m.detail);
  assert.doesNotMatch(m.fix || '', /npm (ci|install)/, m.fix);
});

// Seen adopting an npm workspaces monorepo: `wtproxy init apps/web` wrote
// `start = cd apps/web && node_modules/.bin/vite ...`, where npm had put
// Vite in the root's node_modules: the server exited 127 "not found" in
// every worktree, and doctor, content with the hoisted install, said ok.
// Now init names the root's tool from the member's folder, and doctor
// flags a start that names one where no install put it, with the edit.
test("a workspace member's tool is the root's: init writes its path, doctor flags node_modules/.bin/vite", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  const top = tmp.wt.a;
  const web = path.join(top, 'apps', 'web');
  fs.mkdirSync(web, { recursive: true });
  fs.writeFileSync(path.join(top, 'package.json'), '{"private":true,"workspaces":["apps/*"]}\n');
  fs.writeFileSync(path.join(top, 'package-lock.json'), '{}\n');
  fs.writeFileSync(path.join(web, 'package.json'), '{"devDependencies":{"vite":"^7"}}\n');
  const init = await cli(tmp, ['init', 'apps/web', '--front', String(front)], { cwd: top });
  assert.match(init.stdout, /^\+start = cd apps\/web && \.\.\/\.\.\/node_modules\/\.bin\/vite --host 127\.0\.0\.1 --port \{port\} --strictPort$/m, init.stdout + init.stderr);
  // installed as npm does for a workspace: Vite in the top's node_modules
  fs.mkdirSync(path.join(top, 'node_modules', '.bin'), { recursive: true });
  fs.writeFileSync(path.join(top, 'node_modules', '.package-lock.json'), '{}\n');
  fs.writeFileSync(path.join(top, 'node_modules', '.bin', 'vite'), '');
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(top, 'node_modules/wtproxy-whoami'));
  fs.writeFileSync(path.join(top, '.wtproxy'), `start = cd apps/web && node_modules/.bin/vite --port {port} --strictPort\nfront = ${front}\n`);
  let m = (await doctor(tmp, top, front)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.match(m.detail, /there is no node_modules\/\.bin\/vite in .*apps\/web, so \/bin\/sh would exit 127/);
  assert.equal(m.fix, "in the .wtproxy's start, write ../../node_modules/.bin/vite for node_modules/.bin/vite");
  fs.writeFileSync(path.join(top, '.wtproxy'), `start = cd apps/web && ../../node_modules/.bin/vite --port {port} --strictPort\nfront = ${front}\n`);
  m = (await doctor(tmp, top, front)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
});

// Seen in an npm-workspaces monorepo of two services, api and web, both
// importing wtproxy-whoami: `npm install` removed the top's link (no
// package.json lists it). Plain doctor checked the first service only and
// named api's link in apps/api; web's Vite then stopped at its restart
// ("Cannot find package 'wtproxy-whoami' imported from
// .../vite.config.js.timestamp-...mjs"), unsaid. Now every Node service
// lacking it is named, and the fix is the one link at the top both
// resolve up to, saying that npm install removes it.
test("middleware: a workspace's two Node services lacking wtproxy-whoami: both named, one link at the top", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const [apiFront, webFront] = [await freePort(), await freePort()];
  const top = tmp.wt.a;
  const [api, web] = [path.join(top, 'apps', 'api'), path.join(top, 'apps', 'web')];
  fs.mkdirSync(api, { recursive: true });
  fs.mkdirSync(web, { recursive: true });
  fs.writeFileSync(path.join(top, 'package.json'), '{"private":true,"workspaces":["apps/*"]}\n');
  fs.writeFileSync(path.join(top, 'package-lock.json'), '{}\n');
  fs.writeFileSync(path.join(api, 'package.json'), '{"type":"module"}\n');
  fs.writeFileSync(path.join(api, 'server.js'), "import { whoami } from 'wtproxy-whoami';\n");
  fs.writeFileSync(path.join(web, 'package.json'), '{"type":"module","devDependencies":{"vite":"^7"}}\n');
  fs.writeFileSync(path.join(web, 'vite.config.js'), "import { wtproxyWhoami } from 'wtproxy-whoami/vite';\n" +
    'export default { plugins: [process.env.WTPROXY_PORT && wtproxyWhoami()] };\n');
  // installed as npm leaves a workspace, after it removed the link
  fs.mkdirSync(path.join(top, 'node_modules', '.bin'), { recursive: true });
  fs.writeFileSync(path.join(top, 'node_modules', '.package-lock.json'), '{}\n');
  fs.writeFileSync(path.join(top, 'node_modules', '.bin', 'vite'), '');
  const apiStart = 'cd apps/api && node server.js';
  const webStart = 'cd apps/web && ../../node_modules/.bin/vite --port {port} --strictPort';
  fs.writeFileSync(path.join(top, '.wtproxy'),
    `[service api]\nstart = ${apiStart}\nfront = ${apiFront}\n\n[service web]\nstart = ${webStart}\nfront = ${webFront}\n`);
  let m = (await doctor(tmp, top, null)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.ok(m.detail.startsWith(`\`${apiStart}\` cannot import wtproxy-whoami: no node_modules/wtproxy-whoami in ${api} or a folder above it`), m.detail);
  assert.ok(m.detail.includes(`; nor can service web's \`${webStart}\`, with no node_modules/wtproxy-whoami in ${web} or a folder above it`), m.detail);
  assert.match(m.fix, new RegExp(`^mkdir -p ${top}/node_modules && ln -sfn \\S+ ${top}/node_modules/wtproxy-whoami$`));
  assert.match(m.detail, /; one link at the worktree's top serves services api and web, which resolve up to it; npm install removes such a link \(no package\.json lists it\): link it again after each npm install, as wtproxy doctor then says$/, m.detail);
  const fixed = spawnSync('/bin/sh', ['-c', m.fix], { encoding: 'utf8' });
  assert.equal(fixed.status, 0, `${m.fix}: ${fixed.stderr}`);
  assert.ok(!fs.existsSync(path.join(api, 'node_modules')) && !fs.existsSync(path.join(web, 'node_modules')), 'no link per service');
  m = (await doctor(tmp, top, null)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  m = (await doctor(tmp, top, webFront)).byName.middleware;
  assert.equal(m.status, 'ok', m.detail);
  // api linked in its own folder, web nowhere: plain doctor, on api's
  // front, names web, and links it in its folder
  fs.renameSync(path.join(top, 'node_modules', 'wtproxy-whoami'), path.join(api, 'wtproxy-whoami.aside'));
  fs.mkdirSync(path.join(api, 'node_modules'));
  fs.renameSync(path.join(api, 'wtproxy-whoami.aside'), path.join(api, 'node_modules', 'wtproxy-whoami'));
  m = (await doctor(tmp, top, null)).byName.middleware;
  assert.equal(m.status, 'problem', m.detail);
  assert.ok(m.detail.startsWith(`\`${apiStart}\` finds wtproxy-whoami in ${api}/node_modules/wtproxy-whoami, but service web's \`${webStart}\` cannot import it: no node_modules/wtproxy-whoami in ${web} or a folder above it`), m.detail);
  assert.match(m.fix, new RegExp(`^mkdir -p ${web}/node_modules && ln -sfn \\S+ ${web}/node_modules/wtproxy-whoami$`));
  assert.match(m.detail, /npm install removes such a link/, m.detail);
});

// Seen in an npm-workspaces monorepo: each worktree's Vite proxied /api to
// a fixed http://localhost:3001 that no .wtproxy service had as its front.
// Three worktrees' Playwright runs at once: wt-b's page got "hello from
// main" (its Vite reached another worktree's API on 3001), wt-c's API
// failed with EADDRINUSE, and doctor said ok. Now doctor names the config,
// the port and what it reaches, and its fix, pasted, makes it content;
// a proxy to a declared front is content too.
test("vite-proxy: a Vite proxy to a fixed port no service owns: a problem naming the config; the fix pasted is ok", async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const top = tmp.wt.a;
  const [api, web, stray] = [await freePort(), await freePort(), await freePort()];
  fs.mkdirSync(path.join(top, 'apps', 'web'), { recursive: true });
  fs.writeFileSync(path.join(top, 'package.json'), '{"private":true,"workspaces":["apps/*"]}\n');
  const config = path.join(top, 'apps', 'web', 'vite.config.js');
  const text = `export default {\n  server: {\n    proxy: { '/api': 'http://localhost:${stray}' },\n  },\n};\n`;
  fs.writeFileSync(config, text);
  fs.writeFileSync(path.join(top, '.wtproxy'), `[service api]\nstart = cd apps/api && node src/server.js\nfront = ${api}\n\n` +
    `[service web]\nstart = cd apps/web && ../../node_modules/.bin/vite --port {port} --strictPort\nfront = ${web}\n`);
  let v = (await doctor(tmp, top, null)).byName['vite-proxy'];
  assert.equal(v.status, 'problem', v.detail);
  assert.ok(v.detail.startsWith(`apps/web/vite.config.js ([service web]): its dev-server proxy sends to http://localhost:${stray}, a port the .wtproxy declares no service on (its fronts: :${api} (api), :${web} (web)): `), v.detail);
  assert.match(v.detail, new RegExp(`whichever process holds ${stray}, another worktree's API`), v.detail);
  const m = /^in apps\/web\/vite\.config\.js, proxy to `(.*)` in place of (\S+): .*\(or give \[service api\] front = (\d+)\)$/.exec(v.fix);
  assert.ok(m, v.fix);
  assert.equal(m[1], `http://localhost:\${process.env.WTPROXY_FRONT_API || ${stray}}`);

  fs.writeFileSync(config, text.replace(`'${m[2]}'`, '`' + m[1] + '`'));
  v = (await doctor(tmp, top, null)).byName['vite-proxy'];
  assert.equal(v.status, 'ok', v.detail);
  // A literal proxy to the API's front: the daemon owns it.
  fs.writeFileSync(config, text.replace(String(stray), String(api)));
  v = (await doctor(tmp, top, null)).byName['vite-proxy'];
  assert.equal(v.status, 'ok', v.detail);

  // Angular's ng serve: its proxy config (angular.json's proxyConfig, or
  // --proxy-config) to a port no service owns: an agent's tests ran on
  // another worktree's API there, while doctor said "no Vite config".
  const ng = path.join(top, 'apps', 'ng');
  fs.mkdirSync(ng, { recursive: true });
  fs.writeFileSync(path.join(ng, 'angular.json'), JSON.stringify({ projects: { shop: { architect: { serve: {
    builder: '@angular-devkit/build-angular:dev-server', options: { proxyConfig: 'proxy.conf.json' } } } } } }));
  fs.writeFileSync(path.join(ng, 'proxy.conf.json'), JSON.stringify({ '/api': { target: `http://localhost:${stray}`, secure: false } }));
  fs.writeFileSync(path.join(top, '.wtproxy'), `[service api]\nstart = cd apps/api && node src/server.js\nfront = ${api}\n\n` +
    `[service web]\nstart = cd apps/ng && ../../node_modules/.bin/ng serve --host 127.0.0.1 --port {port}\nfront = ${web}\n`);
  v = (await doctor(tmp, top, null)).byName['vite-proxy'];
  assert.equal(v.status, 'problem', v.detail);
  assert.ok(v.detail.startsWith(`apps/ng/proxy.conf.json ([service web]): its dev-server proxy sends to http://localhost:${stray}, `), v.detail);
  fs.writeFileSync(path.join(ng, 'other.json'), JSON.stringify({ '/api': { target: `http://localhost:${api}` } }));
  fs.writeFileSync(path.join(top, '.wtproxy'), `[service api]\nstart = cd apps/api && node src/server.js\nfront = ${api}\n\n` +
    `[service web]\nstart = cd apps/ng && npx ng serve --proxy-config other.json --port {port}\nfront = ${web}\n`);
  v = (await doctor(tmp, top, null)).byName['vite-proxy'];
  assert.equal(v.status, 'ok', `--proxy-config names the file, to the API's front: ${v.detail}`);
  fs.writeFileSync(path.join(top, '.wtproxy'), `[service api]\nstart = cd apps/api && node src/server.js\nfront = ${api}\n\n` +
    `[service web]\nstart = cd apps/web && ../../node_modules/.bin/vite --port {port} --strictPort\nfront = ${web}\n`);

  // Playwright's webServer entry for the API waits on a port no service
  // has (3001 beside its service's front): Playwright runs the API itself
  // there, outside wtproxy, while the tests' baseURL is the web's front.
  fs.writeFileSync(path.join(top, 'playwright.config.mjs'), `export default {\n  use: { baseURL: 'http://localhost:${web}' },\n` +
    `  webServer: [\n    { command: 'npm run dev -w apps/api', url: 'http://localhost:${stray}/api/health', reuseExistingServer: true },\n` +
    `    { command: 'npm run dev -w apps/web', url: 'http://localhost:${web}', reuseExistingServer: true },\n  ],\n};\n`);
  let p = (await doctor(tmp, top, null)).byName.playwright;
  assert.equal(p.status, 'problem', p.detail);
  assert.ok(p.detail.startsWith(`playwright.config.mjs: its webServer entry \`npm run dev -w apps/api\` waits for port ${stray}, which the .wtproxy declares no service on (its fronts: :${api} (api), :${web} (web)): `), p.detail);
  assert.match(p.fix, new RegExp(`^front = ${stray} in the \\.wtproxy's service for that server \\(or that url on its service's front\\)`));
  fs.writeFileSync(path.join(top, 'playwright.config.mjs'), fs.readFileSync(path.join(top, 'playwright.config.mjs'), 'utf8').replace(String(stray), String(api)));
  p = (await doctor(tmp, top, null)).byName.playwright;
  assert.equal(p.status, 'ok', p.detail);
});

// Seen in an adoption walk: a Vite front end without the /__whoami plugin
// (wtproxy init only noted it then, for Vite and Node servers) got doctor's fix
// `wtproxy init --apply`, which wrote nothing for it then. Now the fix
// names the plugin's entry (as init adds it: loaded under wtproxy run
// only) for the start folder's Vite config, then the restart; done as
// said, doctor is content.
test('whoami: a Vite server without the plugin: the fix names its config, not init --apply', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const web = path.join(tmp.wt.a, 'web');
  fs.mkdirSync(path.join(web, 'node_modules'), { recursive: true });
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(web, 'node_modules/wtproxy-whoami'));
  fs.writeFileSync(path.join(web, 'index.html'), '<h1>shop</h1>\n');
  const config = "export default { clearScreen: false, server: { proxy: { '/api': 'http://localhost:8001' } } };\n";
  fs.writeFileSync(path.join(web, 'vite.config.mjs'), config);
  const vite = path.join(repoRoot, 'tests/node_modules/vite/bin/vite.js');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = cd web && ${process.execPath} ${vite} --port {port} --strictPort --host 127.0.0.1\nfront = ${px.port}\n`);
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 502, r.body);
  const wrapper = (await lsJson(tmp))[0].pid; // the daemon's wrapper: its group is Vite's
  t.after(() => { try { process.kill(-wrapper, 'SIGTERM'); } catch { /* gone */ } });
  let w = (await doctor(tmp, tmp.wt.a, px.port)).byName.whoami;
  assert.equal(w.status, 'problem', w.detail);
  const entry = "process.env.WTPROXY_PORT ? import(String('wtproxy-whoami/vite')).then((m) => m.wtproxyWhoami()) : null";
  const fix = `in ${web}/vite.config.mjs, add to plugins (loaded under wtproxy run only, so vite build and CI need no wtproxy-whoami): ${entry}; then wtproxy restart --front ${px.port}`;
  assert.equal(w.fix, fix);

  fs.writeFileSync(path.join(web, 'vite.config.mjs'), config.replace('clearScreen: false,', `clearScreen: false, plugins: [${entry}],`));
  const restart = await cli(tmp, fix.split('; then ')[1].split(' ').slice(1), { cwd: tmp.wt.a, ms: 60000 });
  assert.equal(restart.code, 0, restart.stdout + restart.stderr);
  w = (await doctor(tmp, tmp.wt.a, px.port)).byName.whoami;
  assert.equal(w.status, 'ok', w.detail);
  assert.equal((await curlFrom(tmp.wt.a, px.port)).status, 200);
  sanitizerClean(assert, px.stderr());
});

test('the front port held by another process: doctor names it and how to free it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const holder = net.createServer();
  await new Promise((r) => holder.listen(0, '127.0.0.1', r));
  t.after(() => holder.close());
  const front = holder.address().port;
  // Another wtproxy first on PATH (an older install): the fix names this one.
  const other = path.join(tmp.root, 'other-bin');
  fs.mkdirSync(other);
  fs.writeFileSync(path.join(other, 'wtproxy'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  const d = await doctor(tmp, tmp.wt.a, front, { PATH: `${other}:${path.dirname(wtproxyBin)}:${process.env.PATH}` });
  assert.equal(d.byName.daemon.status, 'problem');
  assert.match(d.byName.daemon.detail, new RegExp(`port ${front} on 127\\.0\\.0\\.1 is already in use by pid ${process.pid} \\(`));
  assert.match(d.byName.daemon.fix, new RegExp(`^kill ${process.pid} && tail --pid=${process.pid} -f /dev/null; setsid -f ${SELF_RE} serve --listen ${front} >>\\S+ 2>&1$`));
});

// `PHP_CLI_SERVER_WORKERS=2 php -S` on the front: the master forks two
// workers that share its listening socket. doctor's fix killed the master
// alone; the workers, reparented to init, kept the port, the pasted daemon
// failed on it, and each round of doctor named the next worker. The fix
// kills every holder and waits for each; pasted, the daemon owns the front.
test('a php -S with forked workers on the front: doctor kills every holder, and its fix pasted frees the port', { timeout: 60000 }, async (t) => {
  if (spawnSync('php', ['-v']).status !== 0) {
    t.skip('no php here');
    return;
  }
  const tmp = makeWorktrees(t, ['a']);
  const front = await freePort();
  fs.mkdirSync(path.join(tmp.root, 'public'));
  fs.writeFileSync(path.join(tmp.root, 'public', 'index.php'), '<?php echo "main";\n');
  const php = spawn('php', ['-S', `127.0.0.1:${front}`, '-t', 'public'], {
    cwd: tmp.root, detached: true, stdio: 'ignore', env: { ...process.env, PHP_CLI_SERVER_WORKERS: '2' },
  });
  t.after(() => { try { process.kill(-php.pid, 'SIGKILL'); } catch { /* gone */ } });
  const children = () => {
    try { return fs.readFileSync(`/proc/${php.pid}/task/${php.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number); } catch { return []; }
  };
  await waitFor(async () => children().length === 2 && (await curlFrom(tmp.root, front, '/')).status === 200, 10000, 'php -S and its 2 workers');
  const pids = [php.pid, ...children()].sort((a, b) => a - b).join(' ');
  const state = { XDG_STATE_HOME: path.join(tmp.root, 'state') };
  const check = (await doctor(tmp, tmp.wt.a, front, state)).byName.daemon;
  assert.match(check.detail, new RegExp(`in use by pid ${php.pid} \\(php -S .*, and by 2 more processes sharing its socket; stop them all with \`kill ${pids}\``), check.detail);
  assert.match(check.fix, new RegExp(`^kill ${pids} && for p in ${pids}; do tail --pid=\\$p -f /dev/null; done; setsid -f ${SELF_RE} serve --listen ${front} >>\\S+ 2>&1$`), check.fix);

  const env = { ...process.env, ...cliEnv(tmp), ...state };
  const sh = spawn('/bin/sh', ['-c', check.fix], { cwd: tmp.wt.a, env, stdio: 'ignore', detached: true });
  t.after(() => { try { process.kill(-sh.pid, 'SIGKILL'); } catch { /* gone */ } });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve('no exit within 10 s'), 10000);
    sh.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.equal(code, 0, `${check.fix}: did not return`);
  let c;
  await waitFor(async () => (c = (await doctor(tmp, tmp.wt.a, front, state)).byName.daemon).status === 'ok', 10000,
    'the daemon the fix started, on the front the workers held');
  const daemon = Number(/wtproxy daemon pid (\d+)/.exec(c.detail)[1]);
  t.after(() => { try { process.kill(daemon, 'SIGKILL'); } catch { /* gone */ } });
  for (const pid of pids.split(' ')) assert.ok(!pidAlive(Number(pid)), `php pid ${pid} is gone`);
});

// Before `wtproxy init`: no .wtproxy, but the Playwright config's baseURL
// names the port the tests will use. doctor judges that port, not 8000 or
// the daemon's, and says where it came from.
test('no .wtproxy yet: doctor checks the port the Playwright config\'s baseURL names', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const holder = net.createServer();
  await new Promise((r) => holder.listen(0, '127.0.0.1', r));
  t.after(() => holder.close());
  const base = holder.address().port;
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'),
    `export default { use: { baseURL: 'http://localhost:${base}' } };\n`);
  const from = `port ${base} \\(playwright\\.config\\.mjs baseURL\\)`;

  // No daemon, and something else holds the tests' port: named, and freed.
  let d = await doctor(tmp, tmp.wt.a, null);
  assert.equal(d.report.front, base);
  assert.equal(d.report.front_from, 'playwright.config.mjs baseURL');
  let c = d.byName.daemon;
  assert.equal(c.status, 'problem', c.detail);
  assert.match(c.detail, new RegExp(`^no wtproxy daemon answers for ${from} \\(.*\\), and port ${base} on 127\\.0\\.0\\.1 is already in use by pid ${process.pid} `));
  assert.match(c.fix, new RegExp(`^kill ${process.pid} && tail --pid=${process.pid} -f /dev/null; setsid -f ${SELF_RE} serve --listen ${base} `));

  // A daemon on another port: the tests' requests do not reach it.
  holder.close();
  const px = await startDaemon(t, tmp);
  d = await doctor(tmp, tmp.wt.a, null);
  c = d.byName.daemon;
  assert.equal(d.report.front, base);
  assert.equal(c.status, 'problem', c.detail);
  assert.match(c.detail, new RegExp(`^the daemon \\(pid ${px.proc.pid}\\) listens on .*127\\.0\\.0\\.1:${px.port}.*, not on ${from}: requests to that port do not reach it`));
  assert.match(c.fix, new RegExp(`^kill ${px.proc.pid} && tail --pid=${px.proc.pid} -f /dev/null; setsid -f ${SELF_RE} serve --control ${tmp.control} --state ${tmp.state} --listen ${px.port} --listen ${base} `));

  // A daemon on the tests' port: ok, and the detail says which port and why.
  await px.stop();
  const onBase = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${base}`]);
  c = (await doctor(tmp, tmp.wt.a, null)).byName.daemon;
  assert.equal(c.status, 'ok', c.detail);
  assert.match(c.detail, new RegExp(`^wtproxy daemon pid ${onBase.proc.pid} listens on .*127\\.0\\.0\\.1:${base}.*, ${from} among them$`));
});

// A stray server (an API left from an old run) listening on 127.0.0.1:port,
// in a process of its own: doctor's fix kills it.
async function stray(t, port) {
  const p = spawn(process.execPath, ['-e', `require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => { if (pidAlive(p.pid)) p.kill('SIGKILL'); });
  await new Promise((r) => p.stdout.once('data', r));
  return p;
}

// Outside any worktree (a folder left of a removed one), no .wtproxy and no
// tests name a port: the front checked was the default, and the daemon
// check proposed killing the daemon every worktree uses and serving 8000
// besides. Now it demands no port there; the worktree check alone is the
// problem.
test('outside a worktree, without --front: the daemon check demands no port; only the worktree is a problem', async (t) => {
  const tmp = makeWorktrees(t, []);
  const [p1, p2] = [await freePort(), await freePort()];
  let d = await doctor(tmp, tmp.root, null);
  assert.equal(d.byName.daemon.status, 'skipped', d.byName.daemon.detail);
  assert.equal(d.byName.daemon.detail, 'not in a worktree: no front port here to check a daemon for');
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${p1}`, '--listen', `127.0.0.1:${p2}`], { listeners: 2 });
  d = await doctor(tmp, tmp.root, null);
  const c = d.byName.daemon;
  assert.equal(c.status, 'ok', `${c.detail}\nfix: ${c.fix}`);
  assert.match(c.detail, new RegExp(`^wtproxy daemon pid ${px.proc.pid} listens on .*127\\.0\\.0\\.1:${p1}.*127\\.0\\.0\\.1:${p2}.*; not in a worktree, so no front port here to check it for$`));
  assert.equal(d.byName.worktree.status, 'problem');
  assert.deepEqual(d.report.checks.filter((x) => x.status === 'problem' && x.name !== 'load').map((x) => x.name), ['worktree'],
    'the worktree alone (load depends on the machine)');
  assert.ok(pidAlive(px.proc.pid));
});

// No daemon, and a hand-started server holds the front (uvicorn on 8440):
// the sentence offered "or serve another port: wtproxy serve --listen
// 8441", the .wtproxy's other service's front. Now a port none of the
// fronts is, in doctor's words and in serve's own.
test('no daemon, the front held by a hand-started server: the other port offered is none of the .wtproxy\'s fronts', async (t) => {
  let front;
  do front = await freePort(); while (front >= 65535 || !(await portFree(front + 1)));
  const tmp = declaring(t, ['[service api]', 'start = ./api {port}', `front = ${front}`, '',
    '[service admin]', 'start = ./admin {port}', `front = ${front + 1}`], ['a']);
  const held = await stray(t, front);
  const offered = (text) => {
    const m = /or serve another port: wtproxy serve --listen (\d+)/.exec(text);
    assert.ok(m, text);
    return Number(m[1]);
  };
  const d = await doctor(tmp, tmp.wt.a, null);
  const c = d.byName.daemon;
  assert.equal(c.status, 'problem', c.detail);
  assert.match(c.detail, new RegExp(`port ${front} on 127\\.0\\.0\\.1 is already in use by pid ${held.pid} `));
  const other = offered(c.detail);
  assert.ok(other > front + 1, `${other}: not ${front}, nor admin's ${front + 1}`);
  assert.match(c.fix, new RegExp(`^kill ${held.pid} && tail --pid=${held.pid} -f /dev/null; setsid -f ${SELF_RE} serve --listen ${front} --listen ${front + 1} `),
    'the fix itself keeps both fronts');

  const r = await runToExit(wtproxyBin, ['serve', '--control', path.join(tmp.root, 'serve.sock'), '--state', path.join(tmp.root, 'serve.json'),
    '--listen', `127.0.0.1:${front + 1}`, '--listen', `127.0.0.1:${front}`], { ms: 10000 });
  assert.equal(r.code, 1, r.stderr);
  sanitizerClean(assert, r.stderr);
  assert.ok(offered(r.stderr) > front + 1, `serve offers neither port it was to serve: ${r.stderr}`);
});

test('two services: the daemon owns the web front, a stray holds the API front: doctor names it, and its fix works as printed', async (t) => {
  const [web, api] = [await freePort(), await freePort()];
  const tmp = declaring(t, ['[service api]', 'start = ./api {port}', `front = ${api}`, '',
    '[service web]', 'start = ./web {port}', `front = ${web}`, 'after = api'], ['a']);
  const old = await stray(t, api);
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${web}`]);
  const state = { XDG_STATE_HOME: path.join(tmp.root, 'state') };
  let d = await doctor(tmp, tmp.wt.a, web, state);
  const c = d.byName.daemon;
  assert.equal(c.status, 'problem', `the API's calls from the front end reach the stray: ${c.detail}`);
  assert.match(c.detail, new RegExp(`not on port ${api} \\(service api's front in the \\.wtproxy\\)`));
  assert.match(c.detail, new RegExp(`port ${api} on 127\\.0\\.0\\.1 is already in use by pid ${old.pid} `));
  const wait = (pid) => `kill ${pid} && tail --pid=${pid} -f /dev/null; `;
  assert.equal(c.fix, `${wait(px.proc.pid)}${wait(old.pid)}setsid -f ${SELF} serve --control ${tmp.control} --state ${tmp.state} --listen ${web} --listen ${api} >>${tmp.root}/state/wtproxy/daemon.log 2>&1`);

  // Pasted as printed: it returns once the new daemon runs, in the background.
  const env = { ...process.env, ...cliEnv(tmp), PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}`,
    XDG_STATE_HOME: path.join(tmp.root, 'state') };
  // Asynchronously: the processes it kills are this test's children, whose
  // exit (which its `tail --pid` waits for) node reaps only while it runs.
  const sh = spawn('/bin/sh', ['-c', c.fix], { cwd: tmp.wt.a, env, stdio: 'ignore' });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => { sh.kill('SIGKILL'); resolve('no exit within 20 s'); }, 20000);
    sh.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.equal(code, 0, 'the pasted fix returns once the new daemon runs');
  await waitFor(async () => (d = await doctor(tmp, tmp.wt.a, web, state)).byName.daemon.status === 'ok', 15000,
    'the new daemon on both fronts');
  const daemon = Number(/wtproxy daemon pid (\d+)/.exec(d.byName.daemon.detail)[1]);
  t.after(() => { try { process.kill(daemon, 'SIGKILL'); } catch { /* gone */ } });
  assert.ok(!pidAlive(old.pid), 'the stray is gone');
  assert.match(d.byName.daemon.detail, new RegExp(`127\\.0\\.0\\.1:${api}"`));
});

// A Vite front end and its API, each a webServer entry running a package
// script (`npm run dev:web`, whose script is `vite --port WEB
// --strictPort`): doctor called it ok, the script's port unseen; with the
// daemon stopped every worktree's run started both on the fronts, the
// first to bind won, and a worktree's tests passed on another's API.
test('playwright: a webServer array entry whose package script binds a front itself: a problem, and its fix is ok', async (t) => {
  const [web, api] = [await freePort(), await freePort()];
  const tmp = declaring(t, ['[service api]', 'start = node api.mjs', `front = ${api}`, '',
    '[service web]', `start = node_modules/.bin/vite --host 127.0.0.1 --port {port} --strictPort`, `front = ${web}`, 'after = api'], ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'package.json'), JSON.stringify({ name: 'duo', private: true,
    scripts: { 'dev:web': `vite --port ${web} --strictPort`, 'dev:api': 'node api.mjs' } }));
  const config = (webCmd) => `export default { use: { baseURL: 'http://localhost:${web}' },\n  webServer: [\n` +
    `    { command: 'npm run dev:api', url: 'http://localhost:${api}/api/health', reuseExistingServer: true },\n` +
    `    { command: '${webCmd}', url: 'http://localhost:${web}/', reuseExistingServer: true },\n  ],\n};\n`;
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), config('npm run dev:web'));
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${web}`, '--listen', `127.0.0.1:${api}`], { listeners: 2 });
  let d = await doctor(tmp, tmp.wt.a, web);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.ok(d.byName.playwright.detail.startsWith(`playwright.config.mjs: its webServer entry \`npm run dev:web\` runs \`vite --port ${web} --strictPort\`, which binds port ${web} itself, a front port wtproxy listens on`), d.byName.playwright.detail);
  assert.match(d.byName.playwright.detail, /with no daemon every worktree's run starts its own there, the first to bind wins/);
  const fix = `wtproxy run --front ${web} -- node_modules/.bin/vite --host 127.0.0.1 --port {port} --strictPort`;
  assert.equal(d.byName.playwright.fix, `in that entry write command: '${fix}'`);
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), config(fix));
  d = await doctor(tmp, tmp.wt.a, web);
  assert.notEqual(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  sanitizerClean(assert, px.stderr());
});

test('a verified server is ok; an edit on disk makes it stale; the recipe and the leases', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  const backend = await run.ready;
  // the wrapper says "is ready" just before it tells the daemon (seen once
  // in CI: doctor read "starting")
  await waitFor(async () => (await lsJson(tmp))[0]?.state === 'ready', 5000, 'marked ready');
  let d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.daemon.status, 'ok');
  assert.match(d.byName.daemon.detail, new RegExp(`listens on .*127\\.0\\.0\\.1:${px.port}`));
  assert.equal(d.byName.server.status, 'ok');
  assert.match(d.byName.server.detail, new RegExp(`127\\.0\\.0\\.1:${backend}, pid \\d+, ready`));
  assert.equal(d.byName.whoami.status, 'ok', d.byName.whoami.detail);
  assert.match(d.byName.whoami.detail, /serves this checkout, current code sha256:[0-9a-f]{64}/);

  // The code on disk changes; the server still runs what it loaded.
  fs.writeFileSync(path.join(tmp.wt.a, 'views.py'), 'x = 1\n');
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.whoami.status, 'problem');
  assert.match(d.byName.whoami.detail, /^stale: the server \(pid \d+, started .*\) loaded sha256:\w+, the code on disk is sha256:\w+$/);
  // The fix restarts it through its wtproxy run wrapper, on its front,
  // and running it makes the check ok.
  assert.equal(d.byName.whoami.fix, `wtproxy restart --front ${px.port}`);
  assert.equal(d.code, 1);
  const restarted = await cli(tmp, d.byName.whoami.fix.split(' ').slice(1), { cwd: tmp.wt.a });
  assert.equal(restarted.code, 0, restarted.stderr);
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.whoami.status, 'ok', d.byName.whoami.detail);
  assert.match(run.stderr(), /restart/, 'the same wrapper restarted its server');

  // A Playwright config that reuses whatever holds a fixed port, without
  // wtproxy: a problem; with a .wtproxy (recipe port) on its port: ok.
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'),
    `export default { use: { baseURL: 'http://localhost:${px.port}' },\n` +
    `  webServer: { command: 'npm start', port: ${px.port}, reuseExistingServer: true } };\n`);
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.playwright.status, 'problem');
  assert.match(d.byName.playwright.detail, /reuseExistingServer with a fixed port reuses whatever server holds it/);
  assert.equal(d.byName.playwright.fix, 'wtproxy help wtproxy-file > .wtproxy, then edit its start, and make the server answer /__whoami as wtproxy help whoami-protocol says (wtproxy init knows no app here)',
    'no app init knows: the guides, not the init --apply it refuses');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = npm start\nfront = ${px.port}\n`);
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  assert.match(d.byName.playwright.detail, /recipe port with a \.wtproxy/);
  // ok, and without wtproxy's reporter: said, with the line that adds it
  assert.match(d.byName.playwright.detail, /; to see under a failed test what wtproxy refused during it, add \['wtproxy-whoami\/playwright'\] to its reporter list \(wtproxy help playwright\)$/);
  // Named, the reporter must resolve from the config's folder (a run
  // failed "Cannot find module 'wtproxy-whoami/playwright'" while doctor,
  // which checked only the app folder's link, was content): a problem, and
  // its fix, pasted, makes it ok.
  fs.appendFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), "export const reporter = [['list'], ['wtproxy-whoami/playwright']];\n");
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.ok(d.byName.playwright.detail.startsWith(`playwright.config.mjs names the reporter 'wtproxy-whoami/playwright', which Node does not find from ${tmp.wt.a}: no node_modules/wtproxy-whoami there or in a folder above it`), d.byName.playwright.detail);
  assert.match(d.byName.playwright.fix, new RegExp(`^mkdir -p ${tmp.wt.a}/node_modules && ln -sfn \\S+ ${tmp.wt.a}/node_modules/wtproxy-whoami$`));
  const linked = spawnSync('/bin/sh', ['-c', d.byName.playwright.fix], { encoding: 'utf8' });
  assert.equal(linked.status, 0, linked.stderr);
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  assert.doesNotMatch(d.byName.playwright.detail, /reporter/);

  // Recipe url, with this wtproxy first on PATH, as installed (test 178:
  // without it, Playwright's shell would not find `wtproxy run`).
  const installed = { PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  // A webServer.command that binds the front port itself (a SvelteKit
  // user's config from before adoption, its branch given main's .wtproxy
  // since): doctor said ok, and Playwright's run of it failed "Port ...
  // is already in use" while the daemon held the port. A problem, whose
  // fix, written into the config, is ok.
  const bindsFront = (cmd) => "export default { use: { baseURL: 'http://localhost:" + px.port + "' },\n" +
    `  webServer: { command: '${cmd}', url: 'http://localhost:${px.port}', reuseExistingServer: true } };\n`;
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), bindsFront(`npm run dev -- --port ${px.port} --strictPort`));
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.ok(d.byName.playwright.detail.startsWith(`playwright.config.mjs: webServer.command \`npm run dev -- --port ${px.port} --strictPort\` binds port ${px.port} itself, the front port wtproxy listens on: whenever a daemon holds it, Playwright's run of it fails ("Port ${px.port} is already in use")`), d.byName.playwright.detail);
  assert.equal(d.byName.playwright.fix, `in webServer.command write: wtproxy run --front ${px.port} -- npm start`);
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), bindsFront(d.byName.playwright.fix.replace('in webServer.command write: ', '')));
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  // A .wtproxy start that is a shell line (a Sinatra user's: a fingerprint
  // written first, then exec the server): the fix gave it bare, and pasted,
  // Playwright's shell cut it at its &&: wtproxy run wrapped `mkdir` alone,
  // which exited 0, and the server ran outside wtproxy on a literal {port}.
  // Quoted, as the daemon runs a start; pasted, ok.
  const shellStart = "mkdir -p .run && echo '{}' > .run/fp.json && exec npm start";
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${shellStart}\nfront = ${px.port}\n`);
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), bindsFront(`npm run dev -- --port ${px.port}`));
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.equal(d.byName.playwright.fix, `in webServer.command write, between backquotes: wtproxy run --front ${px.port} -- sh -c "mkdir -p .run && echo '{}' > .run/fp.json && exec npm start"`);
  const pasted = d.byName.playwright.fix.replace('in webServer.command write, between backquotes: ', '');
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), "export default { use: { baseURL: 'http://localhost:" + px.port + "' },\n" +
    `  webServer: { command: \`${pasted}\`, url: 'http://localhost:${px.port}', reuseExistingServer: true } };\n`);
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = npm start\nfront = ${px.port}\n`);
  // A monorepo's recipe "port" (its command kept, as the guide shows), the
  // front it binds a service's other than the .wtproxy's first: doctor,
  // checking the first's, said ok, and with the daemon stopped a
  // worktree's tests passed on another's web server.
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `[service api]\nstart = npm start\nfront = ${px.port + 1}\n[service web]\nstart = cd web && vite --port {port}\nfront = ${px.port}\n`);
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), "export default { use: { baseURL: 'http://localhost:" + px.port + "' },\n" +
    `  webServer: { command: 'npm run dev -w @shop/web -- --port ${px.port}', port: ${px.port}, reuseExistingServer: true } };\n`);
  d = await doctor(tmp, tmp.wt.a, null, installed);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.ok(d.byName.playwright.detail.startsWith(`playwright.config.mjs: webServer.command \`npm run dev -w @shop/web -- --port ${px.port}\` binds port ${px.port} itself`), d.byName.playwright.detail);
  assert.equal(d.byName.playwright.fix, `in webServer.command write: wtproxy run --front ${px.port} -- sh -c "cd web && vite --port {port}"`);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = npm start\nfront = ${px.port}\n`);

  // Recipe url whose `wtproxy run` lacks the --front of its url's port: it
  // registers on the .wtproxy's front while Playwright waits on the url's port.
  const urlRecipe = (cmd) => "export default { use: { baseURL: 'http://localhost:3000' },\n" +
    `  webServer: { command: '${cmd}', url: 'http://localhost:3000/', reuseExistingServer: true } };\n`;
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), urlRecipe('wtproxy run -- npm start'));
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.match(d.byName.playwright.detail, new RegExp(`\`wtproxy run\` registers its server on front ${px.port}, but webServer\\.url is on port 3000`));
  assert.equal(d.byName.playwright.fix, 'in webServer.command write: wtproxy run --front 3000 -- ...');
  // Without --front, run takes the .wtproxy's front (wtproxy run --help):
  // on the url's port that is fine, not "registers on 8000".
  const ownFront = "export default { use: { baseURL: 'http://localhost:" + px.port + "' },\n" +
    `  webServer: { command: 'wtproxy run -- npm start', url: 'http://localhost:${px.port}/', reuseExistingServer: true } };\n`;
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), ownFront);
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), urlRecipe('wtproxy run --front 3000 -- npm start'));
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);

  // Recipe url and a .wtproxy on the same front: the daemon starts the
  // .wtproxy's server at the readiness check and webServer.command never
  // runs; two different commands are a problem, the same one is fine.
  const sameFront = (cmd) => "export default { use: { baseURL: 'http://localhost:" + px.port + "' },\n" +
    `  webServer: { command: '${cmd}', url: 'http://localhost:${px.port}/', reuseExistingServer: true } };\n`;
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'),
    sameFront(`wtproxy run --front ${px.port} -- DJANGO_SETTINGS_MODULE=app.test_settings  python3 manage.py runserver {port}`));
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = python3 manage.py runserver {port}\nfront = ${px.port}\n`);
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.equal(d.byName.playwright.detail, 'playwright.config.mjs: webServer.command runs ' +
    '`DJANGO_SETTINGS_MODULE=app.test_settings  python3 manage.py runserver {port}` through wtproxy run, but the .wtproxy ' +
    `declares \`python3 manage.py runserver {port}\` on front ${px.port}: Playwright's readiness check reaches the daemon, ` +
    "which starts the .wtproxy's, and webServer.command never runs while a daemon answers, so the tests run against the .wtproxy's command");
  assert.equal(d.byName.playwright.fix,
    'make them one command: start = DJANGO_SETTINGS_MODULE=app.test_settings  python3 manage.py runserver {port} in .wtproxy');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = DJANGO_SETTINGS_MODULE=app.test_settings python3 manage.py runserver {port}\nfront = ${px.port}\n`);
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  assert.match(d.byName.playwright.detail, /recipe url, and the \.wtproxy declares the same command on front \d+: the daemon starts it at Playwright's readiness check/);
  // A start that begins with `exec` (the daemon's shell replaces itself):
  // the same command as webServer's without it, never a `wtproxy run --
  // exec ...` to write, which fails ("cannot run exec", exit 127).
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), sameFront(`wtproxy run --front ${px.port} -- bin/wt-server {port}`));
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = exec bin/wt-server {port}\nfront = ${px.port}\n`);
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', `${d.byName.playwright.detail}; fix: ${d.byName.playwright.fix}`);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = exec bin/wt-server {port} --log-level debug\nfront = ${px.port}\n`);
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'problem', d.byName.playwright.detail);
  assert.equal(d.byName.playwright.fix, "make them one command, the .wtproxy's (it runs webServer's and more): " +
    `in playwright.config.mjs write command: \`wtproxy run --front ${px.port} -- bin/wt-server {port} --log-level debug\``);
  fs.writeFileSync(path.join(tmp.wt.a, 'playwright.config.mjs'), sameFront(d.byName.playwright.fix.split('`')[1]));
  d = await doctor(tmp, tmp.wt.a, px.port, installed);
  assert.equal(d.byName.playwright.status, 'ok', d.byName.playwright.detail);
  fs.rmSync(path.join(tmp.wt.a, 'playwright.config.mjs'));
  fs.rmSync(path.join(tmp.wt.a, '.wtproxy'));

  // Leases: this worktree's, through the daemon's store.
  const claim = await cli(tmp, ['claim', 'emulator-1', '--ttl', '5m', '--purpose', 'e2e'], { cwd: tmp.wt.a });
  assert.equal(claim.code, 0, claim.stderr);
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.leases.status, 'ok');
  assert.match(d.byName.leases.detail, /this worktree holds 1 lease: emulator-1; others hold 0/);
});

test('a registration without a pid answered by another checkout: unregistered, never `kill 0`', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.b, front: px.port });
  const port = await run.ready;
  const reg = await cli(tmp, ['register', '--front', String(px.port), '--port', String(port), '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 1, 'register says the gate refuses it (147), and keeps the entry');
  assert.match(reg.stderr, new RegExp(`is served by ${tmp.wt.b}, not by ${tmp.wt.a}`));
  let d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.whoami.status, 'problem');
  assert.match(d.byName.whoami.detail, new RegExp(`serves ${tmp.wt.b}, not this worktree ${tmp.wt.a}`));
  assert.match(d.byName.whoami.fix, new RegExp(`^wtproxy unregister --front ${px.port} `));
  const un = await cli(tmp, d.byName.whoami.fix.split(' (')[0].split(' ').slice(1), { cwd: tmp.wt.a });
  assert.equal(un.code, 0, un.stderr);
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.whoami.status, 'skipped', 'no registration of wt-a is left');
  sanitizerClean(assert, px.stderr());
});

test('a .wtproxy the daemon refuses (a typo\'d key): named with its line; the daemon is not to be killed', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./dev {port}\nfrnot = ${px.port}\n`);
  // No --front: the file's front is unreadable, so doctor judges the port
  // the daemon listens on (not 8000, where nothing is).
  const r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env: NO_PG, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  const c = Object.fromEntries(JSON.parse(r.stdout).checks.map((x) => [x.name, x]));
  assert.equal(c.server.status, 'problem', c.server.detail);
  assert.match(c.server.detail, /the daemon refuses the \.wtproxy, so it starts no server: .*\.wtproxy:2: bad or unknown `frnot`/);
  assert.equal(c.server.fix, 'correct that line of the .wtproxy, then run wtproxy doctor again');
  assert.equal(c.daemon.status, 'ok', `the daemon's own port is the one judged: ${c.daemon.detail}`);
  assert.match(c.daemon.detail, new RegExp(`:${px.port}\\b`), c.daemon.detail);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./dev {port}\nfront = ${px.port}\n`);
  const d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.server.status, 'ok', d.byName.server.detail);
});

test('databases: headroom and stamped test databases on the server PG* names', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const [roomy, tight] = await Promise.all([startPostgres(t), startPostgres(t, { settings: { max_connections: '12' } })]);
  roomy.psql('CREATE DATABASE test_shop_a');
  roomy.psql(`COMMENT ON DATABASE test_shop_a IS 'wtproxy:m1:${tmp.wt.a}|h1'`);
  roomy.psql('CREATE DATABASE test_shop_b');
  roomy.psql(`COMMENT ON DATABASE test_shop_b IS 'wtproxy:m1:${tmp.wt.b}|h1'`);
  const front = await freePort();
  let d = await doctor(tmp, tmp.wt.a, front, roomy.env);
  assert.equal(d.byName.databases.status, 'ok', d.byName.databases.detail);
  assert.match(d.byName.databases.detail, new RegExp(`host 127\\.0\\.0\\.1, port ${roomy.port}\\): \\d+ of max_connections 100 in use \\(3 reserved\\), \\d+ left`));
  assert.match(d.byName.databases.detail, new RegExp(`this worktree's databases: test_shop_a \\(test\\); others': test_shop_b \\(test, ${tmp.wt.b}\\)$`));

  // A database whose worktree is gone from this machine: `db ls` says
  // "(gone: wtproxy db release --abandoned)", doctor said it ok like any
  // other. Another machine's worktree is not looked for here.
  const goneWt = path.join(tmp.root, 'wt-removed');
  roomy.psql('CREATE DATABASE test_shop_gone');
  roomy.psql(`COMMENT ON DATABASE test_shop_gone IS 'wtproxy:m1:${goneWt}|h1'`);
  roomy.psql('CREATE DATABASE test_shop_far');
  roomy.psql(`COMMENT ON DATABASE test_shop_far IS 'wtproxy:m2:${goneWt}|h1'`);
  d = await doctor(tmp, tmp.wt.a, front, { ...roomy.env, WTPROXY_MACHINE: 'm1' });
  assert.equal(d.byName.databases.status, 'ok', 'not this worktree\'s problem');
  assert.ok(d.byName.databases.detail.endsWith(`others': test_shop_b (test, ${tmp.wt.b}), test_shop_far (test, ${goneWt}), ` +
    `test_shop_gone (test, ${goneWt}, gone); note: 1 of them is of worktrees gone from this machine ` +
    '(wtproxy db release --abandoned drops them)'), d.byName.databases.detail);
  roomy.psql('DROP DATABASE test_shop_gone');
  roomy.psql('DROP DATABASE test_shop_far');

  d = await doctor(tmp, tmp.wt.a, front, tight.env);
  assert.equal(d.byName.databases.status, 'problem', d.byName.databases.detail);
  assert.match(d.byName.databases.detail, /of max_connections 12 in use .* left: a test run with parallel workers will be refused/);
  assert.match(d.byName.databases.fix, /^psql -c 'ALTER SYSTEM SET max_connections = 24'/);

  // A server named but down: a problem, at once.
  d = await doctor(tmp, tmp.wt.a, front, { ...roomy.env, PGPORT: String(await freePort()) });
  assert.equal(d.byName.databases.status, 'problem');
  assert.match(d.byName.databases.detail, /cannot be reached: .*Connection refused/);
  assert.ok(d.ms < 20000, `bounded: ${d.ms} ms`);
});

// A server of a stack init does not know, its /__whoami added after it
// started (a Sinatra user's config.ru got its `use` back): doctor's only
// fix was "make the server answer /__whoami", which its code did; the
// restart it needed was on the 502 page alone. It says both now, and the
// restart, pasted, makes the check ok.
test('whoami: a server init knows nothing of, without /__whoami: the fix adds it, or restarts a server whose code has it', async (t) => {
  const tmp = declaring(t, [], ['a']);
  const px = await startDaemon(t, tmp);
  // ./serve: a server doctor reads no stack from (not node, not python)
  const serve = path.join(tmp.wt.a, 'serve');
  const declare = (flag) => fs.writeFileSync(serve, `#!/bin/sh\nexec ${process.execPath} ` +
    `${path.join(repoRoot, 'tests/integration/lib/wt-server.mjs')} "$@"${flag}\n`, { mode: 0o755 });
  declare(' --no-whoami');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ./serve {port}\nfront = ${px.port}\n`);
  assert.equal((await curlFrom(tmp.wt.a, px.port)).status, 502);
  await waitFor(async () => (await lsJson(tmp))[0]?.state === 'ready', 10000, 'the server ready');
  const wrapper = (await lsJson(tmp))[0].pid;
  t.after(() => { try { process.kill(-wrapper, 'SIGKILL'); } catch { /* gone */ } });
  let d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.whoami.status, 'problem', d.byName.whoami.detail);
  assert.match(d.byName.whoami.detail, /answered 404: the whoami middleware is missing or broken/);
  assert.equal(d.byName.whoami.fix, 'make the server answer /__whoami as wtproxy help whoami-protocol says ' +
    `(wtproxy init knows no app here); or, if its code answers /__whoami already (added after it started): wtproxy restart --front ${px.port}`);
  declare('');
  const restarted = await cli(tmp, d.byName.whoami.fix.split(': ').pop().split(' ').slice(1), { cwd: tmp.wt.a });
  assert.equal(restarted.code, 0, restarted.stderr);
  await waitFor(async () => (await lsJson(tmp))[0]?.state === 'ready', 10000, 'restarted');
  assert.equal((await lsJson(tmp))[0].pid, wrapper, 'the same wrapper restarted its server');
  d = await doctor(tmp, tmp.wt.a, px.port);
  assert.equal(d.byName.whoami.status, 'ok', d.byName.whoami.detail);
  sanitizerClean(assert, px.stderr());
});

// Inside a sandbox with its own /tmp (bwrap --tmpfs /tmp) the daemon's
// control socket is not there, while the daemon, outside, holds the front.
// doctor said no daemon answers, and its fix, `kill PID && ...; setsid -f
// wtproxy serve ...`, pasted in the sandbox, stopped the daemon every other
// shell used, and the one it started could not start; `ls`, `why` and
// `run` said only "cannot create FOLDER". Here a shell whose
// WTPROXY_CONTROL, or XDG_RUNTIME_DIR, names a folder that does not exist
// stands for the sandbox: the daemon is named with the socket it listens
// on, and nothing kills it.
test("a daemon on the front whose control socket this shell does not see: named with its socket, never killed", async (t) => {
  const front = await freePort();
  const tmp = declaring(t, ['start = node server.mjs {port}', `front = ${front}`], ['a']);
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`]);
  const gone = path.join(tmp.root, 'no-such-folder');
  const said = new RegExp(`a wtproxy daemon of yours \\(pid ${px.proc.pid}, \\S*wtproxy serve [^)]*\\) holds port ${front}, but it `
    + `listens on the control socket ${tmp.control}, and this shell looks for ${gone}/\\S+ \\((WTPROXY_CONTROL|under XDG_RUNTIME_DIR)\\), which does not exist`);
  const fix = `export WTPROXY_CONTROL=${tmp.control}`;
  const shells = {
    'WTPROXY_CONTROL in a missing folder': { WTPROXY_CONTROL: path.join(gone, 'control.sock') },
    'XDG_RUNTIME_DIR missing': { WTPROXY_CONTROL: '', XDG_RUNTIME_DIR: gone },
  };
  for (const [name, env] of Object.entries(shells)) {
    const c = (await doctor(tmp, tmp.wt.a, null, env)).byName.daemon;
    assert.equal(c.status, 'problem', `${name}: ${c.detail}`);
    assert.match(c.detail, new RegExp(`^${said.source}`), name);
    assert.equal(c.fix, fix, name);
    for (const args of [['ls'], ['why'], ['run', '--', process.execPath, '-e', 'setTimeout(() => {}, 60000)']]) {
      const r = await cli(tmp, args, { cwd: tmp.wt.a, env: { ...env, WTPROXY_NO_AUTOSTART: '' } });
      sanitizerClean(assert, r.stderr);
      assert.notEqual(r.code, 0, `${name}: wtproxy ${args[0]}`);
      assert.match(r.stderr, said, `${name}: wtproxy ${args[0]}`);
      assert.ok(r.stderr.includes(`: ${fix}`), `${name}: wtproxy ${args[0]}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /started the daemon/, `${name}: wtproxy ${args[0]} started no second daemon`);
    }
  }
  assert.ok(pidAlive(px.proc.pid), 'the daemon runs on');
  assert.equal((await doctor(tmp, tmp.wt.a, null)).byName.daemon.status, 'ok', 'its socket, named, reaches it');
});

// The sandbox itself: a mount namespace whose tmpfs hides the socket's
// folder, at the path where the shell looks for it too. And the one case
// where the kill stands: its socket file deleted in this very namespace (a
// tmp cleaner), which no shell reaches any more.
const canUnshare = spawnSync('unshare', ['-m', 'true']).status === 0;
test("inside a mount namespace that hides the daemon's socket folder: bind it in; its socket deleted here: restart it", { skip: !canUnshare && 'unshare -m is not allowed here (not root)' }, async (t) => {
  const front = await freePort();
  const tmp = declaring(t, ['start = node server.mjs {port}', `front = ${front}`], ['a']);
  const run = path.join(tmp.root, 'run');
  fs.mkdirSync(run, { mode: 0o700 });
  tmp.control = path.join(run, 'control.sock');
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`]);
  const sandboxed = (args) => runToExit('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs none "$0" && exec "$@"', run, wtproxyBin, ...args],
    { cwd: tmp.wt.a, env: { ...cliEnv(tmp), ...NO_PG }, ms: 30000 });
  const said = `a wtproxy daemon of yours (pid ${px.proc.pid}, `;
  const hidden = `holds port ${front}, but its control socket ${tmp.control} is not visible from here, where this shell looks for it too (WTPROXY_CONTROL) (a sandbox or container with its own /tmp or XDG_RUNTIME_DIR?)`;
  const fix = `start the sandbox with ${run} bound in at the same path (bwrap --bind ${run} ${run}, docker run -v ${run}:${run})`;
  const d = await sandboxed(['doctor', '--json']);
  sanitizerClean(assert, d.stderr);
  const c = JSON.parse(d.stdout).checks.find((x) => x.name === 'daemon');
  assert.equal(c.status, 'problem', c.detail);
  assert.ok(c.detail.startsWith(said) && c.detail.includes(hidden), c.detail);
  assert.equal(c.fix, fix);
  const ls = await sandboxed(['ls']);
  sanitizerClean(assert, ls.stderr);
  assert.equal(ls.code, 1);
  assert.ok(ls.stderr.includes(hidden) && ls.stderr.includes(`: ${fix}`), ls.stderr);
  assert.ok(pidAlive(px.proc.pid), 'the daemon runs on');

  fs.rmSync(tmp.control);
  const gone = (await doctor(tmp, tmp.wt.a, null)).byName.daemon;
  assert.match(gone.fix, new RegExp(`^kill ${px.proc.pid} && tail --pid=${px.proc.pid} -f /dev/null; `), gone.detail);
});

// The other way round: a daemon that a `wtproxy run` in a sandbox (its own
// tmpfs /tmp) started there, seen from the machine. doctor said "do not
// kill that daemon, the shells outside use it: bind its folder in", but
// this shell is the outside, and no shell here can reach that socket: the
// daemon's kill and a daemon started here are the way out.
test("a daemon started inside a mount namespace with its own /tmp, seen from the machine: stop it and start one here", { skip: !canUnshare && 'unshare -m is not allowed here (not root)' }, async (t) => {
  const front = await freePort();
  const tmp = declaring(t, ['start = node server.mjs {port}', `front = ${front}`], ['a']);
  const run = path.join(tmp.root, 'run');
  fs.mkdirSync(run, { mode: 0o700 });
  tmp.control = path.join(run, 'control.sock');
  const daemon = spawn('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs none "$0" && exec "$@"', run, wtproxyBin,
    'serve', '--control', tmp.control, '--state', tmp.state, '--listen', `127.0.0.1:${front}`],
  { cwd: tmp.root, stdio: 'ignore', env: { ...process.env, ...NO_PG } });
  t.after(() => { try { daemon.kill('SIGKILL'); } catch { /* gone */ } });
  const listening = () => new Promise((res) => {
    const s = net.connect(front, '127.0.0.1', () => { s.destroy(); res(true); });
    s.on('error', () => res(false));
  });
  await waitFor(listening, 10000, 'the sandboxed daemon listens');
  const d = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env: NO_PG });
  const c = JSON.parse(d.stdout).checks.find((x) => x.name === 'daemon');
  assert.equal(c.status, 'problem', c.detail);
  assert.ok(c.detail.includes(`holds port ${front} from inside a sandbox or a container (its files are not this machine's: its control socket ${tmp.control} is on its own /tmp)`), c.detail);
  assert.doesNotMatch(c.detail, /do not kill/);
  assert.match(c.fix, new RegExp(`^kill (\\d+) && tail --pid=\\1 -f /dev/null; setsid -f \\S+ serve --listen ${front}$`), c.fix);
});
