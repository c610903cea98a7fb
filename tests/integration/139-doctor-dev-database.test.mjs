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
//
// Two checkouts of one repository (shop/ and a clone shop2/) whose
// worktrees share a folder name (wt-a) derive one dev database name.
// `db claim` in the second is refused, but claimed_databases never asks
// the server: its dev server ran on the first's data, and doctor said ok.
// Now doctor names the owner's path, and its fix (a folder name of its
// own: claimed_databases follows the folder, never a --dev-name), pasted,
// makes doctor content and claimed_databases use the new database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeWorktrees, cli, git, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';
import { runToExit } from './lib/conformance.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { pythonPath } from './lib/whoami.mjs';
import { removeAfter } from './lib/cleanup.mjs';

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

// A clone of repo (another checkout of the same repository) with a linked
// worktree named like the first's: <root2>/shop2 and <root2>/wt-<name>.
function cloneWithWorktree(t, repo, name) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-reg-')));
  removeAfter(t, root);
  const clone = path.join(root, 'shop2');
  git(root, 'clone', '-q', repo, clone);
  const wt = path.join(root, `wt-${name}`);
  git(clone, 'worktree', 'add', '-q', wt, '-b', `${name}-2`);
  return { root, repo: clone, wt: { [name]: wt }, control: path.join(root, 'control.sock') };
}

// The dev database NAME claimed_databases (the settings helper) gives in cwd.
async function settingsName(cwd, env) {
  const code = 'from wtproxy_whoami.django_db import claimed_databases\n' +
    'print(claimed_databases({"default": {"NAME": "shop"}})["default"]["NAME"])';
  const r = await runToExit('python3', ['-c', code], {
    cwd, env: { ...env, WTPROXY_BIN: wtproxyBin, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

test('a dev database named like this worktree\'s but another checkout\'s: doctor names the owner', async (t) => {
  const first = makeWorktrees(t, ['a']);
  const second = cloneWithWorktree(t, first.repo, 'a');
  const pg = await startPostgres(t);
  const env = { ...pg.env, WTPROXY_DB_SERVER: '' };
  // Another app (another repository) whose worktree is also wt-a, with its own base: not ours.
  // makeWorktrees' root commits are alike (empty, "init", the same author):
  // made in the same second, two repositories share one. Its branch's root
  // (what doctor reads in the owner's worktree) made its own.
  const blog = makeWorktrees(t, ['a']);
  git(blog.wt.a, 'commit', '-q', '--amend', '--allow-empty', '-m', 'blog');
  const claimBlog = await cli(blog, ['db', 'claim', '--dev', 'blog'], { cwd: blog.wt.a, env, ms: 30000 });
  assert.equal(claimBlog.code, 0, claimBlog.stderr);
  const unrelated = await databasesCheck(second, second.wt.a, env);
  assert.equal(unrelated.status, 'ok', `another app's blog_..._wt_a is not ours: ${unrelated.detail}`);

  const claimFirst = await cli(first, ['db', 'claim', '--dev', 'shop'], { cwd: first.wt.a, env, ms: 30000 });
  assert.equal(claimFirst.code, 0, claimFirst.stderr);
  const taken = await settingsName(second.wt.a, env);
  assert.match(taken, /^shop_\w+_wt_a$/);
  const stamp = pg.psql(`SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '${taken}'`);
  assert.ok(stamp.endsWith(`:${first.wt.a}|dev`), `the second's settings name the first's database: ${stamp}`);
  const refused = await cli(second, ['db', 'claim', '--dev', 'shop'], { cwd: second.wt.a, env, ms: 30000 });
  assert.equal(refused.code, 1, 'db claim sees it');

  const d = await databasesCheck(second, second.wt.a, env);
  assert.equal(d.status, 'problem', `the second runs on the first's data: ${d.detail}`);
  assert.ok(d.detail.includes(`dev database ${taken}, the name this worktree's settings derive`), d.detail);
  assert.ok(d.detail.includes(`owned by another checkout's worktree ${first.wt.a}:`), d.detail);
  const fix = /^git worktree move '([^']+)' '([^']+)' && cd '\2' && wtproxy db claim --dev shop$/.exec(d.fix);
  assert.ok(fix, d.fix);
  assert.equal(fix[1], second.wt.a);

  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-bin-'));
  removeAfter(t, bin);
  fs.symlinkSync(wtproxyBin, path.join(bin, 'wtproxy'));
  const pasted = await runToExit('sh', ['-c', d.fix], {
    cwd: second.wt.a, env: { ...env, PATH: `${bin}:${process.env.PATH}`, WTPROXY_CONTROL: second.control, WTPROXY_NO_AUTOSTART: '1' }, ms: 30000,
  });
  assert.equal(pasted.code, 0, pasted.stderr);
  const moved = fix[2];
  const after = await databasesCheck(second, moved, env);
  assert.equal(after.status, 'ok', after.detail);
  const own = await settingsName(moved, env);
  assert.notEqual(own, taken);
  assert.ok(after.detail.includes(`this worktree's databases: ${own} (dev)`), `the settings use the claimed one: ${after.detail}`);
});
