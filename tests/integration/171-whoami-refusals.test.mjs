// 171: the gate's refusals other than stale code. A recycled port (a
// server of another checkout answers on the port registered for wt-a); a
// server without /__whoami, refused by default and trusted with
// --trust-registry; answers that are garbage, of the wrong types, too
// large, or never come: each refused with its reason, the daemon unhurt,
// other backends served. Every refusal is >= 404 with X-Wtproxy-Refused,
// in the format the caller asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import {
  makeWorktrees, startDaemon, startRun, cli, get, getWorktree, lsJson, sanitizerClean, wtServer, waitFor,
  declaring, curlFrom,
} from './lib/registry.mjs';
import { httpGet } from './lib/backends.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { whoamiAnswer } from './fixtures/playwright-app/whoami.mjs';

function refusedAs(r, reason) {
  assert.equal(r.headers['x-wtproxy-refused'], reason, `expected ${reason}: ${r.status} ${r.body}`);
  assert.ok(r.status >= 404, `a refusal's status is 404 or above, got ${r.status}`);
}

// A wt-server started by hand (not through wtproxy run) in cwd on a port it
// picks (or on at); resolves { proc, port } once it listens.
async function handServer(t, cwd, extra = [], at = 0) {
  const port = at || await new Promise((res) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
  const proc = spawn(process.execPath, [wtServer, String(port), ...extra], {
    cwd, stdio: 'ignore', env: { ...process.env, WTPROXY_WORKTREE: cwd },
  });
  t.after(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((res) => {
      const c = net.connect(port, '127.0.0.1', () => { c.destroy(); res(true); }).on('error', () => res(false));
    });
    if (ok) return { proc, port };
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('hand-started server did not listen');
}

// A raw backend whose /__whoami answer is `answer` (a string, or null to
// never answer) and whose other answers are "app".
async function rawWhoami(t, answer) {
  const srv = net.createServer((c) => {
    c.on('data', (d) => {
      const s = d.toString();
      if (s.startsWith('GET /__whoami')) {
        if (answer !== null) c.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(answer)}\r\nConnection: close\r\n\r\n${answer}`);
      } else {
        c.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\napp');
      }
    });
    c.on('error', () => {});
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => srv.close());
  return srv.address().port;
}

// A server whose /__whoami is state.answer (JSON text) while state.cut is
// false, and otherwise the head and half the body, then a close: what an
// autoreloader does when it kills the old process in mid-answer.
async function cuttableWhoami(t, state) {
  const srv = net.createServer((c) => {
    c.on('data', (d) => {
      if (!d.toString().startsWith('GET /__whoami')) {
        c.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\napp');
        return;
      }
      const body = state.answer;
      const head = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
      if (state.cut) { c.write(head + body.slice(0, body.length >> 1)); c.destroy(); } else c.end(head + body);
    });
    c.on('error', () => {});
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => srv.close());
  return srv.address().port;
}

test('recycled port: another checkout\'s server on wt-a\'s port is refused, naming it and the fix', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'old']);
  const px = await startDaemon(t, tmp);
  // wt-old's server outlived its registration; wt-a registers that port.
  const stray = await handServer(t, tmp.wt.old);
  // --no-wait: register would say the refusal itself (147); the relay's is tested here
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(stray.port),
    '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  for (const accept of ['text/plain', 'application/json', 'text/html']) {
    const r = await get(px.port, { 'X-Wtproxy-Worktree': tmp.wt.a, Accept: accept });
    refusedAs(r, 'checkout-mismatch');
    assert.equal(r.status, 421);
    assert.match(r.headers['content-type'], new RegExp(accept.replace('/', '\\/')));
    const text = accept === 'application/json' ? JSON.parse(r.body).detail : r.body;
    assert.match(text, new RegExp(`port ${stray.port} is served by ${tmp.wt.old}, not by ${tmp.wt.a}`));
    assert.match(text, new RegExp(`kill ${stray.proc.pid}`));
  }
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'mismatch');
  assert.equal(e.whoami.checkout, tmp.wt.old);
  // A test runner told "not ready" starts its own server: the conflict it
  // then meets says why the registered one was refused.
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', 'true'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /already served on front/);
  assert.match(run.stderr, new RegExp(`the /__whoami gate refuses that server \\(mismatch\\): port ${stray.port} is served by ${tmp.wt.old}`));
});

test('recycled port registered with its pid: the fix never runs the other checkout\'s command', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'old']);
  const px = await startDaemon(t, tmp);
  // wt-old's prebuilt server started by hand, registered from wt-a with its pid
  const stray = await handServer(t, tmp.wt.old);
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(stray.port),
    '--pid', String(stray.proc.pid)], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  let r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'checkout-mismatch');
  // that command, run in wt-a, would be verified while serving wt-old's code
  assert.ok(!r.body.includes(wtServer), r.body);
  assert.ok(r.body.includes(`then start your own server: cd ${tmp.wt.a} && wtproxy run --front ${px.port} --restart-on-stale -- <server command with {port}>`), r.body);
  // wt-a's .wtproxy declares the server of that front: restart starts it
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} ${wtServer} {port}\nfront = ${px.port}\n`);
  await waitFor(async () => {
    r = await getWorktree(px.port, tmp.wt.a);
    return r.body.includes(`then start your own server: cd ${tmp.wt.a} && wtproxy restart --front ${px.port}`);
  }, 5000, "the declared restart");
  refusedAs(r, 'checkout-mismatch');
});

// A NestJS user's server, started by the daemon from the .wtproxy, stopped
// listening under its live watcher, and another worktree's build took its
// port: the first 421 ended with a foreground `wtproxy run ... -- sh -c
// '<the start>'`, which never returns in an agent's shell, where
// `wtproxy restart` starts the declared server and returns.
test('a daemon-started server\'s port taken by another checkout: the fix restarts the declared server, never a foreground run', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['a', 'b']);
  const first = await curlFrom(tmp.wt.a, px.port);
  assert.equal(first.worktree, tmp.wt.a, first.body);
  const [e] = await lsJson(tmp0);
  await waitFor(async () => (await lsJson(tmp0))[0].whoami.state === 'verified', 5000, 'verified');
  assert.equal((await get(e.port, {}, '/__reload')).status, 200); // alive, no longer listening
  await handServer(t, tmp.wt.b, [], e.port);
  const r = await curlFrom(tmp.wt.a, px.port);
  assert.equal(r.status, 421, r.body);
  assert.ok(r.body.includes(`then start your own server: cd ${tmp.wt.a} && wtproxy restart --front ${px.port} (it starts the server its .wtproxy declares on that front)`), r.body);
  assert.ok(!r.body.includes('wtproxy run'), r.body);
  // pasted as the page says, step by step: wt-a is served by its own again
  const kill = /Stop it: kill (\d+)/.exec(r.body);
  process.kill(Number(kill[1]), 'SIGKILL');
  for (const cmd of [['stop', '--front', String(px.port)], ['restart', '--front', String(px.port)]]) {
    const c = await cli(tmp0, cmd, { cwd: tmp.wt.a });
    assert.equal(c.code, 0, `${cmd.join(' ')}: ${c.stderr}`);
  }
  const again = await curlFrom(tmp.wt.a, px.port);
  assert.equal(again.worktree, tmp.wt.a, again.body);
});

// A SvelteKit user registered wt-b's port from wt-c by mistake and was
// told "Stop it: kill <wt-b's server>": wt-b's tests were using it.
test('another worktree\'s registered port: the fix drops this registration and starts its own, never kills that server', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const b = startRun(t, tmp, { cwd: tmp.wt.b, front: px.port });
  const bPort = await b.ready;
  const [bEntry] = await lsJson(tmp);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} ${wtServer} {port}\nfront = ${px.port}\n`);
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(bPort),
    '--ttl', '2m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  let r;
  await waitFor(async () => {
    r = await getWorktree(px.port, tmp.wt.a);
    return r.body.includes('&& wtproxy restart');
  }, 5000, 'the declared start in the refusal');
  refusedAs(r, 'checkout-mismatch');
  assert.ok(r.body.includes(`is ${tmp.wt.b}'s registered server (front :${px.port}, pid ${bEntry.pid}), in use: leave it running`), r.body);
  assert.ok(!/\bkill\b/.test(r.body), `never says to kill wt-b's server:\n${r.body}`);
  const fix = `cd ${tmp.wt.a} && wtproxy unregister --front ${px.port} && wtproxy restart --front ${px.port}`;
  assert.ok(r.body.includes(`drop it and start your own: ${fix}`), r.body);
  // The Fix line agrees: it said "Stop the server named above", wt-b's.
  assert.ok(r.body.includes('\nFix: Leave the server named above running: it is another worktree\'s. Drop your worktree\'s registration of its port and start your own (the command is above).\n'), r.body);
  assert.doesNotMatch(r.body, /Fix: Stop/, r.body);
  // pasted (each wtproxy command as the agent's shell runs it, in wt-a)
  for (const args of [['unregister', '--front', String(px.port)], ['restart', '--front', String(px.port)]]) {
    const step = await cli(tmp, args, { cwd: tmp.wt.a, ms: 20000 });
    assert.equal(step.code, 0, `${args.join(' ')}: ${step.stderr}`);
  }
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).worktree, tmp.wt.a);
  r = await getWorktree(px.port, tmp.wt.b);
  assert.equal(r.status, 200, `wt-b's server still serves wt-b: ${r.body}`);
  assert.equal(b.proc.exitCode, null);
});

test('no /__whoami: refused with the line to add; --trust-registry serves until a file changes', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs: ['--no-whoami'] });
  await run.ready;
  const r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'no-whoami');
  assert.equal(r.status, 502);
  assert.match(r.body, /HTTP 404/);
  // a Node server: the Node middleware, for Express and for a plain
  // node:http server (which has no app.use), and first the restart of its wrapper
  assert.ok(r.body.includes("`import { whoami } from 'wtproxy-whoami'; const mw = whoami();`, then `app.use(mw)` first (Express, Connect) " +
    'or `http.createServer((req, res) => mw(req, res, () => handler(req, res)))` (node:http)'), r.body);
  assert.ok(r.body.includes("(in a CommonJS file: `const mw = process.env.WTPROXY_PORT ? require('wtproxy-whoami').whoami() : (req, res, next) => next();`, Node 20.19 or later; wtproxy help whoami)"), r.body);
  assert.doesNotMatch(r.body, /WhoamiMiddleware/);
  assert.ok(r.body.includes(`restart it: cd ${tmp.wt.a} && wtproxy restart --front ${px.port}.`), r.body);
  assert.match(r.body, /--trust-registry/);
  assert.doesNotMatch(r.body, /WTPROXY_PORT=/, 'wtproxy run set it');
  // Started by hand and registered: its middleware, under WTPROXY_PORT
  // only as init writes it, is not loaded (a Tornado user was told to wrap
  // an app that was wrapped)
  const other = makeWorktrees(t, ['b']);
  const own = await handServer(t, other.wt.b, ['--no-whoami']);
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(own.port),
    '--pid', String(own.proc.pid)], { cwd: other.wt.b });
  assert.equal(reg.code, 0, reg.stderr);
  const byHand = await getWorktree(px.port, other.wt.b);
  refusedAs(byHand, 'no-whoami');
  assert.ok(byHand.body.includes(`a server started by hand needs WTPROXY_PORT=${own.port} in its environment (wtproxy run sets it)`), byHand.body);

  const tmp2 = makeWorktrees(t, ['a']);
  const px2 = await startDaemon(t, tmp2, ['--trust-registry', '--stale-grace', '100ms']);
  const run2 = startRun(t, tmp2, { cwd: tmp2.wt.a, front: px2.port, serverArgs: ['--no-whoami'] });
  await run2.ready;
  assert.equal((await getWorktree(px2.port, tmp2.wt.a)).status, 200);
  await new Promise((res) => setTimeout(res, 20));
  // a Node server: watched as one (a .py file is none of its code)
  fs.writeFileSync(path.join(tmp2.wt.a, 'views.py'), 'x = 1\n');
  assert.equal((await getWorktree(px2.port, tmp2.wt.a)).status, 200);
  fs.writeFileSync(path.join(tmp2.wt.a, 'routes.js'), 'export const x = 1;\n');
  const stale = await getWorktree(px2.port, tmp2.wt.a);
  refusedAs(stale, 'stale-code');
  assert.match(stale.body, /routes\.js/);
});

test('--trust-registry with --restart-on-stale: each edit restarts the server, and every request meets the new one', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry', '--stale-grace', '100ms']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, serverArgs: ['--no-whoami'], runArgs: ['--restart-on-stale'], stopSignal: 'SIGTERM' });
  await run.ready;
  let pid = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;
  for (const edit of [1, 2]) {
    await new Promise((res) => setTimeout(res, 20));
    fs.writeFileSync(path.join(tmp.wt.a, 'routes.js'), `export const x = ${edit};\n`);
    // Trusted from its registration: a file newer than the server restarts
    // it. Requests that meet the old process's 404 during the restart wait
    // for the new one (they were refused as stale, restart-on-stale named
    // as the fix, when its restart was never sent or not yet registered).
    const rs = await Promise.all([0, 1, 2, 3, 4].map(() => getWorktree(px.port, tmp.wt.a)));
    for (const r of rs) assert.equal(r.status, 200, `edit ${edit}: ${r.status} ${r.body}`);
    const pids = new Set(rs.map((r) => JSON.parse(r.body).pid));
    assert.equal(pids.size, 1, `edit ${edit}: one server answered all: ${[...pids]}`);
    assert.ok(!pids.has(pid), `edit ${edit}: a new server process answered, not pid ${pid}`);
    [pid] = pids;
  }
  assert.equal(run.stderr().match(/restarting it/g).length, 2, run.stderr());
});

// A Go todo app's server (stdlib only), run by `go run` in worktree a of
// tmp: no /__whoami (404), its greeting in greeting.go. Go's caches and
// temporary folders under tmp, so that nothing outlives the test.
function goApp(tmp) {
  const wt = tmp.wt.a;
  fs.writeFileSync(path.join(wt, 'go.mod'), 'module example.com/todo\n\ngo 1.19\n');
  fs.writeFileSync(path.join(wt, 'main.go'), `package main

import (
	"flag"
	"fmt"
	"net/http"
)

func main() {
	port := flag.Int("port", 0, "port")
	flag.Parse()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/__whoami" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, greeting())
	})
	panic(http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil))
}
`);
  fs.writeFileSync(path.join(wt, 'greeting.go'), 'package main\n\nfunc greeting() string { return "Howdy from the feature branch" }\n');
  const env = { GOCACHE: path.join(tmp.root, 'go-cache'), GOPATH: path.join(tmp.root, 'go-path'), GOTMPDIR: path.join(tmp.root, 'go-tmp'), GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' };
  fs.mkdirSync(env.GOTMPDIR);
  return { env, command: ['go', 'run', '.', '-port', '{port}'] };
}

test('a `go run` server without /__whoami: the page names the Go recipe, not the middlewares, and what --trust-registry would watch', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const app = goApp(tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env: app.env, command: app.command, readyMs: 60000, stopSignal: 'SIGTERM' });
  await run.ready;
  const r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'no-whoami');
  assert.ok(r.body.includes('If you added its /__whoami after it started, restart it: ' +
    `cd ${tmp.wt.a} && wtproxy restart --front ${px.port}. Otherwise give it a /__whoami of its own: ` +
    'wtproxy help whoami-protocol, section 1, has the recipe for Go'), r.body);
  assert.doesNotMatch(r.body, /wtproxy-whoami|WhoamiMiddleware|whoami middleware/);
  assert.ok(r.body.includes('or start wtproxy with --trust-registry to trust the registration instead: it then ' +
    'calls a Go server stale once one of its files is newer than it, watching **/*.go, **/go.mod, **/go.sum, ' +
    '**/go.work; not the files it embeds (//go:embed) or reads at start, such as templates'), r.body);
});

test('--trust-registry, a `go run` server: an edit to its .go file makes it stale, and under --restart-on-stale the next request meets the new code', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry', '--stale-grace', '100ms', '--start-timeout', '60s']);
  const app = goApp(tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env: app.env, command: app.command, runArgs: ['--restart-on-stale'], readyMs: 60000, stopSignal: 'SIGTERM' });
  await run.ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'Howdy from the feature branch');
  const [entry] = await lsJson(tmp);
  assert.equal(entry.whoami.state, 'trusted', JSON.stringify(entry));
  assert.match(entry.whoami.detail, /watched for a Go server: \*\*\/\*\.go, \*\*\/go\.mod, \*\*\/go\.sum/);
  await new Promise((res) => setTimeout(res, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'greeting.go'), 'package main\n\nfunc greeting() string { return "Hello from the todo app" }\n');
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'Hello from the todo app', `the edited greeting.go, not the old binary's (state: ${JSON.stringify((await lsJson(tmp))[0].whoami)})`);
  assert.match(run.stderr(), /restarting it/);
  // its tests' own output in the worktree never makes it stale mid-run
  fs.mkdirSync(path.join(tmp.wt.a, 'test-results'));
  fs.writeFileSync(path.join(tmp.wt.a, 'test-results', '.last-run.json'), '{"status":"passed"}\n');
  fs.writeFileSync(path.join(tmp.wt.a, 'greeting_test.go'), 'package main\n');
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(run.stderr().match(/restarting it/g).length, 1, run.stderr());
});

// A Ruby server in worktree a of tmp, a few lines of plain Ruby (no
// Rails in CI): no /__whoami (404), its page the template and database.yml
// it reads at start, as a Rails server reads database.yml (and serves an
// edited template late: its file watcher lags).
function rubyApp(tmp) {
  const wt = tmp.wt.a;
  fs.mkdirSync(path.join(wt, 'app/views/items'), { recursive: true });
  fs.mkdirSync(path.join(wt, 'config'));
  fs.writeFileSync(path.join(wt, 'app/views/items/index.html.erb'), '<h1>Items</h1>\n');
  fs.writeFileSync(path.join(wt, 'config/database.yml'), 'development:\n  database: app_dev\n');
  fs.writeFileSync(path.join(wt, 'server.rb'), `require 'socket'
page = File.read('app/views/items/index.html.erb') + File.read('config/database.yml')
server = TCPServer.new('127.0.0.1', Integer(ARGV[0]))
loop do
  c = server.accept
  begin
    found = c.gets.to_s.split[1] != '/__whoami'
    while (l = c.gets) && l != "\\r\\n"; end
    body = found ? page : 'no /__whoami'
    c.write "HTTP/1.1 #{found ? '200 OK' : '404 Not Found'}\\r\\nContent-Length: #{body.bytesize}\\r\\nConnection: close\\r\\n\\r\\n#{body}"
  rescue SystemCallError
  ensure
    c.close
  end
end
`);
  return ['ruby', 'server.rb', '{port}'];
}

test('--trust-registry, a Ruby server: an edited template or config/*.yml makes it stale, and ls says both are watched', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry', '--stale-grace', '100ms']);
  const command = rubyApp(tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command, runArgs: ['--restart-on-stale'], stopSignal: 'SIGTERM' });
  await run.ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, '<h1>Items</h1>\ndevelopment:\n  database: app_dev\n');
  const [entry] = await lsJson(tmp);
  assert.equal(entry.whoami.state, 'trusted', JSON.stringify(entry));
  assert.ok(entry.whoami.detail.includes('watched for a Ruby server: **/*.rb, **/*.ru, **/Gemfile.lock, **/*.erb, ' +
    '**/*.haml, **/*.slim, **/*.builder, **/*.jbuilder, **/config/**/*.yml, **/.env, **/.env.*; ' +
    'not its assets (app/assets, app/javascript) and other files it reads'), entry.whoami.detail);
  await new Promise((res) => setTimeout(res, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'app/views/items/index.html.erb'), '<h1>Items t1</h1>\n');
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /^<h1>Items t1<\/h1>/, `the edited template, not the old one (state: ${JSON.stringify((await lsJson(tmp))[0].whoami)})`);
  await new Promise((res) => setTimeout(res, 20));
  fs.writeFileSync(path.join(tmp.wt.a, 'config/database.yml'), 'development:\n  database: app_dev_wt_a\n');
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /database: app_dev_wt_a\n$/, 'the edited database.yml, read at start');
  assert.equal(run.stderr().match(/restarting it/g).length, 2, run.stderr());
  // what the server writes as it runs never makes it stale
  fs.mkdirSync(path.join(tmp.wt.a, 'log'));
  fs.writeFileSync(path.join(tmp.wt.a, 'log/development.log'), 'Started GET "/"\n');
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(run.stderr().match(/restarting it/g).length, 2, run.stderr());
});

// A Mojolicious::Lite app in worktree a of tmp, served by a real morbo
// (Debian's libmojolicious-perl): no /__whoami (Mojolicious' 404), its
// page the template templates/index.html.ep, which morbo reloads on its
// own about a second after an edit.
function mojoApp(tmp) {
  const wt = tmp.wt.a;
  fs.mkdirSync(path.join(wt, 'templates'));
  fs.writeFileSync(path.join(wt, 'templates/index.html.ep'), '<h1 id="title">Mojo Notes</h1>\n');
  fs.writeFileSync(path.join(wt, 'app.pl'), "use Mojolicious::Lite;\nget '/' => 'index';\napp->start;\n");
  return ['morbo', '-l', 'http://127.0.0.1:{port}', 'app.pl'];
}

const noMorbo = !fs.existsSync('/usr/bin/morbo') && 'morbo is not installed (scripts/bootstrap: libmojolicious-perl)';

test('--trust-registry, a morbo server: an edited .ep template is never served old as trusted', { skip: noMorbo }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry', '--stale-grace', '100ms']);
  const command = mojoApp(tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command, runArgs: ['--restart-on-stale'], readyMs: 30000, stopSignal: 'SIGTERM' });
  await run.ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /<h1 id="title">Mojo Notes<\/h1>/);
  assert.equal((await lsJson(tmp))[0].whoami.state, 'trusted');
  for (const title of ['T1', 'T2']) {
    await new Promise((res) => setTimeout(res, 20));
    fs.writeFileSync(path.join(tmp.wt.a, 'templates/index.html.ep'), `<h1 id="title">${title}</h1>\n`);
    r = await getWorktree(px.port, tmp.wt.a);
    assert.equal(r.status, 200, r.body);
    assert.match(r.body, new RegExp(`<h1 id="title">${title}</h1>`), `the edited template, not the old one (state: ${JSON.stringify((await lsJson(tmp))[0].whoami)})`);
  }
  assert.equal(run.stderr().match(/restarting it/g).length, 2, run.stderr());
  const [entry] = await lsJson(tmp);
  assert.equal(entry.whoami.state, 'trusted', JSON.stringify(entry));
  assert.ok(entry.whoami.detail.includes('watched for a Perl server: **/*.pl, **/*.pm, **/*.psgi, **/cpanfile, ' +
    '**/cpanfile.snapshot, **/*.ep, **/*.tt, **/*.tx, **/.env, **/.env.*; not its config'), entry.whoami.detail);
});

// The Mojolicious recipe of `wtproxy help whoami-protocol`, section 1,
// as a user copies it: its Perl lines.
async function mojoRecipe(tmp) {
  const help = await cli(tmp, ['help', 'whoami-protocol']);
  assert.equal(help.code, 0, help.stderr);
  const perl = /```perl\n([\s\S]*?)```/.exec(help.stdout)?.[1];
  assert.ok(perl, 'wtproxy help whoami-protocol has a Perl recipe');
  assert.match(help.stdout, /CLOCK_BOOTTIME/, 'and says how a start time is taken right');
  return perl.replace(/^ {2}/gm, '');
}

test('whoami-protocol\'s Mojolicious recipe under morbo: verified, and an edited template is held until morbo\'s new worker serves it, never restarted', { skip: noMorbo }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const command = mojoApp(tmp);
  const recipe = await mojoRecipe(tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'app.pl'), `use Mojolicious::Lite;\n${recipe}get '/' => 'index';\napp->start;\n`);
  // the recipe's `wtproxy`: this build, as an install puts it on PATH
  const env = { PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command, env, runArgs: ['--restart-on-stale'], readyMs: 30000, stopSignal: 'SIGTERM' });
  await run.ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /<h1 id="title">Mojo Notes<\/h1>/);
  assert.equal((await lsJson(tmp))[0].whoami.state, 'verified', JSON.stringify((await lsJson(tmp))[0].whoami));
  for (const title of ['T1', 'T2']) {
    await new Promise((res) => setTimeout(res, 20));
    fs.writeFileSync(path.join(tmp.wt.a, 'templates/index.html.ep'), `<h1 id="title">${title}</h1>\n`);
    r = await getWorktree(px.port, tmp.wt.a);
    assert.equal(r.status, 200, r.body);
    assert.match(r.body, new RegExp(`<h1 id="title">${title}</h1>`), 'the edited template, from morbo\'s new worker');
  }
  assert.doesNotMatch(run.stderr(), /restarting it/, 'morbo took each edit in: no restart');
});

// A Rack (Sinatra-style) app in worktree a of tmp, served by a real puma
// through rackup (Debian's puma): its page from lib/greeting.rb, loaded at
// start. config is config.ru's lines above its `run`.
function rackApp(tmp, config = '') {
  const wt = tmp.wt.a;
  fs.mkdirSync(path.join(wt, 'lib'), { recursive: true });
  fs.writeFileSync(path.join(wt, 'lib/greeting.rb'), "GREETING = 'Hello from notes'\n");
  fs.writeFileSync(path.join(wt, 'config.ru'), `require_relative 'lib/greeting'\n${config}` +
    "run lambda { |env| env['PATH_INFO'] == '/' ? [200, { 'content-type' => 'text/plain' }, [GREETING]] : [404, {}, ['Not Found']] }\n");
  return ['rackup', '-s', 'puma', '-o', '127.0.0.1', '-p', '{port}'];
}

const noPuma = !fs.existsSync('/usr/bin/puma') && 'puma is not installed (scripts/bootstrap: puma)';

// A Sinatra user, sent by the 502 to the recipe for a server built before
// it runs, wrote a start that fingerprinted before `exec rackup`, read by
// the app: a puma started by hand after an edit, the edit then reverted,
// answered the fingerprint the last start left and was verified while it
// served the edit (a test passed on code not on disk). The 502 for a Ruby
// server now names the recipe for a server that loads its code itself,
// and whoami-protocol has it for Rack: taken in the process, the revert
// is a file modified after its start, and the server is stale.
test('a Rack server: the 502 names the in-process recipe; whoami-protocol\'s Rack recipe is verified, and a reverted edit it did not load is stale', { skip: noPuma }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const env = { PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  let run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command: rackApp(tmp), env, readyMs: 30000, stopSignal: 'SIGTERM' });
  await run.ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'no-whoami');
  assert.ok(r.body.includes('wtproxy help whoami-protocol, section 1, has the recipe for a server that loads its code ' +
    'itself (wtproxy fingerprint --json --unknown-after-start PID'), r.body);
  run.proc.kill('SIGTERM');
  await run.exited;

  const help = await cli(tmp, ['help', 'whoami-protocol']);
  const ruby = /```ruby\n([\s\S]*?)```/.exec(help.stdout)?.[1];
  assert.ok(ruby, 'wtproxy help whoami-protocol has a Rack recipe');
  const command = rackApp(tmp, ruby.replace(/^ {2}/gm, ''));
  run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command, env, readyMs: 30000, stopSignal: 'SIGTERM' });
  await run.ready;
  r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'Hello from notes');
  assert.equal((await lsJson(tmp))[0].whoami.state, 'verified', JSON.stringify((await lsJson(tmp))[0].whoami));
  run.proc.kill('SIGTERM');
  await run.exited;

  // By hand: an edit, puma started on it, the edit reverted, registered.
  fs.writeFileSync(path.join(tmp.wt.a, 'lib/greeting.rb'), "GREETING = 'HELLO FROM NOTES'\n");
  const port = await new Promise((res) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
  const hand = spawn('rackup', command.slice(1).map((a) => (a === '{port}' ? String(port) : a)),
    { cwd: tmp.wt.a, stdio: 'ignore', env: { ...process.env, ...env } });
  t.after(() => { if (hand.exitCode === null) hand.kill('SIGKILL'); });
  await waitFor(async () => String((await httpGet(port, '/').catch(() => null))?.body) === 'HELLO FROM NOTES', 30000, 'puma by hand, on the edit');
  fs.writeFileSync(path.join(tmp.wt.a, 'lib/greeting.rb'), "GREETING = 'Hello from notes'\n");
  const reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(port), '--pid', String(hand.pid),
    '--ttl', '10m'], { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  r = await getWorktree(px.port, tmp.wt.a);
  assert.notEqual(r.body, 'HELLO FROM NOTES', 'the reverted edit served');
  refusedAs(r, 'stale-code');
});

// Three Ruby users met init's "unknown app layout" and pasted the Rack
// block by hand. init adopts a config.ru: its start (rackup) and the
// guide's block above its `run`, which a real puma then answers with.
test('wtproxy init adopts a Rack app: rackup, and config.ru answering /__whoami from the guide', { skip: noPuma }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  rackApp(tmp);
  const init = await cli(tmp, ['init', '--apply'], { cwd: tmp.wt.a });
  assert.equal(init.code, 0, init.stderr);
  assert.match(init.stdout, /: rack app, front port \d+\n/, init.stdout);
  const wtfile = fs.readFileSync(path.join(tmp.wt.a, '.wtproxy'), 'utf8');
  assert.match(wtfile, /^start = rackup -o 127\.0\.0\.1 -p \{port\}$/m, wtfile);
  const ru = fs.readFileSync(path.join(tmp.wt.a, 'config.ru'), 'utf8');
  const help = await cli(tmp, ['help', 'whoami-protocol']);
  const block = /For a Rack app[\s\S]*?```ruby\n([\s\S]*?)```/.exec(help.stdout)[1].replace(/^ {2}/gm, '');
  assert.ok(ru.includes(`${block}run lambda`), `the guide's block, above the run:\n${ru}`);
  const again = await cli(tmp, ['init'], { cwd: tmp.wt.a });
  assert.match(again.stdout, /config\.ru answers \/__whoami already[\s\S]*nothing to change/, again.stdout);

  const px = await startDaemon(t, tmp);
  const env = { PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  const command = wtfile.match(/^start = (.*)$/m)[1].split(' ');
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, command, env, readyMs: 30000, stopSignal: 'SIGTERM' });
  await run.ready;
  let r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'Hello from notes');
  assert.equal((await lsJson(tmp))[0].whoami.state, 'verified', JSON.stringify((await lsJson(tmp))[0].whoami));
  fs.writeFileSync(path.join(tmp.wt.a, 'lib/greeting.rb'), "GREETING = 'Hi from notes'\n");
  r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'stale-code');
  assert.match(r.body, /lib\/greeting\.rb/, r.body);
});

test('unusable answers are refused with the reason; other backends keep being served', async (t) => {
  const tmp = makeWorktrees(t, ['good', 'garbage', 'types', 'large', 'hang', 'algo']);
  const px = await startDaemon(t, tmp, ['--whoami-timeout', '300ms']);
  const good = startRun(t, tmp, { cwd: tmp.wt.good, front: px.port });
  await good.ready;
  const answers = {
    garbage: ['{"wtproxy_whoami": 1, "checkout": ', /JSON|parse|invalid/i],
    types: [JSON.stringify({ wtproxy_whoami: 1, checkout: 42, pid: 'x', started_at: 1, fingerprint: [] }), /checkout/],
    large: [JSON.stringify({ pad: 'x'.repeat(70 * 1024) }), /64 KiB|too large|larger/i],
    hang: [null, /in time|timeout/i],
    algo: [JSON.stringify({ wtproxy_whoami: 1, checkout: tmp.wt.algo, pid: 1, started_at: '2026-12-02T08:00:00Z',
      fingerprint: { algorithm: 'md5', include: [], exclude: [], files: 0, hash: 'sha256:' + '0'.repeat(64) } }), /algorithm/],
  };
  for (const [name, [answer]] of Object.entries(answers)) {
    const port = await rawWhoami(t, answer);
    const r = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(port), '--ttl', '10m'],
      { cwd: tmp.wt[name] });
    assert.equal(r.code, 0, r.stderr);
  }
  const results = await Promise.all([
    ...Object.keys(answers).map((n) => getWorktree(px.port, tmp.wt[n])),
    getWorktree(px.port, tmp.wt.good),
  ]);
  Object.entries(answers).forEach(([name, [, why]], i) => {
    refusedAs(results[i], 'whoami-invalid');
    assert.match(results[i].body, why, `${name}: ${results[i].body}`);
  });
  assert.equal(results.at(-1).status, 200, 'the good backend is served meanwhile');
  assert.equal((await getWorktree(px.port, tmp.wt.good)).status, 200);
  sanitizerClean(assert, px.stderr());
});

// A server that takes connections and answers nothing (morbo whose app
// failed to load, uvicorn --reload waiting for connections to close): its
// 502's headline said "wtproxy could not connect to the dev server" under
// a detail that said it connected: "no whole answer in time".
test('a server that connects but answers nothing: the 502 says so, not "could not connect"', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--whoami-timeout', '300ms', '--reload-grace', '1s']);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port });
  await run.ready;
  const ok = await getWorktree(px.port, tmp.wt.a);
  assert.equal(ok.status, 200, ok.body);
  process.kill(JSON.parse(ok.body).pid, 'SIGSTOP'); // its socket still takes connections
  t.after(() => { try { process.kill(JSON.parse(ok.body).pid, 'SIGCONT'); } catch { /* gone */ } });
  fs.writeFileSync(path.join(tmp.wt.a, 'app.py'), 'print(1)\n'); // the gate asks its /__whoami again
  await waitFor(async () => (await lsJson(tmp))[0].whoami.state !== 'verified', 5000, 'the edit seen');
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 502, r.body);
  assert.match(r.body, /^wtproxy: 502 Bad Gateway: wtproxy connected to the dev server, but it sent no answer in time/, r.body);
  assert.doesNotMatch(r.body, /could not connect/, r.body);
  assert.match(r.body, /no whole answer in time; it is the dev server of/, r.body);
  assert.match(r.body, new RegExp(`\nFix: Read why it stopped answering in its output: wtproxy logs --front ${px.port}`), r.body);
});

// The gate compares the socket listening on the backend's address with the
// one that answered (WHOAMI_LISTENER_MS): a server swapped behind the port
// never serves a request in the registered server's name, not even once.
test('a server swapped behind a verified TTL registration: its first request is refused, never served', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'old']);
  const px = await startDaemon(t, tmp);
  const own = await handServer(t, tmp.wt.a);
  const reg = await cli(tmp, ['register', '--front', String(px.port), '--port', String(own.port), '--ttl', '10m'],
    { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  for (let round = 0; round < 3; round++) {
    const ok = await getWorktree(px.port, tmp.wt.a);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(JSON.parse(ok.body).worktree, tmp.wt.a);
  }
  // The same port, now another checkout's server (no failed request between).
  own.proc.kill('SIGKILL');
  await new Promise((r) => own.proc.on('exit', r));
  const swapped = spawn(process.execPath, [wtServer, String(own.port)], {
    cwd: tmp.wt.old, stdio: 'ignore', env: { ...process.env, WTPROXY_WORKTREE: tmp.wt.old },
  });
  t.after(() => { if (swapped.exitCode === null) swapped.kill('SIGKILL'); });
  await waitFor(async () => (await httpGet(own.port, '/__whoami').catch(() => null))?.status === 200,
    5000, 'the swapped server answers');
  await new Promise((res) => setTimeout(res, 60)); // past WHOAMI_LISTENER_MS since any check
  const r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'checkout-mismatch');
  assert.ok(r.body.includes(`is served by ${tmp.wt.old}, not by ${tmp.wt.a}`), r.body);
});

test('an answer cut in the middle: refused when the server never answered, waited for when it had (a reload)', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  const never = { answer: await whoamiAnswer(tmp.wt.b), cut: true };
  const neverPort = await cuttableWhoami(t, never);
  let reg = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(neverPort), '--ttl', '10m'],
    { cwd: tmp.wt.b });
  assert.equal(reg.code, 0, reg.stderr);
  const refused = await getWorktree(px.port, tmp.wt.b);
  refusedAs(refused, 'whoami-invalid');
  assert.match(refused.body, /in the middle of its answer/);

  const state = { answer: await whoamiAnswer(tmp.wt.a), cut: false };
  const port = await cuttableWhoami(t, state);
  reg = await cli(tmp, ['register', '--front', String(px.port), '--port', String(port), '--ttl', '10m'],
    { cwd: tmp.wt.a });
  assert.equal(reg.code, 0, reg.stderr);
  assert.equal((await getWorktree(px.port, tmp.wt.a)).status, 200);
  // An edit: the gate asks again, and the server dies in mid-answer, then
  // comes back 400 ms later with the new code.
  state.cut = true;
  fs.writeFileSync(path.join(tmp.wt.a, 'views.py'), 'x = 2\n');
  const back = setTimeout(async () => { state.answer = await whoamiAnswer(tmp.wt.a); state.cut = false; }, 400);
  t.after(() => clearTimeout(back));
  const t0 = Date.now();
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 200, `held, then served by the reloaded server: ${r.status} ${r.body}`);
  assert.ok(Date.now() - t0 >= 350, `held until the server answered whole, took ${Date.now() - t0} ms`);
});
