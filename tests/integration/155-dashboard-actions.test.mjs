// 155: the dashboard's actions over HTTP, as a script would send them.
// POST /__wtproxy/api/restart, /stop and /start act only with every proof
// of coming from the dashboard page (DASHBOARD.md, "Actions"); each
// missing proof is a 403 naming the check, and changes nothing: the
// server keeps its pid, its registration its fields. A GET never acts; no
// answer carries an Access-Control-* header; a DNS-rebinding Host gets
// nothing, not even the token. With every proof, restart, stop and start
// act. The live log tail shows a log's markup and ANSI colours as text.
// Another user, even one who learnt the token, acts on none of my servers:
// the dashboard refuses them at the door, the ops too (the CLI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { makeWorktrees, startDaemon, lsJson, getWorktree, waitFor, git, cliEnv, control } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { runServer, ready, request, token, ctlServer } from './lib/ctl.mjs';

function noCors(r, what) {
  for (const h of Object.keys(r.headers)) assert.ok(!h.startsWith('access-control-'), `${what}: ${h}`);
}

test('each missing proof is refused with 403 naming it, and nothing changes', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  runServer(t, tmp, tmp.wt.a, px.port);
  const before = await ready(tmp, tmp.wt.a);
  const serverPid = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;
  const tok = await token(px.port);
  assert.match(tok, /^[0-9a-f]{64}$/);
  const host = `127.0.0.1:${px.port}`;
  const good = { Host: host, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin',
    'Content-Type': 'application/json', 'X-Wtproxy-Token': tok };
  const body = JSON.stringify({ worktree: tmp.wt.a, front: px.port });
  const without = (k) => { const h = { ...good }; delete h[k]; return h; };
  const cases = [
    ['host', { ...good, Host: `127.0.0.1:${px.port + 1}` }],
    ['host', { ...good, Host: '127.0.0.1' }],
    ['origin', { ...good, Origin: 'http://127.0.0.1:9' }],
    ['origin', { ...good, Origin: `http://wt-a.localhost:${px.port}` }],
    ['origin', { ...good, Origin: 'null' }],
    ['sec-fetch-site', { ...good, 'Sec-Fetch-Site': 'cross-site' }],
    ['sec-fetch-site', { ...good, 'Sec-Fetch-Site': 'same-site' }],
    ['content-type', { ...good, 'Content-Type': 'application/x-www-form-urlencoded' }],
    ['content-type', { ...good, 'Content-Type': 'text/plain' }],
    ['content-type', without('Content-Type')],
    ['token', without('X-Wtproxy-Token')],
    ['token', { ...good, 'X-Wtproxy-Token': tok.slice(0, 63) + (tok[63] === '0' ? '1' : '0') }],
  ];
  for (const action of ['restart', 'stop', 'start']) {
    for (const [check, headers] of cases) {
      const r = await request(px.port, 'POST', `/__wtproxy/api/${action}`, headers, body);
      assert.equal(r.status, 403, `${action} ${check}: ${r.body}`);
      const j = JSON.parse(r.body);
      assert.equal(j.check, check, `${action}: ${JSON.stringify(headers)}: ${r.body}`);
      assert.match(j.message, /refused: .*dashboard/);
      noCors(r, action);
    }
    // A GET (or HEAD) never acts, even with every proof.
    for (const method of ['GET', 'HEAD']) {
      const r = await request(px.port, method, `/__wtproxy/api/${action}`, good);
      assert.equal(r.status, 405, `${method} ${action}`);
      assert.equal(r.headers.allow, 'POST');
    }
    // A preflight is never granted.
    const pre = await request(px.port, 'OPTIONS', `/__wtproxy/api/${action}`,
      { Origin: 'http://127.0.0.1:9', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-wtproxy-token' });
    assert.notEqual(pre.status, 200);
    noCors(pre, 'preflight');
  }
  // DNS rebinding: another Host gets nothing, the token least of all.
  for (const p of ['/__wtproxy/api/token', '/__wtproxy/', '/__wtproxy/api/restart']) {
    const r = await request(px.port, p.endsWith('restart') ? 'POST' : 'GET', p,
      { ...good, Host: `evil.example:${px.port}`, Origin: `http://evil.example:${px.port}` }, p.endsWith('restart') ? body : undefined);
    assert.equal(r.status, 403, p);
    assert.ok(!r.body.includes(tok), `${p} leaked the token`);
  }
  // The token is read same-origin only.
  for (const [check, headers] of [['origin', { Origin: 'http://127.0.0.1:9' }], ['sec-fetch-site', { 'Sec-Fetch-Site': 'cross-site' }],
    ['host', { Host: `localhost:${px.port + 1}` }]]) {
    const r = await request(px.port, 'GET', '/__wtproxy/api/token', headers);
    assert.equal(r.status, 403, `${check}: ${r.body}`);
    assert.equal(JSON.parse(r.body).check, check);
    assert.ok(!r.body.includes(tok));
    noCors(r, 'token');
  }
  assert.equal((await request(px.port, 'GET', '/__wtproxy/api/token', { 'Sec-Fetch-Site': 'same-origin', Origin: `http://${host}` })).status, 200);
  // A form's body, even with the token header: refused for its type.
  const form = await request(px.port, 'POST', '/__wtproxy/api/stop',
    { ...good, 'Content-Type': 'application/x-www-form-urlencoded' }, `worktree=${encodeURIComponent(tmp.wt.a)}`);
  assert.equal(form.status, 403);

  const [after] = await lsJson(tmp);
  assert.deepEqual({ ...after, requests: 0, whoami: null }, { ...before, requests: 0, whoami: null }, 'the registration changed');
  assert.equal(JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid, serverPid, 'the server was restarted or stopped');

  // Bad bodies, with every proof: 400, nothing done.
  for (const b of ['', 'not json', '[]', JSON.stringify({ worktree: 5 })]) {
    const r = await request(px.port, 'POST', '/__wtproxy/api/restart', good, b);
    assert.equal(r.status, 400, `${JSON.stringify(b)}: ${r.body}`);
  }
  const big = await request(px.port, 'POST', '/__wtproxy/api/restart', good, JSON.stringify({ worktree: tmp.wt.a, pad: 'x'.repeat(8000) }));
  assert.equal(big.status, 413);
  assert.equal(JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid, serverPid);
});

test('with every proof: restart, stop and start act; the log tail is text', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp0, ['--trust-registry']);
  runServer(t, tmp0, tmp0.wt.a, px.port);
  const e = await ready(tmp0, tmp0.wt.a);
  const first = JSON.parse((await getWorktree(px.port, tmp0.wt.a)).body).pid;
  const tok = await token(px.port);
  const host = `localhost:${px.port}`;
  const good = { Host: host, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin',
    'Content-Type': 'application/json; charset=utf-8', 'X-Wtproxy-Token': tok };

  // The log tail: the server's first line holds <script> and ANSI colours.
  const sse = await sseCollect(px.port, `/__wtproxy/log/${e.port}`, (text) => /starting <script>/.test(text), 5000);
  assert.match(sse, /event: file\ndata: \{"path":"[^"]+","worktree":"[^"]+wt-a"/);
  const line = sse.split('\n').filter((l) => l.startsWith('data: "')).map((l) => JSON.parse(l.slice(6))).join('');
  assert.match(line, /ctl-server \d+ starting <script>alert\(1\)<\/script> red\n/);
  assert.doesNotMatch(line, /\x1b/, 'an escape sequence reached the page');
  assert.equal((await request(px.port, 'GET', '/__wtproxy/log/1', { Host: host })).status, 404);

  const restart = await request(px.port, 'POST', '/__wtproxy/api/restart', good, JSON.stringify({ worktree: tmp0.wt.a }));
  assert.equal(restart.status, 200, restart.body);
  assert.equal(JSON.parse(restart.body).restarted[0].worktree, tmp0.wt.a);
  await waitFor(async () => {
    const r = await getWorktree(px.port, tmp0.wt.a);
    return r.status === 200 && JSON.parse(r.body).pid !== first;
  }, 15000, 'a new server answers');

  const stop = await request(px.port, 'POST', '/__wtproxy/api/stop', good, JSON.stringify({ worktree: tmp0.wt.a, front: px.port }));
  assert.equal(stop.status, 200, stop.body);
  await waitFor(async () => (await lsJson(tmp0)).length === 0, 15000, 'the entry is gone');
  const again = await request(px.port, 'POST', '/__wtproxy/api/stop', good, JSON.stringify({ worktree: tmp0.wt.a }));
  assert.equal(again.status, 404);
  assert.equal(JSON.parse(again.body).error, 'not-found');

  // start: a worktree whose repository declares its server in .wtproxy.
  fs.writeFileSync(path.join(tmp0.wt.a, '.wtproxy'), `start = ${process.execPath} ${ctlServer} {port}\nfront = ${px.port}\n`);
  git(tmp0.wt.a, 'add', '.wtproxy');
  git(tmp0.wt.a, 'commit', '-q', '-m', 'declare');
  const start = await request(px.port, 'POST', '/__wtproxy/api/start', good, JSON.stringify({ worktree: tmp0.wt.a, front: px.port }));
  assert.equal(start.status, 200, start.body);
  assert.match(JSON.parse(start.body).log, /\/wt-a-[0-9a-f]{8}-\d+\.log$/);
  assert.equal(JSON.parse(start.body).running, false);
  const started = await ready(tmp0, tmp0.wt.a);
  const twice = await request(px.port, 'POST', '/__wtproxy/api/start', good, JSON.stringify({ worktree: tmp0.wt.a, front: px.port }));
  assert.equal(twice.status, 200, twice.body);
  assert.equal(JSON.parse(twice.body).running, true, 'a second start of a running server');
  assert.equal(JSON.parse(twice.body).entry.pid, started.pid);
  const other = makeWorktrees(t, ['z']);
  const none = await request(px.port, 'POST', '/__wtproxy/api/start', good, JSON.stringify({ worktree: other.wt.z, front: px.port }));
  assert.equal(none.status, 409, none.body);
  assert.match(JSON.parse(none.body).message, /declares no server for front/);
  // The started one is stopped the same way (and the test leaves nothing behind).
  const stop2 = await request(px.port, 'POST', '/__wtproxy/api/stop', good, JSON.stringify({ worktree: tmp0.wt.a }));
  assert.equal(stop2.status, 200, stop2.body);
  await waitFor(async () => (await lsJson(tmp0)).length === 0, 15000, 'the started server stopped');
});

// GET an event stream; resolve with its text once done(text) holds (or
// reject after ms), closing it.
function sseCollect(port, urlPath, done, ms) {
  return new Promise((resolve, reject) => {
    let text = '';
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d) => {
        text += d;
        if (done(text)) { clearTimeout(timer); req.destroy(); resolve(text); }
      });
    });
    const timer = setTimeout(() => { req.destroy(); reject(new Error(`${urlPath}: not within ${ms} ms:\n${text}`)); }, ms);
    req.on('error', () => {});
  });
}

const canSwitch = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

test('another user\'s browser or CLI cannot act on my servers, token or not', { skip: !canSwitch && 'needs root and setpriv' }, async (t) => {
  const tmp = makeWorktrees(t, ['a'], { mode: 0o755 });
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  fs.chmodSync(tmp.control, 0o666);
  runServer(t, tmp, tmp.wt.a, px.port);
  const before = await ready(tmp, tmp.wt.a);
  const tok = await token(px.port); // read by root: nobody cannot (test 159), but may learn it
  const nobody = ['--reuid=65534', '--regid=65534', '--clear-groups'];
  const host = `127.0.0.1:${px.port}`;
  const post = await runToExit('setpriv', [...nobody, 'curl', '-sS', '-o', '-', '-w', '\n%{http_code}', '-X', 'POST',
    '-H', `Host: ${host}`, '-H', `Origin: http://${host}`, '-H', 'Content-Type: application/json',
    '-H', `X-Wtproxy-Token: ${tok}`, '--data', JSON.stringify({ worktree: tmp.wt.a }),
    `http://${host}/__wtproxy/api/stop`], { cwd: '/', env: { HOME: '/nonexistent' } });
  const lines = post.stdout.trimEnd().split('\n');
  assert.equal(lines.pop(), '403', post.stdout + post.stderr);
  const refused = JSON.parse(lines.join('\n'));
  assert.deepEqual([refused.error, refused.check], ['forbidden', 'user'], 'refused at the door: not the daemon\'s user');
  const cliStop = await runToExit('setpriv', [...nobody, wtproxyBin, 'stop', tmp.wt.a],
    { cwd: '/', env: cliEnv(tmp, { HOME: '/nonexistent' }) });
  assert.equal(cliStop.code, 1, cliStop.stderr);
  assert.match(cliStop.stderr, /only its owner \(or root\) may stop it/);
  assert.ok(cliStop.stderr.includes(`as that user, run wtproxy stop ${tmp.wt.a}`), cliStop.stderr);
  const [after] = await lsJson(tmp);
  assert.equal(after.pid, before.pid);
  assert.equal(after.state, 'ready');
});

test('restart of a declared server that crashed starts it; of one declared nowhere, says so', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  fs.writeFileSync(path.join(tmp.wt.a, '.wtproxy'), `start = ${process.execPath} ${ctlServer} {port}\nfront = ${px.port}\n`);
  git(tmp.wt.a, 'add', '.wtproxy');
  git(tmp.wt.a, 'commit', '-q', '-m', 'declare');
  const host = `localhost:${px.port}`;
  const good = { Host: host, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin',
    'Content-Type': 'application/json', 'X-Wtproxy-Token': await token(px.port) };
  const body = JSON.stringify({ worktree: tmp.wt.a, front: px.port });
  assert.equal((await request(px.port, 'POST', '/__wtproxy/api/start', good, body)).status, 200);
  await ready(tmp, tmp.wt.a);
  // It crashes: its wrapper unregisters it, and the page's row still has
  // its Restart button (or a script sends it, as the 502 said).
  const crashed = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;
  process.kill(crashed, 'SIGKILL');
  await waitFor(async () => (await lsJson(tmp)).length === 0, 15000, 'the crashed server unregistered');
  // The control op says what the file declares and how to start it.
  await waitFor(async () => {
    const op = await control(tmp.control, { op: 'restart', worktree: tmp.wt.a });
    return op.error === 'not-found' && /its \.wtproxy declares a server on front \d+, which does not run: start it with wtproxy restart .*dashboard's start button/.test(op.message);
  }, 5000, 'the restart op names the declared server and its start');
  const restart = await request(px.port, 'POST', '/__wtproxy/api/restart', good, body);
  assert.equal(restart.status, 200, restart.body);
  assert.equal(JSON.parse(restart.body).started, true, restart.body);
  const back = await ready(tmp, tmp.wt.a);
  assert.notEqual(JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid, crashed);
  // Nothing runs in wt-b and its .wtproxy (none) declares nothing.
  const none = await request(px.port, 'POST', '/__wtproxy/api/restart', good, JSON.stringify({ worktree: tmp.wt.b, front: px.port }));
  assert.equal(none.status, 404, none.body);
  assert.match(JSON.parse(none.body).message, /no server of .*wt-b runs, and its \.wtproxy declares none to start .*wtproxy run --front \d+ -- CMD \{port\}/);
  const stop = await request(px.port, 'POST', '/__wtproxy/api/stop', good, JSON.stringify({ worktree: tmp.wt.a }));
  assert.equal(stop.status, 200, stop.body);
  await waitFor(async () => (await lsJson(tmp)).length === 0, 15000, `the started server (pid ${back.pid}) stopped`);
});
