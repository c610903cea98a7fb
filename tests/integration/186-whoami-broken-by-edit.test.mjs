// 186: a server verified, then broken by an edit, answering every path,
// /__whoami too, with a 500 (hugo server after `sed -i` of a stylesheet or
// a template error, adopted by whoami-protocol's "fingerprint before
// start"). wtproxy said 502 no-whoami, "add the whoami middleware ... or
// --trust-registry", doctor "the whoami middleware is missing or broken",
// and a server run with --restart-on-stale stayed broken until a manual
// `wtproxy restart`. Now: a 503 saying it answered /__whoami until its
// files changed and now answers 500, the change broke it, the first lines
// of its error page, and the fix (fix the error and save, or `wtproxy
// restart --front N`); `ls` says broken, doctor the same; with
// --restart-on-stale it is restarted once at the request, which the new
// process serves; a new process that answers 500 too is refused saying
// so, never restarted in a loop, and restarted again once the fix is saved
// (ls following the fix with no request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, getWorktree, cli, lsJson, waitFor, sanitizerClean,
} from './lib/registry.mjs';

const GRACE = ['--reload-grace', '1s'];

// An atomic-rename save, as `sed -i` makes it: a new file renamed over
// the old, after the server's start (mtimes are compared to the ms). A
// .py file: the test server fingerprints the default patterns.
async function save(file, text) {
  await new Promise((r) => setTimeout(r, 50));
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

const pidsOf = (file) => fs.readFileSync(file, 'utf8').trim().split('\n');

// The 503 of a server an edit broke: what happened, its error, the fix;
// never the refusal of a server without the middleware.
function assertBroken(r, front) {
  assert.equal(r.status, 503, `${r.status} ${r.body}`);
  assert.equal(r.headers['x-wtproxy-error'], 'backend-not-ready', JSON.stringify(r.headers));
  assert.match(r.body, /answered GET \/__whoami for \S+ until its files changed \(1 file: theme\.py\), and now answers it with HTTP 500: the change broke it/);
  assert.match(r.body, /Error: failed to render pages\nlayouts\/index\.html:3: unexpected "}"/, 'its error page, as text');
  assert.doesNotMatch(r.body, /p \{ color: red \}/, 'not its page\'s style');
  assert.match(r.body, /Fix the error and save/);
  assert.match(r.body, new RegExp(`wtproxy restart --front ${front}`));
  assert.doesNotMatch(r.body, /whoami middleware|trust-registry|wtproxy init/);
}

test('a verified server that answers 500 after an edit: 503 saying the change broke it, ls and doctor too', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, GRACE);
  const theme = path.join(tmp.wt.a, 'theme.py');
  fs.writeFileSync(theme, 'margin = "4px"\n');
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, serverArgs: ['--broken-by', theme], stopSignal: 'SIGTERM',
  });
  await run.ready;
  const first = await getWorktree(px.port, tmp.wt.a);
  assert.equal(first.status, 200, first.body);
  await save(theme, 'margin = "5px"\n');
  const r = await getWorktree(px.port, tmp.wt.a);
  assertBroken(r, px.port);
  assert.match(r.body, /Fix the error and save \(a server that reloads itself is then served again\), or restart it: cd \S+ && wtproxy restart --front \d+/);
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'broken', JSON.stringify(e.whoami));
  const doc = await cli(tmp, ['doctor', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.match(doc.stdout, /__whoami answered 500; it answered \/__whoami until its files changed: the change broke it/, doc.stdout);
  assert.match(doc.stdout, /fix the error and save, or restart it: wtproxy restart --front/, doc.stdout);
  assert.doesNotMatch(doc.stdout, /middleware is missing/, doc.stdout);
  sanitizerClean(assert, px.stderr());
});

test('--restart-on-stale: a server an edit broke is restarted once at the request, which its new process serves', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, GRACE);
  const theme = path.join(tmp.wt.a, 'theme.py');
  const pids = path.join(tmp.root, 'pids');
  fs.writeFileSync(theme, 'margin = "4px"\n');
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, runArgs: ['--restart-on-stale'], stopSignal: 'SIGTERM',
    serverArgs: ['--broken-by', theme, '--pids', pids],
  });
  await run.ready;
  const first = await getWorktree(px.port, tmp.wt.a);
  assert.equal(first.status, 200, first.body);
  await save(theme, 'margin = "5px"\n');
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, `${r.status} ${r.body}`);
  assert.notEqual(JSON.parse(r.body).pid, JSON.parse(first.body).pid, 'a new process serves it');
  assert.equal(pidsOf(pids).length, 2, 'restarted once');
  sanitizerClean(assert, px.stderr());
});

test('--restart-on-stale: a restarted process that answers 500 too is refused saying so, not restarted again until the fix is saved', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, GRACE);
  const theme = path.join(tmp.wt.a, 'theme.py');
  const pids = path.join(tmp.root, 'pids');
  fs.writeFileSync(theme, 'margin = "4px"\n');
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, runArgs: ['--restart-on-stale'], stopSignal: 'SIGTERM',
    serverArgs: ['--fail-while', path.join(tmp.wt.a, 'broken.py'), '--pids', pids],
  });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await save(path.join(tmp.wt.a, 'broken.py'), ''); // the server's error from now on
  await save(theme, 'margin = "5px"\n');
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 503, `${r.status} ${r.body}`);
  // broken.py is named when its mtime (the kernel's coarse clock, a few
  // ms behind) is after the last good answer; theme.py, saved later, is
  assert.match(r.body, /until its files changed \((2 files: broken\.py, |1 file: )theme\.py\), and now answers it with HTTP 500: the change broke it/);
  assert.match(r.body, /wtproxy restarted it after the change, and its new process answers HTTP 500 too: the error is in its files\. Fix the error and save \(wtproxy restarts it at the next request after that\)/);
  assert.equal(pidsOf(pids).length, 2, 'restarted once');
  const again = await getWorktree(px.port, tmp.wt.a);
  assert.equal(again.status, 503, again.body);
  assert.equal(pidsOf(pids).length, 2, 'not restarted again without a change');
  assert.equal((await lsJson(tmp))[0].whoami.state, 'broken');
  fs.rmSync(path.join(tmp.wt.a, 'broken.py')); // the fix, saved
  // ls follows it with no request: the new process answers again, with
  // the code it started with (broken.py then): stale
  await waitFor(async () => (await lsJson(tmp))[0].whoami.state === 'stale', 10000, 'ls says stale, not broken');
  await waitFor(async () => {
    const x = await getWorktree(px.port, tmp.wt.a);
    return x.status === 200 ? x : new Error(`${x.status} ${x.body}`);
  }, 20000, 'served once the fix is saved');
  sanitizerClean(assert, px.stderr());
});

// An upgraded connection (hugo server's live-reload WebSocket) opened
// while its server was verified went on talking after an edit broke the
// server, while every new request got the 503. Its next bytes close it,
// kept as a refusal that says the change broke it and the fix.
test('an open tunnel to a server an edit broke is closed at its next bytes, and kept as a refusal', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, GRACE);
  const theme = path.join(tmp.wt.a, 'theme.py');
  fs.writeFileSync(theme, 'margin = "4px"\n');
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, serverArgs: ['--broken-by', theme], stopSignal: 'SIGTERM',
  });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
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
  await save(theme, 'margin = "5px"\n');
  assertBroken(await getWorktree(px.port, tmp.wt.a), px.port); // a new request: refused
  sock.write('two');
  const open = await Promise.race([ended.then(() => false), new Promise((r) => setTimeout(() => r(true), 10000))]);
  assert.equal(open, false, `the tunnel stayed open; through it: ${JSON.stringify(got)}`);
  assert.doesNotMatch(got, /two/, 'the broken server did not answer');
  const refusals = JSON.parse((await cli(tmp, ['refusals', '--json', '--since', '1m'], { cwd: tmp.wt.a })).stdout);
  const closed = refusals.find((r) => r.request === 'GET /echo');
  assert.ok(closed, JSON.stringify(refusals));
  assert.equal(closed.reason, 'backend-not-ready');
  assert.match(closed.detail, new RegExp(`^closed this upgraded connection \\(a WebSocket\\) to the dev server of ${tmp.wt.a} \\(pid \\d+\\): .*now answers it with HTTP 500`), closed.detail);
  assert.match(closed.fix, new RegExp(`^fix the error and save, or cd ${tmp.wt.a} && wtproxy restart --front ${px.port}, then connect again`), closed.fix);
  sanitizerClean(assert, px.stderr());
});
