// 104: a truncated state file, or one that is not JSON at all, never
// stops the daemon: it starts, warns naming the file, moves the file
// aside (PATH.corrupt-<time>) and serves with an empty registry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, cli, lsJson } from './lib/registry.mjs';

async function startsAndMovesAside(t, tmp, original) {
  const px = await startDaemon(t, tmp);
  assert.match(px.stderr(), new RegExp(tmp.state.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), `no warning naming the state file:\n${px.stderr()}`);
  const aside = fs.readdirSync(tmp.root).filter((f) => f.startsWith('registry.json.corrupt-'));
  assert.equal(aside.length, 1, `not moved aside: ${fs.readdirSync(tmp.root)}`);
  assert.equal(fs.readFileSync(path.join(tmp.root, aside[0]), 'utf8'), original, 'the moved file was changed');
  assert.deepEqual(await lsJson(tmp), []);
  // and the registry works: a new entry is kept
  const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m', '--front', String(px.port)], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  assert.equal((await lsJson(tmp)).length, 1);
  return px;
}

test('truncated state file: the daemon starts, warns, moves it aside', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const first = await startDaemon(t, tmp);
  for (const n of ['a', 'b']) {
    const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '1h', '--front', String(first.port)], { cwd: tmp.wt[n] });
    assert.equal(r.code, 0, r.stderr);
  }
  await first.stop();
  const full = fs.readFileSync(tmp.state, 'utf8');
  assert.match(full, /wt-b/, 'the state file does not hold the entries');
  const half = full.slice(0, Math.floor(full.length / 2));
  fs.writeFileSync(tmp.state, half);
  await startsAndMovesAside(t, tmp, half);
});

test('state file that is not JSON: the daemon starts, warns, moves it aside', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const junk = 'this is not JSON \x00\xff\n';
  fs.writeFileSync(tmp.state, junk);
  await startsAndMovesAside(t, tmp, junk);
});
