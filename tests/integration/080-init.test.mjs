// 080: `wtproxy init` adopts wtproxy in an app's checkout. It detects the
// app (Django and its settings module; Node with vite, next, express or a
// plain node script; the Playwright config's recipe), prints exactly what
// it would change as a unified diff and changes nothing; --apply writes
// those changes and nothing else; a second run has nothing to change. It
// refuses a layout it does not know (exit 2, naming what it looked for),
// never overwrites a .wtproxy that differs from what it would write, and
// gives instructions instead of edits for a settings file whose
// MIDDLEWARE is built in code. Then the real thing: the e2e shop, adopted by
// `init --apply` alone, runs one round of its Playwright suites in three
// worktrees at once through wtproxy (servers started from the .wtproxy,
// the /__whoami gate verifying each) with every verdict right.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import http from 'node:http';
import { git, startDaemon, cli, lsJson, sanitizerClean, get, curlFrom } from './lib/registry.mjs';
import { python, pythonPath, pathWithPython3 } from './lib/whoami.mjs';
import { startPostgres } from './lib/pg.mjs';
import { nodeModules, playwright } from './lib/playwright.mjs';
import { repoRoot } from './lib/wtproxy.mjs';
import { BRANCHES, NAMES, e2eDir, killUnder, agentEnv, runSuite, classify, setupDatabases } from '../e2e/lib/shop.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const MIDDLEWARE = "'wtproxy_whoami.django.WhoamiMiddleware',";

function tempDir(t) {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-init-')));
  removeAfter(t, d);
  return d;
}

// A folder holding files ({relative path: text}).
function app(t, files) {
  const dir = tempDir(t);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

// `wtproxy init ARGS` (no daemon is involved).
async function init(dir, args = [], { cwd, env } = {}) {
  const tmp = { root: dir, control: path.join(dir, 'no-daemon.sock') };
  const r = await cli(tmp, ['init', ...args], { cwd: cwd || dir, env });
  sanitizerClean(assert, r.stderr);
  return r;
}

// Every file under dir with its text, .git left out.
function snapshot(dir) {
  const out = {};
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.name === '.git' || e.name === 'node_modules') continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out[path.relative(dir, p)] = fs.readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}

// The app's node_modules: the suite's packages (its Vite), and
// wtproxy-whoami linked, which init's Vite plugin entry loads under
// wtproxy run. A folder of its own: Vite writes its caches there.
function linkModules(dir) {
  const nm = path.join(dir, 'node_modules');
  fs.mkdirSync(nm);
  for (const e of fs.readdirSync(nodeModules))
    if (!e.startsWith('.') || e === '.bin') fs.symlinkSync(path.join(nodeModules, e), path.join(nm, e));
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(nm, 'wtproxy-whoami'));
}

const pkg = (deps, scripts = {}) => JSON.stringify({ name: 'x', scripts, dependencies: deps });

// A Vite + API repository whose package.json is at the top and whose Vite
// config is web/vite.config.mjs, named by the script's --config: init wrote
// a new vite.config.mjs at the top and a start without --config, a server
// of the top folder (404 at /) without the app's plugins and proxy.
test('a Vite config named by --config: init edits that one and keeps --config; the server serves the app, verified', async (t) => {
  const config = "export default {\n  root: 'web',\n  server: { proxy: { '/api': 'http://localhost:3001' } },\n};\n";
  const dir = app(t, {
    'package.json': JSON.stringify({ name: 'duo', type: 'module', devDependencies: { vite: '5' },
      scripts: { 'dev:api': 'node api/server.js', 'dev:web': 'vite --config web/vite.config.mjs --port 8490 --strictPort' } }),
    'web/vite.config.mjs': config,
    'web/index.html': '<h1>Duo web</h1>\n',
  });
  git(dir, 'init', '-q', '-b', 'main');
  const front = await freePort();
  let r = await init(dir, [dir, '--front', String(front), '--json']);
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.start, 'node_modules/.bin/vite --config web/vite.config.mjs --host 127.0.0.1 --port {port} --strictPort');
  assert.deepEqual(plan.changes.map((x) => [x.path, x.kind]), [['.wtproxy', 'new'], ['web/vite.config.mjs', 'edit']]);
  r = await init(dir, [dir, '--front', String(front), '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(fs.readFileSync(path.join(dir, 'web/vite.config.mjs'), 'utf8'), /wtproxyWhoami\(\)/);
  assert.ok(!fs.existsSync(path.join(dir, 'vite.config.mjs')), 'no second config at the top');
  linkModules(dir);
  const tmp = { root: dir, control: path.join(dir, 'ctl.sock'), state: path.join(dir, 'reg.json') };
  t.after(() => killUnder(dir));
  await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`]);
  const page = await curlFrom(dir, front, '/');
  assert.equal(page.status, 200, page.body);
  assert.match(page.body, /Duo web/, "Vite serves web/, as the app's own script does");
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
  // doctor reads the same config: its fixed API port is named
  r = await cli(tmp, ['doctor', '--json'], { cwd: dir });
  const proxy = JSON.parse(r.stdout).checks.find((c) => c.name === 'vite-proxy');
  assert.equal(proxy.status, 'problem', JSON.stringify(proxy));
  assert.ok(proxy.detail.startsWith('web/vite.config.mjs: its dev-server proxy sends to http://localhost:3001'), proxy.detail);
});

test('Node apps: vite, next, express, a plain node server; the url recipe edits webServer.command', async (t) => {
  const cases = [
    // No vite.config.*: a new one with the /__whoami plugin (158 runs it).
    { kind: 'vite', files: { 'package.json': pkg({ vite: '5' }, { dev: 'vite' }) }, start: 'node_modules/.bin/vite --host 127.0.0.1 --port {port} --strictPort',
      changes: [['.wtproxy', 'new'], ['vite.config.mjs', 'new']], note: /^vite\.config\.mjs loads 'wtproxy-whoami\/vite' under wtproxy run: link the package/ },
    // React Router's framework mode: its own dev command, with Vite's
    // flags (init wrote a plain vite, which its scripts never name).
    { kind: 'vite', files: { 'package.json': pkg({ vite: '6', 'react-router': '7', '@react-router/dev': '7' }, { dev: 'react-router dev' }) },
      start: 'node_modules/.bin/react-router dev --host 127.0.0.1 --port {port} --strictPort',
      changes: [['.wtproxy', 'new'], ['vite.config.mjs', 'new']], note: /^vite\.config\.mjs loads 'wtproxy-whoami\/vite' under wtproxy run: link the package/ },
    // Astro: no vite.config; its Vite plugins are astro.config's vite.plugins
    // (init refused the app: "unknown app layout").
    { kind: 'astro', files: { 'package.json': pkg({ astro: '5', '@astrojs/node': '9' }, { dev: 'astro dev' }),
      'astro.config.mjs': "import { defineConfig } from 'astro/config';\nimport node from '@astrojs/node';\n\nexport default defineConfig({\n  output: 'server',\n  adapter: node({ mode: 'standalone' }),\n});\n" },
      start: 'node_modules/.bin/astro dev --host 127.0.0.1 --port {port}',
      changes: [['.wtproxy', 'new'], ['astro.config.mjs', 'edit']],
      diff: /\n export default defineConfig\(\{\n\+  vite: \{\n\+    plugins: \[\n\+      \/\/ wtproxy: .*\n\+      process\.env\.WTPROXY_PORT \? import\(String\('wtproxy-whoami\/vite'\)\)\.then\(\(m\) => m\.wtproxyWhoami\(\)\) : null,\n\+    \],\n\+  \},\n   output: 'server',/,
      note: /^astro\.config\.mjs loads 'wtproxy-whoami\/vite' under wtproxy run: link the package/ },
    // No app/ folder (the Pages Router only): no route to write, a note.
    { kind: 'next', files: { 'package.json': pkg({ next: '14', react: '18' }, { dev: 'next dev' }) }, start: 'node_modules/.bin/next dev --hostname 127.0.0.1 --port {port}',
      note: /^Next: no app\/ nor src\/app\/ folder: the \/__whoami route is an App Router route handler/ },
    { kind: 'express', files: { 'package.json': pkg({ express: '4' }, { start: 'node server.js' }), 'server.js': '' }, start: 'node server.js' },
    { kind: 'node', files: { 'package.json': pkg({}, { dev: 'node app.mjs --quiet' }), 'app.mjs': '' }, start: 'node app.mjs --quiet' },
    // A TypeScript server under tsx (Fastify): init refused it; its
    // middleware lines name Fastify's, which has no app.use.
    { kind: 'node', files: { 'package.json': pkg({ fastify: '4', tsx: '4' }, { dev: 'tsx watch --clear-screen=false src/server.ts' }),
      'src/server.ts': "import Fastify from 'fastify';\n" },
    start: 'node_modules/.bin/tsx watch --clear-screen=false src/server.ts',
    note: /^Node: add the \/__whoami middleware by hand to src\/server\.ts \(wtproxy help whoami\), once at start: .*`Fastify\(\{ serverFactory: /m },
    // nodemon in scripts.dev, a plain node in scripts.start: init took the
    // start's, and the server no longer reloaded after an edit.
    { kind: 'express', files: { 'package.json': pkg({ express: '4', nodemon: '3' }, { dev: 'nodemon server.js', start: 'node server.js' }), 'server.js': '' },
      start: 'node_modules/.bin/nodemon server.js', note: /^Node: add the \/__whoami middleware by hand to server\.js \(wtproxy help whoami\)/m },
  ];
  for (const c of cases) {
    const dir = app(t, c.files);
    const r = await init(dir, [dir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout);
    assert.equal(plan.app, c.kind);
    assert.equal(plan.start, c.start);
    assert.equal(plan.front, 8000, 'no baseURL: the default front port');
    assert.equal(plan.playwright, null);
    assert.deepEqual(plan.changes.map((x) => [x.path, x.kind]), c.changes || [['.wtproxy', 'new']]);
    assert.match(plan.changes[0].diff, new RegExp(`^\\+start = ${c.start.replace(/[.{}]/g, '\\$&')}$`, 'm'));
    assert.ok(plan.notes.some((n) => (c.note || /add the \/__whoami middleware by hand/).test(n)), plan.notes.join('\n'));
    if (c.diff) assert.match(plan.changes[1].diff, c.diff);
    assert.deepEqual(snapshot(dir), c.files, 'without --apply nothing is written');
  }

  // A node:http server that imports the middleware already is not asked
  // for it again ("add it by hand" sent an agent to add it twice); one
  // that does not is given the node:http lines, not only Express's
  // app.use; both hear that each worktree needs node_modules/wtproxy-whoami.
  const nodeNotes = async (src) => JSON.parse((await init(app(t, { 'package.json': pkg({}, { dev: 'node --enable-source-maps server.mjs' }),
    'server.mjs': src }), ['.', '--json'])).stdout).notes;
  const has = await nodeNotes("import http from 'node:http';\nimport { whoami } from 'wtproxy-whoami';\n");
  assert.ok(has.includes('Node: server.mjs imports wtproxy-whoami already'), has.join('\n'));
  assert.ok(!has.some((n) => /by hand/.test(n)), has.join('\n'));
  const lacks = await nodeNotes("import http from 'node:http';\n");
  assert.ok(lacks.some((n) => /by hand .*const mw = whoami\(\);.*http\.createServer\(\(req, res\) => mw\(req, res, \(\) => handler\(req, res\)\)\)` \(node:http\)/.test(n)), lacks.join('\n'));
  // A CommonJS server (require, no import line): the import line was a
  // SyntaxError there; it gets require's line. A .js in a "type": "module"
  // package keeps the import.
  const cjsNotes = async (pkgExtra, src) => JSON.parse((await init(app(t, { 'package.json': JSON.stringify({ ...pkgExtra, scripts: { start: 'node server.js' }, dependencies: { express: '4' } }),
    'server.js': src }), ['.', '--json'])).stdout).notes;
  const cjs = await cjsNotes({}, "const express = require('express');\nconst app = express();\n");
  assert.ok(cjs.some((n) => n.includes("by hand to server.js (wtproxy help whoami), once at start: `const mw = process.env.WTPROXY_PORT ? require('wtproxy-whoami').whoami() : (req, res, next) => next();` (a CommonJS file, Node 20.19 or later; required under wtproxy run only, so that Jest, whose require cannot load an ES module, and CI need no wtproxy-whoami), then `app.use(mw)` first")), cjs.join('\n'));
  assert.ok(!cjs.some((n) => n.includes('import { whoami }')), cjs.join('\n'));
  const esm = await cjsNotes({ type: 'module' }, "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n");
  assert.ok(esm.some((n) => n.includes("once at start: `import { whoami } from 'wtproxy-whoami';")), esm.join('\n'));
  for (const notes of [has, lacks])
    assert.ok(notes.some((n) => /^Node: every worktree needs node_modules\/wtproxy-whoami .*wtproxy doctor, run in a worktree, prints the link/.test(n)), notes.join('\n'));

  // Next with an App Router: the route in src/app, a CommonJS next.config.js
  // left alone with the lines to write by hand, ready = /__whoami.
  const nextDir = app(t, { 'package.json': pkg({ next: '14' }, { dev: 'next dev' }), 'src/app/page.js': '',
    'next.config.js': 'module.exports = { reactStrictMode: true };\n' });
  const nextPlan = JSON.parse((await init(nextDir, [nextDir, '--json'])).stdout);
  assert.deepEqual(nextPlan.changes.map((x) => [x.path, x.kind]),
    [['.wtproxy', 'new'], ['src/app/%5F%5Fwhoami/route.js', 'new'], ['src/app/%5F%5Fwhoami/.gitignore', 'new']]);
  assert.match(nextPlan.changes[0].diff, /^\+ready = \/__whoami$/m);
  assert.match(nextPlan.changes[1].diff, /^\+export const dynamic = 'force-dynamic';$/m);
  assert.match(nextPlan.changes[1].diff, /^\+import stamp from '\.\/stamp\.js';$/m);
  assert.match(nextPlan.changes[2].diff, /^\+stamp\.js$/m);
  // A route init wrote before Turbopack's support (no stamp) is brought
  // up to date: under Turbopack it answers 501 until then.
  const oldRoute = "// wtproxy: answers GET /__whoami\nexport const dynamic = 'force-dynamic';\nexport function GET() {\n" +
    "  const whoami = globalThis[Symbol.for('wtproxy-whoami.next')];\n  if (whoami) return whoami.response();\n}\n";
  fs.mkdirSync(path.join(nextDir, 'src/app/%5F%5Fwhoami'));
  fs.writeFileSync(path.join(nextDir, 'src/app/%5F%5Fwhoami/route.js'), oldRoute);
  const upgrade = JSON.parse((await init(nextDir, [nextDir, '--json'])).stdout);
  const routeChange = upgrade.changes.find((x) => x.path === 'src/app/%5F%5Fwhoami/route.js');
  assert.equal(routeChange?.kind, 'edit', JSON.stringify(upgrade.changes));
  assert.match(routeChange.diff, /^-  if \(whoami\) return whoami\.response\(\);$/m);
  assert.match(routeChange.diff, /^\+  if \(whoami\) return whoami\.response\(\{ stamp \}\);$/m);
  assert.ok(nextPlan.notes.some((n) => /^next\.config\.js: not an ES module init can edit; wrap its config by hand: `import \{ withWtproxyWhoami \} from 'wtproxy-whoami\/next'`/.test(n)),
    nextPlan.notes.join('\n'));

  // A Vite app with a Playwright config of recipe url: the diff, --apply, again.
  const config = "import { defineConfig } from '@playwright/test';\n" +
    "// the dev server's port is fixed: 'npm run dev' listens on 5173\n" +
    'export default defineConfig({\n' +
    "  use: { baseURL: 'http://localhost:5173' },\n" +
    '  webServer: {\n' +
    "    command: 'npm run dev',\n" +
    "    url: 'http://localhost:5173/',\n" +
    '    reuseExistingServer: !process.env.CI,\n' +
    '  },\n' +
    '});\n';
  const dir = app(t, { 'package.json': pkg({ vite: '5' }, { dev: 'vite' }), 'playwright.config.ts': config });
  const before = snapshot(dir);
  let r = await init(dir, [dir]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wtproxy init: .*: vite app, front port 5173$/m, 'front from the baseURL');
  assert.match(r.stdout, /^Playwright: playwright\.config\.ts, recipe "url"$/m);
  assert.match(r.stdout, /^--- a\/playwright\.config\.ts\n\+\+\+ b\/playwright\.config\.ts\n@@ .* @@\n/m);
  assert.match(r.stdout, /^-    command: 'npm run dev',\n\+    \/\/ wtproxy: .*do not simplify\n\+    command: 'wtproxy run --front 5173 -- node_modules\/\.bin\/vite --host 127\.0\.0\.1 --port \{port\} --strictPort',$/m,
    'the url recipe registers on the front its url names, not on the default 8000');
  assert.match(r.stdout, /^\+front = 5173$/m);
  assert.ok(r.stdout.includes(`\nrun \`wtproxy init ${dir} --apply\` to write these changes\n`), 'the DIR given, in the command to paste');
  assert.deepEqual(snapshot(dir), before);
  r = await init(dir, [dir, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wrote \.wtproxy\nwrote vite\.config\.mjs\nwrote playwright\.config\.ts$/m);
  const after = snapshot(dir);
  assert.deepEqual(Object.keys(after).sort(), ['.wtproxy', 'package.json', 'playwright.config.ts', 'vite.config.mjs']);
  assert.equal(after['package.json'], before['package.json'], '--apply writes nothing else');
  // and wtproxy's reporter, guarded by the config's module system (a .ts
  // config of a package without "type": "module": CommonJS)
  const reporter = "  reporter: [[process.env.CI ? 'dot' : 'list'], ...(() => { try { require.resolve('wtproxy-whoami/playwright'); " +
    "return [['wtproxy-whoami/playwright']]; } catch { return []; } })()],\n";
  assert.ok(after['playwright.config.ts'].includes(reporter), after['playwright.config.ts']);
  assert.equal(after['playwright.config.ts'].replace(/ *\/\/ wtproxy: .*\n/g, '').replace(reporter, '')
    .replace(/'wtproxy run --front 5173 -- [^']*'/, "'npm run dev'"), config,
    'the config changed in those lines only');
  r = await init(dir, [dir, '--apply']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^nothing to change$/m);
  assert.deepEqual(snapshot(dir), after, 'a second --apply changes nothing');

  // Recipe port: the config stays as it is; the .wtproxy starts the server.
  const portDir = app(t, { 'package.json': pkg({ vite: '5' }), 'playwright.config.mjs':
    "export default { webServer: { command: 'npm run dev', port: 3000, reuseExistingServer: true } };\n" });
  r = await init(portDir, [portDir, '--json']);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.recipe, 'port');
  assert.equal(plan.front, 8000);
  assert.deepEqual(plan.changes.map((x) => x.path), ['.wtproxy', 'vite.config.mjs', 'playwright.config.mjs']);
  assert.match(plan.changes[2].diff, /^\+export default \{ reporter: \[\[process\.env\.CI \? 'dot' : 'list'\], \.\.\.\(\(\) => \{ try \{ import\.meta\.resolve\('wtproxy-whoami\/playwright'\);/m,
    'its reporter only, resolved as an ES module does');
  assert.ok(plan.notes.some((n) => /recipe "port": left as it is/.test(n)));
});

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

test('a webServer array (a Vite front end and its node API): one service each, and the front end reaches its own API', async (t) => {
  const [web, api] = [await freePort(), await freePort()];
  const config = "import { defineConfig } from '@playwright/test';\n" +
    'export default defineConfig({\n' +
    `  use: { baseURL: 'http://localhost:${web}' },\n` +
    '  webServer: [\n' +
    `    { command: 'node api.mjs', url: 'http://localhost:${api}/api/health', reuseExistingServer: true },\n` +
    `    { command: 'npx vite', url: 'http://localhost:${web}', reuseExistingServer: true },\n` +
    '  ],\n' +
    '});\n';
  const dir = app(t, {
    'package.json': pkg({ vite: '*' }, { dev: 'vite' }),
    'playwright.config.js': config,
    // The API answers with the checkout it runs in, on $PORT.
    'api.mjs': "import http from 'node:http';\nhttp.createServer((q, s) => s.end(JSON.stringify({ cwd: process.cwd(), url: q.url })))" +
      ".listen(Number(process.env.PORT), '127.0.0.1');\n",
    'vite.config.mjs': "export default { server: { proxy: { '/api': `http://localhost:${process.env.WTPROXY_FRONT_API}` } } };\n",
    'index.html': '<h1>web</h1>\n',
  });
  let r = await init(dir, [dir, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.recipe, 'port', 'one `wtproxy run` runs one server: the services start both');
  assert.deepEqual(plan.changes.map((x) => x.path), ['.wtproxy', 'vite.config.mjs', 'playwright.config.js'],
    'the Playwright config gets the reporter only');
  assert.match(plan.changes[2].diff, /^\+  reporter: \[\[process\.env\.CI \? 'dot' : 'list'\], \.\.\./m);
  assert.equal(plan.changes[2].diff.split('\n').filter((l) => /^[-+](?![-+])/.test(l)).length, 2, `the comment and the reporter: ${plan.changes[2].diff}`);
  assert.match(plan.changes[0].diff, new RegExp(`^\\+\\[service api\\]\\n\\+start = node api\\.mjs\\n\\+front = ${api}\\n\\+ready = /api/health\\n`, 'm'));
  assert.match(plan.changes[0].diff, new RegExp(`^\\+\\[service web\\]\\n\\+start = node_modules/\\.bin/vite .*\\n\\+front = ${web}\\n\\+after = api$`, 'm'));
  assert.ok(plan.notes.includes(`playwright.config.js starts 2 servers: each is a service of the .wtproxy, and the daemon must own every front: wtproxy serve --listen ${web} --listen ${api}`), plan.notes.join('\n'));
  // The API answers no /__whoami: said, with the lines, or every request
  // to it (Playwright's readiness check first) is refused 502 no-whoami.
  assert.match(plan.notes.join('\n'), /^service api: add the \/__whoami middleware by hand to api\.mjs \(wtproxy help whoami\), once at start: .*\(node:http\), or .*\(Fastify, which has no app\.use; Hono on Node alike, .*\)\); without it wtproxy refuses the server \(502 no-whoami\)$/m);
  // `npm run api` is its script's `node FILE`, one that has the middleware
  // already; a server of another kind is told to answer /__whoami.
  const other = await freePort();
  const npmDir = app(t, {
    'package.json': pkg({ vite: '*' }, { dev: 'vite', api: 'node api/server.mjs' }),
    'playwright.config.js': config.replace("command: 'node api.mjs'", "command: 'npm run api'")
      .replace('  ],', `    { command: 'python3 -m http.server', url: 'http://localhost:${other}/static' },\n  ],`),
    'api/server.mjs': "import { whoami } from 'wtproxy-whoami';\n",
  });
  r = await init(npmDir, [npmDir, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const notes = JSON.parse(r.stdout).notes;
  assert.ok(notes.includes('service api: `npm run api` runs `node api/server.mjs`: api/server.mjs imports wtproxy-whoami already'), notes.join('\n'));
  assert.ok(notes.includes('service static: `python3 -m http.server` must answer GET /__whoami (the middleware of its kind: wtproxy help whoami); until it does, wtproxy refuses its requests (502 no-whoami)'), notes.join('\n'));
  r = await init(dir, [dir, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fs.readFileSync(path.join(dir, 'playwright.config.js'), 'utf8').replace(/^ *\/\/ wtproxy: .*\n *reporter: .*\n/m, ''), config);

  // The adopted app, as the note says to serve it: the web front's /api
  // goes through Vite's proxy to the API front, and reaches this
  // checkout's API, which the daemon started first.
  linkModules(dir);
  git(dir, 'init', '-q', '-b', 'main');
  const tmp = { root: dir, control: path.join(dir, 'ctl.sock'), state: path.join(dir, 'reg.json') };
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${web}`, '--listen', `127.0.0.1:${api}`, '--whoami', 'off'], { listeners: 2 });
  const res = await get(px.port, { 'X-Wtproxy-Worktree': dir }, '/api/health');
  assert.equal(res.status, 200, res.body);
  assert.deepEqual(JSON.parse(res.body), { cwd: dir, url: '/api/health' });
  const ls = await lsJson(tmp);
  const services = (Array.isArray(ls) ? ls : ls.entries).map((e) => [e.service, e.front]).sort();
  assert.deepEqual(services, [['api', api], ['web', web]]);
});

// An Express user ran `wtproxy init --front 8600 --apply` on a config
// whose baseURL and webServer.url name 3000: the command ran on 8600 and
// the tests kept going to 3000, outside wtproxy; doctor's fix then put the
// command back on 3000. init says so, with the line to write.
test('init --front on a config whose tests go to another port: a note names the lines to write', async (t) => {
  const dir = app(t, {
    'package.json': pkg({ express: '4' }, { start: 'node server.js' }), 'server.js': '',
    'playwright.config.js': "module.exports = {\n  use: { baseURL: 'http://localhost:3000' },\n" +
      "  webServer: { command: 'node server.js', url: 'http://localhost:3000', reuseExistingServer: true },\n};\n",
  });
  const r = await init(dir, [dir, '--front', '8600', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const notes = JSON.parse(r.stdout).notes;
  assert.ok(notes.includes('playwright.config.js: its baseURL names port 3000, not the front 8600: the tests would go to 3000, outside wtproxy; write http://localhost:8600 there (baseURL and webServer.url)'), notes.join('\n'));
  const same = await init(dir, [dir, '--json']);
  assert.ok(!JSON.parse(same.stdout).notes.some((n) => /not the front/.test(n)), "no --front: the config's port is the front");
});

// An Express user with the config init wrote: no daemon (stopped), and a
// server started by hand on the front (another worktree's code) answered
// Playwright's reuse check and its tests: `3 passed` on that code, exit 0.
// init now adds wtproxy's reporter, which fails such a run; where
// wtproxy-whoami is not linked (a CI), the config loads and runs as before.
test('init\'s Playwright config: a run no daemon answered fails where wtproxy-whoami is linked, and runs as before where not', async (t) => {
  const front = await freePort();
  const dir = app(t, {
    'package.json': pkg({ express: '4' }, { dev: 'node server.js' }),
    'server.js': '',
    'playwright.config.js': "const { defineConfig } = require('@playwright/test');\nmodule.exports = defineConfig({\n" +
      `  testDir: 'e2e',\n  webServer: { command: 'node server.js', url: 'http://localhost:${front}', reuseExistingServer: true },\n});\n`,
    'e2e/greet.spec.js': "const { test, expect } = require('@playwright/test');\n" +
      `test('greets', async ({ request }) => { expect(await (await request.get('http://localhost:${front}/')).text()).toBe('v1'); });\n`,
  });
  git(dir, 'init', '-q', '-b', 'main');
  const r = await init(dir, [dir, '--front', String(front), '--apply']);
  assert.equal(r.code, 0, r.stderr);
  linkModules(dir); // the suite's Playwright, and wtproxy-whoami linked
  const nm = path.join(dir, 'node_modules');
  // another worktree's server, started by hand on the front
  const other = http.createServer((q, s) => s.end('v1'));
  await new Promise((res) => other.listen(front, '127.0.0.1', res));
  t.after(() => other.close());
  const env = { WTPROXY_BIN: wtproxyBin, WTPROXY_CONTROL: path.join(dir, 'none.sock'), WTPROXY_NO_AUTOSTART: '1' };
  const run = await playwright(t, dir, { env, label: '080' });
  assert.notEqual(run.code, 0, `the run passed on whatever answered:\n${run.out}`);
  assert.match(run.out, /1 passed/);
  assert.match(run.out, /no wtproxy daemon answered .*this run fails: its verdict is on whatever code answered/);
  fs.rmSync(path.join(nm, 'wtproxy-whoami'));
  const ci = await playwright(t, dir, { env, label: '080' });
  assert.equal(ci.code, 0, `without the package the config loads as before:\n${ci.out}`);
  assert.doesNotMatch(ci.out, /wtproxy-whoami/);
});

test('unknown layouts are refused; a different .wtproxy and an unparsable settings file are left alone', async (t) => {
  const empty = app(t, { 'README.md': 'hello\n' });
  let r = await init(empty, [empty]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown app layout: .* holds neither manage\.py \(Django\), package\.json \(Node: next, @nestjs\/core, vite, express or a `node` script in scripts\.dev\/start\), main\.py, app\.py or app\/main\.py assigning at its top level `app = FastAPI\(`, `app = Starlette\(` or `app = Flask\(`, nor a config\.ru \(Rack: Sinatra, Rails\.\.\.\)\. Nothing was changed\. Write the \.wtproxy by hand \(wtproxy help wtproxy-file > \S+\/\.wtproxy, then edit its start\) and have the server answer \/__whoami \(wtproxy help whoami: the middlewares; wtproxy help whoami-protocol: any other server\)$/m);
  const bare = app(t, { 'package.json': pkg({ react: '18' }, { start: 'react-scripts start' }) });
  r = await init(bare, [bare]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /package\.json has none of the dependencies next, @nestjs\/core, vite, nor a `node FILE`, `tsx FILE` or `nodemon FILE` command in scripts\.dev or scripts\.start; nor .*, nor a config\.ru \(Rack\)/);
  // A .wtproxy written by hand (a webpack user's, working): the refusal
  // told them to write one over it with `wtproxy help wtproxy-file >`.
  fs.writeFileSync(path.join(bare, '.wtproxy'), 'start = node_modules/.bin/webpack serve --port {port}\nfront = 8560\n');
  r = await init(bare, [bare]);
  assert.equal(r.code, 2);
  assert.doesNotMatch(r.stderr, /wtproxy help wtproxy-file >/, r.stderr);
  assert.match(r.stderr, /Its \.wtproxy, written by hand, stays as it is: wtproxy doctor checks it/);
  const noSettings = app(t, { 'manage.py': 'import django\n' });
  r = await init(noSettings, [noSettings]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /manage\.py names no settings module: looked for os\.environ\.setdefault\('DJANGO_SETTINGS_MODULE'/);
  assert.deepEqual(Object.keys(snapshot(noSettings)), ['manage.py']);

  // Django with MIDDLEWARE built in code and a .wtproxy of its own.
  const files = {
    'manage.py': "import os\nos.environ.setdefault(\"DJANGO_SETTINGS_MODULE\", \"site_cfg.settings\")\n",
    'site_cfg/settings.py': "MIDDLEWARE = list(BASE_MIDDLEWARE)\nDATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3'}}\n",
    '.wtproxy': 'start = ./run-dev {port}\n',
  };
  const dj = app(t, files);
  r = await init(dj, [dj, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^note: \.wtproxy: already there with other content; left as it is/m);
  assert.match(r.stdout, /^note: site_cfg\/settings\.py: MIDDLEWARE is not assigned a literal list \(`MIDDLEWARE = \[\.\.\.\]` at the start of a line\); add 'wtproxy_whoami\.django\.WhoamiMiddleware' as its FIRST entry by hand$/m);
  assert.match(r.stdout, /^note: databases: off: the settings name no PostgreSQL ENGINE \(--databases adds the claims\)$/m);
  assert.match(r.stdout, /^nothing to change$/m);
  assert.deepEqual(snapshot(dj), files, 'nothing was overwritten');

  // --databases asks for the DB edits on SQLite too: appended after DATABASES.
  r = await init(dj, [dj, '--databases']);
  assert.match(r.stdout, /^\+TEST_RUNNER = "wtproxy_whoami\.django_db\.ClaimingTestRunner"\n\+# wtproxy: .*\n\+from wtproxy_whoami\.django_db import claimed_databases  # noqa: E402\n\+DATABASES = claimed_databases\(DATABASES\)$/m);
  assert.match(r.stdout, /^note: databases: on: asked by --databases$/m);
  // Settings that wrap DATABASES already, as `wtproxy help django-tests`
  // shows (claimed_databases({...}) at the assignment): not wrapped again.
  const claimedFiles = { ...files, 'site_cfg/settings.py': "MIDDLEWARE = list(BASE_MIDDLEWARE)\n" +
    'from wtproxy_whoami.django_db import claimed_databases\n' +
    "DATABASES = claimed_databases({'default': {'ENGINE': 'django.db.backends.postgresql', 'NAME': 'shop'}})\n" };
  const claimedDir = app(t, claimedFiles);
  r = await init(claimedDir, [claimedDir]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\+TEST_RUNNER = /m, 'the runner it lacks is added');
  assert.doesNotMatch(r.stdout, /^\+DATABASES = claimed_databases\(DATABASES\)$/m, r.stdout);
  r = await init(dj, [dj, '--recipe', 'nope']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--recipe is url or port/);
});

// A team's app as it was: Vite at the top (scripts.dev `vite web`: its
// root is web/), Django in api/,
// a Playwright config with a baseURL and no webServer. Every command init
// prints works as pasted; no note tells them to edit a webServer they do
// not have; no .wtproxy is written where the daemon never reads one; and
// the dev database the settings will name is one `wtproxy db claim` away.
test('an app in two folders, a Playwright config without webServer: what init prints, pasted', async (t) => {
  const settings = "MIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\n" +
    "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': BASE_DIR / 'db.sqlite3'}}\n" +
    "DATABASES = {\n    'default': {\n        'ENGINE': 'django.db.backends.postgresql',\n" +
    "        'NAME': os.environ.get('APP_DB_NAME', 'shop'),\n    }\n}\n";
  const dir = app(t, {
    'package.json': JSON.stringify({ name: 'shop', scripts: { dev: 'vite web' }, devDependencies: { vite: '7' } }),
    'playwright.config.js': "export default { use: { baseURL: 'http://localhost:23804' } };\n",
    'web/index.html': '<h1>Shop</h1>\n',
    'api/manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'api_project.settings')\n",
    'api/api_project/settings.py': settings,
  });
  git(dir, 'init', '-q', '-b', 'main');
  let r = await init(dir, [], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Playwright: playwright\.config\.js, recipe "port"$/m, 'no webServer: nothing to run through wtproxy run');
  assert.match(r.stdout, /^\+start = node_modules\/\.bin\/vite web --host 127\.0\.0\.1 --port \{port\} --strictPort$/m,
    'vite serves the root scripts.dev gives it, whose vite.config.js the team edits');
  assert.doesNotMatch(r.stdout, /webServer\.command is not a plain string|reuseExistingServer/, r.stdout);
  assert.match(r.stdout, /^run `wtproxy init --apply` to write these changes$/m, 'no DIR given: none in the command');
  const api = path.join(dir, 'api');
  assert.ok(r.stdout.includes(`\nnote: api/ holds a django app (wtproxy init ${api}): a server of its own`),
    `the API the top folder does not show: ${r.stdout}`);
  const noTop = app(t, { 'api/manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'api_project.settings')\n",
    'api/api_project/settings.py': settings });
  const refused = await init(noTop, [noTop]);
  assert.equal(refused.code, 2);
  assert.ok(refused.stderr.startsWith(`wtproxy init: ${noTop}: run wtproxy init api --apply (api/ holds a django app): `), refused.stderr);

  r = await init(dir, ['api'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^note: no \\.wtproxy written in ${api}: the daemon reads a worktree's \\.wtproxy at its top folder only; add this server to ${dir}/\\.wtproxy as a section .*start = cd api && `, 'm'));
  assert.match(r.stdout, /^note: databases: the dev server then runs on this worktree's own database \(shop_<machine>_<worktree>\), .*: wtproxy db claim --dev shop /m);
  const line = /^run `(wtproxy init [^`]*)` to write these changes$/m.exec(r.stdout);
  assert.ok(line, r.stdout);
  assert.equal(line[1], `wtproxy init ${api} --apply`, 'the DIR given, so that pasted it applies this plan');
  const before = snapshot(dir);
  r = await init(dir, line[1].split(' ').slice(2), { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const after = snapshot(dir);
  assert.deepEqual(Object.keys(after).sort(), Object.keys(before).sort(), 'no .wtproxy in api/ nor at the top');
  assert.ok(after['api/api_project/settings.py'].includes(MIDDLEWARE), 'the settings of api/ were edited');
  assert.equal(after['package.json'], before['package.json']);
});

// A database NAME computed at run time (a shared machine: one name per
// user): init guesses no base from its pieces, whose claim would make a
// database the settings never name ('shop_' of "shop_" + getpass.getuser()).
test('a computed database NAME: no base guessed from a piece of it', async (t) => {
  const settings = (name) => "MIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\n" +
    "DATABASES = {\n    'default': {\n        'ENGINE': 'django.db.backends.postgresql',\n" +
    `        'NAME': ${name},\n    }\n}\n`;
  for (const name of ['os.environ.get("SHOP_DB", "shop_" + getpass.getuser())', '"shop_%s" % getpass.getuser()', 'f"shop_{USER}"']) {
    const dir = app(t, { 'manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'shop.settings')\n",
      'shop/settings.py': settings(name) });
    const r = await init(dir, [dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^note: databases: .*wtproxy db claim --dev NAME /m, `${name}:\n${r.stdout}`);
    assert.doesNotMatch(r.stdout, /--dev shop/, r.stdout);
  }
  const plain = app(t, { 'manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'shop.settings')\n",
    'shop/settings.py': settings("os.getenv('SHOP_DB', 'shop')") });
  const r = await init(plain, [plain]);
  assert.match(r.stdout, /^note: databases: .*wtproxy db claim --dev shop /m, 'a getenv\'s literal default is the base');
});

// A team's app as adopted on main: Vite at the top (root web/, whose
// vite.config.js lists the /__whoami plugin and proxies /api to the API's
// front), Django in api/, three worktrees. init must not ask for the
// plugin that is there, must propose the front the front end calls the
// API on, and in a linked worktree must not ask to merge a .wtproxy the
// main checkout has already.
test('an adopted two-folder app: the Vite plugin already there, the API front from the proxy, a linked worktree with main\'s .wtproxy', async (t) => {
  const dir = app(t, {
    'package.json': JSON.stringify({ name: 'shop', scripts: { dev: 'vite web' }, devDependencies: { vite: '7' } }),
    'playwright.config.js': "export default { use: { baseURL: 'http://localhost:23804' } };\n",
    'web/index.html': '<h1>Shop</h1>\n',
    'web/vite.config.js': "import { wtproxyWhoami } from 'wtproxy-whoami/vite';\n\nexport default {\n" +
      "  plugins: [wtproxyWhoami()],\n  server: { proxy: { '/api': 'http://localhost:23805' } },\n};\n",
    'api/manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'api_project.settings')\n",
    'api/api_project/settings.py': "MIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\n",
  });
  git(dir, 'init', '-q', '-b', 'main');
  let r = await init(dir, ['--apply'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /add the \/__whoami middleware by hand/, 'the plugin is in web/vite.config.js');
  assert.match(r.stdout, /^note: Vite: web\/vite\.config\.js lists the \/__whoami plugin already \(wtproxyWhoami\)$/m);

  r = await init(dir, ['api'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wtproxy init: .*\/api: django app .*, front port 23805$/m, 'the port web/ proxies /api to');
  assert.match(r.stdout, /^note: front 23805: web\/vite\.config\.js's dev-server proxy sends to http:\/\/localhost:23805, /m);
  assert.match(r.stdout, /front = 23805$/m, 'the section to add names it');

  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'adopt wtproxy');
  const wt = path.join(dir, '..', `${path.basename(dir)}-wt-b`);
  removeAfter(t, wt);
  git(dir, 'worktree', 'add', '-q', wt, '-b', 'b');
  r = await init(wt, [], { cwd: wt });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^note: this is a linked worktree, and the main checkout \\(${dir}\\) has the same \\.wtproxy already: worktrees made from its branch have it too, nothing to merge$`, 'm'));
  assert.doesNotMatch(r.stdout, /merge it into the main branch/, 'main has it: nothing to merge');
  fs.appendFileSync(path.join(wt, '.wtproxy'), 'idle_stop = 10m\n');
  r = await init(wt, [], { cwd: wt });
  assert.match(r.stdout, /^note: this is a linked worktree: the \.wtproxy serves it now; commit it and merge it into the main branch/m,
    'a .wtproxy that differs from main\'s is still to be merged');
});

// The walk's order, with real servers: init at the top (Vite) writes a
// .wtproxy of one unnamed service, then `init api` (Django). A section
// pasted under that service makes the daemon refuse the whole file (keys
// outside sections in a file with sections), so init shows the whole new
// top file as one diff: that service made [service web], its keys kept,
// and [service api] added; --apply, pasted as printed, writes it, and a
// second run leaves it alone. Then doctor says it is fine, and the
// daemon starts each server on a request from the worktree on its front:
// Vite's page on one, Django on the other, and Vite's /api proxy reaches
// this worktree's Django through the API's front.
test('top Vite then `init api`: the top .wtproxy becomes two sections, each front starting its own server', async (t) => {
  const [web, api] = [await freePort(), await freePort()];
  const dir = app(t, {
    'package.json': JSON.stringify({ name: 'shop', scripts: { dev: 'vite web' }, devDependencies: { vite: '8' } }),
    'web/index.html': '<h1>Shop front</h1>\n',
    'web/vite.config.js': `export default { server: { proxy: { '/api': 'http://localhost:${api}' } } };\n`,
    'api/manage.py': "import os, sys\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'api_project.settings')\n" +
      'from django.core.management import execute_from_command_line\nexecute_from_command_line(sys.argv)\n',
    'api/api_project/__init__.py': '',
    'api/api_project/settings.py': "SECRET_KEY = 'test-only'\nDEBUG = True\nALLOWED_HOSTS = ['*']\nINSTALLED_APPS = []\n" +
      "MIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\nROOT_URLCONF = 'api_project.urls'\nDATABASES = {}\n",
    'api/api_project/urls.py': 'import os\nfrom django.http import JsonResponse\nfrom django.urls import path\n' +
      "urlpatterns = [path('api/health', lambda request: JsonResponse({'server': 'django', 'cwd': os.getcwd()}))]\n",
  });
  linkModules(dir);
  fs.mkdirSync(path.join(dir, 'api/.venv/bin'), { recursive: true });
  fs.symlinkSync(python, path.join(dir, 'api/.venv/bin/python')); // Debian's, with Django
  git(dir, 'init', '-q', '-b', 'main');
  let r = await init(dir, ['--front', String(web), '--apply'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const top = fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8');
  assert.doesNotMatch(top, /^\[service/m, 'one server: no section');

  r = await init(dir, ['api'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const start = '.venv/bin/python manage.py runserver 127.0.0.1:{port}';
  const want = top.replace(/^start = /m, '[service web]\nstart = ') +
    `\n[service api]\nstart = cd api && ${start}\nfront = ${api}\n`;
  const diff = /^--- a\/\.\.\/\.wtproxy\n\+\+\+ b\/\.\.\/\.wtproxy\n(?:[-+ @].*\n)*/m.exec(r.stdout);
  assert.ok(diff, `one diff of the top .wtproxy: ${r.stdout}`);
  assert.match(diff[0], /^\+\[service web\]\n start = node_modules\/\.bin\/vite web /m, 'named for what it runs, its keys kept');
  assert.doesNotMatch(diff[0], /^\+after/m, 'each starts on a request on its own front: no after');
  assert.match(r.stdout, /^note: .*\/\.wtproxy declared one server without a section: it becomes \[service web\]/m);
  assert.ok(r.stdout.includes(`wtproxy serve --listen ${web} --listen ${api}`), r.stdout);
  const line = /^run `(wtproxy init [^`]*)` to write these changes$/m.exec(r.stdout);
  assert.ok(line, r.stdout);
  r = await init(dir, line[1].split(' ').slice(2), { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8'), want, 'the file the diff showed');
  assert.ok(!fs.existsSync(path.join(dir, 'api/.wtproxy')), 'none where the daemon never reads it');
  r = await init(dir, ['api'], { cwd: dir });
  assert.match(r.stdout, /^nothing to change$/m, 'a second run');
  assert.ok(r.stdout.includes(`note: ${dir}/.wtproxy declares this server already ([service api], front ${api}): nothing to add`), r.stdout);

  const tmp = { root: dir, control: path.join(dir, 'ctl.sock'), state: path.join(dir, 'reg.json') };
  t.after(() => killUnder(dir)); // the servers the daemon started, if still up
  await startDaemon(t, tmp, ['--listen', `127.0.0.1:${web}`, '--listen', `127.0.0.1:${api}`, '--whoami', 'off'],
    { listeners: 2, env: { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' } });
  r = await cli(tmp, ['doctor', '--json'], { cwd: dir });
  const checks = Object.fromEntries(JSON.parse(r.stdout).checks.map((c) => [c.name, c]));
  assert.equal(checks.daemon.status, 'ok', JSON.stringify(checks.daemon));
  assert.equal(checks.server.status, 'ok', JSON.stringify(checks.server));
  const page = await curlFrom(dir, web, '/');
  assert.equal(page.status, 200, page.body);
  assert.match(page.body, /Shop front/, 'Vite serves web/ on its front');
  const django = { server: 'django', cwd: path.join(dir, 'api') };
  const health = await curlFrom(dir, api, '/api/health');
  assert.equal(health.status, 200, health.body);
  assert.deepEqual(JSON.parse(health.body), django, 'Django, started in api/, on its front');
  const proxied = await curlFrom(dir, web, '/api/health');
  assert.deepEqual(JSON.parse(proxied.body), django, 'Vite\'s /api proxy reaches this worktree\'s Django');
  const ls = await lsJson(tmp);
  const services = (Array.isArray(ls) ? ls : ls.entries).map((e) => [e.service, e.front]).sort();
  assert.deepEqual(services, [['api', api], ['web', web]]);
});

// The top .wtproxy as a subfolder's init finds it otherwise: with
// sections already, the new one is appended; a section of its name, or a
// service on its front, or a file the daemon refuses, is said, with what
// to do, and nothing is changed.
test('init of a subfolder: a top .wtproxy with sections gets one more; a name or front in the way, or a refused file, is said and left', async (t) => {
  const sections = '[service web]\nstart = node server.mjs\nfront = 23810\n';
  const dir = app(t, {
    '.wtproxy': sections,
    'api/manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'api_project.settings')\n",
    'api/api_project/settings.py': "MIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\n",
  });
  git(dir, 'init', '-q', '-b', 'main');
  const api = path.join(dir, 'api');
  // A python3 that imports Django first on PATH: init writes python3.
  const env = { PATH: pathWithPython3(t, '/usr/bin/python3') };
  let r = await init(dir, ['api', '--front', '23811', '--apply'], { cwd: dir, env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8'),
    `${sections}\n[service api]\nstart = cd api && python3 manage.py runserver 127.0.0.1:{port}\nfront = 23811\n`);

  const cases = [
    { file: '[service api]\nstart = node other.mjs\nfront = 23812\n',
      note: `note: ${dir}/.wtproxy has a [service api] already, started by \`node other.mjs\`: this server is not added; rename that section, or add one by hand: start = cd api && ` },
    { file: sections,
      args: ['--front', '23810'],
      note: `note: ${dir}/.wtproxy: service web serves front 23810 already, and a front routes to one service: give this server its own front: wtproxy init ${api} --front 23811` },
    { file: 'start = node server.mjs\nfront = 23810\nport = 1\n',
      note: `note: the top .wtproxy is left as it is: ${dir}/.wtproxy:3: bad or unknown \`port\`` },
  ];
  for (const c of cases) {
    fs.writeFileSync(path.join(dir, '.wtproxy'), c.file);
    r = await init(dir, ['api', ...(c.args || [])], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(c.note), r.stdout);
    assert.doesNotMatch(r.stdout, /^--- a\/\.\.\/\.wtproxy/m, 'no edit of the top file');
  }
});

test('Django whose Playwright config names its interpreter and a port other than 8000: both kept', async (t) => {
  // As `django-admin startproject` and a hand-written config leave them:
  // the python3 on PATH may lack Django (pyenv), so the config names
  // /usr/bin/python3; the app is tested on 18000.
  const dir = app(t, {
    'manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'shop.settings')\n",
    'shop/settings.py': "MIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\n",
    'playwright.config.js': "module.exports = {\n  webServer: {\n" +
      "    command: '/usr/bin/python3 manage.py runserver 18000',\n" +
      "    url: 'http://localhost:18000/',\n    reuseExistingServer: true,\n  },\n" +
      "  use: { baseURL: 'http://localhost:18000' },\n};\n",
  });
  const r = await init(dir, [dir, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.start, '/usr/bin/python3 manage.py runserver 127.0.0.1:{port}', 'the interpreter the config names');
  assert.equal(plan.front, 18000);
  const diff = plan.changes.find((c) => c.path === 'playwright.config.js').diff;
  assert.match(diff, /^\+    command: 'wtproxy run --front 18000 -- \/usr\/bin\/python3 manage\.py runserver 127\.0\.0\.1:\{port\}',$/m,
    'registered on the front its url names');
  assert.ok(!plan.notes.some((n) => /runs python3 from the daemon's PATH/.test(n)), plan.notes.join('\n'));
});

// A Django + gunicorn user's app (explore-gun, findings 3 and 7): the
// team's server is gunicorn, named by path in the Playwright config, and
// its settings list MIDDLEWARE on one line. init proposed `python3
// manage.py runserver` in place of gunicorn (the pyenv python3 on PATH
// has no Django; gunicorn's first line names /usr/bin/python3), and left
// the settings alone with a note, so that the middleware stayed missing
// and doctor's `wtproxy init --apply` then said "nothing to change".
test('Django served by gunicorn, MIDDLEWARE on one line: gunicorn kept with {port}, the list edited', async (t) => {
  const gunicorn = '/usr/bin/gunicorn --reload --workers 2 --bind 127.0.0.1:8610 shop.wsgi';
  const dir = app(t, {
    'manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'shop.settings')\n",
    'shop/settings.py': "SECRET_KEY = 'x'\nMIDDLEWARE = ['django.middleware.common.CommonMiddleware']\nROOT_URLCONF = 'shop.urls'\n",
    'playwright.config.js': `module.exports = {\n  webServer: {\n    command: '${gunicorn}',\n` +
      "    url: 'http://localhost:8610/',\n    reuseExistingServer: true,\n  },\n" +
      "  use: { baseURL: 'http://localhost:8610' },\n};\n",
  });
  let r = await init(dir, [dir, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  const kept = '/usr/bin/gunicorn --reload --workers 2 --bind 127.0.0.1:{port} shop.wsgi';
  assert.match(r.stdout, /^\+start = (.*)$/m);
  assert.equal(r.stdout.match(/^\+start = (.*)$/m)[1], kept, 'the team\'s gunicorn, its port {port}');
  assert.ok(r.stdout.includes(`+    command: 'wtproxy run --front 8610 -- ${kept}',`), r.stdout);
  assert.doesNotMatch(r.stdout, /runserver|python3/, r.stdout);
  assert.doesNotMatch(r.stdout, /MIDDLEWARE by hand|no literal/, r.stdout);
  // The settings as Django's python reads them: ours first, theirs kept.
  const middleware = execFileSync(python, ['-c',
    "import runpy, sys; print(runpy.run_path(sys.argv[1])['MIDDLEWARE'])", path.join(dir, 'shop/settings.py')],
  { encoding: 'utf8' }).trim();
  assert.equal(middleware, "['wtproxy_whoami.django.WhoamiMiddleware', 'django.middleware.common.CommonMiddleware']");
  assert.match(fs.readFileSync(path.join(dir, 'shop/settings.py'), 'utf8'),
    /^MIDDLEWARE = \[\n    # wtproxy: .*\n    'wtproxy_whoami\.django\.WhoamiMiddleware',\n    'django\.middleware\.common\.CommonMiddleware'\]\n/m);
  r = await init(dir, [dir]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^nothing to change$/m);
});

// The shop of tests/e2e in a fresh repository. strip: without the lines of
// settings.py that list the whoami middleware, as a shop that never heard
// of wtproxy. A .venv/bin/python (Debian's, which has Django) as projects
// have one. Returns the repo's path.
function shopRepo(t, root, { strip }) {
  const repo = path.join(root, 'repo');
  fs.cpSync(path.join(e2eDir, 'app'), repo, { recursive: true, filter: (p) => !/__pycache__|node_modules|test-results/.test(p) });
  const settings = path.join(repo, 'shop', 'settings.py');
  if (strip) {
    const text = fs.readFileSync(settings, 'utf8');
    const naive = text.replace(/^if importlib\.util\.find_spec\('wtproxy_whoami'\).*\n.*\n/m, '');
    assert.ok(!naive.includes('wtproxy_whoami.django'), 'the middleware lines are gone');
    fs.writeFileSync(settings, naive);
  }
  fs.mkdirSync(path.join(repo, '.venv', 'bin'), { recursive: true });
  fs.symlinkSync('/usr/bin/python3', path.join(repo, '.venv', 'bin', 'python'));
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'The shop');
  return repo;
}

test('the unmodified e2e shop: the middleware is already listed; the .wtproxy and the DB lines are proposed', async (t) => {
  const root = tempDir(t);
  const repo = shopRepo(t, root, { strip: false });
  const r = await init(repo, ['--front', '18555']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wtproxy init: .*repo: django app \(settings shop\/settings\.py\), front port 18555$/m);
  assert.ok(!r.stdout.includes(`+    ${MIDDLEWARE}`), 'no second middleware line');
  assert.match(r.stdout, /^\+start = \.venv\/bin\/python manage\.py runserver 127\.0\.0\.1:\{port\}$/m);
  assert.match(r.stdout, /^\+DATABASES = claimed_databases\(DATABASES\)$/m);
  assert.match(r.stdout, /^note: databases: on: the settings use PostgreSQL/m);
  assert.equal(execFileSync('git', ['status', '--porcelain'], { cwd: repo, encoding: 'utf8' }), '', 'nothing written');
});

test('a shop adopted by `wtproxy init --apply` alone: one e2e round in three worktrees, every verdict right', async (t) => {
  const root = tempDir(t);
  t.after(() => killUnder(root));
  const pg = await startPostgres(t);
  const tmp = { root, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
  const px = await startDaemon(t, tmp, [], { env: { ...pg.env, PYTHONPATH: path.join(repoRoot, 'whoami', 'python') } });
  const repo = shopRepo(t, root, { strip: true });

  // The plan: the .wtproxy, the middleware first in MIDDLEWARE, the DB lines.
  let r = await init(repo, ['--front', String(px.port)]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^--- \/dev\/null\n\+\+\+ b\/\.wtproxy\n@@ -0,0 \+1,3 @@\n\+# wtproxy: .*do not simplify\n\+start = \.venv\/bin\/python manage\.py runserver 127\.0\.0\.1:\{port\}\n\+front = \d+$/m);
  assert.match(r.stdout, /^ MIDDLEWARE = \[\n\+    # wtproxy: answers \/__whoami.*do not remove\n\+    'wtproxy_whoami\.django\.WhoamiMiddleware',\n     'django\.middleware\.common\.CommonMiddleware',$/m);
  assert.match(r.stdout, /^\+TEST_RUNNER = "wtproxy_whoami\.django_db\.ClaimingTestRunner"$/m);
  assert.equal(execFileSync('git', ['status', '--porcelain'], { cwd: repo, encoding: 'utf8' }), '');

  // Applied without the DB edits: this round's databases are the runner's
  // own per worktree (.env.wt); the claims are issue 16's to prove.
  r = await init(repo, ['--front', String(px.port), '--no-databases', '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wrote \.wtproxy\nwrote shop\/settings\.py\nwrote playwright\.config\.mjs$/m);
  assert.equal(execFileSync('git', ['status', '--porcelain'], { cwd: repo, encoding: 'utf8' }), ' M playwright.config.mjs\n M shop/settings.py\n?? .wtproxy\n');
  const applied = snapshot(repo);
  r = await init(repo, ['--front', String(px.port), '--no-databases', '--apply']);
  assert.match(r.stdout, /^nothing to change$/m);
  assert.deepEqual(snapshot(repo), applied, 'idempotent');

  assert.doesNotMatch(r.stdout, /linked worktree/, 'the main checkout: no note about merging');

  // Committed, so every worktree has it; the three branches of the scenario.
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'adopt wtproxy (wtproxy init --apply)');
  const shop = { root, repo, wt: {} };
  for (const n of NAMES) {
    shop.wt[n] = path.join(root, `wt-${n}`);
    git(repo, 'worktree', 'add', '-q', shop.wt[n], '-b', n);
    fs.cpSync(path.join(e2eDir, 'branches', n), shop.wt[n], { recursive: true });
    git(shop.wt[n], 'add', '-A');
    git(shop.wt[n], 'commit', '-q', '-m', BRANCHES[n].message);
    fs.symlinkSync(nodeModules, path.join(shop.wt[n], 'node_modules'));
  }
  // In a linked worktree the edits are there already (committed), and init
  // says where the daemon reads the .wtproxy.
  r = await init(shop.wt.a, ['--no-databases'], { cwd: path.join(shop.wt.a, 'store') });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^wtproxy init: ${shop.wt.a}: django app .*front port ${px.port}$`, 'm'), 'the front port of the committed .wtproxy');
  assert.match(r.stdout, /^note: this is a linked worktree, and the main checkout \(.*\/repo\) has the same \.wtproxy already: .*nothing to merge$/m);
  const env = agentEnv(pg, px.port, { WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' });
  await setupDatabases(t, shop, pg, 'own', { bin: wtproxyBin, env });

  // One round: the three Playwright runs at once. Their config is the
  // shop's, unchanged: its webServer command would run a plain runserver on
  // the front port, which wtproxy holds; the .wtproxy starts each
  // worktree's server instead, on its first request.
  const runs = await Promise.all(NAMES.map((n) => runSuite(t, 'e2e', shop.wt[n], env)));
  const verdicts = NAMES.map((n, i) => [n, classify(n, 'e2e', runs[i])]);
  for (const [n, v] of verdicts) assert.equal(v.verdict, 'right', `wt-${n}: ${v.why}\n${runs[NAMES.indexOf(n)].out}`);
  const entries = await lsJson(tmp);
  assert.deepEqual(entries.map((e) => e.worktree).sort(), NAMES.map((n) => shop.wt[n]));
  for (const e of entries) assert.equal(e.whoami?.state, 'verified', `${e.worktree}: ${JSON.stringify(e.whoami)}`);

  // And doctor agrees, from wt-a.
  const d = await cli(tmp, ['doctor', '--json'], { cwd: shop.wt.a, env: { PGHOST: '', PGPORT: '', PGDATABASE: '' } });
  const checks = Object.fromEntries(JSON.parse(d.stdout).checks.map((c) => [c.name, c]));
  for (const n of ['daemon', 'worktree', 'server', 'whoami']) assert.equal(checks[n].status, 'ok', `${n}: ${checks[n].detail}`);
  // The reporter init added is not linked in these worktrees (their
  // node_modules is the suite's): the round above ran without it, as a CI
  // does, and doctor names the link that turns it on.
  assert.equal(checks.playwright.status, 'problem', checks.playwright.detail);
  assert.match(checks.playwright.detail, /names the reporter 'wtproxy-whoami\/playwright', which Node does not find .*its entry is then none: a run that no daemon answered passes on whatever code answered/);
  assert.match(checks.playwright.fix, /node_modules\/wtproxy-whoami/);
});
