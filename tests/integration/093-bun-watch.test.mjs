// 093: a Bun server (Bun.serve) under `bun --hot` and `bun --watch`,
// through `wtproxy run`. Seen by a Bun + Hono user: a module that no longer
// parsed made Bun print "error: Unexpected ;" above "at FILE:LINE:COL"
// and wait for a change with nothing listening; each request was held for
// start_timeout (60 s), then a 502 or 503 that did not say the error, and
// the fixes it named (restart, stop) could not help. Now Bun's error is a
// failed start, told at once with its lines; a saved fix serves again.
// Runs Bun's own Linux x64 binary from tests/bun (scripts/bootstrap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './lib/wtproxy.mjs';
import { makeWorktrees, startDaemon, startRun, curlFrom, waitFor, lsJson, sanitizerClean } from './lib/registry.mjs';

const bun = path.join(repoRoot, 'tests/bun/node_modules/@oven/bun-linux-x64/bin/bun');

// A Bun.serve server answering its module's greeting; no /__whoami (the
// daemon trusts its registration: --trust-registry).
const server = "import { greeting } from './greeting.ts';\n" +
  "Bun.serve({ port: Number(process.env.PORT), hostname: '127.0.0.1', fetch(req) {\n" +
  "  if (new URL(req.url).pathname === '/__whoami') return new Response('none', { status: 404 });\n" +
  '  return new Response(greeting());\n} });\n';
const greeting = (v) => `export function greeting(): string {\n  return '${v}';\n}\n`;
const broken = "export function greeting(): string {\n  return 'x' +;\n}\n";

for (const mode of ['--hot', '--watch']) {
  test(`bun ${mode}, a module that does not parse at start: a 503 at once with Bun's error, served once fixed`, async (t) => {
    const tmp = makeWorktrees(t, ['a']);
    const wt = tmp.wt.a;
    fs.writeFileSync(path.join(wt, 'index.ts'), server);
    fs.writeFileSync(path.join(wt, 'greeting.ts'), broken);
    const px = await startDaemon(t, tmp, ['--trust-registry']);
    const run = startRun(t, tmp, { cwd: wt, front: px.port, runArgs: ['--restart-on-stale'], command: [bun, mode, 'index.ts'] });
    await waitFor(async () => (await lsJson(tmp)).length > 0, 15000, 'the server registered');

    const failed = await curlFrom(wt, px.port, '/', { timeout: 90000 });
    assert.equal(failed.status, 503, `${failed.body}\n${run.stderr()}`);
    assert.match(failed.body, /under Bun's watcher/, failed.body);
    assert.match(failed.body, /error: Unexpected ;\n\s+at \S+greeting\.ts:2:\d+/, 'Bun\'s error and where');
    assert.ok(failed.ms < 30000, `answered after ${failed.ms} ms: held for start_timeout (60 s)`);

    fs.writeFileSync(path.join(wt, 'greeting.ts'), greeting('fixed'));
    let seen;
    await waitFor(async () => (seen = await curlFrom(wt, px.port, '/', { timeout: 90000 })).status === 200 &&
      seen.body === 'fixed', 90000, 'the fixed server').catch((e) => { throw new Error(`${e.message}: ${seen?.status} ${seen?.body}`); });
    sanitizerClean(assert, px.stderr());
  });
}

// Bun's "error: " line counts under Bun only: a Node server that prints
// such a line as it serves on is not a failed start.
test('a Node server printing "error: ..." at start is served, not told failed', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const wt = tmp.wt.a;
  fs.writeFileSync(path.join(wt, 'server.mjs'), "import http from 'node:http';\n" +
    "console.error('\\nerror: cache warm-up failed\\n    at warm (cache.mjs:1:1)\\nserving without it');\n" +
    "setTimeout(() => http.createServer((q, r) => { r.statusCode = q.url === '/__whoami' ? 404 : 200; r.end('ok'); })\n" +
    "  .listen(Number(process.env.PORT), '127.0.0.1'), 1500);\n");
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  const run = startRun(t, tmp, { cwd: wt, front: px.port, command: [process.execPath, 'server.mjs'] });
  await run.ready;
  const r = await curlFrom(wt, px.port, '/');
  assert.equal(r.status, 200, `${r.body}\n${run.stderr()}`);
  assert.doesNotMatch(run.stderr(), /failed at start/);
});

// The Node middleware says "reloads": false when nothing above the server
// can replace it, and wtproxy then restarts at once rather than wait.
// Under bun --hot, Bun reloads the modules in its own process: a Bun
// user's every edit was restarted as "nothing reloads it". Asked of the
// middleware itself, in a server run by wtproxy run.
test('the Node middleware under Bun: bun --hot reloads, plain bun does not', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const wt = tmp.wt.a;
  const reloads = path.join(repoRoot, 'whoami/node/reloads.mjs');
  fs.writeFileSync(path.join(wt, 'ask.ts'), `import { nothingReloads } from ${JSON.stringify(reloads)};\n` +
    "Bun.serve({ port: Number(process.env.PORT), hostname: '127.0.0.1', fetch(req) {\n" +
    "  if (new URL(req.url).pathname === '/__whoami') return new Response('none', { status: 404 });\n" +
    '  return new Response(String(nothingReloads()));\n} });\n');
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  for (const [args, want] of [[['--hot'], 'false'], [[], 'true']]) {
    const run = startRun(t, tmp, { cwd: wt, front: px.port, command: [bun, ...args, 'ask.ts'] });
    await run.ready;
    const r = await curlFrom(wt, px.port, '/');
    assert.equal(r.body, want, `bun ${args.join(' ')}: nothingReloads() ${r.body}`);
    run.proc.kill('SIGTERM');
    await run.exited;
  }
});
