// 141: a real Django dev server (Debian's python3-django, runserver
// --noreload) with wtproxy_whoami.django.WhoamiMiddleware answers
// /__whoami with its checkout (the git repo's realpath, found from
// BASE_DIR in a subfolder), its own pid, and the hash `wtproxy fingerprint`
// computes of that checkout. After a .py edit the disk's fingerprint
// differs while the server still reports the old one (and still serves
// the old code): what lets wtproxy refuse a stale server. With DEBUG off
// the middleware is not used: /__whoami is a 404.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { httpGet } from './lib/backends.mjs';
import { git } from './lib/registry.mjs';
import { tempDir, writeDjangoProject, startDjango, diskFingerprint } from './lib/whoami.mjs';

function repoWithProject(t, opts) {
  const repo = path.join(tempDir(t), 'shop');
  fs.mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  const web = path.join(repo, 'web');
  writeDjangoProject(web, opts);
  fs.writeFileSync(path.join(repo, 'tools.py'), 'print("a .py outside BASE_DIR, inside the checkout")\n');
  return { repo, web };
}

test('Django: /__whoami names the checkout, the pid and the code the server loaded', async (t) => {
  const { repo, web } = repoWithProject(t);
  const before = Date.now();
  const server = await startDjango(t, web);
  const r = await httpGet(server.port, '/__whoami');
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['cache-control'], 'no-store');
  const who = JSON.parse(r.body);
  assert.equal(who.wtproxy_whoami, 1);
  assert.equal(who.checkout, fs.realpathSync(repo));
  assert.equal(who.pid, server.pid);
  assert.match(who.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/);
  const started = Date.parse(who.started_at);
  assert.ok(started >= before - 2000 && started <= Date.now(), `started_at ${who.started_at}`);
  const disk = await diskFingerprint(repo);
  assert.deepEqual(who.fingerprint, disk, 'the same fingerprint as wtproxy fingerprint --json');
  assert.equal(disk.files, 7, 'every .py of the checkout: 6 of the project, tools.py');

  const head = await httpGet(server.port, '/__whoami', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.equal((await httpGet(server.port, '/__whoami', { method: 'POST' })).status, 405);
  assert.equal((await httpGet(server.port, '/hello/')).body.toString(), 'hello v1', 'other paths reach the app');

  // the edit: the disk moves on, the running server does not
  const views = path.join(web, 'app/views.py');
  fs.writeFileSync(views, fs.readFileSync(views, 'utf8').replace('hello v1', 'hello v2'));
  const after = await diskFingerprint(repo);
  assert.notEqual(after.hash, disk.hash, 'the disk fingerprint changed');
  const again = JSON.parse((await httpGet(server.port, '/__whoami')).body);
  assert.equal(again.fingerprint.hash, disk.hash, 'the server still reports the code it loaded');
  assert.equal((await httpGet(server.port, '/hello/')).body.toString(), 'hello v1', 'and still serves it');

  // editing a file outside the patterns changes nothing
  fs.writeFileSync(path.join(web, 'e2e/app.spec.ts'), 'test("edited", () => {});\n');
  assert.equal((await diskFingerprint(repo)).hash, after.hash);
});

test('Django: WTPROXY_WHOAMI patterns are declared and used; WTPROXY_WHOAMI_ROOT overrides the root', async (t) => {
  const { repo, web } = repoWithProject(t);
  fs.appendFileSync(path.join(web, 'site_cfg/settings.py'),
    "WTPROXY_WHOAMI = {'include': ['**/*.py', '**/*.ts'], 'exclude': ['tools.py']}\n");
  const server = await startDjango(t, web, { env: { WTPROXY_WHOAMI_ROOT: web } });
  const who = JSON.parse((await httpGet(server.port, '/__whoami')).body);
  assert.equal(who.checkout, fs.realpathSync(web));
  assert.deepEqual(who.fingerprint.include, ['**/*.py', '**/*.ts']);
  assert.deepEqual(who.fingerprint.exclude, ['tools.py']);
  const disk = await diskFingerprint(web, ['--include', '**/*.py', '--include', '**/*.ts', '--exclude', 'tools.py']);
  assert.equal(who.fingerprint.hash, disk.hash);
  assert.equal(who.fingerprint.files, 7, 'the 6 .py and the .ts under web/');
  assert.ok(fs.existsSync(path.join(repo, 'tools.py')));
});

test('Django: with DEBUG = False the middleware is not used and /__whoami is a 404', async (t) => {
  const { web } = repoWithProject(t, { debug: false });
  const server = await startDjango(t, web);
  assert.equal((await httpGet(server.port, '/hello/')).body.toString(), 'hello v1');
  const r = await httpGet(server.port, '/__whoami');
  assert.equal(r.status, 404);
  assert.doesNotMatch(r.body.toString(), /wtproxy_whoami/);
});
