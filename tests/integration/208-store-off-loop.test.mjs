// 208: a PostgreSQL store that stops answering holds no proxied request.
// The daemon runs on a real PostgreSQL; its server and every backend
// process are stopped (SIGSTOP, by pid: the TCP connections stay open and
// nothing answers, as with a frozen VM). While a dashboard
// /__wtproxy/api/leases and a `wtproxy leases` wait for the store, 20
// requests to a registered backend are each answered within 500 ms. The
// two lease requests then get a clear error (the store did not answer,
// host and port, what to do), within the CLI's own 10 s, not a hang. Once
// the server is continued (SIGCONT), both work again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { makeWorktrees, startDaemon, startRun, cli, control, get, getWorktree, sanitizerClean, waitFor } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';

const REQUESTS = 20;
const FAST_MS = 500;

// The postmaster and its children (backends, checkpointer, ...), by pid.
function serverPids(pg) {
  const kids = fs.readFileSync(`/proc/${pg.pid}/task/${pg.pid}/children`, 'utf8').trim();
  return [pg.pid, ...kids.split(/\s+/).filter(Boolean).map(Number)];
}

// Bytes sent to the server's port that no stopped process has read: the
// daemon's queries (and connection starts) waiting in its sockets, in any
// state (a connection the daemon gave up on stays, in CLOSE-WAIT, with
// its bytes: counted, the total only grows).
function unread(port) {
  const out = execFileSync('ss', ['-Htan', `( sport = :${port} )`], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l && !l.startsWith('LISTEN'))
    .reduce((n, l) => n + Number(l.trim().split(/\s+/)[1]), 0);
}

function signalAll(pids, sig) {
  for (const pid of pids) {
    try { process.kill(pid, sig); } catch { /* a child that ended meanwhile */ }
  }
}

test('a stopped store: proxied requests stay fast, lease reads fail clearly, then work again', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  let r = await cli(tmp, ['claim', 'emu', '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);

  const stopped = serverPids(pg);
  signalAll(stopped, 'SIGSTOP');
  try {
    await whileStopped(t, tmp, px, pg);
  } finally {
    signalAll(stopped, 'SIGCONT'); // before the after() hooks: pg.stop() would wait forever
  }
  r = await cli(tmp, ['leases', '--json'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, `works again once the server runs: ${r.stderr}`);
  // emu-2 too when its claim reached the server before it stopped: the
  // server runs it once continued (the reply said it was not confirmed).
  const ids = JSON.parse(r.stdout).map((x) => x.id).filter((id) => id !== 'emu-2');
  assert.deepEqual(ids, ['emu']);
  const again = JSON.parse((await get(px.port, {}, '/__wtproxy/api/leases')).body);
  assert.deepEqual(again.leases.map((x) => x.id).filter((id) => id !== 'emu-2'), ['emu']);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});

// The server is stopped: lease reads wait, proxied requests do not.
async function whileStopped(t, tmp, px, pg) {

  const t0 = Date.now();
  const settled = { api: 0, cli: 0 };
  const api = get(px.port, {}, '/__wtproxy/api/leases').then((x) => { settled.api = Date.now() - t0; return x; });
  const leases = cli(tmp, ['leases'], { cwd: tmp.wt.a, ms: 20000 }).then((x) => { settled.cli = Date.now() - t0; return x; });
  const claim = control(tmp.control, { op: 'claim', id: 'emu-2', worktree: tmp.wt.a, pid: 0, ttl_ms: 60000 });
  await new Promise((res) => setTimeout(res, 100)); // all three are queued on the PostgreSQL thread

  const took = [];
  for (let i = 0; i < REQUESTS; i++) {
    const s = Date.now();
    const res = await getWorktree(px.port, tmp.wt.a);
    took.push(Date.now() - s);
    assert.equal(res.status, 200, res.body);
  }
  t.diagnostic(`${REQUESTS} proxied requests while the store hangs: worst ${Math.max(...took)} ms, ` +
    `all within ${Date.now() - t0} ms of the lease requests`);
  assert.ok(Math.max(...took) < FAST_MS, `each request answered within ${FAST_MS} ms: ${took.join(', ')}`);
  assert.equal(settled.api, 0, 'the dashboard lease read was still waiting meanwhile');
  assert.equal(settled.cli, 0, 'wtproxy leases was still waiting meanwhile');

  const a = await api;
  assert.equal(a.status, 200);
  const body = JSON.parse(a.body);
  assert.equal(body.store, 'postgresql');
  assert.equal(body.leases, undefined, 'no stale or empty list in place of the error');
  assert.match(body.error, new RegExp(`host 127\\.0\\.0\\.1 port ${pg.port} did not answer within`));
  assert.match(body.error, /make it answer \(psql\), or fix WTPROXY_REGISTRY/);
  const l = await leases;
  sanitizerClean(assert, l.stderr);
  assert.equal(l.code, 1, `wtproxy leases fails: ${l.stderr}`);
  assert.match(l.stderr, new RegExp(`port ${pg.port} did not answer within`));
  const c = await claim;
  assert.equal(c.error, 'registry-down', JSON.stringify(c));
  // It ran first (sent, so not confirmed rather than not made), or behind
  // the one that did (not sent).
  assert.match(c.message, new RegExp(`^(the registry did not confirm the claim|claims are refused while the registry is down): .*port ${pg.port} did not answer within`));
  assert.match(c.message, new RegExp(`pg_isready -h 127\\.0\\.0\\.1 -p ${pg.port} tells when`));
  t.diagnostic(`errors after ${settled.api} ms (dashboard) and ${settled.cli} ms (wtproxy leases)`);
  assert.ok(settled.cli < 10000, 'within the CLI\'s own timeout');
}

test('the daemon stops while lease ops wait for a stopped store: each is answered, none hangs', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  // answered: the daemon's store thread is connected and idle
  assert.equal((await control(tmp.control, { op: 'leases' })).ok, true);
  const stopped = serverPids(pg);
  signalAll(stopped, 'SIGSTOP');
  try {
    const before = unread(pg.port);
    const first = control(tmp.control, { op: 'claim', id: 'one', worktree: tmp.wt.a, pid: 0, ttl_ms: 60000 });
    // runs, waiting for the server: its query is at the stopped server
    // (a fixed 100, then 600 ms wait was too short on a loaded machine:
    // both ops were still queued when the daemon stopped)
    await waitFor(() => unread(pg.port) > before, 10000, 'the first claim\'s query at the stopped server');
    const second = control(tmp.control, { op: 'claim', id: 'two', worktree: tmp.wt.a, pid: 0, ttl_ms: 60000 });
    await new Promise((res) => setTimeout(res, 300)); // queued behind it
    const exited = px.stop('SIGTERM');
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.error, 'registry-down', JSON.stringify(a));
    assert.equal(b.error, 'stopping', 'the queued op never ran: nothing was done');
    assert.match(b.message, /^the daemon stopped before the registry answered, so nothing was done: run the command again once the daemon is back \(wtproxy doctor says whether it is\)$/);
    await exited;
  } finally {
    signalAll(stopped, 'SIGCONT');
  }
  sanitizerClean(assert, px.stderr());
});
