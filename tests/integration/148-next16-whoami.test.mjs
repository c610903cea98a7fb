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
// And .env files, in an app whose route reads .env.wt once (as a server
// reads the database name `wtproxy db claim --write-env .env.wt` wrote):
// 6. .env edited: next dev loads it again itself, and the server is
//    verified with the new value, never stale for ever; .env.wt
//    rewritten: a 409 stale-code naming it, `ls` stale, the warning in
//    next dev's log (Turbopack);
// 7. .env.wt rewritten under --restart-on-stale: the next request is
//    served by a new next dev with the new settings (webpack).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeWorktrees, startDaemon, cli, waitFor, sanitizerClean, get, curlFrom } from './lib/registry.mjs';
import {
  page, next16Files, next16Modules, linkNext16, writeApp, runNext, ownPages, verifiedAsDisk, editsServedFresh,
  entryOf, servingPid,
} from './lib/next-app.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const EDITS = 8;
const files = next16Files();

test('a Next 16 app adopted by wtproxy init: Turbopack and webpack, its own page per worktree, verified, edits served fresh', async (t) => {
  assert.ok(fs.existsSync(path.join(next16Modules, 'next/package.json')),
    `${next16Modules} has no next: scripts/bootstrap installs it (cd tests/next16 && npm ci)`);
  const t0 = Date.now();
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // next dev's processes, if any are left
  writeApp(tmp.repo, files);
  // The default stale_grace (3 s), though a recompile on a loaded machine
  // can take longer (CI once saw more than 2 s with two test suites on its 2
  // CPUs): while next dev takes an edit in, its /__whoami says taking_in and
  // the daemon waits, so step 4 sees the same servers take every edit in
  // (wt-a's, a .wtproxy's, would otherwise be restarted; wt-b's refused).
  const px = await startDaemon(t, tmp, [], { env: { NEXT_TELEMETRY_DISABLED: '1' } });

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
    linkNext16(tmp.wt[n]);
    fs.writeFileSync(path.join(tmp.wt[n], 'app/page.js'), page(`Shop ${n}`));
    git(tmp.wt[n], 'commit', '-q', '-am', `Shop ${n}`);
  }
  const { a, b } = tmp.wt;

  // next dev writes .next/ while it runs: stopped before the folder goes.
  let run = null;
  try {
    // 2. wt-b's server by wtproxy run (webpack), wt-a's by the daemon at
    // a's request (the .wtproxy's command: Turbopack).
    run = await runNext(t, tmp, b, px.port, ['--webpack']);
    await ownPages(tmp, px.port);
    const logs = await cli(tmp, ['logs', '--front', String(px.port)], { cwd: a });
    assert.match(logs.stdout + logs.stderr, /Next\.js 16\.\d+\.\d+ \(Turbopack\)/, 'wt-a runs under Turbopack');
    assert.match(run.output(), /Next\.js 16\.\d+\.\d+ \(webpack\)/, 'wt-b runs under webpack');
    t.diagnostic(`two next dev servers up and their pages compiled: ${Date.now() - t0} ms`);

    // 3. /__whoami through the daemon, against wtproxy fingerprint.
    await verifiedAsDisk(tmp, px.port);

    // 4. Edits, each followed at once by a request: the new page from the
    // same server. Under Turbopack, half of the requests sent at once get
    // the old page from next dev itself: wtproxy must hold them.
    const held = await editsServedFresh(tmp, px.port, EDITS);
    t.diagnostic(`edit -> new page, Turbopack: ${held.a.join(', ')} ms; webpack: ${held.b.join(', ')} ms`);

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

// The app of steps 6 and 7, adopted by init, in worktree wt-a, under
// `wtproxy run ... -- next dev EXTRA` with runArgs; its /settings answers
// what its route read of .env.wt at load and process.env.WT_LABEL (.env).
async function settingsApp(t, extra, runArgs = []) {
  assert.ok(fs.existsSync(path.join(next16Modules, 'next/package.json')),
    `${next16Modules} has no next: scripts/bootstrap installs it (cd tests/next16 && npm ci)`);
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root));
  writeApp(tmp.repo, {
    ...files,
    '.env': 'WT_LABEL=first\n',
    '.env.wt': 'WT_DB=shop_one\n',
    'app/settings/route.js': `import fs from 'node:fs';
const WT = fs.readFileSync('.env.wt', 'utf8').trim(); // read once, as a database pool is set up
export const dynamic = 'force-dynamic';
export function GET() { return new Response(\`\${WT} WT_LABEL=\${process.env.WT_LABEL}\\n\`); }
`,
  });
  const px = await startDaemon(t, tmp, [], { env: { NEXT_TELEMETRY_DISABLED: '1' } });
  const r = await cli(tmp, ['init', '--apply', '--front', String(px.port)], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'adopt wtproxy');
  const a = path.join(tmp.root, 'wt-a');
  tmp.wt.a = a;
  git(tmp.repo, 'worktree', 'add', '-q', a, '-b', 'a');
  linkNext16(a);
  const run = await runNext(t, tmp, a, px.port, extra, runArgs);
  const settings = () => get(px.port, { 'X-Wtproxy-Worktree': a }, '/settings');
  const first = await curlFrom(a, px.port, '/settings', { timeout: 150000 });
  assert.equal(first.status, 200, first.body);
  assert.equal(first.body.trim(), 'WT_DB=shop_one WT_LABEL=first');
  assert.equal((await entryOf(tmp, a)).whoami.state, 'verified');
  return { tmp, px, run, a, settings };
}

test('Next 16 .env files: .env reloaded by next dev stays verified; .env.wt rewritten is stale, a 409 naming it (Turbopack)', async (t) => {
  const { tmp, px, run, a, settings } = await settingsApp(t, []);
  try {
    fs.writeFileSync(path.join(a, '.env'), 'WT_LABEL=second\n');
    const reloaded = await waitFor(async () => {
      const got = await settings();
      return got.status === 200 && /WT_LABEL=second/.test(got.body) && got;
    }, 30000, 'the setting next dev loaded again');
    assert.equal(reloaded.body.trim(), 'WT_DB=shop_one WT_LABEL=second');
    assert.match(run.output(), /Reload env: \.env/);
    await waitFor(async () => (await entryOf(tmp, a)).whoami.state === 'verified', 10000, 'verified after next dev loaded .env again');

    fs.writeFileSync(path.join(a, '.env.wt'), 'WT_DB=shop_two\n'); // wtproxy db claim --write-env .env.wt
    const r = await settings();
    assert.equal(r.status, 409, `the server still runs on WT_DB=shop_one: ${r.status} ${r.body}`);
    assert.equal(r.headers['x-wtproxy-refused'], 'stale-code');
    assert.match(r.body, /\.env\.wt/);
    const e = await entryOf(tmp, a);
    assert.equal(e.whoami.state, 'stale', JSON.stringify(e.whoami));
    assert.match(e.whoami.detail, /\.env\.wt/);
    await waitFor(() => /\.env\.wt changed after this next dev started/.test(run.output()), 5000, `the warning in\n${run.output()}`);
    sanitizerClean(assert, px.stderr());
  } finally {
    await run.stop();
    await px.stop('SIGKILL');
  }
});

test('Next 16 .env.wt rewritten under --restart-on-stale: served by a new next dev with the new settings (webpack)', async (t) => {
  const { tmp, px, run, a } = await settingsApp(t, ['--webpack'], ['--restart-on-stale']);
  try {
    const pid = await servingPid(a, px.port);
    fs.writeFileSync(path.join(a, '.env.wt'), 'WT_DB=shop_two\n');
    const r = await curlFrom(a, px.port, '/settings', { timeout: 150000 });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body.trim(), 'WT_DB=shop_two WT_LABEL=first', 'not the settings read before the rewrite');
    assert.notEqual(await servingPid(a, px.port), pid, 'a new next dev');
    assert.equal((await entryOf(tmp, a)).whoami.state, 'verified');
    sanitizerClean(assert, px.stderr());
  } finally {
    await run.stop();
    await px.stop('SIGKILL');
  }
});
