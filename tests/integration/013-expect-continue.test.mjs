// 013: Expect: 100-continue is forwarded and the backend's 100 Continue is
// relayed (node:http answers 100 itself when no checkContinue listener is
// set), so a client that waits for it proceeds promptly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, RawConn, requestHead, MiB, stopClean } from './lib/backends.mjs';
import { removeAfter } from './lib/cleanup.mjs';

test('curl with Expect: 100-continue gets the 100 and uploads the file', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtp013-'));
  removeAfter(t, dir);
  const file = path.join(dir, 'body.bin');
  const body = crypto.randomBytes(2 * MiB + 11);
  fs.writeFileSync(file, body);
  const started = Date.now();
  // curl would send the body anyway after --expect100-timeout; make that
  // long so a proxy that swallows the 100 shows up as a slow upload
  const { stdout, stderr } = await new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '-v', '--expect100-timeout', '20', '-H', 'Expect: 100-continue',
      '-H', 'Content-Type: application/octet-stream',
      '--data-binary', `@${file}`, `http://127.0.0.1:${px.port}/hash`],
    { timeout: 40000, maxBuffer: 16 * MiB }, (err, so, se) => (err ? reject(new Error(`${err.message}\n${se}`)) : resolve({ stdout: so, stderr: se })));
  });
  const elapsed = Date.now() - started;
  assert.match(stderr, /< HTTP\/1\.1 100 Continue/, `curl never saw a 100 Continue:\n${stderr}`);
  assert.ok(elapsed < 10000, `upload took ${elapsed} ms: curl waited out its expect timeout`);
  const got = JSON.parse(stdout);
  assert.equal(got.length, body.length);
  assert.equal(got.sha256, crypto.createHash('sha256').update(body).digest('hex'));
  assert.equal(got.headers.expect, '100-continue', 'Expect not forwarded to the backend');
  await stopClean(px);
});

test('raw client waits for 100 Continue before sending the body', async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  const body = crypto.randomBytes(512 * 1024 + 3);
  const c = await RawConn.open(px.port);
  t.after(() => c.close());
  c.write(requestHead('POST', '/hash', [['Host', 'localhost'], ['Content-Length', String(body.length)], ['Expect', '100-continue']]));
  const interim = await c.readResponse({ ms: 5000 });
  assert.equal(interim.status, 100, `expected 100 Continue before the body, got:\n${interim.raw}`);
  assert.match(interim.raw, /^HTTP\/1\.1 100 Continue\r\n/);
  assert.equal(be.requests.length, 1, 'the request head was not forwarded before the body');
  c.write(body);
  const r = await c.readResponse({ ms: 10000 });
  assert.equal(r.status, 200, r.raw.slice(0, 400));
  const got = JSON.parse(r.body.toString());
  assert.equal(got.length, body.length);
  assert.equal(got.sha256, crypto.createHash('sha256').update(body).digest('hex'));
  assert.equal(got.headers.expect, '100-continue');

  // the connection is reusable after an Expect exchange
  c.write(requestHead('GET', '/after', [['Host', 'localhost']]));
  const r2 = await c.readResponse();
  assert.equal(JSON.parse(r2.body.toString()).url, '/after');
  await stopClean(px);
});
