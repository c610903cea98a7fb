// 132: a worktree whose repository commits a .wtproxy (start = CMD {port})
// gets its server started by the daemon on its first request: the request
// waits and is served by that worktree's own server; each worktree gets
// its own; an idle one stops after idle_stop; a start command that fails
// gets a 503 backend-not-ready pointing at its log, which `wtproxy logs`
// shows (as it shows a crashed `wtproxy run` server's); a server that
// exits (declared or hand-run) is quoted in the next request's 503: its
// last lines and exit status, as its wrapper told the daemon.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, wtServer, lsJson, waitFor, declaring, cli, curlFrom } from './lib/registry.mjs';


test('the first request from a worktree starts its declared server and is served by it', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`, 'idle_stop = 2s'], ['a', 'b']);
  const [a, b] = await Promise.all([curlFrom(tmp.wt.a, px.port), curlFrom(tmp.wt.b, px.port)]);
  assert.equal(a.status, 200, a.body);
  assert.equal(a.worktree, tmp.wt.a, 'wt-a is served by its own started server');
  assert.equal(b.worktree, tmp.wt.b, 'wt-b by its own');
  const entries = await lsJson(tmp0);
  assert.deepEqual(entries.map((e) => e.worktree).sort(), [tmp.wt.a, tmp.wt.b]);
  assert.match(px.stderr(), /started .*wt-a's server from its \.wtproxy/);
  // idle_stop ends them (and this test leaves no server behind)
  await waitFor(async () => (await lsJson(tmp0)).length === 0, 8000, 'idle servers stopped after idle_stop');
  assert.match(px.stderr(), /idle for 2000 ms \(idle_stop\)/);
});

test('a declared server that fails to start: 503 backend-not-ready naming its log', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, ['start = echo "boom: missing settings" >&2; exit 3', `front = ${px.port}`], ['a']);
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /backend-not-ready|exited before it listened/);
  const log = /its output: (\S+\.log)/.exec(r.body);
  assert.ok(log, `the 503 names the log:\n${r.body}`);
  assert.match(fs.readFileSync(log[1], 'utf8'), /boom: missing settings/);
  // Its lines are the page's, and so is the fix (it said "Read why in its
  // output: wtproxy logs"); the command the detail names beside the log,
  // `wtproxy logs` in the worktree, shows that log although no server of
  // wt-a is registered any more.
  assert.match(r.body, /its last lines:\nboom: missing settings\nFix: Fix the error its last lines above name, then send the request again/);
  assert.match(r.body, new RegExp(`its output: \\S+\\.log \\(wtproxy logs ${tmp.wt.a}\\)`));
  const logs = await cli(tmp0, ['logs'], { cwd: tmp.wt.a });
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /boom: missing settings/);
  assert.equal(logs.stderr, `wtproxy logs: no server of ${tmp.wt.a} runs now; its last log: ${log[1]}\n`);
});

test('a `wtproxy run` server that dies at start: `wtproxy logs` shows its last log', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', '/bin/sh', '-c',
    'echo "SyntaxError: invalid syntax (settings.py, line 129)" >&2; exit 1'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1, run.stderr);
  const logs = await cli(tmp, ['logs'], { cwd: tmp.wt.a });
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /SyntaxError: invalid syntax \(settings\.py, line 129\)/);
  assert.match(logs.stderr, new RegExp(`no server of ${tmp.wt.a} runs now; its last log: .*/servers/wt-a-[0-9a-f]{8}-${px.port}\\.log`));
  // A front it never served has no log: said as before.
  const none = await cli(tmp, ['logs', '--front', '1'], { cwd: tmp.wt.a });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no server of .*wt-a is registered/);
});

// A Node server that throws at import: it exits at once, status 1.
const THROWS = "throw new Error('boom: missing config FOO');\n";

test('a declared server that exits at start: the 503 quotes its last lines and status, in text, JSON and HTML', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} server.mjs {port}`, `front = ${px.port}`], ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), THROWS);
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  // Its error itself, not only where its log is (it was the log's path alone).
  assert.match(r.body, /exited with status 1 before it listened/);
  assert.match(r.body, /its last lines:\n[^]*Error: boom: missing config FOO/);
  // The fix once, as the page's Fix line (it followed the lines, and a
  // generic "read why in its output" Fix came under it).
  assert.match(r.body, /Error: boom: missing config FOO\n[^]*\nFix: Fix the error its last lines above name, then send the request again: the daemon starts the server its \.wtproxy declares again\n$/);
  assert.equal(r.body.match(/Fix:|fix the error/gi).length, 2, r.body);
  const json = await curlFrom(tmp.wt.a, px.port, '/', { headers: ['Accept: application/json'] });
  assert.equal(json.status, 503, json.body);
  assert.match(JSON.parse(json.body).detail, /exited with status 1 before it listened[^]*boom: missing config FOO/);
  assert.match(JSON.parse(json.body).fix, /^Fix the error its last lines above name, then send the request again/);
  const html = await curlFrom(tmp.wt.a, px.port, '/', { headers: ['Accept: text/html'] });
  assert.match(html.body, /<code[^>]*>[^<]*Error: boom: missing config FOO/);
});

// A new worktree has no node_modules (never committed): its Vite is "not
// found" (status 127). The 503, and ls, said only "fix the error its last
// lines above name"; now they name the install in the start's `cd` folder,
// by its lockfile. Likewise a Python server whose python lacks a module.
test('a new worktree without its dependencies: the 503 and ls name the install, by the lockfile, in the start\'s folder', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, ['[service frontend]', 'start = cd frontend && node_modules/.bin/vite --port {port} --strictPort', `front = ${px.port}`], ['a']);
  const web = path.join(tmp.wt.a, 'frontend');
  fs.mkdirSync(web);
  fs.writeFileSync(path.join(web, 'package.json'), '{"scripts":{"dev":"vite"},"devDependencies":{"vite":"^7"}}\n');
  fs.writeFileSync(path.join(web, 'package-lock.json'), '{}\n');
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /exited with status 127[^]*node_modules\/\.bin\/vite: not found/);
  const cure = `this worktree has no node_modules in ${web} (a new worktree starts without them); install them, by its lockfile: cd ${web} && npm ci`;
  assert.ok(r.body.includes(`\nFix: T${cure.slice(1)}, then send the request again`), r.body);
  const ls = await cli(tmp0, ['ls'], { cwd: tmp.wt.a });
  assert.ok(ls.stdout.includes(`${cure}, then start it again: wtproxy restart ${tmp.wt.a} --service frontend`), ls.stdout);
  // pnpm's lockfile: pnpm's install
  fs.renameSync(path.join(web, 'package-lock.json'), path.join(web, 'pnpm-lock.yaml'));
  assert.match((await curlFrom(tmp.wt.a, px.port)).body, new RegExp(`Fix: This worktree has no node_modules in \\S+ \\(a new worktree starts without them\\); install them, by its lockfile: cd \\S+/frontend && pnpm install, then`));
  // run by hand in that folder, `wtproxy run` says it under the error
  const run = await cli(tmp0, ['run', '--front', String(px.port), '--', '/bin/sh', '-c', 'node_modules/.bin/vite --port {port}'], { cwd: web });
  assert.equal(run.code, 127, run.stderr);
  assert.ok(run.stderr.includes(`wtproxy: wt-a's server exited: this worktree has no node_modules in ${web} (a new worktree starts without them); install them, by its lockfile: cd ${web} && pnpm install\n`), run.stderr);
});

test('a Python server whose python lacks a package its requirements name: the 503 names that python; one no file names is the code\'s error', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, ['start = python3 manage.py runserver {port}', `front = ${px.port}`], ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'manage.py'), 'import wtp_framework_132\n');
  // No requirements, and not the framework its start runs (Django): a
  // misspelt import, which no install fixes.
  const typo = await curlFrom(tmp.wt.a, px.port);
  assert.equal(typo.status, 503, typo.body);
  assert.match(typo.body, /\nFix: Fix the error its last lines above name, then/);
  assert.doesNotMatch(typo.body, /has no module|pip install|python3-django/, typo.body);
  fs.writeFileSync(path.join(tmp.wt.a, 'requirements.txt'), 'wtp-framework-132==1.0\n');
  const py = await curlFrom(tmp.wt.a, px.port);
  assert.equal(py.status, 503, py.body);
  assert.match(py.body, /Fix: \/\S*python3, the python that ran this server, has no module wtp_framework_132: the app's Python dependencies are not installed for it/);
  assert.doesNotMatch(py.body, /python3-django/, 'the Debian hint is Django\'s alone');
});

test('a declared server that exits saying nothing: the 503\'s fix sends to its log, not to lines it has not', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, ['start = exit 4', `front = ${px.port}`], ['a']);
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /; it printed nothing before it exited\nFix: Find in its log why it exited: wtproxy logs --front \d+, in its worktree; fix that, then send the request again/);
  assert.doesNotMatch(r.body, /error its last lines above name/);
});

test('a hand-run `wtproxy run` server that exits: the next request\'s 503 quotes its last lines, status and the rerun', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), THROWS);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', process.execPath, 'server.mjs', '{port}'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1, run.stderr);
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  // It was "no dev server" and `wtproxy run`, nothing of why the last one ended.
  assert.match(r.body, /Its server, \S+ server\.mjs \d+, exited \d+s ago with status 1; its last lines:\n[^]*Error: boom: missing config FOO/);
  assert.match(r.body, new RegExp(`\nFix: Fix the error its last lines above name, then start it again from its worktree: cd ${tmp.wt.a} && wtproxy run --front ${px.port} -- `));
  // With a .wtproxy that declares another front, its sentence ends before
  // the last words begin: one period, not "there.. Its server".
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), 'start = ./web {port}\nfront = 65001\n');
  const undeclared = await curlFrom(tmp.wt.a, px.port);
  assert.ok(undeclared.body.includes(`front = ${px.port} there. Its server, `), undeclared.body);
  assert.doesNotMatch(undeclared.body, /\.\. Its server/);
  // `wtproxy refusals` (and so the Playwright reporter) quotes the fix too.
  const said = await cli(tmp, ['refusals', '--json'], { cwd: tmp.wt.a });
  const last = JSON.parse(said.stdout).at(-1);
  assert.match(last.detail, /boom: missing config FOO/, said.stdout);
  assert.match(last.fix, new RegExp(`^Fix the error its last lines above name, then start it again from its worktree: cd ${tmp.wt.a} && `), said.stdout);
  // Another worktree's request is told nothing of it.
  const other = await curlFrom(tmp.root, px.port);
  assert.doesNotMatch(other.body, /boom/);
  // A server registered on the key since is not quoted with its
  // predecessor's words, nor is the request after it left.
  const reg = await cli(tmp, ['register', '--front', String(px.port), '--port', '9', '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.ok(reg.code === 0 || reg.code === 1, reg.stderr); /* registered; nothing listens on :9 */
  const unreg = await cli(tmp, ['unregister', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(unreg.code, 0, unreg.stderr);
  const after = await curlFrom(tmp.wt.a, px.port);
  assert.equal(after.status, 503, after.body);
  assert.doesNotMatch(after.body, /boom/);
});

test('a hand-run server stopped with Ctrl-C (SIGINT) is not quoted: its end was asked for', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  run.proc.kill('SIGINT'); // forwarded to its server, which ends
  await run.exited;
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.doesNotMatch(r.body, /Its server|last lines/);
});

test('idle_stop never cuts a request in flight', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`, 'idle_stop = 1s'], ['a']);
  const r = await curlFrom(tmp.wt.a, px.port, '/slow?ms=2500');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'done', 'the whole answer came, though it took longer than idle_stop');
  await waitFor(async () => (await lsJson(tmp0)).length === 0, 6000, 'then idle_stop ends the server');
});

// Seen under load in a full run: the server a request had started took
// longer than idle_stop to listen, and the sweep stopped it under the
// waiting request ("exited with status 143 ... before it listened").
test('idle_stop never stops a server still starting for a waiting request', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port} --delay 2500`, `front = ${px.port}`, 'idle_stop = 1s'], ['a']);
  const r = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.worktree, tmp.wt.a);
});

test('a .wtproxy that does not parse: 503 bad-wtproxy-file naming its line, and a fix about the file', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `frnot = ${px.port}`], ['a']);
  const r = await new Promise((resolve) => {
    execFile('curl', ['-sS', '-D', '-', `http://127.0.0.1:${px.port}/`, '-H', `X-Wtproxy-Worktree: ${tmp.wt.a}`],
      { timeout: 20000 }, (err, stdout) => resolve(stdout));
  });
  assert.match(r, /^HTTP\/1\.1 503 /, r);
  assert.match(r, /x-wtproxy-error: bad-wtproxy-file/i, r);
  assert.match(r, /\.wtproxy:2: bad or unknown `frnot`/, r);
  assert.match(r, /^Fix: Correct the line of the \.wtproxy named above/m, 'not the start_timeout advice of a server slow to start');
  assert.ok(r.indexOf('.wtproxy:2:') < r.indexOf('Fix:'), 'the line the fix says is above is above it');
  assert.doesNotMatch(r, /start_timeout/, r);
  assert.deepEqual(await lsJson(tmp0), [], 'nothing was started');
});

// A team tuning its .wtproxy (a root folder for Vite, a flag) edits the
// start line and runs `wtproxy restart`: the restart re-ran the server's
// own old command and said "restarted and ready", so the edit never took.
// Now restart stops a server the daemon started whose start line changed
// (or that runs under another service name than the file now declares),
// says so, and starts it from the file.
test('restart after the .wtproxy start line was edited: the server runs the new line', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`, 'idle_stop = 0'], ['a']);
  const first = await curlFrom(tmp.wt.a, px.port);
  assert.equal(first.status, 200, first.body);
  const pids = path.join(tmp.root, 'pids');
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = ${process.execPath} ${wtServer} {port} --pids ${pids}\nfront = ${px.port}\nidle_stop = 0\n`);
  const r = await cli(tmp0, ['restart'], { cwd: tmp.wt.a, ms: 60000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /server on front \d+ runs `\/bin\/sh -c .*wt-server\.mjs \d+`, not the \.wtproxy's start now \(`.*--pids .*`\): stopping it, to start it from the file/);
  const entries = await lsJson(tmp0);
  assert.equal(entries.length, 1, JSON.stringify(entries));
  assert.match(entries[0].command, / --pids /, 'the new start line runs');
  const again = await curlFrom(tmp.wt.a, px.port);
  assert.equal(again.status, 200, again.body);
  assert.deepEqual(fs.readFileSync(pids, 'utf8').trim().split('\n').map(Number), [JSON.parse(again.body).pid],
    'served by the server of the new line');
  const twice = await cli(tmp0, ['restart'], { cwd: tmp.wt.a, ms: 60000 });
  assert.equal(twice.code, 0, twice.stderr);
  assert.doesNotMatch(twice.stdout, /not the \.wtproxy's start now/, 'unchanged: a plain restart');

  // The file gets sections (an api added next to it): the running server,
  // unnamed, is the file's `web` now; restart --service web reaches it.
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `[service web]\nstart = ${process.execPath} ${wtServer} ` +
    `{port} --pids ${pids}\nfront = ${px.port}\nidle_stop = 0\n`);
  const named = await cli(tmp0, ['restart', '--service', 'web'], { cwd: tmp.wt.a, ms: 60000 });
  assert.equal(named.code, 0, named.stderr);
  assert.match(named.stdout, /runs as service `-`, which the \.wtproxy now names `web`: stopping it, to start it from the file/);
  assert.deepEqual((await lsJson(tmp0)).map((e) => e.service), ['web']);
});

// A gunicorn master killed with kill -9 after its server had served for
// minutes: the next request's 503 said "exited before it listened". Here
// the request waits on the server's closed port (a reload, while its
// wrapper lives: the wrapper is held stopped meanwhile), then its wrapper
// tells the kill.
test('a declared server killed after it served: the 503 says it served, then exited, never "before it listened"', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['a']);
  const served = await curlFrom(tmp.wt.a, px.port);
  assert.equal(served.status, 200, served.body);
  const [entry] = await lsJson(tmp0);
  process.kill(entry.pid, 'SIGSTOP'); // its wrapper: it tells nothing meanwhile
  process.kill(JSON.parse(served.body).pid, 'SIGKILL');
  const asked = curlFrom(tmp.wt.a, px.port);
  await new Promise((res) => setTimeout(res, 500));
  process.kill(entry.pid, 'SIGCONT');
  const r = await asked;
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /: The dev server of this worktree served, then exited/, r.body);
  assert.match(r.body, /exited with status 137: 128\+9, a child killed by signal 9 \(SIGKILL\), as a shell reports it after it had served; its output: /, r.body);
  assert.doesNotMatch(r.body, /before it listened/, r.body);
  assert.match(r.body, /\nFix: Something killed it/, r.body);
  assert.equal((await curlFrom(tmp.wt.a, px.port)).status, 200, 'the next request starts it again');
});

// A start line edited while its server runs (a job worker added to it)
// changed nothing of that server: ls and doctor said ready and verified,
// and tests ran on a server the file no longer describes. doctor now says
// the server runs an older start, with the restart, which runs the new.
test('a .wtproxy start edited while its server runs: doctor names the older start and the restart; restarted, it runs the new', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const start = `${process.execPath} ${wtServer} {port}`;
  const tmp = declaring(t, [`start = ${start}`, `front = ${px.port}`], ['a']);
  const first = await curlFrom(tmp.wt.a, px.port);
  assert.equal(first.status, 200, first.body);
  let doc = await cli(tmp0, ['doctor', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.match(doc.stdout, /^ok +server +registered on front/m, doc.stdout);
  const newer = `WORKER=1 ${start}`;
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${newer}\nfront = ${px.port}\n`);
  doc = await cli(tmp0, ['doctor', '--front', String(px.port)], { cwd: tmp.wt.a });
  // the older as it ran, {port} made its port
  const ran = `${start.replace('{port}', String((await lsJson(tmp0))[0].port))}`;
  assert.ok(doc.stdout.includes(`started from an older start line of the .wtproxy (\`${ran}\`); the file now says \`${newer}\`, which no server here runs`), doc.stdout);
  assert.match(doc.stdout, new RegExp(`fix: wtproxy restart --front ${px.port}$`, 'm'), doc.stdout);
  const restart = await cli(tmp0, ['restart', '--front', String(px.port)], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(restart.code, 0, restart.stdout + restart.stderr);
  doc = await cli(tmp0, ['doctor', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.match(doc.stdout, /^ok +server +registered on front/m, doc.stdout);
});
