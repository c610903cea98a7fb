// next-app.mjs - what the Next.js tests (146: Next 14, 148: Next 16)
// share: the app's files, its dev server under `wtproxy run`, and the
// checks every version must pass: each worktree's own page, a /__whoami
// equal to `wtproxy fingerprint`'s and verified, edits served fresh by the
// same server.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, execFileSync } from 'node:child_process';
import { wtproxyBin, repoRoot } from './wtproxy.mjs';
import { git, cliEnv, lsJson, waitFor, curlFrom } from './registry.mjs';
import { diskFingerprint, patternArgs } from './whoami.mjs';

export const page = (heading) => `export default function Home() {\n  return <h1>${heading}</h1>;\n}\n`;
export const headingOf = (body) => (/<h1>([^<]*)<\/h1>/.exec(body) || [])[1];

// Next 16's packages, installed by scripts/bootstrap (cd tests/next16 && npm ci).
export const next16Modules = path.join(repoRoot, 'tests/next16/node_modules');
export const next16Files = (ignore = []) =>
  appFiles({ next: '^16.5.0', react: '^19.3.1', 'react-dom': '^19.3.1' }, ['AGENTS.md', ...ignore]);

// A Next 16 app's node_modules as `npm install` and `npm link wtproxy-whoami`
// leave it: a folder of its own (Turbopack compiles nothing from outside
// the app, so no symlink to tests/next16), hard links to the suite's.
export function linkNext16(dir) {
  execFileSync('cp', ['-al', next16Modules, path.join(dir, 'node_modules')]);
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(dir, 'node_modules/wtproxy-whoami'));
}

// The app's files: package.json with deps, and what to .gitignore.
export function appFiles(deps, ignore = []) {
  return {
    'package.json': JSON.stringify({ name: 'shop', private: true, scripts: { dev: 'next dev' }, dependencies: deps }, null, 2),
    '.gitignore': ['node_modules', '.next', ...ignore, ''].join('\n'),
    'next.config.mjs': "/** @type {import('next').NextConfig} */\nconst nextConfig = {};\n\nexport default nextConfig;\n",
    'app/layout.js': 'export default function RootLayout({ children }) {\n  return (<html lang="en"><body>{children}</body></html>);\n}\n',
    'app/page.js': page('Shop main'),
  };
}

// files written into the repo's main checkout and committed.
export function writeApp(repo, files) {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(repo, name)), { recursive: true });
    fs.writeFileSync(path.join(repo, name), text);
  }
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'the app');
}

// `wtproxy run --front FRONT --health /__whoami RUNARGS... -- next dev
// EXTRA...` in dir (ready once the route is compiled, as the .wtproxy's
// ready = /__whoami makes the daemon's); resolves once ready with
// { output(), stop() }.
export async function runNext(t, tmp, dir, front, extra = [], runArgs = []) {
  const args = ['run', '--front', String(front), '--health', '/__whoami', ...runArgs, '--', 'node_modules/.bin/next', 'dev', ...extra,
    '--hostname', '127.0.0.1', '--port', '{port}'];
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
  }, 120000, `next dev ${extra.join(' ')} under wtproxy run\n${out}`);
  return { output: () => out, stop };
}

export const entryOf = async (tmp, wt) => (await lsJson(tmp)).find((e) => e.worktree === wt);
export const servingPid = async (wt, port) => JSON.parse((await curlFrom(wt, port, '/__whoami')).body).pid;

// Each worktree of tmp.wt (a, b) gets its own heading ("Shop a") from the
// front: the first request waits for next dev's start and first compile.
export async function ownPages(tmp, port) {
  const [ra, rb] = await Promise.all(['a', 'b'].map((n) => curlFrom(tmp.wt[n], port, '/', { timeout: 150000 })));
  for (const [n, r] of [['a', ra], ['b', rb]]) {
    assert.equal(r.status, 200, r.body);
    assert.equal(headingOf(r.body), `Shop ${n}`);
  }
}

// /__whoami through the daemon, from each worktree: its checkout, the
// fingerprint `wtproxy fingerprint` (C) computes with the declared
// patterns, and the gate's verdict verified.
export async function verifiedAsDisk(tmp, port) {
  for (const wt of [tmp.wt.a, tmp.wt.b]) {
    const w = await curlFrom(wt, port, '/__whoami');
    assert.equal(w.status, 200, w.body);
    const who = JSON.parse(w.body);
    assert.equal(who.checkout, wt);
    const disk = await diskFingerprint(wt, patternArgs(who.fingerprint.include, who.fingerprint.exclude));
    assert.deepEqual(who.fingerprint, disk, 'the same as wtproxy fingerprint (C) with the declared patterns');
    const e = await entryOf(tmp, wt);
    assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
    assert.equal(e.whoami.hash, disk.hash);
  }
}

// edits page edits in each worktree, each followed at once by a request:
// the new page (never the old one, never a refusal) from the same
// servers. Returns each worktree's times from the edit to the answer, ms.
export async function editsServedFresh(tmp, port, edits) {
  const { a, b } = tmp.wt;
  const before = { a: await servingPid(a, port), b: await servingPid(b, port) };
  const held = { a: [], b: [] };
  for (let i = 1; i <= edits; i++) {
    for (const [n, wt] of [['a', a], ['b', b]]) {
      fs.writeFileSync(path.join(wt, 'app/page.js'), page(`Shop ${n} v${i}`));
      const got = await curlFrom(wt, port, '/');
      held[n].push(got.ms);
      assert.equal(got.status, 200, `edit ${i} in wt-${n}: ${got.body}`);
      assert.equal(headingOf(got.body), `Shop ${n} v${i}`, `edit ${i} in wt-${n}: the new page, not the old`);
    }
  }
  assert.deepEqual({ a: await servingPid(a, port), b: await servingPid(b, port) }, before,
    'served by the same next dev processes: none was restarted');
  return held;
}
