// 205: `wtproxy db claim|release` against a real PostgreSQL, two simulated
// machines (WTPROXY_MACHINE m1, m2) and several worktrees: distinct names
// per machine and worktree; a name owned by another worktree or machine is
// refused naming the owner (--force takes it); a migrations-hash change
// recreates the database (a table made inside is gone); a worktree of this
// machine whose folder is gone is reclaimed; the name guards refuse with
// their reason; concurrent creators end with one database, ours; release
// drops exact names it owns, nothing by prefix; --write-env/--print-env.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { makeWorktrees, startDaemon, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres, dbStamp } from './lib/pg.mjs';

async function setup(t, names = ['a', 'b']) {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, names);
  const db = (wt, machine, args, extra = {}) => cli(tmp, ['db', ...args], {
    cwd: typeof wt === 'string' && wt.startsWith('/') ? wt : tmp.wt[wt],
    env: { WTPROXY_DB_SERVER: pg.uri('postgres'), WTPROXY_MACHINE: machine, ...extra },
  });
  const stampOf = (name) => pg.psql(`SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '${name}'`);
  const dbs = () => pg.psql("SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database WHERE datname LIKE 'test%'");
  return { pg, tmp, db, stampOf, dbs };
}

test('two machines, two worktrees: distinct names, stamped; --write-env gives them', async (t) => {
  const { tmp, db, stampOf, dbs } = await setup(t);
  let r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--write-env', '.env.wt']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /database test_shop_m1_wt_a created/);
  // No server registered: no WT_BACKEND_PORT, never an empty one.
  assert.equal(fs.readFileSync(path.join(tmp.wt.a, '.env.wt'), 'utf8'),
    'WT_DB=test_shop_m1_wt_a\nWT_TEST_DB=test_shop_m1_wt_a\n');
  assert.equal(fs.statSync(path.join(tmp.wt.a, '.env.wt')).mode & 0o777, 0o600);
  r = await db('b', 'm2', ['claim', '--base', 'test_shop', '--print-env']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^WT_TEST_DB=test_shop_m2_wt_b$/m);
  r = await db('a', 'm2', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(dbs(), 'test_shop_m1_wt_a,test_shop_m2_wt_a,test_shop_m2_wt_b');
  assert.equal(stampOf('test_shop_m1_wt_a'), dbStamp('m1', tmp.wt.a, ''));
  assert.equal(stampOf('test_shop_m2_wt_b'), dbStamp('m2', tmp.wt.b, ''));
});

test('WT_BACKEND_PORT is the worktree\'s registered backend port', async (t) => {
  const { tmp, db } = await setup(t);
  await startDaemon(t, tmp);
  const reg = await cli(tmp, ['register', '--port', '5999', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  const r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--print-env']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^WT_BACKEND_PORT=5999$/m);
});

test('a name owned by another machine or worktree is refused naming the owner; --force takes it', async (t) => {
  const { tmp, db, stampOf } = await setup(t);
  assert.equal((await db('b', 'm2', ['claim', '--base', 'test_shop'])).code, 0);
  let r = await db('a', 'm1', ['claim', '--name', 'test_shop_m2_wt_b']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`test_shop_m2_wt_b belongs to worktree ${tmp.wt.b} on machine m2; refused`));
  // that database only, on its machine: a bare `db release` there drops
  // that worktree's dev database too
  assert.ok(r.stderr.includes(`Free it there, on machine m2: cd ${tmp.wt.b} && wtproxy db release --name test_shop_m2_wt_b (that database only); or take it: --force`), r.stderr);
  r = await db('a', 'm2', ['claim', '--name', 'test_shop_m2_wt_b']);
  assert.equal(r.code, 1, 'another worktree of the same machine, folder still there');
  assert.match(r.stderr, new RegExp(`belongs to worktree ${tmp.wt.b} on this machine`));
  assert.equal(stampOf('test_shop_m2_wt_b'), dbStamp('m2', tmp.wt.b, ''), 'untouched');
  r = await db('a', 'm1', ['claim', '--name', 'test_shop_m2_wt_b', '--force']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /taken over/);
  assert.equal(stampOf('test_shop_m2_wt_b'), dbStamp('m1', tmp.wt.a, ''));
});

// A name keeps 20 bytes of the worktree's folder name, so an
// orchestrator's "wt-fix-the-login-redirect-bug" and "...-loop" (or two
// clones' "wt-a") derive one name. The second's claim said "free it there
// ... or take it: --force", and either drops the first's database from
// under its tests. Now the refusal says why the names meet, and the fix is
// a folder name of its own, whose pasted command works.
test('two live worktrees whose folder names derive one name: refused with a folder of its own, never --force', async (t) => {
  const { tmp, db, stampOf } = await setup(t, ['fix-the-login-redirect-bug', 'fix-the-login-redirect-loop']);
  const [first, second] = [tmp.wt['fix-the-login-redirect-bug'], tmp.wt['fix-the-login-redirect-loop']];
  assert.equal((await db(first, 'm1', ['claim', '--base', 'test_shop'])).code, 0);
  const name = 'test_shop_m1_wt_fix_the_login_red';
  let r = await db(second, 'm1', ['claim', '--base', 'test_shop']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`database ${name} is worktree ${first}'s, which is still there: its folder name and this one's give one database name, ending in wt_fix_the_login_red .*cut to 20 bytes\\)\\. Refused: releasing it there, or --force, would drop it from under that worktree's tests\\.`), r.stderr);
  assert.doesNotMatch(r.stderr, /take it: --force|Free it there/, r.stderr);
  const fix = r.stderr.match(/claim again there: (git worktree move .*)$/m);
  assert.ok(fix, r.stderr);
  assert.equal(fix[1], `git worktree move '${second}' '${tmp.root}/wt-fix-the-loop' && cd '${tmp.root}/wt-fix-the-loop'`);
  execFileSync('sh', ['-c', fix[1]], { cwd: tmp.repo });
  r = await db(`${tmp.root}/wt-fix-the-loop`, 'm1', ['claim', '--base', 'test_shop', '--print-env']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^WT_TEST_DB=test_shop_m1_wt_fix_the_loop$/m);
  assert.equal(stampOf(name), dbStamp('m1', first, ''), 'the first worktree\'s, untouched');

  // A clone's main checkout of the same folder name: mv, then git's repair.
  const clone = path.join(tmp.root, 'other', 'wt-fix-the-login-redirect-bug');
  execFileSync('git', ['clone', '-q', tmp.repo, clone]);
  r = await db(clone, 'm1', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`claim again there: mv '${clone}' '${tmp.root}/other/wt-fix-the-other' && cd '${tmp.root}/other/wt-fix-the-other' && git worktree repair$`, 'm'), r.stderr);
});

// On a machine several users share, each with a role of their own: taking
// another role's database is refused by the server, and said as that, not
// as a server to start (it answered).
test('--force on another role\'s database: the server\'s refusal, said as a permission', async (t) => {
  const { pg, db, stampOf, tmp } = await setup(t);
  assert.equal((await db('b', 'm2', ['claim', '--base', 'test_shop'])).code, 0);
  pg.psql('CREATE ROLE wtp_bob LOGIN CREATEDB');
  const r = await db('a', 'm1', ['claim', '--name', 'test_shop_m2_wt_b', '--force'],
    { WTPROXY_DB_SERVER: pg.uri('postgres').replace('postgres@', 'wtp_bob@') });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /\(SQLSTATE 42501\): the role wtp_bob lacks the privilege for it; a database another role owns .* is that role's to change/, r.stderr);
  assert.doesNotMatch(r.stderr, /start it|pg_isready/, r.stderr);
  assert.equal(stampOf('test_shop_m2_wt_b'), dbStamp('m2', tmp.wt.b, ''), 'untouched');
});

test('a database not made by wtproxy is never taken without --force', async (t) => {
  const { pg, db } = await setup(t);
  pg.psql('CREATE DATABASE test_shop_m1_wt_a');
  const r = await db('a', 'm1', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /was not made by wtproxy/);
});

test('a migrations-hash change drops and recreates (a table inside is gone); the same hash keeps it', async (t) => {
  const { pg, tmp, db } = await setup(t);
  let r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--migrations-hash', 'h1']);
  assert.equal(r.code, 0, r.stderr);
  pg.psql('CREATE TABLE marker (x int)', { db: 'test_shop_m1_wt_a' });
  r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--migrations-hash', 'h1']);
  assert.match(r.stderr, /kept/);
  assert.equal(pg.psql("SELECT to_regclass('marker') IS NOT NULL", { db: 'test_shop_m1_wt_a' }), 't');
  r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--migrations-hash', 'h2']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /recreated/);
  assert.equal(pg.psql("SELECT to_regclass('marker') IS NOT NULL", { db: 'test_shop_m1_wt_a' }), 'f');

  // --migrations-dir: the files' hash; an edited migration recreates.
  const mig = path.join(tmp.wt.a, 'shop', 'migrations');
  fs.mkdirSync(path.join(mig, '__pycache__'), { recursive: true });
  fs.writeFileSync(path.join(mig, '0001_initial.py'), '# one\n');
  fs.writeFileSync(path.join(mig, '__pycache__', 'x.pyc'), 'junk');
  r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--migrations-dir', mig]);
  assert.match(r.stderr, /recreated/);
  pg.psql('CREATE TABLE marker (x int)', { db: 'test_shop_m1_wt_a' });
  fs.writeFileSync(path.join(mig, '__pycache__', 'x.pyc'), 'other junk');
  r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--migrations-dir', mig]);
  assert.match(r.stderr, /kept/, 'caches do not count');
  fs.writeFileSync(path.join(mig, '0002_more.py'), '# two\n');
  r = await db('a', 'm1', ['claim', '--base', 'test_shop', '--migrations-dir', mig]);
  assert.match(r.stderr, /recreated/);
  assert.equal(pg.psql("SELECT to_regclass('marker') IS NOT NULL", { db: 'test_shop_m1_wt_a' }), 'f');
  assert.match(pg.psql("SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'test_shop_m1_wt_a'"), /\|sha256:[0-9a-f]{64}$/);
});

test('an abandoned worktree\'s database (same machine, folder gone) is reclaimed', async (t) => {
  const { db, stampOf } = await setup(t, ['c']);
  const other = makeWorktrees(t, ['c']); // another checkout whose folder is also wt-c
  let r = await db('c', 'm1', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 0, r.stderr);
  r = await db(other.wt.c, 'm1', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 1, 'the first wt-c still exists');
  const first = stampOf('test_shop_m1_wt_c');
  fs.rmSync(first.replace(/^wtproxy:m1:(?:[\d.]+:)?/, '').replace(/\|.*$/, ''), { recursive: true, force: true });
  r = await db(other.wt.c, 'm1', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /reclaimed/);
  assert.equal(stampOf('test_shop_m1_wt_c'), dbStamp('m1', other.wt.c, ''));
  r = await db(other.wt.c, 'm2', ['claim', '--name', 'test_shop_m1_wt_c']);
  assert.equal(r.code, 1, 'another machine\'s folder is not ours to judge');
});

test('name guards refuse, saying which rule and why', async (t) => {
  const { db, dbs } = await setup(t);
  const cases = [
    [['--base', 'shop'], /must contain "test"/],
    [['--base', 'Test_Shop'], /\^\[a-z0-9_\]\+\$/],
    [['--name', 'test-shop'], /\^\[a-z0-9_\]\+\$/],
    [['--base', 'test_' + 'x'.repeat(48)], /at most 60 \(rule: 63-byte names\).*_NN/],
  ];
  for (const [args, re] of cases) {
    const r = await db('a', 'm1', ['claim', ...args]);
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 1, `${args}: ${r.stderr}`);
    assert.match(r.stderr, re, args.join(' '));
  }
  assert.equal(dbs(), '', 'nothing created');
});

test('concurrent creators: one database, ours; a concurrent other machine is refused', async (t) => {
  const { db, dbs, stampOf, tmp } = await setup(t);
  const runs = await Promise.all([
    ...Array.from({ length: 6 }, () => db('a', 'm1', ['claim', '--name', 'test_race'])),
    db('b', 'm2', ['claim', '--name', 'test_race']),
  ]);
  const created = runs.filter((r) => /created/.test(r.stderr));
  assert.equal(created.length, 1, runs.map((r) => r.stderr).join('\n'));
  assert.equal(dbs(), 'test_race');
  const owner = stampOf('test_race');
  const winnerM1 = owner === dbStamp('m1', tmp.wt.a, '');
  assert.ok(winnerM1 || owner === dbStamp('m2', tmp.wt.b, ''), owner);
  assert.deepEqual(runs.map((r) => r.code), winnerM1 ? [0, 0, 0, 0, 0, 0, 1] : [1, 1, 1, 1, 1, 1, 0]);
});

test('release drops exactly the names it owns, never by prefix', async (t) => {
  const { pg, db, dbs } = await setup(t);
  assert.equal((await db('a', 'm1', ['claim', '--base', 'test_shop'])).code, 0);
  assert.equal((await db('a', 'm1', ['claim', '--base', 'test_cart'])).code, 0);
  assert.equal((await db('b', 'm1', ['claim', '--base', 'test_shop'])).code, 0);
  pg.psql('CREATE DATABASE test_shop_m1_wt_a_1'); // a parallel worker's clone, not stamped
  let r = await db('a', 'm1', ['release', '--base', 'test_shop']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(dbs(), 'test_cart_m1_wt_a,test_shop_m1_wt_a_1,test_shop_m1_wt_b');
  r = await db('a', 'm1', ['release']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /dropped database test_cart_m1_wt_a/);
  assert.equal(dbs(), 'test_shop_m1_wt_a_1,test_shop_m1_wt_b');
  r = await db('a', 'm1', ['release', '--name', 'test_shop_m1_wt_b']);
  assert.equal(dbs(), 'test_shop_m1_wt_a_1,test_shop_m1_wt_b', 'not ours: kept');
});

test('database server down: refused, naming host and port', async (t) => {
  const { pg, db } = await setup(t);
  await pg.stop();
  const r = await db('a', 'm1', ['claim', '--base', 'test_shop']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`the database server at host 127\\.0\\.0\\.1 port ${pg.port}`));
});
