// 101: 16 concurrent `wtproxy run` in 4 worktrees (one per worktree and
// front port: the daemon listens on 4 fronts). The daemon reserves the
// ports, so all 16 are distinct; every one becomes ready, and a request
// for each (worktree, front) reaches that run's server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, lsJson, getWorktree, get } from './lib/registry.mjs';

test('16 concurrent runs: distinct ports, all ready, all routed', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const listen = Array(4).fill(['--listen', '127.0.0.1:0']).flat();
  const px = await startDaemon(t, tmp, listen, { listeners: 4 });
  const fronts = px.ports;
  assert.equal(new Set(fronts).size, 4);

  const runs = [];
  for (const name of Object.keys(tmp.wt)) {
    for (const front of fronts) runs.push({ name, front, h: startRun(t, tmp, { cwd: tmp.wt[name], front }) });
  }
  const ports = await Promise.all(runs.map((r) => r.h.ready));
  assert.equal(new Set(ports).size, 16, `ports not distinct: ${ports}`);

  const entries = await lsJson(tmp);
  assert.equal(entries.length, 16, JSON.stringify(entries, null, 1));
  for (const e of entries) assert.equal(e.state, 'ready', JSON.stringify(e));

  await Promise.all(runs.map(async (r, i) => {
    const res = await getWorktree(r.front, tmp.wt[r.name], `/r${i}`);
    assert.equal(res.status, 200, res.body);
    const body = JSON.parse(res.body);
    assert.equal(body.worktree, tmp.wt[r.name]);
    assert.equal(body.port, ports[i]);
    assert.equal(body.url, `/r${i}`);
    // the worktree folder name in Host routes the same way
    const byHost = await get(r.front, { Host: `wt-${r.name}.localhost:${r.front}` });
    assert.equal(byHost.status, 200, byHost.body);
    assert.equal(JSON.parse(byHost.body).port, ports[i]);
  }));
});
