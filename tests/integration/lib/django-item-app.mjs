// django-item-app.mjs - the smallest Django project the database tests
// (206, 211) run: manage.py, a `shop` app with one model (Item) and its
// first migration. Each test adds its own proj/settings.py and tests.
import fs from 'node:fs';
import path from 'node:path';

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
