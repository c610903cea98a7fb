// 079: the language packages, built offline from this tree and used from
// what was built, not from the tree. whoami/python builds with Debian's
// python3-build (--no-isolation: no package index) into a wheel and an
// sdist named for PyPI; each is installed into its own fresh virtualenv
// (--system-site-packages, for Debian's Django) and used: the wheel's
// `python -m wtproxy_whoami fingerprint` prints what `wtproxy fingerprint`
// prints, the sdist's Django middleware answers /__whoami in a real
// runserver. whoami/node packs with `npm pack`; the tarball is installed
// offline into a clean folder, where the middleware answers /__whoami in
// an http server, 'wtproxy-whoami/vite' resolves, and the package's bin
// fingerprints as wtproxy does. Every artefact carries meson.build's version.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, wtproxyBin } from './lib/wtproxy.mjs';
import { httpGet } from './lib/backends.mjs';
import { git } from './lib/registry.mjs';
import { writeDjangoProject, diskFingerprint, freePort } from './lib/whoami.mjs';

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-079-')));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const version = /version:\s*'([^']+)'/.exec(fs.readFileSync(path.join(repoRoot, 'meson.build'), 'utf8'))[1];
const dist = path.join(tmp, 'dist');
const wheel = path.join(dist, `wtproxy_whoami-${version}-py3-none-any.whl`);
let sdist = '';
const tgz = path.join(tmp, `wtproxy-whoami-${version}.tgz`);
// Nothing may come from the tree: no PYTHONPATH, no repository cwd.
const clean = { PYTHONPATH: undefined, PYTHONDONTWRITEBYTECODE: '1' };

// Run a command to its end within ms; its stdout, or a failed assertion
// that shows what it said.
function run(cmd, args, { ms = 120000, env = {}, cwd = tmp } = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...clean, ...env }, encoding: 'utf8',
    timeout: ms, maxBuffer: 16 << 20 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (${r.signal ?? 'exit ' + r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

before(() => {
  assert.equal(spawnSync('/usr/bin/python3', ['-c', 'import build, setuptools, venv']).status, 0,
    "Debian's python3-build, python3-setuptools and python3-venv are needed: run scripts/bootstrap");
  // Built from a copy: setuptools writes build/ and *.egg-info next to
  // pyproject.toml.
  fs.cpSync(path.join(repoRoot, 'whoami/python'), path.join(tmp, 'py'), { recursive: true,
    filter: (src) => !/(__pycache__|\/build|\/dist|\.egg-info)$/.test(src) });
  run('/usr/bin/python3', ['-m', 'build', '--no-isolation', '--wheel', '--sdist', '--outdir', dist,
    path.join(tmp, 'py')]);
  sdist = path.join(dist, fs.readdirSync(dist).find((f) => f.endsWith('.tar.gz')) ?? 'none.tar.gz');
  run('npm', ['pack', '--silent', '--pack-destination', tmp], { cwd: path.join(repoRoot, 'whoami/node') });
}, { timeout: 300000 });

// A fresh virtualenv that sees Debian's packages (Django) but not the tree.
function venv(name) {
  const dir = path.join(tmp, name);
  run('/usr/bin/python3', ['-m', 'venv', '--system-site-packages', dir]);
  return path.join(dir, 'bin/python');
}

// The .py files of the package in the tree, as paths inside a dist.
const treeModules = () => fs.readdirSync(path.join(repoRoot, 'whoami/python/wtproxy_whoami'))
  .filter((f) => f.endsWith('.py')).map((f) => `wtproxy_whoami/${f}`).sort();

test('python3 -m build makes a wheel and an sdist named wtproxy-whoami, with every module', () => {
  assert.ok(fs.existsSync(wheel), `no ${path.basename(wheel)} in ${fs.readdirSync(dist)}`);
  assert.match(path.basename(sdist), new RegExp(`^wtproxy[-_]whoami-${version.replace(/\./g, '\\.')}\\.tar\\.gz$`));
  const inWheel = run('/usr/bin/python3', ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', wheel])
    .split('\n').filter((f) => f.startsWith('wtproxy_whoami/')).sort();
  assert.deepEqual(inWheel, treeModules());
  const inSdist = run('tar', ['tzf', sdist]).split('\n').map((f) => f.replace(/^[^/]+\//, ''))
    .filter((f) => /^wtproxy_whoami\/[^/]+\.py$/.test(f)).sort();
  assert.deepEqual(inSdist, treeModules());
  const meta = run('/usr/bin/python3', ['-c', `import sys, zipfile
print(zipfile.ZipFile(sys.argv[1]).read('wtproxy_whoami-${version}.dist-info/METADATA').decode())`, wheel]);
  assert.match(meta, /^Name: wtproxy-whoami$/m);
  assert.match(meta, new RegExp(`^Version: ${version}$`, 'm'));
});

test('the wheel in a fresh venv: python -m wtproxy_whoami fingerprint prints what wtproxy fingerprint prints', () => {
  const py = venv('venv-wheel');
  run(py, ['-m', 'pip', 'install', '--quiet', '--no-index', '--no-deps', wheel]);
  assert.equal(run(py, ['-c', 'import wtproxy_whoami; print(wtproxy_whoami.__file__)']).trim(),
    path.join(tmp, 'venv-wheel/lib', fs.readdirSync(path.join(tmp, 'venv-wheel/lib'))[0],
      'site-packages/wtproxy_whoami/__init__.py'));
  const tree = path.join(tmp, 'tree');
  fs.mkdirSync(path.join(tree, 'pkg/sub'), { recursive: true });
  fs.writeFileSync(path.join(tree, 'manage.py'), 'print("m")\n');
  fs.writeFileSync(path.join(tree, 'pkg/sub/views.py'), 'X = 1\n');
  fs.writeFileSync(path.join(tree, 'pkg/readme.txt'), 'not code\n');
  for (const args of [[tree, '--json'], [tree, '--list'], [tree, '--include', '**/*.txt']]) {
    assert.equal(run(py, ['-m', 'wtproxy_whoami', 'fingerprint', ...args]),
      run(wtproxyBin, ['fingerprint', ...args]), `fingerprint ${args.join(' ')}`);
  }
});

test('the sdist in a fresh venv: its Django middleware answers /__whoami in a real runserver', async (t) => {
  const py = venv('venv-sdist');
  run(py, ['-m', 'pip', 'install', '--quiet', '--no-index', '--no-deps', '--no-build-isolation', sdist]);
  const repo = path.join(tmp, 'shop');
  fs.mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  writeDjangoProject(repo);
  const port = await freePort();
  const proc = spawn(py, ['manage.py', 'runserver', '--noreload', `127.0.0.1:${port}`],
    { cwd: repo, env: { ...process.env, ...clean }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  t.after(() => proc.kill('SIGKILL'));
  let r;
  for (const end = Date.now() + 30000; ; await new Promise((res) => setTimeout(res, 100))) {
    r = await httpGet(port, '/__whoami').catch(() => null);
    if (r || proc.exitCode !== null || Date.now() > end) break;
  }
  assert.ok(r, `runserver did not answer on :${port}:\n${out}`);
  assert.equal(r.status, 200, r.body.toString());
  const who = JSON.parse(r.body);
  assert.equal(who.checkout, repo);
  assert.equal(who.pid, proc.pid);
  assert.deepEqual(who.fingerprint, await diskFingerprint(repo));
  const loaded = run(py, ['-c', 'import wtproxy_whoami.django as d; print(d.__file__)']).trim();
  assert.ok(loaded.startsWith(path.join(tmp, 'venv-sdist') + '/'), `the middleware came from ${loaded}`);
});

test('npm pack: installed offline into a clean folder, both exports and the bin work', () => {
  assert.ok(fs.existsSync(tgz), `npm pack made no ${path.basename(tgz)}: ${fs.readdirSync(tmp)}`);
  const packed = run('tar', ['tzf', tgz]).split('\n').filter(Boolean).sort();
  const mjs = fs.readdirSync(path.join(repoRoot, 'whoami/node')).filter((f) => f.endsWith('.mjs'));
  assert.deepEqual(packed, ['package.json', ...mjs].map((f) => `package/${f}`).sort());
  const app = path.join(tmp, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "private": true, "type": "module" }\n');
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', tgz], { cwd: app });
  assert.equal(JSON.parse(fs.readFileSync(path.join(app, 'node_modules/wtproxy-whoami/package.json'), 'utf8')).version,
    version);
  fs.writeFileSync(path.join(app, 'server.mjs'), 'export const x = 1;\n');
  fs.writeFileSync(path.join(app, 'check.mjs'), `
    import http from 'node:http';
    import { whoami } from 'wtproxy-whoami';
    import { wtproxyWhoami } from 'wtproxy-whoami/vite';
    const mw = whoami({ root: process.cwd() });
    const server = http.createServer((req, res) => mw(req, res, () => res.end('app')));
    server.listen(0, '127.0.0.1', async () => {
      const r = await fetch('http://127.0.0.1:' + server.address().port + '/__whoami');
      const a = await r.json();
      const other = await (await fetch('http://127.0.0.1:' + server.address().port + '/x')).text();
      console.log(JSON.stringify({ resolved: import.meta.resolve('wtproxy-whoami/vite'), plugin: wtproxyWhoami().name,
        checkout: a.checkout, files: a.fingerprint.files, other }));
      server.close();
    });
  `);
  const out = JSON.parse(run(process.execPath, ['check.mjs'], { cwd: app }));
  // server.mjs, check.mjs, and the JSON npm wrote (package.json and its
  // lock: a dependency changed is code changed); node_modules is not code
  assert.deepEqual(out, { resolved: `file://${app}/node_modules/wtproxy-whoami/vite.mjs`, plugin: 'wtproxy-whoami',
    checkout: app, files: 4, other: 'app' });
  assert.equal(run(path.join(app, 'node_modules/.bin/wtproxy-whoami'), ['fingerprint', app, '--json']),
    run(wtproxyBin, ['fingerprint', app, '--json']));
});
