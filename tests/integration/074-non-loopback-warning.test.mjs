// 074: a non-loopback listen address gets a loud warning on stderr
// (RELAY.md: "A non-loopback address gets a loud warning"); a loopback one
// does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startProxy } from './lib/wtproxy.mjs';
import { sleep, assertNoSanitizerReport } from './lib/conformance.mjs';

test('--listen 0.0.0.0:0 prints a WARNING', async (t) => {
  const proxy = await startProxy(t, ['--listen', '0.0.0.0:0']);
  await sleep(300);
  const err = proxy.stderr();
  assert.match(err, /WARNING/i, err);
  const warn = err.split('\n').filter((l) => /warning/i.test(l)).join('\n');
  assert.match(warn, /0\.0\.0\.0|loopback|network/i, `warning does not say what is exposed:\n${err}`);
  const exit = await proxy.stop('SIGTERM');
  assert.equal(exit.code, 0, proxy.stderr());
  assertNoSanitizerReport(proxy);
});

test('--listen 127.0.0.1:0 prints no warning', async (t) => {
  const proxy = await startProxy(t, ['--listen', '127.0.0.1:0']);
  await sleep(300);
  assert.doesNotMatch(proxy.stderr(), /warning/i, proxy.stderr());
});
