// 087: the MCP claim tool's `wait`, which waits as `wtproxy claim --wait`
// does (the same code), against a real daemon and a real holder: a
// `wtproxy claim slot -- sleep 1000` in another worktree. Without wait the
// claim is refused at once, its fix the tool's own wait argument (not the
// CLI's flag); with wait 1s it gives up after about a second, naming the
// holder's pid and how long it waited; with wait 30s it is claimed as soon
// as the holder is killed, well before the 30 s. tools/list shows wait; a
// wait past the 50 s a client waits for a tool call is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, cliEnv, waitFor, cli } from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { startCli } from './lib/lease.mjs';

let ids = 1;
const call = (mcp, name, args) => mcp.call(ids++, name, args);

async function leases(tmp) {
  const r = await cli(tmp, ['leases', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('claim with wait: gives up after the wait naming the holder, claims once the holder ends', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  await startDaemon(t, tmp);
  const holder = startCli(t, tmp, ['claim', 'slot', '--purpose', 'e2e run', '--', 'sleep', '1000'], { cwd: tmp.wt.a });
  await waitFor(async () => (await leases(tmp)).some((l) => l.pid === holder.pid), 5000, 'the holder\'s lease');
  const mcp = startMcp(t, { cwd: tmp.wt.b, env: cliEnv(tmp) });
  await initialize(mcp);

  const list = await mcp.request(ids++, 'tools/list');
  const claim = list.result.tools.find((x) => x.name === 'claim');
  assert.equal(claim.inputSchema.properties.wait.type, 'string');
  assert.match(claim.inputSchema.properties.wait.description, /50s at most/);
  assert.match(claim.description, /with wait \(at most 50s\) it is claimed as soon as its holder releases it/);

  // Without wait: refused at once, the fix this tool's wait argument.
  const now = await call(mcp, 'claim', { resource: 'slot', ttl: '1m' });
  assert.equal(now.structuredContent.error, 'held', JSON.stringify(now));
  assert.match(now.content[0].text, new RegExp(`pid ${holder.pid} \\(\\S*wtproxy claim slot --purpose e2e run -- sleep 1000\\), for "e2e run", .*released when pid ${holder.pid} ends: wait for that; ` +
    'to wait until it is free: call claim again with wait "50s" \\(it claims slot as soon as its holder releases it, ends or expires\\)$'));
  assert.doesNotMatch(now.content[0].text, /--wait/);

  // wait 1s: gives up after about a second, naming the holder and the wait.
  let t0 = Date.now();
  const gaveUp = await call(mcp, 'claim', { resource: 'slot', ttl: '1m', wait: '1s' });
  const took = Date.now() - t0;
  assert.ok(took >= 1000 && took < 5000, `gave up after ${took} ms`);
  assert.equal(gaveUp.isError, true);
  assert.equal(gaveUp.structuredContent.error, 'held');
  assert.equal(gaveUp.structuredContent.holder.pid, holder.pid);
  assert.ok(gaveUp.structuredContent.waited_ms >= 1000, JSON.stringify(gaveUp.structuredContent));
  assert.match(gaveUp.content[0].text, new RegExp(`^did not claim slot within the 1s it waited: slot is held by this machine .*pid ${holder.pid} \\([^)]*\\), ` +
    `for "e2e run", .*; to wait longer: call claim again with wait "50s"$`));
  assert.match(mcp.stderr(), new RegExp(`^wtproxy: waiting up to 1s for slot: slot is held by .*pid ${holder.pid}`, 'm'));

  // A wait no client would sit through is refused before any waiting.
  const tooLong = await call(mcp, 'claim', { resource: 'slot', wait: '10m' });
  assert.equal(tooLong.structuredContent.error, 'bad-arguments');
  assert.match(tooLong.content[0].text, /^wait "10m" is longer than one claim call waits \(50s: .*\): give wait "50s", and call claim again to wait longer$/);

  // wait 30s: claimed as soon as the holder is killed.
  t0 = Date.now();
  const won = call(mcp, 'claim', { resource: 'slot', ttl: '1m', wait: '30s' });
  await waitFor(() => /waiting up to 30s for slot/.test(mcp.stderr()), 5000, 'the claim to wait');
  holder.proc.kill('SIGKILL');
  await holder.exited;
  const r = await won;
  const tookWon = Date.now() - t0;
  assert.notEqual(r.isError, true, r.content[0].text);
  assert.equal(r.structuredContent.claimed, 'slot');
  assert.equal(r.structuredContent.lease.worktree, tmp.wt.b);
  assert.ok(r.structuredContent.waited_ms > 0, JSON.stringify(r.structuredContent));
  assert.ok(tookWon < 10000, `claimed ${tookWon} ms after it began waiting`);
  assert.deepEqual((await leases(tmp)).map((l) => [l.id, l.worktree]), [['slot', tmp.wt.b]]);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});
