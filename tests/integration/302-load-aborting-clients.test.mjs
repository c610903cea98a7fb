// 302: 1,000 clients that reset their connection mid-response (a 1 MiB
// body, 50 at a time): the daemon keeps serving (a request after them is
// answered), its fds come back to their baseline, and it exits cleanly
// (no sanitizer report) on SIGTERM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, stopClean, MiB } from './lib/backends.mjs';
import { startLoad, fdsBackTo, fdKinds } from './lib/load.mjs';

const CLIENTS = 1000;

test('1,000 clients aborting mid-response: the daemon keeps serving, fds back to baseline', { timeout: 120000 }, async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`, '--pool-idle', '1s']);
  const baseline = fdKinds(px.proc.pid);
  const started = Date.now();
  const load = startLoad(t, process.cwd(), ['abort', px.port, CLIENTS, `/stream?bytes=${1 * MiB}&mode=length`]);
  const counts = await load.next();
  assert.equal((await load.exited).code, 0);
  t.diagnostic(`${CLIENTS} aborted responses in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  assert.equal(counts.errors, 0, `errors: ${counts.firstError}`);
  assert.equal(counts.ok, CLIENTS, 'each got the head of a 200 before it reset');

  const r = await httpGet(px.port, '/after', { agent: false, headers: { Connection: 'close' } });
  assert.equal(r.status, 200, 'the daemon still serves');
  const fds = await fdsBackTo(px.proc.pid, baseline);
  t.diagnostic(`daemon fds after: ${JSON.stringify(fds)} (baseline ${JSON.stringify(baseline)})`);
  await stopClean(px);
});
