// 201: the rules of a lease on the PostgreSQL store: a refusal names the
// holder and the command that frees it; the same holder renews; a TTL
// expires; a dead holder on this machine is taken over (another machine's
// is not); `claim -- CMD` holds the lease while CMD runs and releases it
// when CMD exits or the claim is sent SIGTERM, passing the status on;
// release is for the holder's worktree unless --force, never of a live
// holder's pid but by that process, and anyone's on this machine of a
// dead one; `leases` drops this machine's dead holders.
import { test } from 'node:test';
import fs from 'node:fs';
import assert from 'node:assert/strict';
import { makeWorktrees, cli, cliEnv, sanitizerClean, pidAlive, waitFor } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';
import { startCli, waitRows } from './lib/lease.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';

async function setup(t) {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a', 'b']);
  const env = { WTPROXY_REGISTRY: pg.uri('postgres'), WTPROXY_MACHINE: 'm1' };
  const run = (wt, args, extra = {}) => cli(tmp, args, { cwd: tmp.wt[wt], env: { ...env, ...extra } });
  const holderOf = (id) => pg.psql(`SELECT worktree FROM wtproxy.leases WHERE id = '${id}'`);
  return { pg, tmp, env, run, holderOf };
}

test('refused claim names machine, worktree, purpose, age and the release command; same holder renews', async (t) => {
  const { tmp, run, holderOf } = await setup(t);
  let r = await run('a', ['claim', 'emulator-1', '--ttl', '10m', '--purpose', 'e2e android']);
  assert.equal(r.code, 0, r.stderr);
  r = await run('b', ['claim', 'emulator-1', '--ttl', '10m']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /emulator-1 is held by this machine m1/);
  assert.match(r.stderr, new RegExp(`worktree ${tmp.wt.a}`));
  assert.match(r.stderr, /for "e2e android"/);
  assert.match(r.stderr, /since \d+s ago/);
  assert.match(r.stderr, new RegExp(`cd ${tmp.wt.a} && wtproxy release emulator-1`));
  assert.match(r.stderr, /wtproxy release emulator-1 --force/);
  assert.equal(holderOf('emulator-1'), tmp.wt.a);
  r = await run('a', ['claim', 'emulator-1', '--ttl', '20m']);
  assert.equal(r.code, 0, `the same holder renews: ${r.stderr}`);
  r = await run('b', ['release', 'emulator-1']);
  assert.equal(r.code, 1, 'another worktree cannot release it');
  assert.equal(holderOf('emulator-1'), tmp.wt.a);
  r = await run('a', ['release', 'emulator-1']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(holderOf('emulator-1'), '');
  r = await run('b', ['claim', 'emulator-1', '--ttl', '1m']);
  assert.equal(r.code, 0, r.stderr);
  r = await run('a', ['release', 'emulator-1', '--force']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(holderOf('emulator-1'), '');
});

test('a TTL expires: the next claimer wins', async (t) => {
  const { run, holderOf, tmp } = await setup(t);
  // 3 s: under load (CI beside other jobs) one ASan CLI took over 1 s,
  // and b's first claim came after a 1 s lease had expired.
  let r = await run('a', ['claim', 'slot', '--ttl', '3s']);
  const claimed = Date.now();
  assert.equal(r.code, 0, r.stderr);
  r = await run('b', ['claim', 'slot', '--ttl', '1m']);
  assert.equal(r.code, 1, `still held (${Date.now() - claimed} ms after the claim)`);
  await new Promise((res) => setTimeout(res, Math.max(0, claimed + 3300 - Date.now())));
  r = await run('b', ['claim', 'slot', '--ttl', '1m']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(holderOf('slot'), tmp.wt.b);
});

test('a manual claim without --ttl is refused (exit 2)', async (t) => {
  const { run } = await setup(t);
  const r = await run('a', ['claim', 'slot']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--ttl/);
});

test('a dead holder on this machine is taken over; one on another machine is not', async (t) => {
  const { pg, tmp, run, holderOf } = await setup(t);
  const holder = startCli(t, tmp, ['claim', 'device', '--', 'sleep', '1000'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: pg.uri('postgres'), WTPROXY_MACHINE: 'm1' } });
  await waitRows(pg, "SELECT pid FROM wtproxy.leases WHERE id = 'device'", (v) => v === String(holder.pid), 'the lease of the running claim');
  let r = await run('b', ['claim', 'device', '--ttl', '1m']);
  assert.equal(r.code, 1, 'held while its pid runs');
  assert.match(r.stderr, new RegExp(`released when pid ${holder.pid} ends`));
  const orphan = await waitFor(() => children(holder.pid)[0], 5000, 'the sleep child');
  holder.proc.kill('SIGKILL'); // no chance to release
  await holder.exited;
  await waitFor(() => !pidAlive(orphan), 3000, 'CMD ended with its claim (PR_SET_PDEATHSIG)');
  assert.equal(holderOf('device'), tmp.wt.a, 'the row outlives the killed holder');
  r = await run('b', ['claim', 'device', '--ttl', '1m']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /gone; taken over/);
  assert.equal(holderOf('device'), tmp.wt.b);

  // The same dead pid on machine m2: not ours to judge.
  pg.psql(`INSERT INTO wtproxy.leases VALUES ('remote', 'm2', '/elsewhere/wt', 's', ${holder.pid}, 1, 'theirs', now(), NULL)`);
  r = await run('b', ['claim', 'remote', '--ttl', '1m']);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /remote is held by machine m2, worktree \/elsewhere\/wt/);
  // Its release there would be refused while that pid runs: wait for it.
  assert.match(r.stderr, new RegExp(`released when pid ${holder.pid} ends on machine m2: wait for that; or, if it is abandoned \\(pid ${holder.pid} no longer runs there\\), anywhere: wtproxy release remote --force`));
  assert.doesNotMatch(r.stderr, /cd \/elsewhere/);
});

// A user test: `wtproxy release` in the worktree of a running `claim --
// CMD` freed its lease while CMD still ran, and another machine then
// claimed it too. It ends with that process, or by --force.
test('a live claim -- CMD is not released under it, from its worktree either; --force takes it', async (t) => {
  const { pg, tmp, env, run, holderOf } = await setup(t);
  const holder = startCli(t, tmp, ['claim', 'seed-db', '--purpose', 'seed', '--', 'sleep', '1000'], { cwd: tmp.wt.a, env });
  await waitRows(pg, "SELECT pid FROM wtproxy.leases WHERE id = 'seed-db'", (v) => v === String(holder.pid), 'the lease of the running claim');
  let r = await run('a', ['release', 'seed-db']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, `refused while pid ${holder.pid} runs: ${r.stderr}`);
  assert.match(r.stderr, new RegExp(`^wtproxy: seed-db is held by this machine m1, worktree ${tmp.wt.a}, session [^,]+, ` +
    `pid ${holder.pid} \\(\\S*wtproxy claim seed-db --purpose seed -- sleep 1000\\), for "seed", since \\d+s ago: it is theirs, ` +
    `and it ends when pid ${holder.pid} ends: wait for that, or, if that run is yours to stop: kill ${holder.pid}; ` +
    'wtproxy release seed-db --force takes it from under it$', 'm'));
  assert.equal(holderOf('seed-db'), tmp.wt.a, 'still held');
  r = await run('b', ['claim', 'seed-db', '--ttl', '1m'], { WTPROXY_MACHINE: 'm2' });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`released when pid ${holder.pid} ends on machine m1: wait for that; or, if it is abandoned`));
  assert.doesNotMatch(r.stderr, /cd \//, 'not sent to a release that is refused');
  r = await run('a', ['release', 'seed-db', '--force']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`^wtproxy: released seed-db from under pid ${holder.pid}, which still runs$`, 'm'));
  assert.equal(holderOf('seed-db'), '');
});

// A user test: a claim killed by kill -9 left its lease to every listing,
// and `release` said to wait for a pid that was gone.
test('a dead holder: leases on its machine drops it, release frees it at once', async (t) => {
  const { pg, tmp, env, run, holderOf } = await setup(t);
  const kill9 = async (id) => {
    const c = startCli(t, tmp, ['claim', id, '--', 'sleep', '1000'], { cwd: tmp.wt.a, env });
    await waitRows(pg, `SELECT pid FROM wtproxy.leases WHERE id = '${id}'`, (v) => v === String(c.pid), 'the lease');
    c.proc.kill('SIGKILL');
    await c.exited;
    return c.pid;
  };
  const first = await kill9('seed-db');
  let r = await run('b', ['release', 'seed-db']);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, `its holder is gone: ${r.stderr}`);
  assert.match(r.stderr, new RegExp(`^wtproxy: released seed-db: its holder, pid ${first} in ${tmp.wt.a}, is gone$`, 'm'));
  assert.equal(holderOf('seed-db'), '');

  const second = await kill9('fixtures');
  r = await run('b', ['leases', '--json'], { WTPROXY_MACHINE: 'm2' });
  assert.equal(JSON.parse(r.stdout).length, 1, 'another machine cannot tell that the pid is gone');
  r = await run('b', ['leases', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [], 'its own machine drops it');
  assert.match(r.stderr, new RegExp(`lease fixtures ended: its holder pid ${second} in ${tmp.wt.a} is gone`));
  assert.equal(holderOf('fixtures'), '', 'for every machine');
});

test('claim -- CMD: held while CMD runs, released when it exits, status passed on', async (t) => {
  const { pg, tmp, run, holderOf } = await setup(t);
  const r = await run('a', ['claim', 'db-slot', '--', 'sh', '-c',
    `psql -X -A -t -h 127.0.0.1 -p ${pg.port} -U postgres -d postgres -c "SELECT pid, worktree FROM wtproxy.leases WHERE id = '$WTPROXY_LEASE'"; exit 7`]);
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 7, r.stderr);
  const [pid, wt] = r.stdout.trim().split('|');
  assert.ok(Number(pid) > 0, `the lease held the claim's pid while CMD ran: ${r.stdout}`);
  assert.equal(wt, tmp.wt.a);
  assert.equal(holderOf('db-slot'), '', 'released after CMD exited');
});

test('claim -- CMD: SIGTERM to the claim reaches CMD, the lease is released, exit 143', async (t) => {
  const { pg, tmp, holderOf } = await setup(t);
  const c = startCli(t, tmp, ['claim', 'dev', '--', 'sleep', '1000'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: pg.uri('postgres') } });
  await waitRows(pg, "SELECT pid FROM wtproxy.leases WHERE id = 'dev'", (v) => v === String(c.pid), 'the lease');
  const child = await waitFor(() => {
    const kids = children(c.pid);
    return kids.length ? kids[0] : null;
  }, 5000, 'the sleep child');
  c.proc.kill('SIGTERM');
  const { code } = await c.exited;
  sanitizerClean(assert, c.stderr());
  assert.equal(code, 143, c.stderr());
  assert.equal(holderOf('dev'), '', 'released after SIGTERM');
  await waitFor(() => !pidAlive(child), 2000, 'CMD ended by the forwarded SIGTERM');
});

// A user test: an MCP session's lease ("ends: when this MCP session
// ends") outlived the session's clean end, and the other machine was
// refused it.
test('an MCP session that ends releases the leases it held while it ran', async (t) => {
  const { pg, tmp, env, run, holderOf } = await setup(t);
  const mcp = startMcp(t, { cwd: tmp.wt.a, env: cliEnv(tmp, env) });
  await initialize(mcp);
  const won = await mcp.call(1, 'claim', { resource: 'mcp-res2' });
  assert.equal(won.structuredContent.claimed, 'mcp-res2', JSON.stringify(won));
  assert.equal(won.structuredContent.ends, 'when this MCP session ends, or at release');
  const manual = await mcp.call(2, 'claim', { resource: 'mcp-ttl', ttl: '10m' });
  assert.equal(manual.structuredContent.claimed, 'mcp-ttl', JSON.stringify(manual));
  assert.equal(holderOf('mcp-res2'), tmp.wt.a);
  const { code } = await mcp.end();
  sanitizerClean(assert, mcp.stderr());
  assert.equal(code, 0, mcp.stderr());
  assert.equal(holderOf('mcp-res2'), '', 'released at the session\'s end');
  assert.match(mcp.stderr(), /^wtproxy mcp: the session ended: released mcp-res2$/m);
  assert.equal(holderOf('mcp-ttl'), tmp.wt.a, 'a lease with a ttl lasts its ttl');
  const r = await run('b', ['claim', 'mcp-res2', '--ttl', '1m'], { WTPROXY_MACHINE: 'm2' });
  assert.equal(r.code, 0, `another machine claims it: ${r.stderr}`);
});

function children(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch { return []; }
}
