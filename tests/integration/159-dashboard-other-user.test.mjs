// 159: the dashboard answers its daemon's own user and root only. On a
// shared machine any user's process reaches the daemon's port: another
// user's (nobody, uid 65534, through setpriv; a uid with no passwd entry)
// gets a 403 saying whose dashboard this is, whose process asked and the
// command that prints the caller's own: the page, the event stream and
// the live tail of a server's log (a 0600 file on disk) as text, the JSON
// API, the token and an action as JSON; none of it names a worktree, a
// log line or the token, and the action stops nothing. The daemon's user
// gets them all, whether it is root or not. Needs root and setpriv (CI
// runs as root). A daemon that cannot ask whose process a client's is
// (no sock_diag: fixtures/no-sock-diag.c) shows the dashboard to no one,
// its own user included, and says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { makeWorktrees, startDaemon, startPreloadedDaemon, lsJson, sanitizerClean } from './lib/registry.mjs';
import { startProxy } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';
import { runServer, ready, request, token } from './lib/ctl.mjs';

const NOBODY = 65534;
const NAMELESS = 54321; // no passwd entry: named by its uid alone
const canSwitch = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0 &&
  !fs.readFileSync('/etc/passwd', 'utf8').split('\n').some((l) => l.split(':')[2] === String(NAMELESS));
const skip = !canSwitch && `needs root, setpriv, and no passwd entry for uid ${NAMELESS}`;

// curl as uid: { status, type, body }. --max-time ends a stream that was
// (wrongly) answered 200.
async function curlAs(uid, port, urlPath, extra = []) {
  const r = await runToExit('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups',
    'curl', '-sS', '--max-time', '3', '-o', '-', '-w', '\n%{http_code} %{content_type}', ...extra,
    `http://127.0.0.1:${port}${urlPath}`], { cwd: '/', env: { HOME: '/nonexistent' } });
  const lines = r.stdout.split('\n');
  const [status, ...type] = lines.pop().split(' ');
  return { status: Number(status), type: type.join(' '), body: lines.join('\n'), stderr: r.stderr };
}

// GET an event stream as this (the test's) user; its text once done(text).
function sseCollect(port, urlPath, done, ms) {
  return new Promise((resolve, reject) => {
    let text = '';
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d) => {
        text += d;
        if (done(text)) { clearTimeout(timer); req.destroy(); resolve(`${res.statusCode}\n${text}`); }
      });
    });
    const timer = setTimeout(() => { req.destroy(); reject(new Error(`${urlPath}: not within ${ms} ms:\n${text}`)); }, ms);
    req.on('error', () => {});
  });
}

test('another user gets a 403 naming whose dashboard it is, for every path; root gets them all', { skip }, async (t) => {
  const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  runServer(t, tmp, tmp.wt.a, px.port);
  const e = await ready(tmp, tmp.wt.a);
  const tok = await token(px.port);
  const mine = 'this is the wtproxy dashboard of root (uid 0), and your process runs as ';
  const fix = 'Yours is on your own daemon: run wtproxy dashboard as yourself; it prints its URL';
  const leaks = (r, what) => {
    assert.ok(!r.body.includes(tmp.wt.a), `${what} names the worktree: ${r.body}`);
    assert.ok(!r.body.includes(tok), `${what} holds the token`);
    assert.doesNotMatch(r.body, /ctl-server/, `${what} holds a log line`);
  };

  for (const p of ['/__wtproxy/', '/__wtproxy/events', `/__wtproxy/log/${e.port}`]) {
    const r = await curlAs(NOBODY, px.port, p);
    assert.equal(r.status, 403, `${p}: ${r.body}${r.stderr}`);
    assert.match(r.type, /^text\/plain/, p);
    assert.ok(r.body.startsWith(`wtproxy: ${mine}nobody (uid 65534): `), `${p}: ${r.body}`);
    assert.ok(r.body.includes(fix), `${p}: ${r.body}`);
    leaks(r, p);
  }
  for (const p of ['/__wtproxy/api/backends', '/__wtproxy/api/refusals', '/__wtproxy/api/daemon', '/__wtproxy/api/token']) {
    const r = await curlAs(NOBODY, px.port, p);
    assert.equal(r.status, 403, `${p}: ${r.body}`);
    assert.match(r.type, /^application\/json/, p);
    const j = JSON.parse(r.body);
    assert.deepEqual([j.ok, j.error, j.check, j.daemon_uid, j.uid], [false, 'forbidden', 'user', 0, NOBODY], p);
    assert.ok(j.message.startsWith(`${mine}nobody (uid 65534): `) && j.message.includes(fix), j.message);
    leaks(r, p);
  }
  // An action with the token (read by root here): refused at the door.
  const host = `127.0.0.1:${px.port}`;
  const stop = await curlAs(NOBODY, px.port, '/__wtproxy/api/stop', ['-X', 'POST', '-H', `Host: ${host}`,
    '-H', `Origin: http://${host}`, '-H', 'Content-Type: application/json', '-H', `X-Wtproxy-Token: ${tok}`,
    '--data', JSON.stringify({ worktree: tmp.wt.a })]);
  assert.equal(stop.status, 403, stop.body);
  assert.equal(JSON.parse(stop.body).check, 'user', stop.body);
  const nameless = await curlAs(NAMELESS, px.port, '/__wtproxy/');
  assert.equal(nameless.status, 403);
  assert.ok(nameless.body.startsWith(`wtproxy: ${mine}uid ${NAMELESS}: `), nameless.body);
  const [after] = await lsJson(tmp);
  assert.equal(after.pid, e.pid, 'the server was not stopped');

  // The daemon's user (root) gets the page, the API, the streams.
  const page = await request(px.port, 'GET', '/__wtproxy/');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'], /^text\/html/);
  const api = await request(px.port, 'GET', '/__wtproxy/api/backends');
  assert.equal(api.status, 200);
  assert.equal(JSON.parse(api.body)[0].worktree, tmp.wt.a);
  assert.match(await sseCollect(px.port, '/__wtproxy/events', (s) => s.includes('event: backends'), 5000), /^200\n/);
  const log = await sseCollect(px.port, `/__wtproxy/log/${e.port}`, (s) => /ctl-server \d+ starting/.test(s), 5000);
  assert.match(log, /^200\n/);
  assert.match(px.stderr(), /dashboard request GET \/__wtproxy\/ from 127\.0\.0\.1 refused: its process runs as nobody \(uid 65534\), not as the daemon's user, root \(uid 0\)/);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});

test('a daemon of a user who is not root: its user and root get the dashboard, a third user does not', { skip }, async (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-dash-nobody-'));
  removeAfter(t, home);
  fs.chownSync(home, NOBODY, NOBODY);
  fs.chmodSync(home, 0o700);
  const env = { HOME: home, XDG_RUNTIME_DIR: home, XDG_STATE_HOME: path.join(home, 'state') };
  const px = await startProxy(t, ['--control', path.join(home, 'control.sock'), '--state', path.join(home, 'registry.json')],
    { uid: NOBODY, gid: NOBODY, env });
  const own = await curlAs(NOBODY, px.port, '/__wtproxy/api/daemon');
  assert.equal(own.status, 200, own.body);
  assert.equal(JSON.parse(own.body).pid, px.proc.pid);
  assert.equal((await request(px.port, 'GET', '/__wtproxy/api/daemon')).status, 200, 'root');
  const other = await curlAs(NAMELESS, px.port, '/__wtproxy/api/daemon');
  assert.equal(other.status, 403, other.body);
  const j = JSON.parse(other.body);
  assert.deepEqual([j.daemon_uid, j.uid], [NOBODY, NAMELESS]);
  assert.match(j.message, /^this is the wtproxy dashboard of nobody \(uid 65534\), and your process runs as uid 54321: /);
});

test('without sock_diag, the dashboard is shown to no one, saying why', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startPreloadedDaemon(t, tmp, 'no-sock-diag', {});
  assert.match(px.stderr(), /the dashboard answers no one \(it cannot tell a client's user\): NETLINK_SOCK_DIAG socket: /);
  const me = `${process.getuid() === 0 ? 'root' : os.userInfo().username} (uid ${process.getuid()})`;
  for (const p of ['/__wtproxy/', '/__wtproxy/api/backends']) {
    const r = await request(px.port, 'GET', p);
    assert.equal(r.status, 403, `${p}: ${r.body}`);
    const msg = p.includes('/api/') ? JSON.parse(r.body).message : r.body;
    assert.ok(msg.includes(`this is the wtproxy dashboard of ${me}, shown to that user and root only, and this daemon cannot check whose process sent a request (NETLINK_SOCK_DIAG socket: `), msg);
    assert.ok(msg.includes('so it shows it to no one; as that user, wtproxy ls and wtproxy refusals show the same'), msg);
  }
  assert.equal(JSON.parse((await request(px.port, 'GET', '/__wtproxy/api/daemon')).body).uid, null);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});
