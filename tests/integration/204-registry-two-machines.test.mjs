// 204: two daemons of two (simulated) machines share one PostgreSQL
// registry. Each mirrors its registrations into wtproxy.backends; `wtproxy
// ls` on either shows both machines' dev servers with a MACHINE column;
// routing stays local: machine m1's proxy never sends a request to m2's
// server; a CLI that knows only its daemon claims on the shared store.
// A dropped registration (and a stopped daemon) leaves the table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { makeWorktrees, startDaemon, startRun, cli, lsJson, getWorktree, waitFor, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';

test('ls shows both machines with a MACHINE column; each routes only its own', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a', 'b']);
  // Machine 2: its own control socket and state file.
  const tmp2 = { ...tmp, control: path.join(tmp.root, 'm2', 'control.sock'), state: path.join(tmp.root, 'm2', 'registry.json') };
  fs.mkdirSync(path.join(tmp.root, 'm2'), { mode: 0o700 });
  const uri = pg.uri('postgres');
  const px1 = await startDaemon(t, tmp, ['--registry', uri], { env: { WTPROXY_MACHINE: 'm1' } });
  const px2 = await startDaemon(t, tmp2, ['--registry', uri], { env: { WTPROXY_MACHINE: 'm2' } });

  const runA = startRun(t, tmp, { cwd: tmp.wt.a, front: px1.port, env: { WTPROXY_MACHINE: 'm1' } });
  await runA.ready;
  const runB = startRun(t, tmp2, { cwd: tmp.wt.b, front: px2.port, env: { WTPROXY_MACHINE: 'm2' } });
  await runB.ready;
  assert.equal((await getWorktree(px2.port, tmp.wt.b)).status, 200, 'm2 routes its own');

  await waitFor(() => pg.psql('SELECT count(*) FROM wtproxy.backends') === '2', 5000, 'both mirrored');
  assert.equal(pg.psql("SELECT machine || ':' || worktree FROM wtproxy.backends ORDER BY machine"),
    `m1:${tmp.wt.a}\nm2:${tmp.wt.b}`);

  const r = await cli(tmp, ['ls']);
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  assert.deepEqual(rows[0].slice(0, 3), ['MACHINE', 'WORKTREE', 'BRANCH']);
  assert.deepEqual(rows.slice(1).map((c) => `${c[0]} ${c[1]} ${c[2]}`).sort(),
    [`m1 ${tmp.wt.a} a`, `m2 ${tmp.wt.b} b`]);
  const entries = await lsJson(tmp2);
  assert.deepEqual(entries.map((e) => [e.machine, e.remote === true]).sort(), [['m1', true], ['m2', false]]);

  // m1's proxy knows m2's server only as a row: a request for wt-b is not sent there.
  const viaM1 = await getWorktree(px1.port, tmp.wt.b);
  assert.notEqual(viaM1.status, 200, 'routing stays local');
  assert.equal(viaM1.headers['x-wtproxy-error'], 'no-backend', JSON.stringify(viaM1.headers));

  // A CLI that knows only its daemon claims on the daemon's store: PostgreSQL.
  let c = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.a, env: { WTPROXY_MACHINE: 'm1' } });
  assert.equal(c.code, 0, c.stderr);
  assert.equal(pg.psql("SELECT machine || ':' || worktree FROM wtproxy.leases WHERE id = 'emu'"), `m1:${tmp.wt.a}`);
  c = await cli(tmp2, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.b, env: { WTPROXY_MACHINE: 'm2' } });
  assert.equal(c.code, 1, 'm1 holds it, seen from m2');
  assert.match(c.stderr, new RegExp(`emu is held by machine m1, worktree ${tmp.wt.a}`));
  c = await cli(tmp2, ['leases', '--json'], { env: { WTPROXY_MACHINE: 'm2' } });
  assert.deepEqual(JSON.parse(c.stdout).map((l) => l.id), ['emu']);

  runB.proc.kill('SIGTERM');
  await runB.exited;
  await waitFor(() => pg.psql("SELECT count(*) FROM wtproxy.backends WHERE machine = 'm2'") === '0', 5000, 'm2 dropped its row');
  await px1.stop('SIGTERM');
  assert.equal(pg.psql('SELECT count(*) FROM wtproxy.backends'), '0', 'a stopped daemon leaves no rows');
  sanitizerClean(assert, px1.stderr());
  sanitizerClean(assert, px2.stderr());
});
