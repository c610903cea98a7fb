// 152: the dashboard's JSON API and its rules. /__wtproxy/api/backends has
// the entries of `wtproxy ls --json`, field for field, plus the display
// fields (name, branch, status); /__wtproxy/api/refusals lists a refusal
// just answered; `wtproxy dashboard` prints the URL of the daemon's front
// port; the dashboard is read-only (POST, PUT, DELETE: 405 with Allow),
// refuses a Host that is not a loopback name (403: DNS rebinding), answers
// HEAD without a body, and its page references no external URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, lsJson, cli, get, getWorktree, sanitizerClean, waitFor } from './lib/registry.mjs';
import { httpGet } from './lib/backends.mjs';

test('api/backends matches wtproxy ls --json; api/refusals; wtproxy dashboard', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c']);
  const px = await startDaemon(t, tmp);
  const a = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  const b = startRun(t, tmp, { cwd: tmp.wt.b, front: px.port });
  await a.ready;
  await b.ready;
  // Once a server is ready the daemon asks its /__whoami itself: wait for
  // both verdicts, so that the two snapshots below see the same ones.
  await waitFor(async () => (await lsJson(tmp)).every((e) => e.whoami?.state === 'verified'),
    10000, 'the daemon to verify both new servers');

  const ls = await lsJson(tmp);
  const api = await get(px.port, {}, '/__wtproxy/api/backends');
  assert.equal(api.status, 200);
  assert.match(api.headers['content-type'], /^application\/json/);
  const entries = JSON.parse(api.body);
  assert.equal(entries.length, 2);
  assert.equal(ls.length, 2);
  for (const want of ls) {
    const got = entries.find((e) => e.worktree === want.worktree);
    assert.ok(got, `api has ${want.worktree}`);
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, `${want.worktree}: ${k}`);
    assert.equal(got.name, want.worktree.split('/').pop());
    assert.equal(got.branch, want.worktree.endsWith('wt-a') ? 'a' : 'b');
    assert.equal(got.status, 'ready');
    assert.equal(typeof got.status_reason, 'string');
  }

  const refused = await getWorktree(px.port, tmp.wt.c, '/orders?id=1');
  assert.equal(refused.status, 503);
  const refusals = JSON.parse((await get(px.port, {}, '/__wtproxy/api/refusals')).body);
  const last = refusals[refusals.length - 1];
  assert.equal(last.reason, 'no-backend');
  assert.equal(last.status, 503);
  assert.equal(last.request, 'GET /orders');
  assert.equal(last.named, tmp.wt.c);
  assert.equal(last.front, px.port);
  assert.match(last.detail, /no dev server is registered for worktree/);
  assert.match(last.fix, new RegExp(`^Start your dev server through wtproxy, from its worktree: wtproxy run --front ${px.port} -- `), 'the fix its page gave');

  const dash = await cli(tmp, ['dashboard']);
  assert.equal(dash.code, 0, dash.stderr);
  assert.equal(dash.stdout, `http://127.0.0.1:${px.port}/__wtproxy/\n`);

  await px.stop();
  sanitizerClean(assert, px.stderr());
});

test('read-only, loopback names only, HEAD, 404, no external URL', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    const r = await httpGet(px.port, '/__wtproxy/api/backends', { method, body: method === 'POST' ? 'x=1' : undefined });
    assert.equal(r.status, 405, method);
    assert.equal(r.headers.allow, 'GET, HEAD');
  }
  const rebinding = await get(px.port, { Host: `attacker.example:${px.port}` }, '/__wtproxy/api/backends');
  assert.equal(rebinding.status, 403);
  assert.match(rebinding.body, /localhost/);
  for (const host of [`localhost:${px.port}`, `wt-a.localhost:${px.port}`, `127.0.0.1:${px.port}`, `[::1]:${px.port}`]) {
    assert.equal((await get(px.port, { Host: host }, '/__wtproxy/api/backends')).status, 200, host);
  }
  const head = await httpGet(px.port, '/__wtproxy/', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.equal((await get(px.port, {}, '/__wtproxy/nothing-here')).status, 404);

  const page = await get(px.port, {}, '/__wtproxy/');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'], /^text\/html/);
  assert.match(page.headers['content-security-policy'], /default-src 'none'/);
  // Every URL the page could load is its own: no src/href but data: or
  // same-origin paths; no http(s) URL but the SVG namespace of its icon.
  for (const m of page.body.matchAll(/\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/g)) {
    assert.ok(m[1].startsWith('data:') || m[1].startsWith('/__wtproxy/'), `page references ${m[1]}`);
  }
  const urls = [...page.body.matchAll(/https?:\/\/[^\s"')]+/g)].map((m) => m[0]);
  assert.deepEqual(urls.filter((u) => u !== 'http://www.w3.org/2000/svg'), []);
  assert.doesNotMatch(page.body, /@import|url\(\s*["']?(?!data:)/);

  // None of this went to the refusal log: it holds routing refusals only.
  assert.deepEqual(JSON.parse((await get(px.port, {}, '/__wtproxy/api/refusals')).body), []);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});
