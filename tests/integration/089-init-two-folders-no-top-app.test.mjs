// 089: `wtproxy init` of an app whose top folder runs no server of its
// own: a Vite front end in web/, a Django API in api/, and only the
// Playwright tests at the top. Seen in an adoption walk: `wtproxy init`
// at the top refused (exit 2) naming `wtproxy init web` and `wtproxy init
// api`; each of those then wrote nothing for the one file the daemon reads
// (the top .wtproxy) but printed a note, "add this server ... as a
// section", so the first adopter wrote the file by hand from two notes.
// Now the first of them creates the top .wtproxy with its [service NAME],
// naming the other folder's command, and the second adds its section: two
// pasted commands, a file the daemon's reader takes (doctor names both
// services), and a third run changes nothing; `wtproxy init` at the top
// again, the guide's check, says nothing is to change (it said "unknown
// app layout", exit 2). A top folder with an app of
// its own still gets the note (080): its own init writes the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { git, cli, sanitizerClean } from './lib/registry.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const settings = "import os\nMIDDLEWARE = [\n    'django.middleware.common.CommonMiddleware',\n]\n" +
  "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': 'db.sqlite3'}}\n";

function app(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-init-')));
  removeAfter(t, dir);
  const files = {
    'package.json': JSON.stringify({ name: 'notes', devDependencies: { '@playwright/test': '1' } }),
    'playwright.config.js': "module.exports = { use: { baseURL: 'http://localhost:8000' } };\n",
    'web/package.json': JSON.stringify({ name: 'web', scripts: { dev: 'vite' }, devDependencies: { vite: '7' } }),
    'web/vite.config.js': "export default { server: { proxy: { '/api': 'http://localhost:8001' } } };\n",
    'api/manage.py': "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'notesapi.settings')\n",
    'api/notesapi/settings.py': settings,
  };
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  return dir;
}

async function wtproxy(dir, args) {
  const r = await cli({ root: dir, control: path.join(dir, 'no-daemon.sock') }, args, { cwd: dir });
  sanitizerClean(assert, r.stderr);
  return r;
}

// The folder of the command a message names for folder, pasted in dir:
// "(wtproxy init DIR/web)", or "wtproxy init web --apply", what to run.
function named(dir, text, folder) {
  const m = new RegExp(`\\(wtproxy init (\\S*/${folder})\\)|wtproxy init (\\S*\\b${folder}) --apply`).exec(text);
  assert.ok(m, `no wtproxy init .../${folder} in:\n${text}`);
  return path.resolve(dir, m[1] || m[2]);
}

test('web/ and api/ without a top app: init of each writes the top .wtproxy, one section each', async (t) => {
  const dir = app(t);
  const top = await wtproxy(dir, ['init']);
  assert.equal(top.code, 2, top.stderr);
  const web = named(dir, top.stderr, 'web');

  let r = await wtproxy(dir, ['init', web, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wrote \.\.\/\.wtproxy$/m, r.stdout);
  assert.match(r.stdout, new RegExp(`^note: ${dir}/\\.wtproxy: new, the one file the daemon reads .*: this server is its \\[service web\\]; each other server its own, the same way: api/ holds a django app`, 'm'));
  const api = named(dir, r.stdout, 'api');
  assert.ok(!fs.existsSync(path.join(dir, 'web', '.wtproxy')), 'none in web/, which the daemon never reads');
  r = await wtproxy(dir, ['init']);
  assert.equal(r.code, 2, 'api/ is not declared yet');
  assert.equal(named(dir, r.stderr, 'api'), api);

  r = await wtproxy(dir, ['init', api, '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wrote \.\.\/\.wtproxy$/m, r.stdout);
  // Where its front does not come from, said as no problem (it read as one).
  assert.match(r.stdout, /declares no service started by `cd api && \.\.\.` yet, so this server's front is none of that file's/, r.stdout);
  assert.doesNotMatch(r.stdout, /its fronts are other servers/, r.stdout);
  const file = fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8');
  assert.match(file, /^# wtproxy: .* - do not simplify\n\n\[service web\]\nstart = cd web && node_modules\/\.bin\/vite --host 127\.0\.0\.1 --port \{port\} --strictPort\nfront = 8000\n\n\[service api\]\nstart = cd api && .*manage\.py runserver 127\.0\.0\.1:\{port\}\nfront = 8001\n$/, file);

  // The daemon's reader takes it: doctor names both services and fronts.
  const doc = await wtproxy(dir, ['doctor']);
  assert.match(doc.stdout, /front 8000 is the \.wtproxy's first service's; to check its others: api on :8001/, doc.stdout);
  assert.doesNotMatch(doc.stdout, /wtproxy-file|does not parse/, doc.stdout);

  // Again: nothing to add, at the top (the guide's check) and in each.
  r = await wtproxy(dir, ['init']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^wtproxy init: ${dir}: no app at the top; its \\.wtproxy declares .*: nothing to change \\(wtproxy init FOLDER checks each; wtproxy doctor the setup\\)\n$`), r.stdout);
  assert.ok(r.stdout.includes('web/ as [service web] on front 8000') &&
    r.stdout.includes('api/ as [service api] on front 8001'), r.stdout);
  for (const d of [web, api]) {
    r = await wtproxy(dir, ['init', d]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /declares this server already \(\[service (web|api)\]/, r.stdout);
  }
  assert.equal(fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8'), file);
});

// Seen in a second walk: a FastAPI API in api/ (main.py, no manage.py nor
// package.json), Vite in web/, and at the top a Playwright config whose
// webServer array starts each in its folder (cwd:) and whose baseURL is
// Vite's port. `wtproxy init` at the top named web/ only; `init api`
// wrote `python3` (the config names /usr/bin/python3: the python3 on PATH
// may lack FastAPI) without the config's --reload; `init web` wrote front
// 8000 where the tests go to 15174, so every worktree's run reused the
// first one's Vite (its proxy: that worktree's API) and tested its code,
// while doctor said the playwright setup was ok.
test('api/ FastAPI and web/ Vite started by the top Playwright config: each init takes its webServer entry', async (t) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-init-')));
  removeAfter(t, dir);
  const config = "export default {\n  use: { baseURL: 'http://127.0.0.1:15174' },\n  webServer: [\n" +
    "    { command: '/usr/bin/python3 -m uvicorn main:app --port 18001 --reload', cwd: 'api', url: 'http://127.0.0.1:18001/api/hello', reuseExistingServer: true },\n" +
    "    { command: 'node_modules/.bin/vite', cwd: 'web', url: 'http://127.0.0.1:15174/', reuseExistingServer: true },\n  ],\n};\n";
  const files = {
    'package.json': JSON.stringify({ name: 'e2e', devDependencies: { '@playwright/test': '1' } }),
    'playwright.config.js': config,
    'api/main.py': "from fastapi import FastAPI\n\napp = FastAPI()\n",
    'web/package.json': JSON.stringify({ name: 'web', scripts: { dev: 'vite' }, devDependencies: { vite: '7' } }),
    'web/vite.config.js': "export default { server: { port: 15174, proxy: { '/api': 'http://127.0.0.1:18001' } } };\n",
  };
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  git(dir, 'init', '-q', '-b', 'main');

  const top = await wtproxy(dir, ['init']);
  assert.equal(top.code, 2, top.stderr);
  assert.match(top.stderr, /api\/ holds a fastapi app/, top.stderr);
  let r = await wtproxy(dir, ['init', named(dir, top.stderr, 'api'), '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^note: start reloads on edits \(--reload\): \.\.\/playwright\.config\.js runs uvicorn with reloads$/m, r.stdout);
  r = await wtproxy(dir, ['init', named(dir, top.stderr, 'web'), '--apply']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^wtproxy init: \S+\/web: vite app, front port 15174$/m, r.stdout);
  assert.doesNotMatch(r.stdout, /reporter/, 'the top config is the top\'s to edit: no reporter, nor a note of one');
  assert.match(r.stdout, /wtproxy serve --listen 18001 --listen 15174/, r.stdout);
  const file = fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8');
  assert.match(file, /^\[service api\]\nstart = cd api && \/usr\/bin\/python3 -m uvicorn main:app --host 127\.0\.0\.1 --port \{port\} --reload\nfront = 18001\n/m, file);
  assert.match(file, /^\[service web\]\nstart = cd web && .*\nfront = 15174\n/m, file);
  assert.equal(fs.readFileSync(path.join(dir, 'playwright.config.js'), 'utf8'), config, 'the top config is left as it is: recipe port');

  // The API's entry binds its front itself (--port 18001): with no daemon,
  // every worktree's run starts its own API there, and the first to bind
  // serves the others' tests. Its fix keeps the entry's command and cwd.
  let doc = await wtproxy(dir, ['doctor']);
  assert.match(doc.stdout, /^problem +playwright +playwright\.config\.js: its webServer entry `\/usr\/bin\/python3 -m uvicorn main:app --port 18001 --reload` binds port 18001 itself, a front port wtproxy listens on/m, doc.stdout);
  assert.match(doc.stdout, /fix: in that entry write command: 'wtproxy run --front 18001 -- \/usr\/bin\/python3 -m uvicorn main:app --port \{port\} --reload'$/m, doc.stdout);
  // A .wtproxy on another front than the tests' baseURL: doctor says so.
  fs.writeFileSync(path.join(dir, '.wtproxy'), file.replace('front = 15174', 'front = 8000'));
  doc = await wtproxy(dir, ['doctor']);
  assert.match(doc.stdout, /^problem +playwright +playwright\.config\.js: its tests go to port 15174 \(baseURL\), which the \.wtproxy declares no service on \(its fronts: :18001 \(api\), :8000 \(web\)\)/m, doc.stdout);
  assert.match(doc.stdout, /fix: front = 15174 in the \.wtproxy's service for that server/, doc.stdout);
});

// Seen in a third walk: an Express API in api/, Next.js 16 in web/, and at
// the top one Playwright config that starts only the front end, its
// webServer a single object (not an array), baseURL the same port 8100.
// `wtproxy init web` read the top config's webServer only as an array and
// so wrote front 8000, a server the tests never reach; a config with no
// webServer entry for web/ fell back to 8000 too, though its baseURL names
// the one front end. At the top, doctor's fix for the missing .wtproxy and
// for the Playwright recipe was `wtproxy init --apply`, which there exits 2
// ("unknown app layout ... a express app"); init's message now leads with
// the commands to run, and doctor names those.
test('api/ Express and web/ Next beside a top Playwright config whose webServer is one object: web gets its port; doctor and init at the top name the inits that work', async (t) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-init-')));
  removeAfter(t, dir);
  const files = {
    'package.json': JSON.stringify({ name: 'e2e', devDependencies: { '@playwright/test': '1' } }),
    'api/package.json': JSON.stringify({ name: 'api', scripts: { dev: 'node server.js' }, dependencies: { express: '5' } }),
    'api/server.js': "const express = require('express');\nexpress().listen(process.env.PORT);\n",
    'web/package.json': JSON.stringify({ name: 'web', scripts: { dev: 'next dev' }, dependencies: { next: '16', react: '19' } }),
  };
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  const base = "  use: { baseURL: 'http://localhost:8100' },\n";
  const configs = [
    ['playwright.config.js', `module.exports = {\n${base}  webServer: { command: 'cd web && npm run dev -- --port 8100', url: 'http://localhost:8100' },\n};\n`],
    ['playwright.config.js', `module.exports = {\n${base}  webServer: { command: 'npx next dev --port 8100', cwd: 'web', url: 'http://localhost:8100' },\n};\n`],
    ['playwright.config.ts', `import { defineConfig } from '@playwright/test';\n\nexport default defineConfig({\n${base}  webServer: {\n    command: 'npx next dev --port 8100',\n    cwd: 'web',\n    url: 'http://localhost:8100',\n  },\n});\n`],
  ];
  for (const [name, text] of configs) {
    fs.writeFileSync(path.join(dir, name), text);
    const r = await wtproxy(dir, ['init', 'web']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^wtproxy init: \S+\/web: next app, front port 8100$/m, `${name}:\n${text}\n${r.stdout}`);
    assert.match(r.stdout, new RegExp(`^Playwright: \\.\\./${name.replaceAll('.', '\\.')}, recipe "port"$`, 'm'), r.stdout);
    fs.rmSync(path.join(dir, name));
  }
  // No webServer entry for web/: the baseURL's port, the line said.
  fs.writeFileSync(path.join(dir, 'playwright.config.js'), `module.exports = {\n${base}};\n`);
  let r = await wtproxy(dir, ['init', 'web']);
  assert.match(r.stdout, /^wtproxy init: \S+\/web: next app, front port 8100$/m, r.stdout);
  assert.match(r.stdout, /^note: front 8100: the baseURL of \.\.\/playwright\.config\.js \(line 2: 'http:\/\/localhost:8100'\), where its tests go/m, r.stdout);
  r = await wtproxy(dir, ['init', 'api']);
  assert.match(r.stdout, /^wtproxy init: \S+\/api: express app, front port 8000$/m, 'the API is not what the tests browse');
  fs.writeFileSync(path.join(dir, 'playwright.config.js'), configs[0][1]);

  // At the top: what to run first, "an express".
  const adopt = 'wtproxy init api --apply && wtproxy init web --apply';
  r = await wtproxy(dir, ['init', '--apply']);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(r.stderr.startsWith(`wtproxy init: ${dir}: run ${adopt} (api/ holds an express app; web/ holds a next app): `), r.stderr);
  assert.doesNotMatch(r.stderr, /unknown app layout/, r.stderr);
  const json = async () => Object.fromEntries(JSON.parse((await wtproxy(dir, ['doctor', '--json'])).stdout).checks.map((c) => [c.name, c]));
  let doc = await json();
  assert.equal(doc.server.fix, adopt, doc.server.detail);
  assert.equal(doc.playwright.fix, adopt, doc.playwright.detail);

  // The fix, pasted: each works, and doctor's next fix is the config's.
  for (const cmd of adopt.split(' && ')) {
    r = await wtproxy(dir, cmd.split(' ').slice(1));
    assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
  }
  const file = fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8');
  assert.match(file, /^\[service api\]\nstart = cd api && node server\.js\nfront = 8000\n/m, file);
  assert.match(file, /^\[service web\]\nstart = cd web && .*next dev .*\nfront = 8100\n/m, file);
  doc = await json();
  assert.equal(doc.server.status, 'ok', doc.server.detail);
  // its command binds web's front itself (with no daemon, every
  // worktree's run would reuse the first one's): through wtproxy run
  assert.match(doc.playwright.fix, /^in webServer\.command write: wtproxy run --front 8100 -- sh -c "cd web && \S*next dev --hostname 127\.0\.0\.1 --port \{port\}"$/, doc.playwright.fix);
});

// Seen in an npm-workspaces monorepo (`"workspaces": ["apps/*"]`): an
// Express API in apps/api, Vite in apps/web proxying /api to
// http://localhost:3001, and at the top a Playwright config starting each
// with `npm run dev -w apps/...`, baseURL 8100. `wtproxy init` at the top
// said "unknown app layout" (exit 2) naming no member; each member's init
// said front 8000, ignoring the config's entries. Now the top names the
// members that run a dev server (not a library in packages/), each takes
// its entry's port (the API the one Vite proxies to: the daemon owns it,
// and routes each worktree's Vite to its own API), and init of the Vite
// app alone says that its proxy's port is no service's front yet.
test('an npm-workspaces monorepo: init at the top names apps/api and apps/web; each takes its webServer entry', async (t) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-init-')));
  removeAfter(t, dir);
  const files = {
    'package.json': JSON.stringify({ name: 'shop', private: true, workspaces: ['apps/*', 'packages/*'], devDependencies: { '@playwright/test': '1' } }),
    'playwright.config.js': "export default {\n  use: { baseURL: 'http://localhost:8100' },\n  webServer: [\n" +
      "    { command: 'npm run dev -w apps/api', url: 'http://localhost:3001/api/health', reuseExistingServer: true },\n" +
      "    { command: 'npm run dev --workspace=web -- --port 8100 --strictPort', url: 'http://localhost:8100/', reuseExistingServer: true },\n  ],\n};\n",
    'apps/api/package.json': JSON.stringify({ name: 'api', scripts: { dev: 'node src/server.js' }, dependencies: { express: '4' } }),
    'apps/api/src/server.js': "const express = require('express');\nexpress().listen(3001);\n",
    'apps/web/package.json': JSON.stringify({ name: 'web', scripts: { dev: 'vite' }, devDependencies: { vite: '5' } }),
    'apps/web/vite.config.js': "export default {\n  server: {\n    proxy: { '/api': 'http://localhost:3001' },\n  },\n};\n",
    'packages/ui/package.json': JSON.stringify({ name: 'ui', scripts: { build: 'vite build' }, devDependencies: { vite: '5' } }),
  };
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  git(dir, 'init', '-q', '-b', 'main');

  const adopt = 'wtproxy init apps/api --apply && wtproxy init apps/web --apply';
  let r = await wtproxy(dir, ['init']);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(r.stderr.startsWith(`wtproxy init: ${dir}: run ${adopt} (apps/api/ holds an express app; apps/web/ holds a vite app): `), r.stderr);
  // Web first, alone: its proxy's port is no service's front yet.
  r = await wtproxy(dir, ['init', 'apps/web']);
  assert.match(r.stdout, /^wtproxy init: \S+\/apps\/web: vite app, front port 8100$/m, r.stdout);
  assert.match(r.stdout, /^note: vite\.config\.js: its dev-server proxy sends to http:\/\/localhost:3001, which no \.wtproxy service has as its front: .*another worktree's API\); declare that API as a service on front 3001 \(wtproxy init apps\/api --front 3001 --apply, from the top folder\)/m, r.stdout);

  for (const cmd of adopt.split(' && ')) {
    r = await wtproxy(dir, cmd.split(' ').slice(1));
    assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
    assert.doesNotMatch(r.stdout, /its dev-server proxy sends to/, 'the API is declared on 3001 by then');
  }
  const file = fs.readFileSync(path.join(dir, '.wtproxy'), 'utf8');
  assert.match(file, /^\[service api\]\nstart = cd apps\/api && node src\/server\.js\nfront = 3001\n/m, file);
  assert.match(file, /^\[service web\]\nstart = cd apps\/web && \S*vite --host 127\.0\.0\.1 --port \{port\} --strictPort\nfront = 8100\n/m, file);
  r = await wtproxy(dir, ['init']);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.includes('apps/api/ as [service api] on front 3001, apps/web/ as [service web] on front 8100: nothing to change'), r.stdout);
  const doc = JSON.parse((await wtproxy(dir, ['doctor', '--json'])).stdout).checks.find((c) => c.name === 'vite-proxy');
  assert.equal(doc?.status, 'ok', JSON.stringify(doc));

  // pnpm's workspace file names the members the same way.
  fs.rmSync(path.join(dir, '.wtproxy'));
  fs.writeFileSync(path.join(dir, 'package.json'), files['package.json'].replace(/"workspaces":\[[^\]]*\],/, ''));
  fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), "packages:\n  - 'apps/*'\n  - \"packages/*\" # libraries\n");
  r = await wtproxy(dir, ['init']);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(r.stderr.startsWith(`wtproxy init: ${dir}: run ${adopt} (`), r.stderr);
});
