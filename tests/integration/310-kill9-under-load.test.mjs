// 310: the daemon killed with -9 in the middle of load and started again
// on the same port and state: the registrations are intact (wtproxy ls,
// and routing); clients see connection errors while it is down, and never
// a wrong body: every 200 comes from the server of the worktree the
// request named (each dev server answers with its own worktree).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { makeWorktrees, startDaemon, startRun, lsJson } from './lib/registry.mjs';
import { stopClean } from './lib/backends.mjs';

const LOOPS = 12; // concurrent clients, each one request after the other
const CONNECTION_ERRORS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ECONNABORTED']);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function request(port, worktree, agent) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, headers: { 'X-Wtproxy-Worktree': worktree } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', (e) => resolve({ error: e.code || e.message }));
    });
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ error: e.code || e.message }));
  });
}

test('kill -9 under load, restart: registrations intact, connection errors only, never a wrong body', { timeout: 90000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c']);
  const names = Object.keys(tmp.wt);
  let px = await startDaemon(t, tmp);
  const port = px.port;
  await Promise.all(names.map((n) => startRun(t, tmp, { cwd: tmp.wt[n], front: port }).ready));

  const tally = { ok: 0, okAfterRestart: 0, wrong: [], connErrors: 0, otherErrors: [], statuses: {} };
  let phase = 'before';
  let running = true;
  const loop = async (i) => {
    // half the clients keep their connections alive, half do not
    const agent = i % 2 ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : false;
    for (let k = 0; running; k++) {
      const wt = tmp.wt[names[(i + k) % names.length]];
      const r = await request(port, wt, agent);
      if (r.error) {
        if (CONNECTION_ERRORS.has(r.error) || r.error === 'socket hang up') tally.connErrors++;
        else tally.otherErrors.push(r.error);
        await sleep(20);
      } else if (r.status === 200) {
        let got = null;
        try { got = JSON.parse(r.body).worktree; } catch { /* not a dev server's body */ }
        if (got !== wt) tally.wrong.push(`asked ${wt}, got: ${r.body.slice(0, 200)}`);
        else if (phase === 'after') tally.okAfterRestart++;
        else tally.ok++;
      } else {
        tally.statuses[r.status] = (tally.statuses[r.status] || 0) + 1;
      }
    }
    if (agent) agent.destroy();
  };
  const loops = Array.from({ length: LOOPS }, (_, i) => loop(i));

  await sleep(1500);
  await px.stop('SIGKILL');
  phase = 'down';
  await sleep(300);
  px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${port}`]);
  phase = 'after';
  await sleep(1500);
  running = false;
  await Promise.all(loops);

  t.diagnostic(JSON.stringify({ ...tally, wrong: tally.wrong.length }));
  assert.deepEqual(tally.wrong, [], 'never a body from another worktree\'s server');
  assert.deepEqual(tally.otherErrors, [], 'failures are connection errors only');
  assert.ok(tally.ok > 0 && tally.okAfterRestart > 0, 'served before the kill and after the restart');
  assert.ok(tally.connErrors > 0, 'clients saw the daemon go (connection errors)');
  // a refusal would be the daemon routing before it knew its registrations
  assert.deepEqual(tally.statuses, {}, 'no refusal around the restart');
  const entries = await lsJson(tmp);
  assert.deepEqual(entries.map((e) => e.worktree).sort(), names.map((n) => tmp.wt[n]).sort(), 'registrations intact');
  await stopClean(px);
});
