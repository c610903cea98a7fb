// 307: the daemon's log is capped. A daemon started by the CLI writes to
// $XDG_STATE_HOME/wtproxy/daemon.log; past the cap (WTPROXY_LOG_MAX_BYTES,
// 8 KiB here; 16 MiB by default) the file becomes daemon.log.1 and a new
// daemon.log starts, whose first line names the .1. The daemon's stderr
// and stdout then write to the new file, no line is split between the two,
// and a second rotation replaces the .1 (one old generation is kept).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, cli, get, waitFor, autostartEnv } from './lib/registry.mjs';

const CAP = 8192;

test('daemon.log past its cap becomes daemon.log.1; the daemon goes on in a new one', { timeout: 60000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const env = autostartEnv(t, tmp, { WTPROXY_LOG_MAX_BYTES: String(CAP) });
  const r = await cli(tmp, ['register', '--port', '5000', '--ttl', '10m'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  const [, pid, log] = /started the daemon \(pid (\d+)\); log: (\S+)/.exec(r.stderr);
  const port = Number(/listening on 127\.0\.0\.1:(\d+)/.exec(fs.readFileSync(log, 'utf8'))[1]);
  const old = `${log}.1`;

  // Refusals of distinct kinds (each names another worktree): a line each,
  // long ones, so that two rotations take fewer than the 64 kinds the
  // daemon tells apart in 10 s (more are counted, not written: 306).
  let sent = 0;
  const refuse = async (n) => {
    for (let i = 0; i < n; i++, sent++) {
      const res = await get(port, { 'X-Wtproxy-Worktree': path.join(tmp.root, `named-${sent}-${'x'.repeat(160)}`) });
      assert.ok(res.status >= 400, `request ${sent}: ${res.status}`);
    }
  };
  const lastIn = (file) => Math.max(-1, ...[...fs.readFileSync(file, 'utf8').matchAll(/named-(\d+)/g)].map((m) => Number(m[1])));
  await refuse(10);
  await waitFor(() => lastIn(log) === 9, 3000, 'the refusals logged');
  assert.equal(fs.existsSync(old), false, 'rotated before the cap');
  while (!fs.existsSync(old) && sent < 40) await refuse(1);
  assert.ok(fs.existsSync(old), `no ${old} after ${sent} lines; daemon.log has ${fs.statSync(log).size} bytes`);

  const first = fs.readFileSync(old, 'utf8');
  assert.ok(first.length >= CAP && first.length < CAP + 2048, `${old}: ${first.length} bytes`);
  assert.ok(first.endsWith('\n'), 'the .1 ends mid-line');
  await refuse(1);
  await waitFor(() => lastIn(log) === sent - 1, 3000, 'the next line in the new daemon.log');
  const now = fs.readFileSync(log, 'utf8');
  assert.ok(now.startsWith(`wtproxy: earlier lines are in ${old} (this log passed ${CAP} bytes)\n`), now.slice(0, 300));
  // Each refusal is a line, then its fix on the next (these name a
  // worktree that is not there: the fix names one that is).
  for (const line of (first + now).trimEnd().split('\n'))
    assert.match(line, /^(wtproxy: |Name a worktree that exists: )/, 'a line split between the files');
  // No line lost: the named refusals run on from the .1 into the new file.
  assert.equal(lastIn(old) + 1, Number(/named-(\d+)/.exec(now)[1]));
  // Its stderr and stdout are the new file.
  for (const fd of [1, 2]) assert.equal(fs.readlinkSync(`/proc/${pid}/fd/${fd}`), log);

  // A second rotation replaces the .1: one old generation.
  const firstIno = fs.statSync(old).ino;
  while (fs.statSync(old).ino === firstIno && sent < 60) await refuse(1);
  assert.notEqual(fs.statSync(old).ino, firstIno, 'no second rotation');
  assert.deepEqual(fs.readdirSync(path.dirname(log)).filter((f) => f.startsWith('daemon.log')).sort(), ['daemon.log', 'daemon.log.1']);
  assert.ok(fs.statSync(log).size < CAP, `${log}: ${fs.statSync(log).size} bytes`);
  process.kill(Number(pid), 'SIGTERM');
});
