// 175: a dev server whose command ignores {port} and $PORT listens on
// another port than the one its wrapper gave it. The wrapper sees its
// process tree listening there (and not on its own port) for 3 s and tells
// the daemon, so the request waiting for it gets a 503 naming that port and
// the fix within seconds (it waited start_timeout, 60 s, for a 503 saying
// only that the server did not listen); `wtproxy why` says it too; the
// start line fixed, `wtproxy restart` starts it from the file and it
// serves. A server that opens another port first and its own a moment
// later is served, never told.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, declaring, cli, curlFrom, getWorktree,
} from './lib/registry.mjs';
import { freePort } from './lib/whoami.mjs';

// A node:http server answering its worktree, on port (a number in its
// text) or on its first argument; no /__whoami (the daemon trusts it).
const server = (port) => `import http from 'node:http';
const port = ${port ?? 'Number(process.argv[2])'};
http.createServer((req, res) => {
  if (req.url === '/__whoami') res.statusCode = 404;
  res.end(JSON.stringify({ worktree: process.cwd() }));
})
  .listen(port, '127.0.0.1', () => console.log('listening on ' + port));
`;

test('a declared server on a port of its own choosing: 503 naming that port and the fix within seconds, then fixed and served', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, ['--trust-registry']);
  const other = await freePort();
  const tmp = declaring(t, [`start = ${process.execPath} server.mjs`, `front = ${px.port}`, 'idle_stop = 5s'], ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), server(other));
  // start_timeout is 60 s: a 503 within 20 s is the wrapper's word
  const r = await curlFrom(tmp.wt.a, px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 503, `${r.status} after ${r.ms} ms: ${r.body}`);
  t.diagnostic(`503 after ${r.ms} ms`);
  assert.match(r.body, new RegExp(`listens on port ${other} \\(pid \\d+: [^)]*server\\.mjs\\), not on \\d+, the port wtproxy gave it`));
  assert.match(r.body, /its start command ignores \{port\} and \$PORT/);
  assert.match(r.body, /^Fix: Put \{port\} where its command takes its port .*wtproxy restart --front \d+/m);
  assert.match(r.body, new RegExp(`listening on ${other}`), 'the server\'s own lines after');
  const why = await cli(tmp0, ['why'], { cwd: tmp.wt.a });
  assert.match(why.stdout + why.stderr, new RegExp(`listens on another port than \\d+, the one wtproxy gave it`));
  assert.match(px.stderr(), /failed to listen on its port: it listens on another/);

  // The fix as the page says: {port} in the start line, then restart.
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    [`start = ${process.execPath} server.mjs {port}`, `front = ${px.port}`, 'idle_stop = 5s'].join('\n') + '\n');
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), server());
  const restarted = await cli(tmp0, ['restart'], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(restarted.code, 0, restarted.stdout + restarted.stderr);
  const ok = await curlFrom(tmp.wt.a, px.port);
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.worktree, tmp.wt.a);
});

test('a server that listens on another port first and on its own a moment later is served, never told', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const side = await freePort();
  const script = `const http = require('node:http');
http.createServer((q, s) => s.end('side')).listen(${side}, '127.0.0.1');
setTimeout(() => http.createServer((q, s) => { if (q.url === '/__whoami') s.statusCode = 404; s.end('own'); }).listen(Number(process.argv[1]), '127.0.0.1'), 1500);`;
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, stopSignal: 'SIGTERM', runArgs: [],
    command: [process.execPath, '-e', script, '{port}'],
  });
  await run.ready;
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.body, 'own', `${r.status} ${r.body}`);
  await new Promise((res) => setTimeout(res, 3500)); // past the 3 s it would be told after
  assert.doesNotMatch(run.stderr(), /not on \d+, the port wtproxy gave it/);
  assert.doesNotMatch(px.stderr(), /failed to listen on its port/);
});
