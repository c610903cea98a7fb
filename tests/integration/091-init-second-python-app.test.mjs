// 091: `wtproxy init admin` for a second FastAPI app in admin/ of an app
// whose top (app/main.py) runs under uvicorn --reload with
// /usr/bin/python3, adopted first. Seen in a FastAPI adoption walk: init
// wrote `start = cd admin && python3 -m uvicorn main:app ...` and `front =
// 8000`: the python3 on the daemon's PATH (a pyenv build without FastAPI)
// where the top's service names /usr/bin/python3, no --reload where it
// reloads, `cd admin`, under which admin/main.py's `from app.db import
// engine` fails (No module named 'app'), and 8000, the default, often
// another server's. And doctor said ok: its middleware check imported
// wtproxy_whoami only. Now init writes the sibling's interpreter and
// --reload, the module path from the top (admin.main:app, no cd) and the
// front above the declared ones; the daemon starts it from that line and
// serves it; doctor imports the server and the app module as the start
// does, naming the ModuleNotFoundError and the start line that fixes it,
// or the interpreter without uvicorn. Runs Debian's python3-fastapi and
// python3-uvicorn (scripts/bootstrap), from /usr/bin/python3.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { git, makeWorktrees, startDaemon, cli, sanitizerClean, curlFrom, waitFor } from './lib/registry.mjs';
import { python, pythonPath } from './lib/whoami.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const files = {
  'app/__init__.py': '',
  'app/db.py': "engine = 'notes-db'\n",
  'app/main.py': "from fastapi import FastAPI\n\nfrom app.db import engine\n\napp = FastAPI()\n\n\n@app.get('/health')\ndef health():\n    return {'ok': True}\n",
  'admin/main.py': "from fastapi import FastAPI\n\nfrom app.db import engine\n\napp = FastAPI()\n\n\n@app.get('/stats')\ndef stats():\n    return {'admin': True, 'engine': engine}\n",
};

function free(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

// Two free ports in a row: the app's front and the one above it.
async function freePair() {
  for (;;) {
    const p = await new Promise((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    });
    if (p < 65535 && await free(p + 1)) return p;
  }
}

// The app, its Playwright config starting the top's server as the walk's
// did, in a repo of its own (the main checkout).
function fastapiApp(t, front) {
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // a server the daemon started, if still up
  const all = {
    ...files,
    'playwright.config.js': 'module.exports = {\n  use: { baseURL: ' +
      `'http://localhost:${front}' },\n  webServer: {\n    command: 'wtproxy run --front ${front} -- ` +
      `${python} -m uvicorn app.main:app --host 127.0.0.1 --port {port} --reload',\n` +
      `    url: 'http://localhost:${front}/health',\n  },\n};\n`,
  };
  for (const [name, text] of Object.entries(all)) {
    fs.mkdirSync(path.dirname(path.join(tmp.repo, name)), { recursive: true });
    fs.writeFileSync(path.join(tmp.repo, name), text);
  }
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), '__pycache__/\n');
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'the app');
  return tmp;
}

async function wtproxy(tmp, args, env = {}) {
  const r = await cli(tmp, args, { cwd: tmp.repo, env: { PYTHONPATH: pythonPath, ...env }, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  return r;
}

async function middleware(tmp, front) {
  const r = await wtproxy(tmp, ['doctor', '--json', '--front', String(front)]);
  return JSON.parse(r.stdout).checks.find((c) => c.name === 'middleware');
}

test('init admin: the sibling\'s python and --reload, admin.main:app from the top, the front above; the daemon serves it', async (t) => {
  const front = await freePair();
  const tmp = fastapiApp(t, front);
  let r = await wtproxy(tmp, ['init', '--apply']);
  assert.equal(r.code, 0, r.stderr);
  const adminStart = `${python} -m uvicorn admin.main:app --host 127.0.0.1 --port {port} --reload`;

  r = await wtproxy(tmp, ['init', 'admin', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.start, adminStart,
    'the interpreter the top\'s service runs (not python3 from PATH), --reload as it has, the module from the top');
  assert.equal(plan.front, front + 1, 'the front above the declared one, not 8000');
  assert.ok(plan.notes.includes(`front ${front + 1}: the one above the fronts ${tmp.repo}/.wtproxy declares (${front}), as a front routes to one service; the default, 8000, is often another server's (--front N takes another)`), plan.notes.join('\n'));
  assert.ok(plan.notes.includes("start runs from the worktree's top folder as the module admin.main, not `cd admin && ...`: main.py imports the top's packages, which Python finds only from there"), plan.notes.join('\n'));
  assert.ok(plan.notes.includes("start reloads on edits (--reload): ../.wtproxy's start runs uvicorn with reloads"), plan.notes.join('\n'));
  assert.match(plan.changes[0].diff, new RegExp(`\\n\\+\\[service admin\\]\\n\\+start = ${adminStart.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n\\+front = ${front + 1}\\n`), plan.changes[0].diff);

  r = await wtproxy(tmp, ['init', 'admin', '--apply']);
  assert.equal(r.code, 0, r.stderr);
  r = await wtproxy(tmp, ['init', 'admin']);
  assert.match(r.stdout, /declares this server already \(\[service admin\], front \d+\): nothing to add/, r.stdout);
  assert.match(r.stdout, /^nothing to change$/m, 'a second init finds its own section, without a cd');

  // The daemon starts admin from that line, from the top, and it serves.
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`, '--listen', `127.0.0.1:${front + 1}`],
    { env: { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' }, listeners: 2 });
  const stats = await curlFrom(tmp.repo, front + 1, '/stats');
  assert.equal(stats.status, 200, `${stats.body}\n${px.stderr()}`);
  assert.deepEqual(JSON.parse(stats.body), { admin: true, engine: 'notes-db' });
  const m = await middleware(tmp, front + 1);
  assert.equal(m.status, 'ok', m.detail);

  // Its wrap taken out (its reloader serves that): doctor's fix for the
  // server without /__whoami is admin's init, not the top's, whose app
  // has its wrap.
  const adminMain = path.join(tmp.repo, 'admin/main.py');
  fs.writeFileSync(adminMain, files['admin/main.py']);
  let w;
  await waitFor(async () => {
    const r = await wtproxy(tmp, ['doctor', '--json', '--front', String(front + 1)]);
    w = JSON.parse(r.stdout).checks.find((c) => c.name === 'whoami');
    return w.status === 'problem';
  }, 30000, 'doctor seeing the server without /__whoami');
  assert.match(w.detail, /answered 404: the whoami middleware is missing or broken/, w.detail);
  assert.equal(w.fix, 'wtproxy init admin --apply');
  sanitizerClean(assert, px.stderr());
});

test('doctor: a start whose app module cannot import from its folder, or whose python lacks uvicorn, is a problem with its fix', async (t) => {
  const front = await freePair();
  const tmp = fastapiApp(t, front);
  const declare = (admin) => fs.writeFileSync(path.join(tmp.repo, '.wtproxy'),
    `[service api]\nstart = ${python} -m uvicorn app.main:app --host 127.0.0.1 --port {port} --reload\nfront = ${front}\n\n` +
    `[service admin]\nstart = ${admin}\nfront = ${front + 1}\n`);

  // As init wrote it before: cd admin, where `from app.db` fails.
  declare(`cd admin && ${python} -m uvicorn main:app --host 127.0.0.1 --port {port}`);
  let m = await middleware(tmp, front + 1);
  assert.equal(m.status, 'problem', m.detail);
  assert.equal(m.detail, `cd admin && ${python} imports wtproxy_whoami, but not main, the app module its start serves: in ${tmp.repo}/admin, \`import main\` fails with ModuleNotFoundError: No module named 'app': the server the .wtproxy starts would stop at its start`);
  const fixed = `${python} -m uvicorn admin.main:app --host 127.0.0.1 --port {port}`;
  assert.equal(m.fix, `serve it from the worktree's top folder, where Python finds app: in the .wtproxy's [service admin], start = ${fixed}`);
  declare(fixed);
  m = await middleware(tmp, front + 1);
  assert.equal(m.status, 'ok', `the fix, applied: ${m.detail}`);

  // A python without uvicorn (a venv of Debian's, without its packages):
  // named, and Debian's that has it.
  const venv = path.join(tmp.root, 'venv');
  const made = spawnSync(python, ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  declare(`${venv}/bin/python3 -m uvicorn admin.main:app --host 127.0.0.1 --port {port}`);
  m = await middleware(tmp, front + 1);
  assert.equal(m.status, 'problem', m.detail);
  assert.ok(m.detail.startsWith(`${venv}/bin/python3 (the python ${venv}/bin/python3) cannot import uvicorn: the app's Python dependencies are not installed for it`), m.detail);
  assert.equal(m.fix, `in the .wtproxy's start line, run /usr/bin/python3 in place of ${venv}/bin/python3`);
});
