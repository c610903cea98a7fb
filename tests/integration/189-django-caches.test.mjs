// 189: a Django app whose settings share one cache between worktrees (a
// Redis, a Memcached, a cache table, here a cache folder): one worktree's
// tests read another's cached pages and sessions (a user's test passed on
// another branch's @cache_page entry, while wtproxy called every server
// verified). `wtproxy init` now leads each shared cache's KEY_PREFIX with
// the worktree's name (wtproxy_whoami.django_db.claimed_caches, named as
// `wtproxy db names` names a database): a key one worktree sets is not
// the key another reads. Real Django (python3-django), its cache API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeWorktrees, cli } from './lib/registry.mjs';
import { python, pythonPath, tempDir } from './lib/whoami.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const settingsCaches = (dir) => `
CACHES = {
    'default': {
        'BACKEND': 'django.core.cache.backends.filebased.FileBasedCache',
        'LOCATION': ${JSON.stringify(dir)},
    },
    'local': {'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'},
}
`;

// Run CODE in Django's shell of worktree dir; its stdout, trimmed.
function shell(dir, code) {
  return execFileSync(python, ['manage.py', 'shell', '-c', code], {
    cwd: dir, encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1', WTPROXY_BIN: wtproxyBin },
  }).trim();
}

test('init gives a cache worktrees share a key prefix of the worktree\'s own: one worktree no longer reads another\'s cached page', async (t) => {
  const tmp = makeWorktrees(t, []);
  const shared = tempDir(t, 'wtproxy-cache-');
  execFileSync(python, ['-m', 'django', 'startproject', 'shop', '.'], { cwd: tmp.repo });
  fs.appendFileSync(path.join(tmp.repo, 'shop/settings.py'), settingsCaches(shared));
  const r = await cli(tmp, ['init', '--apply', '--no-databases'], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\+# wtproxy: this worktree's own cache keys; a cache shared by worktrees serves one branch's cached pages and sessions to another's tests - do not remove\n\+from wtproxy_whoami\.django_db import claimed_caches {2}# noqa: E402\n\+CACHES = claimed_caches\(CACHES\)$/m, r.stdout);
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'adopt wtproxy');
  for (const n of ['a', 'b']) {
    tmp.wt[n] = path.join(tmp.root, `wt-${n}`);
    git(tmp.repo, 'worktree', 'add', '-q', tmp.wt[n], '-b', n);
  }
  shell(tmp.wt.a, "from django.core.cache import cache; cache.set('views.decorators.cache.cache_page./', 'the page of wt-a', 300)");
  assert.equal(shell(tmp.wt.a, "from django.core.cache import cache; print(cache.get('views.decorators.cache.cache_page./'))"), 'the page of wt-a');
  assert.equal(shell(tmp.wt.b, "from django.core.cache import cache; print(cache.get('views.decorators.cache.cache_page./'))"), 'None',
    'wt-b does not read the page wt-a cached');
  const prefixes = JSON.parse(shell(tmp.wt.b, "import json; from django.conf import settings; print(json.dumps({k: v.get('KEY_PREFIX') for k, v in settings.CACHES.items()}))"));
  assert.match(prefixes.default, /^cache_[0-9a-f]{8}_wt_b$/, JSON.stringify(prefixes));
  assert.equal(prefixes.local, null, 'a cache of one process is left alone');

  // A second init has nothing to add.
  const again = await cli(tmp, ['init'], { cwd: tmp.wt.b });
  assert.doesNotMatch(again.stdout, /claimed_caches/, again.stdout);
});
