// 212: a daemon on a shared PostgreSQL registry through the registry's
// restarts, a role short of rights, and its own death. A connection the
// server ended (a restart: 57P01) is made again before anyone is warned;
// a role without rights on the schema is told the GRANT that fixes it, not
// to start a server that runs; the start printed after a daemon died
// carries its --registry, and a daemon started without the registry its
// state file's last daemon ran on says so, in its log and in doctor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';

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
