// 086: what `wtproxy mcp` tells an agent about its fronts and the daemon
// is true, with real daemons and worktrees:
// - the instructions (initialize) and the servers tool name the URLs of
//   the session worktree's real fronts: each its .wtproxy declares, else
//   the daemon's port, else 8000 with no daemon; and a front the daemon
//   does not listen on is said, with the command that prints the fix;
// - one rule for the daemon: the read-only tools never start one and say
//   how (the command, and the tool that starts one); the acting tools
//   (restart, claim, release) start one as `wtproxy run` and `wtproxy
//   claim` do, and say so; with WTPROXY_NO_AUTOSTART=1 they say no
//   daemon runs, and how to start one, never "store failed"; a daemon
//   they could not start is said with its log's last lines (a port
//   another program holds); the daemon they start, and the one their
//   message's command starts, listen on the .wtproxy's front;
// - a PostgreSQL lease store that is down is store-failed, naming it and
//   the fix; a daemon that holds its socket but does not answer is
//   daemon-failed, naming wtproxy doctor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, cliEnv, control, waitFor, pidAlive, curlFrom, wtServer,
} from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';

let ids = 1;
const call = (mcp, name, args) => mcp.call(ids++, name, args);

// A session in cwd with env; its handshake's instructions.
async function session(t, cwd, env) {
  const mcp = startMcp(t, { cwd, env });
  const init = await initialize(mcp);
  return { mcp, instructions: init.result.instructions };
}

test('the instructions and servers name the worktree\'s real fronts, and the ones the daemon does not listen on', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const env = cliEnv(tmp, { XDG_STATE_HOME: path.join(tmp.root, 'state') });
  // No daemon, no .wtproxy: the default front, and that nothing answers yet.
  const none = await session(t, tmp.wt.b, env);
  assert.match(none.instructions, new RegExp(`^wtproxy routes http://localhost:8000/ to the dev server .*This session's worktree is ${tmp.wt.b}\\. No daemon runs now, so nothing answers there yet; the tools say how to start one\\.`));
  assert.equal((await none.mcp.end()).code, 0, none.mcp.stderr());

  const px = await startDaemon(t, tmp); // a port the kernel picked: never 8000
  const api = px.port < 65535 ? px.port + 1 : px.port - 1; // not one the daemon listens on
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), [
    '[service web]', 'start = node web.mjs {port}', `front = ${px.port}`, '',
    '[service api]', 'start = node api.mjs {port}', `front = ${api}`, '',
  ].join('\n'));
  const a = await session(t, tmp.wt.a, env);
  assert.match(a.instructions, new RegExp(`^wtproxy routes http://localhost:${px.port}/ \\(service web\\) and http://localhost:${api}/ \\(service api\\) to the dev server `));
  assert.match(a.instructions, new RegExp(` The daemon does not listen on :${api}: requests there do not reach wtproxy; wtproxy doctor prints the fix\\. `));
  assert.doesNotMatch(a.instructions, /8000/);
  // Who starts its servers, and where a failed test's reason is: an agent
  // read neither, started its own server, and took "element not found"
  // for its own bug.
  assert.match(a.instructions, / Its \.wtproxy declares its dev server: the daemon starts it at the first request from this worktree, so start none yourself\. /);
  assert.match(a.instructions, / When a test meets a refused connection, an empty page or an error from wtproxy \(header X-Wtproxy-Error\), call servers, then logs: they say why, and the fix\. /);
  const s = (await call(a.mcp, 'servers')).structuredContent;
  assert.deepEqual(s.fronts, [
    { front: px.port, url: `http://localhost:${px.port}/`, listening: true, service: 'web' },
    { front: api, url: `http://localhost:${api}/`, listening: false, service: 'api' },
  ]);
  assert.equal((await a.mcp.end()).code, 0, a.mcp.stderr());

  // No .wtproxy: the one port the daemon listens on, as the CLI picks it.
  const b = await session(t, tmp.wt.b, env);
  assert.match(b.instructions, new RegExp(`^wtproxy routes http://localhost:${px.port}/ to the dev server `));
  assert.doesNotMatch(b.instructions, /No daemon|does not listen|Its \.wtproxy/);
  assert.match(b.instructions, / call servers, then logs: /);
  assert.deepEqual((await call(b.mcp, 'servers')).structuredContent.fronts,
    [{ front: px.port, url: `http://localhost:${px.port}/`, listening: true }]);
  assert.equal((await b.mcp.end()).code, 0, b.mcp.stderr());
});

test('with WTPROXY_NO_AUTOSTART=1 every tool says no daemon runs and the command that starts one', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const { mcp } = await session(t, tmp.wt.a, cliEnv(tmp, { XDG_STATE_HOME: path.join(tmp.root, 'state') }));
  const start = `no daemon answers on ${tmp.control}; start one, in the background: setsid -f wtproxy serve --control ${tmp.control} >>\\S+/daemon\\.log 2>&1`;
  for (const [tool, args] of [['servers'], ['why'], ['refusals'], ['logs']]) {
    const r = await call(mcp, tool, args);
    assert.equal(r.structuredContent.error, 'no-daemon', tool);
    assert.match(r.content[0].text, new RegExp(`^${start}$`), tool);
  }
  for (const [tool, args] of [['restart'], ['claim', { resource: 'emulator-1' }], ['release', { resource: 'emulator-1' }]]) {
    const r = await call(mcp, tool, args);
    assert.equal(r.structuredContent.error, 'no-daemon', `${tool}: ${r.content[0].text}`);
    assert.match(r.content[0].text, new RegExp(`^${start} \\(this session starts none itself: WTPROXY_NO_AUTOSTART=1 in its environment\\)$`), tool);
  }
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('read-only tools never start a daemon and name the tool that does; restart starts one and says so', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  // What an autostarted daemon reads: a kernel-picked port, this test's files.
  const config = path.join(tmp.root, 'wtproxy.conf');
  fs.writeFileSync(config, `listen = 127.0.0.1:0\nstate_file = ${tmp.state}\n`);
  const state = path.join(tmp.root, 'state');
  const env = { WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '', WTPROXY_CONFIG: config, XDG_STATE_HOME: state };
  const { mcp } = await session(t, tmp.wt.a, env);
  let pid = 0;
  t.after(async () => { // the daemon a tool started, even when the test failed before its pid
    if (!pid) pid = await control(tmp.control, { op: 'ping' }).then((p) => p.pid, () => 0);
    if (pid && pidAlive(pid)) try { process.kill(pid, 'SIGKILL'); } catch { /* exited meanwhile */ }
  });

  for (const tool of ['servers', 'why', 'refusals', 'logs']) {
    const r = await call(mcp, tool);
    assert.equal(r.structuredContent.error, 'no-daemon', tool);
    assert.match(r.content[0].text, /2>&1; or call the restart tool, which starts one \(and the servers this worktree's \.wtproxy declares\)$/, tool);
  }
  assert.equal(fs.existsSync(tmp.control), false, 'no read-only tool started a daemon');

  const r = await call(mcp, 'restart'); // nothing to restart here, but the daemon now runs
  assert.equal(r.structuredContent.error, 'not-found', r.content[0].text);
  const m = /\(no daemon answered, so this call started one \(pid (\d+), in the background, as wtproxy run does; its log: (\S+)\)\)$/.exec(r.content[0].text);
  assert.ok(m, r.content[0].text);
  pid = Number(m[1]);
  assert.equal(m[2], path.join(state, 'wtproxy', 'daemon.log'));
  assert.equal((await control(tmp.control, { op: 'ping' })).pid, pid);
  assert.match(r.structuredContent.daemon_started, new RegExp(`^no daemon answered, so this call started one \\(pid ${pid}, `));
  // how to start a server, without holding the agent's shell
  assert.match(r.content[0].text, new RegExp(`Nothing to restart: start one there: cd ${tmp.wt.a} && setsid -f wtproxy run -- <server command with \\{port\\}> >/dev/null 2>&1 \\(its output goes to its log: read it with logs\\)\\n`));
  const s = await call(mcp, 'servers');
  assert.notEqual(s.isError, true, s.content[0].text);
  assert.equal(s.structuredContent.daemon_started, undefined, 'said once, by the call that started it');
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
  process.kill(pid, 'SIGTERM');
  await waitFor(() => !pidAlive(pid), 10000, 'the started daemon to stop');
});

// The daemon a tool starts listened on 8000 whatever the .wtproxy said:
// after a daemon died, an agent whose tests call the .wtproxy's front got
// "restarted and ready, verified" from restart, then a refused connection
// from its tests. It listens on the fronts the file declares now, and the
// command a read-only tool gives starts it there too.
test('the daemon a tool starts, and the one its message starts, listen on the .wtproxy\'s front', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const free = net.createServer();
  await new Promise((r) => free.listen(0, '127.0.0.1', r));
  const front = free.address().port;
  await new Promise((r) => free.close(r));
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'),
    `start = ${process.execPath} ${wtServer} {port}\nfront = ${front}\nidle_stop = 0\n`);
  const state = path.join(tmp.root, 'state');
  const env = { WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '', WTPROXY_CONFIG: '', XDG_STATE_HOME: state };
  const { mcp } = await session(t, tmp.wt.a, env);
  let pid = 0, server = 0;
  t.after(async () => { // the server restart started outlives a killed daemon: stopped first
    if (server && pidAlive(server)) {
      process.kill(server, 'SIGTERM'); // its wrapper stops the server's whole tree
      await waitFor(() => !pidAlive(server), 10000, 'the server to stop').catch(() => {});
    }
    if (!pid) pid = await control(tmp.control, { op: 'ping' }).then((p) => p.pid, () => 0);
    if (pid && pidAlive(pid)) try { process.kill(pid, 'SIGKILL'); } catch { /* exited meanwhile */ }
  });
  const s = await call(mcp, 'servers');
  assert.equal(s.structuredContent.error, 'no-daemon');
  assert.match(s.content[0].text, new RegExp(`in the background: setsid -f wtproxy serve --control ${tmp.control} --listen ${front} >>\\S+/daemon\\.log 2>&1; or call the restart tool`));

  const r = await call(mcp, 'restart');
  assert.notEqual(r.isError, true, r.content[0].text);
  server = (await call(mcp, 'servers')).structuredContent.servers[0]?.pid || 0; // its wrapper
  pid = (await control(tmp.control, { op: 'ping' })).pid;
  const got = await curlFrom(tmp.wt.a, front, '/');
  assert.equal(got.status, 200, `the tests' port answers: ${got.body}`);
  assert.equal(got.worktree, tmp.wt.a);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('an acting tool that cannot start the daemon says why, from the daemon\'s log', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  // Another program holds the port the daemon is configured to listen on.
  const holder = net.createServer();
  await new Promise((r) => holder.listen(0, '127.0.0.1', r));
  t.after(() => holder.close());
  const port = holder.address().port;
  const config = path.join(tmp.root, 'wtproxy.conf');
  fs.writeFileSync(config, `listen = 127.0.0.1:${port}\nstate_file = ${tmp.state}\n`);
  const env = { WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '', WTPROXY_CONFIG: config, XDG_STATE_HOME: path.join(tmp.root, 'state') };
  const { mcp } = await session(t, tmp.wt.a, env);
  const r = await call(mcp, 'restart');
  assert.equal(r.structuredContent.error, 'no-daemon', r.content[0].text);
  assert.match(r.content[0].text, new RegExp(`^no daemon answered, and this tool could not start one: the daemon exited \\(status \\d+\\) before answering on ${tmp.control}\\. ` +
    `Its log, \\S+/daemon\\.log, ends with:\\n(.|\\n)*port ${port} on 127\\.0\\.0\\.1 is already in use by pid ${process.pid} .*stop it with \`kill ${process.pid}\`, or serve another port: wtproxy serve --listen \\d+\\n` +
    'Fix what it says, then call this tool again$'));
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('claim on a PostgreSQL store that is down: store-failed, naming the store and the fix', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise((r) => s.close(r)); // nothing listens there now
  const { mcp } = await session(t, tmp.wt.a, cliEnv(tmp, { WTPROXY_REGISTRY: `postgresql://wt@127.0.0.1:${port}/wtproxy` }));
  const r = await call(mcp, 'claim', { resource: 'emu', ttl: '1m' });
  assert.equal(r.structuredContent.error, 'store-failed');
  assert.match(r.content[0].text, new RegExp(`^could not claim emu: the PostgreSQL lease store: the registry at host 127\\.0\\.0\\.1 port ${port} .* cannot be reached: .*; start it or fix WTPROXY_REGISTRY / \`registry =\`; to go on without it .*: WTPROXY_REGISTRY_OPTIONAL=1$`));
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});

test('a daemon that does not answer is daemon-failed, naming doctor, not "no daemon"', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  await startDaemon(t, tmp);
  const { mcp } = await session(t, tmp.wt.a, cliEnv(tmp));
  const pid = (await control(tmp.control, { op: 'ping' })).pid;
  process.kill(pid, 'SIGSTOP'); // it holds its socket but answers nothing
  t.after(() => { try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ } });
  const r = await call(mcp, 'servers');
  process.kill(pid, 'SIGCONT');
  assert.equal(r.structuredContent.error, 'daemon-failed', r.content[0].text);
  assert.match(r.content[0].text, /^the daemon did not answer within 10 s: .*; see what it does: wtproxy doctor$/);
  assert.equal((await mcp.end()).code, 0, mcp.stderr());
});
