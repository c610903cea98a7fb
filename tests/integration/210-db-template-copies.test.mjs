// 210: templates and copies (`wtproxy db template|copy|ls|release`) on a
// real PostgreSQL, and the Node recipe conf/vitest-db-setup.mjs (a Vitest
// globalSetup; vitest itself is not installed here, so the recipe's
// function is run by node as Vitest would run it, with real wtproxy, psql
// and PostgreSQL): two worktrees at once each get their own migrated
// template and copies; the migrate command runs once per migrations hash;
// copies are fresh each run; teardown drops exactly its copies. A template
// in use is refused naming its session; a failed migrate leaves no usable
// template; a deleted worktree's template and copies are dropped by
// `release --abandoned`, nobody else's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { makeWorktrees, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';
import { hold } from './lib/pg-sessions.mjs';
import { runToExit } from './lib/conformance.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const recipe = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../conf/vitest-db-setup.mjs');

// Two SQL migrations and a runner that counts its runs in migrated.count.
function app(dir) {
  fs.mkdirSync(path.join(dir, 'migrations'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'migrations/0001.sql'), 'CREATE TABLE item (id serial PRIMARY KEY, name text NOT NULL);\n');
  fs.writeFileSync(path.join(dir, 'migrations/0002.sql'), "INSERT INTO item (name) VALUES ('seed');\n");
  fs.writeFileSync(path.join(dir, 'migrate.sh'),
    'set -e\necho run >> migrated.count\nfor f in migrations/*.sql; do psql -X -q -v ON_ERROR_STOP=1 -f "$f"; done\n');
}

async function setup(t, names = ['a', 'b']) {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, names);
  for (const n of names) app(tmp.wt[n]);
  const env = (machine = 'm1') => ({ ...pg.env, WTPROXY_MACHINE: machine });
  const db = (wt, args, machine) => cli(tmp, ['db', ...args], { cwd: tmp.wt[wt], env: env(machine), ms: 60000 });
  const dbs = (like) => pg.psql(`SELECT coalesce(string_agg(datname, ',' ORDER BY datname), '') FROM pg_database WHERE datname LIKE '${like}'`);
  const template = (wt, extra = []) => db(wt, ['template', '--base', 'test_app', '--migrations-dir', 'migrations',
    ...extra, '--', '/bin/sh', 'migrate.sh']);
  return { pg, tmp, db, dbs, env, template };
}

test('the Node recipe in two worktrees at once: own template, own fresh copies, exact teardown', async (t) => {
  const { pg, tmp, dbs, env } = await setup(t);
  const binDir = fs.mkdtempSync(path.join(tmp.root, 'bin-'));
  fs.symlinkSync(wtproxyBin, path.join(binDir, 'wtproxy'));
  const script = `const m = await import(${JSON.stringify(recipe)});
let dbs; const teardown = m.default({ provide: (k, v) => { dbs = v; } });
console.log('DBS=' + dbs.join(','));
if (process.env.TEARDOWN === '1') teardown();`;
  const run = (wt, teardown = '0') => runToExit(process.execPath, ['--input-type=module', '-e', script], {
    cwd: tmp.wt[wt], ms: 120000,
    env: { ...env(), PATH: `${binDir}:${process.env.PATH}`, VITEST_MAX_THREADS: '3', TEARDOWN: teardown,
      WTPROXY_DB_MIGRATE: 'sh migrate.sh', WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' },
  });
  const [ra, rb] = await Promise.all([run('a'), run('b')]);
  for (const [r, wt] of [[ra, 'a'], [rb, 'b']]) {
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 0, r.stderr);
    const names = [1, 2, 3].map((i) => `test_app_m1_wt_${wt}_w${i}`);
    assert.match(r.stdout, new RegExp(`^DBS=${names.join(',')}$`, 'm'));
    for (const n of names) assert.equal(pg.psql('SELECT name FROM item', { db: n }), 'seed');
    assert.equal(fs.readFileSync(path.join(tmp.wt[wt], 'migrated.count'), 'utf8'), 'run\n');
  }
  pg.psql("INSERT INTO item (name) VALUES ('left by a test')", { db: 'test_app_m1_wt_a_w1' });

  const again = await run('a', '1');
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /template database test_app_m1_wt_a kept/);
  assert.match(again.stderr, /database test_app_m1_wt_a_w1 copied afresh from test_app_m1_wt_a/);
  assert.equal(fs.readFileSync(path.join(tmp.wt.a, 'migrated.count'), 'utf8'), 'run\n', 'not migrated again');
  assert.match(again.stderr, /dropped database test_app_m1_wt_a_w3 \(copy\)/);
  assert.equal(dbs('test_app%'), 'test_app_m1_wt_a,test_app_m1_wt_b,test_app_m1_wt_b_w1,test_app_m1_wt_b_w2,test_app_m1_wt_b_w3',
    'a\'s copies gone by exact name; its template and all of b\'s kept');
});

// An Express + Jest user worked out Jest's side alone (the guide's Jest
// paragraph was one sentence): globalSetup ignores what the setup
// returns, rootDir and maxWorkers come from Jest's config. The guide now
// gives the two files; run here by real Jest 29 (tests/jest) in two
// worktrees at once, as a user copies them from `wtproxy help
// node-db-tests`.
const jest = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../jest/node_modules/.bin/jest');

function jestBlocks(guide) {
  const files = {};
  for (const m of guide.matchAll(/```js\n\/\/ (jest\.[\w.-]+\.mjs)\n([\s\S]*?)```/g)) files[m[1]] = m[2];
  return files;
}

test('the Jest recipe of the guide, with real Jest in two worktrees at once: each worker on its own copy, dropped after', async (t) => {
  const { pg, tmp, dbs, env } = await setup(t);
  const guide = await cli(tmp, ['help', 'node-db-tests']);
  assert.equal(guide.code, 0, guide.stderr);
  const files = jestBlocks(guide.stdout);
  assert.deepEqual(Object.keys(files).sort(), ['jest.config.mjs', 'jest.global-setup.mjs', 'jest.global-teardown.mjs'], guide.stdout);
  const binDir = fs.mkdtempSync(path.join(tmp.root, 'bin-'));
  fs.symlinkSync(wtproxyBin, path.join(binDir, 'wtproxy'));
  const testFile = "const { execFileSync } = require('node:child_process');\n" +
    "test('this worker reads its own copy', () => {\n" +
    "  const db = process.env.WTPROXY_COPY_DBS.split(' ')[Number(process.env.JEST_WORKER_ID) - 1];\n" +
    "  require('node:fs').appendFileSync('used.txt', db + '\\n');\n" +
    "  expect(execFileSync('psql', ['-X', '-At', '-d', db, '-c', 'SELECT name FROM item'], { encoding: 'utf8' }).trim()).toBe('seed');\n" +
    '});\n';
  for (const wt of ['a', 'b']) {
    fs.copyFileSync(recipe, path.join(tmp.wt[wt], 'vitest-db-setup.mjs'));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(tmp.wt[wt], name), text);
    for (const n of ['one', 'two']) fs.writeFileSync(path.join(tmp.wt[wt], `${n}.test.js`), testFile);
  }
  const run = (wt) => runToExit(jest, ['--ci', '--maxWorkers=2'], {
    cwd: tmp.wt[wt], ms: 120000,
    env: { ...env(), PATH: `${binDir}:${process.env.PATH}`, WTPROXY_DB_MIGRATE: 'sh migrate.sh',
      WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' },
  });
  const [ra, rb] = await Promise.all([run('a'), run('b')]);
  for (const [r, wt] of [[ra, 'a'], [rb, 'b']]) {
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Tests:\s+2 passed, 2 total/);
    const used = fs.readFileSync(path.join(tmp.wt[wt], 'used.txt'), 'utf8').trim().split('\n');
    for (const db of used) assert.match(db, new RegExp(`^test_app_m1_wt_${wt}_w[12]$`), `${wt}'s test used ${db}`);
  }
  assert.equal(dbs('test_app%'), 'test_app_m1_wt_a,test_app_m1_wt_b', 'the copies dropped at the end; the templates kept');
  assert.equal(pg.psql('SELECT count(*) FROM item', { db: 'test_app_m1_wt_a' }), '1');
});

// A Fastify user ran `vitest run --root ../wt-b` from app/: wt-b's tests
// got app's template and copies (app's schema). And two runs in one
// worktree (3 s apart) made the same copies afresh under each other's
// tests: one failed on "Connection ended unexpectedly", one passed on a
// database swapped under it.
test('the Node recipe runs in Vitest\'s root, and a second run of one root waits for none: it stops, naming the first', async (t) => {
  const { tmp, env } = await setup(t);
  const binDir = fs.mkdtempSync(path.join(tmp.root, 'bin-'));
  fs.symlinkSync(wtproxyBin, path.join(binDir, 'wtproxy'));
  const script = (root) => `const m = await import(${JSON.stringify(recipe)});
let dbs; const teardown = m.default({ provide: (k, v) => { dbs = v; }, config: { root: ${JSON.stringify(root)} } });
console.log('DBS=' + dbs.join(','));
console.log('CWD=' + process.cwd());
if (process.env.HOLD === '1') await new Promise((r) => setTimeout(r, 60000));
teardown();`;
  const runEnv = { ...env(), PATH: `${binDir}:${process.env.PATH}`, VITEST_MAX_THREADS: '2',
    WTPROXY_DB_MIGRATE: 'sh migrate.sh', WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' };
  const fromA = await runToExit(process.execPath, ['--input-type=module', '-e', script(tmp.wt.b)],
    { cwd: tmp.wt.a, ms: 120000, env: runEnv });
  assert.equal(fromA.code, 0, fromA.stderr);
  assert.match(fromA.stdout, /^DBS=test_app_m1_wt_b_w1,test_app_m1_wt_b_w2$/m, 'wt-b\'s databases, from wt-b\'s migrations');
  assert.ok(fromA.stdout.includes(`\nCWD=${tmp.wt.b}\n`), `the run moved to its root, where wtproxy places its requests: ${fromA.stdout}`);
  assert.match(fromA.stderr, /this run's root is in the worktree .*wt-b, but it was started in .*wt-a/);
  assert.ok(fs.existsSync(path.join(tmp.wt.b, 'migrated.count')) && !fs.existsSync(path.join(tmp.wt.a, 'migrated.count')));

  const first = spawn(process.execPath, ['--input-type=module', '-e', script(tmp.wt.a)],
    { cwd: tmp.wt.a, env: { ...process.env, ...runEnv, HOLD: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (first.exitCode === null) first.kill('SIGKILL'); });
  let out = '';
  first.stdout.on('data', (d) => { out += d; });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the first run never set up')), 60000);
    first.stdout.on('data', () => { if (out.includes('DBS=')) { clearTimeout(timer); resolve(); } });
  });
  const second = await runToExit(process.execPath, ['--input-type=module', '-e', script(tmp.wt.a)],
    { cwd: tmp.wt.a, ms: 60000, env: runEnv });
  assert.notEqual(second.code, 0);
  assert.match(second.stderr, new RegExp(`another test run \\(pid ${first.pid}\\) uses ${tmp.wt.a}'s test databases \\(test_app\\)`));
  assert.doesNotMatch(second.stderr, /copied afresh/, 'nothing made afresh under the first run');
  first.kill('SIGKILL'); // ended without its teardown
  await new Promise((r) => first.once('exit', r));
  const third = await runToExit(process.execPath, ['--input-type=module', '-e', script(tmp.wt.a)],
    { cwd: tmp.wt.a, ms: 120000, env: runEnv });
  assert.equal(third.code, 0, third.stderr);
});

test('a changed migration remigrates the template; a failed migrate leaves no usable template', async (t) => {
  const { pg, tmp, db, template } = await setup(t, ['a']);
  let r = await template('a');
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /template database test_app_m1_wt_a created/);
  fs.writeFileSync(path.join(tmp.wt.a, 'migrations/0003.sql'), 'ALTER TABLE item ADD COLUMN price int NOT NULL DEFAULT 0;\n');
  r = await template('a');
  assert.match(r.stderr, /recreated/);
  r = await db('a', ['copy', '--base', 'test_app', 'x1']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(pg.psql('SELECT price FROM item', { db: 'test_app_m1_wt_a_x1' }), '0');

  fs.writeFileSync(path.join(tmp.wt.a, 'migrations/0004.sql'), 'ALTER TABLE nosuch ADD COLUMN y int;\n');
  r = await template('a');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /the migrate command \/bin\/sh exited \d+; template test_app_m1_wt_a stays unmigrated/);
  r = await db('a', ['copy', '--base', 'test_app', 'x2']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no migrated template test_app_m1_wt_a .*its migrate command has not succeeded yet/);
  fs.rmSync(path.join(tmp.wt.a, 'migrations/0004.sql'));
  r = await template('a');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /recreated/);
  assert.equal((await db('a', ['copy', '--base', 'test_app', 'x2'])).code, 0);
});

// A Fastify user's shell had loaded the dev settings (`. .env.wt`, a claim's
// --write-env): their knexfile prefers WTPROXY_DEV_DB to PGDATABASE, so the
// migrate command migrated the dev database ("Already up to date"), and the
// template stayed empty, kept for good. Each such name set, and a
// DATABASE_URL's database, name the template for the migrate command.
test('a shell that loaded the dev settings: the migrate command still migrates the template, never the dev database', async (t) => {
  const { pg, tmp, db } = await setup(t, ['a']);
  pg.psql('CREATE DATABASE dev_app');
  fs.writeFileSync(path.join(tmp.wt.a, 'by-name.sh'), 'set -e\npsql -X -q -v ON_ERROR_STOP=1 -d "${WTPROXY_DEV_DB:-$PGDATABASE}" -f migrations/0001.sql\n');
  fs.writeFileSync(path.join(tmp.wt.a, 'by-url.sh'), 'set -e\npsql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -f migrations/0001.sql\n');
  const devEnv = { WTPROXY_DEV_DB: 'dev_app', WT_DB: 'dev_app', DATABASE_URL: `${pg.uri('dev_app')}?sslmode=disable` };
  for (const [base, script] of [['test_one', 'by-name.sh'], ['test_two', 'by-url.sh']]) {
    const r = await cli(tmp, ['db', 'template', '--base', base, '--migrations-dir', 'migrations', '--', '/bin/sh', script],
      { cwd: tmp.wt.a, env: { ...pg.env, WTPROXY_MACHINE: 'm1', ...devEnv }, ms: 60000 });
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(pg.psql('SELECT count(*) FROM item', { db: `${base}_m1_wt_a` }), '0', `${script}: the template has the table`);
  }
  assert.equal(pg.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'item'", { db: 'dev_app' }), '0', 'the dev database untouched');
});

test('a template in use is refused naming its session; another worktree\'s copy name is refused', async (t) => {
  const { pg, db, template } = await setup(t);
  assert.equal((await template('a')).code, 0);
  const h = await hold(t, pg, { db: 'test_app_m1_wt_a', app: 'forgotten-psql' });
  let r = await db('a', ['copy', '--base', 'test_app', 'w1']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /cannot create test_app_m1_wt_a_w1 as a copy of test_app_m1_wt_a: .*pid \d+ \(application "forgotten-psql"/);
  await h.release();
  assert.equal((await db('a', ['copy', '--base', 'test_app', 'w1'])).code, 0);
  r = await db('b', ['copy', '--base', 'test_app', 'w1']);
  assert.equal(r.code, 1, 'b has no template yet');
  assert.match(r.stderr, /no migrated template test_app_m1_wt_b/);
  r = await db('a', ['copy', '--base', 'test_app', 'W-1']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /suffix "W-1": it must match/);
});

test('a query the database server fails is blamed on the database server, never on the registry', async (t) => {
  const { pg, db, template } = await setup(t, ['a']);
  assert.equal((await template('a')).code, 0);
  pg.psql('CREATE ROLE nocreate LOGIN');
  const res = await db('a', ['copy', '--base', 'test_app', '--server', pg.uri('postgres').replace('postgres@', 'nocreate@'), 'y1']);
  sanitizerClean(assert, res.stderr);
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, new RegExp(`the database server at host 127\\.0\\.0\\.1 port ${pg.port} \\(the app's.*not the registry\\) failed a query: .*permission denied.*\\(SQLSTATE 42501\\): the role nocreate lacks the privilege for it; .*ALTER ROLE nocreate CREATEDB`));
  assert.doesNotMatch(res.stderr, /if it stopped, start it/, 'it answered: a server that runs');
  assert.doesNotMatch(res.stderr, /the registry at/);
});

test('a worktree deleted while its copies exist: release --abandoned drops exactly those; ls shows them', async (t) => {
  const { tmp, db, dbs, template } = await setup(t, ['a', 'c']);
  for (const wt of ['a', 'c']) {
    assert.equal((await template(wt)).code, 0);
    assert.equal((await db(wt, ['copy', '--base', 'test_app', 'w1', 'w2'])).code, 0);
  }
  assert.equal((await db('a', ['claim', '--dev', 'app'])).code, 0);
  assert.equal((await db('c', ['claim', '--dev', 'app'], 'm2')).code, 0, 'another machine\'s, same folder');
  fs.rmSync(tmp.wt.c, { recursive: true, force: true });
  let r = await db('a', ['ls']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^test_app_m1_wt_c_w2 +copy +m1 +\S+wt-c +\(gone: wtproxy db release --abandoned\)$/m);
  assert.match(r.stdout, /^app_m1_wt_a +dev +m1 /m);
  r = await db('a', ['ls', '--json']);
  const list = JSON.parse(r.stdout);
  assert.equal(list.length, 8);
  assert.deepEqual(list.find((d) => d.name === 'test_app_m1_wt_a').kind, 'template');
  r = await db('a', ['release', '--abandoned']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr.match(/dropped database/g).length, 3, r.stderr);
  assert.equal(dbs('%app%'), 'app_m1_wt_a,app_m2_wt_c,test_app_m1_wt_a,test_app_m1_wt_a_w1,test_app_m1_wt_a_w2');
});
