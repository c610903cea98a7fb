// 085: `wtproxy init` adopts wtproxy in a FastAPI app (ASGI, under
// uvicorn) and a Flask app (WSGI, under `flask run`), in a linked git
// worktree: it finds the app module (`app = FastAPI(` in main.py, `app =
// Flask(` in app.py), prints the diff (a .wtproxy whose start runs the
// project's .venv/bin/python, the whoami wrap at the module's end, before
// Flask's `if __name__` block, only under `wtproxy run`, Flask's with its
// templates in the fingerprint) and changes nothing; --apply writes exactly
// that diff; a second run has nothing to change; the module still imports
// where wtproxy_whoami is not installed (the app's tests in CI, production).
// Then the real thing: a
// request from the worktree through the daemon starts the server from the
// .wtproxy, and /__whoami through the daemon names the worktree with the
// fingerprint `wtproxy fingerprint` computes. Runs Debian's python3-fastapi,
// python3-uvicorn and python3-flask (scripts/bootstrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { git, makeWorktrees, startDaemon, cli, lsJson, sanitizerClean, curlFrom, waitFor } from './lib/registry.mjs';
import { python, pythonPath, diskFingerprint, patternArgs, pathWithPython3 } from './lib/whoami.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const fastapiMain = `from fastapi import FastAPI

app = FastAPI()


@app.get('/hello')
def hello():
    return {'greeting': 'hello from fastapi'}
`;

const flaskApp = `from flask import Flask
app = Flask(__name__)


@app.route('/hello')
def hello():
    return {'greeting': 'hello from flask'}


if __name__ == '__main__':
    app.run(debug=True)
`;

const WHY = '# wtproxy: answers /__whoami so wtproxy routes only to a server of this checkout\'s current code; wraps the finished app here, at import - do not remove or move into add_middleware';
// Only under wtproxy run: the app's tests, CI and production import nothing of wtproxy.
const GUARD = 'import os  # noqa: E402\n\nif os.environ.get("WTPROXY_PORT"):  # set by wtproxy run; tests, CI and production skip this';
const ASGI = `${WHY}\n${GUARD}\n    from wtproxy_whoami.asgi import WhoamiASGIMiddleware\n    app = WhoamiASGIMiddleware(app)\n`;
// Flask's with its templates and .env files: flask run keeps each template
// it rendered and the .env, .flaskenv it loaded at start.
const WSGI = `${WHY}\n${GUARD}\n    from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware\n` +
  '    # templates and .env files too: flask run keeps a template it rendered and the .env, .flaskenv it loaded, so an edited one must make this server stale\n' +
  '    app.wsgi_app = WhoamiWSGIMiddleware(app.wsgi_app, include=["**/*.py", "**/.env", "**/.env.*", "**/.flaskenv", "**/templates/**"])\n';

const cases = {
  fastapi: {
    files: { 'main.py': fastapiMain },
    module: 'main.py',
    start: '.venv/bin/python -m uvicorn main:app --host 127.0.0.1 --port {port}',
    added: `\n${ASGI}`,
    applied: (text) => `${text}\n${ASGI}`,
    reload: /^note: start runs without --reload, as none of Makefile, Procfile, justfile, package\.json or the Playwright config runs uvicorn with it/m,
  },
  flask: {
    // The project's own script runs flask with its reloader (--debug).
    files: { 'app.py': flaskApp, Makefile: 'dev:\n\tflask --app app run --debug\n' },
    module: 'app.py',
    // Its --debug (debug mode: error pages, templates reloaded) is kept:
    // init dropped it without a word.
    start: '.venv/bin/python -m flask --app app --debug run --host 127.0.0.1 --port {port} --reload',
    kept: /^note: start keeps the flags Makefile gives flask: --debug \(not its --host and --port: wtproxy gives each server its own\)$/m,
    added: `${WSGI}\n`,
    applied: (text) => text.replace("\nif __name__", `\n${WSGI}\nif __name__`),
    reload: /^note: start reloads on edits \(--reload\): Makefile runs flask with reloads$/m,
  },
};

// The module imported by python in wt as where wtproxy_whoami is not
// installed: {code, stderr}.
function importWithout(wt, module) {
  const code = `import sys; sys.modules['wtproxy_whoami'] = None; import ${module.replace(/\.py$/, '').replace('/', '.')}`;
  try {
    execFileSync(python, ['-c', code], { cwd: wt, env: { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1' }, stdio: 'pipe' });
    return { code: 0, stderr: '' };
  } catch (e) {
    return { code: e.status, stderr: String(e.stderr) };
  }
}

// A repo whose main branch holds the app, and its linked worktree wt-a
// with a .venv/bin/python (Debian's, which has the framework; the
// python3 on PATH may not), untracked as projects keep their venv.
function appWorktree(t, files) {
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // the server the daemon started, if still up
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(tmp.repo, name)), { recursive: true });
    fs.writeFileSync(path.join(tmp.repo, name), text);
  }
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), '__pycache__/\n.venv/\n');
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'the app');
  tmp.wt.a = path.join(tmp.root, 'wt-a');
  git(tmp.repo, 'worktree', 'add', '-q', tmp.wt.a, '-b', 'a');
  fs.mkdirSync(path.join(tmp.wt.a, '.venv/bin'), { recursive: true });
  fs.symlinkSync(python, path.join(tmp.wt.a, '.venv/bin/python'));
  return tmp;
}

// Every file of dir but .git and .venv, with its text.
function snapshot(dir) {
  const out = {};
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const p = path.join(e.parentPath ?? e.path, e.name);
    const rel = path.relative(dir, p);
    if (e.isFile() && !/^(\.git|\.venv)(\/|$)/.test(rel)) out[rel] = fs.readFileSync(p, 'utf8');
  }
  return out;
}

for (const [kind, c] of Object.entries(cases)) {
  test(`${kind}: init prints the diff, --apply writes it, again nothing; the daemon starts the server from the .wtproxy and /__whoami verifies it`, async (t) => {
    const tmp = appWorktree(t, c.files);
    const wt = tmp.wt.a;
    const px = await startDaemon(t, tmp, [], { env: { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' } });
    const init = async (args) => {
      const r = await cli(tmp, ['init', '--front', String(px.port), ...args], { cwd: wt });
      sanitizerClean(assert, r.stderr);
      return r;
    };
    const before = snapshot(wt);

    // The plan: printed, nothing written.
    let r = await init(['--json']);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout);
    assert.equal(plan.app, kind);
    assert.equal(plan.module, c.module);
    assert.equal(plan.start, c.start);
    assert.deepEqual(plan.changes.map((x) => [x.path, x.kind]), [['.wtproxy', 'new'], [c.module, 'edit']]);
    assert.ok(c.added.split('\n').every((l) => plan.changes[1].diff.includes(`\n+${l}\n`)),
      `the wrap, with its comment, in the diff:\n${plan.changes[1].diff}`);
    assert.deepEqual(snapshot(wt), before, 'without --apply nothing is written');
    r = await init([]);
    assert.match(r.stdout, new RegExp(`^wtproxy init: ${wt}: ${kind} app \\(module ${c.module.replace('.', '\\.')}\\), front port ${px.port}$`, 'm'));
    assert.match(r.stdout, c.reload);
    if (c.kept) assert.match(r.stdout, c.kept);
    else assert.doesNotMatch(r.stdout, /start keeps the flags/);
    assert.match(r.stdout, /^note: this is a linked worktree: the \.wtproxy serves it now; commit it/m);
    assert.doesNotMatch(r.stdout, /runs python3 from the daemon's PATH/, 'the project\'s .venv/bin/python');

    // --apply writes exactly the printed diff: the same tree as the diff
    // applied by patch(1) to a copy.
    const copy = path.join(tmp.root, 'copy');
    fs.cpSync(wt, copy, { recursive: true, filter: (p) => !/\/(\.git|\.venv)$/.test(p) });
    execFileSync('patch', ['-s', '-p1', '-d', copy], { input: plan.changes.map((x) => x.diff).join('') });
    r = await init(['--apply']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^wrote \\.wtproxy\\nwrote ${c.module.replace('.', '\\.')}$`, 'm'));
    const applied = snapshot(wt);
    assert.deepEqual(applied, snapshot(copy));
    assert.equal(applied[c.module], c.applied(before[c.module]), 'the module gained the wrap and nothing else');
    assert.equal(applied['.wtproxy'].split('\n').slice(1).join('\n'), `start = ${c.start}\nfront = ${px.port}\n`);
    r = await init(['--apply']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^nothing to change$/m);
    assert.deepEqual(snapshot(wt), applied, 'a second --apply changes nothing');
    assert.deepEqual(importWithout(wt, c.module), { code: 0, stderr: '' },
      'the app imports where wtproxy_whoami is not installed: its tests in CI, production');

    // The first request from the worktree starts its server from the
    // .wtproxy; /__whoami, through the daemon, answers for this checkout
    // and the code on disk.
    const hello = await curlFrom(wt, px.port, '/hello');
    assert.equal(hello.status, 200, `${hello.body}\n${px.stderr()}`);
    assert.equal(JSON.parse(hello.body).greeting, `hello from ${kind}`);
    assert.match(px.stderr(), /started .*wt-a's server from its \.wtproxy/);
    const who = await curlFrom(wt, px.port, '/__whoami');
    assert.equal(who.status, 200, who.body);
    const answer = JSON.parse(who.body);
    assert.equal(answer.checkout, wt);
    assert.deepEqual(answer.fingerprint, await diskFingerprint(wt, patternArgs(answer.fingerprint.include, answer.fingerprint.exclude)),
      'the fingerprint `wtproxy fingerprint` computes with the declared patterns');
    const cmdline = fs.readFileSync(`/proc/${answer.pid}/cmdline`, 'utf8').split('\0');
    assert.deepEqual(cmdline.slice(1, 3), ['-m', kind === 'flask' ? 'flask' : 'uvicorn'], 'the pid is the server\'s');
    const [entry] = await lsJson(tmp);
    assert.equal(entry.worktree, wt);
    assert.equal(entry.whoami?.state, 'verified', JSON.stringify(entry.whoami));
    if (kind === 'flask') assert.match(fs.readFileSync(entry.log, 'utf8'), /Debug mode: on/, 'served in debug mode, as its Makefile runs it');
    sanitizerClean(assert, px.stderr());
  });
}

test('flask: a template or .env edited after the server read it is served new, never the old one verified', async (t) => {
  const tmp = appWorktree(t, {
    // GREETING from .env, read once at start, as flask run's python-dotenv does
    'app.py': "from flask import Flask, render_template\napp = Flask(__name__)\n" +
      "GREETING = open('.env').read().split('=', 1)[1].strip()\n\n\n@app.route('/page')\ndef page():\n" +
      "    return render_template('page.html')\n\n\n@app.route('/greeting')\ndef greeting():\n    return GREETING\n",
    'templates/page.html': '<title>one</title>\n',
    '.env': 'GREETING=one\n',
  });
  const wt = tmp.wt.a;
  const px = await startDaemon(t, tmp, [], { env: { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' } });
  const r = await cli(tmp, ['init', '--apply', '--front', String(px.port)], { cwd: wt });
  assert.equal(r.code, 0, r.stderr);
  const page = async () => (await curlFrom(wt, px.port, '/page')).body;
  assert.equal(await page(), '<title>one</title>', px.stderr());
  // Flask without --debug keeps the template it rendered: only a restart
  // serves the edit, and wtproxy must see that the server is stale.
  fs.writeFileSync(path.join(wt, 'templates/page.html'), '<title>two</title>\n');
  await waitFor(async () => (await sleep(200), await page()) === '<title>two</title>', 20000,
    'the edited template served (it stayed "one", its server verified as the code on disk)');
  const greeting = async () => (await curlFrom(wt, px.port, '/greeting')).body;
  assert.equal(await greeting(), 'one');
  fs.writeFileSync(path.join(wt, '.env'), 'GREETING=two\n');
  await waitFor(async () => (await sleep(200), await greeting()) === 'two', 20000,
    'the edited .env\'s setting served (it stayed "one", its server verified as the code on disk)');
  const [entry] = await lsJson(tmp);
  assert.equal(entry.whoami?.state, 'verified', JSON.stringify(entry.whoami));
  sanitizerClean(assert, px.stderr());
});

// The python3 first on PATH (pyenv's, here and on CI machines) cannot
// import Debian's python3-django: init wrote `python3 manage.py
// runserver`, whose server stopped at its first import, and then doctor
// said to write /usr/bin/python3. init now picks /usr/bin/python3 when it
// alone imports the framework, and says why; a python3 that imports it
// stays python3.
test('init: a python3 first on PATH that cannot import the framework gives /usr/bin/python3 and a note; one that can stays python3', async (t) => {
  const tmp = makeWorktrees(t, []);
  execFileSync('/usr/bin/python3', ['-m', 'django', 'startproject', 'shop', '.'], { cwd: tmp.repo });
  const lacking = pathWithPython3(t, '/usr/bin/python3', '-S');
  let r = await cli(tmp, ['init', '--json'], { cwd: tmp.repo, env: { PATH: lacking } });
  assert.equal(r.code, 0, r.stderr);
  let plan = JSON.parse(r.stdout);
  assert.equal(plan.start, '/usr/bin/python3 manage.py runserver 127.0.0.1:{port}');
  assert.ok(plan.notes.includes('start runs /usr/bin/python3: the python3 first on PATH cannot import django (on Debian, python3-django is importable from /usr/bin/python3 only); keep the path'), plan.notes.join('\n'));
  assert.ok(!plan.notes.some((n) => /runs python3 from the daemon's PATH/.test(n)), plan.notes.join('\n'));

  r = await cli(tmp, ['init', '--json'], { cwd: tmp.repo, env: { PATH: pathWithPython3(t, '/usr/bin/python3') } });
  plan = JSON.parse(r.stdout);
  assert.equal(plan.start, 'python3 manage.py runserver 127.0.0.1:{port}');
  assert.ok(!plan.notes.some((n) => /start runs \/usr\/bin\/python3/.test(n)), plan.notes.join('\n'));

  // FastAPI: the same for uvicorn.
  fs.rmSync(path.join(tmp.repo, 'manage.py'));
  fs.writeFileSync(path.join(tmp.repo, 'main.py'), fastapiMain);
  r = await cli(tmp, ['init', '--json'], { cwd: tmp.repo, env: { PATH: lacking } });
  plan = JSON.parse(r.stdout);
  assert.equal(plan.start, '/usr/bin/python3 -m uvicorn main:app --host 127.0.0.1 --port {port}');
  assert.ok(plan.notes.some((n) => /^start runs \/usr\/bin\/python3: the python3 first on PATH cannot import uvicorn/.test(n)), plan.notes.join('\n'));
});

test('init refuses a Python app it cannot find, naming the rule; a module it cannot edit safely gets a note', async (t) => {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, 'app.py'), 'from flask import Flask\n\ndef create_app():\n    return Flask(__name__)\n');
  let r = await cli(tmp, ['init'], { cwd: tmp.repo });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown app layout: .* holds neither manage\.py \(Django\), package\.json \(Node: .*\), main\.py, app\.py or app\/main\.py assigning at its top level `app = FastAPI\(`, `app = Starlette\(` or `app = Flask\(`, nor a config\.ru \(Rack: Sinatra, Rails\.\.\.\)\. Nothing was changed\./);
  // Routes after the `if __name__` block would meet the wrapper: a note.
  const text = "from starlette.applications import Starlette\napp = Starlette()\nif __name__ == '__main__':\n    pass\napp.add_route('/x', None)\n";
  fs.writeFileSync(path.join(tmp.repo, 'main.py'), text);
  r = await cli(tmp, ['init', '--apply'], { cwd: tmp.repo, env: { PATH: pathWithPython3(t, '/usr/bin/python3') } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wtproxy init: .*: starlette app \(module main\.py\)/m);
  assert.match(r.stdout, /^note: main\.py: its top level goes on after `if __name__ \.\.\.:` .* left alone; add after the last line that uses app, by hand: from wtproxy_whoami\.asgi import WhoamiASGIMiddleware; app = WhoamiASGIMiddleware\(app\)$/m);
  assert.match(r.stdout, /^note: start runs python3 from the daemon's PATH .*: if Starlette is installed elsewhere/m);
  assert.equal(fs.readFileSync(path.join(tmp.repo, 'main.py'), 'utf8'), text, 'left as it was');
  assert.match(fs.readFileSync(path.join(tmp.repo, '.wtproxy'), 'utf8'), /^start = python3 -m uvicorn main:app --host 127\.0\.0\.1 --port \{port\}$/m);
});

test('a FastAPI app with a package.json for its e2e tests only: the Playwright config names the interpreter and --reload; recipe url', async (t) => {
  const tmp = makeWorktrees(t, []);
  const w = (name, text) => fs.writeFileSync(path.join(tmp.repo, name), text);
  w('main.py', fastapiMain);
  w('package.json', JSON.stringify({ name: 'e2e', devDependencies: { '@playwright/test': '1' } }));
  w('playwright.config.ts', "export default {\n  webServer: {\n    command: '/usr/bin/python3 -m uvicorn main:app --reload --port 8000',\n" +
    "    url: 'http://localhost:8000/hello',\n  },\n  use: { baseURL: 'http://localhost:8000' },\n};\n");
  const r = await cli(tmp, ['init', '--json'], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.app, 'fastapi', 'not refused for a package.json without a Node server');
  assert.equal(plan.start, '/usr/bin/python3 -m uvicorn main:app --host 127.0.0.1 --port {port} --reload');
  assert.ok(plan.notes.includes('start reloads on edits (--reload): playwright.config.ts runs uvicorn with reloads'), plan.notes.join('\n'));
  assert.deepEqual(plan.changes.map((x) => x.path), ['.wtproxy', 'main.py', 'playwright.config.ts']);
  assert.match(plan.changes[2].diff, /^\+    command: 'wtproxy run -- \/usr\/bin\/python3 -m uvicorn main:app --host 127\.0\.0\.1 --port \{port\} --reload',$/m);
});

// An app.py that imports os at its top gained a second `import os  #
// noqa: E402` above the guard: the wrap now uses the module's own.
test('init on a module that imports os already adds no second import os', async (t) => {
  const tmp = makeWorktrees(t, []);
  const text = "import os\nfrom flask import Flask\n\napp = Flask(__name__)\napp.secret_key = os.environ.get('KEY', 'x')\n";
  fs.writeFileSync(path.join(tmp.repo, 'app.py'), text);
  const r = await cli(tmp, ['init', '--apply'], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  const after = fs.readFileSync(path.join(tmp.repo, 'app.py'), 'utf8');
  assert.ok(after.startsWith(text), after);
  assert.equal(after.match(/^import os\b/gm).length, 1, after);
  assert.ok(after.includes(`${WHY}\nif os.environ.get("WTPROXY_PORT"):`), after);
  assert.deepEqual(importWithout(tmp.repo, 'app.py'), { code: 0, stderr: '' }, 'it still imports');
});
