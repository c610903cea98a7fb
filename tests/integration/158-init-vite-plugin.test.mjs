// 158: a Vite app adopted by `wtproxy init --apply` alone: init adds the
// /__whoami plugin to its vite.config.* itself (it used to print a note
// asking for it by hand, the one step of adoption a user had to do), as
// an entry loaded under `wtproxy run` only, so that:
// 1. a Vite + React app (tests/node_modules: vite, react, react-dom; the
//    app's own plugin in `defineConfig({ plugins: [banner()] })`): the
//    diff shown, then written by --apply, the app's plugin kept;
//    `vite build` succeeds where wtproxy-whoami does not resolve and
//    WTPROXY_PORT is unset (CI, production), without a warning about it
//    (a literal import('wtproxy-whoami/vite') gets one at every build); once the package is linked,
//    the server the daemon starts from the .wtproxy answers /__whoami,
//    is verified, and serves the app through the proxy; doctor finds the
//    plugin; a second init proposes nothing;
// 2. every config form init edits (.js as ES module and as CommonJS,
//    .mjs made new, .ts, .mts, .cjs, .cts; a one-line object, an empty or
//    one-line or multi-line plugins array, no plugins key, tabs) loads in
//    Vite without the package and WTPROXY_PORT, and with them lists the
//    plugin; a shape init cannot edit (a config function) gets a note
//    whose line, pasted into its plugins, does the same.
import { test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './lib/wtproxy.mjs';
import { makeWorktrees, startDaemon, cli, lsJson, sanitizerClean, curlFrom } from './lib/registry.mjs';
import { removeAfter } from './lib/cleanup.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const modules = path.join(repoRoot, 'tests/node_modules');
const viteBin = path.join(modules, 'vite/bin/vite.js');
const viteApi = path.join(modules, 'vite/dist/node/index.js');
// Vite 8's engines: ^20.19.0 || >=22.12.0.
const [major, minor] = process.versions.node.split('.').map(Number);
const nodeOk = (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22;
const test = nodeOk ? nodeTest : (name, fn) => nodeTest(name, { skip: `Vite 8 needs Node ^20.19 or >=22.12, not ${process.versions.node}` }, fn);

const WHY = '// wtproxy: answers /__whoami so wtproxy routes only to this worktree\'s up-to-date server; ' +
  'loaded under wtproxy run only, and named through String() so that vite build, tsc and CI never ' +
  'resolve wtproxy-whoami - do not remove or make it a static import';
const ENTRY = "process.env.WTPROXY_PORT ? import(String('wtproxy-whoami/vite')).then((m) => m.wtproxyWhoami()) : null";

// The environment of a shell without wtproxy: no WTPROXY_* at all.
function plainEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const k of Object.keys(env)) if (k.startsWith('WTPROXY_') && !(k in extra)) delete env[k];
  return env;
}

// The app's node_modules as `npm install` leaves it, from the suite's
// packages; wtproxy-whoami linked only when asked (`npm link`).
function linkModules(dir, { whoami = false } = {}) {
  const nm = path.join(dir, 'node_modules');
  fs.mkdirSync(path.join(nm, '.bin'), { recursive: true });
  for (const p of ['vite', 'react', 'react-dom']) fs.symlinkSync(path.join(modules, p), path.join(nm, p));
  fs.symlinkSync('../vite/bin/vite.js', path.join(nm, '.bin/vite'));
  if (whoami) linkWhoami(dir);
}

const linkWhoami = (dir) => fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(dir, 'node_modules/wtproxy-whoami'));

function writeFiles(dir, files) {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
}

async function init(tmp, dir, args) {
  const r = await cli(tmp, ['init', ...args], { cwd: dir });
  sanitizerClean(assert, r.stderr);
  return r;
}

const banner = "function banner() {\n  return { name: 'banner', transformIndexHtml: (html) => html.replace('</body>', '<footer>shop banner</footer></body>') };\n}\n";

const reactApp = {
  'package.json': JSON.stringify({ name: 'shop', private: true, type: 'module', scripts: { dev: 'vite', build: 'vite build' },
    dependencies: { react: '^18.3.1', 'react-dom': '^18.3.1' }, devDependencies: { vite: '^8.0.0' } }, null, 2) + '\n',
  'index.html': '<!doctype html>\n<html>\n<body>\n<div id="root"></div>\n<script type="module" src="/src/main.jsx"></script>\n</body>\n</html>\n',
  'src/main.jsx': "import { createRoot } from 'react-dom/client';\nimport { App } from './App.jsx';\n\ncreateRoot(document.getElementById('root')).render(<App />);\n",
  'src/App.jsx': "export function App() {\n  return <h1>Shop front</h1>;\n}\n",
  'vite.config.js': "import { defineConfig } from 'vite';\n\n// the app's own plugin: a banner on every page\n" + banner +
    "\n// https://vite.dev/config/\nexport default defineConfig({\n  plugins: [banner()],\n  clearScreen: false,\n});\n",
};

test('a Vite + React app adopted by init --apply alone: vite build without wtproxy, the daemon\'s server verified, a second init proposes nothing', async (t) => {
  const tmp = makeWorktrees(t, []);
  const dir = tmp.repo;
  t.after(() => killUnder(tmp.root)); // Vite, if the daemon left it
  writeFiles(dir, reactApp);
  linkModules(dir);
  const px = await startDaemon(t, tmp);
  const front = ['--front', String(px.port)];

  let r = await init(tmp, dir, front);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^--- a\/vite\.config\.js\n\+\+\+ b\/vite\.config\.js\n/m, r.stdout);
  assert.ok(r.stdout.includes(`-  plugins: [banner()],\n+  plugins: [\n+    banner(),\n+    ${WHY}\n+    ${ENTRY},\n+  ],\n`), r.stdout);
  assert.match(r.stdout, /^note: vite\.config\.js loads 'wtproxy-whoami\/vite' under wtproxy run: link the package into each worktree /m, r.stdout);
  assert.doesNotMatch(r.stdout, /by hand/, r.stdout);
  assert.equal(fs.readFileSync(path.join(dir, 'vite.config.js'), 'utf8'), reactApp['vite.config.js'], 'nothing written without --apply');
  r = await init(tmp, dir, [...front, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wrote \.wtproxy\nwrote vite\.config\.js$/m, r.stdout);
  const config = fs.readFileSync(path.join(dir, 'vite.config.js'), 'utf8');
  assert.equal(config, reactApp['vite.config.js'].replace('  plugins: [banner()],\n',
    `  plugins: [\n    banner(),\n    ${WHY}\n    ${ENTRY},\n  ],\n`), 'the diff shown, written');

  // (a) CI: no wtproxy-whoami to resolve, no WTPROXY_PORT.
  const resolves = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('wtproxy-whoami/vite')"],
    { cwd: dir, env: plainEnv(), encoding: 'utf8' });
  assert.notEqual(resolves.status, 0, 'wtproxy-whoami must not resolve here');
  const build = spawnSync(process.execPath, [viteBin, 'build', '--logLevel', 'warn'], { cwd: dir, env: plainEnv(), encoding: 'utf8', timeout: 30000 });
  assert.equal(build.status, 0, `vite build: ${build.stdout}${build.stderr}`);
  assert.doesNotMatch(build.stdout + build.stderr, /wtproxy-whoami/, 'not even a warning: String() keeps it from the config bundle');
  assert.match(fs.readFileSync(path.join(dir, 'dist/index.html'), 'utf8'), /<footer>shop banner<\/footer>/, 'the app\'s plugin ran');
  const js = fs.readdirSync(path.join(dir, 'dist/assets')).filter((f) => f.endsWith('.js'));
  assert.ok(js.some((f) => fs.readFileSync(path.join(dir, 'dist/assets', f), 'utf8').includes('Shop front')), 'React app bundled');
  fs.rmSync(path.join(dir, 'dist'), { recursive: true });

  // (b) The package linked, as the note says: the daemon starts Vite from
  // the .wtproxy (under wtproxy run), and its /__whoami verifies it.
  linkWhoami(dir);
  const page = await curlFrom(dir, px.port, '/');
  assert.equal(page.status, 200, page.body);
  assert.match(page.body, /<div id="root"><\/div>/);
  assert.match(page.body, /<footer>shop banner<\/footer>/, 'the app\'s plugin kept');
  const app = await curlFrom(dir, px.port, '/src/App.jsx');
  assert.equal(app.status, 200, app.body);
  assert.match(app.body, /Shop front/);
  const who = await curlFrom(dir, px.port, '/__whoami');
  assert.equal(who.status, 200, who.body);
  assert.equal(JSON.parse(who.body).checkout, dir, 'the worktree\'s own server answers');
  const e = (await lsJson(tmp)).find((x) => x.worktree === dir);
  assert.equal(e?.whoami?.state, 'verified', JSON.stringify(e));
  const doc = await cli(tmp, ['doctor', '--json'], { cwd: dir });
  const checks = Object.fromEntries(JSON.parse(doc.stdout).checks.map((c) => [c.name, c]));
  assert.equal(checks.middleware.status, 'ok', JSON.stringify(checks.middleware));
  assert.equal(checks.whoami.status, 'ok', JSON.stringify(checks.whoami));

  // (c) Again: nothing to change, the config as it is.
  r = await init(tmp, dir, front);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^nothing to change$/m, r.stdout);
  assert.match(r.stdout, /^note: Vite: vite\.config\.js lists the \/__whoami plugin already \(wtproxyWhoami\)$/m);
  assert.equal(fs.readFileSync(path.join(dir, 'vite.config.js'), 'utf8'), config);
  sanitizerClean(assert, px.stderr());
});

// The names of the plugins Vite's own config loader finds in dir's
// config, each promise awaited as Vite does; env: WTPROXY_PORT or none.
function pluginNames(dir, env) {
  const script = `const { loadConfigFromFile } = await import(${JSON.stringify(viteApi)});
const r = await loadConfigFromFile({ command: 'serve', mode: 'development' }, undefined, process.cwd(), 'silent');
let ps = r.config.plugins || [];
while (ps.some((p) => p && (Array.isArray(p) || p.then))) ps = (await Promise.all(ps)).flat();
console.log(JSON.stringify(ps.map((p) => (p ? p.name : null))));
process.exit(0);`;
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, env: plainEnv(env), encoding: 'utf8', timeout: 20000 });
  assert.equal(out.status, 0, `${dir}: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop());
}

test('every config form init edits loads in Vite with and without wtproxy; a shape it cannot edit gets the line to paste', async (t) => {
  const tmp = { root: os.tmpdir(), control: path.join(os.tmpdir(), 'wtproxy-158-no-daemon.sock') };
  const pkg = (type) => JSON.stringify({ name: 'f', ...(type ? { type } : {}), devDependencies: { vite: '8' } }) + '\n';
  const forms = [
    { name: 'vite.config.js', type: 'module', text: "export default { server: { port: 5173 } };\n", own: [] },
    { name: 'vite.config.js', text: "import { defineConfig } from 'vite'\n\nexport default defineConfig({\n  plugins: [],\n})\n", own: [] },
    { name: null, own: [] },
    { name: 'vite.config.ts', text: `import { defineConfig } from 'vite';\nimport type { Plugin } from 'vite';\n\n${banner.replace('banner()', 'banner(): Plugin')}\nconst port: number = 5173;\nexport default defineConfig({\n  plugins: [\n    banner(), // the app's: ] } in a comment\n  ],\n  server: { port, proxy: { '/api': 'http://localhost:8001' } },\n});\n`, own: ['banner'] },
    { name: 'vite.config.mts', text: `${banner}\nexport default {\n\tplugins: [banner()]\n}\n`, own: ['banner'] },
    { name: 'vite.config.cjs', text: "const { defineConfig } = require('vite');\n\nmodule.exports = defineConfig({ plugins: [], base: '/a/' });\n", own: [] },
    { name: 'vite.config.cts', text: "module.exports = {\n  // a '{' and a \"[\" in a comment, a regex below\n  define: { RE: JSON.stringify(/[}\\]]/.source) },\n};\n", own: [] },
  ];
  for (const f of forms) {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-158-')));
    removeAfter(t, dir);
    writeFiles(dir, { 'package.json': pkg(f.type), 'index.html': '<h1>f</h1>\n', ...(f.name ? { [f.name]: f.text } : {}) });
    linkModules(dir);
    const what = `${f.name || 'no config'}${f.type ? ` (${f.type})` : ''}`;
    const r = await init(tmp, dir, [dir, '--apply']);
    assert.equal(r.code, 0, r.stderr);
    const written = f.name || 'vite.config.mjs';
    assert.match(r.stdout, new RegExp(`^wrote ${written.replace(/\./g, '\\.')}$`, 'm'), `${what}: ${r.stdout}`);
    assert.ok(fs.readFileSync(path.join(dir, written), 'utf8').includes(`${ENTRY},\n`), what);
    assert.deepEqual(pluginNames(dir, {}), [...f.own, null], `${what}: no wtproxy: the entry is null`);
    linkWhoami(dir);
    assert.deepEqual(pluginNames(dir, { WTPROXY_PORT: '18000' }), [...f.own, 'wtproxy-whoami'], `${what}: under wtproxy run`);
    const again = await init(tmp, dir, [dir]);
    assert.match(again.stdout, /^nothing to change$/m, `${what}: ${again.stdout}`);
  }

  // A config function: left alone, and its note's line, pasted, works.
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-158-')));
  removeAfter(t, dir);
  const fn = "import { defineConfig } from 'vite';\n\nexport default defineConfig(({ mode }) => ({\n  plugins: [],\n  base: mode === 'production' ? '/app/' : '/',\n}));\n";
  writeFiles(dir, { 'package.json': pkg('module'), 'vite.config.mjs': fn });
  linkModules(dir, { whoami: true });
  const r = await init(tmp, dir, [dir, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /^wrote vite/m, r.stdout);
  assert.equal(fs.readFileSync(path.join(dir, 'vite.config.mjs'), 'utf8'), fn, 'left as it is');
  const note = /^note: vite\.config\.mjs: it exports no object literal \(a function, a variable\), so init leaves it alone; add to its plugins by hand, as one entry: `([^`]*)`/m.exec(r.stdout);
  assert.ok(note, r.stdout);
  assert.equal(note[1], ENTRY);
  fs.writeFileSync(path.join(dir, 'vite.config.mjs'), fn.replace('plugins: []', `plugins: [${note[1]}]`));
  assert.deepEqual(pluginNames(dir, { WTPROXY_PORT: '18000' }), ['wtproxy-whoami']);
});
