// 319: placing a new caller holds no other request. Opening, stat-ing or
// testing worktree b's .git entry takes 500 ms (fixtures/slow-git-entry.c in
// LD_PRELOAD: a home on NFS, a FUSE mount, a cold disk), and placing a
// process of b reads it at least three times. While curl from b, a caller never seen,
// is being placed, a process of worktree a that is already known (its pid
// cached) keeps opening new connections, and each is answered by a's server
// within 400 ms: the walk runs on the identification worker, never on the
// loop. curl's request waits for its placement and is served by b's server
// (200, never a 503 or a's server).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startPreloadedDaemon, startRun, sanitizerClean, curlFrom } from './lib/registry.mjs';

const SLOW_MS = 500;
const FAST_MS = 400;

// A process of worktree a (cwd a) opening one connection per request until
// the file stop exists; one JSON line per answer: { ms, status, worktree }.
const caller = `
const http = require('http'), fs = require('fs');
const [port, stop] = process.argv.slice(1);
function one() {
  const s = Date.now();
  http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
    let body = '';
    res.on('data', (d) => { body += d; });
    res.on('end', () => {
      let worktree = null;
      try { worktree = JSON.parse(body).worktree; } catch {}
      console.log(JSON.stringify({ ms: Date.now() - s, status: res.statusCode, worktree, body: worktree ? undefined : body }));
      if (fs.existsSync(stop)) process.exit(0);
      setTimeout(one, 20);
    });
  }).on('error', (e) => { console.log(JSON.stringify({ error: e.message })); process.exit(1); });
}
one();
`;

function startCaller(t, cwd, port, stop) {
  const proc = spawn(process.execPath, ['-e', caller, String(port), stop], { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  const lines = [];
  let buf = '';
  proc.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { lines.push(JSON.parse(buf.slice(0, i))); buf = buf.slice(i + 1); }
  });
  const exited = new Promise((res) => proc.on('exit', (code) => res(code)));
  return { lines, exited };
}

async function until(fn, ms, what) {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("a caller placed slowly (its worktree's .git on a slow filesystem) holds no known caller's request", async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const flag = path.join(tmp.root, 'slow-now');
  const px = await startPreloadedDaemon(t, tmp, 'slow-git-entry', {
    WTPROXY_TEST_SLOW_DIR: tmp.wt.b, WTPROXY_TEST_SLOW_FLAG: flag, WTPROXY_TEST_SLOW_MS: String(SLOW_MS),
  });
  const runs = ['a', 'b'].map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: px.port }));
  await Promise.all(runs.map((r) => r.ready));

  // a's caller is placed (at full speed) and answered by a's server.
  const stop = path.join(tmp.root, 'stop');
  const a = startCaller(t, tmp.wt.a, px.port, stop);
  await until(() => a.lines.length >= 3, 20000, "a's first answers");
  for (const l of a.lines) assert.equal(l.worktree, tmp.wt.a, JSON.stringify(l));

  fs.writeFileSync(flag, '');
  const before = a.lines.length;
  const b = await curlFrom(tmp.wt.b, px.port);
  const during = a.lines.slice(before);
  fs.writeFileSync(stop, '');
  assert.equal(await a.exited, 0, "a's caller ran to its end");

  const took = during.map((l) => l.ms);
  t.diagnostic(`b's request took ${b.ms} ms; meanwhile ${took.length} requests from a, worst ${Math.max(...took)} ms`);
  assert.equal(b.status, 200, b.body);
  assert.equal(b.worktree, tmp.wt.b, "curl from b is served by b's server");
  assert.ok(b.ms >= SLOW_MS, `b's placement waited for its slow .git (${b.ms} ms)`);
  assert.ok(took.length >= 3, `a's caller was answered while b was placed: ${took.length}`);
  for (const l of during) {
    assert.equal(l.status, 200, JSON.stringify(l));
    assert.equal(l.worktree, tmp.wt.a, "a's requests still reach a's server");
  }
  assert.ok(Math.max(...took) < FAST_MS, `each request from a answered within ${FAST_MS} ms: ${took.join(', ')}`);
  sanitizerClean(assert, px.stderr());
});
