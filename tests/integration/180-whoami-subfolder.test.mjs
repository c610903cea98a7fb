// 180: a server whose /__whoami checkout is a folder inside its worktree
// (a Go module in api/, built and run there, fingerprints its own folder,
// as the Go recipe of `wtproxy help whoami-protocol` does at the top):
// served and verified, the daemon's fingerprint rooted at that folder (an
// edit in it makes the server stale, one beside it does not). It was
// refused 421 "belongs to another checkout" with a kill and a restart of
// the same command, for ever. A server whose checkout is a worktree
// nested inside the caller's (repo/.worktrees/wt-b in the main checkout),
// or a folder of one, is still refused 421, saying that it is one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  makeWorktrees, startDaemon, startRun, getWorktree, lsJson, sanitizerClean,
} from './lib/registry.mjs';

function refusedAs(r, reason) {
  assert.equal(r.headers['x-wtproxy-refused'], reason, `expected ${reason}: ${r.status} ${r.body}`);
}

test('a server whose checkout is a folder of its worktree is served, fingerprinted there', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '400ms']);
  const api = path.join(tmp.wt.a, 'api');
  fs.mkdirSync(api);
  fs.writeFileSync(path.join(api, 'main.py'), 'print(1)\n');
  fs.writeFileSync(path.join(tmp.wt.a, 'tool.py'), 'print(1)\n');
  // cd api && ... : its /__whoami names api, the root of its fingerprint
  await startRun(t, tmp, { cwd: api, front: px.port, serverArgs: ['--checkout', api] }).ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).worktree, tmp.wt.a);
  let [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'verified', e.whoami.detail);
  assert.equal(e.whoami.checkout, api);
  assert.equal(e.whoami.hash, e.whoami.disk_hash);

  // An edit beside api/ is not in the fingerprint it declared: still served.
  await new Promise((res) => setTimeout(res, 20)); // a later mtime than the server's start
  fs.writeFileSync(path.join(tmp.wt.a, 'tool.py'), 'print(2)\n');
  const t0 = Date.now();
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.ok(Date.now() - t0 < 350, `not held for the stale grace: ${Date.now() - t0} ms`);

  // An edit in it is: stale, named relative to api/.
  fs.writeFileSync(path.join(api, 'main.py'), 'print(2)\n');
  r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'stale-code');
  assert.equal(r.status, 409);
  assert.ok(r.body.includes(`your own server for ${api}`), r.body);
  assert.match(r.body, /1 file: main\.py/);
  [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'stale');
  sanitizerClean(assert, px.stderr());
});

test('a worktree nested inside the caller\'s, or a folder of one, is still another checkout: 421 saying so', async (t) => {
  const tmp = makeWorktrees(t, []);
  const nested = path.join(tmp.repo, '.worktrees', 'b');
  execFileSync('git', ['-C', tmp.repo, 'worktree', 'add', '-q', nested, '-b', 'b'], { stdio: 'ignore' });
  const nestedApi = path.join(nested, 'api');
  fs.mkdirSync(nestedApi);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.repo, front: px.port, serverArgs: ['--checkout', nested] });
  const port = await run.ready;
  let r = await getWorktree(px.port, tmp.repo);
  refusedAs(r, 'checkout-mismatch');
  assert.equal(r.status, 421);
  assert.ok(r.body.includes(`port ${port} is served by ${nested}, not by ${tmp.repo}`), r.body);
  assert.ok(r.body.includes('belongs to another checkout (a worktree of its own, nested inside yours)'), r.body);
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'mismatch');
  run.proc.kill('SIGTERM');
  await run.exited;

  const sub = startRun(t, tmp, { cwd: tmp.repo, front: px.port, serverArgs: ['--checkout', nestedApi] });
  await sub.ready;
  r = await getWorktree(px.port, tmp.repo);
  refusedAs(r, 'checkout-mismatch');
  assert.equal(r.status, 421);
  assert.ok(r.body.includes(`belongs to another checkout (in the worktree ${nested}, nested inside yours)`), r.body);
  sanitizerClean(assert, px.stderr());
});
