// 130: Playwright left on localhost, the "url" recipe (conf/PLAYWRIGHT.md).
// Three linked worktrees of a tiny app (fixtures/playwright-app), one
// daemon; in each worktree a real `playwright test` (npm @playwright/test,
// Debian's /usr/bin/chromium) whose config keeps baseURL and webServer.url
// on the daemon's front port, its webServer.command being
// `wtproxy run -- node server.mjs {port}`. The three runs start at once.
// Each gets 503 from its readiness check (its worktree has no server yet),
// starts its own server through `wtproxy run`, and then Chromium and
// Playwright's request context, identified by their cwd, must see the page
// of their own worktree. When they exit, Playwright's SIGKILL of each
// webServer's process group has taken the servers down: no registration
// is left. The negative control runs the same specs with every config
// pointing straight at one server on a fixed port, as before wtproxy: the
// worktrees whose server that is not must fail.
// WTPROXY_TEST_VERBOSE=1 prints every run's output as diagnostics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon, lsJson, waitFor, get, sanitizerClean, git } from './lib/registry.mjs';
import { playwright, processesUnder, nodeModules, chromium, fixtureRepo } from './lib/playwright.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = path.join(here, 'fixtures', 'playwright-app');
// A temp folder with repo/ (the app, committed on main) and linked
// worktrees wt-a, wt-b, wt-c. Each worktree gets a node_modules symlink
// to tests/node_modules, so its config and spec import @playwright/test
// as an app's own would. All paths are realpaths.
function appWorktrees(t, names) {
  const { root, repo } = fixtureRepo(t, fixture, 'wtproxy-pw-');
  const wt = {};
  for (const n of names) {
    wt[n] = path.join(root, `wt-${n}`);
    git(repo, 'worktree', 'add', '-q', wt[n], '-b', n);
    fs.symlinkSync(nodeModules, path.join(wt[n], 'node_modules'));
  }
  return { root, repo, wt, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const names = ['a', 'b', 'c'];

test('three worktrees, three parallel Playwright runs on one front port: each reaches its own server', {
  timeout: 90000,
}, async (t) => {
  // not a skip: a machine without them would pass while testing nothing
  assert.ok(fs.existsSync(chromium), `${chromium} is missing: apt-get install chromium (scripts/bootstrap)`);
  assert.ok(fs.existsSync(path.join(nodeModules, '@playwright', 'test')), '@playwright/test is missing: cd tests && npm ci');
  const tmp = appWorktrees(t, names);
  t.after(() => { for (const pid of processesUnder(tmp.root)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } });
  const px = await startDaemon(t, tmp);
  const env = {
    APP_FRONT: String(px.port), WTPROXY_BIN: wtproxyBin,
    WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1',
  };

  // before: every worktree has its own 503 (what makes Playwright start its command)
  for (const n of names) {
    const r = await get(px.port, { 'X-Wtproxy-Worktree': tmp.wt[n] });
    assert.equal(r.status, 503, r.body);
  }

  const started = Date.now();
  const runs = await Promise.all(names.map((n) => playwright(t, tmp.wt[n], { env, label: '130' })));
  const took = Date.now() - started;
  runs.forEach((r, i) => {
    const n = names[i];
    assert.equal(r.code, 0, `playwright in wt-${n} exited ${r.code ?? r.signal}:\n${r.out}\n--- daemon ---\n${px.stderr()}`);
    assert.match(r.out, /2 passed/, `wt-${n}:\n${r.out}`);
    // the readiness check got 503, so Playwright ran `wtproxy run` (its stderr shows as [WebServer])
    assert.match(r.out, new RegExp(`\\[WebServer\\] wtproxy: wt-${n} is ready on 127\\.0\\.0\\.1:\\d+ \\(front :${px.port}\\)`), `wt-${n}:\n${r.out}`);
  });
  t.diagnostic(`three parallel runs took ${took} ms`);
  if (process.env.WTPROXY_TEST_VERBOSE) runs.forEach((r, i) => t.diagnostic(`wt-${names[i]}:\n${r.out}`));

  // Playwright SIGKILLed each webServer's group: wtproxy run and its server died
  await waitFor(async () => (await lsJson(tmp)).length === 0, 3000, 'no registration left after the runs');
  assert.deepEqual(await lsJson(tmp), []);
  await waitFor(() => processesUnder(tmp.root).length === 0, 3000,
    'no process left in the worktrees');
  assert.equal(px.proc.exitCode, null, `the daemon is still up:\n${px.stderr()}`);

  // Negative control: the same specs, every config pointing straight at
  // one server on a fixed port (wt-a's), as before wtproxy. wt-a passes;
  // wt-b and wt-c test wt-a's server and must fail, naming wt-a's path.
  const port = await freePort();
  const server = spawn(process.execPath, ['server.mjs', String(port)], { cwd: tmp.wt.a, stdio: 'ignore' });
  t.after(() => { if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL'); });
  await waitFor(async () => (await get(port)).status === 200, 5000, 'the direct server answers');
  const direct = await Promise.all(names.map((n) =>
    playwright(t, tmp.wt[n], { args: ['--config', 'playwright.direct.config.mjs'], env: { ...env, APP_DIRECT_PORT: String(port) }, label: '130' })));
  if (process.env.WTPROXY_TEST_VERBOSE) direct.forEach((r, i) => t.diagnostic(`control wt-${names[i]}:\n${r.out}`));
  assert.equal(direct[0].code, 0, `control: wt-a tests its own server and passes:\n${direct[0].out}`);
  for (const i of [1, 2]) {
    assert.notEqual(direct[i].code, 0, `control: wt-${names[i]} tested wt-a's server and must fail:\n${direct[i].out}`);
    assert.ok(direct[i].out.includes(tmp.wt.a), `control: wt-${names[i]}'s failure shows wt-a's page:\n${direct[i].out}`);
  }
  server.kill('SIGKILL');
  sanitizerClean(assert, px.stderr());
});
