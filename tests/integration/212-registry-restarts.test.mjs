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
import { startProxy } from './lib/wtproxy.mjs';

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
  await px.stop('SIGKILL');

  let r = await cli(tmp, ['ls'], { cwd: tmp.wt.a, env });
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
