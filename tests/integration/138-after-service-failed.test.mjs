// 138: a worktree of two services, `web` started after `api`, whose api
// dies at start (a syntax error in its settings, say). The request to the
// web front gets a 503 that says a service it is started after did not
// become ready, and names the command that prints THAT service's log,
// pasted as printed: the generic fix of this 503, `wtproxy logs --front
// <web's front>`, printed web's log, which says nothing of why (found by a
// team adopting wtproxy: their agents read the web log, saw Vite start
// fine, and were stuck). Once api is fixed, the request again starts both,
// as the page says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, makeWorktrees, cli, get, wtServer, sanitizerClean } from './lib/registry.mjs';
import { freePort } from './lib/whoami.mjs';

test('api, which web is started after, dies at start: the 503 names api\'s logs command', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const [webFront, apiFront] = [await freePort(), await freePort()];
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${webFront}`, '--listen', `127.0.0.1:${apiFront}`],
    { listeners: 2 });
  const wt = tmp.wt.a;
  const file = path.join(wt, '.wtproxy');
  const web = `[service web]\nstart = ${process.execPath} ${wtServer} {port}\nfront = ${webFront}\n` +
    'after = api\nidle_stop = 0\n';
  fs.writeFileSync(file, '[service api]\nstart = echo "boom: SyntaxError in settings.py" >&2; exit 1\n' +
    `front = ${apiFront}\nidle_stop = 0\n${web}`);
  const ask = () => get(webFront, { 'X-Wtproxy-Worktree': wt });

  const r = await ask();
  assert.equal(r.status, 503, r.body);
  assert.equal(r.headers['x-wtproxy-error'], 'backend-not-ready', JSON.stringify(r.headers));
  assert.match(r.body, /A service this dev server is started after .* did not become ready/, r.body);
  assert.doesNotMatch(r.body, /did not start listening in time/, 'web never started: not its timeout');
  assert.doesNotMatch(r.body, new RegExp(`wtproxy logs --front ${webFront}\\b`),
    'the page does not send its reader to web\'s own log');

  const cmd = new RegExp(`wtproxy logs (\\S+) --front (\\d+)\\)`).exec(r.body);
  assert.ok(cmd, `the page names a wtproxy logs command: ${r.body}`);
  assert.deepEqual([cmd[1], Number(cmd[2])], [wt, apiFront], 'api\'s worktree and front');
  const logs = await cli(tmp, ['logs', cmd[1], '--front', cmd[2]], { cwd: wt });
  assert.match(logs.stdout + logs.stderr, /boom: SyntaxError in settings\.py/,
    `pasted, it prints why api died: ${JSON.stringify(logs)}`);

  // api fixed: the request starts both, as the page's fix says.
  fs.writeFileSync(file, `[service api]\nstart = ${process.execPath} ${wtServer} {port}\n` +
    `front = ${apiFront}\nidle_stop = 0\n${web}`);
  const again = await ask();
  assert.equal(again.status, 200, again.body);
  sanitizerClean(assert, px.stderr());
});

// A background worker declared as a service (a user's RQ worker, `after`
// of web): it never listens on its {port}, so web's request waited
// start_timeout and got "did not become ready ... read why that service
// did not start", while the worker's log showed it working fine. The
// page now says that a service must listen, and where a worker goes; the
// guide's recipe (the worker in the background of the server's start)
// serves, and the worker goes with the server's stop.
test('a worker declared as a service never listens: the 503 says a service must listen and where a worker goes; the guide\'s recipe works', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const [webFront, workerFront] = [await freePort(), await freePort()];
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${webFront}`, '--listen', `127.0.0.1:${workerFront}`,
    '--start-timeout', '2s'], { listeners: 2 });
  const wt = tmp.wt.a;
  const file = path.join(wt, '.wtproxy');
  const pidFile = path.join(tmp.root, 'worker.pid');
  fs.writeFileSync(file, `[service worker]\nstart = echo "*** Listening on default..." && sleep 30\nfront = ${workerFront}\nidle_stop = 0\n` +
    `[service web]\nstart = ${process.execPath} ${wtServer} {port}\nfront = ${webFront}\nafter = worker\nidle_stop = 0\n`);
  const r = await get(webFront, { 'X-Wtproxy-Worktree': wt });
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /A service must listen on its \{port\}: a background worker that serves no HTTP goes in the start of the server it works for \(wtproxy help wtproxy-file, "Background workers"\)/, r.body);
  const guide = await cli(tmp, ['help', 'wtproxy-file']);
  assert.match(guide.stdout, /^# Background workers -+$/m, 'the section the page names');
  await cli(tmp, ['stop', '--front', String(workerFront)], { cwd: wt });

  // The guide's recipe: the worker in the background of web's start.
  fs.writeFileSync(file, `start = sh -c 'echo $$ > ${pidFile}; exec sleep 300' & exec ${process.execPath} ${wtServer} {port}\n` +
    `front = ${webFront}\nidle_stop = 0\n`);
  const ok = await get(webFront, { 'X-Wtproxy-Worktree': wt });
  assert.equal(ok.status, 200, ok.body);
  const worker = Number(fs.readFileSync(pidFile, 'utf8'));
  assert.ok(fs.existsSync(`/proc/${worker}`), 'the worker runs');
  const stop = await cli(tmp, ['stop', '--front', String(webFront)], { cwd: wt });
  assert.equal(stop.code, 0, stop.stdout + stop.stderr);
  const gone = () => { try { return /^\S+ \S+ Z/.test(fs.readFileSync(`/proc/${worker}/stat`, 'utf8').replace(/\(.*\)/, 'x')); } catch { return true; } };
  for (let i = 0; i < 50 && !gone(); i++) await new Promise((res) => setTimeout(res, 100));
  assert.ok(gone(), 'the worker stopped with the server');
  sanitizerClean(assert, px.stderr());
});
