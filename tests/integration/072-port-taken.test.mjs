// 072: a taken port. A python3 http.server holds 127.0.0.1:P (cwd a temp
// dir); `wtproxy serve --listen 127.0.0.1:P` exits 1 and its message names
// the holder's pid, command line and cwd, and how to get out of it. An
// address no interface has: the message names it and the --listen fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { startHelper, runToExit } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';

test('taken port: exit 1 naming pid, command line and cwd of the holder', async (t) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-072-')));
  removeAfter(t, dir);
  const py = await startHelper(t, '/usr/bin/python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1'],
    /port (\d+)/, { cwd: dir });
  const port = Number(py.match[1]);
  const pid = py.proc.pid;

  const r = await runToExit(wtproxyBin, ['serve', '--listen', `127.0.0.1:${port}`], { ms: 10000 });
  const out = r.stderr + r.stdout;
  assert.equal(r.signal, null, `wtproxy did not exit by itself (killed after 10 s):\n${out}`);
  assert.equal(r.code, 1, `exit code ${r.code}:\n${out}`);
  assert.match(out, new RegExp(`port ${port}\\b`), out);
  assert.match(out, /already in use/, out);
  assert.match(out, new RegExp(`pid ${pid}\\b`), `holder pid ${pid} not named:\n${out}`);
  assert.match(out, /python3 -u -m http\.server 0 --bind 127\.0\.0\.1/, `holder command line not named:\n${out}`);
  assert.ok(out.includes(dir), `holder cwd ${dir} not named:\n${out}`);
  assert.match(out, new RegExp(`kill ${pid}\\b`), `no "kill ${pid}" hint:\n${out}`);
  assert.equal(py.proc.exitCode, null, 'the holder died');
  assert.doesNotMatch(out, /AddressSanitizer|LeakSanitizer|runtime error:/, out);
});

test('an address of no interface here: exit 1 naming it, and the --listen that fixes it', async () => {
  const r = await runToExit(wtproxyBin, ['serve', '--listen', '192.0.2.1:8000'], { ms: 10000 });
  const out = r.stderr + r.stdout;
  assert.equal(r.code, 1, out);
  assert.match(out, /cannot listen on 192\.0\.2\.1 port 8000: .*; serve an address of this machine .*: wtproxy serve --listen 127\.0\.0\.1:8000$/m, out);
  assert.doesNotMatch(out, /AddressSanitizer|LeakSanitizer|runtime error:/, out);
});
