// 073: the command line. --help, serve --help and --version exit 0 and
// print usage/version; an unknown flag or a bad value exits 2 with one line
// on stderr naming it; so does a bad config file, with the fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { runToExit } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const run = (...args) => runToExit(wtproxyBin, args, { ms: 5000 });
const oneLine = (s) => s.trim().split('\n').length === 1;
const clean = (r) => assert.doesNotMatch(r.stdout + r.stderr, /AddressSanitizer|LeakSanitizer|runtime error:/, r.stderr);

test('wtproxy --help', async () => {
  const r = await run('--help');
  clean(r);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout + r.stderr, /usage/i);
  assert.match(r.stdout + r.stderr, /serve/);
});

test('wtproxy serve --help lists the flags with defaults', async () => {
  const r = await run('serve', '--help');
  clean(r);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout + r.stderr;
  assert.match(out, /usage/i);
  for (const f of ['--listen', '--backend', '--config', '--head-timeout', '--keepalive-timeout',
    '--connect-timeout', '--response-timeout', '--body-timeout', '--max-head-size',
    '--max-header-count', '--max-request-line']) {
    assert.ok(out.includes(f), `serve --help does not mention ${f}:\n${out}`);
  }
  assert.doesNotMatch(out, /listening on/, 'serve --help started serving');
});

test('wtproxy --version', async () => {
  const r = await run('--version');
  clean(r);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout + r.stderr, /wtproxy/);
  assert.match(r.stdout + r.stderr, /\d+\.\d+\.\d+/);
});

test('unknown flag: exit 2, one line naming it', async () => {
  const r = await run('serve', '--listen', '127.0.0.1:0', '--no-such-flag', '1');
  assert.equal(r.signal, null, `did not exit (killed after 5 s): ${r.stderr}`);
  clean(r);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(oneLine(r.stderr), `stderr is not one line:\n${r.stderr}`);
  assert.match(r.stderr, /no-such-flag/);
  assert.doesNotMatch(r.stderr, /listening on/);
});

test('bad value: exit 2, one line naming the flag and the value', async () => {
  const r = await run('serve', '--listen', '127.0.0.1:0', '--head-timeout', 'banana');
  assert.equal(r.signal, null, `did not exit (killed after 5 s): ${r.stderr}`);
  clean(r);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(oneLine(r.stderr), `stderr is not one line:\n${r.stderr}`);
  assert.match(r.stderr, /head[-_]timeout/);
  assert.match(r.stderr, /banana/);
});

test('bad size value: exit 2, one line', async () => {
  const r = await run('serve', '--listen', '127.0.0.1:0', '--max-head-size', '12 parsecs');
  clean(r);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(oneLine(r.stderr), `stderr is not one line:\n${r.stderr}`);
  assert.match(r.stderr, /max[-_]head[-_]size/);
});

test('a bad config file: exit 2, one line naming FILE:LINE or the file, and the fix', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-073-'));
  removeAfter(t, dir);
  const file = path.join(dir, 'wtproxy.conf');
  fs.writeFileSync(file, 'head_timeout = 1s\nfrobnicate = 1\n');
  const r = await run('serve', '--config', file);
  clean(r);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(oneLine(r.stderr), `stderr is not one line:\n${r.stderr}`);
  assert.ok(r.stderr.includes(`${file}:2: unknown key "frobnicate" (wtproxy serve --help lists the keys)`),
    r.stderr);
  const missing = await run('serve', '--config', path.join(dir, 'none.conf'));
  assert.equal(missing.code, 2, missing.stderr);
  assert.ok(oneLine(missing.stderr), `stderr is not one line:\n${missing.stderr}`);
  assert.match(missing.stderr, /cannot read config file \S+none\.conf: No such file or directory; give --config a readable file/);
});

test('unknown subcommand: non-zero exit', async () => {
  const r = await run('frobnicate');
  assert.notEqual(r.code, 0);
  assert.equal(r.signal, null);
});
