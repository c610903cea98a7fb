// 212: a daemon on a shared PostgreSQL registry through the registry's
// restarts, a role short of rights, and its own death. A connection the
// server ended (a restart: 57P01) is made again before anyone is warned;
// a role without rights on the schema is told the GRANT that fixes it, not
// to start a server that runs; the start printed after a daemon died
// carries its --registry, and a daemon started without the registry its
// state file's last daemon ran on says so, in its log and in doctor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';
import { startProxy, wtproxyBin } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('the registry ended the connection (57P01): ls reconnects, lists the other machine, warns of nothing', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  let r = await cli(tmp, ['register', '--port', '5999', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  pg.psql("INSERT INTO wtproxy.backends (machine, front, worktree, entry) SELECT 'm2', front, "
    + "worktree, jsonb_set(entry, '{machine}', '\"m2\"') FROM wtproxy.backends");
  // What a restart does to every client: FATAL 57P01, then the end.
  pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wtproxy'");
  await sleep(200);
  r = await cli(tmp, ['ls'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /does not answer|57P01/, r.stderr);
  assert.match(r.stdout, /^m2 /m, r.stdout);
  sanitizerClean(assert, px.stderr());
});

test('a daemon on a registry killed: the start printed carries its --registry (masked); one started without it says so', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  // The per-user state folder, for the daemon and the CLI alike: the CLI
  // reads what the last daemon ran with from the state file there.
  const env = { XDG_STATE_HOME: path.join(tmp.root, 'state') };
  fs.mkdirSync(env.XDG_STATE_HOME, { mode: 0o700 });
  const uri = `postgresql://postgres:s3cr3t-pw@127.0.0.1:${pg.port}/postgres`;
  const shown = `'postgresql://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${pg.port}/postgres'`;
  let px = await startProxy(t, ['--control', tmp.control, '--registry', uri], { env });
  // Running, its restart line is read from its cmdline: the password masked there too.
  let r = await cli(tmp, ['stop', '--daemon'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout + r.stderr, new RegExp(`setsid -f \\S+ serve .*--registry ${shown}`), r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout + r.stderr, /s3cr3t/);
  await px.exited;
  px = await startProxy(t, ['--control', tmp.control, '--registry', uri], { env });
  await px.stop('SIGKILL');

  r = await cli(tmp, ['ls'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`no daemon answers on ${tmp.control}; start one, in the background: `
    + `setsid -f wtproxy serve --control ${tmp.control} --registry ${shown} >>`), r.stderr);
  assert.doesNotMatch(r.stderr, /s3cr3t/);
  r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env, ms: 30000 });
  let daemon = JSON.parse(r.stdout).checks.find((c) => c.name === 'daemon');
  assert.match(daemon.fix, new RegExp(`serve .*--registry ${shown}`), daemon.fix);
  assert.doesNotMatch(r.stdout, /s3cr3t/);

  // Started without it (a shell without WTPROXY_REGISTRY): said at its start, and by doctor.
  px = await startProxy(t, ['--control', tmp.control], { env });
  assert.match(px.stderr(), new RegExp(`WARNING: the daemon before this one ran on the PostgreSQL registry `
    + `postgresql://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${pg.port}/postgres .*runs on the EMBEDDED store`), px.stderr());
  r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env, ms: 30000 });
  daemon = JSON.parse(r.stdout).checks.find((c) => c.name === 'daemon');
  assert.equal(daemon.status, 'problem', JSON.stringify(daemon));
  assert.match(daemon.detail, /runs on the embedded store, given no registry, while the daemon before it ran on the PostgreSQL registry/);
  assert.match(daemon.fix, new RegExp(`stop --daemon && setsid -f \\S+ serve .*--registry ${shown}`), daemon.fix);
  assert.doesNotMatch(r.stdout + px.stderr(), /s3cr3t/);
  sanitizerClean(assert, px.stderr());
});

test('a registry role without rights: the daemon log, ls, doctor and claim give the GRANT, which works', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const env = { XDG_STATE_HOME: path.join(tmp.root, 'state') };
  const log = path.join(env.XDG_STATE_HOME, 'wtproxy', 'daemon.log');
  fs.mkdirSync(path.dirname(log), { recursive: true, mode: 0o700 });
  pg.psql('CREATE DATABASE wtproxy_devtools');
  pg.psql('CREATE DATABASE wtproxy_fresh');
  pg.psql('CREATE ROLE wt LOGIN');
  // The schema made by its owner (postgres); wt has no right on it.
  let r = await cli(tmp, ['claim', 'first', '--ttl', '1m'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: pg.uri('wtproxy_devtools') } });
  assert.equal(r.code, 0, r.stderr);
  const uri = `postgresql://wt@127.0.0.1:${pg.port}/wtproxy_devtools`;
  const grants = 'GRANT USAGE ON SCHEMA wtproxy TO wt; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA wtproxy TO wt';
  const fix = `it runs, and the role wt lacks a right on the registry's database wtproxy_devtools; as its owner or a superuser, grant it: psql -h 127.0.0.1 -p ${pg.port} -d wtproxy_devtools -c '${grants}'`;

  // The daemon started as the no-daemon line says, into its log.
  const serve = await runToExit('/bin/sh', ['-c', `"$0" serve --listen 127.0.0.1:0 --control ${tmp.control} --registry ${uri} >>${log} 2>&1`, wtproxyBin],
    { env, ms: 20000 });
  assert.notEqual(serve.code, 0);
  assert.ok(fs.readFileSync(log, 'utf8').includes(`wtproxy: not started: the registry at host 127.0.0.1 port ${pg.port} failed a query: ERROR:  permission denied for schema wtproxy (SQLSTATE 42501): ${fix}`), fs.readFileSync(log, 'utf8'));
  r = await cli(tmp, ['ls'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`no daemon answers on ${tmp.control} (the last daemon did not start: the registry at host 127.0.0.1 port ${pg.port} failed a query: ERROR:  permission denied for schema wtproxy (SQLSTATE 42501): ${fix}`), r.stderr);

  // doctor's leases check, in a shell on that registry: the GRANT, not "start it".
  r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env: { ...env, WTPROXY_REGISTRY: uri }, ms: 30000 });
  const leases = JSON.parse(r.stdout).checks.find((c) => c.name === 'leases');
  assert.equal(leases.status, 'problem', JSON.stringify(leases));
  assert.ok(leases.fix.startsWith(fix), leases.fix);
  assert.doesNotMatch(leases.fix, /does not answer|pg_isready/);

  // The GRANT given is enough: the daemon starts, and claims and mirrors.
  pg.psql(grants, { db: 'wtproxy_devtools' });
  const px = await startProxy(t, ['--control', tmp.control, '--registry', uri], { env });
  r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(pg.psql("SELECT machine <> '' FROM wtproxy.leases WHERE id = 'emu'", { db: 'wtproxy_devtools' }), 't');
  r = await cli(tmp, ['register', '--port', '5999', '--ttl', '1m', '--no-wait'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(pg.psql("SELECT entry->>'backend' FROM wtproxy.backends", { db: 'wtproxy_devtools' }), '127.0.0.1:5999');
  assert.doesNotMatch(px.stderr(), /WARNING|denied/, px.stderr());

  // A first use (no schema yet): CREATE on the database, then it creates it.
  const fresh = `postgresql://wt@127.0.0.1:${pg.port}/wtproxy_fresh`;
  r = await cli(tmp, ['claim', 'emu2', '--ttl', '1m'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: fresh } });
  assert.equal(r.code, 1, r.stderr);
  assert.ok(r.stderr.includes(`permission denied for database wtproxy_fresh (SQLSTATE 42501): it runs, and the role wt lacks a right on the registry's database wtproxy_fresh; as its owner or a superuser, grant it: psql -h 127.0.0.1 -p ${pg.port} -d wtproxy_fresh -c 'GRANT CREATE ON DATABASE wtproxy_fresh TO wt'`), r.stderr);
  pg.psql('GRANT CREATE ON DATABASE wtproxy_fresh TO wt');
  r = await cli(tmp, ['claim', 'emu2', '--ttl', '1m'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: fresh } });
  assert.equal(r.code, 0, r.stderr);
  sanitizerClean(assert, px.stderr());
});

test('the registry still down: doctor says to start PostgreSQL first, and restarts the daemon only once pg_isready says it answers', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const net = await import('node:net');
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  const uri = `postgresql://wt@127.0.0.1:${port}/wtproxy_devtools`;
  const px = await startDaemon(t, tmp, ['--registry', uri], { env: { WTPROXY_REGISTRY_OPTIONAL: '1' } });
  const r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: uri }, ms: 30000 });
  const daemon = JSON.parse(r.stdout).checks.find((c) => c.name === 'daemon');
  assert.equal(daemon.status, 'problem', JSON.stringify(daemon));
  assert.match(daemon.fix, new RegExp(`^the registry at 127\\.0\\.0\\.1:${port} does not answer yet: start PostgreSQL there first, then: `
    + `pg_isready -h 127\\.0\\.0\\.1 -p ${port} && \\S+ stop --daemon && setsid -f \\S+ serve .*--registry ${uri.replace(/\./g, '\\.')}`), daemon.fix);
  sanitizerClean(assert, px.stderr());
});

test('the guides: serve --registry takes a URI; the dashboard API names guides, not source files', async (t) => {
  const tmp = makeWorktrees(t, []);
  let r = await cli(tmp, ['help', 'serve']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /--registry URI /);
  assert.doesNotMatch(r.stdout, /--registry PATH/);
  r = await cli(tmp, ['help', 'dashboard-api']);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /reg_server_leases|conn_fail|registry\/registry\.h|proxy\/client\.c/);
});
