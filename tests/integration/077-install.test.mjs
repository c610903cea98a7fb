// 077: `meson install` installs everything a user runs, where their tools
// look for it. A separate small build of this source tree (no sanitizers,
// only the installed targets) is installed with DESTDIR under
// --prefix=/usr/local, as a package build would, then reconfigured and
// installed into ~/.local (HOME a temporary folder), as the README says.
// Asserted: the installed binary runs; every command of `help --list` has
// a manual that says what `wtproxy help CMD` says; Debian's python3
// searches the folder the Python package went to and imports it; Node
// imports the middleware and the Vite plugin by package name; bash
// completes commands, flags and the worktrees of the current repository;
// the systemd unit runs the installed binary; a ~/.local install is found
// by systemd, python3 and man with no setting. A message names a guide
// (`wtproxy help TOPIC`), never a file of the repository: the installed
// binary prints each guide, which is the document installed to the doc
// folder; `wtproxy doctor` on a bad .wtproxy names one and it prints the
// format; `wtproxy help whoami` names the folders the middleware went to,
// the one /usr/bin/python3 imports it from.
// Installed into a private prefix, which /usr/bin/python3 does not search,
// the guide and doctor say it cannot import the middleware, and the link
// each prints, pasted, makes it import it.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './lib/wtproxy.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-077-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const build = path.join(tmp, 'build');
const dest = path.join(tmp, 'dest');
const root = path.join(dest, 'usr/local'); // what /usr/local holds after the install
const home = path.join(tmp, 'home');       // HOME for the ~/.local install
const bin = path.join(root, 'bin/wtproxy');

// Run a command to its end within ms; its output, or a failed assertion
// that shows what it said.
function run(cmd, args, { ms = 30000, env = {}, cwd = tmp } = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout: ms,
    maxBuffer: 16 << 20 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (${r.signal ?? 'exit ' + r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

// Only the targets that are installed: the unit tests and benchmarks of a
// full build would double the time. env reaches the regeneration after a
// meson configure, which the compile runs.
function install(env = {}) {
  run('meson', ['compile', '-C', build, 'wtproxy', 'completions', 'manpages'], { env, ms: 300000 });
  run('meson', ['install', '-C', build, '--no-rebuild', '--quiet'], { env, ms: 60000 });
}

// The build folder is an older version's, upgraded in place as a user
// upgrades (git pull, then meson install -C build): b72a000 generated
// cli/wtp_paths.h, which a build folder keeps after the header moved, and
// the upgrade failed to compile ("'WTP_DOC_DIR' undeclared" in
// cli/topics.c) until the folder was wiped. The source is a clone of this
// repository moved from that version to the tree under test (its
// uncommitted files too).
const OLDER = 'b72a000';
const src = path.join(tmp, 'src');

function upgradedSource() {
  const head = run('git', ['-C', repoRoot, 'rev-parse', 'HEAD']).trim();
  run('git', ['clone', '-q', '--shared', '--no-checkout', repoRoot, src]);
  // a shallow clone lacks the older version: then the folder is this one's
  const older = spawnSync('git', ['-C', src, 'cat-file', '-e', `${OLDER}^{commit}`]).status === 0;
  if (!older) console.log(`# ${OLDER} is not in this clone (shallow?): a new build folder, not an upgraded one`);
  run('git', ['-C', src, 'checkout', '-q', older ? OLDER : head]);
  run('meson', ['setup', build, src, '--prefix=/usr/local', '-Dbuildtype=plain',
    '-Db_sanitize=none', '-Dwerror=true'], { ms: 120000 });
  run('git', ['-C', src, 'checkout', '-q', '--detach', head]);
  const files = run('git', ['-C', repoRoot, 'ls-files', '-co', '--exclude-standard', '-z']).split('\0');
  for (const f of files.filter((f) => f && fs.existsSync(path.join(repoRoot, f))))
    fs.cpSync(path.join(repoRoot, f), path.join(src, f), { verbatimSymlinks: true });
}

before(() => {
  assert.equal(spawnSync('sh', ['-c', 'command -v scdoc && command -v man']).status, 0,
    'scdoc and man are needed for the manuals: run scripts/bootstrap');
  upgradedSource();
  install({ DESTDIR: dest });
}, { timeout: 600000 });

const commands = () => run(bin, ['help', '--list']).trim().split('\n');

// Built from a git checkout: the version, then its build (the commit, and
// a mark when the tree had uncommitted changes), which tells this binary
// from one of other sources after an upgrade.
test('the installed binary runs: --version', () => {
  assert.match(run(bin, ['--version']), /^wtproxy \d+\.\d+\.\d+\+[0-9a-f]{12}(\.dirty\.[0-9a-f]{6})?\n$/);
});

// Text as a reader sees it: man reflows prose and breaks lines after a
// hyphen; the help's own line breaks do not matter either.
const words = (s) => s.replace(/-\n\s*/g, '-').replace(/\s+/g, ' ').trim();

function manText(page) {
  assert.ok(fs.existsSync(page), `${page} is not installed (is scdoc installed? scripts/bootstrap)`);
  return run('man', ['-l', page], { env: { LC_ALL: 'C', MANWIDTH: '200', MANROFFOPT: '-rHY=0', MAN_KEEP_FORMATTING: '' } });
}

// Every paragraph of the help is in the page, word for word; one headed
// "exit status:" or "commands:" is under the section of that name.
function assertSays(page, help) {
  const man = words(manText(page));
  for (const para of help.split('\n\n')) {
    const heading = /^([a-z ]+):\n/.exec(para);
    const text = words(heading ? para.slice(heading[0].length) : para);
    const want = heading ? `${heading[1].toUpperCase()} ${text}` : text;
    assert.ok(man.includes(want), `${path.basename(page)} lacks:\n${para}\n--- it says:\n${man}`);
  }
}

test('every command has a manual that says what wtproxy help CMD says', () => {
  const man1 = path.join(root, 'share/man/man1');
  const names = commands();
  assert.ok(names.length >= 12, names.join(' '));
  for (const n of names) {
    const help = run(bin, ['help', n]);
    const usage = help.split('\n')[0];
    assert.match(usage, new RegExp(`^usage: wtproxy ${n}\\b`));
    assert.ok(manText(path.join(man1, `wtproxy-${n}.1`)).split('\n').some((l) => l.trim() === usage),
      `man wtproxy-${n} lacks the usage line ${usage}`);
    assertSays(path.join(man1, `wtproxy-${n}.1`), help);
  }
  assertSays(path.join(man1, 'wtproxy.1'), run(bin, ['--help']));
  const main = words(manText(path.join(man1, 'wtproxy.1')));
  for (const n of names) assert.ok(main.includes(`wtproxy-${n}(1)`), `wtproxy(1) does not point at wtproxy-${n}(1)`);
});

test("Debian's python3 imports wtproxy_whoami from the prefix it searches", () => {
  const python = '/usr/bin/python3';
  const sysPath = JSON.parse(run(python, ['-c', 'import json, sys; print(json.dumps(sys.path))']));
  const site = fs.readdirSync(path.join(root, 'lib'), { recursive: true })
    .filter((p) => p.endsWith(`${path.sep}wtproxy_whoami${path.sep}__init__.py`));
  assert.equal(site.length, 1, `wtproxy_whoami installed ${site.length} times under ${root}/lib: ${site}`);
  const dir = path.join(root, 'lib', path.dirname(path.dirname(site[0])));
  const installed = dir.slice(dest.length); // the folder once installed without DESTDIR
  assert.ok(sysPath.includes(installed), `${python} does not search ${installed}: ${sysPath}`);
  // And for /usr, where a Debian package installs it.
  const usr = run(python, [path.join(repoRoot, 'whoami/python_site.py'), '/usr']).trim();
  assert.ok(sysPath.includes(path.join('/usr', usr)), `${python} does not search /usr/${usr}: ${sysPath}`);
  const out = run(python, ['-c', 'import wtproxy_whoami, wtproxy_whoami.django, wtproxy_whoami.asgi; print(wtproxy_whoami.__file__)'],
    { env: { PYTHONPATH: dir } });
  assert.equal(out.trim(), path.join(dir, 'wtproxy_whoami/__init__.py'));
});

test('Node imports the middleware and the Vite plugin by package name', async () => {
  const app = path.join(tmp, 'app');
  fs.mkdirSync(path.join(app, 'node_modules'), { recursive: true });
  fs.symlinkSync(path.join(root, 'lib/node_modules/wtproxy-whoami'), path.join(app, 'node_modules/wtproxy-whoami'));
  fs.writeFileSync(path.join(app, 'server.js'), 'export const x = 1;\n');
  fs.writeFileSync(path.join(app, 'check.mjs'), `
    import http from 'node:http';
    import { whoami } from 'wtproxy-whoami';
    import { wtproxyWhoami } from 'wtproxy-whoami/vite';
    const plugin = wtproxyWhoami();
    const mw = whoami({ root: process.cwd() });
    const server = http.createServer((req, res) => mw(req, res, () => res.end('app')));
    server.listen(0, '127.0.0.1', async () => {
      const r = await fetch('http://127.0.0.1:' + server.address().port + '/__whoami');
      const a = await r.json();
      console.log(JSON.stringify({ plugin: plugin.name, checkout: a.checkout, files: a.fingerprint.files }));
      server.close();
    });
  `);
  const out = JSON.parse(run(process.execPath, ['check.mjs'], { cwd: app }));
  assert.deepEqual(out, { plugin: 'wtproxy-whoami', checkout: fs.realpathSync(app), files: 2 });
});

// What bash completion offers for the words typed (the last one being
// completed), run in cwd.
function complete(typed, cwd = tmp) {
  const script = `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
    _wtproxy 2>/dev/null; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const out = run('bash', ['--norc', '--noprofile', '-c', script, 'bash',
    path.join(root, 'share/bash-completion/completions/wtproxy'), 'wtproxy', ...typed], { cwd });
  return out.split('\n').filter(Boolean).sort();
}

test('bash completes commands and each command\'s flags from the table', () => {
  assert.deepEqual(complete(['re']), ['refusals', 'register', 'release', 'restart']);
  assert.deepEqual(complete(['run', '--re']), ['--restart-on-stale']);
  assert.deepEqual(complete(['refusals', '--a']), ['--all']);
  assert.deepEqual(complete(['db', '']).filter((w) => !w.startsWith('-')), ['claim', 'copy', 'ls', 'names', 'release', 'template']);
  assert.deepEqual(complete(['help', 'unr']), ['unregister']);
  assert.deepEqual(complete(['help', 'wtproxy-f']), ['wtproxy-file'], 'the guides');
  for (const n of commands()) assert.deepEqual(complete([n.slice(0, -1)]).includes(n), true, n);
});

test('bash completes --worktree with the worktrees of the current repository', () => {
  const repo = path.join(tmp, 'repo');
  const git = (...a) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...a], { cwd: repo });
  fs.mkdirSync(repo);
  git('init', '-q');
  git('commit', '-q', '--allow-empty', '-m', 'first');
  git('worktree', 'add', '-q', path.join(tmp, 'repo-wt-b'));
  const trees = [fs.realpathSync(repo), fs.realpathSync(path.join(tmp, 'repo-wt-b'))].sort();
  assert.deepEqual(complete(['run', '--worktree', ''], repo), trees);
  assert.deepEqual(complete(['claim', 'emu', '--worktree', ''], path.join(tmp, 'repo-wt-b')), trees);
  assert.deepEqual(complete(['unregister', '--worktree', 'repo-wt'], repo), [trees[1]]);
  assert.deepEqual(complete(['run', '--worktree', '=', ''], repo), trees, '--worktree=');
  assert.deepEqual(complete(['run', '--worktree', ''], tmp), [], 'outside a repository: none');
});

const doc = path.join(root, 'share/doc/wtproxy');

// The installed documents: { path under the doc folder: text }.
function installedDocs() {
  const out = {};
  for (const p of fs.readdirSync(doc, { recursive: true })) {
    const full = path.join(doc, p);
    if (fs.statSync(full).isFile()) out[p] = fs.readFileSync(full, 'utf8');
  }
  return out;
}

test('every guide the installed binary prints is a document installed to the doc folder', () => {
  const docs = installedDocs();
  for (const p of ['conf/wtproxy-file.example', 'conf/wtproxy.conf', 'conf/WHOAMI.md', 'conf/MCP.md',
    'whoami/PROTOCOL.md', 'README.md']) {
    assert.equal(docs[p], fs.readFileSync(path.join(repoRoot, p), 'utf8'), `${doc}/${p}`);
  }
  const topics = run(bin, ['help', '--topics']).trim().split('\n');
  for (const t of ['wtproxy-file', 'config', 'whoami', 'mcp-setup']) assert.ok(topics.includes(t), `no guide ${t}: ${topics}`);
  const overview = run(bin, ['--help']);
  for (const t of topics) {
    assert.match(overview, new RegExp(`\\n  ${t} +\\S`), `wtproxy --help does not list the guide ${t}`);
    const text = run(bin, ['help', t]);
    const same = Object.keys(docs).filter((p) => docs[p].length > 0 && text.endsWith(docs[p]));
    assert.equal(same.length, 1, `wtproxy help ${t} is not one installed document: ${same}`);
  }
  // A guide that says to copy a file names where it was installed.
  const setup = path.join(doc, 'conf/vitest-db-setup.mjs');
  assert.ok(run(bin, ['help', 'node-db-tests']).startsWith(
    `The file this guide names, as this wtproxy installed it:\n  ${setup}\n\n`));
  assert.ok(fs.existsSync(setup), setup);
});

// A .wtproxy with a typo: doctor, with the daemon's parser, names the
// guide; the guide, asked of the installed binary, is the format.
test("doctor's message about a bad .wtproxy names a guide the installed binary prints", () => {
  const repo = path.join(tmp, 'typo');
  fs.mkdirSync(repo);
  run('git', ['init', '-q'], { cwd: repo });
  fs.writeFileSync(path.join(repo, '.wtproxy'), 'strat = python3 -m http.server {port}\n');
  const runDir = fs.mkdtempSync(path.join(tmp, 'run-'));
  const r = spawnSync(bin, ['doctor', '--json'], { cwd: repo, encoding: 'utf8', timeout: 60000,
    env: { ...process.env, XDG_RUNTIME_DIR: runDir, XDG_STATE_HOME: runDir, WTPROXY_DB_SERVER: '' } });
  const server = JSON.parse(r.stdout).checks.find((c) => c.name === 'server');
  assert.match(server.detail, /\.wtproxy:1: bad or unknown `strat`/, server.detail);
  assert.doesNotMatch(server.detail, /conf\//, 'names a file of the repository');
  const named = /wtproxy help ([a-z-]+)/.exec(server.detail);
  assert.ok(named, `names no guide: ${server.detail}`);
  const guide = run(bin, ['help', named[1]]);
  assert.equal(guide, fs.readFileSync(path.join(doc, 'conf/wtproxy-file.example'), 'utf8'));
  assert.match(guide, /^# start \(required\)/m);
});

// What a no-whoami refusal tells a Python server's owner to look up.
function whoamiWhere(wtproxy, env = {}) {
  const text = run(wtproxy, ['help', 'whoami'], { env });
  const py = /^ {2}Python +(\S+)\/wtproxy_whoami$/m.exec(text);
  const node = /^ {2}Node +(\S+)$/m.exec(text);
  assert.ok(py && node, `wtproxy help whoami names no installed folders:\n${text.slice(0, 600)}`);
  return { python: py[1], node: node[1] };
}

test('wtproxy help whoami names the folders the middleware packages were installed in', () => {
  const where = whoamiWhere(bin);
  assert.ok(where.python.startsWith(`${root}/lib/`), where.python);
  assert.ok(fs.existsSync(path.join(where.python, 'wtproxy_whoami/__init__.py')), where.python);
  assert.equal(where.node, path.join(root, 'lib/node_modules/wtproxy-whoami'));
  const sysPath = JSON.parse(run('/usr/bin/python3', ['-c', 'import json, sys; print(json.dumps(sys.path))']));
  assert.ok(sysPath.includes(where.python.slice(dest.length)), `/usr/bin/python3 does not search ${where.python}`);
});

test('the systemd unit runs the installed binary', () => {
  const units = path.join(root, 'lib/systemd/user');
  assert.ok(fs.existsSync(path.join(units, 'wtproxy.socket')));
  assert.match(fs.readFileSync(path.join(units, 'wtproxy.service'), 'utf8'), /^ExecStart=\/usr\/local\/bin\/wtproxy serve$/m);
});

test('zsh completion is valid zsh', (t) => {
  if (spawnSync('sh', ['-c', 'command -v zsh']).status !== 0) return t.skip('zsh is not installed');
  run('zsh', ['-n', path.join(root, 'share/zsh/vendor-completions/_wtproxy')]);
});

// The README's install: --prefix ~/.local. Each part lands where the
// user's own tools look in their home: systemd's user folder, Python's
// user site, man's path next to PATH's ~/.local/bin.
test('a --prefix ~/.local install is found by systemd, python3 and man', () => {
  const env = { HOME: home, PYTHONUSERBASE: '' }; // '' is unset for Python
  fs.mkdirSync(home);
  const local = path.join(home, '.local');
  run('meson', ['configure', build, `-Dprefix=${local}`], { env });
  install(env);
  const unit = fs.readFileSync(path.join(local, 'share/systemd/user/wtproxy.service'), 'utf8');
  assert.match(unit, new RegExp(`^ExecStart=${local}/bin/wtproxy serve$`, 'm'));
  assert.match(run(path.join(local, 'bin/wtproxy'), ['--version']), /^wtproxy /);
  const imported = run('/usr/bin/python3', ['-c', 'import wtproxy_whoami; print(wtproxy_whoami.__file__)'],
    { env: { HOME: home, PYTHONPATH: '' } }).trim();
  assert.ok(imported.startsWith(`${local}/lib/python3`), imported);
  // The folder the guide names is the one python3 imported it from.
  const where = whoamiWhere(path.join(local, 'bin/wtproxy'), { HOME: home });
  assert.equal(path.join(where.python, 'wtproxy_whoami/__init__.py'), imported);
  const page = run('man', ['-w', 'wtproxy-run'], { env: { HOME: home, PATH: `${local}/bin:${process.env.PATH}`, MANPATH: '' } });
  assert.equal(page.trim(), path.join(local, 'share/man/man1/wtproxy-run.1'));
});

// A private prefix (--prefix /opt/...), which Debian's python3 does not
// search: a Django server started from the .wtproxy would die at its first
// import while the request that started it waits out start_timeout. The
// guide says so and prints the link that fixes it; doctor, in the app,
// finds it before any server starts and prints the link for the python the
// .wtproxy runs; each pasted as printed makes that python import it.
test('a private prefix: help whoami and doctor say /usr/bin/python3 cannot import it, and their fix works as printed', () => {
  const opt = path.join(tmp, 'opt');
  const home2 = path.join(tmp, 'home-opt'); // an empty user site
  const env = { HOME: home2, PYTHONUSERBASE: '', PYTHONPATH: '' };
  fs.mkdirSync(home2);
  run('meson', ['configure', build, `-Dprefix=${opt}`]);
  install();
  const wtproxy = path.join(opt, 'bin/wtproxy');
  const imports = () => spawnSync('/usr/bin/python3', ['-c', 'import wtproxy_whoami'],
    { env: { ...process.env, ...env }, encoding: 'utf8' }).status === 0;
  assert.ok(!imports(), `/usr/bin/python3 searches the private prefix ${opt}: the test needs one it does not`);

  const guide = run(wtproxy, ['help', 'whoami'], { env });
  assert.doesNotMatch(guide, /imports it with no setting/, 'the guide claims python3 imports it');
  const link = /^ +(d=\$\(\/usr\/bin\/python3 .*)$/m.exec(guide);
  assert.ok(link, `help whoami prints no command that makes it importable:\n${guide.slice(0, 900)}`);

  const app = path.join(tmp, 'opt-app');
  fs.mkdirSync(app);
  run('git', ['init', '-q'], { cwd: app });
  fs.writeFileSync(path.join(app, '.wtproxy'), 'start = /usr/bin/python3 manage.py runserver 127.0.0.1:{port}\nfront = 18799\n');
  const runDir = fs.mkdtempSync(path.join(tmp, 'run-'));
  const doctor = () => {
    const r = spawnSync(wtproxy, ['doctor', '--json'], { cwd: app, encoding: 'utf8', timeout: 60000,
      env: { ...process.env, ...env, XDG_RUNTIME_DIR: runDir, XDG_STATE_HOME: runDir, WTPROXY_DB_SERVER: '' } });
    const check = JSON.parse(r.stdout).checks.find((c) => c.name === 'middleware');
    assert.ok(check, `doctor has no middleware check:\n${r.stdout}`);
    return check;
  };
  const before = doctor();
  assert.equal(before.status, 'problem', `doctor says ${before.status}: ${before.detail}`);
  assert.match(before.detail, /\/usr\/bin\/python3 cannot import wtproxy_whoami/);
  run('sh', ['-c', before.fix], { env, cwd: app });
  assert.ok(imports(), `doctor's fix, pasted, did not make /usr/bin/python3 import it: ${before.fix}`);
  const after = doctor();
  assert.equal(after.status, 'ok', after.detail);
  assert.match(after.detail, new RegExp(`imports wtproxy_whoami from ${home2}/`));

  fs.rmSync(path.join(home2, '.local'), { recursive: true });
  assert.ok(!imports());
  run('sh', ['-c', link[1]], { env });
  assert.ok(imports(), `help whoami's command, pasted, did not make /usr/bin/python3 import it: ${link[1]}`);
});
