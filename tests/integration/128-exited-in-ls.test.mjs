// 128: a server that exited by itself is said where an agent looks
// without sending a request: `wtproxy ls` (and `ls --exited`), `wtproxy
// why`, the MCP servers tool and the dashboard's API show its exit status, its last
// lines and the command that starts it again (they said "no dev server is
// registered", and the agent guessed why). Once a server registers on the
// key again, the old lines are gone from all three. A `.wtproxy` server
// that exited is started again by `wtproxy restart`, which ls names. The
// dashboard page turns a server's row that crashed into "exited" (never
// "gone") with its last lines, shown as text however hostile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorktrees, declaring, startDaemon, startRun, cli, cliEnv, get, wtServer, curlFrom, waitFor, git,
} from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { launchBrowser, openDashboard, waitRows, screenshot } from './lib/dashboard.mjs';

// A Node server that throws at import, with a line no other test prints.
const THROWS = "throw new Error('lastls-128: LASTLS_SECRET_FILE is not set');\n";
const DISTINCT = /Error: lastls-128: LASTLS_SECRET_FILE is not set/;

async function mcpServers(t, tmp, cwd) {
  const mcp = startMcp(t, { cwd, env: cliEnv(tmp) });
  await initialize(mcp);
  const r = await mcp.call(1, 'servers');
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
  return r;
}

async function apiBackends(port) {
  const r = await get(port, {}, '/__wtproxy/api/backends');
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

// An aiohttp user's server printed a ModuleNotFoundError, was fixed and
// restarted (`wtproxy restart`), served, and later exited for another
// reason (its watcher quit): ls quoted the first run's traceback, and the
// wrapper named the missing package, whose link was there.
test('a server restarted by its wrapper, which later exits: its last lines are its own run\'s, never the run before the restart', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--whoami', 'off']); // a server without /__whoami
  const script = `const fs = require('fs'), http = require('http');
if (!fs.existsSync('ran')) { fs.writeFileSync('ran', ''); console.error("ModuleNotFoundError: No module named 'wtproxy_whoami'"); }
else console.log('second run');
const s = http.createServer((q, r) => { if (q.url === '/quit') { console.error('entr: cannot open app/helpers.py: No such file or directory'); process.exit(1); } r.end('ok'); });
s.listen(Number(process.argv[2]), '127.0.0.1');`;
  fs.writeFileSync(path.join(tmp.wt.a, 'server.cjs'), script);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: [process.execPath, 'server.cjs', '{port}'] });
  await run.ready;
  const restart = await cli(tmp, ['restart', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(restart.code, 0, restart.stderr);
  const [e] = JSON.parse((await cli(tmp, ['ls', '--json'])).stdout);
  await get(e.port, {}, '/quit').catch(() => {});
  let exited;
  await waitFor(async () => (exited = JSON.parse((await cli(tmp, ['ls', '--exited'])).stdout)).length === 1, 10000, 'the exit in ls');
  assert.match(exited[0].lines, /entr: cannot open app\/helpers\.py/);
  assert.doesNotMatch(exited[0].lines, /ModuleNotFoundError/, 'the run before the restart is not this one');
  assert.doesNotMatch(run.stderr(), /lacks the wtproxy_whoami package/);
});

test('a hand-run server that threw at import: ls, the MCP servers tool and the dashboard say it, until one registers again', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), THROWS);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', process.execPath, 'server.mjs', '{port}'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1, run.stderr);

  // No request was sent: ls alone says what happened and what to do.
  const ls = await cli(tmp, ['ls'], { cwd: tmp.wt.a });
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /^no dev server is registered\n/);
  assert.match(ls.stdout, new RegExp(`${tmp.wt.a} \\(front ${px.port}\\): its server exited \\d+s ago with status 1 \\(\\S+ server\\.mjs \\d+\\); its last lines:\\n`));
  assert.match(ls.stdout, /\n {2}\| Error: lastls-128: LASTLS_SECRET_FILE is not set\n/);
  assert.ok(ls.stdout.includes(`the whole log: wtproxy logs ${tmp.wt.a} --front ${px.port}; `), ls.stdout);
  assert.ok(ls.stdout.includes(`then start it again: cd ${tmp.wt.a} && wtproxy run --front ${px.port} -- ${process.execPath} server.mjs {port}\n`), ls.stdout);
  const quoted = ls.stdout.split('\n').filter((l) => l.startsWith('  | '));
  assert.ok(quoted.length >= 1 && quoted.length <= 5, `at most 5 lines quoted:\n${ls.stdout}`);
  // The commands it gives work as printed.
  const logs = await cli(tmp, ['logs', tmp.wt.a, '--front', String(px.port)], { cwd: tmp.root });
  assert.match(logs.stdout, DISTINCT, logs.stderr);

  // `wtproxy why` says it where it said "backend: none".
  const why = await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(why.code, 1, why.stderr);
  assert.match(why.stdout, new RegExp(`backend: none on front :${px.port}; requests get 503\\. ${tmp.wt.a} \\(front ${px.port}\\): its server exited \\d+s ago with status 1 `));
  assert.match(why.stdout, DISTINCT);

  // As JSON, for scripts; `ls --json` stays the registrations' array.
  const exited = JSON.parse((await cli(tmp, ['ls', '--exited'])).stdout);
  assert.equal(exited.length, 1, JSON.stringify(exited));
  assert.equal(exited[0].worktree, tmp.wt.a);
  assert.equal(exited[0].front, px.port);
  assert.equal(exited[0].status, 1);
  assert.match(exited[0].lines, DISTINCT);
  assert.equal(exited[0].rerun, `wtproxy run --front ${px.port} -- ${process.execPath} server.mjs {port}`);
  assert.deepEqual(JSON.parse((await cli(tmp, ['ls', '--json'])).stdout), []);

  // The MCP servers tool: in its structured content and its text.
  const s = await mcpServers(t, tmp, tmp.wt.a);
  assert.notEqual(s.isError, true, s.content[0].text);
  assert.deepEqual(s.structuredContent.servers, []);
  assert.equal(s.structuredContent.exited.length, 1);
  assert.equal(s.structuredContent.exited[0].status, 1);
  assert.match(s.structuredContent.exited[0].lines, DISTINCT);
  assert.match(s.structuredContent.exited[0].said, /exited \d+s ago with status 1 [^]*then start it again: cd /);
  assert.match(s.content[0].text, /lastls-128: LASTLS_SECRET_FILE is not set/);
  // Another worktree's session is told nothing of it.
  const other = await mcpServers(t, tmp, tmp.wt.b);
  assert.deepEqual(other.structuredContent.exited, []);

  // The dashboard's API: a row "exited" with the lines.
  const rows = await apiBackends(px.port);
  const row = rows.find((r) => r.worktree === tmp.wt.a);
  assert.ok(row, JSON.stringify(rows));
  assert.equal(row.exited, true);
  assert.equal(row.status, 'exited');
  assert.equal(row.status_reason.startsWith('its server exited with status 1; '), true, row.status_reason);
  assert.match(row.lines, DISTINCT);

  // Fixed, and registered there again: the old lines are said nowhere.
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), `await import(${JSON.stringify(wtServer)});\n`);
  const fixed = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: [process.execPath, 'server.mjs', '{port}'], stopSignal: 'SIGTERM' });
  await fixed.ready;
  const after = await cli(tmp, ['ls'], { cwd: tmp.wt.a });
  assert.doesNotMatch(after.stdout, /lastls-128|exited/, after.stdout);
  assert.match(after.stdout, new RegExp(`${tmp.wt.a}\\s+a\\s+${px.port}`));
  assert.deepEqual(JSON.parse((await cli(tmp, ['ls', '--exited'])).stdout), []);
  assert.deepEqual((await mcpServers(t, tmp, tmp.wt.a)).structuredContent.exited, []);
  const whyAfter = await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.doesNotMatch(whyAfter.stdout, /lastls-128/, whyAfter.stdout);
  assert.ok((await apiBackends(px.port)).every((r) => !r.exited), 'no exited row');
});

test('a hand-run server that exited saying nothing: ls sends to its whole log, not to an error it did not print', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', 'sh', '-c', 'exit 4'], { cwd: tmp.wt.a });
  assert.equal(run.code, 4, run.stderr);
  const ls = await cli(tmp, ['ls'], { cwd: tmp.wt.a });
  assert.match(ls.stdout, /; it printed nothing before it exited\nthe whole log: wtproxy logs \S+ --front \d+; find in it why it exited and fix that, then start it again: cd /, ls.stdout);
  assert.doesNotMatch(ls.stdout, /fix the error they name/, ls.stdout);
});

// Nest's log, quoted by a 503, ls and the MCP tools, read as raw
// "[32m[Nest] 12522  - [39m": its terminal escapes are left out.
test('a server whose last lines are coloured: ls quotes them without terminal escapes', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'colour.mjs'), "process.stdout.write('\\x1b[2J\\x1b[3J\\x1b[H');\n" +
    "console.error('\\x1b[32m[Nest] 12522  - \\x1b[39m\\x1b[31mERROR\\x1b[39m colour-128: config missing');\n" +
    "console.error('\\x1b]8;;https://example.com\\x07a link\\x1b]8;;\\x07 after it');\nprocess.exit(3);\n");
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', process.execPath, 'colour.mjs'], { cwd: tmp.wt.a });
  assert.equal(run.code, 3, run.stderr);
  const ls = await cli(tmp, ['ls'], { cwd: tmp.wt.a });
  assert.ok(ls.stdout.includes('[Nest] 12522  - ERROR colour-128: config missing'), ls.stdout);
  assert.doesNotMatch(ls.stdout, /\x1b/, JSON.stringify(ls.stdout));
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.ok(r.body.includes('ERROR colour-128: config missing\na link after it'), r.body);
  assert.doesNotMatch(r.body, /\x1b/, JSON.stringify(r.body));
});

test('a .wtproxy server that exited at start: ls names wtproxy restart, which starts it again', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} server.mjs {port}`, `front = ${px.port}`], ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), THROWS);
  // `wtproxy restart` starts the declared server, which throws.
  const start = await cli(tmp0, ['restart'], { cwd: tmp.wt.a, ms: 30000 });
  assert.notEqual(start.code, 0, start.stderr);
  const ls = await cli(tmp0, ['ls'], { cwd: tmp.wt.a });
  assert.match(ls.stdout, new RegExp(`${tmp.wt.a} \\(front ${px.port}\\): its server exited \\d+s ago with status 1 `));
  assert.match(ls.stdout, /\n {2}\| Error: lastls-128: LASTLS_SECRET_FILE is not set\n/);
  assert.ok(ls.stdout.includes(`then start it again: wtproxy restart ${tmp.wt.a} --front ${px.port} (or send a request there`), ls.stdout);
  const row = (await apiBackends(px.port)).find((r) => r.exited);
  assert.equal(row?.daemon_started, true, JSON.stringify(row));
  // Fixed: the command ls gave starts it, and the lines are gone.
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), `await import(${JSON.stringify(wtServer)});\n`);
  const again = await cli(tmp0, ['restart', tmp.wt.a, '--front', String(px.port)], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(again.code, 0, again.stderr);
  const after = await cli(tmp0, ['ls'], { cwd: tmp.wt.a });
  assert.doesNotMatch(after.stdout, /lastls-128/, after.stdout);
  const stop = await cli(tmp0, ['stop', tmp.wt.a], { cwd: tmp.wt.a, ms: 15000 });
  assert.equal(stop.code, 0, stop.stderr);
});

// A Ruby server whose boot raised, as Rails' does on a syntax error in
// config/routes.rb: Ruby prints the error first, then a `from` frame for
// each of its 82 calls, and the last lines held only frames, never the error.
const RUBY_BOOT = [
  'def boot(depth) = depth.zero? ? eval("end end", binding, "config/routes.rb", 6) : boot(depth - 1)',
  "$stdout.puts 'lastls-128: booting'",
  'boot(80)',
].join('\n');
const RUBY_ERROR = /\S*boot\.rb:1:in [^\n]*: config\/routes\.rb:6: syntax error[^\n]*\(SyntaxError\)\n/;

test('a Ruby server whose boot raised: its 503, ls and why quote the error above its `from` frames', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'boot.rb'), RUBY_BOOT);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', 'ruby', 'boot.rb', '{port}'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1, run.stderr);
  const ls = (await cli(tmp, ['ls'], { cwd: tmp.wt.a })).stdout;
  assert.match(ls, new RegExp(`\\n {2}\\| ${RUBY_ERROR.source}`), ls);
  assert.match(ls, /\n {2}\(and 4 lines after them\)\n/, ls);
  const why = (await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.a })).stdout;
  assert.match(why, RUBY_ERROR, why);
  // The 503: the error, the first frame, and the count of the others.
  const r = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, RUBY_ERROR, r.body);
  assert.match(r.body, /\n\tfrom \S*boot\.rb:1:in [^\n]*\n\t\.\.\. 81 more frames\n/, r.body);
});

// Kills the server whose pid wt-server wrote to pids with SIGKILL, as a
// user's kill -9 does, and waits for its wrapper to exit.
async function killServer(run, pids) {
  const port = await run.ready;
  void port;
  const pid = Number(fs.readFileSync(pids, 'utf8').trim().split('\n')[0]);
  process.kill(pid, 'SIGKILL');
  return run.exited;
}

test('a server killed by SIGKILL, under sh -c or not: said as killed, never as an error to fix', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  // a: `sh -c '...'` that does not exec its server (a command follows), as
  // npm's and next's shells do: the shell exits 137 when node is killed.
  // An error it printed and lived past (an edit's traceback, fixed since)
  // is not why it ended: its quote ends with its last line, not that one.
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), `console.log('Error: killed-128 old, fixed since');\nconsole.log('killed-128: listening');\nawait import(${JSON.stringify(wtServer)});\n`);
  const pidsA = path.join(tmp.root, 'pids-a');
  const a = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: ['/bin/sh', '-c', `'${process.execPath}' server.mjs {port} --pids '${pidsA}' && :`] });
  assert.equal((await killServer(a, pidsA)).code, 137, a.stderr());
  // b: the wrapper's own child, killed; it printed nothing.
  const pidsB = path.join(tmp.root, 'pids-b');
  const b = startRun(t, tmp, { cwd: tmp.wt.b, front: px.port, command: [process.execPath, wtServer, '{port}', '--pids', pidsB] });
  await killServer(b, pidsB);
  await waitFor(async () => JSON.parse((await cli(tmp, ['ls', '--exited'])).stdout).length === 2, 3000, 'both exits told');

  // ls lists both, each in its own paragraph.
  const ls = (await cli(tmp, ['ls'], { cwd: tmp.wt.a })).stdout;
  const lsA = ls.split('\n\n').find((p) => p.startsWith(`${tmp.wt.a} `)) || ls;
  const lsB = ls.split('\n\n').find((p) => p.startsWith(`${tmp.wt.b} `)) || ls;
  assert.match(lsA, /its server exited \d+s ago with status 137: 128\+9, a child killed by signal 9 \(SIGKILL\), as a shell reports it \(\/bin\/sh -c /, lsA);
  assert.match(lsA, /\n {2}\| killed-128: listening\n[^]*; something killed it \(not wtproxy: wtproxy says so when it stops a server\); start it again: cd \S+ && wtproxy run --front \d+ -- \/bin\/sh -c /, lsA);
  assert.doesNotMatch(lsA, /fix the error they name|lines? after them/, lsA);
  assert.match(lsB, /its server was killed \d+s ago by signal 9 \(SIGKILL\) \(/, lsB);
  assert.match(lsB, /; it printed nothing before it exited\nthe whole log: wtproxy logs \S+ --front \d+; something killed it \(not wtproxy/, lsB);
  assert.doesNotMatch(lsB, /its last lines|find in it why it exited/, lsB);

  // The next request's 503 says the same.
  const rA = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(rA.status, 503, rA.body);
  assert.match(rA.body, /exited \d+s ago with status 137: 128\+9, a child killed by signal 9 \(SIGKILL\), as a shell reports it; its last lines:\nError: killed-128 old, fixed since\nkilled-128: listening\n/, rA.body);
  assert.match(rA.body, /Fix: Something killed it \(not wtproxy: wtproxy says so when it stops a server\); start it again from its worktree: cd /, rA.body);
  const rB = await curlFrom(tmp.wt.b, px.port, '/');
  assert.match(rB.body, /was killed \d+s ago by signal 9 \(SIGKILL\); it printed nothing before it exited\n/, rB.body);
  assert.match(rB.body, /Fix: Something killed it \(not wtproxy/, rB.body);

  // The dashboard's row.
  const rows = await apiBackends(px.port);
  const rowA = rows.find((r) => r.worktree === tmp.wt.a);
  assert.match(rowA.status_reason, /^its server exited with status 137: 128\+9, a child killed by signal 9 \(SIGKILL\), as a shell reports it; something killed it \(not wtproxy/, rowA.status_reason);
});

// Serves until asked for /die, then prints an error carrying markup and
// exits with status 2, as a server that crashes on a request does.
const DIES = [
  "import http from 'node:http';",
  "http.createServer((q, s) => { if (q.url !== '/die') { s.statusCode = 404; return s.end(); }",
  "  console.error('Error: lastls-128 <img src=x onerror=alert(6)> crashed'); process.exit(2); })",
  "  .listen(Number(process.argv[2]), '127.0.0.1');",
].join('\n');

test('the dashboard page shows a server that crashed as exited, its last lines as text', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']); // its /__whoami is a 404
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), DIES);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: [process.execPath, 'server.mjs', '{port}'] });
  const port = await run.ready;
  const browser = await launchBrowser(t);
  const { page, seen } = await openDashboard(browser, px.port);
  const key = `${px.port} ${tmp.wt.a}`;
  await waitRows(page, (rows) => rows.some((r) => r.key === key && r.status === 'ready'), 5000, 'the ready row');
  await get(port, {}, '/die').catch(() => {}); // straight to the server: it exits
  assert.equal((await run.exited).code, 2);
  await waitRows(page, (rows) => rows.some((r) => r.key === key && r.status === 'exited'), 3000, 'the row exited');
  const rows = await page.$$eval('#backends tbody tr', (rs) => rs.map((r) => r.dataset.status));
  assert.deepEqual(rows, ['exited'], 'one row, exited, not also gone');
  const pre = await page.$eval('#backends tbody tr .last-lines', (e) => e.textContent);
  assert.match(pre, /Error: lastls-128 <img src=x onerror=alert\(6\)> crashed/);
  const state = await page.$eval('#backends tbody tr', (e) => e.textContent);
  assert.match(state, /exited \d+s ago/);
  assert.match(state, /its server exited with status 2; fix the error its last lines name, then start it again: cd \S+ && wtproxy run --front \d+ -- /);
  // A request now: its 503 lists the last lines, then the fix, a line
  // each; the refusals table showed them run together into one paragraph.
  const refused = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(refused.status, 503, refused.body);
  await page.waitForSelector('#refusals tbody tr .detail', { timeout: 3000 });
  const detail = await page.$eval('#refusals tbody tr .detail', (e) => e.innerText);
  assert.match(detail, /its last lines:\nError: lastls-128 <img src=x onerror=alert\(6\)> crashed\nFix: Fix the error its last lines above name/, detail);
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0, 'the markup is text');
  await page.waitForTimeout(300); // an injected handler would have fired by now
  assert.deepEqual(seen.dialogs, []);
  assert.deepEqual(seen.errors, []);
  t.diagnostic(`screenshot: ${await screenshot(page, '128-dashboard-exited.png')}`);
});

test('a server whose output ended blank, then its worktree removed: ls quotes its words, then offers no restart', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const script = "printf 'lastls-128 blank tail\\n  \\n\\n \\t\\n   \\n\\n  \\n'; exit 3";
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', 'sh', '-c', script], { cwd: tmp.wt.a });
  assert.equal(run.code, 3, run.stderr);
  // Its blank lines are not quoted: "its last lines:" never heads nothing.
  const ls = await cli(tmp, ['ls'], { cwd: tmp.root });
  assert.match(ls.stdout, /; its last lines:\n {2}\| lastls-128 blank tail\nthe whole log: /, ls.stdout);

  // Removed, its worktree has nothing to restart: ls and the dashboard
  // say so, and name no command that would fail.
  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.a);
  const gone = await cli(tmp, ['ls'], { cwd: tmp.root });
  assert.match(gone.stdout, new RegExp(`${tmp.wt.a} \\(front ${px.port}\\): its server exited \\d+s ago with status 3 \\(sh -c .*\\), and its worktree was removed since \\(git worktree remove\\): nothing to start again there\\n`), gone.stdout);
  assert.doesNotMatch(gone.stdout, /start it again|wtproxy logs|wtproxy restart/, gone.stdout);
  const row = (await apiBackends(px.port)).find((r) => r.exited);
  assert.match(row.status_reason, /its worktree was removed since \(git worktree remove\): nothing to start again there$/, JSON.stringify(row));
});
