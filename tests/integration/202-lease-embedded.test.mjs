// 202: the same lease commands on the daemon's embedded store (no
// registry configured): one winner among 16 concurrent claimers every
// round (counted from the daemon's own list and the exit codes), the
// refusal text (the daemon's own message, which names the holder and the
// command that frees it, printed by the CLI as it is), TTL expiry, a dead holder taken over, `-- CMD` released
// on exit and on SIGTERM and not by a release from its worktree while it runs, `claim --wait` for a live holder, and leases kept across a daemon restart in
// leases.json (mode 0600) next to the state file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, cli, control, sanitizerClean, pidAlive, waitFor } from './lib/registry.mjs';
import { startCli } from './lib/lease.mjs';

const CLAIMERS = 16;
const ROUNDS = 10;

async function leases(tmp) {
  const r = await cli(tmp, ['leases', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test(`${CLAIMERS} concurrent claimers, ${ROUNDS} rounds: one winner per round`, async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const px = await startDaemon(t, tmp);
  const wts = Object.values(tmp.wt);
  for (let round = 0; round < ROUNDS; round++) {
    const id = `res-${round}`;
    const runs = await Promise.all(Array.from({ length: CLAIMERS }, (_, i) =>
      cli(tmp, ['claim', id, '--ttl', '10m'], { cwd: wts[i % wts.length], env: { WTPROXY_SESSION: `claimer-${i}` }, ms: 30000 })));
    const won = runs.map((r, i) => (r.code === 0 ? i : -1)).filter((i) => i >= 0);
    for (const r of runs) sanitizerClean(assert, r.stderr);
    assert.equal(won.length, 1, `round ${round}: ${runs.map((r) => r.code)}`);
    assert.equal(runs.filter((r) => r.code === 1).length, CLAIMERS - 1);
    const held = (await leases(tmp)).filter((l) => l.id === id);
    assert.equal(held.length, 1);
    assert.equal(held[0].session, `claimer-${won[0]}`, 'the daemon holds the one that exited 0');
  }
  sanitizerClean(assert, px.stderr());
});

test('refusal, release rules, TTL expiry', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  await startDaemon(t, tmp);
  let r = await cli(tmp, ['claim', 'emu', '--ttl', '1s', '--purpose', 'android e2e'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /embedded store/);
  r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`emu is held by this machine .*worktree ${tmp.wt.a}.*for "android e2e", since \\d+s ago`));
  assert.match(r.stderr, new RegExp(`cd ${tmp.wt.a} && wtproxy release emu`));
  // The daemon's own refusal says it all, for any client of the socket;
  // the CLI prints it as it is, on one line.
  const said = await control(tmp.control, { op: 'claim', id: 'emu', worktree: tmp.wt.b, pid: 0, ttl_ms: 60000 });
  assert.equal(said.error, 'conflict');
  assert.equal(said.holder.worktree, tmp.wt.a);
  assert.match(said.message, new RegExp(`^emu is held by this machine [^,]+, worktree ${tmp.wt.a}, session [^,]+, manual claim, ` +
    'for "android e2e", since \\d+s ago \\(expires in \\d+s\\): it is theirs; ' +
    `to free it, on this machine: cd ${tmp.wt.a} && wtproxy release emu; or, if it is abandoned, anywhere: wtproxy release emu --force$`));
  assert.equal(r.stderr.split('\n').filter((l) => l.includes('is held by')).length, 1, r.stderr);
  assert.match(r.stderr, /^wtproxy: emu is held by .*: it is theirs; to free it, .* wtproxy release emu --force; to wait until it is free: wtproxy claim emu --wait 10m --ttl 1m$/m);
  const release = await control(tmp.control, { op: 'release', id: 'emu', worktree: tmp.wt.b });
  assert.equal(release.error, 'not-permitted');
  assert.equal(release.holder.worktree, tmp.wt.a);
  assert.match(release.message, new RegExp(`^emu is held by .*worktree ${tmp.wt.a},.*: it is theirs; to free it, on this machine: cd ${tmp.wt.a} && wtproxy release emu;`));
  r = await cli(tmp, ['release', 'emu'], { cwd: tmp.wt.b });
  assert.equal(r.code, 1, 'not the holder');
  assert.match(r.stderr, new RegExp(`^wtproxy: emu is held by .*cd ${tmp.wt.a} && wtproxy release emu; .*wtproxy release emu --force$`, 'm'));
  await new Promise((res) => setTimeout(res, 1200));
  r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(r.code, 0, `the TTL passed: ${r.stderr}`);
  r = await cli(tmp, ['release', 'emu'], { cwd: tmp.wt.b });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await leases(tmp), []);
});

test('-- CMD: released on exit (status passed on) and on SIGTERM; a killed holder is taken over', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  await startDaemon(t, tmp);
  let r = await cli(tmp, ['claim', 'slot', '--', 'sh', '-c', 'exit 5'], { cwd: tmp.wt.a });
  assert.equal(r.code, 5, r.stderr);
  assert.deepEqual(await leases(tmp), []);

  const c = startCli(t, tmp, ['claim', 'slot', '--', 'sleep', '1000'], { cwd: tmp.wt.a });
  await waitFor(async () => (await leases(tmp)).some((l) => l.pid === c.pid), 5000, 'the lease');
  c.proc.kill('SIGTERM');
  assert.equal((await c.exited).code, 143, c.stderr());
  assert.deepEqual(await leases(tmp), []);

  const k = startCli(t, tmp, ['claim', 'slot', '--', 'sleep', '1000'], { cwd: tmp.wt.a });
  await waitFor(async () => (await leases(tmp)).some((l) => l.pid === k.pid), 5000, 'the lease');
  // Held while a pid runs: the refusal says the lease ends with it.
  r = await cli(tmp, ['claim', 'slot', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`^wtproxy: slot is held by this machine [^,]+, worktree ${tmp.wt.a}, session [^,]+, pid ${k.pid} \\(\\S*wtproxy claim slot -- sleep 1000\\), ` +
    `for "", since \\d+s ago: it is theirs, released when pid ${k.pid} ends: wait for that; ` +
    'to wait until it is free: wtproxy claim slot --wait 10m --ttl 1m$', 'm'));
  assert.doesNotMatch(r.stderr, /kill|--force/, 'a live holder is in use: never told to end it');
  // Nor released under CMD from its own worktree: it ends with the pid.
  r = await cli(tmp, ['release', 'slot'], { cwd: tmp.wt.a });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`it is theirs, and it ends when pid ${k.pid} ends: wait for that, or, if that run is yours to stop: kill ${k.pid}; wtproxy release slot --force takes it from under it$`, 'm'));
  k.proc.kill('SIGKILL');
  await k.exited;
  r = await cli(tmp, ['claim', 'slot', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(r.code, 0, `the dead holder is taken over: ${r.stderr}`);
  assert.ok(!pidAlive(k.pid));
});

// The window between the daemon granting a claim and CMD's start: a
// signal there once killed the CLI by default, its lease left to a dead
// pid and its status lost. The daemon is stopped (SIGSTOP) so that the
// signal lands while the CLI waits for the grant (poll(2): x86_64's
// syscall 7 in /proc/PID/syscall); the grant comes after it.
test('-- CMD: a SIGTERM while the claim is asked for: CMD never runs, the lease is released, exit 143', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const marker = path.join(tmp.root, 'ran');
  process.kill(px.proc.pid, 'SIGSTOP');
  t.after(() => { try { process.kill(px.proc.pid, 'SIGCONT'); } catch { /* gone */ } });
  const c = startCli(t, tmp, ['claim', 'slot', '--', 'touch', marker], { cwd: tmp.wt.a });
  await waitFor(() => {
    try { return fs.readFileSync(`/proc/${c.pid}/syscall`, 'utf8').split(' ')[0] === '7'; } catch { return false; }
  }, 5000, 'the CLI waiting for the stopped daemon');
  c.proc.kill('SIGTERM');
  process.kill(px.proc.pid, 'SIGCONT');
  const done = await c.exited;
  assert.equal(done.code, 143, `${done.signal}: ${c.stderr()}`);
  assert.match(c.stderr(), /^wtproxy: Terminated came before touch started: not run; releasing slot$/m);
  assert.ok(!fs.existsSync(marker), 'CMD did not run');
  assert.deepEqual(await leases(tmp), []);
});

test('claim --wait: waits while a live holder runs and claims when it ends; gives up after D naming it', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  await startDaemon(t, tmp);
  const k = startCli(t, tmp, ['claim', 'slot', '--purpose', 'e2e run', '--', 'sleep', '1000'], { cwd: tmp.wt.a });
  await waitFor(async () => (await leases(tmp)).some((l) => l.pid === k.pid), 5000, 'the lease');

  // Waiting no longer than --wait: exit 1, the holder named once at the start and at the end.
  const t0 = Date.now();
  let r = await cli(tmp, ['claim', 'slot', '--wait', '1s', '--ttl', '1m'], { cwd: tmp.wt.b });
  const took = Date.now() - t0;
  assert.equal(r.code, 1, r.stderr);
  assert.ok(took >= 1000 && took < 5000, `gave up after ${took} ms`);
  assert.match(r.stderr, new RegExp(`^wtproxy: waiting up to 1s for slot: slot is held by this machine .*pid ${k.pid} \\([^)]*\\), for "e2e run".*released when pid ${k.pid} ends: wait for that$`, 'm'));
  assert.match(r.stderr, new RegExp(`^wtproxy: did not claim slot within 1s: slot is held by .*pid ${k.pid}`, 'm'));
  assert.equal(r.stderr.trim().split('\n').length, 2, r.stderr);

  // A signal ends a wait with a command like any wait: nothing claimed.
  const q = startCli(t, tmp, ['claim', 'slot', '--wait', '30s', '--', 'true'], { cwd: tmp.wt.b });
  await waitFor(() => /waiting up to 30s for slot/.test(q.stderr()), 5000, 'the waiter to wait');
  q.proc.kill('SIGTERM');
  assert.equal((await q.exited).code, 143, q.stderr());
  assert.match(q.stderr(), /^wtproxy: cannot claim slot: the wait for slot was cancelled; it was not claimed$/m);

  // A waiter with a command runs it once the holder's command ends.
  const w = startCli(t, tmp, ['claim', 'slot', '--wait', '30s', '--', 'sh', '-c', 'echo "got $WTPROXY_LEASE"'], { cwd: tmp.wt.b });
  await waitFor(() => /waiting up to 30s for slot/.test(w.stderr()), 5000, 'the waiter to wait');
  k.proc.kill('SIGTERM');
  assert.equal((await k.exited).code, 143, k.stderr());
  const done = await w.exited;
  assert.equal(done.code, 0, w.stderr());
  assert.equal(w.stdout(), 'got slot\n');
  assert.match(w.stderr(), new RegExp(`^wtproxy: claimed slot while pid ${w.pid} runs after waiting \\d+s \\(embedded store\\)$`, 'm'));
  assert.deepEqual(await leases(tmp), [], 'the waiter released it on its exit');
});

test('leases survive a daemon restart (leases.json, 0600)', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  let px = await startDaemon(t, tmp);
  const r = await cli(tmp, ['claim', 'keep', '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  const file = path.join(path.dirname(tmp.state), 'leases.json');
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  await px.stop('SIGKILL');
  px = await startDaemon(t, tmp);
  const l = await leases(tmp);
  assert.equal(l.length, 1);
  assert.equal(l[0].worktree, tmp.wt.a);
  const again = await cli(tmp, ['claim', 'keep', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(again.code, 1, 'still held after the restart');
});
