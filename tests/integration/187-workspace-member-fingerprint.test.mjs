// 187: a Node server in a workspace member of a monorepo (npm workspaces
// apps/* and packages/*, or pnpm-workspace.yaml), with the middleware's
// defaults: its fingerprint covers its own package folder, the members it
// depends on and the workspace top's own files, not the whole checkout.
// The API of a monorepo fingerprinted 30,000 files (a vendored tree, the
// web app beside it); an edit of the web app or a vendored file made it
// stale and restarted it, holding requests 3.5-13.8 s, and Playwright's
// 5 s expect timeout failed tests on correct code. An edit of a member it
// depends on, or of the top's .env, still makes it stale.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { httpGet } from './lib/backends.mjs';
import { repoRoot } from './lib/wtproxy.mjs';
import {
  commitWorktree, makeWorktrees, startDaemon, startRun, getWorktree, lsJson, sanitizerClean, waitFor,
} from './lib/registry.mjs';

const server = `import http from 'node:http';
import { whoami } from ${JSON.stringify(path.join(repoRoot, 'whoami/node/index.mjs'))};
import { greeting } from '@mono/utils';
const mw = whoami();
http.createServer((req, res) => mw(req, res, () => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ greeting, pid: process.pid }));
})).listen(Number(process.argv[2]), '127.0.0.1');
`;

// The monorepo: the API in apps/api depending on packages/utils (and,
// through it, packages/base), the web app and packages/other beside
// them, a vendored tree; node_modules as npm install links the members.
function monorepo(t, workspaces) {
  const tmp = makeWorktrees(t, []);
  const w = (rel, text) => {
    fs.mkdirSync(path.dirname(path.join(tmp.repo, rel)), { recursive: true });
    fs.writeFileSync(path.join(tmp.repo, rel), text);
  };
  const pkg = (name, deps = {}) => JSON.stringify({ name, private: true, type: 'module', main: 'index.js', dependencies: deps });
  if (workspaces === 'pnpm') {
    w('package.json', JSON.stringify({ name: 'mono', private: true }));
    w('pnpm-workspace.yaml', "packages:\n  - 'apps/*'\n  - packages/*   # the libraries\n");
  } else {
    w('package.json', JSON.stringify({ name: 'mono', private: true, workspaces: ['apps/*', 'packages/*'] }));
  }
  w('.env', 'GREETING=one\n');
  w('apps/api/package.json', pkg('@mono/api', { '@mono/utils': '*' }));
  w('apps/api/server.js', server);
  w('apps/web/package.json', pkg('@mono/web'));
  w('apps/web/index.js', 'export const page = "web v1";\n');
  w('packages/utils/package.json', pkg('@mono/utils', { '@mono/base': 'workspace:*' }));
  w('packages/utils/index.js', 'export { base as greeting } from "@mono/base";\n');
  w('packages/base/package.json', pkg('@mono/base'));
  w('packages/base/index.js', 'export const base = "hello v1";\n');
  w('packages/other/package.json', pkg('@mono/other'));
  w('packages/other/index.js', 'export const other = 1;\n');
  for (let i = 0; i < 50; i++) w(`vendor/lib${i}/mod.js`, `export const n = ${i};\n`);
  commitWorktree(tmp);
  const wt = tmp.wt.a;
  fs.mkdirSync(path.join(wt, 'node_modules/@mono'), { recursive: true });
  for (const [name, dir] of [['utils', 'packages/utils'], ['base', 'packages/base']])
    fs.symlinkSync(path.join('..', '..', dir), path.join(wt, 'node_modules/@mono', name));
  return tmp;
}

const edit = (wt, rel, text) => fs.appendFileSync(path.join(wt, rel), text);

for (const workspaces of ['npm', 'pnpm']) {
  test(`${workspaces} workspaces: a member's server fingerprints itself, the members it depends on and the top's files; the web app beside it is none of its business`, async (t) => {
    const tmp = monorepo(t, workspaces);
    const wt = tmp.wt.a;
    const px = await startDaemon(t, tmp, ['--stale-grace', '400ms']);
    const run = startRun(t, tmp, {
      cwd: path.join(wt, 'apps/api'), front: px.port, command: [process.execPath, 'server.js', '{port}'],
    });
    const port = await run.ready;
    const who = JSON.parse((await httpGet(port, '/__whoami')).body);
    assert.equal(who.checkout, wt);
    const inc = who.fingerprint.include;
    for (const p of ['apps/api/**/*.js', 'packages/utils/**/*.js', 'packages/base/**/*.js', '*.json', '.env'])
      assert.ok(inc.includes(p), `${p} in ${JSON.stringify(inc)}`);
    assert.ok(!inc.some((p) => /^(apps\/web|packages\/other|vendor|\*\*)\//.test(p)), JSON.stringify(inc));
    // package.json and .env at the top, and apps/api's, utils' and base's two files each
    assert.equal(who.fingerprint.files, 8, JSON.stringify(who.fingerprint));

    const first = await getWorktree(px.port, wt);
    assert.equal(first.status, 200, first.body);
    assert.equal(JSON.parse(first.body).greeting, 'hello v1');
    edit(wt, 'apps/web/index.js', '// the web app, edited\n');
    edit(wt, 'vendor/lib7/mod.js', '// a vendored file\n');
    edit(wt, 'packages/other/index.js', '// a member it does not use\n');
    await new Promise((r) => setTimeout(r, 1200));
    const after = await getWorktree(px.port, wt);
    assert.equal(after.status, 200, `${after.status} ${after.body}`);
    assert.equal(JSON.parse(after.body).pid, JSON.parse(first.body).pid, 'not restarted');
    assert.equal((await lsJson(tmp))[0].whoami.state, 'verified');

    edit(wt, 'packages/base/index.js', '// a member it depends on, through utils\n');
    await waitFor(async () => (await lsJson(tmp))[0].whoami?.state === 'stale', 10000, 'stale after an edit of packages/base');
    sanitizerClean(assert, px.stderr());
  });
}
