// 134: load-aware starts (start_max_load, issue 16): while the machine's
// 1-minute load per CPU is above the limit, a `.wtproxy` start waits with
// its request held, and says so (the services op, `wtproxy ls`); once the
// limit allows it (here: raised by SIGHUP), it starts and the held request
// is answered. A wait longer than start_timeout is a 503 that names the
// load. The load at each start is in the registration. `wtproxy claim
// --max-load` waits the same way and gives up after --load-timeout.
// The limit is set below the load measured at the time (the test adds
// busy loops first when the machine is nearly idle), so the wait is real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeWorktrees, wtServer, lsJson, waitFor, cli, get, control, curlFrom } from './lib/registry.mjs';
import { startProxy } from './lib/wtproxy.mjs';

const loadPct = () => Math.round((os.loadavg()[0] * 100) / os.cpus().length);

// The load per CPU in hundredths, at least 4: busy loops (killed by pid
// when the test ends) raise it when the machine is nearly idle.
async function someLoad(t) {
  if (loadPct() >= 4) return loadPct();
  const busy = os.cpus().map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  t.after(() => { for (const p of busy) p.kill('SIGKILL'); });
  await waitFor(() => loadPct() >= 4, 90000, 'the load average to rise above 0.04 per CPU');
  return loadPct();
}

// A request for cwd's worktree (named by header: this worktree's .wtproxy
// is its own, uncommitted, so its folder alone would not place it).
const curl = (cwd, port) => curlFrom(cwd, port, '/', { headers: [`X-Wtproxy-Worktree: ${cwd}`] });

// A worktree whose .wtproxy starts a wt-server on front, and a daemon on
// front whose config file holds confLines.
async function setup(t, confLines) {
  const tmp = makeWorktrees(t, ['a']);
  const conf = path.join(tmp.root, 'wtproxy.conf');
  fs.writeFileSync(conf, confLines.join('\n') + '\n');
  const px = await startProxy(t, ['--config', conf, '--control', tmp.control, '--state', tmp.state]);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} ${wtServer} {port}\nfront = ${px.port}\n`);
  return { tmp, px, conf };
}

test('a start waits while the load is above start_max_load, visibly, and starts once allowed', { timeout: 180000 }, async (t) => {
  const limit = Math.max(1, Math.floor((await someLoad(t)) / 4));
  const { tmp, px, conf } = await setup(t, [`start_max_load = ${limit}%`, 'start_timeout = 2m']);
  const held = curl(tmp.wt.a, px.port);

  await waitFor(async () => (await control(tmp.control, { op: 'services', worktree: tmp.wt.a })).services?.[0]?.state === 'waiting-load',
    20000, 'the services op says waiting-load');
  const svc = (await control(tmp.control, { op: 'services', worktree: tmp.wt.a })).services[0];
  assert.ok(svc.load > limit / 100, `the load it waits on (${svc.load}) is above the limit ${limit / 100}`);
  const starts = await control(tmp.control, { op: 'starts' });
  assert.equal(starts.starts.length, 1, JSON.stringify(starts));
  assert.equal(starts.start_max_load_pct, limit);
  const ls = await cli(tmp, ['ls']);
  assert.match(ls.stdout, new RegExp(`${tmp.wt.a} \\(front ${px.port}\\) waits to start: the load is \\d+\\.\\d\\d per CPU, above start_max_load ${(limit / 100).toFixed(2)}`), ls.stdout);
  assert.deepEqual(await lsJson(tmp), [], 'not started while it waits');
  const rows = JSON.parse((await get(px.port, {}, '/__wtproxy/api/backends')).body);
  const pending = rows.find((b) => b.pending);
  assert.ok(pending, `the dashboard lists the waiting start: ${JSON.stringify(rows)}`);
  assert.equal(pending.status, 'waiting-load');
  assert.match(pending.status_reason, /waits to start: the load is \d+\.\d\d per CPU, above start_max_load/);

  fs.writeFileSync(conf, 'start_max_load = 0\nstart_timeout = 2m\n'); // off
  px.proc.kill('SIGHUP');
  const r = await held;
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).worktree, tmp.wt.a, 'the held request is answered by the started server');
  const [e] = await lsJson(tmp);
  assert.equal(typeof e.start_load, 'number', `the load at its start is recorded: ${JSON.stringify(e)}`);
  try { process.kill(-e.pid, 'SIGTERM'); } catch { /* gone */ }
  await waitFor(async () => (await lsJson(tmp)).length === 0, 10000, 'the started server stopped');
});

test('a start that waits longer than start_timeout for the load: 503 that names the load', { timeout: 180000 }, async (t) => {
  const limit = Math.max(1, Math.floor((await someLoad(t)) / 4));
  const { tmp, px } = await setup(t, [`start_max_load = ${limit}%`, 'start_timeout = 2s']);
  const r = await curl(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /load stayed at \d+\.\d\d per CPU, above start_max_load/);
  assert.match(r.body, /raise start_max_load/);
  assert.deepEqual(await lsJson(tmp), [], 'nothing was started');
});

test('wtproxy claim --max-load waits while the load is higher, and gives up after --load-timeout', { timeout: 180000 }, async (t) => {
  const limit = Math.max(1, Math.floor((await someLoad(t)) / 4));
  const tmp = makeWorktrees(t, ['a']);
  await startProxy(t, ['--control', tmp.control, '--state', tmp.state]);
  const started = Date.now();
  const r = await cli(tmp, ['claim', 'emulator', '--ttl', '1m', '--max-load', `${limit}%`, '--load-timeout', '2s'], { cwd: tmp.wt.a });
  assert.equal(r.code, 1, r.stderr);
  assert.ok(Date.now() - started >= 2000, 'it waited --load-timeout');
  assert.match(r.stderr, /waiting: the load is \d+\.\d\d per CPU, above --max-load/);
  assert.match(r.stderr, /did not claim emulator: the load stayed at .* raise --max-load/);
  const ok = await cli(tmp, ['claim', 'emulator', '--ttl', '1m', '--max-load', '1000'], { cwd: tmp.wt.a });
  assert.equal(ok.code, 0, ok.stderr);
  const bad = await cli(tmp, ['claim', 'emulator', '--ttl', '1m', '--max-load', 'lots'], { cwd: tmp.wt.a });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--max-load "lots" is not a load per CPU/);
});
