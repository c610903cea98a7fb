// 092: a NestJS app, adopted with `wtproxy init` and served by `nest start
// --watch` under the daemon. Seen in a NestJS adoption walk: init refused
// the app ("unknown app layout": Nest was none of next, vite, `node FILE`),
// sending the user to the raw whoami protocol; the user wrote the
// .wtproxy and the middleware by hand; doctor called a start without the
// middleware ok. And a server whose bootstrap threw (its database down)
// left `nest start --watch` waiting for a change with nothing listening:
// each request was held for start_timeout (60 s), then a 503 that did not
// say the error. Now init writes the start and the middleware after
// NestFactory.create (its listen given $PORT), the daemon serves it
// verified and fresh after an edit, doctor names a missing middleware, and
// a server that died at start is a 503 at once with Node's error.
// Runs NestJS 10 and its CLI from tests/nest (scripts/bootstrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { git, makeWorktrees, startDaemon, cli, sanitizerClean, curlFrom, waitFor, lsJson } from './lib/registry.mjs';
import { freePort } from './lib/whoami.mjs';
import { repoRoot } from './lib/wtproxy.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const nestModules = path.join(repoRoot, 'tests/nest/node_modules');

// What `nest new` writes, trimmed: the listen on a literal 3000.
const scaffoldMain = "import { NestFactory } from '@nestjs/core';\nimport { AppModule } from './app.module';\n\n" +
  'async function bootstrap() {\n  const app = await NestFactory.create(AppModule);\n  await app.listen(3000);\n}\nbootstrap();\n';

const controller = (greeting) => "import { Controller, Get } from '@nestjs/common';\n\n@Controller()\n" +
  `export class AppController {\n  @Get()\n  hello(): string {\n    return '${greeting}';\n  }\n}\n`;

const files = {
  'package.json': JSON.stringify({
    name: 'notes', private: true, scripts: { build: 'nest build', 'start:dev': 'nest start --watch' },
    dependencies: { '@nestjs/common': '^10.4.0', '@nestjs/core': '^10.4.0', '@nestjs/platform-express': '^10.4.0', 'reflect-metadata': '^0.2.2', rxjs: '^7.8.1' },
    devDependencies: { '@nestjs/cli': '^10.4.0', typescript: '^5.4.0' },
  }, null, 2),
  'nest-cli.json': JSON.stringify({ collection: '@nestjs/schematics', sourceRoot: 'src', compilerOptions: { deleteOutDir: true } }, null, 2),
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      module: 'commonjs', emitDecoratorMetadata: true, experimentalDecorators: true, target: 'ES2021',
      outDir: './dist', baseUrl: './', incremental: true, skipLibCheck: true, types: ['node'],
    },
  }, null, 2),
  'tsconfig.build.json': JSON.stringify({ extends: './tsconfig.json', exclude: ['node_modules', 'dist', 'test'] }, null, 2),
  'src/main.ts': scaffoldMain,
  'src/app.module.ts': "import { Module } from '@nestjs/common';\nimport { AppController } from './app.controller';\n\n" +
    '@Module({ controllers: [AppController] })\nexport class AppModule {}\n',
  'src/app.controller.ts': controller('hello v1'),
  '.gitignore': 'node_modules\ndist\n',
};

// The app in a repo of its own, its node_modules as `npm install` and
// `npm link wtproxy-whoami` leave them (hard links to the suite's).
function nestApp(t) {
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // nest's watcher and its node, if still up
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(tmp.repo, name)), { recursive: true });
    fs.writeFileSync(path.join(tmp.repo, name), text);
  }
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'the app');
  execFileSync('cp', ['-al', nestModules, path.join(tmp.repo, 'node_modules')]);
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(tmp.repo, 'node_modules/wtproxy-whoami'));
  return tmp;
}

async function wtproxy(tmp, args) {
  const r = await cli(tmp, args, { cwd: tmp.repo, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  return r;
}

async function middleware(tmp, front) {
  const r = await wtproxy(tmp, ['doctor', '--json', '--front', String(front)]);
  return JSON.parse(r.stdout).checks.find((c) => c.name === 'middleware');
}

test('init on a Nest app: nest start --watch and the middleware after NestFactory.create; the daemon serves it verified, and an edit fresh', async (t) => {
  const front = await freePort();
  const tmp = nestApp(t);
  let r = await wtproxy(tmp, ['init', '--front', String(front), '--json']);
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  assert.equal(plan.app, 'nest');
  assert.equal(plan.start, 'node_modules/.bin/nest start --watch --preserveWatchOutput');
  const main = plan.changes.find((c) => c.path === 'src/main.ts');
  assert.ok(main, JSON.stringify(plan.changes.map((c) => c.path)));
  assert.match(main.diff, /\n\+  if \(process\.env\.WTPROXY_PORT\) app\.use\(\(await import\(String\('wtproxy-whoami'\)\)\)\.whoami\(\)\);\n/, main.diff);
  assert.match(main.diff, /\n-  await app\.listen\(3000\);\n/, main.diff);
  assert.match(main.diff, /\n\+  await app\.listen\(process\.env\.PORT \?\? 3000\);\n/, 'its listen takes the port wtproxy run gives');

  // Before the middleware: the package is linked, the start is Nest's,
  // and doctor says what the first request would meet.
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), `start = ${plan.start}\nfront = ${front}\n`);
  const m0 = await middleware(tmp, front);
  assert.equal(m0.status, 'problem', m0.detail);
  assert.match(m0.detail, /serves a NestJS app whose src\/main\.ts has no \/__whoami middleware: wtproxy refuses its requests \(502 no-whoami\)/);
  assert.match(m0.fix, /^wtproxy init --apply/);
  fs.rmSync(path.join(tmp.repo, '.wtproxy'));

  r = await wtproxy(tmp, ['init', '--front', String(front), '--apply']);
  assert.equal(r.code, 0, r.stderr);
  const m = await middleware(tmp, front);
  assert.equal(m.status, 'ok', m.detail);

  // The first request starts it from the .wtproxy; tsc's output compiles
  // the dynamic import to a require of the package's ES module.
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`]);
  const first = await curlFrom(tmp.repo, front, '/', { timeout: 90000 });
  assert.equal(first.status, 200, `${first.body}\n${px.stderr()}`);
  assert.equal(first.body, 'hello v1');
  const [entry] = await lsJson(tmp);
  assert.equal(entry.whoami.state, 'verified', JSON.stringify(entry));

  // An edit: nest recompiles and restarts; never the old greeting verified.
  fs.writeFileSync(path.join(tmp.repo, 'src/app.controller.ts'), controller('hello v2'));
  let seen;
  await waitFor(async () => {
    seen = await curlFrom(tmp.repo, front, '/', { timeout: 90000 });
    assert.notEqual(seen.body, 'hello v1', 'the old code, after the edit was saved');
    return seen.status === 200 && seen.body === 'hello v2';
  }, 90000, 'the edited greeting');
  sanitizerClean(assert, px.stderr());
});

test('a Nest server that throws at start under nest start --watch: a 503 at once with its error, then served once fixed', async (t) => {
  const front = await freePort();
  const tmp = nestApp(t);
  const r = await wtproxy(tmp, ['init', '--front', String(front), '--apply']);
  assert.equal(r.code, 0, r.stderr);
  const mainPath = path.join(tmp.repo, 'src/main.ts');
  const good = fs.readFileSync(mainPath, 'utf8');
  // What a database that is down does to an onModuleInit: bootstrap rejects.
  fs.writeFileSync(mainPath, good.replace('async function bootstrap() {\n',
    "async function bootstrap() {\n  if (!process.env.NOTES_FIXED) throw new Error('connect ECONNREFUSED 127.0.0.1:5459 (notes database)');\n"));

  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${front}`]);
  const failed = await curlFrom(tmp.repo, front, '/', { timeout: 90000 });
  assert.equal(failed.status, 503, failed.body);
  assert.match(failed.body, /connect ECONNREFUSED 127\.0\.0\.1:5459 \(notes database\)/, 'the error itself, quoted');
  assert.match(failed.body, /its Node watcher/, failed.body);
  assert.ok(failed.ms < 40000, `answered after ${failed.ms} ms: held for start_timeout (60 s)`);

  // The fix, saved: the watcher compiles and starts it anew.
  fs.writeFileSync(mainPath, good);
  let seen;
  await waitFor(async () => {
    seen = await curlFrom(tmp.repo, front, '/', { timeout: 90000 });
    return seen.status === 200 && seen.body === 'hello v1';
  }, 90000, 'the fixed server');
  sanitizerClean(assert, px.stderr());
});
