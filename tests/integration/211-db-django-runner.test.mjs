// 211: Django without a wrapper script: settings that use
// wtproxy_whoami.django_db (claimed_databases, ClaimingTestRunner), in two
// worktrees at once against one real PostgreSQL, with Debian's python3,
// Django and pytest-django. `manage.py test` with --parallel 2 and with a
// label each run on their worktree's claimed database (claimed through the
// CLI: its stderr lines show), keep it on the next run, get a fresh one
// (and fresh --parallel clones) when a migration changes; `manage.py
// migrate` goes to the worktree's dev database; pytest-django uses the
// same claim through the conftest fixtures; a server short of connections
// stops the run before any database is made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeWorktrees, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';
import { hold } from './lib/pg-sessions.mjs';
import { runToExit } from './lib/conformance.mjs';
import { dbTestEnv, itemAppFiles, writeProject } from './lib/django-item-app.mjs';

const pythonPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../whoami/python');
// the runner and pytest helpers from this checkout, no .pyc left in it
const pythonEnv = { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };

const testModule = (tag) => `from django.db import connection
from django.test import TestCase
from shop.models import Item

class T${tag}(TestCase):
    def test_db(self):
        Item.objects.create(name="${tag}")
        print("TESTDB=" + connection.settings_dict["NAME"], flush=True)
        self.assertEqual(Item.objects.count(), 1)
`;

const files = {
  ...itemAppFiles,
  // The settings diff of conf/DJANGO-TESTS.md: the import, the wrapped
  // DATABASES, TEST_RUNNER.
  'proj/settings.py': `import os
from wtproxy_whoami.django_db import claimed_databases

SECRET_KEY = "x"
INSTALLED_APPS = ["shop"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DATABASES = claimed_databases({"default": {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": "shop",
    "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"], "USER": os.environ["PGUSER"],
}})
TEST_RUNNER = "wtproxy_whoami.django_db.ClaimingTestRunner"
`,
  'shop/tests_a.py': testModule('A'),
  'shop/tests_b.py': testModule('B'),
  'conftest.py': 'from wtproxy_whoami.pytest_db import django_db_keepdb, django_db_modify_db_settings  # noqa: F401\n',
  'test_pt.py': `import pytest
from django.db import connection
from shop.models import Item

@pytest.mark.django_db
def test_item():
    Item.objects.create(name="p")
    print("PYTESTDB=" + connection.settings_dict["NAME"])
    assert Item.objects.count() == 1
`,
};

const project = (dir) => writeProject(dir, files);

test('manage.py test, --parallel 2 and a label, in two worktrees at once; then migrate, a changed migration, pytest', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a', 'b']);
  project(tmp.wt.a);
  project(tmp.wt.b);
  const env = dbTestEnv(pg, tmp, pythonEnv);
  const py = (wt, args) => runToExit('/usr/bin/python3', args, { cwd: tmp.wt[wt], env, ms: 180000 });
  const [ra, rb] = await Promise.all([
    py('a', ['manage.py', 'test', '--noinput', '-v', '2', '--parallel', '2']),
    py('b', ['manage.py', 'test', '--noinput', '-v', '2', 'shop.tests_a']),
  ]);
  for (const r of [ra, rb]) sanitizerClean(assert, r.stderr);
  assert.equal(ra.code, 0, `${ra.stdout}\n${ra.stderr}`);
  assert.equal(rb.code, 0, `${rb.stdout}\n${rb.stderr}`);
  assert.match(ra.stderr, /wtproxy: test database test_shop_m1_wt_a created/);
  assert.match(ra.stderr, /(Cloning test database|Using existing clone)/);
  assert.equal(pg.psql("SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database WHERE datname LIKE 'test_shop_m1_wt_a%'"),
    'test_shop_m1_wt_a,test_shop_m1_wt_a_1,test_shop_m1_wt_a_2');
  assert.match(ra.stdout + ra.stderr, /TESTDB=test_shop_m1_wt_a_[12]\b/);
  assert.match(ra.stderr, /Ran 2 tests/);
  assert.match(rb.stderr, /wtproxy: test database test_shop_m1_wt_b created/);
  assert.match(rb.stdout + rb.stderr, /TESTDB=test_shop_m1_wt_b\n/);
  assert.match(rb.stderr, /Ran 1 test\b/);

  const again = await py('a', ['manage.py', 'test', '--noinput', '-v', '2']);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /test database test_shop_m1_wt_a kept/);
  assert.match(again.stderr, /Using existing test database/);

  // The dev server's database: claimed once, migrated by the dev server.
  let r = await cli(tmp, ['db', 'claim', '--dev', 'shop'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  r = await py('a', ['manage.py', 'migrate', '--noinput']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(pg.psql("SELECT to_regclass('shop_item') IS NOT NULL", { db: 'shop_m1_wt_a' }), 't');

  // A new NOT NULL column: the test database and the parallel clones are
  // made again (a kept clone would lack the column and fail the insert).
  fs.writeFileSync(path.join(tmp.wt.a, 'shop/models.py'), `from django.db import models

class Item(models.Model):
    name = models.CharField(max_length=50)
    price = models.IntegerField(default=1)
`);
  fs.writeFileSync(path.join(tmp.wt.a, 'shop/migrations/0002_price.py'), `from django.db import migrations, models

class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [migrations.AddField("item", "price", models.IntegerField(default=1))]
`);
  r = await py('a', ['manage.py', 'test', '--noinput', '-v', '2', '--parallel', '2']);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stderr, /test database test_shop_m1_wt_a recreated/);
  assert.match(r.stderr, /Ran 2 tests/);

  r = await py('b', ['-m', 'pytest', '-s', '-p', 'no:cacheprovider', '--ds', 'proj.settings', 'test_pt.py']);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /PYTESTDB=test_shop_m1_wt_b\b/);
  assert.match(r.stderr, /test database test_shop_m1_wt_b kept/);
  assert.equal(pg.psql("SELECT count(*) FROM pg_database WHERE datname = 'test_shop_m1_wt_b'"), '1', 'kept after pytest');
});

test('a refused claim stops manage.py test before any database is touched, with wtproxy\'s message', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  project(tmp.wt.a);
  pg.psql('CREATE DATABASE test_shop_m1_wt_a'); // someone else's, not stamped
  pg.psql('CREATE TABLE precious (x int)', { db: 'test_shop_m1_wt_a' });
  const r = await runToExit('/usr/bin/python3', ['manage.py', 'test', '--noinput'], {
    cwd: tmp.wt.a, ms: 120000,
    env: dbTestEnv(pg, tmp, pythonEnv),
  });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /database test_shop_m1_wt_a exists and was not made by wtproxy/);
  assert.equal(pg.psql("SELECT to_regclass('precious') IS NOT NULL", { db: 'test_shop_m1_wt_a' }), 't');
});

test('a server short of connections stops manage.py test --parallel 2 up front, naming who holds them', async (t) => {
  // 13 - 3 reserved = 10 usable; 6 held + the claim's own = 7: 3 free, and
  // the runner asks for at least 5.
  const pg = await startPostgres(t, { settings: { max_connections: '13' } });
  const tmp = makeWorktrees(t, ['a']);
  project(tmp.wt.a);
  await hold(t, pg, { app: 'other-suite', count: 6 });
  const r = await runToExit('/usr/bin/python3', ['manage.py', 'test', '--noinput', '--parallel', '2'], {
    cwd: tmp.wt.a, ms: 120000,
    env: dbTestEnv(pg, tmp, pythonEnv),
  });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /has 3 connections free .* a claim leaves at least 5/);
  assert.match(r.stderr, /6 x application "other-suite"/);
  assert.equal(pg.psql("SELECT count(*) FROM pg_database WHERE datname LIKE 'test_shop%'"), '0', 'nothing created');
});
