// 146: a Next.js app (next 14, App Router, a real `next dev` from
// tests/node_modules) adopted by `wtproxy init --apply` alone, in two
// linked worktrees whose page headings differ:
// 1. init writes the .wtproxy (with ready = /__whoami), the route
//    app/%5F%5Fwhoami/route.js and the next.config.mjs wrap, and a second
//    run has nothing to change;
// 2. a request from each worktree (curl, placed by its cwd) gets its own
//    heading: wt-a's server started by the daemon from the .wtproxy,
//    wt-b's by `wtproxy run` (no --restart-on-stale, so nothing but next
//    dev itself can bring an edit in);
// 3. /__whoami through the daemon names the worktree with the fingerprint
//    `wtproxy fingerprint` computes, and the gate says verified;
// 4. an edit to the page followed at once by a request is served fresh by
//    the same server (never the old page, never a refusal), 5 times;
// 5. a write next dev never takes in (its mtime kept, as cp -p and rsync
//    -t do: its watcher sees nothing new) leaves the server on the old
//    code, and wtproxy refuses it with 409 stale-code naming the file,
//    where a fingerprint of the disk at each ask would have verified it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './lib/wtproxy.mjs';
import { git, makeWorktrees, startDaemon, cli, waitFor, sanitizerClean, curlFrom } from './lib/registry.mjs';
import {
  page, headingOf, appFiles, writeApp, runNext, entryOf, ownPages, verifiedAsDisk, editsServedFresh,
} from './lib/next-app.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const modules = path.join(repoRoot, 'tests/node_modules');
const EDITS = 5;
const files = {
  ...appFiles({ next: '^14.2.0', react: '^18.3.0', 'react-dom': '^18.3.0' }),
  'app/api/hello/route.js': "export function GET() {\n  return Response.json({ hello: 'shop' });\n}\n",
};

// The app's node_modules as `npm install` and `npm link wtproxy-whoami`
// leave it, from the test suite's packages.
function linkModules(dir) {
  const nm = path.join(dir, 'node_modules');
  fs.mkdirSync(path.join(nm, '.bin'), { recursive: true });
  for (const p of ['next', 'react', 'react-dom']) fs.symlinkSync(path.join(modules, p), path.join(nm, p));
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(nm, 'wtproxy-whoami'));
  fs.symlinkSync('../next/dist/bin/next', path.join(nm, '.bin/next'));
}

test('a Next app adopted by wtproxy init: its own page per worktree, verified, edits served fresh, unloaded code refused', async (t) => {
  const t0 = Date.now();
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // next dev's processes, if any are left
  writeApp(tmp.repo, files);
  const px = await startDaemon(t, tmp, ['--stale-grace', '1s'], { env: { NEXT_TELEMETRY_DISABLED: '1' } });

  // 1. init in the main checkout, committed; the worktrees branch from it.
  linkModules(tmp.repo);
  let r = await cli(tmp, ['init', '--apply', '--front', String(px.port)], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  sanitizerClean(assert, r.stderr);
  assert.match(r.stdout, /^wrote app\/%5F%5Fwhoami\/route\.js$/m);
  assert.match(r.stdout, /^wrote next\.config\.mjs$/m);
  assert.match(fs.readFileSync(path.join(tmp.repo, '.wtproxy'), 'utf8'), /^ready = \/__whoami$/m);
  assert.match(fs.readFileSync(path.join(tmp.repo, 'next.config.mjs'), 'utf8'),
    /^import \{ withWtproxyWhoami \} from 'wtproxy-whoami\/next';$[^]*^export default withWtproxyWhoami\(nextConfig\);$/m);
  r = await cli(tmp, ['init', '--front', String(px.port)], { cwd: tmp.repo });
  assert.match(r.stdout, /^nothing to change$/m);
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'adopt wtproxy');
  for (const n of ['a', 'b']) {
    tmp.wt[n] = path.join(tmp.root, `wt-${n}`);
    git(tmp.repo, 'worktree', 'add', '-q', tmp.wt[n], '-b', n);
    linkModules(tmp.wt[n]);
    fs.writeFileSync(path.join(tmp.wt[n], 'app/page.js'), page(`Shop ${n}`));
  }
  const { a, b } = tmp.wt;

  // next dev writes .next/ while it runs: stopped before the folder goes.
  let run = null;
  try {
    // 2. wt-b's server by wtproxy run, wt-a's by the daemon at a's request.
    run = await runNext(t, tmp, b, px.port);
    await ownPages(tmp, px.port);
    const api = await curlFrom(a, px.port, '/api/hello', { timeout: 60000 });
    assert.deepEqual([api.status, JSON.parse(api.body)], [200, { hello: 'shop' }]);
    t.diagnostic(`two next dev servers up and their pages compiled: ${Date.now() - t0} ms`);

    // 3. /__whoami through the daemon, against wtproxy fingerprint.
    await verifiedAsDisk(tmp, px.port);

    // 4. Edits, each followed at once by a request: the new page from the
    // same server. wt-b's cannot be restarted by wtproxy.
    const held = await editsServedFresh(tmp, px.port, EDITS);
    t.diagnostic(`edit -> new page: ${[...held.a, ...held.b].join(', ')} ms`);

    // 5. A write next dev does not see: the same mtime as before. Its
    // watcher may still catch one (an inotify event it handles after the
    // mtime was put back, on a loaded machine): then the new page is
    // served, which is right too; the write is tried again, a second
    // later, until one goes unseen.
    const file = path.join(b, 'app/page.js');
    let stale, unseen;
    for (let i = 1; i <= 4 && stale?.status !== 409; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      const { atime, mtime } = fs.statSync(file);
      unseen = `Shop b unseen ${i}`;
      fs.writeFileSync(file, page(unseen));
      fs.utimesSync(file, atime, mtime);
      stale = await curlFrom(b, px.port, '/');
      if (stale.status === 200) assert.equal(headingOf(stale.body), unseen, 'served: then the new page, never the old');
    }
    assert.equal(stale.status, 409, stale.body);
    assert.match(stale.body, /stale-code|older code|code changed/i);
    assert.match(stale.body, /app\/page\.js/, 'names the file');
    assert.match(stale.body, new RegExp(`cd ${b} && wtproxy restart`));
    const direct = await waitFor(async () => {
      const port = (await entryOf(tmp, b)).port;
      const res = await fetch(`http://127.0.0.1:${port}/`);
      return res.status === 200 && res.text();
    }, 10000, 'wt-b\'s server asked directly');
    assert.notEqual(headingOf(direct), unseen, 'next dev still serves an older page: the 409 was right');
    await waitFor(() => /app\/page\.js changed but next dev has not recompiled it/.test(run.output()), 10000,
      'next dev\'s log says why /__whoami keeps the older fingerprint');
    sanitizerClean(assert, px.stderr());
    t.diagnostic(`whole test: ${Date.now() - t0} ms`);
  } finally {
    await run?.stop();
    await px.stop('SIGKILL');
    await waitFor(() => killUnder(tmp.root) === 0, 5000, 'the servers the daemon started, stopped');
  }
});
