// 078: the Debian package, built from this tree with dpkg-buildpackage,
// installed with apt-get and used through installed paths only
// (/usr/bin/wtproxy, /usr/lib/...; never the build tree): the daemon runs
// under its systemd user unit (or, where no user manager runs, as CI's root
// on a fresh image, the unit's ExecStart line exactly as the unit file
// says it, which the output says); `wtproxy run` serves two worktrees of a
// tiny repository with the installed Python middleware, and a request from
// each reaches its own; the dashboard answers; `man wtproxy` renders;
// Debian's python3 imports wtproxy_whoami; Node imports both exports of
// the installed package folder. A message names a guide, and the
// installed binary prints it: a server without /__whoami gets a 502 whose
// fix names `wtproxy help whoami`, which names the folder Debian's python3
// imports the middleware from; doctor on a bad .wtproxy names `wtproxy help
// wtproxy-file`, the document installed (uncompressed) in
// /usr/share/doc/wtproxy. Then `apt-get remove --purge` leaves nothing of
// what `dpkg -L` listed.
//
// It installs into the machine's /usr, so it runs only as root and only
// when asked: CI=true (.ci/run), WTPROXY_DEB_SMOKE=1 (by hand), or
// WTPROXY_DEB=path/to/wtproxy_VER_amd64.deb (an already built package).
// The build runs in a copy of the tree in a temporary folder, where dpkg
// puts the .deb (the parent of the source), so the checkout stays clean.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const given = process.env.WTPROXY_DEB ? path.resolve(process.env.WTPROXY_DEB) : '';
const asked = process.env.CI === 'true' || process.env.WTPROXY_DEB_SMOKE === '1' || given !== '';
const skip = asked ? false :
  'installs a package into /usr: runs with CI=true, WTPROXY_DEB_SMOKE=1 or WTPROXY_DEB=FILE (as root)';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-078-'));
const started = [];        // process groups this test started, stopped by pid
let installedByUs = false; // purge in after() if a test failed midway
let installedFiles = [];   // dpkg -L wtproxy, after the install
let front = 0;             // the daemon's front port
let viaSystemd = false;
// The CLI and the directly started daemon share these (the unit's
// default control socket, $XDG_RUNTIME_DIR/wtproxy/control.sock).
const isolated = { XDG_RUNTIME_DIR: path.join(tmp, 'run'), XDG_STATE_HOME: path.join(tmp, 'state') };
const cliEnv = () => (viaSystemd ? {} : isolated);

// Run a command to its end within ms; its stdout, or a failed assertion
// that shows what it said.
function run(cmd, args, { ms = 60000, env = {}, cwd = tmp, ok = 0 } = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout: ms,
    maxBuffer: 16 << 20 });
  assert.equal(r.status, ok, `${cmd} ${args.join(' ')} (${r.signal ?? 'exit ' + r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

// Start a long-running process in its own process group; stopped in after().
function startBg(cmd, args, { env = {}, cwd = tmp } = {}) {
  const proc = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, detached: true,
    stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  started.push(proc);
  return { proc, output: () => out };
}

// Poll fn until it returns a truthy value or ms pass (a loaded machine
// gets the time; nothing sleeps a fixed time).
async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// GET url with curl from cwd (wtproxy routes by the caller's worktree);
// { status, body }.
function curl(url, cwd = tmp) {
  const r = spawnSync('curl', ['-s', '--max-time', '10', '-w', '\n%{http_code}', url],
    { cwd, encoding: 'utf8', timeout: 15000 });
  const out = r.stdout ?? '';
  const i = out.lastIndexOf('\n');
  return { status: Number(out.slice(i + 1)) || 0, body: out.slice(0, i) };
}

const purge = () => spawnSync('apt-get', ['remove', '--purge', '-y', '-q', 'wtproxy'],
  { encoding: 'utf8', timeout: 120000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });

before(() => {
  if (skip) return;
  assert.equal(process.getuid(), 0, 'the package smoke test installs into /usr: run it as root');
  assert.notEqual(spawnSync('dpkg-query', ['-W', '-f=${Status}', 'wtproxy'], { encoding: 'utf8' }).stdout,
    'install ok installed',
    'wtproxy is already installed here; the smoke test would replace and purge it: apt-get remove --purge wtproxy first');
  for (const d of Object.values(isolated)) fs.mkdirSync(d, { mode: 0o700 });
}, { timeout: 30000 });

after(() => {
  for (const p of started) {
    try { process.kill(-p.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
  if (viaSystemd) spawnSync('systemctl', ['--user', 'stop', 'wtproxy.socket', 'wtproxy.service']);
  if (installedByUs) purge();
  fs.rmSync(tmp, { recursive: true, force: true });
});

let deb = given;
test('dpkg-buildpackage builds wtproxy_VERSION_amd64.deb from the tree', { skip, timeout: 600000 }, (t) => {
  const version = /version:\s*'([^']+)'/.exec(fs.readFileSync(path.join(repoRoot, 'meson.build'), 'utf8'))[1];
  if (!given) {
    // The tree as git sees it (tracked and new files, not ignored ones:
    // no build folders), in tmp/src; dpkg writes the .deb into tmp.
    const src = path.join(tmp, 'src');
    const files = run('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: repoRoot })
      .split('\0').filter((f) => f && fs.lstatSync(path.join(repoRoot, f), { throwIfNoEntry: false })?.isFile());
    for (const f of files) {
      fs.mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
      fs.copyFileSync(path.join(repoRoot, f), path.join(src, f));
      fs.chmodSync(path.join(src, f), fs.statSync(path.join(repoRoot, f)).mode);
    }
    const t0 = Date.now();
    run('dpkg-buildpackage', ['-us', '-uc', '-b'], { cwd: src, ms: 540000,
      env: { DEB_BUILD_OPTIONS: 'nocheck parallel=2' } });
    t.diagnostic(`the .deb built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    deb = path.join(tmp, `wtproxy_${version}_amd64.deb`);
  }
  assert.ok(fs.existsSync(deb), `${deb} was not built: ${fs.readdirSync(path.dirname(deb))}`);
  assert.equal(run('dpkg-deb', ['-f', deb, 'Version']).trim(), version, 'the package version is meson.build\'s');
});

test('apt-get installs it under /usr, user units not enabled', { skip, timeout: 180000 }, () => {
  installedByUs = true;
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', path.resolve(deb)],
    { ms: 170000, env: { DEBIAN_FRONTEND: 'noninteractive' } });
  installedFiles = run('dpkg', ['-L', 'wtproxy']).split('\n').filter((p) => p.startsWith('/') && p !== '/.');
  for (const p of ['/usr/bin/wtproxy', '/usr/lib/python3/dist-packages/wtproxy_whoami/__init__.py',
    '/usr/lib/node_modules/wtproxy-whoami/package.json', '/usr/lib/systemd/user/wtproxy.service',
    '/usr/lib/systemd/user/wtproxy.socket', '/usr/share/man/man1/wtproxy.1.gz',
    '/usr/share/bash-completion/completions/wtproxy', '/usr/share/zsh/vendor-completions/_wtproxy',
    '/usr/share/doc/wtproxy/conf/WHOAMI.md', '/usr/share/doc/wtproxy/conf/wtproxy-file.example']) {
    assert.ok(installedFiles.includes(p) && fs.existsSync(p), `the package did not install ${p}`);
  }
  // Per user: nothing enables the units for every user at install.
  const wants = fs.existsSync('/etc/systemd/user') ?
    fs.readdirSync('/etc/systemd/user', { recursive: true }).filter((p) => /wtproxy/.test(p)) : [];
  assert.deepEqual(wants, [], 'the package enabled user units for everyone');
  // built from files without git, as from a tarball: the plain version
  assert.match(run('/usr/bin/wtproxy', ['--version']), /^wtproxy \d+\.\d+\.\d+\n$/);
});

// Whether a systemd user manager answers here (a desktop session, a CI
// runner with lingering); in a container as root it usually does not.
function userManager() {
  const r = spawnSync('systemctl', ['--user', 'show-environment'], { encoding: 'utf8', timeout: 10000 });
  return r.status === 0 ? '' : (r.stderr || r.error?.message || `exit ${r.status}`).trim();
}

test('wtproxy serve runs under its user unit (or its ExecStart line)', { skip, timeout: 60000 }, async (t) => {
  const unit = fs.readFileSync('/usr/lib/systemd/user/wtproxy.service', 'utf8');
  const exec = /^ExecStart=(.*)$/m.exec(unit)[1].trim();
  assert.match(exec, /^\/usr\/bin\/wtproxy serve\b/, 'the unit runs the installed binary');
  const why = userManager();
  if (why === '') {
    viaSystemd = true;
    run('systemctl', ['--user', 'daemon-reload']);
    run('systemctl', ['--user', 'start', 'wtproxy.socket']);
    const socket = fs.readFileSync('/usr/lib/systemd/user/wtproxy.socket', 'utf8');
    front = Number(/^ListenStream=127\.0\.0\.1:(\d+)$/m.exec(socket)[1]);
    t.diagnostic('systemd --user runs here: wtproxy.socket started, wtproxy.service on its first connection');
  } else {
    // The unit's command, word for word. Its socket unit would hand it
    // port 8000; here it binds a port the kernel picks (a config file, as
    // `systemctl --user edit` would add), so it never collides.
    const conf = path.join(tmp, 'wtproxy.conf');
    fs.writeFileSync(conf, 'listen = 127.0.0.1:0\n');
    const words = exec.split(/\s+/);
    const daemon = startBg(words[0], words.slice(1), { env: { ...isolated, WTPROXY_CONFIG: conf } });
    front = Number((await until('the daemon listening', () =>
      /listening on 127\.0\.0\.1:(\d+)/.exec(daemon.output())))[1]);
    t.diagnostic(`no systemd --user here (${why}): ran the unit's ExecStart line "${exec}" ` +
      `with WTPROXY_CONFIG listening on 127.0.0.1:${front}`);
  }
  assert.equal(curl(`http://127.0.0.1:${front}/__wtproxy/api/daemon`).status, 200);
});

// Python as a user runs it: no PYTHONPATH (Debian's python3 finds
// wtproxy_whoami in /usr/lib/python3/dist-packages), and writing bytecode
// (as root, into /usr if the package had not compiled it: the purge would
// then leave __pycache__ behind).
const userPython = { PYTHONPATH: undefined, PYTHONDONTWRITEBYTECODE: undefined };

// A tiny app: a WSGI server with the installed middleware.
const appPy = `import os, sys
from wsgiref.simple_server import make_server
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware

def app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [('served from ' + os.path.basename(os.getcwd()) + '\\n').encode()]

make_server('127.0.0.1', int(sys.argv[1]), WhoamiWSGIMiddleware(app)).serve_forever()
`;

test('wtproxy run in two worktrees: a request from each reaches its own server', { skip, timeout: 120000 }, async () => {
  const repo = path.join(tmp, 'shop');
  fs.mkdirSync(repo);
  fs.writeFileSync(path.join(repo, 'app.py'), appPy);
  const git = (args, cwd = repo) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', ...args], { cwd });
  git(['init', '-q', '-b', 'main']);
  git(['add', 'app.py']);
  git(['commit', '-qm', 'app']);
  git(['worktree', 'add', '-q', '-b', 'b', path.join(tmp, 'shop-b')]);
  const trees = [repo, path.join(tmp, 'shop-b')];
  for (const wt of trees) {
    startBg('/usr/bin/wtproxy', ['run', '--front', String(front), '--no-autostart', '--',
      '/usr/bin/python3', 'app.py', '{port}'], { cwd: wt, env: { ...cliEnv(), ...userPython } });
  }
  for (const wt of trees) {
    const want = `served from ${path.basename(wt)}`;
    await until(`${want} through wtproxy`, () => curl(`http://127.0.0.1:${front}/`, wt).body.trim() === want, 60000);
  }
  const ls = JSON.parse(run('/usr/bin/wtproxy', ['ls', '--json'], { env: cliEnv() }));
  assert.equal(ls.length, 2, JSON.stringify(ls));
});

test('the dashboard answers, listing both worktrees', { skip, timeout: 30000 }, () => {
  const page = curl(`http://127.0.0.1:${front}/__wtproxy/`);
  assert.equal(page.status, 200);
  assert.match(page.body, /<html/i);
  const api = curl(`http://127.0.0.1:${front}/__wtproxy/api/backends`);
  assert.equal(api.status, 200);
  assert.deepEqual(JSON.parse(api.body).map((b) => b.name).sort(), ['shop', 'shop-b']);
});

// The guide a message names, as an installed user runs it.
const guide = (text, want) => {
  const m = /wtproxy help ([a-z-]+)/.exec(text);
  assert.ok(m && m[1] === want, `names no wtproxy help ${want}: ${text}`);
  assert.doesNotMatch(text, /\bconf\/|whoami\/python/, 'names a file of the repository');
  return run('/usr/bin/wtproxy', ['help', m[1]]);
};

test("a refusal's fix names a guide the installed wtproxy prints", { skip, timeout: 120000 }, async () => {
  // A Python server without the middleware, in a third worktree.
  const wt = path.join(tmp, 'shop-c');
  run('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', 'worktree', 'add', '-q', '-b', 'c', wt],
    { cwd: path.join(tmp, 'shop') });
  startBg('/usr/bin/wtproxy', ['run', '--front', String(front), '--no-autostart', '--',
    '/usr/bin/python3', '-m', 'http.server', '--bind', '127.0.0.1', '{port}'], { cwd: wt, env: cliEnv() });
  const refused = await until('the 502 no-whoami', () => {
    const r = curl(`http://127.0.0.1:${front}/`, wt);
    return r.status === 502 && r.body;
  }, 60000);
  const where = guide(refused, 'whoami');
  assert.match(where, /^ {2}Python +\/usr\/lib\/python3\/dist-packages\/wtproxy_whoami$/m, where.slice(0, 600));
  assert.match(where, /^ {2}Node +\/usr\/lib\/node_modules\/wtproxy-whoami$/m);

  // A .wtproxy with a typo, read by doctor with the daemon's parser.
  const typo = path.join(tmp, 'typo');
  fs.mkdirSync(typo);
  run('git', ['init', '-q'], { cwd: typo });
  fs.writeFileSync(path.join(typo, '.wtproxy'), 'strat = python3 -m http.server {port}\n');
  const r = spawnSync('/usr/bin/wtproxy', ['doctor', '--json'], { cwd: typo, encoding: 'utf8', timeout: 60000,
    env: { ...process.env, ...cliEnv() } });
  const server = JSON.parse(r.stdout).checks.find((c) => c.name === 'server');
  assert.equal(guide(server.detail, 'wtproxy-file'),
    fs.readFileSync('/usr/share/doc/wtproxy/conf/wtproxy-file.example', 'utf8'));
});

test('man wtproxy renders the installed manual', { skip, timeout: 30000 }, () => {
  const man = run('man', ['wtproxy'], { env: { MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: '100', LC_ALL: 'C' } });
  assert.match(man, /wtproxy-run\(1\)/);
  assert.match(run('man', ['-w', 'wtproxy-run']).trim(), /^\/usr\/share\/man\/man1\/wtproxy-run\.1\.gz$/);
});

test("Debian's python3 imports wtproxy_whoami from /usr/lib/python3/dist-packages", { skip }, () => {
  const out = run('/usr/bin/python3', ['-c', 'import wtproxy_whoami, wtproxy_whoami.wsgi, wtproxy_whoami.asgi; print(wtproxy_whoami.__file__)'],
    { env: userPython });
  assert.equal(out.trim(), '/usr/lib/python3/dist-packages/wtproxy_whoami/__init__.py');
});

test('Node imports the middleware and the Vite plugin from the installed folder', { skip, timeout: 30000 }, () => {
  const app = path.join(tmp, 'node-app');
  fs.mkdirSync(path.join(app, 'node_modules'), { recursive: true });
  fs.symlinkSync('/usr/lib/node_modules/wtproxy-whoami', path.join(app, 'node_modules/wtproxy-whoami'));
  fs.writeFileSync(path.join(app, 'check.mjs'), `
    import http from 'node:http';
    import { whoami } from 'wtproxy-whoami';
    import { wtproxyWhoami } from 'wtproxy-whoami/vite';
    const mw = whoami({ root: process.cwd() });
    const server = http.createServer((req, res) => mw(req, res, () => res.end('app')));
    server.listen(0, '127.0.0.1', async () => {
      const r = await fetch('http://127.0.0.1:' + server.address().port + '/__whoami');
      console.log(JSON.stringify({ plugin: wtproxyWhoami().name, checkout: (await r.json()).checkout }));
      server.close();
    });
  `);
  const out = JSON.parse(run(process.execPath, ['check.mjs'], { cwd: app }));
  assert.deepEqual(out, { plugin: 'wtproxy-whoami', checkout: fs.realpathSync(app) });
});

test('apt-get remove --purge leaves nothing the package installed', { skip, timeout: 180000 }, async () => {
  for (const p of started) {
    try { process.kill(-p.pid, 'SIGTERM'); } catch { /* already gone */ }
  }
  if (viaSystemd) run('systemctl', ['--user', 'stop', 'wtproxy.socket', 'wtproxy.service']);
  const r = purge();
  assert.equal(r.status, 0, `apt-get remove --purge wtproxy:\n${r.stdout}\n${r.stderr}`);
  installedByUs = false;
  assert.equal(spawnSync('dpkg-query', ['-W', '-f=${Status}', 'wtproxy'], { encoding: 'utf8' }).stdout
    .includes('installed'), false, 'dpkg still lists wtproxy');
  // A file or link must be gone; a folder too, unless another package
  // still owns it (/usr/bin, /usr/share/man/man1...). py3compile's
  // __pycache__ would keep wtproxy_whoami/ here: it must be gone too.
  const left = installedFiles.filter((p) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st) return false;
    if (!st.isDirectory()) return true;
    return spawnSync('dpkg-query', ['-S', p]).status !== 0;
  });
  assert.deepEqual(left, [], 'left behind after the purge');
  assert.equal(fs.existsSync('/usr/lib/python3/dist-packages/wtproxy_whoami'), false);
});
