// 327: an app that writes into its own worktree as it runs. An Express
// app kept its notes in data/notes.json (gitignored), written at each
// POST: the Node middleware fingerprints every JSON file, so each POST
// made the server stale. Its 409 said only to restart it, which the next
// POST undid; run with --restart-on-stale, it was restarted after every
// POST, losing its sessions, and its log named no file. Now the 409 says
// that git ignores the file, and the exclude that leaves it out of the
// fingerprint; the restart's line in the server's log, and the daemon's
// log, name the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, getWorktree, waitFor, sanitizerClean, lsJson } from './lib/registry.mjs';
import { repoRoot } from './lib/wtproxy.mjs';

const serverJs = `import fs from 'node:fs';
import http from 'node:http';
import { whoami } from ${JSON.stringify(path.join(repoRoot, 'whoami/node/index.mjs'))};
const mw = whoami();
http.createServer((req, res) => mw(req, res, () => {
  if (req.url === '/write') {
    fs.mkdirSync('data', { recursive: true });
    fs.writeFileSync('data/x.json', JSON.stringify({ at: Date.now() }));
  }
  res.end('served by ' + process.pid);
})).listen(Number(process.env.PORT), '127.0.0.1');
`;

function app(t) {
  const tmp = makeWorktrees(t, ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), serverJs);
  fs.writeFileSync(path.join(tmp.wt.a, '.gitignore'), 'data/\n');
  return tmp;
}

const hint = "data/x.json is ignored by git: if the server writes it itself (a data store, uploads, a cache), " +
  "it is not code: leave it out of the fingerprint: app.use(whoami({ exclude: [...DEFAULT_EXCLUDE, '**/data/**'] })), " +
  "with import { whoami, DEFAULT_EXCLUDE } from 'wtproxy-whoami'";

test('a server stale only by a gitignored file it wrote: the 409 says so, with the exclude that leaves it out', async (t) => {
  const tmp = app(t);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: [process.execPath, 'server.mjs'] });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a, '/write')).status, 200);
  const r = await getWorktree(px.port, tmp.wt.a, '/');
  assert.equal(r.status, 409, r.body);
  assert.ok(r.body.includes(`the code changed since (1 file: data/x.json); nothing reloads it`), r.body);
  assert.ok(r.body.includes(hint), r.body);
  assert.ok(r.body.includes(`Restart it: cd ${tmp.wt.a} && wtproxy restart --front ${px.port}`), 'the other choice stays');
  const [entry] = await lsJson(tmp);
  assert.equal(entry.whoami.state, 'stale');
  assert.ok(entry.whoami.detail.includes(hint), `ls says it too: ${entry.whoami.detail}`);

  // a file git does not ignore is code: the refusal as before
  fs.writeFileSync(path.join(tmp.wt.a, 'notes.json'), '{}');
  const code = await getWorktree(px.port, tmp.wt.a, '/');
  assert.equal(code.status, 409, code.body);
  assert.match(code.body, /the code changed since \(2 files: data\/x\.json, notes\.json\)/);
  assert.doesNotMatch(code.body, /ignored by git|DEFAULT_EXCLUDE/);
  sanitizerClean(assert, px.stderr());
});

test('--restart-on-stale: the restart says in the server\'s log and the daemon\'s which files changed', async (t) => {
  const tmp = app(t);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, runArgs: ['--restart-on-stale'], command: [process.execPath, 'server.mjs'] });
  await run.ready;
  const first = await getWorktree(px.port, tmp.wt.a, '/write');
  assert.equal(first.status, 200, first.body);
  const again = await getWorktree(px.port, tmp.wt.a, '/');
  assert.equal(again.status, 200, again.body);
  assert.notEqual(again.body, first.body, 'a new process serves it');
  const line = run.stderr().split('\n').find((l) => l.includes('the daemon asked to restart'));
  assert.ok(line, run.stderr());
  assert.ok(line.includes('restarting it; its code changed since it started (1 file: data/x.json); ' + hint), line);
  await waitFor(() => px.stderr().includes(`restarting ${tmp.wt.a}'s server on front ${px.port} (it runs with --restart-on-stale): its code changed since it started (1 file: data/x.json)`), 5000, 'the daemon log names the file');
  sanitizerClean(assert, px.stderr());
});
