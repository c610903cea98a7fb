// 120: requests that name no worktree go to the caller's own worktree's
// server, found from the calling process: curl and python3 from each
// worktree, from a subfolder, from a child that left the worktree while
// its parent is inside, with the WTPROXY_WORKTREE override, from nested
// worktrees; a caller outside every worktree gets the default backend or
// a 503 that names its process; a worktree with no server gets its own
// 503, never a sibling's server; another user gets 421 other-user.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun } from './lib/registry.mjs';
import { httpBackend } from './lib/backends.mjs';
import { removeAfter } from './lib/cleanup.mjs';

// Run a shell command line in cwd and resolve with { code, stdout, stderr }.
function sh(cwd, line, env = {}) {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', line], { cwd, env: { ...process.env, ...env }, timeout: 15000 },
      (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr }));
  });
}

const curl = (port) => `curl -sS -o - -w '\\n%{http_code}' http://127.0.0.1:${port}/who`;

// The worktree a response came from (lib/wt-server.mjs answers with it), and its status.
function parse(out) {
  const lines = out.stdout.trimEnd().split('\n');
  const status = Number(lines.pop());
  const body = lines.join('\n');
  let worktree = null;
  try { worktree = JSON.parse(body).worktree ?? null; } catch { /* an error page */ }
  return { status, body, worktree };
}

async function threeWorktrees(t, extraDaemonArgs = []) {
  const tmp = makeWorktrees(t, ['a', 'b', 'c']);
  const px = await startDaemon(t, tmp, extraDaemonArgs);
  const runs = ['a', 'b'].map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }));
  await Promise.all(runs.map((r) => r.ready));
  return { tmp, px };
}

test('curl and python3 from each worktree reach their own server', async (t) => {
  const { tmp, px } = await threeWorktrees(t);
  for (const n of ['a', 'b']) {
    const r = parse(await sh(tmp.wt[n], curl(px.port)));
    assert.equal(r.status, 200, r.body);
    assert.equal(r.worktree, tmp.wt[n], `curl from wt-${n}`);
    const py = await sh(tmp.wt[n], `/usr/bin/python3 -c "import urllib.request,json;print(json.load(urllib.request.urlopen('http://127.0.0.1:${px.port}/'))['worktree'])"`);
    assert.equal(py.stdout.trim(), tmp.wt[n], `python3 from wt-${n}: ${py.stderr}`);
  }
  fs.mkdirSync(path.join(tmp.wt.b, 'src', 'deep'), { recursive: true });
  const deep = parse(await sh(path.join(tmp.wt.b, 'src', 'deep'), curl(px.port)));
  assert.equal(deep.worktree, tmp.wt.b, 'from a subfolder');
});

test('a child that left the worktree is placed by its parent; the env override wins', async (t) => {
  const { tmp, px } = await threeWorktrees(t);
  // the subshell cds to / and execs curl; its parent sh stays in wt-a
  const child = parse(await sh(tmp.wt.a, `(cd / && exec ${curl(px.port)})`));
  assert.equal(child.worktree, tmp.wt.a, child.body);
  const env = parse(await sh('/', curl(px.port), { WTPROXY_WORKTREE: tmp.wt.b }));
  assert.equal(env.worktree, tmp.wt.b, env.body);
});

test('a worktree without a server gets its own 503, never a sibling\'s server', async (t) => {
  const { tmp, px } = await threeWorktrees(t);
  const r = parse(await sh(tmp.wt.c, curl(px.port)));
  assert.equal(r.status, 503, r.body);
  assert.ok(r.body.includes(tmp.wt.c), `the 503 names the caller's worktree:\n${r.body}`);
  assert.match(r.body, new RegExp(`wtproxy run --front ${px.port} -- `), 'the fix registers on the port asked');
});

test('a caller outside every worktree: 503 naming its process, or the default backend', async (t) => {
  const outside = fs.realpathSync(fs.mkdtempSync('/tmp/wtproxy-outside-'));
  removeAfter(t, outside);
  const { px } = await threeWorktrees(t);
  const r = parse(await sh(outside, curl(px.port)));
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /pid \d+: curl/, `names the calling process:\n${r.body}`);
  assert.ok(r.body.includes(outside), `and its cwd:\n${r.body}`);

  const be = await httpBackend(t);
  const { px: px2 } = await threeWorktrees(t, ['--backend', `127.0.0.1:${be.port}`]);
  const d = parse(await sh(outside, curl(px2.port)));
  assert.equal(d.status, 200, d.body);
  assert.equal(d.worktree, null, 'the default backend answered, not a worktree server');
});

test('nested worktrees resolve to the nearest one, never the main checkout', async (t) => {
  const tmp = makeWorktrees(t, []);
  const nested = path.join(tmp.repo, '.worktrees', 'wt-n');
  await sh(tmp.repo, `git worktree add -q ${nested} -b n`);
  const px = await startDaemon(t, tmp);
  const runs = [tmp.repo, nested].map((cwd) => startRun(t, tmp, { cwd, front: px.port }));
  await Promise.all(runs.map((r) => r.ready));
  assert.equal(parse(await sh(nested, curl(px.port))).worktree, nested);
  assert.equal(parse(await sh(tmp.repo, curl(px.port))).worktree, tmp.repo);
});

test('IPv6 clients are identified too', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--listen', '[::1]:0']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const r = parse(await sh(tmp.wt.a, `curl -sS -g -o - -w '\\n%{http_code}' 'http://[::1]:${px.port}/'`));
  assert.equal(r.worktree, tmp.wt.a, r.body);
});

// A test runner of another user (runuser -u nobody -- npx playwright test)
// in a worktree whose server is root's daemon's: refused with a status a
// runner never takes for a ready server. Playwright's webServer url check
// takes 2xx, 3xx and 400-403 for one: with a 403 it never ran its command,
// and its tests ran against this page.
test('another user calling from a worktree gets 421 other-user, the port\'s daemon named, without the owner\'s paths', async (t) => {
  if (process.getuid() !== 0) return t.skip('needs root to run a client as nobody');
  const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const r = parse(await sh(tmp.wt.a, `setpriv --reuid=65534 --regid=65534 --clear-groups ${curl(px.port).replace('-o -', '-i')}`));
  assert.ok(r.status >= 404, `a status a test runner takes for no server, not ${r.status}:\n${r.body}`);
  assert.equal(r.status, 421, r.body);
  assert.match(r.body, /^x-wtproxy-error: other-user\r?$/mi, r.body);
  assert.ok(r.body.includes(`your process runs as uid 65534, and this wtproxy daemon on :${px.port} as root (uid 0): the dev server it has for your worktree is not yours`), r.body);
  assert.ok(r.body.includes('Fix: This port is held by the daemon of root (uid 0): ask that user to stop it (as them: wtproxy stop --daemon), then start yours; or serve yours on a port of your own'), r.body);
  assert.ok(!r.body.includes(tmp.root), `the refusal reveals no paths:\n${r.body}`);
});
