// 016: real clients -- curl, Python's http.client, node:http and fetch --
// get the right body through the proxy; and a daemon listening on [::1]
// serves an IPv6 loopback client (X-Forwarded-For is then ::1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import net from 'node:net';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, sha256, patternSha256, MiB, stopClean } from './lib/backends.mjs';

const N = 2 * MiB + 99;

function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 30000, maxBuffer: 64 * MiB, encoding: 'buffer', ...opts }, (err, stdout, stderr) =>
      (err ? reject(new Error(`${cmd} failed: ${err.message}\n${stderr}`)) : resolve({ stdout, stderr: stderr.toString() })));
  });
}

const PY = `
import http.client, hashlib, json, sys
port = int(sys.argv[1])
c = http.client.HTTPConnection('127.0.0.1', port, timeout=20)
out = {}
for mode in ('chunked', 'length'):
    c.request('GET', '/stream?bytes=${N}&mode=' + mode)
    r = c.getresponse()
    b = r.read()
    out[mode] = {'status': r.status, 'len': len(b), 'sha': hashlib.sha256(b).hexdigest()}
body = b'py-body' * 1000
c.request('POST', '/hash', body=body, headers={'Content-Type': 'application/octet-stream'})
r = c.getresponse()
out['post'] = json.loads(r.read())
out['post_expect'] = {'len': len(body), 'sha': hashlib.sha256(body).hexdigest()}
print(json.dumps(out))
`;

test('curl gets the right bodies', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  for (const mode of ['chunked', 'length']) {
    const { stdout } = await run('curl', ['-sS', '--fail', `http://127.0.0.1:${px.port}/stream?bytes=${N}&mode=${mode}`]);
    assert.equal(stdout.length, N, mode);
    assert.equal(sha256(stdout), patternSha256(N), mode);
  }
  const { stdout } = await run('curl', ['-sS', '--fail', '-H', 'X-From: curl', `http://127.0.0.1:${px.port}/curl?x=1`]);
  const got = JSON.parse(stdout.toString());
  assert.equal(got.url, '/curl?x=1');
  assert.equal(got.headers['x-from'], 'curl');
  assert.match(got.headers['user-agent'], /^curl\//);
  await stopClean(px);
});

test('python http.client gets the right bodies (keep-alive, GET and POST)', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const { stdout } = await run('/usr/bin/python3', ['-c', PY, String(px.port)]);
  const out = JSON.parse(stdout.toString());
  for (const mode of ['chunked', 'length']) {
    assert.equal(out[mode].status, 200);
    assert.equal(out[mode].len, N, mode);
    assert.equal(out[mode].sha, patternSha256(N), mode);
  }
  assert.equal(out.post.length, out.post_expect.len);
  assert.equal(out.post.sha256, out.post_expect.sha);
  await stopClean(px);
});

test('node:http and fetch get the right bodies', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const r = await httpGet(px.port, `/stream?bytes=${N}&mode=chunked`);
  assert.equal(r.status, 200);
  assert.equal(sha256(r.body), patternSha256(N));
  const f = await fetch(`http://127.0.0.1:${px.port}/stream?bytes=${N}&mode=length`);
  assert.equal(f.status, 200);
  const b = Buffer.from(await f.arrayBuffer());
  assert.equal(b.length, N);
  assert.equal(sha256(b), patternSha256(N));
  await stopClean(px);
});

async function canBindV6() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', (e) => resolve(e.code || String(e)));
    s.listen(0, '::1', () => s.close(() => resolve(true)));
  });
}

test('IPv6: a daemon on [::1] serves a ::1 client', async (t) => {
  const ok = await canBindV6();
  if (ok !== true) { t.skip(`::1 cannot be bound on this machine (${ok}); IPv6 listener not tested`); return; }
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--listen', '[::1]:0', '--backend', `127.0.0.1:${be.port}`]);
  assert.match(px.stderr(), /listening on \[?::1\]?:\d+/);
  const r = await httpGet(px.port, `/stream?bytes=${N}&mode=chunked`, { host: '::1' });
  assert.equal(r.status, 200);
  assert.equal(sha256(r.body), patternSha256(N));
  const e = await httpGet(px.port, '/v6', { host: '::1' });
  const got = JSON.parse(e.body.toString());
  assert.equal(got.headers['x-forwarded-for'], '::1');
  const { stdout } = await run('curl', ['-sS', '--fail', '-g', `http://[::1]:${px.port}/v6curl`]);
  assert.equal(JSON.parse(stdout.toString()).url, '/v6curl');
  // and it is not also listening on 127.0.0.1 (ADDR:PORT binds that address only)
  const refused = await new Promise((resolve) => {
    const s = net.connect(px.port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(false); });
    s.once('error', () => resolve(true));
  });
  assert.ok(refused, '--listen [::1]:0 also bound 127.0.0.1');
  await stopClean(px);
});
