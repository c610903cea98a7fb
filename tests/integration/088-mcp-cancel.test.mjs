// 088: a tool call of `wtproxy mcp` that waits does not hold the session.
// An agent CLI that gives up on a call sends notifications/cancelled for
// it (MCP, "Cancellation"): the wait ends at once, the call gets no
// answer, and the next call is answered promptly. Against a real daemon
// and real holders:
// - a claim waiting for a resource another worktree holds, cancelled:
//   a ping is answered during the wait, a tools/call sent during it and
//   cancelled too is never run, the next call is answered in well under
//   a second, and the resource is not taken when its holder ends later;
// - EOF on stdin during a claim's wait: the process exits at once, 0,
//   answering neither it nor the call queued behind it;
// - restart waiting for a server slow to listen again, cancelled: the
//   next call is answered at once; the restart itself goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, cliEnv, waitFor, cli, lsJson, sanitizerClean,
} from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { startCli } from './lib/lease.mjs';

const rpc = (id, method, params) => `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`;
const toolCall = (id, name, args) => rpc(id, 'tools/call', { name, arguments: args });
const cancelled = (id) => `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'client timeout' } })}\n`;

async function leases(tmp) {
  const r = await cli(tmp, ['leases', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// A daemon, `wtproxy claim slot -- sleep 1000` from wt-a, and an MCP
// session in wt-b.
async function heldSlot(t) {
  const tmp = makeWorktrees(t, ['a', 'b']);
  await startDaemon(t, tmp);
  const holder = startCli(t, tmp, ['claim', 'slot', '--', 'sleep', '1000'], { cwd: tmp.wt.a });
  await waitFor(async () => (await leases(tmp)).some((l) => l.pid === holder.pid), 5000, 'the holder\'s lease');
  const mcp = startMcp(t, { cwd: tmp.wt.b, env: cliEnv(tmp) });
  await initialize(mcp);
  return { tmp, holder, mcp };
}

// Start a claim of slot that waits 30 s; resolves once it waits.
async function waitingClaim(mcp, id) {
  await mcp.send(toolCall(id, 'claim', { resource: 'slot', ttl: '1m', wait: '30s' }));
  await waitFor(() => /waiting up to 30s for slot/.test(mcp.stderr()), 5000, 'the claim to wait');
}

test('a cancelled claim wait: no answer, the session answers at once, the claim is never taken', async (t) => {
  const { tmp, holder, mcp } = await heldSlot(t);
  await waitingClaim(mcp, 10);

  // A ping during the wait is answered during it.
  let t0 = Date.now();
  await mcp.send(rpc(11, 'ping'));
  assert.deepEqual(JSON.parse(await mcp.line(3000)), { jsonrpc: '2.0', id: 11, result: {} });
  const pingMs = Date.now() - t0;

  // A call sent during the wait waits its turn; cancelled before its turn, it never runs.
  await mcp.send(toolCall(12, 'claim', { resource: 'other', ttl: '1m' }));
  await mcp.send(cancelled(12));
  await mcp.send(cancelled(10));
  t0 = Date.now();
  const next = JSON.parse((await Promise.all([mcp.send(toolCall(13, 'servers', {})), mcp.line(3000)]))[1]);
  const nextMs = Date.now() - t0;
  assert.equal(next.id, 13, `the first answer after the cancellations is the next call's: ${JSON.stringify(next)}`);
  t.diagnostic(`ping answered during the wait in ${pingMs} ms; the call after the cancellation in ${nextMs} ms`);
  assert.ok(nextMs < 1000, `the next call was answered ${nextMs} ms after the cancellation`);
  assert.match(mcp.stderr(), /the client cancelled request 10 \(client timeout\): its wait stops; it gets no answer/);
  assert.match(mcp.stderr(), /the client cancelled request 12 \(client timeout\): it had not begun; it gets no answer/);

  // The holder ends: the cancelled wait does not claim slot after all.
  holder.proc.kill('SIGKILL');
  await holder.exited;
  await new Promise((r) => setTimeout(r, 1000)); // four of the claim's 250 ms polls
  assert.deepEqual(await leases(tmp), [], 'neither slot nor other is held');
  assert.deepEqual((await call(mcp, 14, 'claim', { resource: 'slot', ttl: '1m' })).structuredContent.claimed, 'slot');
  const end = await mcp.end();
  assert.equal(end.code, 0, mcp.stderr());
  sanitizerClean(assert, mcp.stderr());
  assert.equal(mcp.lines.filter((l) => [10, 12].includes(JSON.parse(l).id)).length, 0, `answers for the cancelled calls: ${mcp.lines}`);
});

async function call(mcp, id, name, args) {
  await mcp.send(toolCall(id, name, args));
  const r = JSON.parse(await mcp.line(5000));
  assert.equal(r.id, id, JSON.stringify(r));
  return r.result;
}

test('EOF on stdin during a claim wait ends the process at once, status 0', async (t) => {
  const { tmp, mcp } = await heldSlot(t);
  await waitingClaim(mcp, 20);
  await mcp.send(toolCall(21, 'servers', {})); // waits its turn, which never comes
  await new Promise((r) => setTimeout(r, 100));
  const t0 = Date.now();
  const end = await Promise.race([mcp.end(), new Promise((r) => setTimeout(() => r(null), 5000))]);
  const ms = Date.now() - t0;
  assert.notEqual(end, null, 'wtproxy mcp still runs 5 s after its stdin closed');
  t.diagnostic(`exited ${ms} ms after EOF`);
  assert.equal(end.code, 0, mcp.stderr());
  sanitizerClean(assert, mcp.stderr());
  assert.ok(ms < 1000, `exited ${ms} ms after EOF`);
  assert.equal(end.rest + mcp.lines.join('\n'), '', 'no answer for the call');
  assert.match(mcp.stderr(), /stdin ended while a tool call waited: the call stops unanswered, and the session ends/);
  assert.deepEqual((await leases(tmp)).map((l) => l.worktree), [tmp.wt.a], 'only the holder\'s lease');
});

// A dev server that, while the file `slow` is in its worktree, waits a
// minute before it listens.
const SLOW = [
  "import fs from 'node:fs'; import http from 'node:http';",
  "const wait = fs.existsSync('slow') ? 60000 : 0;",
  "setTimeout(() => http.createServer((q, s) => s.end('ok')).listen(Number(process.argv[2]), '127.0.0.1'), wait);",
].join('\n');

test('a cancelled restart wait: no answer, the next call at once, the restart goes on', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--whoami', 'off']);
  const env = cliEnv(tmp, { XDG_STATE_HOME: path.join(tmp.root, 'state') });
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), SLOW);
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, env, command: [process.execPath, 'server.mjs', '{port}'], stopSignal: 'SIGTERM',
  });
  await run.ready;
  const mcp = startMcp(t, { cwd: tmp.wt.a, env });
  await initialize(mcp);
  fs.writeFileSync(path.join(tmp.wt.a, 'slow'), '');
  await mcp.send(toolCall(30, 'restart', {}));
  await waitFor(async () => (await lsJson(tmp))[0]?.state === 'starting', 5000, 'the restart to begin');
  await new Promise((r) => setTimeout(r, 300)); // the tool waits for it to be ready
  await mcp.send(cancelled(30));
  const t0 = Date.now();
  const r = await call(mcp, 31, 'servers', {});
  const ms = Date.now() - t0;
  t.diagnostic(`the call after the cancelled restart answered in ${ms} ms`);
  assert.ok(ms < 1000, `answered ${ms} ms after the cancellation`);
  assert.equal(r.structuredContent.servers[0].state, 'starting', JSON.stringify(r.structuredContent.servers));
  assert.match(mcp.stderr(), /the client cancelled request 30 \(client timeout\): its wait stops; it gets no answer/);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
  sanitizerClean(assert, mcp.stderr());
  assert.equal(mcp.lines.length, 0, `an answer for the cancelled restart: ${mcp.lines}`);
});
