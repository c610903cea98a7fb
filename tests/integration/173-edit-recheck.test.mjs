// 173: after an edit, what `wtproxy ls` (and `ls --json`), the MCP
// `servers` tool and the dashboard say of a server's code is true without
// a request sent through the proxy: the daemon sees the fingerprint of the
// worktree move (inotify, the tree computed again once quiet), shows the
// server "changed" at once, never "verified" with the old fingerprint, and
// asks its /__whoami again in the background, a few times:
// 1. a real Django runserver with its autoreloader: verified again with
//    the NEW fingerprint within seconds, and never verified with the old
//    one once the reloader has restarted it;
// 2. runserver --noreload, started with --restart-on-stale: stale (since
//    when the disk changed, with the fix) within seconds, and NOT
//    restarted by that (its fix says the next request will, or
//    `wtproxy restart` now): the same pid until a request comes, which
//    then restarts it and gets the new code, as before;
// 3. a stand-in whose /__whoami says taking_in (as Vite and next dev do
//    while they compile an edit): "taking-in" with no request, the
//    dashboard "checking", then stale once start_timeout has passed,
//    never restarted by the daemon.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  commitWorktree, makeWorktrees, startDaemon, startRun, cli, cliEnv, get, waitFor, control, sanitizerClean,
} from './lib/registry.mjs';
import { request } from './lib/ctl.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { python, pythonPath, writeDjangoProject } from './lib/whoami.mjs';

const pythonEnv = { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };
const CLOCK = /\d\d:\d\d:\d\d/;

// A repo whose main branch holds the Django project, and its worktree wt-a.
function djangoWorktree(t) {
  const tmp = makeWorktrees(t, []);
  writeDjangoProject(tmp.repo);
  return commitWorktree(tmp);
}

// `wtproxy run [runArgs] -- python3 manage.py runserver [--noreload]
// 127.0.0.1:{port}` in wt-a; resolves once ready.
async function runDjango(t, tmp, front, { runArgs = [], reload = false } = {}) {
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front, runArgs, readyMs: 30000, stopSignal: 'SIGTERM', env: pythonEnv,
    command: [python, 'manage.py', 'runserver', ...(reload ? [] : ['--noreload']), '127.0.0.1:{port}'],
  });
  await run.ready;
  return run;
}

function edit(wt, greeting) {
  const views = path.join(wt, 'app/views.py');
  fs.writeFileSync(views, fs.readFileSync(views, 'utf8').replace(/GREETING = .*/, `GREETING = ${JSON.stringify(greeting)}`));
}

const children = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch { return []; }
};
const session = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
  } catch { return -1; }
};
// The process that serves: the wrapper's child (--noreload), or that
// child's child (the autoreloader's parent restarts it at each edit). Not
// the wrapper's keeper, its child in a session of its own.
const serverPid = (wrapper, reload) => {
  const [child] = children(wrapper).filter((c) => session(c) === session(wrapper));
  return reload ? children(child)[0] : child;
};

// wt-a's entry as the daemon lists it now (the control socket: no CLI to spawn).
async function entry(tmp) {
  const r = await control(tmp.control, { op: 'list' });
  return r.entries.find((e) => e.worktree === tmp.wt.a);
}

// The same entry as `wtproxy ls`, `ls --json`, the MCP servers tool and
// the dashboard's API say it: each one's whoami state (and the table's
// WHOAMI cell), and the dashboard's status.
async function everywhere(t, tmp, px) {
  const table = (await cli(tmp, ['ls'])).stdout;
  const [json] = (JSON.parse((await cli(tmp, ['ls', '--json'])).stdout));
  const mcp = startMcp(t, { cwd: tmp.wt.a, args: ['--front', String(px.port)], env: cliEnv(tmp) });
  await initialize(mcp);
  const [viaMcp] = (await mcp.call(1, 'servers')).structuredContent.servers;
  await mcp.end();
  const [dash] = JSON.parse((await request(px.port, 'GET', '/__wtproxy/api/backends', { Host: `127.0.0.1:${px.port}` })).body);
  return { table, json: json.whoami, mcp: viaMcp.whoami, dash };
}

// How many times the server's log shows /__whoami asked, from offset on.
const asks = (output, from) => (output.slice(from).match(/GET \/__whoami/g) || []).length;

test('autoreloader: verified again with the new fingerprint, no request sent, never the old one', async (t) => {
  const tmp = djangoWorktree(t);
  const px = await startDaemon(t, tmp); // the defaults: stale_grace 3s, reload_grace 10s
  const run = await runDjango(t, tmp, px.port, { reload: true });
  await waitFor(async () => (await entry(tmp))?.whoami?.state === 'verified', 15000,
    'verified by the daemon itself once ready');
  const before = await everywhere(t, tmp, px);
  assert.match(before.table, /ready\s+verified\s/, before.table);
  assert.equal(before.json.state, 'verified');
  assert.equal(before.mcp.state, 'verified');
  assert.equal(before.dash.status, 'ready');
  assert.match(before.dash.status_reason, /serves this worktree's current code/);
  const old = before.json.hash;
  const relayed = (await entry(tmp)).requests;
  const firstServer = serverPid(run.pid, true);
  assert.ok(firstServer > 0, 'the autoreloader\'s server process');
  // Django's reloader takes its first snapshot of mtimes about a second
  // after each start: an edit before it is never seen (test 172).
  await new Promise((r) => setTimeout(r, 1500));

  const logFrom = run.stderr().length;
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const e = await entry(tmp);
      samples.push({ ms: Date.now(), state: e?.whoami?.state, hash: e?.whoami?.hash, detail: e?.whoami?.detail, pid: serverPid(run.pid, true) });
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const edited = Date.now();
  edit(tmp.wt.a, 'hello v2');
  try {
    await waitFor(() => samples.some((s) => s.state === 'verified' && s.hash !== old), 15000,
      'ls verified with the new fingerprint, no request sent');
  } catch (e) {
    throw new Error(`${e.message}; the last samples: ${JSON.stringify(samples.slice(-3))}`);
  } finally {
    sampling = false;
    await sampler;
  }
  const took = samples.find((s) => s.state === 'verified' && s.hash !== old).ms - edited;
  t.diagnostic(`verified with the new fingerprint ${took} ms after the edit; states: ${[...new Set(samples.map((s) => s.state))].join(', ')}`);
  const restarted = samples.findIndex((s) => s.pid && s.pid !== firstServer);
  assert.ok(restarted >= 0, 'the autoreloader restarted its server');
  // The daemon looks at a written tree once it is quiet (250 ms): an
  // autoreloader faster than that restarts its server while the old
  // verdict still shows. Once the daemon has seen the edit, never again.
  const seen = samples.findIndex((s) => !(s.state === 'verified' && s.hash === old));
  for (const s of samples.slice(Math.max(restarted, seen)))
    assert.ok(!(s.state === 'verified' && s.hash === old), `verified with the old fingerprint after the reload: ${JSON.stringify(s)}`);
  for (const s of samples.filter((x) => x.ms - edited >= 1500))
    assert.ok(!(s.state === 'verified' && s.hash === old), `verified with the old fingerprint 1.5 s after the edit: ${JSON.stringify(s)}`);
  const changed = samples.find((s) => s.state === 'changed');
  assert.ok(changed, 'shown as changed while asked');
  assert.match(changed.detail, /^code changed on disk at \d\d:\d\d:\d\d/);

  const after = await everywhere(t, tmp, px);
  assert.match(after.table, /ready\s+verified\s/, after.table);
  assert.equal(after.json.state, 'verified');
  assert.notEqual(after.json.hash, old);
  assert.equal(after.json.hash, after.json.disk_hash);
  assert.equal(after.mcp.state, 'verified');
  assert.equal(after.mcp.hash, after.json.hash);
  assert.equal(after.dash.whoami.hash, after.json.hash);
  assert.equal(after.dash.status, 'ready');
  assert.equal((await entry(tmp)).requests, relayed, 'no request went through the proxy');
  const n = asks(run.stderr(), logFrom);
  t.diagnostic(`/__whoami asked ${n} times for the edit`);
  assert.ok(n >= 1 && n <= 8, `a few asks per edit, not ${n}:\n${run.stderr().slice(logFrom)}`);
  // And the request now gets the new code at once.
  const r = await get(px.port, { 'X-Wtproxy-Worktree': tmp.wt.a }, '/hello/');
  assert.equal(r.body, 'hello v2');
  sanitizerClean(assert, px.stderr());
});

test('--noreload: stale (since when) within seconds, no request sent, not restarted until one comes', async (t) => {
  const tmp = djangoWorktree(t);
  const px = await startDaemon(t, tmp);
  const run = await runDjango(t, tmp, px.port, { runArgs: ['--restart-on-stale'] });
  await waitFor(async () => (await entry(tmp))?.whoami?.state === 'verified', 15000,
    'verified by the daemon itself once ready');
  const pid = serverPid(run.pid, false);
  assert.ok(pid > 0);
  const old = (await entry(tmp)).whoami.hash;
  const logFrom = run.stderr().length;
  const seen = new Set();
  const edited = Date.now();
  edit(tmp.wt.a, 'hello v2');
  const stale = await waitFor(async () => {
    const e = await entry(tmp);
    seen.add(e.whoami.state);
    assert.ok(!(e.whoami.state === 'verified' && Date.now() - edited > 1500), `still verified: ${JSON.stringify(e.whoami)}`);
    return e.whoami.state === 'stale' && e.whoami;
  }, 10000, 'ls says stale with no request sent');
  t.diagnostic(`stale ${Date.now() - edited} ms after the edit; states on the way: ${[...seen].join(', ')}`);
  // no `changed` on the way: its /__whoami says "reloads": false (test 174),
  // so its first answer after the edit is judged stale, without the grace
  assert.match(stale.detail, new RegExp(`^stale since ${CLOCK.source}, when the code on disk changed: `));
  assert.match(stale.detail, /app\/views\.py/);
  // it runs with --restart-on-stale: the next request restarts it
  assert.match(stale.detail, /wtproxy restarts it at the next request to it \(it runs with --restart-on-stale\), or now: cd \S+ && wtproxy restart --front \d+$/);
  assert.doesNotMatch(stale.detail, /nothing reloads it|wtproxy run/);
  assert.equal(stale.hash, old);
  assert.notEqual(stale.disk_hash, old);

  // Not restarted by the daemon: the same process, for a while yet.
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal(serverPid(run.pid, false), pid, 'the same server process');
  assert.doesNotMatch(run.stderr(), /restarting it/);
  const shown = await everywhere(t, tmp, px);
  assert.match(shown.table, /ready\s+stale\s/, shown.table);
  assert.equal(shown.json.state, 'stale');
  assert.equal(shown.mcp.state, 'stale');
  assert.equal(shown.dash.status, 'stale');
  assert.match(shown.dash.status_reason, /^stale since \d\d:\d\d:\d\d/);
  assert.equal(shown.json.refused, 0, 'nothing refused: no request came');
  const n = asks(run.stderr(), logFrom);
  t.diagnostic(`/__whoami asked ${n} times for the edit`);
  assert.ok(n >= 1 && n <= 8, `a few asks per edit, not ${n}:\n${run.stderr().slice(logFrom)}`);

  // A request decides, as before: restarted (--restart-on-stale), answered new.
  const r = await get(px.port, { 'X-Wtproxy-Worktree': tmp.wt.a }, '/hello/');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'hello v2');
  assert.match(run.stderr(), /restarting it/);
  assert.notEqual(serverPid(run.pid, false), pid);
  sanitizerClean(assert, px.stderr());
});

test('a server that says taking_in: taking-in with no request, then stale past start_timeout, never restarted', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '400ms', '--start-timeout', '6s']);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--restart-on-stale'], serverArgs: ['--taking-in'] });
  await run.ready;
  await waitFor(async () => (await entry(tmp))?.whoami?.state === 'verified', 10000,
    'verified by the daemon itself once ready');
  const pid = children(run.pid)[0];
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  const edited = Date.now();
  const w = await waitFor(async () => {
    const e = await entry(tmp);
    return e.whoami.state === 'taking-in' && e.whoami;
  }, 3000, 'ls says taking-in with no request sent');
  t.diagnostic(`taking-in ${Date.now() - edited} ms after the edit`);
  assert.match(w.detail, /^taking in an edit: its \/__whoami says taking_in since \d\d:\d\d:\d\d/);
  const shown = await everywhere(t, tmp, px);
  assert.match(shown.table, /ready\s+taking-in\s/, shown.table);
  assert.equal(shown.mcp.state, 'taking-in');
  assert.equal(shown.dash.status, 'checking');
  assert.match(shown.dash.status_reason, /taking in an edit/);
  const stale = await waitFor(async () => {
    const e = await entry(tmp);
    return e.whoami.state === 'stale' && e.whoami;
  }, 12000, 'stale once its taking_in is start_timeout old');
  assert.match(stale.detail, /did not report the new code within start_timeout/);
  assert.equal(stale.refused, 0);
  assert.equal(children(run.pid)[0], pid, 'the same server process');
  assert.doesNotMatch(run.stderr(), /restarting/);
  sanitizerClean(assert, px.stderr());
});

// An upgraded connection (a WebSocket) opened while its server was
// verified went on being answered by that server after an edit it never
// took in, while every new request was refused 409: a user's WebSocket
// test passed on code no longer on disk. Its next bytes close it, and the
// closing is kept as a refusal of its request.
test('an open tunnel to a server gone stale is closed at its next bytes, and kept as a refusal', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '300ms']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const sock = net.connect(px.port, '127.0.0.1');
  t.after(() => sock.destroy());
  let got = '';
  sock.on('data', (d) => { got += d; });
  const ended = new Promise((resolve) => sock.on('close', resolve));
  sock.write(`GET /echo HTTP/1.1\r\nHost: localhost\r\nX-Wtproxy-Worktree: ${tmp.wt.a}\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n`);
  await waitFor(() => got.includes('\r\n\r\n'), 10000, 'the 101');
  assert.match(got, /^HTTP\/1\.1 101 /, got);
  got = '';
  sock.write('one');
  await waitFor(() => /^\d+:one$/.test(got), 10000, 'the echo through the tunnel');
  got = '';
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  await waitFor(async () => JSON.parse((await cli(tmp, ['ls', '--json'])).stdout)[0]?.whoami?.state === 'stale',
    15000, 'the server stale');
  sock.write('two');
  const open = await Promise.race([ended.then(() => false), new Promise((r) => setTimeout(() => r(true), 10000))]);
  assert.equal(open, false, `the tunnel stayed open; through it: ${JSON.stringify(got)}`);
  assert.doesNotMatch(got, /two/, 'the stale server did not answer');
  const refusals = JSON.parse((await cli(tmp, ['refusals', '--json', '--since', '1m'], { cwd: tmp.wt.a })).stdout);
  const closed = refusals.find((r) => r.request === 'GET /echo');
  assert.ok(closed, JSON.stringify(refusals));
  assert.equal(closed.reason, 'stale-code');
  assert.match(closed.detail, new RegExp(`^closed this upgraded connection \\(a WebSocket\\) to the dev server of ${tmp.wt.a} \\(pid \\d+\\): `), closed.detail);
  assert.match(closed.fix, new RegExp(`^cd ${tmp.wt.a} && wtproxy restart --front ${px.port}, then connect again`), closed.fix);
  sanitizerClean(assert, px.stderr());
});
