// 137: what a worktree with `[service NAME]` servers is told when one of
// them is wrong, each message as an adoption of a Vite + Node API app met
// it, and each fix pasted as printed. A Node server without the whoami
// middleware gets the Node middleware's line, not Django's, and first the
// restart that loads a middleware added since it started (pasted, it is
// served). A request to a front the worktree declares no service for is
// not asked whether it forgot --front, and its Fix names that front. A
// service that died (its database dropped): the 502 names its logs and a
// restart that starts it again; the restart, pasted while the cause is
// still there, shows the log's reason; once fixed, it is ready. A
// .wtproxy front the daemon does not listen on is said once in the
// daemon's log, and the started server's log does not advise `wtproxy
// run --front`. A service that exits at once is called exited, by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, wtServer, cli, lsJson, get, waitFor, sanitizerClean, curlFrom, control } from './lib/registry.mjs';
import { freePort } from './lib/whoami.mjs';

const node = process.execPath;

const ask = (px, wt, port = px.port) => get(port, { 'X-Wtproxy-Worktree': wt });

// The worktree's own .wtproxy (uncommitted: the daemon reads a worktree's own file).
const declare = (wt, text) => fs.writeFileSync(path.join(wt, '.wtproxy'), text);

// `cd DIR && wtproxy ARGS` as printed in text, run as pasted.
async function paste(tmp, text, what) {
  const m = /cd (\S+) && wtproxy (restart[^.;()]*?)(?=[.;(]| \(|$)/.exec(text);
  assert.ok(m, `${what}: a command to paste in:\n${text}`);
  return cli(tmp, m[2].trim().split(/\s+/), { cwd: m[1], ms: 60000 });
}

test('a Node service without /__whoami: the Node middleware, and first the restart that loads one added since', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  // the middleware is "added" by creating added.txt: a server started
  // before that still answers /__whoami 404
  declare(tmp.wt.a, `[service api]\nstart = ${node} ${wtServer} {port} $(test -f added.txt || echo --no-whoami)\n` +
    `front = ${px.port}\nidle_stop = 0\n`);
  const r = await ask(px, tmp.wt.a);
  assert.equal(r.status, 502, r.body);
  assert.equal(r.headers['x-wtproxy-refused'], 'no-whoami');
  assert.match(r.body, /`app\.use\(mw\)` first \(Express, Connect\) or `http\.createServer\(/, 'the Node middleware');
  assert.doesNotMatch(r.body, /Django|PYTHONPATH/, 'no Django hint for a Node server');
  const restart = `cd ${tmp.wt.a} && wtproxy restart --service api --front ${px.port}`;
  assert.ok(r.body.indexOf(restart) >= 0 && r.body.indexOf(restart) < r.body.indexOf('app.use'),
    `the restart comes first:\n${r.body}`);

  fs.writeFileSync(path.join(tmp.wt.a, 'added.txt'), 'the middleware\n');
  assert.equal((await ask(px, tmp.wt.a)).status, 502, 'the server started before it was added');
  const pasted = await paste(tmp, r.body, 'no-whoami');
  assert.equal(pasted.code, 0, `${pasted.stdout}${pasted.stderr}`);
  await waitFor(async () => (await ask(px, tmp.wt.a)).status === 200, 5000, 'served once restarted');
  sanitizerClean(assert, px.stderr());
});

test('no service for this front: not "started without --front?", and the Fix names the front', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const [web, api] = [await freePort(), await freePort()];
  const px = await startDaemon(t, tmp, ['--listen', `127.0.0.1:${web}`, '--listen', `127.0.0.1:${api}`],
    { listeners: 2 });
  declare(tmp.wt.a, `[service web]\nstart = ${node} ${wtServer} {port}\nfront = ${web}\nidle_stop = 0\n`);
  const first = await curlFrom(tmp.wt.a, web);
  assert.equal(first.status, 200, `web started from the .wtproxy:\n${first.body}\n${px.stderr()}`);
  const r = await curlFrom(tmp.wt.a, api);
  assert.equal(r.status, 503, r.body);
  assert.doesNotMatch(r.body, /was it started without --front/, r.body);
  assert.match(r.body, new RegExp(`Its service \`web\` runs on front :${web} \\(pid \\d+\\); none of its services is registered on :${api}\\.`));
  assert.match(r.body, new RegExp(`declares no server on front :${api}, only on :${web} \\(web\\)`));
  const fix = /^Fix: (.*)$/m.exec(r.body);
  assert.ok(fix, r.body);
  assert.match(fix[1], new RegExp(`wtproxy run --front ${api} -- <server command with \\{port\\}>`),
    'pasted without --front it would register on the wrong front');
  sanitizerClean(assert, px.stderr());
});

test('a service that died: the 502 names its logs and a restart that starts it again', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--reload-grace', '300ms']);
  const wt = tmp.wt.a;
  declare(wt, '[service api]\nstart = test ! -f dropped || { echo "no database: shop_a was dropped" >&2; exit 3; }; ' +
    `exec ${node} ${wtServer} {port}\nfront = ${px.port}\nidle_stop = 0\n`);
  const first = await ask(px, wt);
  assert.equal(first.status, 200, first.body);
  const server = JSON.parse(first.body);

  // the database goes, and the API with it: first it stops answering...
  fs.writeFileSync(path.join(wt, 'dropped'), '');
  const [entry] = await lsJson(tmp);
  await get(entry.port, {}, '/__reload');
  const r = await ask(px, wt);
  assert.equal(r.status, 502, r.body);
  assert.equal(r.headers['x-wtproxy-error'], 'backend-unreachable');
  assert.ok(r.body.includes(`wtproxy logs ${wt} --service api`), `why it stopped answering:\n${r.body}`);
  assert.ok(r.body.includes(`cd ${wt} && wtproxy restart --service api --front ${px.port}`), r.body);
  // ...then it exits, and its wrapper unregisters it. Pasted between the
  // unregistration and the wrapper's own exit (held here with SIGSTOP, then
  // let go), the restart once answered "no server matches": the daemon
  // still counted the service as launched.
  process.kill(entry.pid, 'SIGSTOP');
  process.kill(server.pid, 'SIGKILL');
  const off = await control(tmp.control, { op: 'unregister', front: px.port, worktree: wt, service: 'api' });
  assert.equal(off.ok, true, JSON.stringify(off));
  assert.deepEqual(await lsJson(tmp), []);
  const pasted = paste(tmp, r.body, 'backend-unreachable');
  setTimeout(() => process.kill(entry.pid, 'SIGCONT'), 1000);

  // pasted while the database is still gone: the log says why
  const failed = await pasted;
  assert.equal(failed.code, 1, `${failed.stdout}${failed.stderr}`);
  assert.match(failed.stderr, /service api of .* did not come up: it exited before it was ready/);
  assert.match(failed.stderr, /no database: shop_a was dropped/);
  const logs = await cli(tmp, ['logs', '--service', 'api'], { cwd: wt });
  assert.match(logs.stdout + logs.stderr, /no database: shop_a was dropped/);

  fs.rmSync(path.join(wt, 'dropped'));
  const ok = await paste(tmp, r.body, 'backend-unreachable');
  assert.equal(ok.code, 0, `${ok.stdout}${ok.stderr}`);
  assert.match(ok.stdout, /service api on front \d+ started and ready in \d+\.\d s, verified: serves the code on disk\n/);
  assert.match(ok.stderr, /wtproxy restart: waiting for service api of \S+ \(front \d+\) to (listen|start)[^\n]*its log: wtproxy logs \S+ --service api\)/);
  assert.equal((await ask(px, wt)).status, 200);
  sanitizerClean(assert, px.stderr());
});

test('a .wtproxy front the daemon does not listen on: said once in its log, with the serve that fixes it', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const api = await freePort();
  const file = `[service api]\nstart = ${node} ${wtServer} {port}\nfront = ${api}\nidle_stop = 0\n\n` +
    `[service web]\nstart = ${node} ${wtServer} {port}\nfront = ${px.port}\nafter = api\nidle_stop = 0\n`;
  declare(tmp.wt.a, file);
  declare(tmp.wt.b, file);
  assert.equal((await ask(px, tmp.wt.a)).status, 200);
  assert.equal((await ask(px, tmp.wt.b)).status, 200);
  const said = new RegExp(`\\.wtproxy declares service \`api\` on front :${api}, which this daemon \\(pid ${px.proc.pid}\\) ` +
    `does not listen on: .* kill ${px.proc.pid} && tail --pid=${px.proc.pid} -f /dev/null; wtproxy serve --listen ${px.port} --listen ${api} \\(or one listen = line`, 'g');
  assert.equal([...px.stderr().matchAll(said)].length, 1, `said once:\n${px.stderr()}`);
  const servers = path.join(path.dirname(tmp.state), 'servers');
  const apiLog = fs.readdirSync(servers).find((f) => /^wt-a-[0-9a-f]{8}-\d+-api\.log$/.test(f));
  assert.ok(apiLog, fs.readdirSync(servers).join(', '));
  const log = fs.readFileSync(path.join(servers, apiLog), 'utf8');
  assert.doesNotMatch(log, /wtproxy run --front/, `no run fix for a server the daemon started:\n${log}`);
  assert.match(log, new RegExp(`started this server from ${tmp.wt.a}/\\.wtproxy on front ${api}.*wtproxy serve --listen ${px.port} --listen ${api}`));
  sanitizerClean(assert, px.stderr());
});

test('a service that exits before it listens: called exited, by its name and status', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  declare(tmp.wt.a, `[service api]\nstart = echo "boom: no config" >&2; exit 3\nfront = ${px.port}\n`);
  const r = await ask(px, tmp.wt.a);
  assert.equal(r.status, 503, r.body);
  assert.equal(r.headers['x-wtproxy-error'], 'backend-not-ready');
  assert.match(r.body, /: The dev server of this worktree exited before it listened/);
  assert.doesNotMatch(r.body, /did not become ready in time/);
  assert.ok(r.body.includes(`service \`api\` that ${tmp.wt.a}/.wtproxy declares exited with status 3 before it listened`), r.body);
  assert.ok(r.body.includes(`wtproxy logs ${tmp.wt.a} --service api`), r.body);
  sanitizerClean(assert, px.stderr());
});
