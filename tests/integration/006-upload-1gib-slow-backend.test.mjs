// 006: backpressure, client -> backend. A 1 GiB upload into a backend that
// reads slowly (it stops reading for 250 ms after every 32 MiB) must not
// grow the daemon's memory: RELAY.md says a connection holds about
// 2 x buffer_size + max_head_size (~576 KiB with the defaults). A proxy that
// keeps reading from the client while the backend is not reading would
// buffer tens to hundreds of MiB here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startProxy, memoryKiB, samplePeakRss } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, pattern, patternSha256, writeAll, GiB, MiB, stopClean } from './lib/backends.mjs';

// ASan keeps freed blocks in a quarantine (256 MiB by default) before it
// reuses them; with buffers freed and allocated all through a 1 GiB
// transfer that quarantine fills and would show up as resident growth that
// is not the daemon's doing. 16 MiB keeps ASan's share well below the bound.
// Later ASAN_OPTIONS entries override earlier ones, so ours go last.
const asanEnv = {
  ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'quarantine_size_mb=16'].filter(Boolean).join(':'),
};

const SIZE = GiB;
const BOUND_KIB = 64 * 1024; // generous: ~576 KiB expected, plus ASan shadow and allocator slack

test('1 GiB upload through a slow-reading backend: memory bounded, every byte delivered', { timeout: 90000 }, async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`], { env: asanEnv });

  // warm up (first connection, first allocations), then take the baseline
  const warm = await httpGet(px.port, '/warm');
  assert.equal(warm.status, 200);
  const before = memoryKiB(px.proc.pid);

  const expectSha = patternSha256(SIZE);
  const started = Date.now();
  const sampler = samplePeakRss(t, px.proc.pid, before.rss);

  const res = await new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port: px.port, method: 'POST',
      path: `/slow-read?every=${32 * MiB}&pause=250`,
      headers: { 'Content-Length': SIZE, 'Content-Type': 'application/octet-stream' },
    }, (r) => {
      let b = '';
      r.on('data', (d) => { b += d; });
      r.on('end', () => resolve({ status: r.statusCode, body: b }));
      r.on('error', reject);
    });
    req.on('error', reject);
    writeAll(req, pattern(SIZE, MiB)).catch(reject);
  });
  const peakRss = sampler.stop();
  const after = memoryKiB(px.proc.pid);
  const secs = (Date.now() - started) / 1000;

  assert.equal(res.status, 200, res.body);
  const got = JSON.parse(res.body);
  assert.equal(got.length, SIZE, `backend received ${got.length} bytes, expected exactly 1 GiB`);
  assert.equal(got.sha256, expectSha, 'backend received different bytes');
  assert.ok(got.pauses >= 16, `the backend should have paused reading (${got.pauses} pauses)`);

  const growth = after.hwm - before.hwm;
  const msg = `VmHWM ${before.hwm} -> ${after.hwm} KiB (+${growth} KiB), peak RSS ${peakRss} KiB, ${secs.toFixed(1)} s`;
  t.diagnostic(msg);
  assert.ok(growth < BOUND_KIB, `daemon memory grew too much during the upload: ${msg}`);
  await stopClean(px);
});
