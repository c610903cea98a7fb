// 174: a dev server nothing reloads (whoami/PROTOCOL.md, section 1.2:
// "reloads": false) is not given stale_grace after an edit. Real servers
// under `wtproxy run`, the daemon at stale_grace 60 s (so that waiting for
// it shows as a request that is not answered): runserver --noreload is
// restarted at once and serves the edit; a plain `node server.mjs` behind
// `sh -c` (no --restart-on-stale) is refused 409 at once, saying nothing
// reloads it, and served after the `wtproxy restart` it names; the
// `wtproxy run` it offers is the same `sh -c` script, quoted. Started by
// the daemon from a .wtproxy (so with --restart-on-stale), `ls` says the
// next request restarts it, or `wtproxy restart --service` now. Under a
// reloader (Django's autoreloader, node --watch) the middleware says
// nothing, and the reloaded process serves the edit within the grace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import {
  makeWorktrees, declaring, startDaemon, startRun, getWorktree, cli, curlFrom, lsJson, waitFor, sanitizerClean,
} from './lib/registry.mjs';
import { python, pythonPath, writeDjangoProject } from './lib/whoami.mjs';
import { repoRoot } from './lib/wtproxy.mjs';

const GRACE = ['--stale-grace', '60s'];
const env = { PYTHONPATH: pythonPath };

// The backend's own /__whoami, asked directly (not through the proxy).
function whoamiOf(port) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/__whoami', agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve(JSON.parse(body)));
    }).on('error', reject);
  });
}

// A file's mtime later than the server's start, then its new text.
async function edit(file, text) {
  await new Promise((r) => setTimeout(r, 1100));
  fs.writeFileSync(file, text);
}

const nodeServer = (greeting) => `import http from 'node:http';
import { whoami } from ${JSON.stringify(path.join(repoRoot, 'whoami/node/index.mjs'))};
const mw = whoami();
http.createServer((req, res) => mw(req, res, () => res.end(${JSON.stringify(greeting)})))
  .listen(Number(process.argv[2]), '127.0.0.1');
`;

test('runserver --noreload says reloads: false and is restarted at the first request after an edit', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, GRACE);
  writeDjangoProject(tmp.wt.a);
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, env, runArgs: ['--restart-on-stale'], stopSignal: 'SIGTERM',
    command: [python, 'manage.py', 'runserver', '--noreload', '127.0.0.1:{port}'],
  });
  const port = await run.ready;
  const before = await whoamiOf(port);
  assert.equal(before.reloads, false, `its /__whoami: ${JSON.stringify(before)}`);
  assert.equal((await getWorktree(px.port, tmp.wt.a, '/hello/')).body, 'hello v1');
  await edit(path.join(tmp.wt.a, 'app/views.py'),
    'from django.http import HttpResponse\ndef hello(request):\n    return HttpResponse("hello v2")\n');
  // held for stale_grace (60 s) this would time out (10 s)
  const r = await getWorktree(px.port, tmp.wt.a, '/hello/');
  assert.equal(r.status, 200, `${r.status} ${r.body}\n${px.stderr()}`);
  assert.equal(r.body, 'hello v2');
  assert.notEqual((await whoamiOf(port)).pid, before.pid, 'a new process serves it');
  sanitizerClean(assert, px.stderr());
});

// The words a shell makes of the `cd WT && wtproxy run ...` a message
// offers, `wtproxy` a function that prints its arguments.
function wordsOfRun(line) {
  const out = execFileSync('/bin/sh', ['-c', `wtproxy() { printf '%s\\n' "$@"; }; ${line}`],
    { encoding: 'utf8', timeout: 5000 });
  return out.trimEnd().split('\n');
}

test('a plain node server behind sh -c is refused at once, saying nothing reloads it, and served after the restart it names', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, GRACE);
  const file = path.join(tmp.wt.a, 'api', 'server.mjs');
  fs.mkdirSync(path.dirname(file));
  fs.writeFileSync(file, nodeServer('node v1'));
  const script = `cd api && ${process.execPath} server.mjs {port}`;
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, stopSignal: 'SIGTERM', command: ['sh', '-c', script],
  });
  const port = await run.ready;
  assert.equal((await whoamiOf(port)).reloads, false, 'sh -c passes the answer through');
  // A shell that loops makes a new server when the old one ends (one
  // that exits on a change: a watcher's loop): nothing is said.
  fs.writeFileSync(path.join(tmp.wt.b, 'server.mjs'), nodeServer('node b'));
  const loop = startRun(t, tmp, {
    cwd: tmp.wt.b, front: px.port, stopSignal: 'SIGTERM',
    command: ['sh', '-c', `while :; do ${process.execPath} server.mjs {port}; done`],
  });
  const looped = await whoamiOf(await loop.ready);
  assert.equal('reloads' in looped, false, `a loop in its shell: ${JSON.stringify(looped)}`);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).body, 'node v1');
  await edit(file, nodeServer('node v2'));
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 409, `${r.status} ${r.body}`);
  assert.equal(r.headers['x-wtproxy-refused'], 'stale-code');
  assert.match(r.body, /nothing reloads it \(its \/__whoami says \\?"reloads\\?": false\)/);
  assert.match(r.body, /wtproxy restart/);
  // The run it offers, pasted, is one `wtproxy run` of the same sh -c
  // script: not split at its && (which ran node outside wtproxy).
  const offer = r.body.match(/then (cd \S+ && wtproxy run --front \d+ --restart-on-stale -- .*?)\)/);
  assert.ok(offer, r.body);
  assert.deepEqual(wordsOfRun(offer[1]),
    ['run', '--front', String(px.port), '--restart-on-stale', '--', 'sh', '-c', script]);
  const restarted = await cli(tmp, ['restart', '--front', String(px.port)], { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(restarted.code, 0, restarted.stderr);
  const after = await getWorktree(px.port, tmp.wt.a);
  assert.equal(after.body, 'node v2', `${after.status} ${after.body}`);
  sanitizerClean(assert, px.stderr());
});

test('a .wtproxy service behind sh -c, stale: ls says the next request restarts it, or wtproxy restart --service now', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, GRACE);
  const tmp = declaring(t, ['[service api]', `start = cd api && ${process.execPath} server.mjs {port}`,
    `front = ${px.port}`, 'idle_stop = 0'], ['a']);
  const file = path.join(tmp.wt.a, 'api', 'server.mjs');
  fs.mkdirSync(path.dirname(file));
  fs.writeFileSync(file, nodeServer('api v1'));
  const first = await curlFrom(tmp.wt.a, px.port, '/', { timeout: 20000 });
  assert.equal(first.body, 'api v1', `${first.status} ${first.body}`);
  await edit(file, nodeServer('api v2'));
  const e = await waitFor(async () => {
    const [x] = await lsJson(tmp0);
    return x?.whoami?.state === 'stale' && x;
  }, 10000, 'ls says stale with no request sent');
  // The daemon's server runs with --restart-on-stale: a hand-made
  // `wtproxy run` would replace it, and "nothing reloads it" is untrue.
  assert.match(e.whoami.detail, new RegExp('wtproxy restarts it at the next request to it \\(it runs ' +
    `with --restart-on-stale\\), or now: cd ${tmp.wt.a} && wtproxy restart --service api --front ${px.port}$`));
  assert.doesNotMatch(e.whoami.detail, /wtproxy run|nothing reloads it/);
  sanitizerClean(assert, px.stderr());
});

test('under a reloader (Django autoreloader, node --watch) nothing is said and the grace holds for the reload', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, GRACE);
  writeDjangoProject(tmp.wt.a);
  const django = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, env, stopSignal: 'SIGTERM', readyMs: 30000,
    command: [python, 'manage.py', 'runserver', '127.0.0.1:{port}'],
  });
  const file = path.join(tmp.wt.b, 'server.mjs');
  fs.writeFileSync(file, nodeServer('node v1'));
  const watched = startRun(t, tmp, {
    cwd: tmp.wt.b, front: px.port, stopSignal: 'SIGTERM',
    command: [process.execPath, '--watch', 'server.mjs', '{port}'],
  });
  const [dport, nport] = [await django.ready, await watched.ready];
  for (const [port, who] of [[dport, 'runserver'], [nport, 'node --watch']]) {
    const a = await waitFor(() => whoamiOf(port).catch(() => null), 15000, `${who}'s /__whoami`);
    assert.equal('reloads' in a, false, `${who} says nothing: ${JSON.stringify(a)}`);
  }
  await edit(path.join(tmp.wt.a, 'app/views.py'),
    'from django.http import HttpResponse\ndef hello(request):\n    return HttpResponse("hello v2")\n');
  fs.writeFileSync(file, nodeServer('node v2'));
  const [d, n] = await Promise.all([getWorktree(px.port, tmp.wt.a, '/hello/'), getWorktree(px.port, tmp.wt.b)]);
  assert.equal(d.body, 'hello v2', `${d.status} ${d.body}`);
  assert.equal(n.body, 'node v2', `${n.status} ${n.body}`);
  assert.doesNotMatch(px.stderr(), /restart(ed|ing) .*(runserver|--watch)/, 'taken in by the reloaders');
  sanitizerClean(assert, px.stderr());
});
