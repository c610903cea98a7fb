// 071: SIGHUP re-reads the config file. Start with --config FILE naming
// backend A, rewrite FILE to backend B, SIGHUP, wait for "reloaded" on
// stderr: the next request goes to B - on a new client connection, and on
// a keep-alive connection opened before the reload (RELAY.md: new settings
// apply to requests that start after it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startProxy, rawBackend } from './lib/wtproxy.mjs';
import { requestResponder, exchange, connect, watch, sleep, assertNoSanitizerReport } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const named = (name) => requestResponder(() => `HTTP/1.1 200 OK\r\nContent-Length: ${name.length}\r\n\r\n${name}`);

async function waitFor(pred, ms = 5000) {
  for (let i = 0; i < ms / 50; i++) { if (pred()) return true; await sleep(50); }
  return pred();
}

test('SIGHUP switches the backend from the config file', async (t) => {
  const a = await rawBackend(t, named('A'));
  const b = await rawBackend(t, named('B'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-071-'));
  removeAfter(t, dir);
  const conf = path.join(dir, 'wtproxy.conf');
  fs.writeFileSync(conf, `# test config\nbackend = 127.0.0.1:${a.port}\n`);
  const proxy = await startProxy(t, ['--config', conf]);

  const r1 = await exchange(proxy.port, 'GET /one HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(r1.decoded, 'A', JSON.stringify(r1.raw));

  // A keep-alive client connection that spans the reload.
  const ka = await connect(proxy.port);
  const kw = watch(ka);
  t.after(() => ka.destroy());
  ka.write('GET /ka-before HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.ok(await waitFor(() => kw.raw.endsWith('\r\n\r\nA')), JSON.stringify(kw.raw));

  fs.writeFileSync(conf, `# test config, reloaded\nbackend = 127.0.0.1:${b.port}\n`);
  proxy.proc.kill('SIGHUP');
  assert.ok(await waitFor(() => /reloaded/.test(proxy.stderr())), `no "reloaded" on stderr:\n${proxy.stderr()}`);
  // It says who asked: this test's node process, by pid and command, and
  // its parent (node's test runner).
  assert.match(proxy.stderr(), new RegExp(`reloaded configuration from \\S+, on SIGHUP from pid ${process.pid} \\(\\S*node\\b.*\\), uid ${process.getuid()}, whose parent is pid ${process.ppid} \\(\\S*node\\b.*\\)\n`));
  assert.ok(proxy.proc.exitCode === null && proxy.proc.signalCode === null, `daemon gone after SIGHUP (${proxy.proc.exitCode ?? proxy.proc.signalCode})`);

  const r2 = await exchange(proxy.port, 'GET /two HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(r2.status, 200, JSON.stringify(r2.raw));
  assert.equal(r2.decoded, 'B', `new connection after reload went to ${r2.decoded}`);
  assert.ok(b.received.includes('GET /two '));
  assert.ok(!a.received.includes('GET /two '));

  ka.write('GET /ka-after HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.ok(await waitFor(() => /\r\n\r\n[AB]HTTP\/1\.1 200[^]*\r\n\r\n[AB]$/.test(kw.raw)), JSON.stringify(kw.raw));
  assert.ok(kw.raw.endsWith('\r\n\r\nB'), `keep-alive request started after the reload went to A: ${JSON.stringify(kw.raw)}`);
  assert.ok(b.received.includes('GET /ka-after '));
  assertNoSanitizerReport(proxy);
});

test('SIGHUP with a broken config file keeps serving', async (t) => {
  const a = await rawBackend(t, named('A'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-071-'));
  removeAfter(t, dir);
  const conf = path.join(dir, 'wtproxy.conf');
  fs.writeFileSync(conf, `backend = 127.0.0.1:${a.port}\n`);
  const proxy = await startProxy(t, ['--config', conf]);
  await sleep(300); // past startup: 070 tests signals at the listening line
  fs.writeFileSync(conf, 'backend = 127.0.0.1:nonsense\nhead_timeout = banana\n');
  proxy.proc.kill('SIGHUP');
  await sleep(500);
  assert.ok(proxy.proc.exitCode === null && proxy.proc.signalCode === null,
    `daemon gone after a bad reload (${proxy.proc.exitCode ?? proxy.proc.signalCode}):\n${proxy.stderr()}`);
  const r = await exchange(proxy.port, 'GET /still HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(r.decoded, 'A', `after a failed reload: ${JSON.stringify(r.raw)}`);
  assertNoSanitizerReport(proxy);
  t.diagnostic(`stderr after the bad reload: ${proxy.stderr().split('\n').slice(-3).join(' | ')}`);
});
