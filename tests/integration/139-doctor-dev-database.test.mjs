// 139: a team's Django settings use claimed_databases (wtproxy init adds
// it), so each worktree's dev server runs on its own dev database, made
// once per worktree by `wtproxy db claim --dev shop`. A worktree made
// after that (a new git worktree) has none: its dev server stops at start
// with only `database "shop_<machine>_<worktree>" does not exist` in its
// log, and on the old code `wtproxy doctor` there said `databases: ok`.
// Now doctor's databases check is a problem naming the missing database
// (one the repository's other worktrees have: another app's, on the same
// server, is none of its concern), with the claim as its fix; pasted as printed, it makes the database and
// doctor is content.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';

async function databasesCheck(tmp, cwd, env) {
  const r = await cli(tmp, ['doctor', '--json', '--front', '1'], { cwd, env, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  const checks = JSON.parse(r.stdout).checks;
  return checks.find((c) => c.name === 'databases');
}

test('a worktree without the dev database its siblings have: doctor names the claim', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const pg = await startPostgres(t);
  const env = { ...pg.env, WTPROXY_DB_SERVER: '' };
  // Another app on the same server, of another repository, with the same base: not b's.
  const other = makeWorktrees(t, ['x']);
  const claimX = await cli(other, ['db', 'claim', '--dev', 'shop'], { cwd: other.wt.x, env, ms: 30000 });
  assert.equal(claimX.code, 0, claimX.stderr);
  const unrelated = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(unrelated.status, 'ok', `another repository's dev database is not b's concern: ${unrelated.detail}`);

  const claimA = await cli(tmp, ['db', 'claim', '--dev', 'shop'], { cwd: tmp.wt.a, env, ms: 30000 });
  assert.equal(claimA.code, 0, claimA.stderr);

  const ok = await databasesCheck(tmp, tmp.wt.a, env);
  assert.equal(ok.status, 'ok', `a has its own: ${ok.detail}`);
  assert.match(ok.detail, /this worktree's databases: shop_\w+_wt_a \(dev\); /, 'a dev database, not a test database');
  assert.doesNotMatch(ok.detail, /test databases/, ok.detail);

  const d = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(d.status, 'problem', `b has none: ${d.detail}`);
  const want = /no dev database (shop_\w+_wt_b) here, which other worktrees of this repository have/.exec(d.detail);
  assert.ok(want, d.detail);
  assert.match(d.detail, new RegExp(`database ${want[1]} does not exist`), 'the error its server prints');
  assert.equal(d.fix, 'wtproxy db claim --dev shop');

  const [cmd, ...args] = d.fix.split(' ');
  assert.equal(cmd, 'wtproxy');
  const pasted = await cli(tmp, args, { cwd: tmp.wt.b, env, ms: 30000 });
  assert.equal(pasted.code, 0, pasted.stderr);
  assert.equal(pg.psql(`SELECT count(*) FROM pg_database WHERE datname = '${want[1]}'`), '1',
    'the fix made the database doctor named');
  const after = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(after.status, 'ok', after.detail);
});
