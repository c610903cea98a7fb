// 118: after a restart, what `wtproxy ls`, `ls --json` and the dashboard
// say of the server's code is true: the old process's verdict ("stale",
// naming the edit the restart was for) is dropped the moment the restart
// is asked ("unchecked"), and the daemon asks the new server's /__whoami
// itself once it is ready, so that `ls` says "verified" with no request
// sent to it first. `wtproxy restart` waits for that verdict and prints
// it; a server that came back stale (a file edited while it started) is
// said so, naming the file, with status 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, cli, lsJson, getWorktree, waitFor, control,
} from './lib/registry.mjs';
import { request } from './lib/ctl.mjs';
import { removeAfter } from './lib/cleanup.mjs';

// A server of wt-a behind `wtproxy run`, verified, then made stale by an
// edit: ls says "stale", as the 409 did.
async function staleServer(t, serverArgs = []) {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '200ms']);
  const app = path.join(tmp.wt.a, 'app.py');
  fs.writeFileSync(app, 'print(1)\n');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs });
  await run.ready;
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  await new Promise((r) => setTimeout(r, 20));
  fs.writeFileSync(app, 'print(2)\n');
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 409);
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'stale', JSON.stringify(e.whoami));
  return { tmp, px, app, run };
}

// Once the server pid has taken its fingerprint: its `wtproxy fingerprint`
// child, spawned as it starts, has come and gone (or was never seen in 1 s).
async function fingerprinted(pid) {
  const children = () => fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  const start = Date.now();
  let seen = false;
  await waitFor(() => {
    seen ||= children() !== '';
    return seen ? children() === '' : Date.now() - start > 1000;
  }, 10000, `server ${pid}'s fingerprint`);
}

test('a restart drops the old verdict at once, and ls says verified without a request', async (t) => {
  const { tmp, px } = await staleServer(t);
  const [before] = await lsJson(tmp);
  const relayed = before.requests;
  const asked = Date.now();
  // The restart op's own reply already shows the old verdict dropped.
  const op = await control(tmp.control, { op: 'restart', worktree: tmp.wt.a });
  assert.equal(op.ok, true, JSON.stringify(op));
  assert.equal(op.restarted[0].whoami.state, 'unchecked', JSON.stringify(op.restarted[0].whoami));
  assert.match(op.restarted[0].whoami.detail, /restarting/);
  const during = (await lsJson(tmp))[0].whoami;
  assert.notEqual(during.state, 'stale', `the old process's verdict shown: ${JSON.stringify(during)}`);
  // Ready again: the daemon verifies it by itself; no request is sent here.
  await waitFor(async () => (await lsJson(tmp))[0].whoami?.state === 'verified', 10000,
    'ls says verified with no request to the new server');
  const [e] = await lsJson(tmp);
  assert.equal(e.state, 'ready');
  assert.equal(e.requests, relayed, 'a request reached the server: the verdict was not the daemon\'s own');
  // Its start moved with the restart (ls's AGE and the dashboard's count
  // from it); its registration did not.
  assert.equal(e.registered_ms, before.registered_ms);
  assert.ok(e.started_ms >= asked - 5, `started_ms ${e.started_ms} moved to the restart at ${asked}`);
  const ls = await cli(tmp, ['ls']);
  assert.match(ls.stdout, /ready\s+verified\s/, ls.stdout);
  const dash = JSON.parse((await request(px.port, 'GET', '/__wtproxy/api/backends', { Host: `127.0.0.1:${px.port}` })).body);
  assert.equal(dash[0].status, 'ready', JSON.stringify(dash[0]));
  assert.equal(dash[0].whoami.state, 'verified');
  assert.match(dash[0].status_reason, /serves this worktree's current code/);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
});

test('wtproxy restart prints the new verdict: verified', async (t) => {
  const { tmp } = await staleServer(t);
  const r = await cli(tmp, ['restart'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /restarted and ready in \d+\.\d s, verified: serves the code on disk/, r.stdout);
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'verified', 'ls agrees at once');
});

test('a restart that brings up stale code (an edit while it started) says so, naming the file', async (t) => {
  // The server takes its fingerprint as it starts and listens 3 s later:
  // an edit in between is code it did not load.
  const pids = path.join(fs.mkdtempSync(path.join('/tmp', 'wtp118-')), 'pids');
  removeAfter(t, path.dirname(pids));
  const { tmp, app } = await staleServer(t, ['--pids', pids, '--delay', '3000']);
  const restart = cli(tmp, ['restart'], { cwd: tmp.wt.a, ms: 40000 });
  await waitFor(() => fs.readFileSync(pids, 'utf8').trim().split('\n').length === 2, 15000, 'the new server started');
  await fingerprinted(Number(fs.readFileSync(pids, 'utf8').trim().split('\n')[1]));
  fs.writeFileSync(app, 'print(3)\n');
  const r = await restart;
  assert.equal(r.code, 1, r.stdout + r.stderr);
  // Stale said once, with since when: not "but stale: stale since".
  assert.match(r.stderr, /restarted and ready in \d+\.\d s, but stale since \d\d:\d\d:\d\d, when the code on disk changed: .*the code changed since \(1 file: app\.py\)/, r.stderr);
  assert.doesNotMatch(r.stderr, /stale: stale/, r.stderr);
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'stale', JSON.stringify(e.whoami));
});
