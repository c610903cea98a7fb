#!/usr/bin/env node
// run.mjs - three worktrees of one Django shop, each with an "agent" that
// tests it in the same minute as the others, with and without wtproxy; every
// run's verdict is checked against the truth (tests/e2e/README.md).
//
//   node tests/e2e/run.mjs [--mode unprotected|ports|wtproxy|adopted|both|M1,M2,...]
//       [--rounds N] [--front PORT] [--seed N] [--check] [--cpu] [--json FILE] [--logs DIR]
//
// Each round, each agent (wt-a, wt-b, wt-c) waits a random 0-2.5 s, then
// runs its two suites in a random order: `manage.py test --noinput` and
// `playwright test` (baseURL localhost:FRONT, webServer with
// reuseExistingServer). Modes:
//   unprotected  the app as projects have it: the dev server on FRONT
//                (default 8000), started by whichever Playwright finds no
//                server there, and one set of databases: shop, test_shop.
//   wtproxy      a wtproxy daemon owns FRONT; each Playwright starts its
//                worktree's server with `wtproxy run` (the one line of
//                app/playwright.config.mjs that changes); each worktree has
//                its own databases (.env.wt).
//   adopted      the shop without the whoami middleware, adopted by
//                `wtproxy init --apply` alone (a .wtproxy, the middleware
//                line) and committed; the Playwright config unchanged: the
//                daemon starts each worktree's server (recipe "port").
//                Not part of "both".
//   ports        no wtproxy: each worktree's untracked .env.wt names its
//                own port (FRONT+1, +2, +3, read by the Playwright config)
//                and its own databases (CREATE DATABASE): the correct setup
//                without the tool, the cost baseline. Not part of "both".
// --cpu also measures each round's CPU per component (lib/cpu.mjs: process
// accounting, as root; one such run on the machine at a time).
// --check first proves the scenario (shared databases, one run at a time):
// each branch alone gets its true verdict from both suites, and each
// branch's e2e against each other branch's server gets a wrong one.
// Prints one line per run and a table; exits 1 if a run of ports, wtproxy
// or adopted, or the check, got a wrong verdict, 2 if it could not set up.
// WTPROXY_BIN: the wtproxy to use (default build/ if built, else build-asan/).
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.resolve(here, '..', '..');
if (!process.env.WTPROXY_BIN) {
  const release = path.join(root, 'build', 'proxy', 'wtproxy');
  process.env.WTPROXY_BIN = fs.existsSync(release) ? release : path.join(root, 'build-asan', 'proxy', 'wtproxy');
}
// after WTPROXY_BIN is settled: lib/wtproxy.mjs reads it when loaded
const { startPostgres } = await import('../integration/lib/pg.mjs');
const { startDaemon } = await import('../integration/lib/registry.mjs');
const { chromium, nodeModules } = await import('../integration/lib/playwright.mjs');
const { wtproxyBin } = await import('../integration/lib/wtproxy.mjs');
const shopLib = await import('./lib/shop.mjs');
const { cpuMeter, COMPONENTS } = await import('./lib/cpu.mjs');
const { NAMES, BRANCHES, lifetime, makeShop, killUnder, agentEnv, runSuite, classify, setupDatabases, python } = shopLib;

const VERDICTS = ['right', 'false red', 'false green', 'wrong reason', 'refused'];
const MAX_WAIT_MS = 2500; // an agent's random wait before its suites

const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: 'both' },
    rounds: { type: 'string', default: '20' },
    front: { type: 'string', default: '8000' },
    seed: { type: 'string' },
    check: { type: 'boolean', default: false },
    cpu: { type: 'boolean', default: false },
    json: { type: 'string' },
    logs: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  const lines = fs.readFileSync(new URL(import.meta.url), 'utf8').split('\n');
  const end = lines.findIndex((l, i) => i > 0 && !l.startsWith('//'));
  console.log(lines.slice(1, end).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
  process.exit(0);
}
const modes = opt.mode === 'both' ? ['unprotected', 'wtproxy'] : opt.mode.split(',');
const rounds = Number(opt.rounds);
const front = Number(opt.front);
const seed = opt.seed ? Number(opt.seed) : Math.floor(Math.random() * 2 ** 31);
if (!modes.every((m) => ['unprotected', 'ports', 'wtproxy', 'adopted'].includes(m)) || !(rounds >= 0) || !(front > 0 && front < 65536)) {
  console.error('run.mjs: --mode unprotected|ports|wtproxy|adopted|both, --rounds N >= 0, --front PORT (see --help)');
  process.exit(2);
}

// A small seeded generator (mulberry32), so a run can be replayed with --seed.
let state = seed >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let x = state;
  x = Math.imul(x ^ (x >>> 15), x | 1);
  x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
  return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// mode ports: each worktree's own port, as a developer picks one by hand
const ownPorts = Object.fromEntries(NAMES.map((n, i) => [n, front + 1 + i]));
const life = lifetime();
// every worktree's database names come from its mode, never from here
for (const k of ['WT_DB', 'WT_TEST_DB', 'WTPROXY_WORKTREE']) delete process.env[k];
const logDir = opt.logs ? path.resolve(opt.logs) : fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-shop-logs-'));
fs.mkdirSync(logDir, { recursive: true });
if (!opt.logs) life.after(() => fs.rmSync(logDir, { recursive: true, force: true }));

// Ctrl-C or SIGTERM: stop everything started (process groups, the daemon,
// PostgreSQL, leftovers in the worktrees), remove the temp folders.
let stopping = false;
const results = {}; // per mode: { databases, rounds: [{ms, leftovers}], runs: [...] }
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, async () => {
    if (stopping) return;
    stopping = true;
    console.error(`\nrun.mjs: ${sig}: stopping everything it started`);
    // the rounds finished so far still count: their table
    if (Object.values(results).some((r) => r.rounds.length)) console.log(`\n${table(results)}`);
    await life.run();
    process.exit(130);
  });
}

function frontBusy(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); resolve(true); });
    s.on('error', () => resolve(false));
  });
}

function getStatus(port) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => { res.resume(); resolve(res.statusCode); });
    req.setTimeout(2000, () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

function saveLog(name, run) {
  const file = path.join(logDir, `${name}.log`);
  fs.writeFileSync(file, `exit ${run.code ?? run.signal}\n${run.out}`);
  return file;
}

const pad = (s, n) => String(s).padEnd(n);
function report(r) {
  console.log(`${pad(r.mode, 12)} ${pad(r.round === undefined ? r.phase : `round ${r.round}`, 9)} wt-${r.branch} ${pad(r.suite, 6)}` +
    ` ${(r.ms / 1000).toFixed(1).padStart(5)} s  ${pad(r.verdict, 12)} ${r.why ? r.why : ''}`);
}

// One suite of one worktree, classified and logged.
async function oneRun(ctx, branch, suite, extra = {}) {
  if (stopping) throw new Error('stopped'); // Ctrl-C: no new run, its worktree is going
  const started = Date.now();
  const run = await runSuite(life, suite, ctx.shop.wt[branch], ctx.env);
  if (stopping) throw new Error('stopped'); // cut short by Ctrl-C: no verdict
  const { verdict, why } = classify(branch, suite, run);
  const r = { mode: ctx.mode, branch, suite, ms: Date.now() - started, verdict, why, code: run.code, ...extra };
  // how often the server this run started was asked GET /__whoami (its
  // runserver logs every request): wtproxy's gate checking it
  if (suite === 'e2e') r.whoamiAsked = (run.out.match(/"GET \/__whoami HTTP/g) || []).length;
  r.log = saveLog(`${ctx.mode}-${r.round !== undefined ? `r${r.round}` : r.phase}-wt-${branch}-${suite}${r.against ? `-on-${r.against}` : ''}`, run);
  report(r);
  return r;
}

// Start wt-<branch>'s dev server on the front port (as a Playwright run
// would), wait for it, and return a function that stops its process group.
async function serveOnFront(ctx, branch) {
  const proc = spawn(python, ['manage.py', 'runserver', `127.0.0.1:${front}`, '--noreload'],
    { cwd: ctx.shop.wt[branch], env: ctx.env, detached: true, stdio: 'ignore' });
  const stop = async () => {
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
    for (let i = 0; i < 100 && await frontBusy(front); i++) await sleep(50);
  };
  life.after(stop);
  const deadline = Date.now() + 20000;
  while (await getStatus(front) !== 200) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`wt-${branch}'s runserver did not answer on ${front}`);
    await sleep(100);
  }
  return stop;
}

// The scenario's own proof: alone, every branch gets its true verdict;
// against another branch's server, every e2e gets a wrong one (a and b
// false red, c false green).
async function check(ctx) {
  const runs = [];
  for (const n of NAMES) {
    for (const suite of ['django', 'e2e']) runs.push(await oneRun(ctx, n, suite, { phase: 'alone', want: 'right' }));
  }
  for (const server of NAMES) {
    const stop = await serveOnFront(ctx, server);
    for (const n of NAMES.filter((x) => x !== server)) {
      const want = BRANCHES[n].ok ? 'false red' : 'false green';
      runs.push(await oneRun(ctx, n, 'e2e', { phase: 'crossed', against: server, want }));
    }
    await stop();
  }
  return runs;
}

// One round: three agents at once, each after its random wait runs both
// suites in a random order. Returns { ms, runs }.
async function round(ctx, number) {
  const started = Date.now();
  const plans = NAMES.map((n) => ({ n, wait: random() * MAX_WAIT_MS, order: random() < 0.5 ? ['django', 'e2e'] : ['e2e', 'django'] }));
  const runs = (await Promise.all(plans.map(async ({ n, wait, order }) => {
    await sleep(wait);
    const mine = [];
    for (const suite of order) mine.push(await oneRun(ctx, n, suite, { round: number }));
    return mine;
  }))).flat();
  const ms = Date.now() - started;
  const left = killUnder(ctx.shop.root); // a cut-short run's server must not serve the next round
  console.log(`${pad(ctx.mode, 12)} round ${number} took ${(ms / 1000).toFixed(1)} s${left ? ` (${left} leftover processes killed)` : ''}`);
  return { ms, runs, leftovers: left };
}

// A fresh repository, worktrees and databases for one mode. In wtproxy
// mode the daemon owns the front port only while that mode's rounds run
// (ctx.startDaemon / ctx.stopDaemon): with both modes, rounds alternate.
async function setup(pg, mode, modeLife) {
  const adopted = mode === 'adopted';
  const shop = makeShop(modeLife, adopted ? { adopt: { bin: wtproxyBin, front } } : {});
  const ctx = { mode, shop, daemonLog: '' };
  const extra = {};
  if (mode !== 'unprotected' && mode !== 'ports') {
    const tmp = { control: path.join(shop.root, 'control.sock'), state: path.join(shop.root, 'registry.json') };
    Object.assign(extra, { WTPROXY_BIN: wtproxyBin, WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' });
    if (!adopted) extra.SHOP_WTPROXY = '1';
    // The servers the daemon starts (adopted) run with its environment:
    // the PostgreSQL server and the middleware's package.
    const daemonEnv = adopted ? { env: { ...pg.env, PYTHONPATH: path.join(root, 'whoami', 'python') } } : {};
    ctx.startDaemon = async () => { ctx.daemon = await startDaemon(modeLife, tmp, ['--listen', `127.0.0.1:${front}`], daemonEnv); };
    ctx.stopDaemon = async () => {
      const { code, sig } = await ctx.daemon.stop('SIGTERM');
      ctx.daemonLog += ctx.daemon.stderr();
      if (code !== 0) ctx.daemonLog += `\n[the daemon exited ${code ?? sig}]\n`;
    };
  }
  ctx.env = agentEnv(pg, front, extra);
  if (ctx.startDaemon) await ctx.startDaemon();
  const dbs = { unprotected: 'shared', ports: 'ports' }[mode] || 'own';
  ctx.db = await setupDatabases(modeLife, shop, pg, dbs, { bin: wtproxyBin, env: ctx.env, ports: ownPorts });
  if (ctx.stopDaemon) await ctx.stopDaemon();
  return ctx;
}

function tally(runs) {
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, 0]));
  for (const r of runs) counts[r.verdict]++;
  return counts;
}

function stats(ms) {
  if (ms.length === 0) return { mean: 0, median: 0, max: 0 };
  const s = [...ms].sort((x, y) => x - y);
  return { mean: s.reduce((a, b) => a + b, 0) / s.length, median: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
}

function table(results) {
  const cols = ['mode', 'suite', 'runs', ...VERDICTS, 'wrong'];
  const rows = [];
  for (const [mode, res] of Object.entries(results)) {
    for (const suite of ['django', 'e2e', 'all']) {
      const runs = res.runs.filter((r) => suite === 'all' || r.suite === suite);
      const c = tally(runs);
      rows.push([mode, suite, runs.length, ...VERDICTS.map((v) => c[v]), runs.length - c.right]);
    }
  }
  const widths = cols.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((x, i) => (i < 2 ? String(x).padEnd(widths[i]) : String(x).padStart(widths[i]))).join('  ');
  const out = [line(cols), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), ''];
  out.push(`${'mode'.padEnd(12)}  rounds  round wall time: mean / median / max`);
  for (const [mode, res] of Object.entries(results)) {
    const s = stats(res.rounds.map((r) => r.ms));
    out.push(`${mode.padEnd(12)}  ${String(res.rounds.length).padStart(6)}  ${(s.mean / 1000).toFixed(1)} s / ${(s.median / 1000).toFixed(1)} s / ${(s.max / 1000).toFixed(1)} s`);
  }
  if (results.unprotected?.rounds.length && results.wtproxy?.rounds.length) {
    const ratio = stats(results.wtproxy.rounds.map((r) => r.ms)).mean / stats(results.unprotected.rounds.map((r) => r.ms)).mean;
    out.push(`wtproxy / unprotected mean round time: ${ratio.toFixed(2)}x`);
  }
  if (Object.values(results).some((r) => r.rounds.some((x) => x.cpu))) out.push('', cpuTable(results));
  return out.join('\n');
}

// CPU seconds per round, median over the rounds, per mode and component;
// the round's wall time (median); each mode against ports.
function cpuTable(results) {
  const cols = ['mode', ...COMPONENTS, 'total', 'wall', 'load'];
  const rows = [];
  const med = {};
  for (const [mode, res] of Object.entries(results)) {
    const rs = res.rounds.filter((r) => r.cpu);
    if (!rs.length) continue;
    const m = (f) => stats(rs.map(f)).median;
    med[mode] = { total: m((r) => Object.values(r.cpu).reduce((a, b) => a + b, 0)), wall: m((r) => r.ms / 1000) };
    rows.push([mode, ...COMPONENTS.map((c) => m((r) => r.cpu[c]).toFixed(1)), med[mode].total.toFixed(1),
      med[mode].wall.toFixed(1), m((r) => r.load).toFixed(1)]);
  }
  const widths = cols.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((x, i) => (i === 0 ? String(x).padEnd(widths[i]) : String(x).padStart(widths[i]))).join('  ');
  const out = ['CPU s per round (median of the rounds; wall s median; load: 1-min load average at the round\'s end)',
    line(cols), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  // medians' ratio, and the sums' over the rounds both modes ran (their
  // rounds alternate: round i of each saw the same machine)
  const total = (r) => Object.values(r.cpu).reduce((a, b) => a + b, 0);
  const sum = (rs, f) => rs.reduce((a, r) => a + f(r), 0);
  for (const mode of ['wtproxy', 'adopted', 'unprotected']) {
    if (!med[mode] || !med.ports) continue;
    const n = Math.min(results[mode].rounds.length, results.ports.rounds.length);
    const [mine, base] = [results[mode].rounds.slice(0, n), results.ports.rounds.slice(0, n)];
    out.push(`${mode} / ports: CPU ${(med[mode].total / med.ports.total).toFixed(2)}x, wall ${(med[mode].wall / med.ports.wall).toFixed(2)}x` +
      ` (medians); CPU ${(sum(mine, total) / sum(base, total)).toFixed(2)}x, wall ${(sum(mine, (r) => r.ms) / sum(base, (r) => r.ms)).toFixed(2)}x (sums of ${n} rounds)`);
  }
  return out.join('\n');
}

async function main() {
  if (!fs.existsSync(chromium)) throw new Error(`${chromium} is missing: apt-get install chromium (scripts/bootstrap)`);
  if (!fs.existsSync(path.join(nodeModules, '@playwright', 'test'))) throw new Error('@playwright/test is missing: cd tests && npm ci');
  if (modes.some((m) => m !== 'unprotected') && !fs.existsSync(wtproxyBin)) throw new Error(`${wtproxyBin} is missing: scripts/build, or set WTPROXY_BIN`);
  for (const port of [front, ...(modes.includes('ports') ? Object.values(ownPorts) : [])]) {
    if (await frontBusy(port)) throw new Error(`something already listens on 127.0.0.1:${port}: stop it, or pick another port with --front PORT`);
  }
  console.log(`run.mjs: seed ${seed}, front port ${front}, ${rounds} rounds of ${modes.join(' and ')}, wtproxy ${wtproxyBin}, logs in ${logDir}`);
  const pg = await startPostgres(life);
  const out = { seed, front, rounds, wtproxy: wtproxyBin, modes: {}, check: null };

  if (opt.check) {
    const checkLife = lifetime();
    life.after(() => checkLife.run());
    const ctx = await setup(pg, 'unprotected', checkLife);
    ctx.mode = 'check';
    const runs = await check(ctx);
    await checkLife.run();
    // the rounds start from no database at all: a drop by pattern is safe
    // here only because this cluster is the runner's own (startPostgres
    // initdb's a new one in a temporary folder), never a shared server
    for (const n of pg.psql("SELECT datname FROM pg_database WHERE datname LIKE '%shop%'").split('\n').filter(Boolean)) {
      pg.psql(`DROP DATABASE IF EXISTS "${n}"`);
    }
    out.check = runs;
    const bad = runs.filter((r) => r.verdict !== r.want);
    console.log(bad.length ? `check: ${bad.length} of ${runs.length} runs did not get the verdict the scenario needs` : `check: all ${runs.length} runs as the scenario needs`);
  }

  const ctxs = {};
  for (const mode of modes) {
    const modeLife = lifetime();
    life.after(() => modeLife.run());
    // Each mode its own PostgreSQL, as separate machines: the shops of two
    // modes have worktrees of the same names, whose claimed databases
    // would be one name stamped by two worktrees (a refusal, rightly).
    const modePg = modes.length > 1 ? await startPostgres(modeLife) : pg;
    ctxs[mode] = await setup(modePg, mode, modeLife);
    console.log(`${mode}: databases ${ctxs[mode].db.how}`);
    results[mode] = { databases: ctxs[mode].db, rounds: [], runs: [] };
  }
  // rounds of the two modes alternate (and which goes first), so that a
  // machine busier at one time than another weighs on both alike
  const meter = opt.cpu ? cpuMeter(logDir) : null;
  const noCpu = meter ? meter.start() : 'not asked (--cpu)';
  if (meter && !noCpu) life.after(() => meter.stop());
  if (meter && noCpu) console.log(`run.mjs: no CPU per component: ${noCpu}`);
  out.cpu = !noCpu;
  for (let i = 1; i <= rounds; i++) {
    for (const mode of i % 2 ? modes : [...modes].reverse()) {
      if (stopping) return 130;
      const ctx = ctxs[mode];
      if (ctx.startDaemon) await ctx.startDaemon();
      const r = await round(ctx, i);
      if (ctx.stopDaemon) await ctx.stopDaemon();
      // the round's processes have all exited (the daemon too): their CPU
      const { totals: cpu, detail: cpuDetail } = noCpu ? {} : (await sleep(300), meter.round());
      results[mode].rounds.push({ ms: r.ms, leftovers: r.leftovers, cpu, cpuDetail, load: os.loadavg()[0] });
      results[mode].runs.push(...r.runs);
    }
  }
  for (const mode of modes) if (ctxs[mode].daemonLog) results[mode].daemonLog = ctxs[mode].daemonLog.slice(-8000);
  out.modes = results;

  console.log(`\n${table(results)}`);
  if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(out, null, 2));
  const wrongProtected = ['ports', 'wtproxy', 'adopted'].flatMap((m) => results[m]?.runs || [])
    .filter((r) => r.verdict !== 'right').length;
  const wrongCheck = (out.check || []).filter((r) => r.verdict !== r.want).length;
  return wrongProtected || wrongCheck ? 1 : 0;
}

let code = 2;
try {
  code = await main();
} catch (e) {
  console.error(`run.mjs: ${e.stack || e.message}`);
}
if (!stopping) {
  await life.run();
  process.exit(code);
}
