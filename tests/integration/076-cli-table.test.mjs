// 076: the command table (cli/main.c). Every command it lists answers
// `wtproxy help CMD` and `wtproxy CMD --help` with the same text, exit 0,
// naming its usage and its exit statuses; `wtproxy --help` lists every
// command; an unknown command exits 2 listing them. The commands walked come
// from `wtproxy help --list`, so a command added to the table is walked too.
// A guide that points at another guide names the `wtproxy help` command
// that prints it, not only a file of the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wtproxyBin, repoRoot } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const KNOWN = ['serve', 'run', 'register', 'unregister', 'ls', 'dashboard', 'why', 'fingerprint',
  'claim', 'release', 'leases', 'db'];

// No daemon may be started or asked, whatever a command does wrong: its
// own control socket and state folder, and no daemon start.
function sandbox(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-076-'));
  removeAfter(t, dir);
  const env = { WTPROXY_NO_AUTOSTART: '1', WTPROXY_CONTROL: path.join(dir, 'control.sock'),
    XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: dir };
  return (...args) => runToExit(wtproxyBin, args, { ms: 5000, cwd: dir, env });
}

const clean = (r) => assert.doesNotMatch(r.stdout + r.stderr, /AddressSanitizer|LeakSanitizer|runtime error:/, r.stderr);

async function listed(run) {
  const r = await run('help', '--list');
  clean(r);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim().split('\n');
}

test('help --list names the known commands, once each', async (t) => {
  const names = await listed(sandbox(t));
  for (const k of KNOWN) assert.ok(names.includes(k), `help --list lacks ${k}: ${names}`);
  assert.equal(new Set(names).size, names.length, `a command is listed twice: ${names}`);
});

test('wtproxy --help lists every command of the table with its summary', async (t) => {
  const run = sandbox(t);
  const names = await listed(run);
  const r = await run('--help');
  clean(r);
  assert.equal(r.code, 0, r.stderr);
  for (const n of names) assert.match(r.stdout, new RegExp(`\\n  ${n} +\\S`), `--help lacks ${n}`);
  // One column of summaries: "fingerprint the code fingerprint" read as one phrase.
  const columns = names.map((n) => new RegExp(`\\n  ${n}( +)\\S`).exec(r.stdout)[1].length + n.length);
  assert.equal(new Set(columns).size, 1, `the summaries start at columns ${columns}`);
  const same = await run('help');
  assert.equal(same.code, 0, same.stderr);
  assert.equal(same.stdout, r.stdout, 'wtproxy help and wtproxy --help differ');
});

test('every command: help CMD and CMD --help print the same help, exit 0', async (t) => {
  const run = sandbox(t);
  for (const n of await listed(run)) {
    const viaHelp = await run('help', n);
    const viaFlag = await run(n, '--help');
    clean(viaHelp);
    clean(viaFlag);
    assert.equal(viaHelp.code, 0, `help ${n}: ${viaHelp.stderr}`);
    assert.equal(viaFlag.code, 0, `${n} --help: ${viaFlag.stderr}`);
    assert.match(viaHelp.stdout, new RegExp(`^usage: wtproxy ${n}\\b`), `help ${n}`);
    assert.match(viaHelp.stdout, /\nexit status:\n {2}\S/, `help ${n} names no exit status`);
    assert.equal(viaFlag.stdout, viaHelp.stdout, `help ${n} and ${n} --help differ`);
    assert.equal(viaFlag.stderr, '', `${n} --help wrote on stderr`);
  }
});

test('an unknown command exits 2 and lists the commands', async (t) => {
  const run = sandbox(t);
  const names = await listed(run);
  for (const args of [['frobnicate'], ['help', 'frobnicate']]) {
    const r = await run(...args);
    clean(r);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '', args.join(' '));
    assert.match(r.stderr, /unknown command "frobnicate"/);
    for (const n of names) assert.match(r.stderr, new RegExp(`\\n  ${n} +\\S`), `${args.join(' ')}: lacks ${n}`);
  }
});

// `wtproxy help whoami` from a build folder (as this test runs it) names
// the checkout it was built from by its real path, not a CHECKOUT
// placeholder, so its PYTHONPATH can be pasted: Debian's python3 then
// imports the middleware.
test('help whoami from a build folder names the real checkout, and its PYTHONPATH imports the middleware', async (t) => {
  const run = sandbox(t);
  const r = await run('help', 'whoami');
  clean(r);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /CHECKOUT/);
  const root = fs.realpathSync(repoRoot);
  assert.match(r.stdout, new RegExp(`runs from a build folder of the checkout\n${root}, not installed`));
  assert.match(r.stdout, new RegExp(`Node    ${root}/whoami/node\n`));
  assert.doesNotMatch(r.stdout, /missing:/);
  const dir = /PYTHONPATH=(\S+)/.exec(r.stdout)[1];
  assert.equal(dir, `${root}/whoami/python`);
  const imported = await runToExit('/usr/bin/python3', ['-c', 'import wtproxy_whoami; print(wtproxy_whoami.__file__)'],
    { ms: 10000, cwd: os.tmpdir(), env: { PYTHONPATH: dir } });
  assert.equal(imported.code, 0, imported.stderr);
  assert.equal(imported.stdout.trim(), `${dir}/wtproxy_whoami/__init__.py`);
});

// The guides tell how to stop a server the daemon started from a
// .wtproxy with the command that does it (its wrapper stops the whole
// process group and unregisters it), not with a kill of a pid to look up.
test('help wtproxy-file and help playwright stop a server with wtproxy stop, not a kill', async (t) => {
  const run = sandbox(t);
  for (const topic of ['wtproxy-file', 'playwright']) {
    const r = await run('help', topic);
    clean(r);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /kill\s+its\s+PID|kill\s+the\s+pid/i, `help ${topic}`);
  }
  const file = await run('help', 'wtproxy-file');
  assert.match(file.stdout, /to stop them now, run\n# `wtproxy stop` in the worktree \(`--service NAME` for one of several\)/);
  const pw = await run('help', 'playwright');
  assert.match(pw.stdout, /`idle_stop = 0` keeps it until you stop it\n\(`wtproxy stop` in its worktree\)/);
});

// The guides and their documents, as cli/meson.build builds them in.
function guideFiles() {
  const build = fs.readFileSync(path.join(repoRoot, 'cli/meson.build'), 'utf8');
  const table = /help_topics = \{\n([^}]*)\}/.exec(build)[1];
  return Object.fromEntries([...table.matchAll(/^\s+'([a-z-]+)': '([^']+)',$/gm)].map((m) => [m[1], m[2]]));
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// An installed wtproxy has no checkout: a guide read in a terminal that
// sends its reader to another guide by a link or a repository path alone
// ("[INIT.md](INIT.md)", "whoami/PROTOCOL.md") leads nowhere. Beside each
// such mention stands the command that prints that guide.
test('a guide that points at another guide names the wtproxy help command that prints it', async (t) => {
  const run = sandbox(t);
  const files = guideFiles();
  assert.ok(Object.keys(files).length > 10, JSON.stringify(files));
  const missing = [];
  for (const [topic, file] of Object.entries(files)) {
    const r = await run('help', topic);
    clean(r);
    assert.equal(r.code, 0, r.stderr);
    for (const [name, other] of Object.entries(files)) {
      if (name === topic) continue;
      const link = `\\]\\(${escape(path.relative(path.dirname(file), other))}(#[^)]*)?\\)`;
      const bare = `(?<![\\w/.-])${escape(other)}(?![\\w/-])`;
      for (const m of r.stdout.matchAll(new RegExp(`${link}|${bare}`, 'g'))) {
        const near = r.stdout.slice(Math.max(0, m.index - 160), m.index + m[0].length + 160);
        if (!near.includes(`wtproxy help ${name}`)) missing.push(`wtproxy help ${topic}: ${m[0]} without \`wtproxy help ${name}\``);
      }
    }
  }
  assert.deepEqual(missing, []);
});

// A guide that tells you to copy or run one of wtproxy's files said
// "`conf/vitest-db-setup.mjs` ... copy it into the app": a path of the
// repository, which an installed wtproxy has not. Each such guide now
// starts with the file's path on this machine (here, run from a build
// folder, the checkout's; installed, the doc folder's: test 077), a file
// that is there.
test('a guide that names a file to copy prints where that file is', async (t) => {
  const run = sandbox(t);
  for (const [topic, file] of [['node-db-tests', 'vitest-db-setup.mjs'],
    ['django-tests', 'run-django-tests.sh'], ['playwright', 'playwright.config.example.js']]) {
    const r = await run('help', topic);
    clean(r);
    assert.equal(r.code, 0, r.stderr);
    const at = new RegExp(`^The file this guide names[^\\n]*\\n(?:[^\\n]*\\n)?  (/\\S+/${escape(file)})\\n`).exec(r.stdout);
    assert.ok(at, `wtproxy help ${topic} does not start with where ${file} is:\n${r.stdout.slice(0, 400)}`);
    assert.ok(fs.existsSync(at[1]), `${at[1]} is not there`);
    assert.doesNotMatch(r.stdout, /(?<![\w/.-])(conf|registry|tests)\/[\w.-]/, `wtproxy help ${topic} names a file of the repository`);
  }
});
