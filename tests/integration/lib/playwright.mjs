// playwright.mjs - helpers for the tests that run real Playwright in
// Debian's Chromium (130, 131, 157): the runs, and finding what they left.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { git } from './registry.mjs';
import { removeAfter } from './cleanup.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const nodeModules = path.resolve(here, '..', '..', 'node_modules');
export const chromium = '/usr/bin/chromium';
export const RUN_MS = 40000; // one `playwright test` run, at most

// A temp folder (realpath, removed after t) whose repo/ holds fixture
// committed on main, node_modules and test-results ignored. Returns
// { root, repo }: the caller adds the worktrees it needs.
export function fixtureRepo(t, fixture, prefix) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  removeAfter(t, root);
  const repo = path.join(root, 'repo');
  fs.cpSync(fixture, repo, { recursive: true });
  fs.writeFileSync(path.join(repo, '.gitignore'), 'node_modules\ntest-results/\n');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'app');
  return { root, repo };
}

// Every process whose cwd is under dir (the servers and browsers a run may
// leave behind if it is cut short): their pids.
export function processesUnder(dir) {
  const pids = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const cwd = fs.readlinkSync(`/proc/${d}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) pids.push(Number(d));
    } catch { /* gone, or not ours */ }
  }
  return pids;
}

// `npx playwright test ARGS` in cwd, detached (its own process group, so a
// run cut short is killed whole), for at most ms (RUN_MS). label names the
// test in the output. Resolves { code, signal, out }.
export function playwright(t, cwd, { args = [], env = {}, label, ms = RUN_MS }) {
  const clean = { ...process.env };
  delete clean.WTPROXY_WORKTREE; // the runs must be placed by their cwd
  delete clean.CI; // Playwright's CI mode changes nothing we need; keep output stable
  const proc = spawn('npx', ['--no-install', 'playwright', 'test', ...args], {
    cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...clean, ...env },
  });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const kill = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  t.after(kill);
  return new Promise((resolve) => {
    const timer = setTimeout(() => { out += `\n[${label}: killed after ${ms} ms]\n`; kill(); }, ms);
    proc.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, out }); });
  });
}
