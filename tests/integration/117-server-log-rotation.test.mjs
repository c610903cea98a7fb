// 117: a server's log is capped. Past the cap (WTPROXY_LOG_MAX_BYTES,
// 8 KiB here; 16 MiB by default) the log of a `wtproxy run` server
// becomes LOG.1 and a new LOG starts, whose first line names the .1;
// `wtproxy logs -n N` still prints the last N lines when the new file has
// fewer (the rest from the .1), and `wtproxy logs -f` follows on into the
// new file without losing a line. A server the daemon started from a
// .wtproxy file writes through the wrapper too, so its log is capped the
// same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import { makeWorktrees, startDaemon, cli, cliEnv, getWorktree, waitFor, declaring, lsJson } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { runServer, ready, ctlServer } from './lib/ctl.mjs';

const CAP = 8192;
const pad = 'x'.repeat(200); // ctl-server logs each request's path: ~240 bytes a line

const requestNumbers = (text) => [...text.matchAll(/ctl-server request (\d+) /g)].map((m) => Number(m[1]));

test('a wtproxy run log rotates; logs -n reads across it, -f follows it', { timeout: 60000 }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  process.env.WTPROXY_LOG_MAX_BYTES = String(CAP); // the wrapper's environment
  t.after(() => { delete process.env.WTPROXY_LOG_MAX_BYTES; });
  runServer(t, tmp, tmp.wt.a, px.port);
  const { log } = await ready(tmp, tmp.wt.a);
  const old = `${log}.1`;
  const follow = spawn(wtproxyBin, ['logs', '-f', '-n', '0'], { cwd: tmp.wt.a, env: { ...process.env, ...cliEnv(tmp) } });
  t.after(() => follow.kill('SIGKILL'));
  let followed = '';
  follow.stdout.on('data', (d) => { followed += d; });
  await new Promise((r) => setTimeout(r, 500));

  let sent = 0;
  const send = async () => { assert.equal((await getWorktree(px.port, tmp.wt.a, `/${++sent}-${pad}`)).status, 200); };
  while (!fs.existsSync(old) && sent < 100) await send();
  assert.ok(fs.existsSync(old), `no ${old} after ${sent} requests`);
  await send(); // one line in the new file
  await waitFor(() => requestNumbers(fs.readFileSync(log, 'utf8')).includes(sent), 5000, 'the last request in the new log');
  const now = fs.readFileSync(log, 'utf8');
  assert.ok(now.startsWith(`--- wtproxy run: earlier lines are in ${old} ---\n`), now.slice(0, 300));
  const size1 = fs.statSync(old).size;
  assert.ok(size1 >= CAP && size1 < CAP + 4096, `${old}: ${size1} bytes`);

  // The last 5 lines: fewer than 5 in the new file, the rest from the .1.
  const tail = await cli(tmp, ['logs', '-n', '5'], { cwd: tmp.wt.a });
  assert.equal(tail.code, 0, tail.stderr);
  const lines = tail.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 5, tail.stdout);
  assert.deepEqual(requestNumbers(tail.stdout), [sent - 3, sent - 2, sent - 1, sent], tail.stdout);

  // -f went on across the rotation, every request once, in order; then a second one.
  const firstIno = fs.statSync(old).ino;
  while (fs.statSync(old).ino === firstIno && sent < 200) await send();
  await send();
  await waitFor(() => requestNumbers(followed).at(-1) === sent, 5000, 'logs -f printed the last request');
  assert.deepEqual(requestNumbers(followed), Array.from({ length: sent }, (_, i) => i + 1), 'logs -f lost or repeated a line');
  assert.equal((followed.match(/earlier lines are in/g) || []).length, 2, followed.slice(-500));
  follow.kill('SIGINT');
});

test('an on-demand server writes through its wrapper: its log is capped too', { timeout: 60000 }, async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0, ['--trust-registry'], { env: { WTPROXY_LOG_MAX_BYTES: String(CAP) } });
  const tmp = declaring(t, [`start = ${process.execPath} ${ctlServer} {port}`, `front = ${px.port}`], ['a']);
  const curl = (p) => new Promise((resolve) => execFile('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}',
    `http://127.0.0.1:${px.port}${p}`], { cwd: tmp.wt.a, timeout: 20000 }, (err, out) => resolve(Number(out))));
  assert.equal(await curl('/first'), 200);
  const [e] = await lsJson(tmp0);
  const old = `${e.log}.1`;
  let sent = 0;
  while (!fs.existsSync(old) && sent < 100) assert.equal((await getWorktree(px.port, tmp.wt.a, `/${++sent}-${pad}`)).status, 200);
  assert.ok(fs.existsSync(old), `no ${old} after ${sent} requests: ${fs.statSync(e.log).size} bytes`);
  await getWorktree(px.port, tmp.wt.a, `/${++sent}-${pad}`);
  await waitFor(() => requestNumbers(fs.readFileSync(e.log, 'utf8')).at(-1) === sent + 1, 5000, 'the last request in the new log');
  assert.ok(fs.statSync(e.log).size < CAP);
  // The wrapper's own lines follow the rotation too: they go to the new file.
  const wrapper = e.pid;
  for (const fd of [1, 2]) assert.equal(fs.readlinkSync(`/proc/${wrapper}/fd/${fd}`), e.log);
});
