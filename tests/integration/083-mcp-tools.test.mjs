// 083: `wtproxy mcp`'s tools against a real daemon, real `wtproxy run`
// servers and real worktrees, as an agent in worktree wt-a sees them:
// servers lists its servers with their state, port, pid, service and log;
// why names the worktree a folder's or a process's requests go to;
// refusals shows the refusal the test provoked for wt-a and not wt-b's
// (unless asked for wt-b); logs returns a server's last lines. The tools
// that change state refuse another worktree's server, naming whose it
// is; claim and release lease a resource for the session's worktree (a
// held one refused with the store's sentence: whose it is, when it ends,
// the command that frees it), and a claim without a ttl ends with the
// session. restart (the daemon's op
// `restart`) restarts wt-a's own server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import {
  makeWorktrees, startDaemon, startRun, cliEnv, getWorktree, waitFor, pidAlive, control,
} from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';

// A session of `wtproxy mcp` in cwd, past its handshake.
async function session(t, tmp, cwd, args = []) {
  const mcp = startMcp(t, { cwd, args, env: cliEnv(tmp) });
  await initialize(mcp);
  return mcp;
}

let ids = 1;
// tools/call name args: the result; its text is its JSON (or the failure's sentence).
async function call(mcp, name, args) {
  const r = await mcp.call(ids++, name, args);
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, 'text');
  if (r.isError) assert.equal(r.content[0].text, r.structuredContent.message);
  else assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  return r;
}

// A second server of wt-a with a log file: a node process writing 300
// lines, registered as service "worker" (with its log) on another front.
async function workerWithLog(t, tmp, wt, front) {
  const log = path.join(tmp.root, 'worker.log');
  const fd = fs.openSync(log, 'w');
  const p = spawn(process.execPath, ['-e',
    "for (let i = 0; i < 300; i++) console.log('worker line ' + i); setInterval(() => {}, 1e6)"],
  { stdio: ['ignore', fd, 'ignore'] });
  fs.closeSync(fd);
  t.after(() => { if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); });
  await waitFor(() => fs.readFileSync(log, 'utf8').includes('worker line 299\n'), 10000, 'the worker\'s log');
  const r = await control(tmp.control, {
    op: 'register', front, worktree: wt, port: 9, pid: p.pid, ttl_ms: 0,
    command: 'node worker', ready: true, service: 'worker', log,
  });
  assert.equal(r.ok, true, JSON.stringify(r));
  return { pid: p.pid, log };
}

test('servers, why, refusals and logs show an agent its worktree', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  // Refusals the agent will look for: wt-a's before its server runs, and wt-b's.
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 503);
  assert.equal((await getWorktree(px.port, tmp.wt.b)).status, 503);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  const port = await run.ready;
  const workerFront = px.port < 65535 ? px.port + 1 : px.port - 1;
  const worker = await workerWithLog(t, tmp, tmp.wt.a, workerFront);
  const sub = path.join(tmp.wt.a, 'sub');
  fs.mkdirSync(sub);
  const mcp = await session(t, tmp, sub, ['--front', String(px.port)]);

  const servers = (await call(mcp, 'servers')).structuredContent;
  assert.equal(servers.worktree, tmp.wt.a);
  assert.equal(servers.servers.length, 2, JSON.stringify(servers));
  const web = servers.servers.find((e) => e.front === px.port);
  assert.equal(web.port, port);
  assert.equal(web.pid, run.pid);
  assert.equal(web.state, 'ready');
  const wk = servers.servers.find((e) => e.front === workerFront);
  assert.equal(wk.service, 'worker');
  assert.equal(wk.log, worker.log);
  assert.equal(wk.pid, worker.pid);
  // The declared services when the daemon lists them; else a note why not.
  if (servers.services === null) assert.match(servers.services_note, /no op "services"/);
  else assert.ok(Array.isArray(servers.services));
  const other = (await call(mcp, 'servers', { worktree: tmp.wt.b })).structuredContent;
  assert.deepEqual([other.worktree, other.servers], [tmp.wt.b, []]);

  const why = (await call(mcp, 'why', { folder: sub })).structuredContent;
  assert.equal(why.worktree, tmp.wt.a);
  assert.equal(why.how, 'cwd');
  assert.equal(why.backend.port, port);
  assert.equal(why.ok, true);
  assert.match(why.explanation, new RegExp(`^backend: 127\\.0\\.0\\.1:${port} \\(pid ${run.pid}, ready\\)`));
  const self = (await call(mcp, 'why')).structuredContent; // the MCP server's own requests
  assert.equal(self.pid, mcp.proc.pid);
  assert.equal(self.worktree, tmp.wt.a);
  assert.equal(self.chain[0].pid, mcp.proc.pid);
  assert.equal(self.chain[0].decides, true);
  const outside = (await call(mcp, 'why', { folder: tmp.root })).structuredContent;
  assert.equal(outside.placed, false);
  assert.match(outside.explanation, /^not placed: .*WTPROXY_WORKTREE=/s);
  const gone = await call(mcp, 'why', { pid: 2147483647 });
  assert.equal(gone.isError, true);
  assert.match(gone.structuredContent.message, /^no process 2147483647 \(it exited, or the pid is mistyped\); give a running one: wtproxy why --pid PID$/);

  const mine = (await call(mcp, 'refusals')).structuredContent;
  assert.equal(mine.worktree, tmp.wt.a);
  assert.ok(mine.refusals.some((r) => r.reason === 'no-backend' && r.named === tmp.wt.a && r.status === 503),
    JSON.stringify(mine));
  assert.ok(!mine.refusals.some((r) => r.named === tmp.wt.b), 'wt-b\'s refusal is not wt-a\'s');
  // each with the fix its page gave: the error's own when nothing better is known
  const noBackend = mine.refusals.find((r) => r.reason === 'no-backend' && r.named === tmp.wt.a);
  assert.match(noBackend.fix, /^Start your dev server through wtproxy, from its worktree: wtproxy run( --front \d+)? -- <server command with \{port\}>/, JSON.stringify(noBackend));
  const theirs = (await call(mcp, 'refusals', { worktree: tmp.wt.b, limit: 1 })).structuredContent;
  assert.equal(theirs.refusals.length, 1);
  assert.equal(theirs.refusals[0].named, tmp.wt.b);

  const logs = (await call(mcp, 'logs', { service: 'worker', lines: 5 })).structuredContent;
  assert.deepEqual(logs.lines, [295, 296, 297, 298, 299].map((i) => `worker line ${i}`));
  assert.equal(logs.truncated, true);
  assert.equal(logs.log, worker.log);
  assert.equal(logs.pid, worker.pid);
  const all = (await call(mcp, 'logs', { front: workerFront, lines: 1000 })).structuredContent;
  assert.equal(all.lines.length, 300);
  assert.equal(all.truncated, false);
  const which = await call(mcp, 'logs');
  assert.equal(which.isError, true);
  assert.equal(which.structuredContent.error, 'ambiguous');
  assert.match(which.structuredContent.message, /has 2 servers .*service worker.*: pick one with service or front/);
  const none = await call(mcp, 'logs', { service: 'api' });
  assert.equal(none.structuredContent.error, 'not-found');
  // how to start it without holding the agent's shell
  assert.match(none.structuredContent.message, new RegExp(`^no server of ${tmp.wt.a} for service api is registered; start one: cd ${tmp.wt.a} && setsid -f wtproxy run --service api -- <server command with \\{port\\}> >/dev/null 2>&1 \\(its output goes to its log: read it with logs\\)$`));

  const end = await mcp.end();
  assert.equal(end.code, 0, mcp.stderr());
  assert.doesNotMatch(mcp.stderr(), /Sanitizer|runtime error/);
});

test('state-changing tools refuse another worktree, naming whose it is; leases are the session worktree\'s', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const runB = startRun(t, tmp, { cwd: tmp.wt.b, front: px.port });
  await runB.ready;
  const a = await session(t, tmp, tmp.wt.a);
  const b = await session(t, tmp, tmp.wt.b);

  const refused = await call(a, 'restart', { worktree: tmp.wt.b });
  assert.equal(refused.isError, true);
  assert.equal(refused.structuredContent.error, 'not-permitted');
  assert.match(refused.structuredContent.message, new RegExp(
    `belongs to the worktree ${tmp.wt.b}, not to this session's \\(${tmp.wt.a}\\); its server on front :${px.port} is pid ${runB.pid} `));
  assert.ok(pidAlive(runB.pid), 'wt-b\'s server runs on');
  for (const [tool, args] of [['claim', { resource: 'r' }], ['release', { resource: 'r' }]]) {
    const r = await call(a, tool, { ...args, worktree: tmp.wt.b });
    assert.equal(r.structuredContent.error, 'not-permitted', tool);
  }

  const won = (await call(a, 'claim', { resource: 'emulator-1', ttl: '10m', purpose: 'e2e run' })).structuredContent;
  assert.equal(won.claimed, 'emulator-1');
  assert.equal(won.lease.worktree, tmp.wt.a);
  assert.equal(won.store, 'embedded');
  const lost = await call(b, 'claim', { resource: 'emulator-1' });
  assert.equal(lost.isError, true);
  assert.equal(lost.structuredContent.error, 'held');
  assert.equal(lost.structuredContent.holder.worktree, tmp.wt.a);
  // The store's own sentence: whose it is, when it ends, what frees it.
  const whose = `^emulator-1 is held by this machine [^,]+, worktree ${tmp.wt.a}, session [^,]+, manual claim, for "e2e run", ` +
    `since \\d+s ago \\(expires in \\d+m\\): it is theirs; to free it, on this machine: cd ${tmp.wt.a} && wtproxy release emulator-1; ` +
    'or, if it is abandoned, anywhere: wtproxy release emulator-1 --force';
  // ... and the claim's next step: this tool's wait, not the CLI's flag.
  const untilFree = '; to wait until it is free: call claim again with wait "50s" ' +
    '\\(it claims emulator-1 as soon as its holder releases it, ends or expires\\)$';
  assert.match(lost.structuredContent.message, new RegExp(whose + untilFree));
  const notTheirs = await call(b, 'release', { resource: 'emulator-1' });
  assert.equal(notTheirs.structuredContent.error, 'held-by-another');
  assert.equal(notTheirs.structuredContent.holder.worktree, tmp.wt.a);
  assert.match(notTheirs.structuredContent.message, new RegExp(`${whose}$`));
  const bad = await call(a, 'claim', { resource: 'x', ttl: 'soon' });
  assert.equal(bad.structuredContent.error, 'bad-arguments');
  assert.deepEqual((await call(a, 'release', { resource: 'emulator-1' })).structuredContent, { released: 'emulator-1' });
  assert.equal((await call(a, 'release', { resource: 'emulator-1' })).structuredContent.error, 'not-held');

  // Without a ttl the lease lasts as long as the session: b's ends, a wins.
  const held = (await call(b, 'claim', { resource: 'emulator-1' })).structuredContent;
  assert.equal(held.lease.pid, b.proc.pid);
  const bHolds = (await call(a, 'claim', { resource: 'emulator-1', ttl: '1m' })).structuredContent;
  assert.equal(bHolds.error, 'held');
  assert.match(bHolds.message, new RegExp(`, pid ${b.proc.pid} \\(\\S*wtproxy mcp[^)]*\\), for "", since \\d+s ago: it is theirs, released when pid ${b.proc.pid} ends: ` +
    `wait for that${untilFree}`));
  assert.equal((await b.end()).code, 0, b.stderr());
  await waitFor(async () => !(await call(a, 'claim', { resource: 'emulator-1', ttl: '1m' })).isError,
    15000, 'the lease of an ended session to be free');
  assert.equal((await a.end()).code, 0, a.stderr());
});

// Needs the daemon's op `restart` and wtproxy run's log of its server.
test('restart restarts the session worktree\'s own server', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const before = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;
  const mcp = await session(t, tmp, tmp.wt.a, ['--front', String(px.port)]);
  const r = await call(mcp, 'restart');
  assert.notEqual(r.isError, true, r.content[0].text);
  assert.ok(r.structuredContent.restarted.some((e) => e.worktree === tmp.wt.a), JSON.stringify(r.structuredContent));
  await waitFor(async () => {
    const res = await getWorktree(px.port, tmp.wt.a);
    return res.status === 200 && JSON.parse(res.body).pid !== before;
  }, 20000, 'a new server process answering for wt-a');
  // wtproxy run keeps its server's log: the restart is in its last lines.
  const log = (await call(mcp, 'logs', { front: px.port, lines: 20 })).structuredContent;
  assert.equal(log.pid, run.pid);
  assert.ok(log.lines.some((l) => /restarting/.test(l)), JSON.stringify(log));
  const unknown = await call(mcp, 'restart', { service: 'nope' });
  assert.equal(unknown.isError, true);
  assert.equal(unknown.structuredContent.error, 'not-found');
  // A wrong front is said to be one, with the front its server runs on:
  // not "its last server exited" about a server that runs.
  const other = px.port < 65535 ? px.port + 1 : px.port - 1;
  for (const tool of ['restart', 'logs']) {
    const wrong = await call(mcp, tool, { front: other });
    assert.equal(wrong.isError, true, JSON.stringify(wrong));
    assert.equal(wrong.structuredContent.error, 'not-found');
    assert.ok(wrong.content[0].text.includes(`nothing on front ${other} in ${tmp.wt.a}; its server runs on front ${px.port}: call ${tool} without front (or front ${px.port})`), wrong.content[0].text);
    assert.doesNotMatch(wrong.content[0].text, /exited/);
  }
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

// Needs the daemon's op `services` (a .wtproxy with [service NAME] sections).
test('servers lists the services the worktree\'s .wtproxy declares, running or not', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), [
    '[service api]', 'start = node api.mjs {port}', `front = ${px.port}`, '',
    '[service web]', 'start = node web.mjs {port}', `front = ${px.port < 65535 ? px.port + 1 : px.port - 1}`,
    'after = api', '',
  ].join('\n'));
  const mcp = await session(t, tmp, tmp.wt.a);
  const s = (await call(mcp, 'servers')).structuredContent;
  assert.deepEqual(s.servers, []);
  assert.equal(s.file, path.join(tmp.wt.a, '.wtproxy'));
  assert.deepEqual(s.services.map((x) => [x.name, x.front, x.running]),
    [['api', px.port, false], ['web', px.port < 65535 ? px.port + 1 : px.port - 1, false]]);
  // a service it does not declare is said to be none, with those it does
  for (const tool of ['restart', 'logs']) {
    const r = await call(mcp, tool, { service: 'nope' });
    assert.equal(r.structuredContent.error, 'not-found');
    assert.ok(r.content[0].text.startsWith(`no service nope in ${tmp.wt.a}: its .wtproxy declares none and none runs; its services: service api (front ${px.port}, declared), service web`), r.content[0].text);
    assert.match(r.content[0].text, new RegExp(`call ${tool} with one of them$`));
  }
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('why without a front judges the port the daemon listens on, as `wtproxy why` does', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp); // a port the kernel picked: never 8000
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  const port = await run.ready;
  const mcp = await session(t, tmp, tmp.wt.a); // no --front
  const why = (await call(mcp, 'why', { folder: tmp.wt.a })).structuredContent;
  assert.equal(why.front, px.port, JSON.stringify(why));
  assert.equal(why.ok, true);
  assert.equal(why.backend.port, port);
  // a .wtproxy naming its front wins, as for the CLI
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = true\nfront = ${px.port + 1}\n`);
  const declared = (await call(mcp, 'why', { folder: tmp.wt.a })).structuredContent;
  assert.equal(declared.front, px.port + 1, JSON.stringify(declared));
});
