// 119: every command learns a worktree's front from one reader, the
// daemon's own parser of its .wtproxy (its own, else its main
// checkout's), with one rule (cli/front.c):
// - services on several fronts: why and the MCP why tool explain each,
//   the servers tool lists each, run --service takes its own, doctor
//   checks the first and names the others with the command that checks
//   each; a run without --service takes the service whose start its
//   command is, and any other run, register or unregister naming no
//   service or front is refused before it starts or registers anything
//   (exit 2), each service printed with its front, start and the command
//   that names it;
// - a worktree without its own file: its main checkout's, the same way;
// - a .wtproxy the daemon refuses (a typo): no command takes a front out
//   of it; each says the parser's error (file and line) and uses the
//   daemon's port; when the daemon listens on several, run, register and
//   unregister are refused instead (any one would be a guess).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, cli, cliEnv, sanitizerClean, lsJson, curlFrom, wtServer } from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';

const NO_PG = { PGHOST: '', PGPORT: '', PGDATABASE: '', WTPROXY_DB_SERVER: '' };

// `wtproxy doctor --json` (no --front) in cwd: its report, checks by name.
async function doctor(tmp, cwd) {
  const r = await cli(tmp, ['doctor', '--json'], { cwd, env: NO_PG, ms: 30000 });
  sanitizerClean(assert, r.stderr);
  const report = JSON.parse(r.stdout);
  return { report, byName: Object.fromEntries(report.checks.map((c) => [c.name, c])) };
}

// The MCP why tool on folder (no front), from a session in cwd.
async function mcpWhy(t, tmp, cwd, folder) {
  const mcp = startMcp(t, { cwd, env: cliEnv(tmp) });
  await initialize(mcp);
  const why = (await mcp.call(1, 'why', { folder })).structuredContent;
  const servers = (await mcp.call(2, 'servers')).structuredContent;
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
  return { why, servers };
}

test('a .wtproxy of two services: why, doctor, the MCP tools and run --service agree on each front', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0', '--listen', '127.0.0.1:0'], { listeners: 2 });
  const [web, api] = px.ports;
  const file = `[service web]\nstart = true\nfront = ${web}\n\n[service api]\nstart = true\nfront = ${api}\n`;
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), file);

  const run = startRun(t, tmp, { cwd: tmp.wt.a, runArgs: ['--service', 'api'] });
  const backend = await run.ready;
  assert.match(run.stderr(), new RegExp(`\\(front :${api}\\)`));

  const why = await cli(tmp, ['why'], { cwd: tmp.wt.a });
  assert.match(why.stdout, new RegExp(`backend: 127\\.0\\.0\\.1:${backend} .* on front :${api}\n`), why.stdout);
  assert.match(why.stdout, new RegExp(`on front :${web} yet`), why.stdout);

  // doctor checks the first service's front, and names the other's command
  const d = await doctor(tmp, tmp.wt.a);
  assert.equal(d.report.front, web, 'the .wtproxy\'s first service, not whichever front = line came last');
  assert.match(d.byName.server.detail, new RegExp(`front ${web} is the \\.wtproxy's first service's; to check its others: api on :${api}: wtproxy doctor --front ${api}\\)$`), d.byName.server.detail);
  assert.equal(d.byName.daemon.status, 'ok', d.byName.daemon.detail);

  // the MCP why tool judges each front as `wtproxy why` does
  const m = await mcpWhy(t, tmp, tmp.wt.a, tmp.wt.a);
  assert.deepEqual(m.why.fronts.map((f) => [f.front, f.ok]), [[web, true], [api, true]], JSON.stringify(m.why));
  assert.match(m.why.fronts[1].explanation, new RegExp(`backend: 127\\.0\\.0\\.1:${backend} .* on front :${api}$`));
  assert.deepEqual(m.servers.fronts.map((f) => [f.front, f.service]), [[web, 'web'], [api, 'api']]);

  // wt-b has no .wtproxy of its own: its main checkout's, the same way
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), file);
  const regB = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(regB.code, 2, regB.stderr);
  assert.ok(regB.stderr.startsWith(`wtproxy register: ${tmp.repo}/.wtproxy declares services on several fronts`), regB.stderr);
  const whyB = await cli(tmp, ['why'], { cwd: tmp.wt.b });
  assert.match(whyB.stdout, new RegExp(`on front :${web}\\b[^\n]*\n[^\n]*on front :${api}\\b`), whyB.stdout);
  const mb = await mcpWhy(t, tmp, tmp.wt.b, tmp.wt.b);
  assert.deepEqual(mb.why.fronts.map((f) => f.front), [web, api], JSON.stringify(mb.why));
  sanitizerClean(assert, px.stderr());
});

// One line of a refusal: a service, its front and start, and its command.
const fixLines = (name, front, start, command) => `  ${name} (front ${front}, start = ${start}):\n    ${command}\n`;

test('run, register and unregister naming no service of a .wtproxy of two: run takes the one whose start its command is; anything else is refused before it starts', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0', '--listen', '127.0.0.1:0'], { listeners: 2 });
  const [web, api] = px.ports;
  const pids = path.join(tmp.root, 'pids'); // each server started writes its pid there
  const node = process.execPath;
  const webStart = `${node} ${wtServer} {port} --pids ${pids}`;
  const apiStart = `${node} ${wtServer} {port} --pids "${pids}" --delay 0`; // quotes, as sh reads them
  const file = path.join(tmp.wt.a, '.wtproxy');
  fs.writeFileSync(file, `[service web]\nstart = ${webStart}\nfront = ${web}\n\n[service api]\nstart = ${apiStart}\nfront = ${api}\n`);

  // a command that is neither service's start: refused, nothing started or registered
  const other = [node, wtServer, '{port}', '--pids', pids, '--no-whoami'];
  const bad = await cli(tmp, ['run', '--', ...other], { cwd: tmp.wt.a });
  assert.equal(bad.code, 2, bad.stderr);
  assert.ok(bad.stderr.startsWith(`wtproxy run: ${file} declares services on several fronts and its command is the start of none of them: which front this server serves is unknown`), bad.stderr);
  assert.ok(bad.stderr.includes(fixLines('web', web, webStart, `wtproxy run --service web -- ${other.join(' ')}`)), bad.stderr);
  assert.ok(bad.stderr.includes(fixLines('api', api, apiStart, `wtproxy run --service api -- ${other.join(' ')}`)), bad.stderr);
  assert.deepEqual(await lsJson(tmp), [], 'nothing registered');
  assert.ok(!fs.existsSync(pids), 'no server started');

  // register and unregister have no command to match: refused the same way
  const reg = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 2, reg.stderr);
  assert.ok(reg.stderr.includes(fixLines('web', web, webStart, 'wtproxy register --service web --port 5000 --ttl 1m')), reg.stderr);
  assert.ok(reg.stderr.includes(fixLines('api', api, apiStart, 'wtproxy register --service api --port 5000 --ttl 1m')), reg.stderr);
  assert.deepEqual(await lsJson(tmp), [], 'nothing registered');

  // the command a Playwright webServer carries is a service's start: that service's front
  const webRun = startRun(t, tmp, { cwd: tmp.wt.a, command: [node, wtServer, '{port}', '--pids', pids] });
  const apiRun = startRun(t, tmp, { cwd: tmp.wt.a, command: [node, wtServer, '{port}', '--pids', pids, '--delay', '0'] });
  const [webPort, apiPort] = await Promise.all([webRun.ready, apiRun.ready]);
  assert.ok(webRun.stderr().includes(`wtproxy: this is service web of ${file} (its start command): front ${web}\n`), webRun.stderr());
  assert.ok(apiRun.stderr().includes(`wtproxy: this is service api of ${file} (its start command): front ${api}\n`), apiRun.stderr());
  const entries = (await lsJson(tmp)).map((e) => `${e.service} ${e.front} ${e.port}`).sort();
  assert.deepEqual(entries, [`web ${web} ${webPort}`, `api ${api} ${apiPort}`].sort());
  for (const [front, port] of [[web, webPort], [api, apiPort]]) {
    const r = await curlFrom(tmp.wt.a, front);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.worktree, tmp.wt.a);
    assert.equal(JSON.parse(r.body).port, port, `front ${front}'s requests reach its own service's server`);
  }

  const un = await cli(tmp, ['unregister'], { cwd: tmp.wt.a });
  assert.equal(un.code, 2, un.stderr);
  assert.ok(un.stderr.startsWith(`wtproxy unregister: ${file} declares services on several fronts, so which front's entry to remove is unknown. Nothing was unregistered.`), un.stderr);
  const fix = un.stderr.split('\n').find((l) => l.trim().startsWith(`wtproxy unregister --front ${api}`)).trim().split(' ');
  assert.equal((await lsJson(tmp)).length, 2, 'nothing unregistered');
  const pasted = await cli(tmp, fix.slice(1), { cwd: tmp.wt.a });
  assert.equal(pasted.code, 0, pasted.stderr);
  assert.deepEqual((await lsJson(tmp)).map((e) => e.service), ['web'], 'the fix as printed removes the api entry only');
  sanitizerClean(assert, px.stderr());
});

test('a .wtproxy the daemon refuses gives no front: why, doctor, MCP why and register say its line and use the daemon\'s port', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const file = path.join(tmp.wt.a, '.wtproxy');
  fs.writeFileSync(file, 'start = true\nfront = 65003\nidle_stopp = 10m\n');

  const why = await cli(tmp, ['why'], { cwd: tmp.wt.a });
  assert.match(why.stderr, new RegExp(`^wtproxy why: the daemon refuses the \\.wtproxy, so it starts no server from it and its fronts are not judged \\(explained on front ${px.port} instead\\); correct it: ${file}:3: `), why.stderr);
  assert.match(why.stdout, new RegExp(`front :${px.port}\\b`), why.stdout);
  assert.doesNotMatch(why.stdout, /65003/);

  const d = await doctor(tmp, tmp.wt.a);
  assert.equal(d.report.front, px.port, 'the daemon\'s port, not a number out of a file it refuses');
  assert.equal(d.byName.daemon.status, 'ok', d.byName.daemon.detail);
  assert.equal(d.byName.server.status, 'problem');
  assert.ok(d.byName.server.detail.includes(`the daemon refuses the .wtproxy, so it starts no server: ${file}:3: `), d.byName.server.detail);

  const m = await mcpWhy(t, tmp, tmp.wt.a, tmp.wt.a);
  assert.equal(m.why.front, px.port, JSON.stringify(m.why));
  assert.match(m.why.wtproxy_file_error, new RegExp(`^${file}:3: `));

  const reg = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  assert.ok(reg.stderr.includes(`wtproxy: warning: the daemon refuses the .wtproxy, so it gives this server no front: it registers on front ${px.port}; correct the file (wtproxy doctor checks it): ${file}:3: `), reg.stderr);
  assert.match(reg.stderr, new RegExp(`registered ${tmp.wt.a} on front :${px.port} -> `));
  sanitizerClean(assert, px.stderr());
});

test('a .wtproxy the daemon refuses, with a daemon on several fronts: run, register and unregister are refused, not put on a guessed front', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--listen', '127.0.0.1:0', '--listen', '127.0.0.1:0'], { listeners: 2 });
  const [one, two] = px.ports;
  const file = path.join(tmp.wt.a, '.wtproxy');
  fs.writeFileSync(file, `[service web]\nstart = true\nfront = ${one}\n\n[service api]\nstart = true\nfront = ${two}\nidle_stopp = 10m\n`);
  const pids = path.join(tmp.root, 'pids');
  const cmd = [process.execPath, wtServer, '{port}', '--pids', pids];
  const run = await cli(tmp, ['run', '--', ...cmd], { cwd: tmp.wt.a });
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, new RegExp(`^wtproxy run: the daemon refuses the \\.wtproxy, so it gives this server no front, and the daemon listens on several \\(:${one}, :${two}\\): .* Nothing was started\\. Correct the file \\(wtproxy doctor checks it\\): ${file}:8: `), run.stderr);
  for (const front of [one, two]) assert.ok(run.stderr.includes(`\n    wtproxy run --front ${front} -- ${cmd.join(' ')}\n`), run.stderr);
  assert.ok(!fs.existsSync(pids), 'no server started');
  const reg = await cli(tmp, ['register', '--port', '5000', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 2, reg.stderr);
  assert.ok(reg.stderr.includes(`\n    wtproxy register --front ${two} --port 5000 --ttl 1m\n`), reg.stderr);
  assert.deepEqual(await lsJson(tmp), [], 'nothing registered');
  const un = await cli(tmp, ['unregister'], { cwd: tmp.wt.a });
  assert.equal(un.code, 2, un.stderr);
  assert.match(un.stderr, /which front's entry to remove is unknown\. Nothing was unregistered\./);
  sanitizerClean(assert, px.stderr());
});

test('init takes an existing .wtproxy\'s front by the same rule: of two services the baseURL\'s, else the first; none from a refused file', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const dir = tmp.wt.a;
  const plan = async () => {
    const r = await cli(tmp, ['init', '--json', dir], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  fs.writeFileSync(path.join(dir, 'package.json'), '{"scripts":{"dev":"node server.js"}}\n');
  fs.writeFileSync(path.join(dir, '.wtproxy'), '[service web]\nstart = true\nfront = 18555\n\n[service api]\nstart = true\nfront = 18556\n');
  let p = await plan();
  assert.equal(p.front, 18555, 'the first service\'s, not the last front = line');
  assert.ok(p.notes.includes(`${dir}/.wtproxy declares several fronts (:18555 (web), :18556 (api)): front 18555 is the app's (--front N takes another)`), p.notes.join('\n'));
  fs.writeFileSync(path.join(dir, 'playwright.config.js'), "module.exports = { use: { baseURL: 'http://localhost:18556' } };\n");
  assert.equal((await plan()).front, 18556, 'the one its tests call');
  fs.rmSync(path.join(dir, 'playwright.config.js'));

  fs.writeFileSync(path.join(dir, '.wtproxy'), 'start = true\nfront = 65003\nidle_stopp = 10m\n');
  p = await plan();
  assert.equal(p.front, 8000, 'not a number out of a file the daemon refuses');
  assert.ok(p.notes.some((n) => n.startsWith(`the daemon refuses the .wtproxy, so its front is not used: ${dir}/.wtproxy:3: `)), p.notes.join('\n'));
});
