// django-item-app.mjs - the smallest Django project the database tests
// (206, 211) run: manage.py, a `shop` app with one model (Item) and its
// first migration. Each test adds its own proj/settings.py and tests.
// Also the environment their commands run in.
import fs from 'node:fs';
import path from 'node:path';
import { wtproxyBin } from './wtproxy.mjs';

export const itemAppFiles = {
  'manage.py': `import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "proj.settings")
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
`,
  'proj/__init__.py': '',
  'shop/__init__.py': '',
  'shop/models.py': `from django.db import models

class Item(models.Model):
    name = models.CharField(max_length=50)
`,
  'shop/migrations/__init__.py': '',
  'shop/migrations/0001_initial.py': `from django.db import migrations, models

class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [migrations.CreateModel(name="Item", fields=[
        ("id", models.AutoField(primary_key=True, serialize=False)),
        ("name", models.CharField(max_length=50))])]
`,
};

// Write files ({relative path: text}) under dir.
export function writeProject(dir, files) {
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), text);
  }
}

// The environment of a command run in a worktree of tmp (registry.mjs's
// makeWorktrees) by a database test: pg's PG* variables, this build's
// wtproxy first on PATH (the recipe and the Python helpers call plain
// `wtproxy`, as where it is installed), machine m1, tmp's control socket
// and no daemon started on demand; extra added.
export function dbTestEnv(pg, tmp, extra = {}) {
  const binDir = fs.mkdtempSync(path.join(tmp.root, 'bin-'));
  fs.symlinkSync(wtproxyBin, path.join(binDir, 'wtproxy'));
  return {
    ...pg.env, PATH: `${binDir}:${process.env.PATH}`,
    WTPROXY_MACHINE: 'm1', WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1', ...extra,
  };
}
