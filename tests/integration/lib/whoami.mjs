// whoami.mjs - helpers for the /__whoami tests (140-149): the test vectors
// of whoami/testvectors/ built as real trees, both fingerprint CLIs (C:
// `wtproxy fingerprint`, Python: `python3 -m wtproxy_whoami fingerprint`),
// optionally as user nobody, and real Python dev servers (Django's
// runserver, wsgiref) loading the wtproxy_whoami middleware from the
// checkout (PYTHONPATH=whoami/python), stopped by pid in t.after().
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, wtproxyBin } from './wtproxy.mjs';
import { runToExit } from './conformance.mjs';
import { httpGet } from './backends.mjs';
import { waitFor } from './registry.mjs';
import { removeQuietly } from './cleanup.mjs';

export const python = '/usr/bin/python3'; // Debian's, with python3-django
export const pythonPath = path.join(repoRoot, 'whoami/python');
export const vectorsDir = path.join(repoRoot, 'whoami/testvectors');
export const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
export const isRoot = process.getuid() === 0;

export function loadVectors() {
  return fs.readdirSync(vectorsDir).filter((f) => f.endsWith('.json')).sort()
    .map((f) => ({ file: f, ...JSON.parse(fs.readFileSync(path.join(vectorsDir, f), 'utf8')) }));
}

// A temp folder (removed in t.after) that every user may traverse, so a
// tree built inside can be fingerprinted as nobody. Returns its realpath.
export function tempDir(t, prefix = 'wtproxy-whoami-') {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  fs.chmodSync(dir, 0o755);
  t.after(() => {
    // folders made unreadable by a vector must be opened again to be removed
    const open = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) { fs.chmodSync(path.join(d, e.name), 0o755); open(path.join(d, e.name)); }
      }
    };
    try { open(dir); } catch { /* best effort */ }
    removeQuietly(t, dir);
  });
  return dir;
}

// Build vector.tree in dir as whoami/PROTOCOL.md section 3 says.
export function buildTree(vector, dir) {
  const modes = [];
  for (const e of vector.tree) {
    const rel = e.path_hex !== undefined ? Buffer.from(e.path_hex, 'hex') : Buffer.from(e.path);
    const full = Buffer.concat([Buffer.from(dir + '/'), rel]);
    const parent = full.subarray(0, full.lastIndexOf(0x2f));
    fs.mkdirSync(parent, { recursive: true, mode: 0o755 });
    if (e.symlink !== undefined) fs.symlinkSync(e.symlink, full);
    else if (e.dir) fs.mkdirSync(full, { recursive: true, mode: 0o755 });
    else {
      fs.writeFileSync(full, e.content_hex !== undefined ? Buffer.from(e.content_hex, 'hex') : e.content);
      fs.chmodSync(full, 0o644);
    }
    if (e.mode !== undefined) modes.push([full, parseInt(e.mode, 8)]);
  }
  const depth = (b) => b.filter((c) => c === 0x2f).length;
  for (const [full, mode] of modes.sort((a, b) => depth(b[0]) - depth(a[0]))) fs.chmodSync(full, mode);
}

export function patternArgs(include, exclude) {
  return ['--no-exclude', ...include.flatMap((p) => ['--include', p]),
    ...exclude.flatMap((p) => ['--exclude', p])];
}

export const nodeCli = path.join(repoRoot, 'whoami/node/cli.mjs');

// Run a fingerprint CLI: impl 'c', 'py' or 'node'; args after
// "fingerprint"; asNobody runs it as user nobody. Resolves { code,
// stdout, stderr }.
export function fingerprintCli(impl, args, { asNobody = false, cwd } = {}) {
  const cmd = impl === 'c' ? [wtproxyBin, 'fingerprint', ...args]
    : impl === 'node' ? [process.execPath, nodeCli, 'fingerprint', ...args]
      : [python, '-m', 'wtproxy_whoami', 'fingerprint', ...args];
  const full = asNobody ? [...NOBODY, ...cmd] : cmd;
  return runToExit(full[0], full.slice(1), { cwd, env: { PYTHONPATH: pythonPath } });
}

// The C CLI's --json of dir under the middleware's default patterns.
export async function diskFingerprint(dir, args = []) {
  const r = await fingerprintCli('c', [dir, '--json', ...args]);
  if (r.code !== 0) throw new Error(`wtproxy fingerprint ${dir} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// A port free right now on 127.0.0.1 (for servers that cannot report the
// one the kernel picks, like Django's runserver).
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// Start a Python server (args to /usr/bin/python3) that listens on port,
// with PYTHONPATH=whoami/python; resolves once GET readyPath answers at
// all. { proc, pid, port, output(), stop() }, stopped by pid in t.after.
export async function startPython(t, args, { cwd, port, env = {}, readyPath = '/__whoami' } = {}) {
  const proc = spawn(python, args, {
    cwd, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1', ...env },
  });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('exit', r));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  };
  t.after(stop);
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`python exited ${proc.exitCode}:\n${out}`);
    return httpGet(port, readyPath).then(() => true, () => false);
  }, 20000, `python server on :${port}\n${out}`);
  return { proc, pid: proc.pid, port, output: () => out, stop };
}

// A minimal Django project in dir: settings (DEBUG from debug), urls with
// one view at /hello/ in app/views.py that returns its GREETING.
export function writeDjangoProject(dir, { debug = true, greeting = 'hello v1' } = {}) {
  const w = (rel, s) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), s);
  };
  w('manage.py', `import os, sys
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'site_cfg.settings')
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
`);
  w('site_cfg/__init__.py', '');
  w('site_cfg/settings.py', `from pathlib import Path
BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = 'test-only'
DEBUG = ${debug ? 'True' : 'False'}
ALLOWED_HOSTS = ['127.0.0.1', 'localhost']
INSTALLED_APPS = []
MIDDLEWARE = ['wtproxy_whoami.django.WhoamiMiddleware', 'django.middleware.common.CommonMiddleware']
ROOT_URLCONF = 'site_cfg.urls'
DATABASES = {}
`);
  w('site_cfg/urls.py', `from django.urls import path
from app import views
urlpatterns = [path('hello/', views.hello)]
`);
  w('app/__init__.py', '');
  w('app/views.py', `from django.http import HttpResponse
GREETING = ${JSON.stringify(greeting)}
def hello(request):
    return HttpResponse(GREETING)
`);
  w('e2e/app.spec.ts', 'test("hello", () => {});\n');
}

// Start `python3 manage.py runserver --noreload 127.0.0.1:PORT` in dir.
export async function startDjango(t, dir, { env = {}, readyPath = '/hello/' } = {}) {
  const port = await freePort();
  const s = await startPython(t, ['manage.py', 'runserver', '--noreload', `127.0.0.1:${port}`],
    { cwd: dir, port, env, readyPath });
  return s;
}

// PATH with, first, a folder whose python3 runs python (a file of sh
// running it: flags '-S' make a python3 that imports nothing installed,
// as a pyenv build first on PATH cannot import Debian's python3-django).
// What init writes depends on the python3 PATH finds.
export function pathWithPython3(t, python, flags = '') {
  const bin = tempDir(t, 'wtproxy-path-');
  fs.writeFileSync(path.join(bin, 'python3'), `#!/bin/sh\nexec ${python} ${flags} "$@"\n`, { mode: 0o755 });
  return `${bin}:${process.env.PATH}`;
}
