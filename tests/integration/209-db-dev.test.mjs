// 209: a worktree's dev database (`wtproxy db claim --dev`) on a real
// PostgreSQL: claimed with the test database in one call, distinct env
// keys; kept when the migrations change (the test one is recreated),
// dropped only by --reset or release; --from copies a source, and a source
// in use is refused naming the session that holds it; the name guards;
// one kind's name is never claimed as another's; an abandoned worktree's dev
// database is reclaimed, also when a new worktree stands at its path
// (removed and added again: fresh, saying why); 16 racers for one dev
// database (two machines): exactly one creates, the others reuse it or are
// refused naming the owner; a server short of free connections refuses,
// naming who holds them and how to raise the limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, cli, sanitizerClean, git } from './lib/registry.mjs';
import { startPostgres, dbStamp } from './lib/pg.mjs';
import { hold } from './lib/pg-sessions.mjs';

async function setup(t, names = ['a', 'b'], settings = {}) {
  const pg = await startPostgres(t, { settings });
  const tmp = makeWorktrees(t, names);
  const db = (wt, machine, args) => cli(tmp, ['db', ...args], {
    cwd: tmp.wt[wt], ms: 60000,
    env: { WTPROXY_DB_SERVER: pg.uri('postgres'), WTPROXY_MACHINE: machine },
  });
  const stampOf = (name) => pg.psql(`SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '${name}'`);
  const dbs = (like) => pg.psql(`SELECT coalesce(string_agg(datname, ',' ORDER BY datname), '') FROM pg_database WHERE datname LIKE '${like}'`);
  const hasMarker = (name) => pg.psql("SELECT to_regclass('marker') IS NOT NULL", { db: name });
  return { pg, tmp, db, stampOf, dbs, hasMarker };
}

test('dev and test in one claim: distinct keys; dev kept across a migrations change, test recreated; --reset drops dev', async (t) => {
  const { pg, tmp, db, stampOf, hasMarker } = await setup(t);
  let r = await db('a', 'm1', ['claim', '--dev', 'shop', '--base', 'test_shop', '--migrations-hash', 'h1', '--write-env', '.env.wt']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dev database shop_m1_wt_a created/);
  assert.match(r.stderr, /test database test_shop_m1_wt_a created/);
  assert.equal(fs.readFileSync(path.join(tmp.wt.a, '.env.wt'), 'utf8'),
    'WTPROXY_DEV_DB=shop_m1_wt_a\nWTPROXY_TEST_DB=test_shop_m1_wt_a\nWT_DB=shop_m1_wt_a\n' +
    'WT_TEST_DB=test_shop_m1_wt_a\n');
  assert.equal(stampOf('shop_m1_wt_a'), dbStamp('m1', tmp.wt.a, 'dev'));
  pg.psql('CREATE TABLE marker (x int)', { db: 'shop_m1_wt_a' });
  pg.psql('CREATE TABLE marker (x int)', { db: 'test_shop_m1_wt_a' });
  // The same text is not written again: .env.wt is code to a dev
  // server's fingerprint (.env.*), and a trusted one's is judged by times.
  const envFile = path.join(tmp.wt.a, '.env.wt');
  const written = fs.statSync(envFile).mtimeMs;
  await new Promise((res) => setTimeout(res, 20));
  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--base', 'test_shop', '--migrations-hash', 'h1', '--write-env', '.env.wt']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fs.statSync(envFile).mtimeMs, written, '.env.wt not rewritten with the text it holds');

  // The app's own lines in that file are kept (a Bun user's .env, which
  // Bun loads itself, lost its DATABASE_URL to the next claim), the
  // claim's lines first, so that a line using one finds it set.
  fs.writeFileSync(envFile, fs.readFileSync(envFile, 'utf8').replace('WT_DB=', 'export WT_DB=old\nWT_DB=') +
    'DATABASE_URL=postgres://127.0.0.1/${WTPROXY_DEV_DB}\n# a comment\nSECRET=s3\n');
  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--base', 'test_shop', '--migrations-hash', 'h1', '--write-env', '.env.wt']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fs.readFileSync(envFile, 'utf8'),
    'WTPROXY_DEV_DB=shop_m1_wt_a\nWTPROXY_TEST_DB=test_shop_m1_wt_a\nWT_DB=shop_m1_wt_a\nWT_TEST_DB=test_shop_m1_wt_a\n' +
    'DATABASE_URL=postgres://127.0.0.1/${WTPROXY_DEV_DB}\n# a comment\nSECRET=s3\n');

  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--base', 'test_shop', '--migrations-hash', 'h2']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dev database shop_m1_wt_a kept/);
  assert.match(r.stderr, /test database test_shop_m1_wt_a recreated/);
  assert.equal(hasMarker('shop_m1_wt_a'), 't', 'the dev data stays');
  assert.equal(hasMarker('test_shop_m1_wt_a'), 'f');

  // `db names` says the same names without touching the server.
  r = await cli(tmp, ['db', 'names', '--dev', 'shop', '--base', 'test_shop', '--print-env'],
    { cwd: tmp.wt.a, env: { WTPROXY_DB_SERVER: 'postgresql://127.0.0.1:1/none', WTPROXY_MACHINE: 'm1' } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^WTPROXY_DEV_DB=shop_m1_wt_a$/m);
  assert.match(r.stdout, /^WTPROXY_TEST_DB=test_shop_m1_wt_a$/m);

  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--reset']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dev database shop_m1_wt_a reset/);
  assert.equal(hasMarker('shop_m1_wt_a'), 'f');

  r = await db('a', 'm1', ['release', '--dev', 'shop']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dropped database shop_m1_wt_a \(dev\)/);
  assert.equal(pg.psql("SELECT count(*) FROM pg_database WHERE datname IN ('shop_m1_wt_a', 'test_shop_m1_wt_a')"), '1', 'test kept');
});

test('--from copies the source; a source in use is refused naming who holds it', async (t) => {
  const { pg, db, dbs } = await setup(t);
  pg.psql('CREATE DATABASE shop');
  pg.psql("CREATE TABLE item (name text); INSERT INTO item VALUES ('from main')", { db: 'shop' });
  const holder = await hold(t, pg, { db: 'shop', app: 'main-devserver' });
  let r = await db('a', 'm1', ['claim', '--dev', 'shop', '--from', 'shop']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /cannot create shop_m1_wt_a as a copy of shop: .*1 session is: pid \d+ \(application "main-devserver", user postgres, from 127\.0\.0\.1\)/);
  assert.match(r.stderr, /pg_terminate_backend/);
  assert.equal(dbs('shop_%'), '', 'nothing created');
  await holder.release();
  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--from', 'shop']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dev database shop_m1_wt_a created from shop/);
  assert.equal(pg.psql('SELECT name FROM item', { db: 'shop_m1_wt_a' }), 'from main');
  assert.equal(pg.psql("SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = 'shop'"), '', 'the source is not stamped');
});

test('PG* naming a role but no database: the claim connects to postgres, as doctor does, not to a database named as the role', async (t) => {
  const { pg, tmp, dbs } = await setup(t);
  // The app's role, as Django's settings name it (USER "shop"), and no
  // database "shop": libpq's default database is the role's name.
  pg.psql('CREATE ROLE shop LOGIN SUPERUSER');
  const r = await cli(tmp, ['db', 'claim', '--dev', 'shop'], {
    cwd: tmp.wt.a, ms: 60000,
    env: { PGHOST: pg.host, PGPORT: String(pg.port), PGUSER: 'shop', PGDATABASE: undefined, WTPROXY_DB_SERVER: undefined, WTPROXY_MACHINE: 'm1' },
  });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dev database shop_m1_wt_a created/);
  assert.equal(dbs('shop%'), 'shop_m1_wt_a');
});

test('dev name guards; a test claim never takes a dev database', async (t) => {
  const { db, dbs } = await setup(t);
  const cases = [
    [['--dev-name', 'shop', '--from', 'shop'], /the shared database itself/],
    [['--dev-name', 'Shop_Dev'], /\^\[a-z0-9_\]\+\$/],
    [['--dev-name', 'd'.repeat(64)], /64 bytes; at most 63/],
    [['--dev', 'shop', '--dev-name', 'x'], /not both/],
  ];
  for (const [args, re] of cases) {
    const r = await db('a', 'm1', ['claim', ...args]);
    sanitizerClean(assert, r.stderr);
    assert.ok(r.code === 1 || r.code === 2, `${args}: ${r.stderr}`);
    assert.match(r.stderr, re, args.join(' '));
  }
  assert.equal(dbs('%shop%'), '');
  let r = await db('a', 'm1', ['claim', '--dev-name', 'test_dev_shop']);
  assert.equal(r.code, 0, r.stderr);
  r = await db('a', 'm1', ['claim', '--name', 'test_dev_shop', '--migrations-hash', 'h9']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /test_dev_shop is this worktree's dev database, not a test one; refused/);
});

test('an abandoned worktree\'s dev database (same machine, folder gone) is reclaimed, from --from again', async (t) => {
  const { pg, db, stampOf, hasMarker } = await setup(t, ['c']);
  const other = makeWorktrees(t, ['c']); // another checkout whose folder is also wt-c
  pg.psql('CREATE DATABASE shop');
  let r = await db('c', 'm1', ['claim', '--dev', 'shop']);
  assert.equal(r.code, 0, r.stderr);
  pg.psql('CREATE TABLE marker (x int)', { db: 'shop_m1_wt_c' });
  const odb = (args) => cli(other, ['db', ...args], { cwd: other.wt.c, ms: 60000,
    env: { WTPROXY_DB_SERVER: pg.uri('postgres'), WTPROXY_MACHINE: 'm1' } });
  r = await odb(['claim', '--dev', 'shop', '--from', 'shop']);
  assert.equal(r.code, 1, 'the first wt-c still exists');
  assert.match(r.stderr, new RegExp(`database shop_m1_wt_c is worktree \\S+/wt-c's, which is still there: its folder name and this one's give one database name.* Refused: releasing it there, or --force, would drop it from under that worktree's tests\\. Give this worktree a folder name of its own, then claim again there: git worktree move '${other.wt.c}' '${other.root}/wt-c-[a-z0-9]+'`));
  assert.equal(hasMarker('shop_m1_wt_c'), 't', 'untouched');
  fs.rmSync(stampOf('shop_m1_wt_c').replace(/^wtproxy:m1:(?:[\d.]+:)?/, '').replace(/\|dev$/, ''), { recursive: true, force: true });
  r = await odb(['claim', '--dev', 'shop', '--from', 'shop']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dev database shop_m1_wt_c reclaimed from shop/);
  assert.equal(hasMarker('shop_m1_wt_c'), 'f');
  assert.equal(stampOf('shop_m1_wt_c'), dbStamp('m1', other.wt.c, 'dev'));
});

// An orchestrator that reuses slot paths (wt/t1, wt/t2 ...) removes a
// task's worktree and adds the next task's at the same path: the next
// claim got "kept" and the old task's rows, while a folder of the same name
// elsewhere got a fresh one. The stamp now holds the folder's identity.
test('a worktree removed and added again at its path: its dev database is reclaimed fresh, saying why', async (t) => {
  const { pg, tmp, db, stampOf, hasMarker, dbs } = await setup(t, ['a']);
  let r = await db('a', 'm1', ['claim', '--dev', 'shop', '--write-env', '.env.wt']);
  assert.equal(r.code, 0, r.stderr);
  pg.psql('CREATE TABLE marker (x int)', { db: 'shop_m1_wt_a' });
  r = await db('a', 'm1', ['claim', '--dev', 'shop']);
  assert.match(r.stderr, /dev database shop_m1_wt_a kept for /, 'the same worktree keeps its data');
  assert.equal(hasMarker('shop_m1_wt_a'), 't');

  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.a);
  git(tmp.repo, 'branch', '-D', 'a');
  git(tmp.repo, 'worktree', 'add', '-q', '-b', 'a', tmp.wt.a);
  r = await cli(tmp, ['db', 'ls'], { cwd: tmp.repo, env: { WTPROXY_DB_SERVER: pg.uri('postgres'), WTPROXY_MACHINE: 'm1' } });
  assert.match(r.stdout, /shop_m1_wt_a +dev .*\(gone: wtproxy db release --abandoned\)/, r.stdout);
  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--write-env', '.env.wt']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, `wtproxy: dev database shop_m1_wt_a reclaimed for ${tmp.wt.a} (the worktree that ` +
    'claimed it was removed, even if one was added again at its path since: made fresh, none of its rows carried over)\n');
  assert.equal(hasMarker('shop_m1_wt_a'), 'f', 'none of the old task\'s rows');
  assert.equal(stampOf('shop_m1_wt_a'), dbStamp('m1', tmp.wt.a, 'dev'));
  assert.equal(dbs('shop%'), 'shop_m1_wt_a');

  // A stamp of before (no identity) is kept, then given one.
  pg.psql(`COMMENT ON DATABASE shop_m1_wt_a IS 'wtproxy:m1:${tmp.wt.a}|dev'`);
  r = await db('a', 'm1', ['claim', '--dev', 'shop']);
  assert.match(r.stderr, /dev database shop_m1_wt_a kept for /);
  assert.equal(stampOf('shop_m1_wt_a'), dbStamp('m1', tmp.wt.a, 'dev'));
});

test('16 racers for one dev database on two machines: one creates, the rest reuse it or are refused naming the owner', async (t) => {
  const { tmp, db, stampOf } = await setup(t);
  const runs = await Promise.all(Array.from({ length: 16 }, (_, i) =>
    db(i % 2 ? 'b' : 'a', i % 2 ? 'm2' : 'm1', ['claim', '--dev-name', 'shop_race', '--min-free-connections', '0'])));
  for (const r of runs) sanitizerClean(assert, r.stderr);
  const created = runs.filter((r) => /created/.test(r.stderr));
  assert.equal(created.length, 1, runs.map((r) => r.stderr).join('\n'));
  const owner = stampOf('shop_race');
  const winner = owner === dbStamp('m1', tmp.wt.a, 'dev') ? 0 : 1;
  assert.equal(owner, winner ? dbStamp('m2', tmp.wt.b, 'dev') : dbStamp('m1', tmp.wt.a, 'dev'));
  runs.forEach((r, i) => {
    if (i % 2 === winner) {
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /shop_race (created|kept)/);
    } else {
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`shop_race belongs to worktree ${winner ? tmp.wt.b : tmp.wt.a} on machine m${winner + 1}; refused`));
    }
  });
});

test('a server short of free connections: the claim is refused naming the holders and the fix', async (t) => {
  // 13 - 3 reserved for superusers = 10 usable; 7 held + the claim's own = 8: 2 free.
  const { pg, db, dbs } = await setup(t, ['a'], { max_connections: '13' });
  await hold(t, pg, { app: 'suite-a', count: 4 });
  await hold(t, pg, { app: 'suite-b', count: 3 });
  let r = await db('a', 'm1', ['claim', '--dev', 'shop', '--base', 'test_shop']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /has 2 connections free \(max_connections 13, 3 reserved, 8 in use\) and a claim leaves at least 5/);
  assert.match(r.stderr, /4 x application "suite-a", user postgres, database postgres; 3 x application "suite-b"/);
  assert.match(r.stderr, /ALTER SYSTEM SET max_connections = 26/);
  assert.equal(dbs('%shop%'), '', 'nothing created');
  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--min-free-connections', '2']);
  assert.equal(r.code, 0, r.stderr);
  r = await db('a', 'm1', ['claim', '--dev', 'shop', '--min-free-connections', 'x']);
  assert.equal(r.code, 2);
});
