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
const MIN_CAP = 4096; // HOST_LOG_MIN_BYTES
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
  // -n 1: the log's last line now (the server's start), printed once -f has
  // its place at the end; a request before that would be missed.
  const follow = spawn(wtproxyBin, ['logs', '-f', '-n', '1'], { cwd: tmp.wt.a, env: { ...process.env, ...cliEnv(tmp) } });
  t.after(() => follow.kill('SIGKILL'));
  let followed = '';
  follow.stdout.on('data', (d) => { followed += d; });
  await waitFor(() => followed.length > 0, 10000, 'logs -f printed the last line before following');

  let sent = 0;
  const send = async () => { assert.equal((await getWorktree(px.port, tmp.wt.a, `/${++sent}-${pad}`)).status, 200); };
  while (!fs.existsSync(old) && sent < 100) await send();
  assert.ok(fs.existsSync(old), `no ${old} after ${sent} requests`);
  await send(); // one line in the new file
  await waitFor(() => requestNumbers(fs.readFileSync(log, 'utf8')).includes(sent), 5000, 'the last request in the new log');
  const now = fs.readFileSync(log, 'utf8');
  const size1 = fs.statSync(old).size;
  assert.ok(now.startsWith(`--- wtproxy run: earlier lines are in ${old} (${size1} bytes rotated before this file) ---\n`), now.slice(0, 300));
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
  // (the message's size read only on failure: between the rename to .1
  // and the new file's creation the log does not exist)
  if (!fs.existsSync(old)) assert.fail(`no ${old} after ${sent} requests: ${fs.statSync(e.log).size} bytes`);
  await getWorktree(px.port, tmp.wt.a, `/${++sent}-${pad}`);
  await waitFor(() => requestNumbers(fs.readFileSync(e.log, 'utf8')).at(-1) === sent + 1, 5000, 'the last request in the new log');
  assert.ok(fs.statSync(e.log).size < CAP);
  // The wrapper's own lines follow the rotation too: they go to the new file.
  const wrapper = e.pid;
  for (const fd of [1, 2]) assert.equal(fs.readlinkSync(`/proc/${wrapper}/fd/${fd}`), e.log);
});

test('logs -f says how many bytes it missed when the log rotated more than twice between two looks', { timeout: 60000 }, async (t) => {
  const tmp = makeWorktrees(t, ['b']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  process.env.WTPROXY_LOG_MAX_BYTES = String(MIN_CAP);
  t.after(() => { delete process.env.WTPROXY_LOG_MAX_BYTES; });
  runServer(t, tmp, tmp.wt.b, px.port);
  const { log } = await ready(tmp, tmp.wt.b);
  // From the log's first byte (-n more lines than it has, and no .1 yet).
  const follow = spawn(wtproxyBin, ['logs', '-f', '-n', '1000000'], { cwd: tmp.wt.b, env: { ...process.env, ...cliEnv(tmp) } });
  t.after(() => follow.kill('SIGKILL'));
  const out = [];
  let said = '';
  follow.stdout.on('data', (d) => out.push(d));
  follow.stderr.on('data', (d) => { said += d; });
  const followed = () => Buffer.concat(out).toString('latin1');
  await waitFor(() => followed().includes('ctl-server'), 5000, 'logs -f printed the log so far');

  // Frozen between two looks (no sleep to race): four rotations meanwhile,
  // so the file after its own was replaced before it could be opened.
  follow.kill('SIGSTOP');
  // (between the rename and the new file's open, there is no log)
  const ino = () => { try { return fs.statSync(log).ino; } catch { return undefined; } };
  let last = ino(), rotations = 0; // inode numbers are reused: count changes
  let sent = 0;
  const long = 'y'.repeat(1000);
  while (rotations < 4 && sent < 100) {
    assert.equal((await getWorktree(px.port, tmp.wt.b, `/${++sent}-${long}`)).status, 200);
    const now = await waitFor(ino, 2000, 'a log');
    if (now !== last) rotations++;
    last = now;
  }
  assert.equal(rotations, 4, `${sent} requests`);
  const both = () => fs.readFileSync(`${log}.1`, 'latin1') + fs.readFileSync(log, 'latin1');
  await waitFor(() => requestNumbers(both()).includes(sent), 5000, 'the last request in the log');
  // The wrapper writes the new file's first line just after creating it:
  // a look in between (CI once) finds it empty.
  const header = () => /\((\d+) bytes rotated before this file\) ---$/.exec(fs.readFileSync(log, 'latin1').split('\n')[0]);
  const before = Number((await waitFor(header, 5000, "the new log's first line"))[1]);
  const total = before + fs.statSync(log).size; // every byte the log was given

  follow.kill('SIGCONT');
  await waitFor(() => requestNumbers(followed()).at(-1) === sent && said, 5000, 'logs -f printed the last request and its note');
  const m = /^wtproxy logs: (\d+) bytes of (\S+) are not shown: it rotated more than twice within 200 ms, .* WTPROXY_LOG_MAX_BYTES=BYTES wtproxy run/.exec(said);
  assert.ok(m, said);
  assert.equal(m[2], log);
  // Exact: what it printed and what it says it did not add up to the log.
  assert.equal(Buffer.concat(out).length + Number(m[1]), total, said);
  const shown = requestNumbers(followed());
  const missed = Array.from({ length: sent }, (_, i) => i + 1).filter((k) => !shown.includes(k));
  assert.ok(missed.length > 0, 'a whole file was lost');
  assert.deepEqual(shown, [...shown].sort((a, b) => a - b), 'in order, none twice');
  const missedBytes = missed.reduce((n, k) => n + `ctl-server request ${k} /${k}-${long}\n`.length, 0);
  // The rest is the lost files' first lines (one each, each holding a request at least).
  assert.ok(Number(m[1]) >= missedBytes && Number(m[1]) < missedBytes + 200 * missed.length,
    `${m[1]} bytes said, ${missedBytes} of requests missed`);
  follow.kill('SIGINT');
});
