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
// `wtproxy` on PATH) rather than the control socket itself: the CLI finds
// the socket, and the worktree of the config's folder, by the daemon's own
// rules (a linked, nested or moved worktree, a submodule), which a copy
// here would drift from. It runs only for a failed test, for a few ms, and
// once at the end of a run that failed before its tests (a webServer that
// could not start): a webServer url wtproxy refused (a server without
// /__whoami, one that died at start) is one Playwright takes for no server
// at all, and runs its command, whose only error is then EADDRINUSE on the
// port wtproxy holds; the refusal says what is wrong. No daemon, no
// refusal: it prints nothing, and it never fails a run. No binary to ask
// (none on PATH: run from its build folder) is said once, under the first
// failure, so that its silence is not read as "nothing was refused".
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ASK_TIMEOUT_MS = 3000;
const bin = () => process.env.WTPROXY_BIN || 'wtproxy';

// The refusals of the worktree of dir between from and to (unix ms), oldest
// first; [] when they cannot be had; null when there is no binary to ask.
function refusalsBetween(dir, from, to) {
  const since = `${Math.max(1, Date.now() - from + 1000)}ms`; // the CLI's clock runs on meanwhile
  try {
    const out = execFileSync(bin(), ['refusals', '--json', '--since', since], {
      cwd: dir, encoding: 'utf8', timeout: ASK_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'ignore'],
    }); // a look: `wtproxy refusals` never starts a daemon
    return JSON.parse(out).filter((r) => r.time_ms >= from && r.time_ms <= to);
  } catch (e) {
    return e.code === 'ENOENT' ? null : [];
  }
}

function noBinary() {
  return `  (wtproxy-whoami/playwright cannot say what wtproxy refused: no ${bin()} runs here; ` +
    'put wtproxy on PATH or set WTPROXY_BIN=/path/to/wtproxy)\n';
}

// The refusals as lines: one per request, status and reason (a page that
// polls is refused many times alike), with a count and its newest sentence.
function describe(refusals, when, why = '') {
  const groups = new Map();
  for (const r of refusals) {
    const key = `${r.request} -> ${r.status} ${r.reason}`;
    const g = groups.get(key) || { key, count: 0 };
    g.count += 1;
    g.detail = r.detail;
    groups.set(key, g);
  }
  const n = refusals.length;
  const lines = [`  wtproxy refused ${n} request${n === 1 ? '' : 's'} of this worktree ${when}:`];
  if (why) lines.push(`  (${why})`);
  for (const g of groups.values()) {
    const [first, ...rest] = String(g.detail).split('\n');
    lines.push(`    ${g.key}${g.count > 1 ? ` (${g.count} times)` : ''}: ${first}`);
    for (const l of rest) lines.push(`      ${l}`);
  }
  lines.push('  (all of them: wtproxy refusals)');
  return `${lines.join('\n')}\n`;
}

export default class WtproxyReporter {
  constructor() {
    this.dir = process.cwd();
    this.held = [];
    this.started = Date.now(); // before Playwright starts the webServers
    this.firstTest = 0;
    this.setupError = '';
    this.saidNoBinary = false;
  }

  onBegin(config) {
    if (config.configFile) this.dir = path.dirname(config.configFile);
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
    const found = refusalsBetween(this.dir, result.startTime.getTime(), Date.now());
    if (found === null && this.saidNoBinary) return;
    this.saidNoBinary ||= found === null;
    if (found && !found.length) return;
    const text = found ? describe(found, `during the test "${test.title}"`) : noBinary();
    if (process.stdout.isTTY) this.held.push(text);
    else process.stdout.write(text);
  }

  onEnd() {
    for (const text of this.held) process.stdout.write(text);
    if (this.setupError) this.printSetupRefusals();
  }

  // What wtproxy refused before the first test (or, with none, until now)
  // of a run whose preparation failed.
  printSetupRefusals() {
    const found = refusalsBetween(this.dir, this.started, this.firstTest || Date.now());
    if (found === null && !this.saidNoBinary) process.stdout.write(noBinary());
    if (!found?.length) return;
    const why = /webServer/.test(this.setupError)
      ? 'Playwright takes a refused webServer url for a server not up and runs its command, ' +
        'which then fails, as with EADDRINUSE on a port wtproxy holds: fix what the refusal says'
      : '';
    process.stdout.write(describe(found, 'before its tests ran', why));
  }

  // Not a progress display: with this reporter alone, Playwright still
  // prints its own.
  printsToStdio() {
    return false;
  }
}
