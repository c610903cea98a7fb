// 206: the Django recipe (conf/run-django-tests.sh, conf/DJANGO-TESTS.md)
// in two worktrees at once against one PostgreSQL: each run's tests use
// the database wtproxy claimed for its worktree (settings read .env.wt),
// --keepdb keeps it on the next run, and a changed migration gets a fresh
// one. Debian's python3 with Django and psycopg2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeWorktrees, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';
import { runToExit } from './lib/conformance.mjs';
import { dbTestEnv, itemAppFiles, writeProject } from './lib/django-item-app.mjs';

const recipe = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../conf/run-django-tests.sh');

const files = {
  ...itemAppFiles,
  'proj/settings.py': `import os
from pathlib import Path

def _wt_env(key, default=None):
    if key in os.environ:
        return os.environ[key]
    env = Path(__file__).resolve().parent.parent / ".env.wt"
    if env.exists():
        for line in env.read_text().splitlines():
            k, _, v = line.partition("=")
            if k == key:
                return v
    return default

SECRET_KEY = "x"
INSTALLED_APPS = ["shop"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DATABASES = {"default": {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": "postgres",
    "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"], "USER": os.environ["PGUSER"],
    "TEST": {"NAME": _wt_env("WT_TEST_DB")},
}}
`,
  'shop/tests.py': `from django.db import connection
from django.test import TestCase
from shop.models import Item

class T(TestCase):
    def test_db(self):
        Item.objects.create(name="a")
        print("TESTDB=" + connection.settings_dict["NAME"])
        self.assertEqual(Item.objects.count(), 1)
`,
};

const project = (dir) => writeProject(dir, files);

test('two worktrees run their Django tests at once, each on its own claimed database', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a', 'b']);
  project(tmp.wt.a);
  project(tmp.wt.b);
  const env = dbTestEnv(pg, tmp, { PYTHON: '/usr/bin/python3' });
  const run = (wt) => runToExit('/bin/sh', [recipe, '-v', '2'], { cwd: tmp.wt[wt], env, ms: 120000 });
  const [ra, rb] = await Promise.all([run('a'), run('b')]);
  for (const [r, wt] of [[ra, 'a'], [rb, 'b']]) {
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 0, `${wt}: ${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout + r.stderr, new RegExp(`TESTDB=test_shop_m1_wt_${wt}\\b`));
    assert.match(r.stderr, new RegExp(`database test_shop_m1_wt_${wt} created`));
  }
  assert.equal(pg.psql("SELECT to_regclass('shop_item') IS NOT NULL", { db: 'test_shop_m1_wt_a' }), 't', '--keepdb kept it');

  const again = await run('a');
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /database test_shop_m1_wt_a kept/);
  assert.match(again.stderr, /Using existing test database/);

  fs.writeFileSync(path.join(tmp.wt.a, 'shop/migrations/0002_more.py'), `from django.db import migrations

class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = []
`);
  const changed = await run('a');
  assert.equal(changed.code, 0, changed.stderr);
  assert.match(changed.stderr, /database test_shop_m1_wt_a recreated/);
  const release = await cli(tmp, ['db', 'release'], { cwd: tmp.wt.a, env: { ...pg.env, WTPROXY_MACHINE: 'm1' } });
  assert.equal(release.code, 0, release.stderr);
  assert.equal(pg.psql("SELECT count(*) FROM pg_database WHERE datname LIKE 'test_shop_m1_wt_%'"), '1');
});
