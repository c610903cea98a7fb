// vitest-db-setup.mjs - a Vitest globalSetup that gives this worktree's
// test workers one fresh, migrated PostgreSQL database each, from
// wtproxy (conf/NODE-DB-TESTS.md). Copy it into the app and name it in
// vitest.config: test: { globalSetup: ['./vitest-db-setup.mjs'] }.
//
// 1. `wtproxy db template` claims this worktree's template and runs the
//    migrate command on it only when it is new or the migrations changed;
// 2. `wtproxy db copy` makes one copy per worker (CREATE DATABASE ...
//    TEMPLATE: a file copy, no migrations run);
// 3. the teardown drops exactly those copies, by name. Never clean up by
//    prefix (LIKE 'test_app%'): that drops other worktrees' databases.
//
// A test reads its database: inject('wtproxyDbs')[Number(process.env.VITEST_POOL_ID) - 1].
// Env: WTPROXY_DB_BASE (default test_app), WTPROXY_DB_MIGRATIONS (the
// migrations folder, default migrations), WTPROXY_DB_MIGRATE (the migrate
// command, run by /bin/sh with PGDATABASE naming the template), and the
// server as for every `wtproxy db` (WTPROXY_DB_SERVER, else PG*).
//
// Everything runs in Vitest's root, the worktree whose tests run: from
// another folder (`vitest run --root ../wt-b` in app/), wt-b's tests got
// app's template and copies, and its schema, and their HTTP requests
// app's servers. One run at a time per root
// and base: a second one (an agent's and its sub-agent's, `vitest` beside
// `vitest run`) made the same copies afresh under the first one's tests;
// it now stops, naming the run that holds them.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Run `wtproxy db ARGS` in cwd and parse the KEY=VALUE lines it prints.
export function wtproxyDb(args, cwd) {
  const out = execFileSync('wtproxy', ['db', ...args], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], cwd,
  });
  const env = {};
  for (const line of out.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) env[line.slice(0, i)] = line.slice(i + 1);
  }
  return env;
}

// Whether pid runs.
function alive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

// This run's hold on root's copies of base: a file naming its pid, taken
// over from a run that no longer runs. Returns its release.
export function holdCopies(root, base) {
  const key = crypto.createHash('sha256').update(`${root}\0${base}`).digest('hex').slice(0, 16);
  const file = path.join(os.tmpdir(), `wtproxy-vitest-${key}.pid`);
  for (;;) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(file, { force: true });
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    const other = Number(fs.readFileSync(file, 'utf8'));
    if (other && other !== process.pid && alive(other)) {
      throw new Error(`wtproxy: another test run (pid ${other}) uses ${root}'s test databases ` +
        `(${base}): copying them afresh would pull them from under its tests. Wait for it ` +
        `(tail --pid=${other} -f /dev/null), then run again`);
    }
    fs.rmSync(file, { force: true }); // its run ended without its teardown
  }
}

// The top of dir's worktree (the first folder up with a .git), '' none.
function worktreeTop(dir) {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.git'))) return d;
    if (path.dirname(d) === d) return '';
  }
}

// A run whose root is another worktree than the folder it was started in
// (`vitest run --root ../wt-b` in app/): wtproxy places a caller by its
// folder, so the tests' HTTP requests went to app's servers and a test of
// wt-b passed on app's code. The run moves to its root before its test
// workers start: they inherit it, as Playwright's reporter moves a run
// to its config's folder.
function moveToRoot(root) {
  const to = worktreeTop(root), from = worktreeTop(process.cwd());
  if (!to || to === from || process.env.WTPROXY_WORKTREE) return;
  process.chdir(root);
  console.error(`(wtproxy vitest-db-setup: this run's root is in the worktree ${to}, but it was ` +
    `started in ${from || process.cwd()}: its tests run from ${root}, so that their requests go to ` +
    `${to}'s servers and databases)`);
}

export default function setup({ provide, config } = {}) {
  const root = config?.root || process.cwd();
  moveToRoot(root);
  const base = process.env.WTPROXY_DB_BASE || 'test_app';
  const migrations = process.env.WTPROXY_DB_MIGRATIONS || 'migrations';
  const migrate = process.env.WTPROXY_DB_MIGRATE || 'npm run migrate';
  const workers = Number(process.env.VITEST_MAX_THREADS || os.availableParallelism());
  const unhold = holdCopies(root, base);
  let copies;
  try {
    const tpl = wtproxyDb(['template', '--base', base, '--migrations-dir', migrations,
      '--print-env', '--', '/bin/sh', '-c', migrate], root);
    const suffixes = Array.from({ length: workers }, (_, i) => `w${i + 1}`);
    copies = wtproxyDb(['copy', '--base', base, '--print-env', ...suffixes], root)
      .WTPROXY_COPY_DBS.split(' ');
    process.env.WTPROXY_TEMPLATE_DB = tpl.WTPROXY_TEMPLATE_DB;
  } catch (e) {
    unhold();
    throw e;
  }
  if (provide) provide('wtproxyDbs', copies);
  process.env.WTPROXY_COPY_DBS = copies.join(' ');
  return function teardown() {
    try {
      for (const name of copies) wtproxyDb(['release', '--name', name], root);
    } finally {
      unhold();
    }
  };
}
