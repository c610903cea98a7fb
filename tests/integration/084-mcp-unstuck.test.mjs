// 084: an agent that knows wtproxy only through `wtproxy mcp` gets out of
// the situations it meets, with real daemons, `wtproxy run` servers and
// worktrees:
// - its server crashed at start (a syntax error): the wrapper unregisters
//   it at once, yet logs shows the log's last lines, the reason, and
//   restart says there is nothing to restart, how to start one, and why
//   the last one ended;
// - its server is stale after an edit (409): restart returns once the new
//   server is ready and verified by the daemon, not with the old server's
//   "stale: restart it" verdict, and says it as `wtproxy restart` does;
//   a restart into a crash is an error carrying the crash's lines, and one
//   whose new server the gate refuses (no /__whoami) is an error `refused`
//   with the sentence `wtproxy restart` prints;
// - a worktree whose .wtproxy declares its server: restart starts it when
//   none runs, and a start into a crash is an error with the crash's lines;
//   one whose start line was edited is stopped and started from the file,
//   saying so as `wtproxy restart` does;
// - no daemon: the command the message gives starts one and returns;
// - two agents in one worktree: one's release does not end the other's
//   lease (the store frees any lease of the worktree).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import {
  makeWorktrees, startDaemon, startRun, cliEnv, getWorktree, waitFor, control,
} from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

// The env of every process of a test: its daemon's socket, and a state
// folder of its own, where `wtproxy run` keeps its servers' logs.
function env(tmp) {
  return cliEnv(tmp, { XDG_STATE_HOME: path.join(tmp.root, 'state') });
}

async function session(t, tmp, cwd) {
  const mcp = startMcp(t, { cwd, env: env(tmp) });
  await initialize(mcp);
  return mcp;
}

let ids = 1;
const call = (mcp, name, args) => mcp.call(ids++, name, args);

// A dev server that fails at start, as Django does on a syntax error in
// its settings, while the file `broken` is in its worktree; else it listens.
const SERVER = [
  "import fs from 'node:fs'; import http from 'node:http';",
  "if (fs.existsSync('broken')) { console.error('  File \"app/settings.py\", line 10');",
  "  console.error('SyntaxError: invalid syntax'); process.exit(1); }",
  "console.log('serving'); http.createServer((q, s) => s.end('ok')).listen(Number(process.argv[2]), '127.0.0.1');",
].join('\n');

// `wtproxy run --front FRONT -- node server.mjs {port}` in cwd (SERVER);
// resolves with its exit, and is killed by pid after the test.
function runServer(t, tmp, cwd, front) {
  const p = spawn(wtproxyBin, ['run', '--front', String(front), '--', process.execPath, 'server.mjs', '{port}'],
    { cwd, stdio: 'ignore', env: { ...process.env, ...env(tmp) } });
  t.after(() => { if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); });
  return new Promise((res) => p.on('exit', (code, signal) => res({ code, signal })));
}

test('a server that crashed at start: logs shows why, restart says how to start it again', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), SERVER);
  fs.writeFileSync(path.join(tmp.wt.a, 'broken'), '');
  assert.notEqual((await runServer(t, tmp, tmp.wt.a, px.port)).code, 0, 'the server exits at start');
  const mcp = await session(t, tmp, tmp.wt.a);
  assert.deepEqual((await call(mcp, 'servers')).structuredContent.servers, [], 'it is unregistered');

  const logs = await call(mcp, 'logs', { lines: 5 });
  assert.notEqual(logs.isError, true, logs.content[0].text);
  const l = logs.structuredContent;
  assert.equal(l.running, false);
  assert.ok(l.lines.includes('SyntaxError: invalid syntax'), JSON.stringify(l));
  assert.equal(path.dirname(l.log), path.join(tmp.root, 'state', 'wtproxy', 'servers'));
  assert.match(l.note, new RegExp(`^no server of ${tmp.wt.a} runs now: these are the last lines of its newest log, written \\d+s ago`));
  assert.match(l.note, new RegExp(`then start it again: cd ${tmp.wt.a} && setsid -f wtproxy run -- .* >/dev/null 2>&1 `));

  const restart = await call(mcp, 'restart');
  assert.equal(restart.isError, true);
  assert.equal(restart.structuredContent.error, 'not-found');
  assert.match(restart.content[0].text, /Nothing to restart: its last server exited; its newest log, .* ends with:\n(.|\n)*SyntaxError: invalid syntax\n  --- the server \(pid \d+: [^\n]*\) exited with status 1, at \d\d:\d\d:\d\d ---\nFix what it says, then start it again: cd /);
  // A worktree that never had a server: how to start one, nothing more.
  fs.rmSync(path.join(tmp.root, 'state'), { recursive: true });
  const never = await call(mcp, 'restart');
  assert.match(never.content[0].text, new RegExp(`Nothing to restart: start one there: cd ${tmp.wt.a} && setsid -f wtproxy run -- <server command with \\{port\\}> >/dev/null 2>&1 \\(its output goes to its log: read it with logs\\)$`));
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('restart returns once the server is ready, and a restart into a crash says why', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '200ms']);
  // wt-a: a server with /__whoami made stale by an edit
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env: env(tmp) });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(2)\n');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 409);
  const a = await session(t, tmp, tmp.wt.a);
  const r = await call(a, 'restart');
  assert.notEqual(r.isError, true, r.content[0].text);
  const [e] = r.structuredContent.restarted;
  assert.equal(r.structuredContent.ready, true);
  assert.equal(e.state, 'ready', 'returned once the new server listens');
  assert.equal(e.whoami.state, 'verified', `the new server's verdict, not the old one's: ${JSON.stringify(e.whoami)}`);
  // What `wtproxy restart` says of it (cli/verdict.c, the same words)
  assert.match(e.said, new RegExp(`^${tmp.wt.a}'s server on front ${px.port} restarted and ready in \\d+\\.\\d s, verified: serves the code on disk$`));
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200, 'the next request meets the new server');
  assert.equal((await a.end()).code, 0, a.stderr());

  // wt-b: a server that fails when restarted
  fs.writeFileSync(path.join(tmp.wt.b, 'server.mjs'), SERVER);
  const exited = runServer(t, tmp, tmp.wt.b, px.port);
  const b = await session(t, tmp, tmp.wt.b);
  await waitFor(async () => (await call(b, 'servers')).structuredContent.servers[0]?.state === 'ready', 15000, 'wt-b ready');
  fs.writeFileSync(path.join(tmp.wt.b, 'broken'), '');
  const crash = await call(b, 'restart');
  assert.equal(crash.isError, true, JSON.stringify(crash.structuredContent));
  assert.equal(crash.structuredContent.error, 'exited');
  assert.match(crash.content[0].text, new RegExp(`^${tmp.wt.b}'s server on front :${px.port} \\(.*server\\.mjs \\d+\\) was restarted but it exited`));
  assert.match(crash.content[0].text, /ends with:\n(.|\n)*SyntaxError: invalid syntax\n  --- the server \(pid \d+: [^\n]*\) exited with status 1, at \d\d:\d\d:\d\d ---\nFix what it says, then start it again: cd /);
  assert.ok(crash.structuredContent.lines.includes('SyntaxError: invalid syntax'));
  assert.notEqual((await exited).code, 0);
  assert.equal((await b.end()).code, 0, b.stderr());
});

test('a restart whose server comes back refused by the gate is a failure saying why', async (t) => {
  // A server without /__whoami: up and ready, but every request to it
  // gets a 502, so an agent's tests would fail: `wtproxy restart` exits 1.
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  await startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env: env(tmp), serverArgs: ['--no-whoami'] }).ready;
  const mcp = await session(t, tmp, tmp.wt.a);
  const r = await call(mcp, 'restart');
  assert.equal(r.isError, true, JSON.stringify(r.structuredContent));
  const s = r.structuredContent;
  assert.equal(s.error, 'refused');
  assert.match(r.content[0].text, new RegExp(`^${tmp.wt.a}'s server on front ${px.port} restarted and ready in \\d+\\.\\d s, but no-whoami: `));
  assert.equal(r.content[0].text, s.restarted[0].said, 'the sentence is what wtproxy restart prints');
  assert.equal(s.restarted[0].state, 'ready', 'what was restarted is still listed');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 502, 'and the gate does refuse it');
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('two agents in one worktree: one cannot release the other\'s lease', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  await startDaemon(t, tmp);
  const one = await session(t, tmp, tmp.wt.a);
  const two = await session(t, tmp, tmp.wt.a);
  const won = (await call(one, 'claim', { resource: 'db', purpose: 'migrations' })).structuredContent;
  assert.equal(won.lease.pid, one.proc.pid);
  const r = await call(two, 'release', { resource: 'db' });
  assert.equal(r.isError, true, JSON.stringify(r.structuredContent));
  assert.equal(r.structuredContent.error, 'held-by-another');
  assert.equal(r.structuredContent.holder.pid, one.proc.pid);
  assert.match(r.content[0].text, new RegExp(`^db is held by another process in this worktree: pid ${one.proc.pid} \\(.*wtproxy mcp\\), for "migrations", since \\d+s ago\\. It is theirs .* leave it and wait for that, or use another resource$`));
  // a claim is told to wait for the other agent, not to kill its session
  const wait = await call(two, 'claim', { resource: 'db' });
  assert.equal(wait.structuredContent.error, 'held', 'still one\'s');
  assert.match(wait.content[0].text, new RegExp(`^db is held by another process in this worktree: pid ${one.proc.pid} .* leave it and wait for that, or use another resource; ` +
    'to wait until it is free: call claim again with wait "50s" \\(it claims db as soon as its holder releases it, ends or expires\\)$'));
  assert.doesNotMatch(wait.content[0].text, /kill|--force/);
  // a worktree named by a relative path: what to give instead
  const rel = await call(two, 'servers', { worktree: 'wt-nope' });
  assert.equal(rel.structuredContent.error, 'not-a-worktree');
  assert.match(rel.content[0].text, /give worktree as the absolute path of a git worktree \(git worktree list prints them\)$/);
  // its own lease, and a manual one of the worktree, it releases
  assert.deepEqual((await call(one, 'release', { resource: 'db' })).structuredContent, { released: 'db' });
  await call(one, 'claim', { resource: 'emulator', ttl: '10m' });
  assert.deepEqual((await call(two, 'release', { resource: 'emulator' })).structuredContent, { released: 'emulator' });
  assert.equal((await one.end()).code, 0, one.stderr());
  assert.equal((await two.end()).code, 0, two.stderr());
});

test('restart starts the server the .wtproxy declares when none runs, and says why it did not come up', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--whoami', 'off']); // SERVER has no /__whoami
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), SERVER);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} server.mjs {port}\nfront = ${px.port}\n`);
  const mcp = await session(t, tmp, tmp.wt.a);
  const r = await call(mcp, 'restart');
  assert.notEqual(r.isError, true, r.content[0].text);
  assert.deepEqual(r.structuredContent.restarted, []);
  assert.deepEqual(r.structuredContent.started.map((s) => [s.front, s.state]), [[px.port, 'ready']]);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).body, 'ok');

  fs.writeFileSync(path.join(tmp.wt.a, 'broken'), '');
  const crash = await call(mcp, 'restart'); // restarts the one that runs: it exits
  assert.equal(crash.structuredContent.error, 'exited');
  assert.match(crash.content[0].text, /SyntaxError: invalid syntax\n  --- the server \(pid \d+: [^\n]*\) exited with status 1, at \d\d:\d\d:\d\d ---\nFix what it says, then start it again: restart \(it starts the server .*'s \.wtproxy declares\)$/);
  const again = await call(mcp, 'restart'); // nothing runs: starts the declared one, which exits
  assert.equal(again.structuredContent.error, 'exited');
  assert.match(again.content[0].text, new RegExp(`^the server of ${tmp.wt.a}'s \\.wtproxy \\(front :${px.port}, .*server\\.mjs \\{port\\}\\) was started but it exited before it was ready\\. Its log .* ends with:\\n(.|\\n)*SyntaxError: invalid syntax\\n  --- the server \\(pid \\d+: [^\\n]*\\) exited with status 1, at \\d\\d:\\d\\d:\\d\\d ---\\nFix what it says, then restart again: restart starts it$`));
  fs.rmSync(path.join(tmp.wt.a, 'broken'));
  const fixed = await call(mcp, 'restart');
  assert.equal(fixed.structuredContent.started[0].state, 'ready', fixed.content[0].text);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

// An agent tuning its .wtproxy edits the start line and calls restart:
// the tool re-ran the server's old command and said "restarted and
// ready", so the edit never took. Now it stops that server and starts it
// from the file, saying so in `said` as `wtproxy restart` does.
test('restart after the .wtproxy start line was edited: the new server runs the new line', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--whoami', 'off']); // SERVER has no /__whoami
  const file = path.join(tmp.wt.a, '.wtproxy');
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), SERVER);
  fs.writeFileSync(file, `start = ${process.execPath} server.mjs {port}\nfront = ${px.port}\nidle_stop = 0\n`);
  const mcp = await session(t, tmp, tmp.wt.a);
  const first = await call(mcp, 'restart');
  assert.equal(first.structuredContent.started[0].state, 'ready', first.content[0].text);
  fs.writeFileSync(file, `start = ${process.execPath} server.mjs {port} --edited\nfront = ${px.port}\nidle_stop = 0\n`);
  const r = await call(mcp, 'restart');
  assert.notEqual(r.isError, true, r.content[0].text);
  assert.deepEqual(r.structuredContent.restarted, [], r.content[0].text);
  const [s] = r.structuredContent.started;
  assert.equal(s.state, 'ready', r.content[0].text);
  assert.match(s.said, new RegExp(`^${tmp.wt.a}'s server on front ${px.port} runs \`/bin/sh -c .*server\\.mjs \\d+\`, not the \\.wtproxy's start now \\(\`.*server\\.mjs \\{port\\} --edited\`\\): stopping it, to start it from the file$`));
  const servers = (await call(mcp, 'servers')).structuredContent.servers;
  assert.equal(servers.length, 1, JSON.stringify(servers));
  assert.match(servers[0].command, / --edited$/, 'the edited start line runs');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).body, 'ok');
  const twice = await call(mcp, 'restart'); // unchanged since: a plain restart
  assert.notEqual(twice.isError, true, twice.content[0].text);
  assert.equal(twice.structuredContent.restarted.length, 1, twice.content[0].text);
  assert.deepEqual(twice.structuredContent.started, []);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('no daemon: the message\'s command starts one that returns at once, and the tools then answer', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  // What the daemon the message starts reads from the user's config: a
  // kernel-picked port and this test's state file, never 8000.
  const config = path.join(tmp.root, 'wtproxy.conf');
  fs.writeFileSync(config, `listen = 127.0.0.1:0\nstate_file = ${tmp.state}\n`);
  const mcp = await session(t, tmp, tmp.wt.a);
  const r = await call(mcp, 'servers');
  assert.equal(r.structuredContent.error, 'no-daemon');
  const m = new RegExp(`^no daemon answers on ${tmp.control}; start one, in the background: (setsid -f wtproxy serve --control ${tmp.control} >>(\\S+)/daemon\\.log 2>&1)$`)
    .exec(r.content[0].text);
  assert.ok(m, r.content[0].text);
  assert.equal(m[2], path.join(tmp.root, 'state', 'wtproxy'));
  const shell = spawn('/bin/sh', ['-c', m[1]], {
    stdio: 'ignore',
    env: { ...process.env, WTPROXY_CONFIG: config, PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` },
  });
  const code = await new Promise((res) => shell.on('exit', res));
  assert.equal(code, 0, 'the command returns: the daemon runs on in the background');
  let pid = 0;
  t.after(() => { if (pid) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
  await waitFor(async () => {
    const s = await call(mcp, 'servers');
    return !s.isError;
  }, 10000, 'the daemon to answer');
  pid = (await control(tmp.control, { op: 'ping' })).pid;
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
  process.kill(pid, 'SIGTERM');
});
