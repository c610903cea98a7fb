// 108: a second live registration for the same (front, worktree) is
// refused, naming the holder's pid, command, age and worktree, and the
// command that frees it; `wtproxy run` then exits 1 without starting its
// command. A dead holder (TTL passed) is replaced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, declaring, startDaemon, startRun, cli, lsJson, curlFrom, wtServer, sanitizerClean, git, waitFor } from './lib/registry.mjs';

test('a second run in the same worktree: exit 1 naming the holder, CMD never started', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const first = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await first.ready;
  const marker = path.join(tmp.root, 'second-started');
  const r = await cli(tmp, ['run', '--front', String(px.port), '--', 'touch', marker], { cwd: tmp.wt.a });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  // first.pid is the `wtproxy run` wrapper's: named as such, and stopped
  // through it (a kill of the wrapper leaves its server to notice)
  assert.match(r.stderr, new RegExp(`by the wtproxy run wrapper pid ${first.pid} of its server \\(.*wt-server\\.mjs`));
  assert.match(r.stderr, /registered \d+[smhd] ago/, 'gives the age');
  assert.ok(r.stderr.includes(tmp.wt.a), 'names the worktree');
  assert.ok(r.stderr.includes(`stop it first, then run this again: cd ${tmp.wt.a} && wtproxy stop --front ${px.port}\n`), r.stderr);
  assert.doesNotMatch(r.stderr, /kill \d+/, 'no kill of the wrapper');
  assert.doesNotMatch(r.stderr, new RegExp(`--front (?!${px.port})\\d+`), 'no other front port the daemon may not listen on');
  assert.ok(r.stderr.trim().split('\n').length <= 2, r.stderr);
  assert.ok(!fs.existsSync(marker), 'the second command was started');
  const entries = await lsJson(tmp);
  assert.equal(entries.length, 1);
  assert.equal(entries[0].pid, first.pid);
  assert.equal(first.proc.exitCode, null);
});

// A holder whose start failed and lives on (node --watch waits for a
// change to the script that threw): a Playwright webServer's `wtproxy run`
// said "already served ... stop it first: kill PID", but it serves
// nothing, and the next start would fail the same way. Now the conflict
// says that it failed, its error, and the fix: the error, not a kill.
test('a second run while the holder failed at start: its error and fix, not a kill', async (t) => {
  const tmp = makeWorktrees(t, ['f']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.f, 'server.js'), "throw new Error('boom: DATABASE_URL is not set');\n");
  const first = startRun(t, tmp, {
    cwd: tmp.wt.f, front: px.port, detached: true, stopSignal: 'SIGKILL',
    command: [process.execPath, '--watch', 'server.js', '{port}'],
  });
  await waitFor(() => /failed at start and lives on without listening/.test(first.stderr()), 15000,
    'the wrapper says the start failed');
  await waitFor(async () => (await lsJson(tmp))[0]?.start_failed, 5000, 'the daemon knows');
  const r = await cli(tmp, ['run', '--front', String(px.port), '--', 'true'], { cwd: tmp.wt.f });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /is already served on front/);
  assert.match(r.stderr, /that server serves nothing: it failed at start and lives on without listening, waiting for a change to its files: fix the error its log's last lines name and save \(node --watch restarts it\); its last lines:\n/);
  assert.match(r.stderr, /\n {2}\| Error: boom: DATABASE_URL is not set\n/, 'its error, quoted');
  assert.match(r.stderr, new RegExp(`all its output: wtproxy logs --front ${px.port} \\(in its worktree\\)\n$`));
  assert.doesNotMatch(r.stderr, /kill/, 'no kill: the next start would fail the same way');
});

test('register over a live manual entry: conflict naming unregister; a dead one is replaced', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const front = String(px.port);
  const a = await cli(tmp, ['register', '--port', '5000', '--ttl', '1s', '--front', front], { cwd: tmp.wt.a });
  assert.equal(a.code, 0, a.stderr);
  const b = await cli(tmp, ['register', '--port', '5001', '--ttl', '1h', '--front', front], { cwd: tmp.wt.a });
  assert.equal(b.code, 1, b.stderr);
  assert.match(b.stderr, /wtproxy unregister --worktree \S+ --front \d+/);
  assert.match(b.stderr, /by a registration with --ttl \(no process\)/, 'not "pid 0 (no command)"');
  assert.doesNotMatch(b.stderr, /pid 0/, b.stderr);
  await new Promise((res) => setTimeout(res, 1500));
  const c = await cli(tmp, ['register', '--port', '5002', '--ttl', '1h', '--front', front], { cwd: tmp.wt.a });
  assert.equal(c.code, 0, c.stderr);
  const entries = await lsJson(tmp);
  assert.equal(entries.length, 1);
  assert.equal(entries[0].port, 5002);
});

test('a conflict in a worktree with a long path still ends with the whole command that frees it', async (t) => {
  const tmp = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp);
  const front = String(px.port);
  // 5 folders of 200 characters: a path of about 1,050 bytes, named twice
  // in the message (the worktree, and in the command that frees it).
  const deep = path.join(tmp.root, ...Array.from({ length: 5 }, (_, i) => `${i}`.repeat(200)), 'wt-long');
  fs.mkdirSync(path.dirname(deep), { recursive: true });
  git(tmp.repo, 'worktree', 'add', '-q', deep, '-b', 'long');
  const a = await cli(tmp, ['register', '--port', '5000', '--ttl', '1h', '--front', front], { cwd: deep });
  assert.equal(a.code, 0, a.stderr);
  const b = await cli(tmp, ['register', '--port', '5001', '--ttl', '1h', '--front', front], { cwd: deep });
  assert.equal(b.code, 1, b.stderr);
  assert.ok(b.stderr.trimEnd().endsWith(`wtproxy unregister --worktree ${deep} --front ${front}`), b.stderr);
});

// Playwright's webServer runs its command when its url answers otherwise
// than 2xx, 3xx or 400-403: with a .wtproxy declaring the same server, the
// readiness check had the daemon start it, its app answered 500, and the
// command's `wtproxy run` said "stop it first": pasted, the next request
// started it again, for ever (a PHP user, four times), the 500 never
// named. A ready, verified declared server is said as such, with what
// GET / answers and where its output is.
test('a second run meeting the declared server the daemon started, ready: says so and the app\'s own error, never "stop it first"', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port} --fail-root 500`, `front = ${px.port}`], ['a']);
  const first = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(first.status, 500, first.body);
  await waitFor(async () => (await lsJson(tmp0))[0]?.whoami?.state === 'verified', 10000, 'verified');
  const r = await cli(tmp0, ['run', '--front', String(px.port), '--', process.execPath, wtServer, '{port}'], { cwd: tmp.wt.a });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /that server is the one its \.wtproxy declares, which the daemon started for a request of this worktree; it is ready and serves its current code \(verified\), so stopping it only has the next request start it again/, r.stderr);
  assert.ok(r.stderr.includes(`GET / through :${px.port} answers 500 ("PHP Parse error: unexpected \"}\""): a test runner that runs this command when its url did not answer 2xx, 3xx or 400-403 (Playwright's webServer) met the app's own error; fix it (its output: wtproxy logs --front ${px.port}, in its worktree)`), r.stderr);
  assert.doesNotMatch(r.stderr, /stop it first/, r.stderr);
});

// Three users typed `wtproxy register` in a worktree whose declared server
// ran, and read "a test runner that runs this command when its url did not
// answer 2xx, 3xx or 400-403 (Playwright's webServer) met another answer
// there ...": no test runner runs `register`. Its first lines stay.
test('a register typed by hand meeting the declared server, ready: the first lines, no test runner advice', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['a']);
  assert.equal((await curlFrom(tmp.wt.a, px.port, '/')).status, 200);
  await waitFor(async () => (await lsJson(tmp0))[0]?.whoami?.state === 'verified', 10000, 'verified');
  const r = await cli(tmp0, ['register', '--front', String(px.port), '--port', '5009', '--ttl', '1m'], { cwd: tmp.wt.a });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`${tmp.wt.a} is already served on front :${px.port} by the wtproxy run wrapper pid \\d+`), r.stderr);
  assert.match(r.stderr, /that server is the one its \.wtproxy declares, which the daemon started for a request of this worktree; it is ready and serves its current code \(verified\), so stopping it only has the next request start it again\n$/, r.stderr);
  assert.doesNotMatch(r.stderr, /test runner|Playwright/, r.stderr);
});
