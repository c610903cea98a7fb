// 157: a Playwright test that fails on an unrelated assertion because its
// page swallowed a fetch wtproxy refused shows, in its own output, what
// wtproxy refused during it (the reporter wtproxy-whoami/playwright,
// conf/PLAYWRIGHT.md), and `wtproxy refusals` says the same.
// A worktree of a small app (fixtures/playwright-refused): a front end on
// one front whose page fetches /api, proxied to the API's front as Vite
// does, and an API whose `wtproxy run` died at start. Real Playwright
// (tests/node_modules), Debian's Chromium, a real daemon on two fronts.
// The failed test's output names the request, the 503 and the API's last
// words with the command that starts it again; the passing test, whose
// fetch is refused alike, gets nothing. A run whose webServer url wtproxy
// refuses (Playwright then runs the command, which fails with EADDRINUSE
// on the front wtproxy holds) gets the refusal under that error. A test
// that fails at once on its refused request is told it too, though
// Playwright's duration (which leaves out the browser's launch) ends
// before it. With two workers each test is told its own worker's
// refusals (the daemon reads its caller's TEST_WORKER_INDEX); one of a
// caller in no worker (the web server's) makes the header say the window
// holds the other worker's refusals too. With no daemon, while another
// server holds the baseURL's port, it says once that no daemon answered
// and the command that tells why (under the failure, else after a run that passed); with
// no wtproxy binary to ask, it says so once; in a worktree with a
// .wtproxy (it adopted wtproxy) that run fails, unless $CI is set.
// Refusals alike (two requests a second apart, one dead server: its age
// in the sentence moved on between them) are one entry, whose
// fix, the page's, is said once under it, as `wtproxy refusals` says it.
// WTPROXY_TEST_VERBOSE=1 prints the runs' output as diagnostics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon, startRun, cli, git, sanitizerClean } from './lib/registry.mjs';
import { playwright, processesUnder, nodeModules, chromium, fixtureRepo } from './lib/playwright.mjs';
import { wtproxyBin, repoRoot } from './lib/wtproxy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = path.join(here, 'fixtures', 'playwright-refused');

// repo/ (the app on main) and its linked worktree wt-a, whose node_modules
// holds tests/node_modules' packages and wtproxy-whoami (whoami/node), as
// an app that linked it has them. Realpaths.
function appWorktree(t) {
  const { root, repo } = fixtureRepo(t, fixture, 'wtproxy-pwref-');
  const wt = path.join(root, 'wt-a');
  git(repo, 'worktree', 'add', '-q', wt, '-b', 'a');
  const nm = path.join(wt, 'node_modules');
  fs.mkdirSync(nm);
  for (const name of fs.readdirSync(nodeModules)) fs.symlinkSync(path.join(nodeModules, name), path.join(nm, name));
  fs.symlinkSync(path.join(repoRoot, 'whoami', 'node'), path.join(nm, 'wtproxy-whoami'));
  return { root, wt, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
}

test('a failed Playwright test prints what wtproxy refused during it; wtproxy refusals says the same', {
  timeout: 240000, // nine Playwright runs: 75 s at a load of 25 on 2 cores
}, async (t) => {
  assert.ok(fs.existsSync(chromium), `${chromium} is missing: apt-get install chromium (scripts/bootstrap)`);
  assert.ok(fs.existsSync(path.join(nodeModules, '@playwright', 'test')), '@playwright/test is missing: cd tests && npm ci');
  const tmp = appWorktree(t);
  t.after(() => { for (const pid of processesUnder(tmp.root)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } });
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0', '--listen', '127.0.0.1:0'], { listeners: 2 });
  const [webFront, apiFront] = px.ports;

  // The API dies at start; its wrapper tells the daemon its last words.
  const api = startRun(t, tmp, { cwd: tmp.wt, front: apiFront, command: [process.execPath, 'api.mjs', '{port}'] });
  assert.notEqual((await api.exited).code, 0, api.stderr());
  const web = startRun(t, tmp, {
    cwd: tmp.wt, front: webFront, stopSignal: 'SIGTERM',
    env: { API_FRONT: String(apiFront), WTPROXY_WHOAMI: path.join(repoRoot, 'whoami/node/index.mjs') },
    command: [process.execPath, 'web.mjs', '{port}'],
  });
  await web.ready;

  const env = { APP_FRONT: String(webFront), WTPROXY_BIN: wtproxyBin, WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' };
  const run = await playwright(t, tmp.wt, { args: ['items.spec'], env, label: '157' });
  if (process.env.WTPROXY_TEST_VERBOSE) t.diagnostic(run.out);
  const out = run.out;
  assert.equal(run.code, 1, `one test fails:\n${out}\n--- daemon ---\n${px.stderr()}`);
  assert.match(out, /1 failed/, out);
  assert.match(out, /1 passed/, out);
  assert.match(out, /Expected: "v2"/, `it fails on the unrelated assertion:\n${out}`);
  const told = [...out.matchAll(/wtproxy refused (\d+) requests? of this worktree during the test "([^"]+)":/g)];
  assert.equal(told.length, 1, `said once, for the failed test only:\n${out}`);
  assert.equal(told[0][2], 'shows the API version');
  assert.equal(told[0][1], '1', `its own window: not the passing test's refusal:\n${out}`);
  const block = out.slice(told[0].index);
  assert.match(block, /\n {4}GET \/api -> 503 [a-z-]+: /, `the request, status and reason:\n${block}`);
  assert.match(block, /Error: ITEMS_DB is not set/, `the API's last words:\n${block}`);
  assert.match(block, new RegExp(`\n {6}Fix: .*cd ${tmp.wt} && wtproxy run --front ${apiFront} -- `), `the fix:\n${block}`);
  // right after the failed test's line, before the run's summary
  assert.ok(told[0].index < out.indexOf('1 failed'), `under the failure:\n${out}`);

  // wtproxy refusals, in the worktree: the same refusal, and its JSON
  const json = await cli(tmp, ['refusals', '--json'], { cwd: tmp.wt });
  assert.equal(json.code, 0, json.stderr);
  const recs = JSON.parse(json.stdout);
  const mine = recs.filter((r) => r.request === 'GET /api');
  assert.ok(mine.length >= 1, json.stdout);
  for (const r of mine) {
    assert.equal(r.status, 503);
    assert.equal(r.caller_worktree, tmp.wt);
    assert.match(r.detail, /ITEMS_DB is not set/);
    assert.match(r.fix, new RegExp(`cd ${tmp.wt} && wtproxy run --front ${apiFront} -- `), 'the page\'s fix, in its own field');
  }
  assert.ok(block.includes(mine[0].detail.split('\n')[0]), `the reporter's sentence is the daemon's:\n${block}`);
  const text = await cli(tmp, ['refusals', tmp.wt, '--since', '5m'], { cwd: tmp.root });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`\\d\\d:\\d\\d:\\d\\d \\(\\d+s ago\\)  GET /api -> 503 ${mine[0].reason} on :${apiFront}`));
  assert.match(text.stdout, /\n {2}Error: ITEMS_DB is not set/);
  assert.match(text.stdout, new RegExp(`\n {2}Fix: .*cd ${tmp.wt} && wtproxy run --front ${apiFront} -- `));
  // another worktree's view: nothing of wt-a's, said so; --all has it
  const none = await cli(tmp, ['refusals'], { cwd: path.join(tmp.root, 'repo') });
  assert.equal(none.code, 0, none.stderr);
  assert.match(none.stdout, /^wtproxy refused no request of .*\/repo \(/);
  const all = await cli(tmp, ['refusals', '--all', '--json'], { cwd: tmp.root });
  assert.ok(JSON.parse(all.stdout).some((r) => r.request === 'GET /api'), all.stdout);

  // A webServer whose url wtproxy refuses: Playwright runs its command,
  // which fails with EADDRINUSE on the front wtproxy holds and says no
  // more; the reporter says, under that, what wtproxy refused and its fix.
  const setup = await playwright(t, tmp.wt, {
    args: ['--config', 'playwright.webserver.config.mjs'], env: { ...env, API_FRONT: String(apiFront) }, label: '157',
  });
  assert.equal(setup.code, 1, setup.out);
  assert.match(setup.out, /EADDRINUSE/, `the command met the front wtproxy holds:\n${setup.out}`);
  const before = /wtproxy refused (\d+) requests? of this worktree before its tests ran:\n {2}\(Playwright takes a refused webServer url for a server not up and runs its command, which then fails, as with EADDRINUSE on a port wtproxy holds: fix what the refusal says\)\n/.exec(setup.out);
  assert.ok(before, `said after the webServer error:\n${setup.out}`);
  const said = setup.out.slice(before.index);
  assert.match(said, /\n {4}GET \/api( \(\d+ times\))? -> 503 [a-z-]+: /, said);
  assert.match(said, /Error: ITEMS_DB is not set/, `the API's last words:\n${said}`);
  assert.match(said, new RegExp(`cd ${tmp.wt} && wtproxy run --front ${apiFront} -- `), `the fix:\n${said}`);

  // A test that fails on the refused request at once, its worker's first:
  // the refusal comes after startTime + duration (the browser's launch is
  // not in the duration) and is its own all the same.
  const fast = await playwright(t, tmp.wt, { args: ['--grep', 'API answers'], env, label: '157' });
  assert.equal(fast.code, 1, fast.out);
  // Its two requests, refused alike: one entry naming both, the API's last
  // words and the fix said once.
  assert.match(fast.out, /wtproxy refused 2 requests of this worktree during the test "the API answers":\n {4}GET \/api\/favicon\.ico, GET \/api -> 503 /, fast.out);
  assert.equal(fast.out.match(/Error: ITEMS_DB is not set/g)?.length, 1, `the sentence once:\n${fast.out}`);
  assert.equal(fast.out.match(/\n {6}Fix: .*cd /g)?.length, 1, `the fix once:\n${fast.out}`);

  // Several workers: a test's window holds the other workers' refusals.
  // The daemon knows the worker of a browser's requests (the
  // TEST_WORKER_INDEX its worker gave it), and each test is told its own
  // only: the test a second long holds the other's in its window.
  const own = await playwright(t, tmp.wt, {
    args: ['--grep', 'asks the API from its browser', '--workers', '2', '--fully-parallel'],
    env: { ...env, API_FRONT: String(apiFront) }, label: '157',
  });
  assert.equal(own.code, 1, own.out);
  assert.match(own.out, /Running 2 tests using 2 workers/, own.out);
  const blocks = own.out.split(/(?=wtproxy refused \d+ requests? of this worktree )/).slice(1);
  const atOnce = blocks.find((b) => b.includes('"asks the API from its browser":'));
  const apart = blocks.find((b) => b.includes('"asks the API from its browser, a second apart":'));
  assert.match(atOnce ?? '', /^wtproxy refused \d+ requests? of this worktree during the test "asks the API from its browser":\n {4}GET \/api\/at-once[ ,]/, own.out);
  assert.match(apart ?? '', /^wtproxy refused \d+ requests of this worktree during the test "asks the API from its browser, a second apart":\n {4}GET \/api\/first, (.*, )?GET \/api\/second[ ,]/, own.out);
  assert.doesNotMatch(apart.split('(all of them')[0], /at-once/, `not the other worker's:\n${own.out}`);
  assert.doesNotMatch(atOnce.split('(all of them')[0], /first|second/, `not the other worker's:\n${own.out}`);
  const byWorker = await cli(tmp, ['refusals', '--json', '--since', '1m'], { cwd: tmp.wt });
  const fromWorkers = JSON.parse(byWorker.stdout).filter((r) => /^GET \/api\/(at-once|first|second)$/.test(r.request));
  assert.equal(new Set(fromWorkers.map((r) => r.test_worker)).size, 2, `two workers, named:\n${byWorker.stdout}`);
  assert.ok(fromWorkers.every((r) => Number.isInteger(r.test_worker)), byWorker.stdout);
  const listed = await cli(tmp, ['refusals', '--since', '1m'], { cwd: tmp.wt });
  assert.match(listed.stdout, /\n {2}from pid \d+ \(.*\), Playwright worker \d+\n/, listed.stdout);
  // A refusal of a caller the daemon knows no worker of (the web server,
  // which sends the page's /api on to the API's front; a worker's own
  // requests, whose TEST_WORKER_INDEX Playwright sets after its start)
  // may be any test's: a test's window holding one says it is shared.
  const two = await playwright(t, tmp.wt, {
    args: ['--grep', 'API version|API is up', '--workers', '2', '--fully-parallel'], env, label: '157',
  });
  assert.equal(two.code, 1, two.out);
  assert.match(two.out, /Running 2 tests using 2 workers/, two.out);
  assert.match(two.out, /wtproxy refused \d+ requests? of this worktree while the test "shows the API version" ran \(its own and other workers' alike\):\n/, two.out);

  // No daemon answers (stopped, or never started) while another server,
  // another worktree's or a stale one, holds the baseURL's port: the tests
  // pass or fail on its code, and the reporter says so once, under the
  // first failure, else at the end of the run.
  const other = http.createServer((req, res) => {
    const api = req.url.startsWith('/api');
    res.writeHead(200, { 'Content-Type': api ? 'text/plain' : 'text/html; charset=utf-8' });
    res.end(api ? 'v1' : '<!doctype html><title>items</title><h1>items</h1><p>API version: <span id="v">v1</span></p>');
  });
  await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
  t.after(() => { other.closeAllConnections(); other.close(); });
  const noDaemon = { ...env, APP_FRONT: String(other.address().port), WTPROXY_CONTROL: path.join(tmp.root, 'none.sock') };
  const noDaemonLine = (when, fails = '') => new RegExp(`\\(wtproxy-whoami/playwright: no wtproxy daemon answered when asked ${when}, so the ` +
    "tests' requests went to whatever listens on their port, not through wtproxy: another worktree's server, " +
    `a stale one, or none; ${wtproxyBin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} doctor names what holds the port and the command that starts the daemon${fails}\\)\\n`, 'g');
  const atTheEnd = 'at the end of this run';
  const runFails = "; this run fails: its verdict is on whatever code answered, not this worktree's \\(which has a \\.wtproxy\\); start the daemon and run again";
  const alone = await playwright(t, tmp.wt, { args: ['--grep', 'API version'], env: noDaemon, label: '157' });
  assert.equal(alone.code, 1, alone.out);
  assert.match(alone.out, /Received: "v1"/, `the other server's code answered:\n${alone.out}`);
  const once = [...alone.out.matchAll(noDaemonLine('after the test "shows the API version" failed'))];
  assert.equal(once.length, 1, `said once:\n${alone.out}`);
  assert.ok(once[0].index < alone.out.indexOf('1 failed'), `under the failure:\n${alone.out}`);
  assert.doesNotMatch(alone.out, /wtproxy refused|Error in reporter/, alone.out);
  const passed = await playwright(t, tmp.wt, { args: ['--grep', 'API is up'], env: noDaemon, label: '157' });
  assert.equal(passed.code, 0, passed.out);
  const atEnd = [...passed.out.matchAll(noDaemonLine(atTheEnd))];
  assert.equal(atEnd.length, 1, `said at the end of a run that passed:\n${passed.out}`);
  assert.ok(atEnd[0].index > passed.out.indexOf('1 passed'), passed.out);
  // In a worktree that adopted wtproxy (a .wtproxy), the same run fails:
  // it passed on another server's code; in a CI ($CI) it passes as above.
  const wtfile = path.join(tmp.wt, '.wtproxy');
  fs.writeFileSync(wtfile, 'start = node api.mjs {port}\n');
  const inCi = await playwright(t, tmp.wt, { args: ['--grep', 'API is up'], env: { ...noDaemon, CI: '1' }, label: '157' });
  assert.equal(inCi.code, 0, inCi.out);
  assert.equal([...inCi.out.matchAll(noDaemonLine(atTheEnd))].length, 1, inCi.out);
  const adopted = await playwright(t, tmp.wt, { args: ['--grep', 'API is up'], env: noDaemon, label: '157' });
  fs.rmSync(wtfile);
  assert.equal(adopted.code, 1, `a run on another server's code fails:\n${adopted.out}`);
  // said before its tests, as an error Playwright's summary counts: an
  // agent reads "1 passed" and the line under it, not the note after it
  const atStart = [...adopted.out.matchAll(noDaemonLine('at the start of this run', runFails))];
  assert.equal(atStart.length, 1, `it says why, once:\n${adopted.out}`);
  assert.ok(atStart[0].index < adopted.out.search(/API is up/), `before the tests:\n${adopted.out}`);
  assert.match(adopted.out, /1 passed.*\n.*1 error was not a part of any test, see above for details/, adopted.out);
  assert.doesNotMatch(adopted.out, /at WtproxyReporter|playwright-reporter\.mjs:\d/, `the sentence, not a stack:\n${adopted.out}`);
  // and at the end of a run that failed before its tests (its webServer's
  // command met a port held, as a dead daemon's webServer times out)
  const unset = await playwright(t, tmp.wt, {
    args: ['--config', 'playwright.webserver.config.mjs'], env: { ...noDaemon, API_FRONT: String(apiFront) }, label: '157',
  });
  assert.equal(unset.code, 1, unset.out);
  const afterSetup = [...unset.out.matchAll(noDaemonLine(atTheEnd))];
  assert.equal(afterSetup.length, 1, `said after the webServer error:\n${unset.out}`);
  assert.ok(afterSetup[0].index > unset.out.indexOf('config.webServer'), unset.out);

  // No wtproxy to ask (none on PATH, no WTPROXY_BIN: run from its build
  // folder): said once, under the first failure, never as "nothing refused".
  const PATH = process.env.PATH.split(':').filter((d) => !fs.existsSync(path.join(d, 'wtproxy'))).join(':');
  const noBin = await playwright(t, tmp.wt, { args: ['--grep', 'API version|API is up'], env: { ...env, WTPROXY_BIN: '', PATH }, label: '157' });
  assert.equal(noBin.code, 1, noBin.out);
  const noneSaid = noBin.out.match(/\(wtproxy-whoami\/playwright cannot say what wtproxy refused: no wtproxy runs here; put wtproxy on PATH or set WTPROXY_BIN=\/path\/to\/wtproxy\)/g);
  assert.equal(noneSaid?.length, 1, noBin.out);
  assert.doesNotMatch(noBin.out, /wtproxy refused \d|Error in reporter/, noBin.out);
  sanitizerClean(assert, px.stderr());
});

// No wtproxy on the run's PATH (an agent's shell without the PATH its
// user installed wtproxy into), no daemon, another server on the port,
// in a worktree with a .wtproxy: the run passed in silence on that
// server's code. The reporter asks the wtproxy installed with it.
test('no wtproxy on PATH: the reporter asks the wtproxy installed beside it, and a run no daemon answered fails', {
  timeout: 120000,
}, async (t) => {
  const tmp = appWorktree(t);
  const prefix = path.join(tmp.root, 'prefix');
  const pkg = path.join(prefix, 'lib/node_modules/wtproxy-whoami');
  fs.cpSync(path.join(repoRoot, 'whoami', 'node'), pkg, { recursive: true });
  fs.mkdirSync(path.join(prefix, 'bin'));
  fs.symlinkSync(wtproxyBin, path.join(prefix, 'bin/wtproxy'));
  fs.rmSync(path.join(tmp.wt, 'node_modules/wtproxy-whoami'));
  fs.symlinkSync(pkg, path.join(tmp.wt, 'node_modules/wtproxy-whoami'));
  fs.writeFileSync(path.join(tmp.wt, '.wtproxy'), 'start = node api.mjs {port}\n');
  const other = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end('v1'); });
  await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
  t.after(() => { other.closeAllConnections(); other.close(); });
  const PATH = process.env.PATH.split(':').filter((d) => !fs.existsSync(path.join(d, 'wtproxy'))).join(':');
  const env = { APP_FRONT: String(other.address().port), WTPROXY_CONTROL: path.join(tmp.root, 'none.sock'), WTPROXY_BIN: '', PATH };
  const run = await playwright(t, tmp.wt, { args: ['--grep', 'API is up'], env, label: '157' });
  assert.equal(run.code, 1, `a run on another server's code fails:\n${run.out}`);
  assert.ok(run.out.includes(`(wtproxy-whoami/playwright: no wtproxy daemon answered when asked at the start of this run, so the tests' ` +
    `requests went to whatever listens on their port, not through wtproxy: another worktree's server, a stale one, or none; ` +
    `${path.join(prefix, 'bin/wtproxy')} doctor names`), run.out);
});

// `playwright test -c ../wt-a/playwright.config.mjs` run from the main
// checkout: wtproxy places a caller by its folder, so wt-a's tests went to
// the main checkout (which has no server here: 503, the test failed; with
// one, they would pass or fail on its code). The reporter moves the run to
// the config's folder before its workers start, and says so.
test('a run started in another worktree than its config\'s tests the config\'s worktree', {
  timeout: 60000,
}, async (t) => {
  const tmp = appWorktree(t);
  t.after(() => { for (const pid of processesUnder(tmp.root)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } });
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0']);
  const web = startRun(t, tmp, {
    cwd: tmp.wt, front: px.port, stopSignal: 'SIGTERM',
    env: { API_FRONT: '1', WTPROXY_WHOAMI: path.join(repoRoot, 'whoami/node/index.mjs') },
    command: [process.execPath, 'web.mjs', '{port}'],
  });
  await web.ready;
  const main = path.join(tmp.root, 'repo');
  fs.symlinkSync(path.join(tmp.wt, 'node_modules'), path.join(main, 'node_modules'));
  const env = { APP_FRONT: String(px.port), WTPROXY_BIN: wtproxyBin, WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' };
  const run = await playwright(t, main, {
    args: ['-c', path.join(tmp.wt, 'playwright.config.mjs'), '--grep', 'shows the title'], env, label: '157',
  });
  assert.equal(run.code, 0, `wt-a's test, on wt-a's server:\n${run.out}`);
  assert.match(run.out, /1 passed/, run.out);
  assert.ok(run.out.includes(`(wtproxy-whoami/playwright: this run's config is in the worktree ${tmp.wt}, but Playwright was started in ${main}, ` +
    `another worktree: its tests run from the config's folder, ${tmp.wt}, so that their requests go to ${tmp.wt}'s servers`), run.out);
});

// A worktree removed while its tests run (git worktree remove): asking
// wtproxy from its folder fails as a missing binary does; the reporter
// says the folder is gone, never "no wtproxy runs here".
test('a run whose folder was removed under it is told so, not "no wtproxy"', async (t) => {
  const { default: Reporter } = await import(path.join(repoRoot, 'whoami/node/playwright-reporter.mjs'));
  const gone = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-gone-'));
  const reporter = new Reporter();
  reporter.onBegin({ configFile: path.join(gone, 'playwright.config.mjs'), workers: 1 });
  fs.rmSync(gone, { recursive: true });
  const saved = { bin: process.env.WTPROXY_BIN, write: process.stdout.write };
  process.env.WTPROXY_BIN = wtproxyBin;
  let out = '';
  process.stdout.write = (s) => { out += s; return true; };
  try {
    reporter.onTestEnd({ title: 'lists items', expectedStatus: 'passed' },
      { status: 'failed', startTime: new Date(Date.now() - 1000), workerIndex: 0 });
  } finally {
    process.stdout.write = saved.write;
    if (saved.bin === undefined) delete process.env.WTPROXY_BIN; else process.env.WTPROXY_BIN = saved.bin;
  }
  assert.ok(out.includes(`(wtproxy-whoami/playwright cannot say what wtproxy refused: this run's folder ${gone} no longer exists, ` +
    'its worktree removed during the run (git worktree remove)'), out);
  assert.doesNotMatch(out, /no .* runs here/, out);
});

