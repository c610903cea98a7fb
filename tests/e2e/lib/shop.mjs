// shop.mjs - the end-to-end scenario's app (tests/e2e/app, a Django shop on
// PostgreSQL) in a fresh git repository with three linked worktrees, its
// databases, its two suites, and the classification of one run from its
// own log. Used by tests/e2e/run.mjs (the rounds, both modes) and by the
// integration tests 160-161.
//
// Branches (each in a worktree wt-a, wt-b, wt-c of a repo built from
// tests/e2e/app on main plus the branch's files from tests/e2e/branches/):
//   a  correct: 10% off a line of ten or more (e2e: /basket/?apple=10 shows
//      "bulk −10%" and $10.80)
//   b  correct: pears on sale, 20% off with a badge (e2e: the shop page shows
//      "Sale" and $0.80 for pears)
//   c  buggy: "lines and total in one pass" adds unit prices, not line
//      totals, so apple×3 + bread×1 costs $3.70, not $6.10: the shop's own
//      Django test and e2e test of the basket total both catch it.
// A run against another worktree's server gets a wrong verdict both ways:
// a and b test their new behaviour, which no other server has (false red);
// c's suites test only what main had, which a's and b's servers do right
// (false green).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { git } from '../../integration/lib/registry.mjs';
import { removeQuietly } from '../../integration/lib/cleanup.mjs';
import { playwright, processesUnder, nodeModules } from '../../integration/lib/playwright.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const e2eDir = path.resolve(here, '..');
export const repoRoot = path.resolve(e2eDir, '..', '..');
export const python = '/usr/bin/python3'; // Debian's, with python3-django and psycopg2
export const DJANGO_MS = 90000; // one `manage.py test` run, at most
export const E2E_MS = 90000; // one `playwright test` run, at most (3 at once on a loaded machine)

// Each branch: its commit message, whether its suites must pass, and for
// the buggy one the tests its bug fails and the value that proves it is
// this bug (the total of apple×3 + bread×1 computed from unit prices).
export const BRANCHES = {
  a: { message: 'Bulk discount: 10% off a line of ten or more', ok: true },
  b: { message: 'Pears on sale: 20% off, with a badge on the shop page', ok: true },
  c: {
    message: 'pricing: lines and total in one pass', ok: false,
    bug: {
      django: { tests: ['test_basket_total_counts_quantities', 'test_basket_page', 'test_basket_leaves_out_unknown_and_zero'], proof: /Decimal\('3\.70'\) != Decimal\('6\.10'\)/ },
      e2e: { tests: ['basket total counts quantities'], proof: /"\$3\.70"/ },
    },
  },
};
export const NAMES = Object.keys(BRANCHES);

// A cleanup list shaped like node:test's context (after(fn)), so the
// integration libs (startPostgres, startProxy, playwright) serve a plain
// script too. run() calls every hook, newest first, each at most once.
export function lifetime() {
  const hooks = [];
  return {
    after(fn) { hooks.push(fn); },
    async run() {
      while (hooks.length) {
        try { await hooks.pop()(); } catch { /* keep cleaning */ }
      }
    },
  };
}

// A temp folder with repo/ (the shop on main) and wt-a, wt-b, wt-c (one
// branch each, committed), each with node_modules linked to tests/'s.
// Returns { root, repo, wt: {a, b, c} }; all realpaths. The folder, and
// every process still running in it, go in t.after.
export function makeShop(t, { adopt } = {}) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-shop-')));
  // One hook, killing first: node:test runs after() hooks in the order
  // they were added and skips the rest once one throws. Removing first
  // once met a server still writing there (ENOTEMPTY), and the skipped
  // stops left test 161's file waiting for its 600 s timeout.
  t.after(() => { killUnder(root); removeQuietly(t, root); });
  const repo = path.join(root, 'repo');
  fs.cpSync(path.join(e2eDir, 'app'), repo, { recursive: true, filter: (p) => !/__pycache__|node_modules|test-results/.test(p) });
  if (adopt) unadopt(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'The shop: products, a basket, their tests');
  if (adopt) adoptByInit(repo, adopt);
  const wt = {};
  for (const n of NAMES) {
    wt[n] = path.join(root, `wt-${n}`);
    git(repo, 'worktree', 'add', '-q', wt[n], '-b', n);
    fs.cpSync(path.join(e2eDir, 'branches', n), wt[n], { recursive: true });
    git(wt[n], 'add', '-A');
    git(wt[n], 'commit', '-q', '-m', BRANCHES[n].message);
    fs.symlinkSync(nodeModules, path.join(wt[n], 'node_modules'));
  }
  return { root, repo, wt };
}

// The shop as a project that never heard of wtproxy: settings.py without
// the lines that list the whoami middleware, and a .venv/bin/python
// (Debian's, which has Django) as projects have one.
function unadopt(repo) {
  const settings = path.join(repo, 'shop', 'settings.py');
  const text = fs.readFileSync(settings, 'utf8');
  const naive = text.replace(/^if importlib\.util\.find_spec\('wtproxy_whoami'\).*\n.*\n/m, '');
  if (naive.includes('wtproxy_whoami.django')) throw new Error(`the middleware lines of ${settings} changed: update unadopt()`);
  fs.writeFileSync(settings, naive);
  fs.mkdirSync(path.join(repo, '.venv', 'bin'), { recursive: true });
  fs.symlinkSync('/usr/bin/python3', path.join(repo, '.venv', 'bin', 'python'));
}

// Adopt wtproxy the way a user would: `wtproxy init --apply` alone (its
// .wtproxy and middleware line; the databases stay the runner's, from
// `wtproxy db claim`), committed so that every worktree has it. The
// Playwright config is left as the shop has it (recipe "port").
function adoptByInit(repo, { bin, front }) {
  const r = spawnSync(bin, ['init', '--front', String(front), '--no-databases', '--apply'], { cwd: repo, encoding: 'utf8' });
  if (r.status !== 0 || !/wrote \.wtproxy/.test(r.stdout)) throw new Error(`wtproxy init --apply exited ${r.status}:\n${r.stdout}${r.stderr}`);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'adopt wtproxy (wtproxy init --apply)');
}

// SIGKILL every process whose cwd is under dir (runservers a cut-short
// Playwright left, their autoreloader children). Returns how many.
export function killUnder(dir) {
  const pids = processesUnder(dir);
  for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  return pids.length;
}

// The environment every agent's runs get: the PostgreSQL server (libpq's
// PG* variables), the whoami middleware on PYTHONPATH, the front port.
// WTPROXY_WORKTREE is left out: runs must be placed by their cwd.
export function agentEnv(pg, front, extra = {}) {
  const env = { ...process.env, ...pg.env, PYTHONPATH: path.join(repoRoot, 'whoami', 'python'),
    SHOP_FRONT: String(front), ...extra };
  delete env.WTPROXY_WORKTREE;
  delete env.WT_DB;
  delete env.WT_TEST_DB;
  return env;
}

// Run cmd args in cwd to its end, in its own process group (killed whole
// after ms, or by t.after if the script is stopped). Resolves
// { code, signal, out } with stdout and stderr interleaved.
export function runLogged(t, cmd, args, { cwd, env, ms = DJANGO_MS }) {
  const proc = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const kill = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  t.after(kill);
  return new Promise((resolve) => {
    const timer = setTimeout(() => { out += `\n[killed after ${ms} ms]\n`; kill(); }, ms);
    proc.on('error', (e) => { clearTimeout(timer); resolve({ code: null, signal: null, out: `${out}\n${e.message}\n` }); });
    proc.on('close', (code, signal) => { clearTimeout(timer); kill(); resolve({ code, signal, out }); });
  });
}

// One suite in worktree cwd: 'django' (manage.py test --noinput, which
// destroys a test database left by someone else without asking) or 'e2e'
// (playwright test, whose webServer starts or reuses the dev server).
export function runSuite(t, suite, cwd, env) {
  if (suite === 'django') return runLogged(t, python, ['manage.py', 'test', '--noinput'], { cwd, env });
  return playwright(t, cwd, { env, label: path.basename(cwd), ms: E2E_MS });
}

// Names of the tests a run's log says failed.
function failedTests(suite, out) {
  if (suite === 'django') return [...out.matchAll(/^(?:FAIL|ERROR): (\w+) /gm)].map((m) => m[1]);
  // the line reporter: "  1) e2e/x.spec.mjs:3:5 › title ───"
  return [...out.matchAll(/^\s+\d+\) (?:\[\w+\] › )?\S+ › (.+?) ─+\s*$/gm)].map((m) => m[1].trim());
}

// The verdict one run earned, from its own log: 'right', 'false red',
// 'false green', 'wrong reason' (the buggy branch red for anything but its
// bug) or 'refused' (wtproxy refused the request: X-Wtproxy-Refused).
// Returns { verdict, why } with why a short excerpt of the log.
export function classify(branch, suite, run) {
  const { out } = run;
  const passed = run.code === 0;
  // wtproxy refused: a page (X-Wtproxy-Refused, named by the e2e tests'
  // open()), or `wtproxy run` as Playwright's webServer because the
  // worktree already has a server, one the readiness check found refused
  const refused = /X-Wtproxy-Refused: ([\w-]+)/.exec(out) || /^\[WebServer\] wtproxy: .* is already served on front .*$/m.exec(out);
  const why = refused ? refused[0].replace(/^\[WebServer\] /, '').slice(0, 200) : excerpt(suite, out);
  if (refused && !passed) return { verdict: 'refused', why };
  const spec = BRANCHES[branch];
  if (spec.ok) return { verdict: passed ? 'right' : 'false red', why: passed ? '' : why };
  if (passed) return { verdict: 'false green', why: 'passed' };
  const bug = spec.bug[suite];
  const failed = failedTests(suite, out);
  const onlyBug = failed.length > 0 && failed.every((f) => bug.tests.includes(f));
  // django: only failures, and nothing went wrong after them (destroying
  // the test database); e2e: the tests ran and some failed
  const clean = suite === 'django'
    ? /^FAILED \(failures=\d+\)\s*$/m.test(out) && !/^FAILED \(failures=\d+\)\s*$[\s\S]*(Traceback|Error)/m.test(out)
    : /^\s+\d+ failed\s*$/m.test(out);
  return onlyBug && clean && bug.proof.test(out) ? { verdict: 'right', why: '' } : { verdict: 'wrong reason', why };
}

// What went wrong first, in a line: for e2e the first failed assertion
// (locator, expected, received) or error; for Django the first error.
function excerpt(suite, out) {
  const short = (x) => x.replace(/\s+/g, ' ').trim().slice(0, 160);
  if (suite === 'django') {
    const m = /^Got an error .*$/m.exec(out) || /^[\w.]*(?:Error|Exception): .*$/m.exec(out) || /^FAIL: \w+/m.exec(out) || /killed after.*/.exec(out);
    return short(m ? m[0] : out.trim().split('\n').pop() || '');
  }
  // the first failure's block: from "  1) " to the next one or the summary
  const start = out.search(/^\s+1\) /m);
  let first = out;
  if (start >= 0) {
    const rest = out.slice(start + 5);
    const end = rest.search(/^\s+(?:\d+\) |\d+ failed)/m);
    first = out.slice(start, end < 0 ? undefined : start + 5 + end);
  }
  const loc = /Locator:\s+locator\('([^']+)'\)/.exec(first);
  if (loc) {
    const exp = /Expected(?: string)?:\s+(.*)/.exec(first);
    const rec = /Received(?: string)?:\s+(.*)/.exec(first);
    return short(`${loc[1]}: expected ${exp ? exp[1] : '?'}, ${rec ? `got ${rec[1]}` : 'not found'}`);
  }
  const err = /^\s*Error: (?!expect\().*$/m.exec(first) || /killed after.*/.exec(out);
  return short(err ? err[0] : out.trim().split('\n').pop() || '');
}

// Whether this wtproxy has `wtproxy db` (issue #7's database claims).
export function hasDbClaim(bin) {
  const r = spawnSync(bin, ['db', '--help'], { encoding: 'utf8' });
  return r.status === 0 && /--dev/.test(r.stdout);
}

// KEY=VALUE lines of a .env file, as shop/settings.py reads them.
export function readEnvFile(file) {
  const values = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*(?:export\s+)?(\w+)\s*=\s*(.*?)\s*$/.exec(line);
    if (m && !line.trim().startsWith('#')) values[m[1]] = m[2].replace(/^["']|["']$/g, '');
  }
  return values;
}

async function migrate(t, cwd, env) {
  const r = await runLogged(t, python, ['manage.py', 'migrate', '--noinput'], { cwd, env });
  if (r.code !== 0) throw new Error(`manage.py migrate in ${cwd} exited ${r.code ?? r.signal}:\n${r.out}`);
}

// The correct setup without wtproxy, as a developer makes it by hand: in
// each worktree's untracked .env.wt its own port (ports[x], read by
// playwright.config.mjs) and its own databases (shop_wt_<x>,
// test_shop_wt_<x>), the dev one created by plain SQL and migrated.
async function portPerWorktree(t, shop, pg, env, ports) {
  const names = {};
  for (const n of NAMES) {
    names[n] = { db: `shop_wt_${n}`, test: `test_shop_wt_${n}`, port: ports[n] };
    fs.writeFileSync(path.join(shop.wt[n], '.env.wt'), `SHOP_PORT=${ports[n]}\nWT_DB=${names[n].db}\nWT_TEST_DB=${names[n].test}\n`);
    pg.psql(`CREATE DATABASE "${names[n].db}"`);
    await migrate(t, shop.wt[n], env);
  }
  return { how: `own, by hand: port ${NAMES.map((n) => ports[n]).join(', ')}; shop_wt_<x>, test_shop_wt_<x> (CREATE DATABASE)`, names };
}

// The databases of one mode. 'shared': every worktree uses 'shop' (its dev
// database, created and migrated here) and 'test_shop' (Django's test
// database, which each test run creates and destroys). 'own': each
// worktree's names go in its .env.wt: from `wtproxy db claim --dev shop
// --base test_shop --write-env .env.wt` (which creates the dev database)
// when the binary has `db`, else derived here (shop_wt_<x>,
// test_shop_wt_<x>); its dev database is migrated. Returns { how, names:
// {x: {db, test}} }.
export async function setupDatabases(t, shop, pg, mode, { bin, env, ports }) {
  const names = {};
  if (mode === 'ports') return portPerWorktree(t, shop, pg, env, ports);
  if (mode === 'shared') {
    pg.psql('CREATE DATABASE shop');
    await migrate(t, shop.repo, env);
    for (const n of NAMES) names[n] = { db: 'shop', test: 'test_shop' };
    return { how: 'shared: shop, test_shop', names };
  }
  const claim = hasDbClaim(bin);
  for (const n of NAMES) {
    const file = path.join(shop.wt[n], '.env.wt');
    let values = {};
    if (claim) {
      // Both of the worktree's databases come from the claim: the dev one
      // (WT_DB, WTPROXY_DEV_DB: migrated forward, never dropped by a test
      // run) and the test one (WT_TEST_DB, WTPROXY_TEST_DB).
      const r = await runLogged(t, bin, ['db', 'claim', '--dev', 'shop', '--base', 'test_shop', '--write-env', '.env.wt'], { cwd: shop.wt[n], env, ms: 20000 });
      if (r.code !== 0) throw new Error(`wtproxy db claim in wt-${n} exited ${r.code ?? r.signal}:\n${r.out}`);
      values = readEnvFile(file);
      if (!values.WT_TEST_DB || !values.WT_DB || values.WT_DB === values.WT_TEST_DB)
        throw new Error(`wtproxy db claim wrote no distinct WT_DB and WT_TEST_DB to ${file}:\n${fs.readFileSync(file, 'utf8')}`);
    } else {
      fs.appendFileSync(file, `WT_DB=shop_wt_${n}\nWT_TEST_DB=test_shop_wt_${n}\n`);
      values = readEnvFile(file);
      pg.psql(`CREATE DATABASE "${values.WT_DB}"`);
    }
    names[n] = { db: values.WT_DB, test: values.WT_TEST_DB };
    await migrate(t, shop.wt[n], env);
  }
  return { how: claim ? 'own: wtproxy db claim --dev shop --base test_shop --write-env .env.wt' : 'own: derived by the runner (this wtproxy has no `db` command)', names };
}
