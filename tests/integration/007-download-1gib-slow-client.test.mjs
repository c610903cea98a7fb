// 007: backpressure, backend -> client. A 1 GiB download to a client that
// stops reading for 250 ms after every 32 MiB must not grow the daemon's
// memory (RELAY.md: ~2 x buffer_size + max_head_size per connection); a
// proxy that keeps reading the fast backend while the client is not reading
// would buffer tens to hundreds of MiB. The client gets exactly 1 GiB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import crypto from 'node:crypto';
import { startProxy, memoryKiB, samplePeakRss } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, patternSha256, GiB, MiB, stopClean } from './lib/backends.mjs';

// ASan quarantines freed blocks (256 MiB by default) before reuse; over a
// 1 GiB transfer that would look like growth the daemon did not cause.
// Later ASAN_OPTIONS entries win, so ours goes last.
const asanEnv = {
  ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'quarantine_size_mb=16'].filter(Boolean).join(':'),
};

const SIZE = GiB;
const BOUND_KIB = 64 * 1024;

test('1 GiB download to a slow-reading client: memory bounded, every byte delivered', { timeout: 90000 }, async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`], { env: asanEnv });

  const warm = await httpGet(px.port, '/warm');
  assert.equal(warm.status, 200);
  const before = memoryKiB(px.proc.pid);
  const expectSha = patternSha256(SIZE);
  const started = Date.now();
  const sampler = samplePeakRss(t, px.proc.pid, before.rss);

  const got = await new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: px.port, path: `/stream?bytes=${SIZE}&mode=length` }, (res) => {
      const h = crypto.createHash('sha256');
      let length = 0;
      let since = 0;
      let pauses = 0;
      res.on('data', (d) => {
        h.update(d);
        length += d.length;
        since += d.length;
        if (since >= 32 * MiB) {
          since = 0;
          pauses++;
          res.pause();
          setTimeout(() => res.resume(), 250);
        }
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, length, sha256: h.digest('hex'), pauses, complete: res.complete }));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error(`response aborted after ${length} bytes`)));
    });
    req.on('error', reject);
  });
  const peakRss = sampler.stop();
  const after = memoryKiB(px.proc.pid);
  const secs = (Date.now() - started) / 1000;

  assert.equal(got.status, 200);
  assert.equal(got.headers['content-length'], String(SIZE));
  assert.ok(got.complete, 'response incomplete');
  assert.equal(got.length, SIZE, `client received ${got.length} bytes, expected exactly 1 GiB`);
  assert.equal(got.sha256, expectSha, 'client received different bytes');
  assert.ok(got.pauses >= 16);

  const growth = after.hwm - before.hwm;
  const msg = `VmHWM ${before.hwm} -> ${after.hwm} KiB (+${growth} KiB), peak RSS ${peakRss} KiB, ${secs.toFixed(1)} s`;
  t.diagnostic(msg);
  assert.ok(growth < BOUND_KIB, `daemon memory grew too much during the download: ${msg}`);
  await stopClean(px);
});
