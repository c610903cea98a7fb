// 183: a CommonJS Node server with the middleware line that init, doctor
// and the 502 give it, tested with Jest (an Express + Jest + supertest
// user). The line was `const { whoami } = require('wtproxy-whoami')`:
// Node 20.19 requires the package's ES module, Jest's own module system
// never does, so the test that required the server stopped at the
// package's first `import` and every suite failed, 0 tests run. The line
// now requires the package under `wtproxy run` only (WTPROXY_PORT): Jest
// passes, and the daemon's server still answers /__whoami, verified.
// Runs Jest 29 from tests/jest (scripts/bootstrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeWorktrees, startDaemon, cli, curlFrom, lsJson, sanitizerClean } from './lib/registry.mjs';
import { runToExit } from './lib/conformance.mjs';
import { repoRoot } from './lib/wtproxy.mjs';

const jest = path.join(repoRoot, 'tests/jest/node_modules/.bin/jest');

const server = (line) => `const http = require('node:http');
${line}
const handler = (req, res) => res.end('notes v1');
const server = http.createServer((req, res) => mw(req, res, () => handler(req, res)));
if (require.main === module) server.listen(Number(process.env.PORT), '127.0.0.1');
module.exports = server;
`;

// What supertest does: the server required, listened on a free port, asked.
const jestTest = `const http = require('node:http');
const server = require('./server');
test('the server answers', async () => {
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const body = await new Promise((ok, fail) => http.get('http://127.0.0.1:' + server.address().port + '/',
    (res) => { let b = ''; res.on('data', (d) => { b += d; }); res.on('end', () => ok(b)); }).on('error', fail));
  server.close();
  expect(body).toBe('notes v1');
});
`;

test('a CommonJS server with init\'s middleware line: Jest loads it, the daemon serves it verified', async (t) => {
  const tmp = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.repo, 'package.json'), JSON.stringify({ name: 'notes', scripts: { start: 'node server.js', test: 'jest' } }));
  fs.writeFileSync(path.join(tmp.repo, 'server.js'), server('const mw = (req, res, next) => next();'));
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), 'node_modules\n');
  const init = await cli(tmp, ['init', '.', '--apply', '--front', String(px.port), '--json'], { cwd: tmp.repo });
  assert.equal(init.code, 0, init.stderr);
  const note = JSON.parse(init.stdout).notes.find((n) => n.includes('a CommonJS file'));
  const line = (/once at start: `([^`]+)`/.exec(note || '') || [])[1];
  assert.ok(line, `init gives a CommonJS server its line: ${init.stdout}`);
  fs.writeFileSync(path.join(tmp.repo, 'server.js'), server(line));
  fs.writeFileSync(path.join(tmp.repo, 'server.test.js'), jestTest);
  fs.mkdirSync(path.join(tmp.repo, 'node_modules'));
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(tmp.repo, 'node_modules/wtproxy-whoami'));
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-qm', 'notes');

  const run = await runToExit(jest, ['--ci', '--rootDir', tmp.repo], { cwd: tmp.repo, ms: 60000 });
  assert.equal(run.code, 0, `Jest ran the suite with init's line in server.js (${line}):\n${run.stderr}`);
  assert.match(run.stderr, /Tests:\s+1 passed, 1 total/);

  const r = await curlFrom(tmp.repo, px.port);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'notes v1');
  const entry = (await lsJson(tmp)).find((e) => e.worktree === tmp.repo);
  assert.equal(entry?.whoami?.state, 'verified', JSON.stringify(entry));
  t.after(() => { try { process.kill(-entry.pid, 'SIGKILL'); } catch { /* gone */ } });
  sanitizerClean(assert, px.stderr());
});
