// 316: wtproxy never needs root. Started as nobody (when the test runs as
// root), the daemon listens on its port, relays, and answers its control
// socket; and a daemon refuses a control-socket folder that another user
// could enter or that belongs to someone else, with the command that
// fixes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startProxy, wtproxyBin } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, stopClean } from './lib/backends.mjs';
import { runToExit } from './lib/conformance.mjs';
import { removeAfter } from './lib/cleanup.mjs';

const NOBODY = 65534;
const root = process.getuid() === 0;

function tmpDir(t, prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  removeAfter(t, dir);
  return dir;
}

function uidOf(pid) {
  return Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

test('the daemon runs as nobody: listens, relays, answers its control socket',
  { skip: !root && 'needs root to start the daemon as another user' }, async (t) => {
    const be = await httpBackend(t);
    const home = tmpDir(t, 'wtproxy-nobody-');
    fs.chownSync(home, NOBODY, NOBODY);
    fs.chmodSync(home, 0o700);
    const control = path.join(home, 'control.sock');
    const env = { HOME: home, XDG_RUNTIME_DIR: home, XDG_STATE_HOME: path.join(home, 'state') };
    const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`, '--control', control,
      '--state', path.join(home, 'registry.json')], { uid: NOBODY, gid: NOBODY, env });
    assert.equal(uidOf(px.proc.pid), NOBODY, 'the daemon runs as nobody');
    const r = await httpGet(px.port, '/as-nobody', { agent: false });
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.body).url, '/as-nobody');
    const ls = await runToExit('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups',
      wtproxyBin, 'ls', '--json'], { env: { ...env, WTPROXY_CONTROL: control, WTPROXY_NO_AUTOSTART: '1' } });
    assert.equal(ls.code, 0, ls.stderr);
    assert.deepEqual(JSON.parse(ls.stdout), []);
    assert.doesNotMatch(px.stderr(), /permission denied|cannot/i, px.stderr());
    await stopClean(px);
  });

test('a control-socket folder open to others, or another user\'s, is refused with the fix', async (t) => {
  const runtime = tmpDir(t, 'wtproxy-rt-');
  fs.chmodSync(runtime, 0o700);
  const dir = path.join(runtime, 'wtproxy');
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.chmodSync(dir, 0o777);
  const serve = () => runToExit(wtproxyBin, ['serve', '--listen', '127.0.0.1:0'],
    { env: { XDG_RUNTIME_DIR: runtime, WTPROXY_CONTROL: '' }, ms: 10000 });
  let r = await serve();
  assert.notEqual(r.code, 0, 'the daemon does not start');
  assert.match(r.stderr, new RegExp(`${dir} is open to other users.*chmod 700 ${dir}`), r.stderr);
  if (root) {
    fs.chmodSync(dir, 0o700);
    fs.chownSync(dir, NOBODY, NOBODY);
    r = await serve();
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /belongs to uid 65534, not to you/, r.stderr);
  }
});
