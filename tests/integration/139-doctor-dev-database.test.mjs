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
//
// An app's first worktree has no sibling's dev database to go by: doctor
// said ok there too, while its settings' claimed_databases named one that
// did not exist. Now it reads that from the settings (at the top or in a
// direct subfolder, api/). And the request the new worktree's tests send
// meanwhile: its 503 said
// "fix it and save: Django's autoreloader restarts it", but no file needs
// a change and a save starts it on the same missing database. Now the 503
// names the database as this worktree's dev database, with the claim, the
// migrate and `wtproxy restart` (and so does a `wtproxy restart` run
// before the claim); done as said, the next request is served.
//
// An app reading its database names from .env.wt, the file `wtproxy db
// claim --dev shop --base test_shop --write-env .env.wt` writes (a
// SvelteKit server, found by a user): doctor's fix in a new worktree was
// the bare `wtproxy db claim --dev shop`, which pasted left .env.wt
// missing; now it repeats the siblings' claim with its --write-env. And a
// .env.wt copied from another worktree, or carried by `git worktree move`,
// names databases stamped for that worktree: doctor said ok while the
// server here worked on the other's data; now it names the file, the
// database and its owner, with the claim that rewrites it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeWorktrees, cli, git, sanitizerClean, startDaemon, startRun, curlFrom, waitFor } from './lib/registry.mjs';
import { itemAppFiles, writeProject, dbTestEnv } from './lib/django-item-app.mjs';
import { startPostgres } from './lib/pg.mjs';
import { runToExit } from './lib/conformance.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { python, pythonPath, freePort } from './lib/whoami.mjs';
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

test('a first worktree\'s Django on its missing dev database: doctor names it from the settings; the 503 says claim, migrate, restart', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const pg = await startPostgres(t);
  writeProject(tmp.wt.a, {
    ...itemAppFiles,
    'proj/settings.py': `import os
from wtproxy_whoami.django_db import claimed_databases
SECRET_KEY = "x"
DEBUG = True
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["shop"]
MIDDLEWARE = ["wtproxy_whoami.django.WhoamiMiddleware"]
ROOT_URLCONF = "proj.urls"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DATABASES = claimed_databases({"default": {
    "ENGINE": "django.db.backends.postgresql", "NAME": "shop",
    "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"], "USER": os.environ["PGUSER"],
}})
`,
    'proj/urls.py': `from django.http import HttpResponse
from django.urls import path
from shop.models import Item
urlpatterns = [path("", lambda r: HttpResponse(f"items {Item.objects.count()}"))]
`,
  });
  const px = await startDaemon(t, tmp, [], { env: { WTPROXY_MACHINE: 'm1' } });
  const env = { ...dbTestEnv(pg, tmp), WTPROXY_DB_SERVER: '', PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };
  // The app's first worktree: no sibling's database to go by, its settings are.
  const d = await databasesCheck(tmp, tmp.wt.a, env);
  assert.equal(d.status, 'problem', `a's settings name a database that does not exist: ${d.detail}`);
  assert.ok(d.detail.includes(`no dev database shop_m1_wt_a, which ${tmp.wt.a}/proj/settings.py names (claimed_databases, base shop)`), d.detail);
  assert.equal(d.fix, 'wtproxy db claim --dev shop');
  startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env, stopSignal: 'SIGTERM',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'] });

  const r = await waitFor(async () => {
    const x = await curlFrom(tmp.wt.a, px.port);
    return x.status === 503 && /failed at start/.test(x.body) ? x : null;
  }, 20000, 'the failed start said');
  const db = /database "(shop_m1_wt_a)" does not exist/.exec(r.body);
  assert.ok(db, r.body);
  const said = new RegExp(`its database shop_m1_wt_a is this worktree's dev database, which does not exist yet: cd ${tmp.wt.a} && (wtproxy db claim --dev shop), then migrate it \\(Django: manage\\.py migrate\\), then (wtproxy restart --front ${px.port})`);
  const m = said.exec(r.body);
  assert.ok(m, r.body);
  assert.doesNotMatch(r.body, /save the file|fix it and save/, 'no file needs a change');
  assert.match(r.body, /Fix: Claim and migrate that database as the line above says/);

  // A restart first (a reflex) fails the same way, and says the same fix.
  const early = await cli(tmp, m[2].split(' ').slice(1), { cwd: tmp.wt.a, env, ms: 60000 });
  assert.equal(early.code, 1, early.stdout + early.stderr);
  assert.ok(early.stderr.includes(`its dev database shop_m1_wt_a does not exist (no file needs a change): claim it (cd ${tmp.wt.a} && wtproxy db claim --dev shop), migrate it`), early.stderr);

  // Done as said: the claim, the migrate, the restart.
  const claim = await cli(tmp, m[1].split(' ').slice(1), { cwd: tmp.wt.a, env, ms: 30000 });
  assert.equal(claim.code, 0, claim.stderr);
  const migrate = await runToExit(python, ['manage.py', 'migrate'], { cwd: tmp.wt.a, env: { ...process.env, ...env }, ms: 30000 });
  assert.equal(migrate.code, 0, migrate.stderr);
  const restart = await cli(tmp, m[2].split(' ').slice(1), { cwd: tmp.wt.a, env, ms: 60000 });
  assert.equal(restart.code, 0, restart.stdout + restart.stderr);
  const ok = await curlFrom(tmp.wt.a, px.port);
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.body, 'items 0');
  sanitizerClean(assert, px.stderr());
});

// Its PostgreSQL stopped (pg_ctl stop) before the server's start: the 503
// said "fix it and save", and `wtproxy restart` "fix the error its log's
// last lines name and save", where no file needs a change. Now both name
// the database server that refused and how to see it answer.
test('a Django whose PostgreSQL is down at its start: the 503 and restart say start it, not edit', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  // Its server stopped: nothing listens on its port.
  const pg = { port: await freePort() };
  pg.env = { PGHOST: '127.0.0.1', PGPORT: String(pg.port), PGUSER: 'postgres' };
  writeProject(tmp.wt.a, {
    ...itemAppFiles,
    'proj/settings.py': `import os
SECRET_KEY = "x"
DEBUG = True
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["shop"]
ROOT_URLCONF = "proj.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "postgres",
    "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"], "USER": os.environ["PGUSER"]}}
`,
    'proj/urls.py': 'urlpatterns = []\n',
  });
  const px = await startDaemon(t, tmp, [], { env: { WTPROXY_MACHINE: 'm1' } });
  const env = { ...dbTestEnv(pg, tmp), PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };
  startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env, stopSignal: 'SIGTERM',
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'] });
  const r = await waitFor(async () => {
    const x = await curlFrom(tmp.wt.a, px.port);
    return x.status === 503 && /failed at start/.test(x.body) ? x : null;
  }, 20000, 'the failed start said');
  assert.match(r.body, /Connection refused/);
  const down = `its database server at 127.0.0.1:${pg.port} does not answer: start it (pg_isready -h 127.0.0.1 -p ${pg.port} says when it answers)`;
  assert.ok(r.body.includes(`${down}, then wtproxy restart --front ${px.port}`), r.body);
  assert.match(r.body, /Fix: Start that database server as the line above says/);
  assert.doesNotMatch(r.body, /and save|fix it and save/, 'no file needs a change');
  const restart = await cli(tmp, ['restart', '--front', String(px.port)], { cwd: tmp.wt.a, env, ms: 60000 });
  assert.equal(restart.code, 1, restart.stdout + restart.stderr);
  assert.ok(restart.stderr.includes(`${down}, then restart it`), restart.stderr);
  assert.doesNotMatch(restart.stderr, /and save/, restart.stderr);
  sanitizerClean(assert, px.stderr());
});

// The keys of an env file db claim wrote.
const envOf = (file) => Object.fromEntries(fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => l.split('=')));

async function pasted(tmp, fix, cwd, env) {
  const [cmd, ...args] = fix.split(' ');
  assert.equal(cmd, 'wtproxy', fix);
  const r = await cli(tmp, args, { cwd, env, ms: 30000 });
  assert.equal(r.code, 0, r.stderr);
}

// The README's `db claim --dev notes --base test_notes`, then the Node
// test recipe's `db template --base test_notes` (a template of the same
// base): in a new worktree doctor proposed the sibling's claim with
// --base test_notes, which made a test database there that the recipe
// then refused ("is this worktree's test database, not a template one").
test('a sibling whose test base became a template: doctor\'s claim leaves --base out, and the recipe works after it', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const pg = await startPostgres(t);
  const env = { ...pg.env, WTPROXY_DB_SERVER: '', WTPROXY_MACHINE: 'm1' };
  const run = async (wt, args) => {
    const r = await cli(tmp, args, { cwd: tmp.wt[wt], env, ms: 30000 });
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  };
  await run('a', ['db', 'claim', '--dev', 'notes', '--base', 'test_notes', '--write-env', '.env.wt']);
  await run('a', ['db', 'release', '--name', 'test_notes_m1_wt_a']);
  await run('a', ['db', 'template', '--base', 'test_notes', '--', 'true']);
  const missing = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(missing.status, 'problem', missing.detail);
  assert.equal(missing.fix, 'wtproxy db claim --dev notes --write-env .env.wt');
  await pasted(tmp, missing.fix, tmp.wt.b, env);
  await run('b', ['db', 'template', '--base', 'test_notes', '--', 'true']);
});

test('an app reading .env.wt: doctor\'s claim writes it; a .env.wt naming another worktree\'s databases is named', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const pg = await startPostgres(t);
  const env = { ...pg.env, WTPROXY_DB_SERVER: '', WTPROXY_MACHINE: 'm1' };
  const claim = ['db', 'claim', '--dev', 'shop', '--base', 'test_shop', '--write-env', '.env.wt'];
  const claimA = await cli(tmp, claim, { cwd: tmp.wt.a, env, ms: 30000 });
  assert.equal(claimA.code, 0, claimA.stderr);
  assert.equal(envOf(path.join(tmp.wt.a, '.env.wt')).WTPROXY_DEV_DB, 'shop_m1_wt_a');

  // b, a new worktree: the fix makes its databases and its .env.wt
  const missing = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(missing.status, 'problem', missing.detail);
  assert.ok(missing.detail.includes('no dev database shop_m1_wt_b here'), missing.detail);
  assert.ok(missing.detail.includes(`read from .env.wt (wtproxy db claim --write-env .env.wt in ${tmp.wt.a})`), missing.detail);
  assert.equal(missing.fix, 'wtproxy db claim --dev shop --base test_shop --write-env .env.wt');
  await pasted(tmp, missing.fix, tmp.wt.b, env);
  const b = envOf(path.join(tmp.wt.b, '.env.wt'));
  assert.equal(b.WTPROXY_DEV_DB, 'shop_m1_wt_b');
  assert.equal(b.WT_TEST_DB, 'test_shop_m1_wt_b');
  assert.equal((await databasesCheck(tmp, tmp.wt.b, env)).status, 'ok');

  // c has its own databases, but a's .env.wt copied in (an agent seeding a worktree)
  const claimC = await cli(tmp, claim, { cwd: tmp.wt.c, env, ms: 30000 });
  assert.equal(claimC.code, 0, claimC.stderr);
  fs.copyFileSync(path.join(tmp.wt.a, '.env.wt'), path.join(tmp.wt.c, '.env.wt'));
  const copied = await databasesCheck(tmp, tmp.wt.c, env);
  assert.equal(copied.status, 'problem', `c's server works on a's data: ${copied.detail}`);
  assert.ok(copied.detail.includes(`.env.wt, which wtproxy db claim --write-env wrote, names dev database shop_m1_wt_a, which is stamped for worktree ${tmp.wt.a}: a dev server or test run here that reads .env.wt works on that worktree's data (the file was copied from there)`), copied.detail);
  assert.equal(copied.fix, 'wtproxy db claim --dev shop --base test_shop --write-env .env.wt');
  await pasted(tmp, copied.fix, tmp.wt.c, env);
  assert.equal(envOf(path.join(tmp.wt.c, '.env.wt')).WTPROXY_DEV_DB, 'shop_m1_wt_c');
  assert.equal((await databasesCheck(tmp, tmp.wt.c, env)).status, 'ok');

  // d moved with its .env.wt: its databases are stamped for the old path
  const claimD = await cli(tmp, claim, { cwd: tmp.wt.d, env, ms: 30000 });
  assert.equal(claimD.code, 0, claimD.stderr);
  const moved = path.join(tmp.root, 'wt-d2');
  git(tmp.repo, 'worktree', 'move', tmp.wt.d, moved);
  const after = await databasesCheck(tmp, moved, env);
  assert.equal(after.status, 'problem', after.detail);
  assert.ok(after.detail.includes(`names dev database shop_m1_wt_d, which is stamped for worktree ${tmp.wt.d}: `), after.detail);
  assert.ok(after.detail.includes('(that worktree is gone: this one was moved, or the file copied from it)'), after.detail);
  assert.equal(after.fix, 'wtproxy db claim --dev shop --base test_shop --write-env .env.wt');
  await pasted(tmp, after.fix, moved, env);
  assert.equal(envOf(path.join(moved, '.env.wt')).WTPROXY_DEV_DB, 'shop_m1_wt_d2');
  assert.equal((await databasesCheck(tmp, moved, env)).status, 'ok');
});

// `git worktree remove` then `add` at the same path (an orchestrator
// reusing its slot paths): the new worktree has no .env.wt, and the
// databases named for its path are the removed one's, with its rows.
// doctor said ok (their names match the path); its dev server would have
// failed on the missing .env.wt, or served the old worktree's data. Now
// they are named as the removed worktree's, and the siblings' claim,
// pasted, reclaims them fresh and writes .env.wt.
test('a worktree removed and added again at its path: doctor names its databases as the removed one\'s, and the claim', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const pg = await startPostgres(t);
  const env = { ...pg.env, WTPROXY_DB_SERVER: '', WTPROXY_MACHINE: 'm1' };
  const claim = ['db', 'claim', '--dev', 'shop', '--base', 'test_shop', '--write-env', '.env.wt'];
  for (const wt of [tmp.wt.a, tmp.wt.b]) {
    const r = await cli(tmp, claim, { cwd: wt, env, ms: 30000 });
    assert.equal(r.code, 0, r.stderr);
  }
  assert.equal((await databasesCheck(tmp, tmp.wt.b, env)).status, 'ok');
  execFileSync('sh', ['-c', `git worktree remove --force ${tmp.wt.b} && git branch -q -D b && git worktree add -q -b b ${tmp.wt.b}`],
    { cwd: tmp.repo });
  const d = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(d.status, 'problem', d.detail);
  assert.ok(d.detail.includes(`dev database shop_m1_wt_b, named for this path, was claimed by the worktree removed from ${tmp.wt.b}`), d.detail);
  assert.equal(d.fix, 'wtproxy db claim --dev shop --base test_shop --write-env .env.wt');
  await pasted(tmp, d.fix, tmp.wt.b, env);
  assert.equal(envOf(path.join(tmp.wt.b, '.env.wt')).WTPROXY_DEV_DB, 'shop_m1_wt_b');
  const after = await databasesCheck(tmp, tmp.wt.b, env);
  assert.equal(after.status, 'ok', after.detail);
});
