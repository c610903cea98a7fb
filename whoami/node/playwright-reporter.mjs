// playwright-reporter.mjs - a Playwright reporter that prints, under each
// test that failed, what wtproxy refused of this worktree's requests while
// it ran: a page that swallows a failed fetch fails on an unrelated
// assertion ("expected 'v2', got ''"), and the reason (a stale server, one
// that crashed at start, none at all) is otherwise only in `wtproxy
// refusals`, the dashboard or the logs. In playwright.config:
//
//   reporter: [['list'], ['wtproxy-whoami/playwright']],
//
// It asks `wtproxy refusals --json` (the binary $WTPROXY_BIN, else
// `wtproxy` on PATH, else the one installed with this package) rather than the control socket itself: the CLI finds
// the socket, and the worktree of the config's folder, by the daemon's own
// rules (a linked, nested or moved worktree, a submodule), which a copy
// here would drift from. It runs only for a failed test, for a few ms, and
// once at the end of a run that failed before its tests (a webServer that
// could not start): a webServer url wtproxy refused (a server without
// /__whoami, one that died at start) is one Playwright takes for no server
// at all, and runs its command, whose only error is then EADDRINUSE on the
// port wtproxy holds; the refusal says what is wrong. Refusals alike (the
// same reason and sentence: GET / and GET /favicon.ico of a dead server)
// are one entry naming each request, with the page's fix under it.
// No daemon to answer is said once, under the first failure, else at the
// end of the run (asked once then): the tests' requests then went to
// whatever listens on the port, another worktree's server or a stale one,
// and passed or failed on its code with no word of wtproxy. In a worktree
// that adopted wtproxy (a .wtproxy between the config's folder and the
// worktree's top) that fails the run, unless $CI is set (a CI runs its
// own server on the port): its verdict is not on this worktree's code;
// there the daemon is also asked before the first test, and none is said
// then, as an error Playwright's summary counts.
// Otherwise it never fails a run. No binary to
// ask (none on PATH: run from its build folder) is said once, under the
// first failure, so that its silence is not read as "nothing was refused";
// a CI without wtproxy that keeps the config gets nothing more.
// A run started in another worktree than its config's moves to the
// config's folder before its workers start, and says so.
// With several workers a test's window holds the other workers' refusals
// too: the daemon tells each refusal's worker (its caller's
// TEST_WORKER_INDEX, which a worker's browser inherits), and a test gets
// its own worker's only; those of a caller in no worker (a globalSetup, a
// daemon before this field) stay, and then its header says the window is
// shared.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ASK_TIMEOUT_MS = 3000;

// The wtproxy installed with this package (meson installs it in
// PREFIX/lib/node_modules/wtproxy-whoami, the binary in PREFIX/bin), ''
// when this copy is not installed so (a checkout's whoami/node).
function installedBeside() {
  try {
    const pkg = path.dirname(fs.realpathSync(fileURLToPath(import.meta.url)));
    if (!pkg.endsWith(path.join('lib', 'node_modules', 'wtproxy-whoami'))) return '';
    const exe = path.resolve(pkg, '../../../bin/wtproxy');
    fs.accessSync(exe, fs.constants.X_OK);
    return exe;
  } catch {
    return '';
  }
}

function onPath(name) {
  return (process.env.PATH || '').split(':').some((d) => {
    try {
      fs.accessSync(path.join(d || '.', name), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

// The wtproxy to ask: $WTPROXY_BIN, else the one on PATH, else the one
// installed with this package. An agent's shell often lacks the PATH its
// user installed wtproxy into: with nothing to ask, a run no daemon
// answered passed in silence in a worktree with a .wtproxy (a Hugo user,
// 6 runs of 6), where one asked fails.
let found = null;
function bin() {
  if (process.env.WTPROXY_BIN) return process.env.WTPROXY_BIN;
  found ??= onPath('wtproxy') ? 'wtproxy' : installedBeside() || 'wtproxy';
  return found;
}

// What wtproxy refused of the worktree of dir between from and to (unix
// ms), oldest first: { refusals }; { noBinary } when there is no binary to
// ask, { noFolder } when dir is gone (its worktree removed during the run:
// the ask fails as a missing binary does), { noDaemon } when no daemon
// answers, with heldBy when another user's daemon holds the worktree's
// port; {} on any other failure.
function ask(dir, from, to) {
  const since = `${Math.max(1, Date.now() - from + 1000)}ms`; // the CLI's clock runs on meanwhile
  try {
    const out = execFileSync(bin(), ['refusals', '--json', '--since', since], {
      cwd: dir, encoding: 'utf8', timeout: ASK_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'],
    }); // a look: `wtproxy refusals` never starts a daemon
    return { refusals: JSON.parse(out).filter((r) => r.time_ms >= from && r.time_ms <= to) };
  } catch (e) {
    if (e.code === 'ENOENT') return fs.existsSync(dir) ? { noBinary: true } : { noFolder: true };
    // its exit status 1 is also a daemon that refused: the sentence (cli/client.c's
    // no_daemon) tells them apart
    if (e.status === 1 && /^wtproxy: no daemon answers on /m.test(String(e.stderr))) {
      return { noDaemon: true, heldBy: heldBy(String(e.stderr)) };
    }
    return {};
  }
}

// Another user's daemon on the port this user's would listen on, as the
// CLI's no-daemon sentence (cli/client.c's held_by_another) says it:
// { port, who, fix }, null when it does not. A run as another user than
// the daemon's (runuser -u nobody -- npx playwright test) was told "no
// daemon answered", though one answered each request with its refusal.
function heldBy(stderr) {
  const m = /^wtproxy: no daemon answers on .*?, and port (\d+), where one of yours would listen, is held by (.+?), which serves that user's worktrees only: (.*)$/m.exec(stderr);
  return m ? { port: m[1], who: m[2], fix: m[3] } : null;
}

function noFolder(asked, fails, dir) {
  return `  (wtproxy-whoami/playwright cannot say what wtproxy refused: this run's folder ${dir} ` +
    'no longer exists, its worktree removed during the run (git worktree remove): its tests\' ' +
    'requests found none of its servers; wtproxy refusals --all lists what was refused)\n';
}

function noBinary() {
  return `  (wtproxy-whoami/playwright cannot say what wtproxy refused: no ${bin()} runs here; ` +
    'put wtproxy on PATH or set WTPROXY_BIN=/path/to/wtproxy)\n';
}

// Whether dir's worktree adopted wtproxy: a .wtproxy in dir or a folder
// above it, up to the worktree's top (the first with a .git, a file in a
// linked worktree).
function adopted(dir) {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.wtproxy'))) return true;
    if (fs.existsSync(path.join(d, '.git')) || path.dirname(d) === d) return false;
  }
}

// The top of dir's worktree (the first folder up with a .git), '' none.
function worktreeTop(dir) {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.git'))) return d;
    if (path.dirname(d) === d) return '';
  }
}

// A run started in another worktree than its config's (`playwright test -c
// ../wt-b/playwright.config.js` from wt-a): wtproxy places a caller by its
// folder, so wt-b's tests would run against wt-a's server and pass or fail
// on its code. The run moves to the config's folder before its workers are
// forked: they and the browsers they launch inherit it, and wtproxy places
// them in the config's worktree. (Not WTPROXY_WORKTREE: Chromium's network
// service, which opens the sockets, rewrites its environment, and the
// daemon reads its folder.) A caller's own WTPROXY_WORKTREE stays. Returns
// the note to print, '' when there is nothing to say.
function moveToConfigWorktree(dir) {
  const config = worktreeTop(dir), from = process.cwd(), here = worktreeTop(from);
  if (process.env.WTPROXY_WORKTREE || !config || config === here) return '';
  try {
    process.chdir(dir);
  } catch {
    return '';
  }
  return `  (wtproxy-whoami/playwright: this run's config is in the worktree ${config}, but ` +
    `Playwright was started in ${from}${here ? ', another worktree' : ''}: its tests run from the ` +
    `config's folder, ${dir}, so that their requests go to ${config}'s servers, not to those of ` +
    `the folder it was started in)\n`;
}

// when: when the daemon was asked ("at the end of this run"); fails: the
// run fails for it.
function noDaemon(when, fails) {
  const why = fails
    ? '; this run fails: its verdict is on whatever code answered, not this worktree\'s (which ' +
      'has a .wtproxy); start the daemon and run again'
    : '';
  return `  (wtproxy-whoami/playwright: no wtproxy daemon answered when asked ${when}, so the tests' ` +
    'requests went to whatever listens on their port, not through wtproxy: another worktree\'s ' +
    `server, a stale one, or none; ${bin()} doctor names what holds the port and the command ` +
    `that starts the daemon${why})\n`;
}

// noDaemon's, when another user's daemon holds the port (got.heldBy):
// that daemon answered the tests' requests, each with its refusal
// (other-user), and its way out is the CLI's.
function otherDaemon(when, fails, dir, got) {
  const { port, who, fix } = got.heldBy;
  const why = fails ? '; this run fails: its verdict is not on this worktree\'s code' : '';
  return `  (wtproxy-whoami/playwright: no wtproxy daemon of this user answered when asked ${when}: ` +
    `port ${port} is held by ${who}, which serves that user's worktrees only and refuses this ` +
    `user's requests (421 other-user), so the tests' requests through it reached no server of ` +
    `this worktree; ${fix}${why})\n`;
}

// The refusals as lines: one entry per status, reason and sentence (a
// page that polls is refused many times alike, and its favicon with it),
// naming each request with a count, then the sentence and the page's fix.
// Sentences alike but for an age ("exited 3s ago", then "4s ago": the
// clock moved between two requests) are alike; the first one is printed.
const AGE = /\b\d+[smhd] ago\b/g;
function describe(refusals, when, why = '') {
  const groups = new Map();
  for (const r of refusals) {
    const key = `${r.status} ${r.reason}\n${String(r.detail ?? '').replace(AGE, 'ago')}`;
    const g = groups.get(key) || { what: `${r.status} ${r.reason}`, detail: r.detail, requests: new Map() };
    g.requests.set(r.request, (g.requests.get(r.request) || 0) + 1);
    g.fix = r.fix;
    groups.set(key, g);
  }
  const n = refusals.length;
  const lines = [`  wtproxy refused ${n} request${n === 1 ? '' : 's'} of this worktree ${when}:`];
  if (why) lines.push(`  (${why})`);
  for (const g of groups.values()) {
    const requests = [...g.requests].map(([req, count]) => `${req}${count > 1 ? ` (${count} times)` : ''}`);
    const [first, ...rest] = String(g.detail ?? '').split('\n');
    lines.push(`    ${requests.join(', ')} -> ${g.what}: ${first}`);
    for (const l of rest) lines.push(`      ${l}`);
    const [fix, ...more] = String(g.fix ?? '').split('\n');
    if (fix) lines.push(`      Fix: ${fix}`);
    for (const l of more) lines.push(`        ${l}`);
  }
  lines.push('  (all of them: wtproxy refusals)');
  return `${lines.join('\n')}\n`;
}

export default class WtproxyReporter {
  constructor() {
    this.dir = process.cwd();
    this.workers = 1;
    this.held = [];
    this.started = Date.now(); // before Playwright starts the webServers
    this.firstTest = 0;
    this.setupError = '';
    this.asked = false;
    this.said = new Set(); // the notes said: once a run each
    this.fails = false; // no daemon answered, in a worktree that adopted wtproxy, not in a CI
  }

  onBegin(config) {
    if (config.configFile) this.dir = path.dirname(config.configFile);
    this.workers = config.workers;
    process.stdout.write(moveToConfigWorktree(this.dir));
    this.failWithoutDaemon();
  }

  // A run whose verdict will not be this worktree's (no daemon answers, in
  // a worktree that adopted wtproxy, not in a CI) is said before its tests,
  // as an error: said at the end only, it came under Playwright's green
  // ticks and "N passed", which is all an agent reads of a run (three
  // users). Playwright prints a reporter's error at once and counts it in
  // its summary ("1 error was not a part of any test"); one before 1.44
  // prints "Error in reporter" and runs on, and onEnd fails the run alike.
  // By now the webServers are up: a `wtproxy run` there has started the
  // daemon.
  failWithoutDaemon() {
    if (process.env.CI || !adopted(this.dir)) return;
    const got = ask(this.dir, Date.now(), Date.now()); // not this.ask: the end asks again
    const text = got.noDaemon ? this.textOf(got, '', '', 'at the start of this run') : '';
    if (!text) return;
    const error = new Error(text.trim());
    error.stack = error.message; // the sentence, not this file's lines
    throw error;
  }

  onTestBegin(test, result) {
    if (!this.firstTest) this.firstTest = result.startTime.getTime();
  }

  // An error outside any test: a webServer or globalSetup that failed.
  onError(error) {
    if (!this.setupError) this.setupError = String(error?.message || error);
  }

  // Right after the list reporter's line for the test. On a terminal, that
  // reporter rewrites earlier lines in place, which lines of ours would
  // shift: there they wait for the end of the run.
  onTestEnd(test, result) {
    if (result.status === 'passed' || result.status === 'skipped' ||
        result.status === test.expectedStatus) return;
    // Until now, not startTime + duration: the duration leaves out the
    // worker fixtures' time (the browser's launch, for a worker's first
    // test), so it ends before a request that failed the test at once was
    // refused. A failed test's worker is replaced, so its next test starts
    // in a new worker, later.
    const got = this.ask(result.startTime.getTime(), Date.now());
    if (got.refusals) got.refusals = got.refusals.filter((r) => r.test_worker == null || r.test_worker === result.workerIndex);
    const text = this.textOf(got, this.during(test, got.refusals), '', `after the test "${test.title}" failed`);
    if (!text) return;
    if (process.stdout.isTTY) this.held.push(text);
    else process.stdout.write(text);
  }

  // A window is a time: with other workers, their tests' refusals are in
  // it, save those the daemon knew the worker of.
  during(test, refusals = []) {
    return this.workers > 1 && refusals.some((r) => r.test_worker == null)
      ? `while the test "${test.title}" ran (its own and other workers' alike)`
      : `during the test "${test.title}"`;
  }

  ask(from, to) {
    this.asked = true;
    return ask(this.dir, from, to);
  }

  // The text for an answer: its refusals, a note not said yet, or ''.
  // asked: when the daemon was asked, for the no-daemon note.
  textOf(got, when, why, asked = 'at the end of this run') {
    if (got.refusals) return got.refusals.length ? describe(got.refusals, when, why) : '';
    const note = got.noBinary ? noBinary : got.heldBy ? otherDaemon : got.noDaemon ? noDaemon
      : got.noFolder ? noFolder : null;
    if (!note || this.said.has(note)) return '';
    this.said.add(note);
    if (got.noDaemon) this.fails = !process.env.CI && adopted(this.dir);
    return note(asked, this.fails, this.dir, got);
  }

  onEnd(result) {
    for (const text of this.held) process.stdout.write(text);
    if (this.setupError) this.printSetupRefusals();
    else if (!this.asked) this.printNoDaemon();
    if (this.fails && result?.status === 'passed') return { status: 'failed' };
  }

  // What wtproxy refused before the first test (or, with none, until now)
  // of a run whose preparation failed.
  printSetupRefusals() {
    const why = /webServer/.test(this.setupError)
      ? 'Playwright takes a refused webServer url for a server not up and runs its command, ' +
        'which then fails, as with EADDRINUSE on a port wtproxy holds: fix what the refusal says'
      : '';
    const got = this.ask(this.started, this.firstTest || Date.now());
    process.stdout.write(this.textOf(got, 'before its tests ran', why));
  }

  // A run that failed no test asked nothing: whether a daemon answers, a
  // few ms. No binary stays unsaid there, as in a CI without wtproxy.
  printNoDaemon() {
    const got = this.ask(Date.now(), Date.now());
    if (got.noDaemon) process.stdout.write(this.textOf(got));
  }

  // Not a progress display: with this reporter alone, Playwright still
  // prints its own.
  printsToStdio() {
    return false;
  }
}
