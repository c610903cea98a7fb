// 148: a Next.js 16 app (App Router, React 19, a real `next dev` from
// tests/next16/node_modules), adopted by `wtproxy init --apply` alone, in
// two linked worktrees whose page headings differ:
// 1. init writes the .wtproxy (plain `next dev`: Turbopack, Next 16's
//    default), the route app/%5F%5Fwhoami/route.js, the .gitignore beside
//    it and the next.config.mjs wrap; a second run has nothing to change;
// 2. a request from each worktree (curl, placed by its cwd) gets its own
//    heading: wt-a's server started by the daemon from the .wtproxy (under
//    Turbopack), wt-b's by `wtproxy run` with `next dev --webpack` (the
//    webpack path on Next 16);
// 3. /__whoami through the daemon names the worktree with the fingerprint
//    `wtproxy fingerprint` computes, and the gate says verified;
// 4. edits to the page, each followed at once by a request, are served
//    fresh by the same servers: never the old page (which a /__whoami
//    saying verified too early lets through), never a refusal;
// 5. the stamp next dev rewrites under Turbopack leaves `git status` clean.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { repoRoot, wtproxyBin } from './lib/wtproxy.mjs';
import { git, makeWorktrees, startDaemon, cli, cliEnv, lsJson, waitFor, sanitizerClean, curlFrom } from './lib/registry.mjs';
import { diskFingerprint, patternArgs } from './lib/whoami.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const modules = path.join(repoRoot, 'tests/next16/node_modules');
const EDITS = 8;
const page = (heading) => `export default function Home() {\n  return <h1>${heading}</h1>;\n}\n`;
const headingOf = (body) => (/<h1>([^<]*)<\/h1>/.exec(body) || [])[1];

const files = {
  'package.json': JSON.stringify({ name: 'shop', private: true, scripts: { dev: 'next dev' },
    dependencies: { next: '^16.5.0', react: '^19.3.1', 'react-dom': '^19.3.1' } }, null, 2),
  '.gitignore': 'node_modules\n.next\nAGENTS.md\n',
  'next.config.mjs': "/** @type {import('next').NextConfig} */\nconst nextConfig = {};\n\nexport default nextConfig;\n",
  'app/layout.js': 'export default function RootLayout({ children }) {\n  return (<html lang="en"><body>{children}</body></html>);\n}\n',
  'app/page.js': page('Shop main'),
};

// The app's node_modules as `npm install` and `npm link wtproxy-whoami`
// leave it: a folder of its own (Turbopack compiles nothing from outside
// the app, so no symlink to tests/next16), hard links to the suite's.
function linkModules(dir) {
  execFileSync('cp', ['-al', modules, path.join(dir, 'node_modules')]);
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(dir, 'node_modules/wtproxy-whoami'));
}

// `wtproxy run --front FRONT --health /__whoami -- next dev --webpack` in
// dir; resolves once ready with { output(), stop() }.
async function runWebpack(t, tmp, dir, front) {
  const args = ['run', '--front', String(front), '--health', '/__whoami', '--', 'node_modules/.bin/next', 'dev', '--webpack', '--hostname', '127.0.0.1', '--port', '{port}'];
  const proc = spawn(wtproxyBin, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp), NEXT_TELEMETRY_DISABLED: '1' } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((res) => proc.on('exit', res));
  const stop = () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); return exited; };
  t.after(stop);
  await waitFor(() => {
    if (proc.exitCode !== null) throw new Error(`wtproxy run exited ${proc.exitCode}:\n${out}`);
    return /is ready on 127\.0\.0\.1:\d+/.test(out);
  }, 120000, `next dev --webpack under wtproxy run\n${out}`);
  return { output: () => out, stop };
}

const entryOf = async (tmp, wt) => (await lsJson(tmp)).find((e) => e.worktree === wt);
const servingPid = async (wt, port) => JSON.parse((await curlFrom(wt, port, '/__whoami')).body).pid;

test('a Next 16 app adopted by wtproxy init: Turbopack and webpack, its own page per worktree, verified, edits served fresh', async (t) => {
  assert.ok(fs.existsSync(path.join(modules, 'next/package.json')),
    `${modules} has no next: scripts/bootstrap installs it (cd tests/next16 && npm ci)`);
  const t0 = Date.now();
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // next dev's processes, if any are left
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(tmp.repo, name)), { recursive: true });
    fs.writeFileSync(path.join(tmp.repo, name), text);
  }
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'the app');
  const px = await startDaemon(t, tmp, ['--stale-grace', '2s'], { env: { NEXT_TELEMETRY_DISABLED: '1' } });

  // 1. init in the main checkout, committed; the worktrees branch from it.
  let r = await cli(tmp, ['init', '--apply', '--front', String(px.port)], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  sanitizerClean(assert, r.stderr);
  for (const f of ['app/%5F%5Fwhoami/route.js', 'app/%5F%5Fwhoami/.gitignore', 'next.config.mjs']) {
    assert.match(r.stdout, new RegExp(`^wrote ${f.replace(/\./g, '\\.')}$`, 'm'));
  }
  assert.match(fs.readFileSync(path.join(tmp.repo, '.wtproxy'), 'utf8'),
    /^start = node_modules\/\.bin\/next dev --hostname 127\.0\.0\.1 --port \{port\}\nfront = \d+\nready = \/__whoami$/m);
  r = await cli(tmp, ['init', '--front', String(px.port)], { cwd: tmp.repo });
  assert.match(r.stdout, /^nothing to change$/m);
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'adopt wtproxy');
  for (const n of ['a', 'b']) {
    tmp.wt[n] = path.join(tmp.root, `wt-${n}`);
    git(tmp.repo, 'worktree', 'add', '-q', tmp.wt[n], '-b', n);
    linkModules(tmp.wt[n]);
    fs.writeFileSync(path.join(tmp.wt[n], 'app/page.js'), page(`Shop ${n}`));
    git(tmp.wt[n], 'commit', '-q', '-am', `Shop ${n}`);
  }
  const { a, b } = tmp.wt;

  // next dev writes .next/ while it runs: stopped before the folder goes.
  let run = null;
  try {
    // 2. wt-b's server by wtproxy run (webpack), wt-a's by the daemon at
    // a's request (the .wtproxy's command: Turbopack).
    run = await runWebpack(t, tmp, b, px.port);
    const [ra, rb] = await Promise.all([curlFrom(a, px.port, '/', { timeout: 150000 }), curlFrom(b, px.port, '/', { timeout: 150000 })]);
    assert.equal(ra.status, 200, ra.body);
    assert.equal(headingOf(ra.body), 'Shop a');
    assert.equal(rb.status, 200, rb.body);
    assert.equal(headingOf(rb.body), 'Shop b');
    const logs = await cli(tmp, ['logs', '--front', String(px.port)], { cwd: a });
    assert.match(logs.stdout + logs.stderr, /Next\.js 16\.\d+\.\d+ \(Turbopack\)/, 'wt-a runs under Turbopack');
    assert.match(run.output(), /Next\.js 16\.\d+\.\d+ \(webpack\)/, 'wt-b runs under webpack');
    t.diagnostic(`two next dev servers up and their pages compiled: ${Date.now() - t0} ms`);

    // 3. /__whoami through the daemon, against wtproxy fingerprint.
    for (const wt of [a, b]) {
      const w = await curlFrom(wt, px.port, '/__whoami');
      assert.equal(w.status, 200, w.body);
      const who = JSON.parse(w.body);
      assert.equal(who.checkout, wt);
      const disk = await diskFingerprint(wt, patternArgs(who.fingerprint.include, who.fingerprint.exclude));
      assert.deepEqual(who.fingerprint, disk, 'the same as wtproxy fingerprint (C) with the declared patterns');
      const e = await entryOf(tmp, wt);
      assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
      assert.equal(e.whoami.hash, disk.hash);
    }

    // 4. Edits, each followed at once by a request: the new page from the
    // same server. Under Turbopack, half of the requests sent at once get
    // the old page from next dev itself: wtproxy must hold them.
    const before = { a: await servingPid(a, px.port), b: await servingPid(b, px.port) };
    const held = { a: [], b: [] };
    for (let i = 1; i <= EDITS; i++) {
      for (const [n, wt] of [['a', a], ['b', b]]) {
        fs.writeFileSync(path.join(wt, 'app/page.js'), page(`Shop ${n} v${i}`));
        const got = await curlFrom(wt, px.port, '/');
        held[n].push(got.ms);
        assert.equal(got.status, 200, `edit ${i} in wt-${n}: ${got.body}`);
        assert.equal(headingOf(got.body), `Shop ${n} v${i}`, `edit ${i} in wt-${n}: the new page, not the old`);
      }
    }
    t.diagnostic(`edit -> new page, Turbopack: ${held.a.join(', ')} ms; webpack: ${held.b.join(', ')} ms`);
    assert.deepEqual({ a: await servingPid(a, px.port), b: await servingPid(b, px.port) }, before,
      'served by the same next dev processes: none was restarted');

    // 5. The stamp is rewritten (gitignored): only the edited page shows.
    assert.equal(String(git(a, 'status', '--porcelain')).trim(), 'M app/page.js');
    sanitizerClean(assert, px.stderr());
    t.diagnostic(`whole test: ${Date.now() - t0} ms`);
  } finally {
    await run?.stop();
    await px.stop('SIGKILL');
    await waitFor(() => killUnder(tmp.root) === 0, 5000, 'the servers the daemon started, stopped');
  }
});
