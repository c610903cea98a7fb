// 135: a worktree's declared .wtproxy server starts when a caller from that
// worktree connects to the front port, before the caller sends a byte
// (Playwright's `port` readiness check connects seconds before the
// browser's first request); the request on that same connection is then
// served by it. A connection from a folder that is no worktree of a
// declaring repository starts nothing, and neither does a worktree that
// never connected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, wtServer, lsJson, waitFor, declaring } from './lib/registry.mjs';


// A process in cwd that connects to port and sends nothing until told to
// (send()): then one GET / and the whole answer.
const HOLDER = `
const net = require('node:net');
const s = net.connect(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('connected\\n'));
let answer = '';
// the answer, once its head and Content-Length bytes of body are in
s.on('data', (d) => {
  answer += d;
  const head = answer.indexOf('\\r\\n\\r\\n');
  const len = /content-length: *(\\d+)/i.exec(answer);
  if (head >= 0 && len && Buffer.byteLength(answer.slice(head + 4)) >= Number(len[1])) {
    process.stdout.write('ANSWER ' + JSON.stringify(answer) + '\\n');
    process.exit(0);
  }
});
process.stdin.on('data', () => {
  s.write('GET / HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n');
});
process.stdin.on('end', () => process.exit(0));
`;

function hold(t, cwd, port) {
  const proc = spawn(process.execPath, ['-e', HOLDER, String(port)], { cwd, stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => { try { proc.kill('SIGKILL'); } catch { /* gone */ } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const connected = waitFor(async () => out.includes('connected'), 10000, `a connection from ${cwd}`);
  return {
    connected,
    // the GET on the held connection; resolves its raw answer
    async send(why = '') {
      proc.stdin.write('go\n');
      await waitFor(async () => out.includes('ANSWER '), 20000, `the answer on the held connection${why}`);
      return JSON.parse(out.slice(out.indexOf('ANSWER ') + 7).trim());
    },
    close() { proc.stdin.end(); },
  };
}

test('a connection from a declaring worktree starts its server before a byte is sent', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['a', 'b']);

  // first from elsewhere: a folder in no worktree of the declaring repo
  const elsewhere = fs.mkdtempSync(path.join(tmp.root, 'elsewhere-'));
  const stranger = hold(t, elsewhere, px.port);
  await stranger.connected;

  const a = hold(t, tmp.wt.a, px.port);
  await a.connected;
  // no byte sent on a's connection: its worktree's server starts anyway
  await waitFor(async () => (await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.a && e.state === 'ready'),
    20000, "wt-a's declared server started and ready while its caller had sent nothing");
  assert.match(px.stderr(), /started .*wt-a's server from its \.wtproxy/);

  // the stranger connected before wt-a's caller, and nothing was started
  // for it; wt-b never connected, and has no server
  const entries = await lsJson(tmp0);
  assert.deepEqual(entries.map((e) => e.worktree), [tmp.wt.a], 'only wt-a has a server');
  assert.doesNotMatch(px.stderr(), /started .*(elsewhere|wt-b)/);

  // the request on the held connection is served by wt-a's own server
  const answer = await a.send(` (daemon:\n${px.stderr()})`);
  assert.match(answer, /^HTTP\/1\.1 200 /, answer);
  assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).worktree, tmp.wt.a);
  stranger.close();
});
