// 131: Playwright left on localhost, the "port" recipe (conf/PLAYWRIGHT.md):
// no config change at all. Three linked worktrees of the tiny app of 130
// (fixtures/playwright-app: server.mjs, the spec), whose repository commits
// a .wtproxy (fixtures/playwright-port: `start = node server.mjs {port}`,
// `front` = the daemon's port, `idle_stop = 0`), one daemon. In each
// worktree a config (fixtures/playwright-port/playwright.config.mjs) with
// baseURL and webServer.port on the front port and a webServer.command
// that must never run: Playwright finds the port answered by wtproxy and,
// with reuseExistingServer, reuses "the server". The three runs start at
// once. Each worktree's first request (Chromium's or the request
// context's) finds no registration; the daemon starts the worktree's
// server from .wtproxy, holds the request until it is ready and routes it:
// each run must see its own worktree's page. Afterwards `wtproxy ls`
// shows the three servers the daemon started, one per worktree.
//
// Second part, idle stop: a small repo whose .wtproxy says `idle_stop = 2s`.
// A request starts its server; a second one 1.2 s later is served by the
// same process and restarts the idle clock; about 2 s after it the
// registration is gone and so are the wrapper and the server. A request
// after that starts a new one.
// WTPROXY_TEST_VERBOSE=1 prints every run's output as diagnostics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon, lsJson, waitFor, get, pidAlive, sanitizerClean, git } from './lib/registry.mjs';
import { playwright, processesUnder, nodeModules, chromium } from './lib/playwright.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const appFixture = path.join(here, 'fixtures', 'playwright-app');
const portFixture = path.join(here, 'fixtures', 'playwright-port');
// fixtures/playwright-port/.wtproxy with `front` and `idle_stop` set.
function wtproxyFile(front, idleStop) {
  const text = fs.readFileSync(path.join(portFixture, '.wtproxy'), 'utf8')
    .replace(/^front\s*=.*$/m, `front = ${front}`)
    .replace(/^idle_stop\s*=.*$/m, `idle_stop = ${idleStop}`);
  assert.match(text, /^start = node server\.mjs \{port\}$/m);
  return text;
}

// A folder ROOT/NAME holding the app (server.mjs and e2e/ from
// playwright-app, the port recipe's config) and .wtproxy, committed on
// main, and linked worktrees ROOT/wt-X, each with a node_modules symlink
// to tests/node_modules. All paths are realpaths.
function appRepo(root, name, wtproxy, wtNames) {
  const repo = path.join(root, name);
  fs.mkdirSync(repo);
  fs.copyFileSync(path.join(appFixture, 'server.mjs'), path.join(repo, 'server.mjs'));
  fs.copyFileSync(path.join(appFixture, 'whoami.mjs'), path.join(repo, 'whoami.mjs'));
  fs.cpSync(path.join(appFixture, 'e2e'), path.join(repo, 'e2e'), { recursive: true });
  fs.copyFileSync(path.join(portFixture, 'playwright.config.mjs'), path.join(repo, 'playwright.config.mjs'));
  fs.writeFileSync(path.join(repo, '.wtproxy'), wtproxy);
  fs.writeFileSync(path.join(repo, '.gitignore'), 'node_modules\ntest-results/\n');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'app');
  const wt = {};
  for (const n of wtNames) {
    wt[n] = path.join(root, `wt-${n}`);
    git(repo, 'worktree', 'add', '-q', wt[n], '-b', n);
    assert.ok(fs.existsSync(path.join(wt[n], '.wtproxy')), `wt-${n} has the committed .wtproxy`);
    fs.symlinkSync(nodeModules, path.join(wt[n], 'node_modules'));
  }
  return { repo, wt };
}

const killAll = (pids) => { for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } };

// Where the daemon writes the output of a server it started:
// <state dir>/servers/<worktree folder name>-<hash of its path>-<front>.log,
// the state dir being the folder of the state file (--state;
// $XDG_STATE_HOME/wtproxy by default).
function serverLog(tmp, worktree) {
  const dir = path.join(path.dirname(tmp.state), 'servers');
  const name = new RegExp(`^${path.basename(worktree)}-[0-9a-f]{8}-\\d+\\.log$`);
  const names = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => name.test(f)) : [];
  const file = names.length === 1 ? path.join(dir, names[0]) : path.join(dir, `${path.basename(worktree)}-HASH-FRONT.log`);
  const found = fs.existsSync(file) ? file : null;
  return { found, candidates: [file], text: found ? fs.readFileSync(found, 'utf8') : '' };
}

// What to say when a run or request got no server: 503 is what this test
// gets from a daemon that does not start servers from .wtproxy.
function explain(text, tmp, worktrees, px) {
  const logs = worktrees.map((w) => {
    const l = serverLog(tmp, w);
    return l.found ? `--- ${l.found} ---\n${l.text}` : `--- no server log for ${w} (looked at ${l.candidates.join(', ')}) ---`;
  }).join('\n');
  const hint = /no-backend|Received: 503|\b503\b/.test(text)
    ? 'wtproxy answered 503 (no backend): the daemon did not start the worktree\'s server from its .wtproxy ' +
      '(autostart missing, or it failed: see the server logs and the daemon output below)\n'
    : '';
  return `${hint}${text}\n${logs}\n--- daemon ---\n${px.stderr()}`;
}

const names = ['a', 'b', 'c'];

test('port recipe: three parallel Playwright runs, no config change; the daemon starts each worktree\'s server from .wtproxy', {
  timeout: 60000,
}, async (t) => {
  // not a skip: a machine without them would pass while testing nothing
  assert.ok(fs.existsSync(chromium), `${chromium} is missing: apt-get install chromium (scripts/bootstrap)`);
  assert.ok(fs.existsSync(path.join(nodeModules, '@playwright', 'test')), '@playwright/test is missing: cd tests && npm ci');
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-pwport-')));
  removeAfter(t, root);
  t.after(() => killAll(processesUnder(root)));
  const tmp = { root, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
  const px = await startDaemon(t, tmp);
  const { wt } = appRepo(root, 'repo', wtproxyFile(px.port, 0), names);
  const worktrees = names.map((n) => wt[n]);
  // the runs need no wtproxy setting at all: only the front port
  const env = { APP_FRONT: String(px.port) };
  assert.deepEqual(await lsJson(tmp), [], 'no registration before the runs');

  const started = Date.now();
  const runs = await Promise.all(names.map((n) => playwright(t, wt[n], { env: { DEBUG: 'pw:webserver', ...env }, label: '131' })));
  const took = Date.now() - started;
  if (process.env.WTPROXY_TEST_VERBOSE) runs.forEach((r, i) => t.diagnostic(`wt-${names[i]}:\n${r.out}`));
  runs.forEach((r, i) => {
    const n = names[i];
    // Playwright saw the port answered and never ran the command
    assert.doesNotMatch(r.out, /should-not-run/, `wt-${n}: Playwright ran webServer.command:\n${r.out}`);
    assert.match(r.out, /WebServer is already available/, `wt-${n}: Playwright's port check did not find wtproxy:\n${r.out}`);
    assert.equal(r.code, 0, `playwright in wt-${n} exited ${r.code ?? r.signal}:\n${explain(r.out, tmp, [wt[n]], px)}`);
    assert.match(r.out, /2 passed/, `wt-${n}:\n${r.out}`);
  });
  t.diagnostic(`three parallel runs took ${took} ms`);

  // the daemon started three servers, one per worktree, and keeps them (idle_stop = 0)
  const entries = await lsJson(tmp);
  assert.equal(entries.length, 3, `three entries after the runs: ${JSON.stringify(entries, null, 1)}\n--- daemon ---\n${px.stderr()}`);
  assert.deepEqual(entries.map((e) => e.worktree).sort(), [...worktrees].sort(), JSON.stringify(entries, null, 1));
  for (const e of entries) {
    assert.equal(e.front, px.port, JSON.stringify(e));
    assert.equal(e.state, 'ready', JSON.stringify(e));
    assert.ok(e.pid > 0 && pidAlive(e.pid), `a live pid: ${JSON.stringify(e)}`);
    assert.ok(e.requests >= 2, `both specs went through it: ${JSON.stringify(e)}`);
    // its wrapper and server run in the worktree (a started process's cwd)
    assert.ok(fs.readlinkSync(`/proc/${e.pid}/cwd`) === e.worktree, `pid ${e.pid} runs in ${e.worktree}`);
    const log = serverLog(tmp, e.worktree);
    assert.ok(log.found, `the server's output goes to <state dir>/servers/${path.basename(e.worktree)}-HASH-FRONT.log (looked at ${log.candidates.join(', ')})`);
  }
  // a request from each worktree now goes straight to its running server
  const pids = new Set();
  for (const w of worktrees) {
    const r = await get(px.port, { 'X-Wtproxy-Worktree': w });
    assert.equal(r.status, 200, explain(r.body, tmp, [w], px));
    assert.ok(r.body.includes(`<code id="worktree">${w}</code>`), r.body);
    pids.add(/\(pid (\d+)\)/.exec(r.body)[1]);
  }
  assert.equal(pids.size, 3, 'three server processes');
  assert.equal(px.proc.exitCode, null, `the daemon is still up:\n${px.stderr()}`);

  // stop them (the after hook would too): the registrations go with them
  for (const e of entries) { try { process.kill(-e.pid, 'SIGTERM'); } catch { try { process.kill(e.pid, 'SIGTERM'); } catch { /* gone */ } } }
  await waitFor(async () => (await lsJson(tmp)).length === 0, 3000, 'no registration left once the servers are stopped');
  sanitizerClean(assert, px.stderr());
});

test('port recipe: a server the daemon started stops after idle_stop without requests', {
  timeout: 30000,
}, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-idle-')));
  removeAfter(t, root);
  t.after(() => killAll(processesUnder(root)));
  const tmp = { root, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
  const px = await startDaemon(t, tmp);
  const { wt } = appRepo(root, 'repo', wtproxyFile(px.port, '2s'), ['idle']);
  const w = wt.idle;
  const page = async () => {
    const r = await get(px.port, { 'X-Wtproxy-Worktree': w });
    assert.equal(r.status, 200, explain(r.body, tmp, [w], px));
    assert.ok(r.body.includes(`<code id="worktree">${w}</code>`), r.body);
    return { at: Date.now(), pid: Number(/\(pid (\d+)\)/.exec(r.body)[1]) };
  };

  const first = await page();
  const [entry] = await lsJson(tmp);
  assert.ok(entry && entry.worktree === w && entry.pid > 0, `the daemon registered the server it started: ${JSON.stringify(entry)}`);
  const procs = processesUnder(w);
  assert.ok(procs.includes(entry.pid) && procs.includes(first.pid), `wrapper ${entry.pid} and server ${first.pid} run in ${w}: ${procs}`);
  const log = serverLog(tmp, w);
  assert.ok(log.found, `the server's output goes to <state dir>/servers/wt-idle-HASH-FRONT.log (looked at ${log.candidates.join(', ')})`);
  // the wrapper's own lines go there too
  assert.match(log.text, /wtproxy: wt-idle is ready on 127\.0\.0\.1:\d+/, log.text);

  // a request 1.2 s later: the same server, and the idle clock starts again
  await new Promise((r) => setTimeout(r, 1200));
  const second = await page();
  assert.equal(second.pid, first.pid, 'the second request reached the same server');
  assert.equal((await lsJson(tmp)).length, 1, 'still registered 1.2 s after a request');

  await waitFor(async () => (await lsJson(tmp)).length === 0, 6000,
    `the registration is dropped within 6 s of the last request (daemon:\n${px.stderr()})`);
  const gone = Date.now() - second.at;
  t.diagnostic(`stopped ${gone} ms after the last request`);
  assert.ok(gone >= 1500, `stopped ${gone} ms after the last request, before idle_stop (2 s): the second request did not count`);
  // the daemon's log says it stopped it, not that it "unregistered"
  assert.match(px.stderr(), /^wtproxy: dropped \S*wt-idle \(front :\d+, port \d+\): the daemon stopped it: idle for 2000 ms \(idle_stop\)$/m, px.stderr());
  await waitFor(() => procs.every((pid) => !pidAlive(pid)), 3000,
    `the wrapper and the server (pids ${procs}) are gone`);

  // the next request starts a new one
  const third = await page();
  assert.notEqual(third.pid, first.pid, 'a new server after the idle stop');
  assert.equal((await lsJson(tmp)).length, 1);
  sanitizerClean(assert, px.stderr());
});
