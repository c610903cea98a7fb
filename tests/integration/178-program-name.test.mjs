// 178: the fixes wtproxy writes name `wtproxy` commands, which a shell
// runs only when this binary is the first wtproxy on PATH (an install).
// Run from a build folder (the README's first command), a bare `wtproxy`
// is found nowhere, or is another install: the daemon's error pages then
// say which binary their commands mean; `wtproxy init`, which writes
// `wtproxy run` into the Playwright config, says Playwright's shell will
// not find it; and `wtproxy doctor` calls that a problem, with a fix that
// works when run. Installed (first on PATH), none of them says a word.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, cli, curlFrom } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const SELF = fs.realpathSync(wtproxyBin);
const BIN_DIR = path.dirname(SELF);
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';
const ON_PATH = `${BIN_DIR}:${SYSTEM_PATH}`;

// A folder holding another `wtproxy` (a script), as an older install.
function otherInstall(tmp) {
  const dir = path.join(tmp.root, 'other-bin');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'wtproxy'), '#!/bin/sh\necho other wtproxy\n', { mode: 0o755 });
  return dir;
}

async function noBackendPage(t, tmp, PATH, bin) {
  const px = await startDaemon(t, tmp, [], { env: { PATH }, ...(bin ? { bin } : {}) });
  const text = await curlFrom(tmp.wt.a, px.port, '/');
  const json = await curlFrom(tmp.wt.a, px.port, '/', { headers: ['Accept: application/json'] });
  assert.equal(text.status, 503, text.body);
  await px.stop(); // the next one takes the same control socket
  return { text: text.body, json: JSON.parse(json.body), log: px.stderr() };
}

test('a daemon run from its build folder says which binary its fixes mean; installed, it does not', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const off = await noBackendPage(t, tmp, SYSTEM_PATH);
  assert.match(off.text, /^Fix: .*wtproxy run/m, off.text);
  assert.ok(off.text.includes(`\`wtproxy\` above is ${SELF} (no wtproxy is on this daemon's PATH)`), off.text);
  assert.equal(off.json.program, SELF);
  assert.ok(off.log.includes(`\`wtproxy\` in the fixes this daemon writes means ${SELF}, and no wtproxy is on its PATH: ` +
    `its error pages say so; to run them as written: export PATH=${BIN_DIR}:$PATH (or install it: README)`), off.log);
  // The path named runs: it is this very binary.
  assert.equal(fs.realpathSync(off.text.match(/above is (\S+)/)[1]), SELF);

  const other = otherInstall(tmp);
  const shadowed = await noBackendPage(t, tmp, `${other}:${ON_PATH}`);
  assert.ok(shadowed.log.includes(`means ${SELF}, and the first wtproxy on its PATH is another one, ${other}/wtproxy: `), shadowed.log);
  assert.ok(shadowed.text.includes(`\`wtproxy\` above is ${SELF} (the wtproxy on this daemon's PATH, ${other}/wtproxy, is another one)`), shadowed.text);

  // Installed (in a bin folder) but not on the daemon's PATH, as a systemd
  // user unit runs ~/.local/bin/wtproxy: not named (its users' shells have it).
  const bin = path.join(tmp.root, 'prefix', 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.copyFileSync(SELF, path.join(bin, 'wtproxy'));
  fs.chmodSync(path.join(bin, 'wtproxy'), 0o755);
  const installed = await noBackendPage(t, tmp, SYSTEM_PATH, path.join(bin, 'wtproxy'));
  assert.doesNotMatch(installed.text, /above is/, installed.text);
  assert.doesNotMatch(installed.log, /in the fixes this daemon writes/);

  const on = await noBackendPage(t, tmp, ON_PATH);
  assert.match(on.text, /^Fix: .*wtproxy run/m, on.text);
  assert.doesNotMatch(on.text, /above is/, on.text);
  assert.equal(on.json.program, undefined, JSON.stringify(on.json));
  assert.doesNotMatch(on.log, /in the fixes this daemon writes/);
});

// A Django app with a Playwright config on a fixed port, committed, in
// worktree a.
function djangoWithPlaywright(t) {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, 'manage.py'),
    "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'proj.settings')\n");
  fs.mkdirSync(path.join(tmp.repo, 'proj'));
  fs.writeFileSync(path.join(tmp.repo, 'proj', '__init__.py'), '');
  fs.writeFileSync(path.join(tmp.repo, 'proj', 'settings.py'), "INSTALLED_APPS = []\nMIDDLEWARE = [\n]\n");
  fs.writeFileSync(path.join(tmp.repo, 'playwright.config.ts'), `import { defineConfig } from '@playwright/test';
export default defineConfig({
  use: { baseURL: 'http://localhost:8000' },
  webServer: { command: 'python3 manage.py runserver 8000', url: 'http://localhost:8000', reuseExistingServer: true },
});
`);
  const g = (...a) => execFileSync('git', a, { cwd: tmp.repo, stdio: 'ignore' });
  g('add', '-A');
  g('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'app');
  tmp.wt.a = path.join(tmp.root, 'wt-a');
  g('worktree', 'add', '-q', tmp.wt.a, '-b', 'a');
  return tmp;
}

test('init says when the `wtproxy run` it writes will not be found by Playwright; installed, it does not', async (t) => {
  const tmp = djangoWithPlaywright(t);
  const notes = async (PATH) => {
    const r = await cli(tmp, ['init'], { cwd: tmp.wt.a, env: { PATH } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /command: 'wtproxy run -- /, r.stdout);
    return r.stdout.split('\n').filter((l) => l.startsWith('note: ')).join('\n');
  };
  const off = await notes(SYSTEM_PATH);
  assert.ok(off.includes('no wtproxy is on PATH, so Playwright\'s shell will not find the config\'s ' +
    `\`wtproxy run\`: put this one there (export PATH=${BIN_DIR}:$PATH)`), off);
  const other = otherInstall(tmp);
  const shadowed = await notes(`${other}:${ON_PATH}`);
  assert.ok(shadowed.includes(`\`wtproxy run\` in the Playwright config runs ${other}/wtproxy, the first wtproxy ` +
    `on PATH, not this one (${SELF}): put this one first (export PATH=${BIN_DIR}:$PATH)`), shadowed);
  assert.doesNotMatch(await notes(ON_PATH), /wtproxy is on PATH|first wtproxy on PATH/);
});

test('doctor calls a `wtproxy run` config a problem when PATH finds no wtproxy, and its fix works', async (t) => {
  const tmp = djangoWithPlaywright(t);
  const applied = await cli(tmp, ['init', '--apply'], { cwd: tmp.wt.a, env: { PATH: ON_PATH } });
  assert.equal(applied.code, 0, applied.stderr);
  const playwright = async (PATH) => {
    const r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env: { PATH, PGHOST: '', PGPORT: '', PGDATABASE: '', WTPROXY_DB_SERVER: '' }, ms: 30000 });
    return JSON.parse(r.stdout).checks.find((c) => c.name === 'playwright');
  };
  const off = await playwright(SYSTEM_PATH);
  assert.equal(off.status, 'problem', JSON.stringify(off));
  assert.match(off.detail, /webServer\.command runs `wtproxy run`, and no wtproxy is on PATH/);
  assert.equal(off.fix, `export PATH=${BIN_DIR}:$PATH (or install this one: README)`);
  // The fix, run as written, makes the shell find this binary.
  const found = execFileSync('/bin/sh', ['-c', `${off.fix.replace(/ \(or .*/, '')}; command -v wtproxy`],
    { env: { PATH: SYSTEM_PATH } }).toString().trim();
  assert.equal(fs.realpathSync(found), SELF);

  const other = otherInstall(tmp);
  const shadowed = await playwright(`${other}:${ON_PATH}`);
  assert.equal(shadowed.status, 'problem', JSON.stringify(shadowed));
  assert.match(shadowed.detail, new RegExp(`Playwright's shell runs ${other}/wtproxy, the first wtproxy on PATH, not this one`));

  const on = await playwright(ON_PATH);
  assert.doesNotMatch(on.detail, /on PATH/, JSON.stringify(on));

  // A config naming wtproxy by its path (or a variable) needs no PATH.
  const config = path.join(tmp.wt.a, 'playwright.config.ts');
  fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace("command: 'wtproxy run", `command: '${SELF} run`));
  assert.match(fs.readFileSync(config, 'utf8'), new RegExp(`command: '${SELF.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} run -- `));
  const byPath = await playwright(SYSTEM_PATH);
  assert.doesNotMatch(byPath.detail, /on PATH/, JSON.stringify(byPath));
});
