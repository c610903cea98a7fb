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
import { execFileSync } from 'node:child_process';
import os from 'node:os';

// Run `wtproxy db ARGS` and parse the KEY=VALUE lines it prints.
export function wtproxyDb(args) {
  const out = execFileSync('wtproxy', ['db', ...args], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
  });
  const env = {};
  for (const line of out.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) env[line.slice(0, i)] = line.slice(i + 1);
  }
  return env;
}

export default function setup({ provide } = {}) {
  const base = process.env.WTPROXY_DB_BASE || 'test_app';
  const migrations = process.env.WTPROXY_DB_MIGRATIONS || 'migrations';
  const migrate = process.env.WTPROXY_DB_MIGRATE || 'npm run migrate';
  const workers = Number(process.env.VITEST_MAX_THREADS || os.availableParallelism());
  const tpl = wtproxyDb(['template', '--base', base, '--migrations-dir', migrations,
    '--print-env', '--', '/bin/sh', '-c', migrate]);
  const suffixes = Array.from({ length: workers }, (_, i) => `w${i + 1}`);
  const copies = wtproxyDb(['copy', '--base', base, '--print-env', ...suffixes])
    .WTPROXY_COPY_DBS.split(' ');
  if (provide) provide('wtproxyDbs', copies);
  process.env.WTPROXY_TEMPLATE_DB = tpl.WTPROXY_TEMPLATE_DB;
  process.env.WTPROXY_COPY_DBS = copies.join(' ');
  return function teardown() {
    for (const name of copies) wtproxyDb(['release', '--name', name]);
  };
}
