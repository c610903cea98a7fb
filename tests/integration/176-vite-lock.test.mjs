// 176: a Vite the user runs by hand in a worktree (`npm run dev`) holds
// Vite 8's project lock, so a second Vite of that project, the one the
// daemon starts from the .wtproxy or one under `wtproxy run`, exits at
// once: "Found another Vite dev process for this project at URL (PID N).
// Pass --bypass-lock to bypass this check." wtproxy said "fix the error
// they name", and an agent reading Vite's words adds --bypass-lock: two
// Vites on one project's cache. Now the 503, `ls`, `why`, `restart` and
// the wrapper name that pid and the kill that frees the project; done as
// said, the next request is served by the daemon's Vite.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { makeWorktrees, startDaemon, curlFrom, cli, waitFor, sanitizerClean } from './lib/registry.mjs';
import { repoRoot } from './lib/wtproxy.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const vite = path.join(repoRoot, 'tests/node_modules/vite/bin/vite.js');
const plugin = "process.env.WTPROXY_PORT ? import(String('wtproxy-whoami/vite')).then((m) => m.wtproxyWhoami()) : null";

// The user's own Vite in web/, on a port of its own; resolves with it once
// it listens.
async function handRunVite(t, web) {
  const proc = spawn(process.execPath, [vite, '--port', '0', '--host', '127.0.0.1'], { cwd: web, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  // Under CI=true Vite colours its banner ("\x1b[1mLocal\x1b[22m:"): read without the colours.
  const plain = () => out.replace(/\x1b\[[0-9;]*m/g, '');
  await waitFor(() => /Local:/.test(plain()) || (proc.exitCode !== null && new Error(out)), 30000, 'the hand-run Vite');
  return proc;
}

test('a hand-run Vite holding the project lock: the 503, ls, why, restart and run name its pid and the kill that frees it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  t.after(() => killUnder(tmp.root));
  const px = await startDaemon(t, tmp);
  const web = path.join(tmp.wt.a, 'web');
  fs.mkdirSync(path.join(web, 'node_modules'), { recursive: true });
  fs.symlinkSync(path.join(repoRoot, 'whoami/node'), path.join(web, 'node_modules/wtproxy-whoami'));
  fs.writeFileSync(path.join(web, 'index.html'), '<h1>shop</h1>\n');
  fs.writeFileSync(path.join(web, 'vite.config.mjs'), `export default { clearScreen: false, plugins: [${plugin}] };\n`);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = cd web && ${process.execPath} ${vite} --port {port} --strictPort --host 127.0.0.1\nfront = ${px.port}\n`);
  const mine = await handRunVite(t, web);
  const kill = `kill ${mine.pid}`;
  const named = new RegExp(`another Vite dev server of this project already runs \\(pid ${mine.pid}, at http://127\\.0\\.0\\.1:\\d+/\\), and Vite starts one per project: stop it: ${kill}, then `);

  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /Found another Vite dev process/, 'Vite\'s own words are quoted');
  // The page's Fix line is that kill (it was a generic "read why in its output").
  assert.match(r.body, new RegExp('\nFix: A' + named.source.slice(1) + 'send the request again'), r.body);
  assert.doesNotMatch(r.body, /fix the error|Read why/i, r.body);

  for (const args of [['ls'], ['why']]) {
    const said = await cli(tmp, args, { cwd: tmp.wt.a });
    assert.match(said.stdout, new RegExp(named.source + `start it again: wtproxy restart ${tmp.wt.a} --front ${px.port}`), `${args}: ${said.stdout}`);
  }
  const restart = await cli(tmp, ['restart'], { cwd: tmp.wt.a, ms: 60000 });
  assert.notEqual(restart.code, 0, restart.stdout + restart.stderr);
  assert.match(restart.stdout + restart.stderr, new RegExp(`pid ${mine.pid}.*${kill}`), restart.stdout + restart.stderr);

  // A Vite under `wtproxy run` in the foreground: the wrapper says it under Vite's error.
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', process.execPath, vite, '--port', '{port}', '--strictPort', '--host', '127.0.0.1'], { cwd: web, ms: 30000 });
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, new RegExp(`^wtproxy: wt-a's server exited: another Vite dev server of this project already runs \\(pid ${mine.pid}, .*stop it: ${kill}$`, 'm'), run.stderr);

  // Done as said: the daemon's Vite serves the next request.
  mine.kill('SIGTERM');
  await waitFor(() => mine.exitCode !== null || mine.signalCode !== null, 10000, 'the hand-run Vite to stop');
  const served = await curlFrom(tmp.wt.a, px.port);
  assert.equal(served.status, 200, served.body);
  assert.match(served.body, /shop/);
  sanitizerClean(assert, px.stderr());
});
