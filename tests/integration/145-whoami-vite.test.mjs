// 145: the Vite plugin (whoami/node/vite.mjs) on a real Vite dev server
// (tests/node_modules/vite), started by `wtproxy run` in a worktree:
// 1. /__whoami names the worktree, with the hash `wtproxy fingerprint`
//    computes under the declared patterns;
// 2. through the proxy /src/main.js is served and the gate shows it
//    verified;
// 3. an edit followed at once by a request gets the new code, never the
//    old one and never a refusal (the gate waits while Vite's watcher
//    catches up), 10 times; also when a second write follows within
//    chokidar's 50 ms throttle, which drops its event;
// 4. an edit outside the patterns (README.md) changes nothing; one to a
//    declared file outside Vite's root (which its watcher does not see) is
//    taken in when wtproxy asks, within the grace;
// 5. with NODE_ENV=production the plugin serves nothing, and `vite build`
//    runs without it;
// 6. a .env file read once at start (.env.wt, which `wtproxy db claim
//    --write-env` writes) rewritten after Vite started: stale (409, ls),
//    never verified on the old settings; --restart-on-stale restarts it
//    onto the new ones; a .env Vite restarts itself for is current again
//    after that restart.
import { test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { repoRoot, wtproxyBin } from './lib/wtproxy.mjs';
import { httpGet } from './lib/backends.mjs';
import { runToExit } from './lib/conformance.mjs';
import { makeWorktrees, startDaemon, cliEnv, get, lsJson, pidAlive, waitFor, sanitizerClean } from './lib/registry.mjs';
import { patternArgs, diskFingerprint, freePort } from './lib/whoami.mjs';

const viteBin = path.join(repoRoot, 'tests/node_modules/vite/bin/vite.js');
const plugin = path.join(repoRoot, 'whoami/node/vite.mjs');
const EDITS = 10;
// Vite 8's engines: ^20.19.0 || >=22.12.0. On an older Node the tests say
// why they did not run instead of failing on Vite's own start.
const [major, minor] = process.versions.node.split('.').map(Number);
const nodeOk = (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22;
const test = nodeOk ? nodeTest : (name, fn) => nodeTest(name, { skip: `Vite 8 needs Node ^20.19 or >=22.12, not ${process.versions.node}` }, fn);

// A tiny Vite project in dir: index.html loading src/main.js, whose
// VERSION the tests edit, and a README outside the patterns.
function writeProject(dir, options = '') {
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html>\n<script type="module" src="/src/main.js"></script>\n');
  fs.writeFileSync(path.join(dir, 'README.md'), '# shop\n');
  setVersion(dir, 'v0');
  fs.writeFileSync(path.join(dir, 'vite.config.mjs'), `import { wtproxyWhoami } from ${JSON.stringify(plugin)};
export default { plugins: [wtproxyWhoami(${options})], clearScreen: false,
  server: { strictPort: true, host: '127.0.0.1' } };
`);
}

function setVersion(dir, v) {
  fs.writeFileSync(path.join(dir, 'src/main.js'), `export const VERSION = ${JSON.stringify(v)};\ndocument.title = VERSION;\n`);
}

const versionOf = (body) => (/VERSION = "([^"]*)"/.exec(body) || [])[1];

// Stop a process by pid and wait for it; its children too if it left any.
async function stopped(proc, exited, vitePid) {
  if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, 'SIGTERM');
  await exited; // `wtproxy run` stops Vite and unregisters on the way out
  // (Vite may exit between the look and the kill: ESRCH is its being gone)
  if (vitePid && pidAlive(vitePid)) try { process.kill(vitePid, 'SIGKILL'); } catch (e) { if (e.code !== 'ESRCH') throw e; }
}

// `wtproxy run --front FRONT -- node vite.js --port {port} --strictPort
// --host 127.0.0.1` in dir; resolves once ready with { port, pid (Vite's),
// output() }.
async function runVite(t, tmp, dir, front, runArgs = []) {
  const args = ['run', '--front', String(front), ...runArgs, '--', process.execPath, viteBin,
    '--port', '{port}', '--strictPort', '--host', '127.0.0.1'];
  const proc = spawn(wtproxyBin, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp) } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('exit', r));
  let vitePid = 0;
  t.after(() => stopped(proc, exited, vitePid));
  const port = await waitFor(() => {
    if (proc.exitCode !== null) throw new Error(`wtproxy run exited ${proc.exitCode}:\n${out}`);
    return Number((/is ready on 127\.0\.0\.1:(\d+)/.exec(out) || [])[1]);
  }, 20000, `vite under wtproxy run\n${out}`);
  const who = JSON.parse((await httpGet(port, '/__whoami')).body);
  vitePid = who.pid;
  return { port, pid: who.pid, who, output: () => out };
}

async function setup(t, { sub = '', options = '' } = {}) {
  const tmp = makeWorktrees(t, ['a']);
  writeProject(path.join(tmp.wt.a, sub), options);
  const px = await startDaemon(t, tmp);
  const vite = await runVite(t, tmp, path.join(tmp.wt.a, sub), px.port);
  return { tmp, px, vite, wt: tmp.wt.a };
}

// A project whose server reads .env and .env.wt once, at start (as a
// SvelteKit module reading its database name does), and serves them at
// /settings.
function writeSettingsProject(dir) {
  writeProject(dir);
  fs.writeFileSync(path.join(dir, '.env'), 'VITE_LABEL=first\n');
  fs.writeFileSync(path.join(dir, '.env.wt'), 'WT_DB=shop_one\n');
  fs.writeFileSync(path.join(dir, 'vite.config.mjs'), `import fs from 'node:fs';
import { wtproxyWhoami } from ${JSON.stringify(plugin)};
const settings = { name: 'settings', configureServer(server) {
  const read = ['.env', '.env.wt'].map((f) => fs.readFileSync(f, 'utf8')).join('');
  server.middlewares.use('/settings', (req, res) => res.end(read));
} };
export default { plugins: [wtproxyWhoami(), settings], clearScreen: false,
  server: { strictPort: true, host: '127.0.0.1' } };
`);
}

async function setupSettings(t, runArgs = []) {
  const tmp = makeWorktrees(t, ['a']);
  writeSettingsProject(tmp.wt.a);
  const px = await startDaemon(t, tmp);
  const vite = await runVite(t, tmp, tmp.wt.a, px.port, runArgs);
  const settings = () => get(px.port, { 'X-Wtproxy-Worktree': tmp.wt.a }, '/settings');
  const first = await settings();
  assert.equal(first.status, 200, first.body);
  assert.match(first.body, /WT_DB=shop_one/);
  return { tmp, px, vite, wt: tmp.wt.a, settings };
}

const mainJs = (px, wt) => get(px.port, { 'X-Wtproxy-Worktree': wt }, '/src/main.js');

async function entry(tmp, wt) {
  return (await lsJson(tmp)).find((x) => x.worktree === wt);
}

test('/__whoami names the worktree with the hash of wtproxy fingerprint; the gate verifies it', async (t) => {
  const { tmp, px, vite, wt } = await setup(t);
  const r = await httpGet(vite.port, '/__whoami');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['cache-control'], 'no-store');
  const who = JSON.parse(r.body);
  assert.equal(who.checkout, wt);
  assert.notEqual(who.pid, process.pid);
  const fp = who.fingerprint;
  assert.ok(fp.include.includes('**/*.js') && fp.include.includes('**/*.html'), fp.include.join(' '));
  assert.ok(fp.exclude.includes('**/node_modules/**') && fp.exclude.includes('**/.vite/**'), fp.exclude.join(' '));
  const disk = await diskFingerprint(wt, patternArgs(fp.include, fp.exclude));
  assert.deepEqual(fp, disk, 'the same as wtproxy fingerprint (C) with the declared patterns');
  assert.equal(disk.files, 3, 'index.html, src/main.js, vite.config.mjs; not README.md nor Vite\'s cache');
  assert.equal((await httpGet(vite.port, '/__whoami', { method: 'HEAD' })).body.length, 0);
  assert.equal((await httpGet(vite.port, '/__whoami', { method: 'POST' })).status, 405);

  const m = await mainJs(px, wt);
  assert.equal(m.status, 200, m.body);
  assert.equal(versionOf(m.body), 'v0');
  const e = await entry(tmp, wt);
  assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
  assert.equal(e.whoami.checkout, wt);
  assert.equal(e.whoami.hash, e.whoami.disk_hash);
  assert.equal(e.whoami.hash, disk.hash);
  sanitizerClean(assert, px.stderr());
});

test(`an edit then at once a request: the new code, never the old nor a refusal (${EDITS} times)`, async (t) => {
  const { tmp, px, vite, wt } = await setup(t);
  assert.equal(versionOf((await mainJs(px, wt)).body), 'v0');
  const outcomes = { new: 0, old: 0, refused: 0, other: 0 };
  const held = [];
  for (let i = 1; i <= EDITS; i++) {
    setVersion(wt, `v${i}`);
    const t0 = Date.now();
    const r = await mainJs(px, wt);
    held.push(Date.now() - t0);
    const v = versionOf(r.body);
    const kind = r.status === 200 && v === `v${i}` ? 'new' : v === `v${i - 1}` ? 'old' : r.status >= 400 ? 'refused' : 'other';
    outcomes[kind]++;
    if (kind !== 'new') t.diagnostic(`edit ${i}: ${r.status} ${r.headers['x-wtproxy-refused'] || ''} ${r.body.slice(0, 200)}`);
  }
  const sorted = [...held].sort((a, b) => a - b);
  t.diagnostic(`edit -> new code: median ${sorted[EDITS >> 1]} ms, max ${sorted[EDITS - 1]} ms (${held.join(', ')})`);
  assert.deepEqual(outcomes, { new: EDITS, old: 0, refused: 0, other: 0 });
  const e = await entry(tmp, wt);
  assert.equal(e.whoami.state, 'verified');
  assert.equal(JSON.parse((await httpGet(vite.port, '/__whoami')).body).fingerprint.hash,
    (await diskFingerprint(wt, patternArgs(vite.who.fingerprint.include, vite.who.fingerprint.exclude))).hash);
  sanitizerClean(assert, px.stderr());
});

test('a second write within chokidar\'s 50 ms throttle (its event dropped): still never the old code', async (t) => {
  const { px, vite, wt } = await setup(t);
  for (let i = 1; i <= 5; i++) {
    // Vite transforms and keeps the first write (asked directly, so the
    // gate is not involved), then the second lands within 50 ms.
    setVersion(wt, `a${i}`);
    await waitFor(async () => versionOf((await httpGet(vite.port, '/src/main.js')).body) === `a${i}`, 5000, `vite serves a${i}`);
    setVersion(wt, `b${i}`);
    const r = await mainJs(px, wt);
    assert.equal(r.status, 200, r.body);
    assert.equal(versionOf(r.body), `b${i}`, 'the second write, not the first Vite kept');
  }
});

test('an edit outside the patterns (README.md) changes nothing', async (t) => {
  const { tmp, px, vite, wt } = await setup(t);
  assert.equal((await mainJs(px, wt)).status, 200);
  const before = JSON.parse((await httpGet(vite.port, '/__whoami')).body).fingerprint;
  fs.writeFileSync(path.join(wt, 'README.md'), '# shop, edited\n');
  const t0 = Date.now();
  const r = await mainJs(px, wt);
  assert.equal(r.status, 200, r.body);
  assert.equal(versionOf(r.body), 'v0');
  assert.ok(Date.now() - t0 < 1000, `answered without waiting (${Date.now() - t0} ms)`);
  await new Promise((res) => setTimeout(res, 300)); // past any watcher round
  assert.deepEqual(JSON.parse((await httpGet(vite.port, '/__whoami')).body).fingerprint, before);
  assert.equal((await entry(tmp, wt)).whoami.state, 'verified');
});

test('a declared file outside Vite\'s root, unwatched, is taken in when wtproxy asks', async (t) => {
  const include = ['web/**/*.js', 'web/**/*.html', 'shared/**/*.js'];
  const { tmp, px, vite, wt } = await setup(t, { sub: 'web', options: JSON.stringify({ include }) });
  fs.mkdirSync(path.join(wt, 'shared'));
  fs.writeFileSync(path.join(wt, 'shared/util.js'), 'export const u = 1;\n');
  const t0 = Date.now();
  const r = await mainJs(px, wt);
  assert.equal(r.status, 200, `${r.status} after ${Date.now() - t0} ms: ${r.body}`);
  assert.equal(versionOf(r.body), 'v0');
  t.diagnostic(`held ${Date.now() - t0} ms while the plugin checked the disk again`);
  const who = JSON.parse((await httpGet(vite.port, '/__whoami')).body);
  assert.equal(who.checkout, wt, 'the checkout holding Vite\'s root');
  assert.deepEqual(who.fingerprint, await diskFingerprint(wt, patternArgs(include, who.fingerprint.exclude)));
  assert.equal(who.fingerprint.files, 3, 'web/index.html, web/src/main.js, shared/util.js');
  assert.equal((await entry(tmp, wt)).whoami.state, 'verified');
});

test('NODE_ENV=production: the plugin serves no /__whoami; vite build runs without it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const wt = tmp.wt.a;
  writeProject(wt);
  const port = await freePort();
  const proc = spawn(process.execPath, [viteBin, '--port', String(port), '--strictPort', '--host', '127.0.0.1'],
    { cwd: wt, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('exit', r));
  t.after(() => stopped(proc, exited));
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`vite exited ${proc.exitCode}:\n${out}`);
    return (await httpGet(port, '/src/main.js')).status === 200;
  }, 20000, `vite (production) on :${port}\n${out}`);
  const r = await httpGet(port, '/__whoami', { headers: { Accept: 'application/json' } });
  assert.equal(r.status, 404, `${r.status} ${r.headers['content-type']} ${r.body}`);
  assert.doesNotMatch(r.body.toString(), /wtproxy_whoami/);

  const build = await runToExit(process.execPath, [viteBin, 'build'], { cwd: wt, ms: 30000 });
  assert.equal(build.code, 0, build.stdout + build.stderr);
  const bundle = fs.readdirSync(path.join(wt, 'dist/assets')).map((f) => fs.readFileSync(path.join(wt, 'dist/assets', f), 'utf8')).join('');
  assert.match(bundle, /v0/);
  assert.doesNotMatch(bundle + build.stdout + build.stderr, /whoami/i);
});

test('.env.wt rewritten after Vite started: stale, a 409 naming it, never verified on the old settings', async (t) => {
  const { tmp, wt, vite, settings } = await setupSettings(t);
  assert.equal((await entry(tmp, wt)).whoami.state, 'verified');
  fs.writeFileSync(path.join(wt, '.env.wt'), 'WT_DB=shop_two\n'); // wtproxy db claim --write-env .env.wt
  const r = await settings();
  assert.equal(r.status, 409, `the server still reads WT_DB=shop_one: ${r.status} ${r.body}`);
  assert.equal(r.headers['x-wtproxy-refused'], 'stale-code');
  assert.match(r.body, /\.env\.wt/);
  const e = await entry(tmp, wt);
  assert.equal(e.whoami.state, 'stale', JSON.stringify(e.whoami));
  assert.match(e.whoami.detail, /\.env\.wt/);
  await waitFor(() => /\.env\.wt changed after this Vite server started/.test(vite.output()), 5000, `the plugin's warning in\n${vite.output()}`);
});

test('.env.wt rewritten under --restart-on-stale: the next request is served by a restarted Vite with the new settings', async (t) => {
  const { tmp, wt, vite, settings } = await setupSettings(t, ['--restart-on-stale']);
  fs.writeFileSync(path.join(wt, '.env.wt'), 'WT_DB=shop_two\n');
  const r = await settings();
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /WT_DB=shop_two/, 'not the settings read before the rewrite');
  const e = await entry(tmp, wt);
  assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
  assert.notEqual(e.pid, vite.pid, 'a new Vite');
});

test('.env edited: Vite restarts its server itself, and the new one is verified with the new settings', async (t) => {
  const { tmp, wt, vite, settings } = await setupSettings(t);
  fs.writeFileSync(path.join(wt, '.env'), 'VITE_LABEL=second\n');
  await waitFor(() => /\.env changed, restarting server/.test(vite.output()), 10000, `Vite's restart in\n${vite.output()}`);
  const r = await waitFor(async () => {
    const got = await settings();
    return got.status === 200 && /VITE_LABEL=second/.test(got.body) && got;
  }, 10000, 'the restarted server\'s settings');
  assert.match(r.body, /WT_DB=shop_one/);
  const e = await entry(tmp, wt);
  assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
  assert.equal(JSON.parse((await httpGet(vite.port, '/__whoami')).body).pid, vite.pid, 'the same process: Vite restarted its server in it');
});

// Nuxt runs the plugin in its Vite, but builds its server routes
// (server/) with Nitro, apart from Vite's watcher: /__whoami moved to an
// edited server/api file's fingerprint about half a second before Nitro
// served it, and the old route answered 200, verified. Under Nuxt (its
// Vite plugins are named nuxt:...), server/ is read at start, as .env
// files are: edited, the server is stale. Elsewhere server/ is Vite's.
// React Router evaluates its route config (app/routes.ts) on a change and,
// when that fails, logs it and serves the routes it had: a routes.ts that
// no longer parsed, without the /notes route, kept serving /notes and the
// tests passed, verified. Astro keeps its old config when an edited
// astro.config.* fails to load. Under each (known by its Vite plugins'
// names, as Nuxt is), those files are read at start: edited, stale. Seen
// with react-router 7.18 and Astro 5 by hand (a 409 where each served 200
// verified); here the frameworks' plugin names in a plain Vite.
for (const [framework, plugin0, file] of [
  ['Nuxt', 'nuxt:fake-for-test', 'server/api/notes.ts'],
  ['React Router', 'react-router', 'app/routes.ts'],
  ['Astro', 'astro:fake-for-test', 'astro.config.mjs'],
]) {
  test(`under ${framework}, ${file} edited after the start: stale, never verified on what it kept`, async (t) => {
    const tmp = makeWorktrees(t, ['a']);
    const wt = tmp.wt.a;
    writeProject(wt);
    fs.mkdirSync(path.dirname(path.join(wt, file)), { recursive: true });
    fs.writeFileSync(path.join(wt, file), "export default [];\n");
    fs.writeFileSync(path.join(wt, 'vite.config.mjs'), `import { wtproxyWhoami } from ${JSON.stringify(plugin)};
export default { plugins: [{ name: ${JSON.stringify(plugin0)} }, wtproxyWhoami()], clearScreen: false,
  server: { strictPort: true, host: '127.0.0.1' } };
`);
    const px = await startDaemon(t, tmp);
    await runVite(t, tmp, wt, px.port);
    assert.equal((await mainJs(px, wt)).status, 200);
    assert.equal((await entry(tmp, wt)).whoami.state, 'verified');
    fs.writeFileSync(path.join(wt, file), 'export default [ )( ];\n');
    const r = await mainJs(px, wt);
    assert.equal(r.status, 409, `${framework} may still serve what it had: ${r.status} ${r.body}`);
    assert.match(r.body, new RegExp(file.replace('.', '\\.')));
    sanitizerClean(assert, px.stderr());
  });
}

// A data file the server code reads itself at load (fs.readFileSync at a
// module's top) is no import of Vite's: an Astro user's edited JSON was
// served old while wtproxy said verified. Named in readAtStart, an edit
// makes the server stale; a file left out is Vite's, as before.
test('readAtStart: a data file the server reads at load, edited after the start: stale, a 409 naming it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const wt = tmp.wt.a;
  writeProject(wt, "{ readAtStart: ['data/**'] }");
  fs.mkdirSync(path.join(wt, 'data'), { recursive: true });
  fs.writeFileSync(path.join(wt, 'data/menu.yaml'), 'flavor: plain\n');
  const px = await startDaemon(t, tmp);
  await runVite(t, tmp, wt, px.port);
  assert.equal((await mainJs(px, wt)).status, 200);
  assert.equal((await entry(tmp, wt)).whoami.state, 'verified');
  fs.writeFileSync(path.join(wt, 'data/menu.yaml'), 'flavor: spicy\n');
  const r = await mainJs(px, wt);
  assert.equal(r.status, 409, `the server may still hold the old data: ${r.status} ${r.body}`);
  assert.match(r.body, /data\/menu\.yaml/);
  sanitizerClean(assert, px.stderr());
});
