// 147: a server added with `wtproxy register` has its /__whoami verdict in
// `wtproxy ls` within a second or two, before any request reaches it: the
// daemon asks it itself, as it asks a restarted server (118). An agent
// that registers a server and reads `ls` (or the MCP `servers` tool) learns
// at once that it serves its checkout (verified), another one (mismatch,
// naming it), or has no middleware (no-whoami, with its fix). A server not
// listening yet is asked until reload_grace ends, then stays unchecked,
// saying why; a daemon restarted on the state file asks its entries too.
// `wtproxy register` itself waits for that verdict and says it: exit 0 and
// "verified", exit 1 naming the other checkout or the missing middleware
// and the fix (the entry stays), exit 0 at once for a port nothing listens
// on yet (on another --host too: the daemon's first ask says so, and
// register says what it found); --no-wait returns at once, as register did
// before. A server serving older code is said stale once ("refuses it: ...
// stale since 12:00:01"), by register and by the conflict run meets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { makeWorktrees, startDaemon, cli, get, lsJson, waitFor, wtServer, sleeper } from './lib/registry.mjs';
import { closedPort, httpGet } from './lib/backends.mjs';

// lib/wt-server.mjs started by hand (not by `wtproxy run`), answering
// /__whoami for checkout (or 404 with --no-whoami), stopped after t.
function server(t, port, checkout, args = []) {
  const p = spawn(process.execPath, [wtServer, String(port), ...args], {
    cwd: checkout, stdio: 'ignore', env: { ...process.env, WTPROXY_WORKTREE: checkout },
  });
  const exited = new Promise((res) => p.on('exit', res));
  t.after(async () => {
    if (p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGKILL');
    await Promise.race([exited, new Promise((res) => setTimeout(res, 5000))]);
  });
  return p;
}

const listening = (port) => new Promise((res) => {
  const s = net.connect(port, '127.0.0.1', () => { s.destroy(); res(true); });
  s.on('error', () => res(false));
});

// `wtproxy register` of port for pid in cwd; its exit status must be code
// (1: the gate refuses the server, which register says).
async function register(tmp, px, cwd, port, pid, code = 0, args = []) {
  const r = await cli(tmp, ['register', '--port', String(port), '--pid', String(pid), '--front', String(px.port), ...args], { cwd });
  assert.equal(r.code, code, r.stderr);
  return r;
}

// The entry of worktree once its whoami state is want (within ms).
function verdict(tmp, worktree, want, ms) {
  return waitFor(async () => {
    const e = (await lsJson(tmp)).find((x) => x.worktree === worktree);
    return e?.whoami?.state === want && e;
  }, ms, `${worktree}: whoami ${want}`);
}

async function serving(t, tmp, checkout, args = []) {
  const port = await closedPort();
  const p = server(t, port, checkout, args);
  await waitFor(() => listening(port), 10000, `wt-server on ${port}`);
  // Its fingerprint is taken at start by a `wtproxy fingerprint` child,
  // which a loaded machine may finish after the test's next edit (seen in
  // CI: a server started before an edit answered the edited code): its
  // /__whoami answers once it is taken.
  await httpGet(port, '/__whoami');
  return { port, pid: p.pid };
}

test('register: verified, mismatch and no-whoami in ls before any request; again after a daemon restart', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const px = await startDaemon(t, tmp);
  const own = await serving(t, tmp, tmp.wt.a);
  const other = await serving(t, tmp, tmp.wt.b); // b's code, registered for c
  const bare = await serving(t, tmp, tmp.wt.d, ['--no-whoami']);

  let start = Date.now();
  await register(tmp, px, tmp.wt.a, own.port, own.pid);
  const a = await verdict(tmp, tmp.wt.a, 'verified', 2000);
  t.diagnostic(`verified ${Date.now() - start} ms after register`);
  assert.equal(a.requests, 0, 'no request went to it');
  assert.equal(a.whoami.checkout, tmp.wt.a);

  await register(tmp, px, tmp.wt.c, other.port, other.pid, 1);
  const c = await verdict(tmp, tmp.wt.c, 'mismatch', 2000);
  assert.match(c.whoami.detail, new RegExp(`port ${other.port} is served by ${tmp.wt.b}, not by ${tmp.wt.c}`));
  assert.equal(c.requests, 0);

  await register(tmp, px, tmp.wt.d, bare.port, bare.pid, 1);
  const d = await verdict(tmp, tmp.wt.d, 'no-whoami', 2000);
  assert.match(d.whoami.detail, /answers GET \/__whoami with HTTP 404.*restart it/);

  // What a person reads: the WHOAMI column.
  const ls = await cli(tmp, ['ls']);
  assert.equal(ls.code, 0, ls.stderr);
  const col = Object.fromEntries(ls.stdout.trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/)).map((c) => [c[0], c[6]]));
  assert.deepEqual(col, { [tmp.wt.a]: 'verified', [tmp.wt.c]: 'mismatch', [tmp.wt.d]: 'no-whoami' });
  // And the dashboard's.
  const dash = JSON.parse((await get(px.port, {}, '/__wtproxy/api/backends')).body);
  const status = Object.fromEntries(dash.map((e) => [e.worktree, e.status]));
  assert.deepEqual(status, { [tmp.wt.a]: 'ready', [tmp.wt.c]: 'refused', [tmp.wt.d]: 'refused' });

  // A daemon started on the state file asks the servers it finds there.
  await px.stop('SIGKILL');
  start = Date.now();
  await startDaemon(t, tmp, ['--listen', `127.0.0.1:${px.port}`]);
  await verdict(tmp, tmp.wt.a, 'verified', 2000);
  await verdict(tmp, tmp.wt.c, 'mismatch', 2000);
  t.diagnostic(`after the daemon's restart: verdicts in ${Date.now() - start} ms`);
});

test('wtproxy register says the verdict: verified, another checkout, no /__whoami, not answering yet', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  const px = await startDaemon(t, tmp);
  const own = await serving(t, tmp, tmp.wt.a);
  const other = await serving(t, tmp, tmp.wt.b); // b's code, registered for c
  const bare = await serving(t, tmp, tmp.wt.d, ['--no-whoami']);

  let start = Date.now();
  const a = await register(tmp, px, tmp.wt.a, own.port, own.pid);
  t.diagnostic(`verified: register returned in ${Date.now() - start} ms`);
  assert.match(a.stderr, new RegExp(`^wtproxy: registered ${tmp.wt.a} on front :${px.port} -> 127\\.0\\.0\\.1:${own.port}; verified: serves the code on disk$`, 'm'));

  start = Date.now();
  const c = await register(tmp, px, tmp.wt.c, other.port, other.pid, 1);
  t.diagnostic(`mismatch: register returned in ${Date.now() - start} ms`);
  assert.match(c.stderr, /but the \/__whoami gate refuses it \(mismatch\): each request to it gets HTTP 421 checkout-mismatch/);
  assert.match(c.stderr, new RegExp(`port ${other.port} is served by ${tmp.wt.b}, not by ${tmp.wt.c}`));
  assert.match(c.stderr, new RegExp(`then start your own server: cd ${tmp.wt.c} && wtproxy run`));
  assert.ok((await lsJson(tmp)).some((e) => e.worktree === tmp.wt.c), 'the entry stays, for ls and the refusals');

  const d = await register(tmp, px, tmp.wt.d, bare.port, bare.pid, 1);
  assert.match(d.stderr, /each request to it gets HTTP 502 no-whoami/);
  assert.match(d.stderr, /answers GET \/__whoami with HTTP 404.*add the Node middleware first: `import \{ whoami \} from 'wtproxy-whoami'/);

  // Registered before its server starts: said at once, and not a failure.
  const idle = sleeper(t);
  const port = await closedPort();
  start = Date.now();
  const f = await register(tmp, px, tmp.wt.f, port, idle.pid);
  const took = Date.now() - start;
  t.diagnostic(`nothing listening: register returned in ${took} ms`);
  assert.match(f.stderr, new RegExp(`registered ${tmp.wt.f} on front :${px.port} -> 127\\.0\\.0\\.1:${port}; not answering on port ${port} yet: the daemon checks its /__whoami when it does`));
  assert.ok(took < 3000, `took ${took} ms`);

  // On another --host (127.0.0.2: loopback still, so nothing leaves the
  // machine), whose listeners register does not look for itself: the
  // daemon's first ask finds nothing there, and register says so at once,
  // with the fix, instead of waiting its 3 s for no verdict.
  const hostPort = await closedPort();
  start = Date.now();
  const g = await register(tmp, px, tmp.wt.g, hostPort, idle.pid, 0, ['--host', '127.0.0.2']);
  const hostTook = Date.now() - start;
  t.diagnostic(`nothing listening on 127.0.0.2: register returned in ${hostTook} ms`);
  assert.match(g.stderr, new RegExp(`registered ${tmp.wt.g} on front :${px.port} -> 127\\.0\\.0\\.2:${hostPort}; no verdict yet: nothing answers on 127\\.0\\.0\\.2:${hostPort} yet \\(Connection refused\\): wtproxy keeps asking its /__whoami every 100 ms for reload_grace, then at the next request to it; start the server for ${tmp.wt.g} on port ${hostPort}, or end this registration: kill ${idle.pid} \\(see: wtproxy ls\\)\n`));
  assert.ok(hostTook < 2000, `took ${hostTook} ms`);
  const entry = (await lsJson(tmp)).find((x) => x.worktree === tmp.wt.g);
  assert.equal(entry.whoami.state, 'unchecked');
  assert.equal(entry.whoami.silent, true);

  // --no-wait: the old instant line, whatever the server serves.
  const e = await register(tmp, px, tmp.wt.e, other.port, other.pid, 0, ['--no-wait']);
  assert.equal(e.stderr.trim(), `wtproxy: registered ${tmp.wt.e} on front :${px.port} -> 127.0.0.1:${other.port}`);
});

// A SvelteKit app adopted by `wtproxy init --apply` has the Vite plugin,
// which loads only under `wtproxy run` (WTPROXY_PORT set); its server
// started by hand and registered answers 404. Told to add the plugin it
// already had, or to turn the gate off with --trust-registry, its user
// had no fix: the fix is how the server is started.
test('register of a Vite server started by hand: its plugin loads under wtproxy run only, said with the start that fixes it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const bin = path.join(tmp.wt.a, 'node_modules', '.bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.symlinkSync(wtServer, path.join(bin, 'vite'));
  const port = await closedPort();
  const p = spawn(process.execPath, [path.join(bin, 'vite'), String(port), '--no-whoami'], {
    cwd: tmp.wt.a, stdio: 'ignore', env: { ...process.env, WTPROXY_WORKTREE: tmp.wt.a },
  });
  t.after(() => { if (p.exitCode === null) p.kill('SIGKILL'); });
  await waitFor(() => listening(port), 10000, `vite stand-in on ${port}`);

  const r = await register(tmp, px, tmp.wt.a, port, p.pid, 1);
  assert.match(r.stderr, /each request to it gets HTTP 502 no-whoami/);
  assert.ok(r.stderr.includes("wtproxy's Vite plugin (wtproxyWhoami() from 'wtproxy-whoami/vite' in vite.config.*, as wtproxy init --apply adds it) loads only under wtproxy run, which sets WTPROXY_PORT, and this server was started without it."), r.stderr);
  assert.ok(r.stderr.includes(`or, started by hand, with WTPROXY_PORT=${port} in its environment, then wtproxy register again`), r.stderr);
  assert.ok(!r.stderr.includes('--trust-registry'), `never the gate turned off as a fix:\n${r.stderr}`);
  const fix = `Start it through wtproxy: stop pid ${p.pid}, then cd ${tmp.wt.a} && wtproxy run --front ${px.port} --restart-on-stale -- ${process.execPath} ${path.join(bin, 'vite')} {port} --no-whoami;`;
  assert.ok(r.stderr.includes(fix), r.stderr);
});

test('register before the server listens: unchecked, verified once it listens; never listening: unchecked, saying why', async (t) => {
  const tmp = makeWorktrees(t, ['late', 'never']);
  const px = await startDaemon(t, tmp, ['--reload-grace', '5s']);
  const latePort = await closedPort();
  const late = server(t, latePort, tmp.wt.late, ['--delay', '2000']); // listens 2 s after its start
  await register(tmp, px, tmp.wt.late, latePort, late.pid);
  const first = await verdict(tmp, tmp.wt.late, 'unchecked', 1000);
  assert.match(first.whoami.detail, /asking its \/__whoami/);
  await verdict(tmp, tmp.wt.late, 'verified', 5000);

  const idle = sleeper(t);
  const port = await closedPort();
  await register(tmp, px, tmp.wt.never, port, idle.pid);
  const e = await waitFor(async () => {
    const x = (await lsJson(tmp)).find((y) => y.worktree === tmp.wt.never);
    return /nothing answered/.test(x?.whoami?.detail) && x;
  }, 9000, 'the probe gave up');
  assert.equal(e.whoami.state, 'unchecked');
  assert.match(e.whoami.detail, new RegExp(`GET /__whoami on 127\\.0\\.0\\.1:${port} within reload_grace .*start the server for ${tmp.wt.never} on port ${port}, or end this registration: kill ${idle.pid}`));
  const dash = JSON.parse((await get(px.port, {}, '/__wtproxy/api/backends')).body).find((x) => x.worktree === tmp.wt.never);
  assert.equal(dash.status_reason, `registered on port ${port}; /__whoami not checked yet: ${e.whoami.detail}`);
});

test('--trust-registry: a server without /__whoami is trusted at once; whoami = off: not asked', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const trusting = await startDaemon(t, tmp, ['--trust-registry']);
  const bare = await serving(t, tmp, tmp.wt.a, ['--no-whoami']);
  await register(tmp, trusting, tmp.wt.a, bare.port, bare.pid);
  const e = await verdict(tmp, tmp.wt.a, 'trusted', 2000);
  assert.equal(e.requests, 0);
  await trusting.stop('SIGKILL');

  const off = await startDaemon(t, tmp, ['--whoami', 'off']);
  await new Promise((res) => setTimeout(res, 1000));
  const [x] = await lsJson(tmp);
  assert.equal(x.whoami, undefined, JSON.stringify(x));
  assert.equal(off.port > 0, true);
});

test('register of a server that serves older code: stale said once, by register and by the conflict a second server meets', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--stale-grace', '100ms']);
  const front2 = px.port < 65535 ? px.port + 1 : px.port - 1;
  const first = await serving(t, tmp, tmp.wt.a);
  const second = await serving(t, tmp, tmp.wt.a);
  await register(tmp, px, tmp.wt.a, first.port, first.pid);
  // an edit both servers started before: the daemon, watching the tree
  // since the first registration, knows since when their code is older
  fs.writeFileSync(path.join(tmp.wt.a, 'views.py'), 'x = 1\n');
  await verdict(tmp, tmp.wt.a, 'stale', 5000);
  const r = await register(tmp, px, tmp.wt.a, second.port, second.pid, 1, ['--front', String(front2)]);
  assert.match(r.stderr, new RegExp(`-> 127\\.0\\.0\\.1:${second.port}, but the /__whoami gate refuses it: each request to it gets HTTP 409 stale-code until this is fixed; the entry stays \\(wtproxy ls\\): stale since \\d\\d:\\d\\d:\\d\\d, when the code on disk changed: .*\\(1 file: views\\.py\\)`));
  assert.doesNotMatch(r.stderr, /\(stale\): stale since/);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', 'true'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /^wtproxy: the \/__whoami gate refuses that server: stale since \d\d:\d\d:\d\d, when the code on disk changed: /m);
});
