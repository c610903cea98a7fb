// 136: which .wtproxy a worktree's request starts from, and what a 503
// says when it starts nothing. A .wtproxy committed on a linked worktree's
// branch alone (main does not have it yet) starts that worktree's server
// for a caller placed by its cwd, and `wtproxy why` places that caller as
// the daemon does. A worktree whose branch predates the .wtproxy that main
// has gets a 503 naming the main checkout's file and the command that
// brings it in; pasted, the next request starts the server. A .wtproxy
// that declares servers on other fronts only says which.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, wtServer, git, cli, lsJson, curlFrom, getWorktree, waitFor } from './lib/registry.mjs';

const startLine = `start = ${process.execPath} ${wtServer} {port}`;

test('a .wtproxy on a linked worktree\'s branch alone starts its server for a caller placed by its cwd', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `${startLine}\nfront = ${px.port}\nidle_stop = 30s\n`);
  git(tmp.wt.a, 'add', '.wtproxy');
  git(tmp.wt.a, 'commit', '-q', '-m', 'declare the dev server on this branch');

  const why = await cli(tmp, ['why', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.match(why.stdout, new RegExp(`worktree ${tmp.wt.a}\\n`), `why places the caller as the daemon will:\n${why.stdout}${why.stderr}`);

  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.worktree, tmp.wt.a, 'served by wt-a\'s own started server');
  assert.match(px.stderr(), /started .*wt-a's server from its \.wtproxy/);

  // wt-b's branch has no .wtproxy: placed in wt-b all the same (its
  // repository is known now), never served by wt-a's server.
  const b = await curlFrom(tmp.wt.b, px.port);
  assert.equal(b.status, 503, b.body);
  assert.ok(b.body.includes(`you called from worktree ${tmp.wt.b} `), b.body);
});

test('a worktree whose branch predates main\'s .wtproxy: the 503 names the file and the command that brings it', async (t) => {
  const tmp = makeWorktrees(t, ['old']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), `${startLine}\nfront = ${px.port}\nidle_stop = 30s\n`);
  git(tmp.repo, 'add', '.wtproxy');
  git(tmp.repo, 'commit', '-q', '-m', 'declare the dev server');

  const r = await curlFrom(tmp.wt.old, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /no-backend|No dev server/);
  const main = path.join(tmp.repo, '.wtproxy');
  assert.ok(r.body.includes(`${tmp.wt.old} (branch old) has no .wtproxy, and the daemon starts a worktree's servers only from its own: ${main} is in the main checkout only.`), r.body);
  const fix = /Bring it here: (cp \S+ \S+)/.exec(r.body);
  assert.ok(fix, `the 503 gives the command:\n${r.body}`);
  // The Fix line is that command too, not `wtproxy run --front N --` with no
  // command (a SvelteKit user pasted it: "give the command to run after --").
  assert.ok(r.body.includes(`\nFix: ${fix[1]} (the daemon then starts the server it declares at the next request)`), r.body);
  assert.ok(!r.body.includes('<server command with {port}>'), r.body);
  execSync(fix[1], { cwd: tmp.wt.old }); // what an agent pastes

  const after = await curlFrom(tmp.wt.old, px.port);
  assert.equal(after.status, 200, after.body);
  assert.equal(after.worktree, tmp.wt.old);
});

// A caller whose folder, its worktree, was removed under it: said so, as
// `wtproxy ls` says it of a server, never "in no worktree wtproxy knows"
// with a default backend (--backend) as the fix, which would serve it
// another worktree's code.
test('a caller in a removed worktree: the 503 says it was removed, and the fix is a worktree that exists', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'gone']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), `${startLine}\nfront = ${px.port}\nidle_stop = 30s\n`);
  git(tmp.repo, 'add', '.wtproxy');
  git(tmp.repo, 'commit', '-q', '-m', 'declare the dev server');
  const body = execSync(`git -C ${tmp.repo} worktree remove --force ${tmp.wt.gone} && curl -sS http://127.0.0.1:${px.port}/`,
    { cwd: tmp.wt.gone, shell: '/bin/sh', encoding: 'utf8' });
  assert.match(body, /^wtproxy: 503 /, body);
  assert.ok(body.includes(`runs in ${tmp.wt.gone}, which was removed (git worktree remove, or deleted) after it started there`), body);
  assert.ok(!body.includes('no worktree wtproxy knows'), body);
  assert.ok(!body.includes('--backend'), `no default backend offered:\n${body}`);
  assert.match(body, /\nFix: Run it from a worktree that exists: cd \/path\/to\/worktree/);
  assert.equal((await lsJson(tmp)).length, 0, 'nothing was started');
});

// The same from a coordinator's shell in the main checkout, which starts
// the worktree's run there (`cd wt && npx playwright test`) and removes the
// worktree while it runs: the walk up from the caller skipped its removed
// folder and reached that shell, and the main checkout's server answered a
// removed branch's tests (a test that must fail passed). A removed folder
// now stops the walk.
test('a caller in a removed worktree whose parent runs in the main checkout: refused, never the main checkout\'s server', async (t) => {
  const tmp = makeWorktrees(t, ['gone2']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), `${startLine}\nfront = ${px.port}\nidle_stop = 30s\n`);
  git(tmp.repo, 'add', '.wtproxy');
  git(tmp.repo, 'commit', '-q', '-m', 'declare the dev server');
  const main = await curlFrom(tmp.repo, px.port);
  assert.equal(main.status, 200, main.body);
  const inner = `cd ${tmp.wt.gone2} && git -C ${tmp.repo} worktree remove --force ${tmp.wt.gone2} && curl -sS http://127.0.0.1:${px.port}/`;
  const body = execSync(`sh -c '${inner}'; true`, { cwd: tmp.repo, shell: '/bin/sh', encoding: 'utf8' });
  assert.match(body, /^wtproxy: 503 /, body);
  assert.ok(body.includes(`runs in ${tmp.wt.gone2}, which was removed (git worktree remove, or deleted) after it started there`), body);
  assert.match(body, /\nFix: Run it from a worktree that exists: cd \/path\/to\/worktree/);
});

// A client in cwd that sends each GET / over one kept-alive connection
// (a browser's page does): ask() resolves with { status, body }.
function keptAliveClient(t, cwd, port) {
  const src = `const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
require('node:readline').createInterface({ input: process.stdin }).on('line', () =>
  http.get({ host: '127.0.0.1', port: ${port}, path: '/', agent }, (res) => {
    let body = ''; res.on('data', (d) => { body += d; });
    res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
  }));`;
  const proc = spawn(process.execPath, ['-e', src], { cwd, stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => proc.kill('SIGKILL'));
  let out = '';
  const waiting = [];
  proc.stdout.on('data', (d) => {
    out += d;
    for (let i; (i = out.indexOf('\n')) >= 0; out = out.slice(i + 1)) waiting.shift()(JSON.parse(out.slice(0, i)));
  });
  return { ask: () => new Promise((res) => { waiting.push(res); proc.stdin.write('\n'); }) };
}

// A page open in a worktree whose server ran, then `git worktree remove`:
// its next request, on the connection it kept, was told "Start yours from
// its worktree: wtproxy run ..." (the worktree is gone), and so was a
// request naming it; a second later, on a new connection, the right text.
test('a removed worktree\'s caller on a kept connection, or a request naming it: the 503 says it was removed, never "start yours"', async (t) => {
  const tmp = makeWorktrees(t, ['c']);
  const px = await startDaemon(t, tmp);
  await startRun(t, tmp, { cwd: tmp.wt.c, front: px.port }).ready;
  const page = keptAliveClient(t, tmp.wt.c, px.port);
  assert.equal((await page.ask()).status, 200);
  git(tmp.repo, 'worktree', 'remove', '--force', tmp.wt.c);
  await waitFor(async () => (await lsJson(tmp)).length === 0, 10000, 'its server stopped');
  const r = await page.ask();
  assert.equal(r.status, 503, r.body);
  assert.ok(r.body.includes(`runs in ${tmp.wt.c}, which was removed (git worktree remove, or deleted) after it started there`), r.body);
  assert.match(r.body, /\nFix: Run it from a worktree that exists: cd \/path\/to\/worktree/, r.body);
  assert.doesNotMatch(r.body, /Start yours|wtproxy run/, r.body);
  const named = await getWorktree(px.port, tmp.wt.c);
  assert.equal(named.status, 503, named.body);
  assert.ok(named.body.includes(`no dev server is registered for worktree ${tmp.wt.c} on front :${px.port}, and that worktree was removed (git worktree remove, or deleted): nothing starts there.`), named.body);
  assert.match(named.body, /\nFix: Name a worktree that exists: X-Wtproxy-Worktree: \/path\/to\/worktree/, named.body);
  assert.doesNotMatch(named.body, /Start yours|wtproxy run/, named.body);
});

test('a .wtproxy that declares servers on other fronts only: the 503 says which', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'),
    `[service web]\n${startLine}\nfront = 65001\n\n[service api]\n${startLine}\nfront = 65002\n`);
  fs.copyFileSync(path.join(tmp.repo, '.wtproxy'), path.join(tmp.wt.a, '.wtproxy'));
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.ok(r.body.includes(`${path.join(tmp.wt.a, '.wtproxy')} declares no server on front :${px.port}, only on :65001 (web), :65002 (api): send this request to that port, or give the server meant for this one front = ${px.port} there.`), r.body);
  assert.equal((await lsJson(tmp)).length, 0, 'nothing was started');
});
