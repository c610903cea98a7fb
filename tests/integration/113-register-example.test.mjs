// 113: conf/register-example.sh, the documented way to route to a server
// that `wtproxy run` does not start, works: its server is registered by
// pid, routed, and dropped when it exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { repoRoot, wtproxyBin } from './lib/wtproxy.mjs';
import { makeWorktrees, startDaemon, cliEnv, lsJson, getWorktree, waitFor, wtServer } from './lib/registry.mjs';

const freePort = () => new Promise((res) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
});

test('register-example.sh: registered by pid, routed, dropped when the server exits', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const port = await freePort();
  const script = spawn('sh', [path.join(repoRoot, 'conf/register-example.sh'), String(port), process.execPath, wtServer, String(port)], {
    cwd: tmp.wt.a,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...cliEnv(tmp), WTPROXY_FRONT: String(px.port), PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` },
  });
  let err = '';
  script.stderr.on('data', (d) => { err += d; });
  t.after(() => { if (script.exitCode === null) script.kill('SIGKILL'); });

  const [e] = await waitFor(async () => { const l = await lsJson(tmp); return l.length ? l : null; }, 5000, `registered (${err})`);
  assert.equal(e.worktree, tmp.wt.a);
  assert.equal(e.port, port);
  assert.match(e.command, /wt-server\.mjs/);
  const res = await waitFor(async () => { const r = await getWorktree(px.port, tmp.wt.a); return r.status === 200 && r; }, 5000, 'routed');
  assert.equal(JSON.parse(res.body).port, port);

  process.kill(e.pid, 'SIGTERM');
  await waitFor(async () => (await lsJson(tmp)).length === 0, 1000, 'dropped when the server exited');
});
