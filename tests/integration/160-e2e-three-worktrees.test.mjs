// 160: issue #8's promise, in the test run. Three worktrees of the Django
// shop of tests/e2e (branches a and b correct, c with a real bug), each with
// an "agent" that, three rounds in a row, waits a random 0-2.5 s and then
// runs its two suites in a random order at the same time as the others:
// `manage.py test --noinput` (PostgreSQL, a private server) and
// `playwright test` (Debian's Chromium, baseURL localhost:<front>,
// webServer `wtproxy run -- python3 manage.py runserver 127.0.0.1:{port}`
// with reuseExistingServer). One wtproxy daemon owns the front port; each
// worktree has its own databases. Every one of the 18 runs must get its
// true verdict, judged from its own log: a and b pass, c fails both suites
// on its bug (the basket total $3.70 instead of $6.10) and on nothing else.
// wtproxy's /__whoami gate must have checked the server of every e2e run.
// The same scenario without wtproxy (tests/e2e/compare) gets many of them
// wrong; tests/e2e/README.md has the numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { sanitizerClean } from './lib/registry.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const runner = path.resolve(here, '..', 'e2e', 'run.mjs');
const ROUNDS = 3;
const RUN_MS = 280000; // the whole runner, at most

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// node run.mjs ARGS, leading its own process group. Past RUN_MS (or when
// the test ends first) it gets SIGTERM, which makes it stop everything it
// started; its group gets SIGKILL 10 s later.
function startRunner(t, args) {
  const proc = spawn(process.execPath, [runner, ...args], {
    detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WTPROXY_BIN: wtproxyBin },
  });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('close', (code, signal) => r({ code, signal })));
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    try { process.kill(proc.pid, 'SIGTERM'); } catch { /* gone */ }
    const late = setTimeout(() => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } }, 10000);
    await exited;
    clearTimeout(late);
  };
  t.after(stop);
  const timer = setTimeout(() => { out += `\n[160: stopped after ${RUN_MS} ms]\n`; stop(); }, RUN_MS);
  return exited.then((r) => { clearTimeout(timer); return { ...r, out }; });
}

test(`three worktrees test the shop at once through wtproxy, ${ROUNDS} rounds: every verdict right`, {
  timeout: RUN_MS + 20000,
}, async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-160-'));
  removeAfter(t, tmp);
  const json = path.join(tmp, 'result.json');
  const front = await freePort();
  const r = await startRunner(t, ['--mode', 'wtproxy', '--rounds', String(ROUNDS), '--front', String(front),
    '--json', json, '--logs', path.join(tmp, 'logs')]);
  for (const line of r.out.split('\n').filter((l) => /took|databases|seed/.test(l))) t.diagnostic(line);
  assert.ok(fs.existsSync(json), `run.mjs wrote no result (exit ${r.code ?? r.signal}):\n${r.out}`);
  const res = JSON.parse(fs.readFileSync(json, 'utf8'));
  const { runs, rounds } = res.modes.wtproxy;
  assert.equal(rounds.length, ROUNDS, r.out);
  assert.equal(runs.length, ROUNDS * 3 * 2, `three agents, two suites each, per round:\n${r.out}`);
  for (const run of runs) {
    assert.equal(run.verdict, 'right',
      `round ${run.round}, wt-${run.branch}, ${run.suite}: ${run.verdict} (${run.why})\n--- its log ---\n${fs.readFileSync(run.log, 'utf8')}\n--- daemon ---\n${res.modes.wtproxy.daemonLog}`);
  }
  // the gate checked the server of every e2e run: it asked its /__whoami
  for (const run of runs.filter((x) => x.suite === 'e2e')) {
    assert.ok(run.whoamiAsked > 0, `round ${run.round}, wt-${run.branch}: wtproxy never asked its server GET /__whoami:\n${fs.readFileSync(run.log, 'utf8')}`);
  }
  // the buggy branch was caught by both suites in every round, for its bug
  assert.equal(runs.filter((x) => x.branch === 'c' && x.code !== 0).length, ROUNDS * 2);
  assert.ok(rounds.every((x) => x.leftovers === 0), `no run left a process behind:\n${r.out}`);
  assert.equal(r.code, 0, r.out);
  sanitizerClean(assert, res.modes.wtproxy.daemonLog);
});
