// 305: a daemon short of file descriptors. Started under a small open-file
// limit, it says so at start (the limit, what it holds, the command that
// raises it) and accepts only what the limit holds: the rest of a burst
// waits in the listen queue and is served as connections end, with no
// error. When the limit shrinks under a running daemon (prlimit), accept(2)
// fails with EMFILE on the front port and on the control socket: the daemon
// says it once for each and waits for a connection to end (or 100 ms).
// Before stop 30 it retried at once, forever: about 250,000 "accept failed"
// lines a second in its log, and libevent's warnings for the control socket.
// A request that finds no fd for its backend connection gets 503 out-of-fds
// (the dev server was not asked), not 502 backend-unreachable, which
// sent people to a dev server that was fine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, httpGet, stopClean } from './lib/backends.mjs';
import { control } from './lib/registry.mjs';
import { removeAfter } from './lib/cleanup.mjs';

// The CPU seconds (user + system) the process has used so far.
function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

// One connection sending one Connection: close request: its answer's status.
function closeRequest(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('error', () => {});
    s.on('close', () => resolve(Number((/^HTTP\/1\.1 (\d{3})/.exec(got) || [])[1] || 0)));
    s.write('GET /fds HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  });
}

const failures = (px) => px.stderr().split('\n').filter((l) => /accept/.test(l) && /open files|Too many/.test(l));

test('under a small open-file limit: said at start with the fix; a burst larger than it is served whole', { timeout: 60000 }, async (t) => {
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`], { prefix: ['prlimit', '--nofile=64:64'] });
  const said = px.stderr().split('\n').find((l) => l.includes('open-file limit (64)'));
  assert.ok(said, `no word at start about the open-file limit:\n${px.stderr()}`);
  assert.match(said, /holds \d+ connections at once, fewer than max_connections/);
  assert.match(said, /ulimit -Hn \d+/);
  assert.match(said, /LimitNOFILE=\d+/);
  const statuses = await Promise.all(Array.from({ length: 100 }, () => closeRequest(px.port)));
  const ok = statuses.filter((s) => s === 200).length;
  assert.equal(ok, 100, `answers other than 200: ${JSON.stringify(statuses.filter((s) => s !== 200).slice(0, 5))}`);
  assert.deepEqual(failures(px), [], 'the daemon never ran out of fds: it accepted what the limit holds');
  await stopClean(px);
});

test('the limit lowered under a running daemon: EMFILE said once, no busy loop, served again once connections end', { timeout: 60000 }, async (t) => {
  const be = await httpBackend(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-305-'));
  removeAfter(t, dir);
  const sock = path.join(dir, 'control.sock');
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`, '--control', sock, '--state', path.join(dir, 'state.json')]);
  execFileSync('prlimit', ['--pid', String(px.proc.pid), '--nofile=40:40']);
  const held = Array.from({ length: 60 }, () => {
    const s = net.connect(px.port, '127.0.0.1');
    s.on('error', () => {});
    return s;
  });
  await new Promise((r) => setTimeout(r, 500));
  const stats = control(sock, { op: 'stats' }); // waits: no fd for its connection either
  const cpu0 = cpuSeconds(px.proc.pid);
  const wall0 = Date.now();
  await new Promise((r) => setTimeout(r, 2000));
  const busy = (cpuSeconds(px.proc.pid) - cpu0) / ((Date.now() - wall0) / 1000);
  const said = failures(px);
  t.diagnostic(`CPU while out of fds: ${(busy * 100).toFixed(0)}%; lines about it: ${said.length}`);
  assert.ok(said.length >= 1, `running out of fds went unsaid:\n${px.stderr()}`);
  // once for the front port, once for the control socket
  assert.ok(said.length <= 2, `said ${said.length} times in 2.5 s: ${said.slice(0, 3).join('\n')}`);
  assert.match(said.find((l) => l.includes('open-file limit 40')) || '', /wait until one ends.*ulimit -Hn/);
  assert.ok(busy < 0.5, `the daemon used ${(busy * 100).toFixed(0)}% of a CPU while it waited for a free fd`);
  // The accepted ones asking now: no fd is left for a backend connection.
  const answers = held.map((s) => {
    let got = '';
    s.on('data', (d) => { got += d; });
    s.write('GET /held HTTP/1.1\r\nHost: localhost\r\n\r\n');
    return () => got;
  });
  await new Promise((r) => setTimeout(r, 1000));
  const got = answers.map((a) => a()).filter((g) => g);
  assert.ok(got.length > 0, 'no accepted connection was answered');
  for (const g of got) {
    assert.match(g, /^HTTP\/1\.1 503 /, `wtproxy's own shortage is not the dev server's 502:\n${g}`);
    assert.match(g, /x-wtproxy-error: out-of-fds/i, g);
    assert.match(g, /not at fault[\s\S]*ulimit -Hn/, g);
  }
  held.forEach((s) => s.destroy());
  const answered = await stats;
  assert.ok(answered.ok, `the control op waiting meanwhile: ${JSON.stringify(answered)}`);
  // The daemon frees their fds as it reads their ends: until then a request
  // still gets the 503 (rightly); within 5 s it must be served, then always.
  let first = 0;
  for (const until = Date.now() + 5000; first !== 200 && Date.now() < until;) {
    first = (await httpGet(px.port, '/after')).status;
    if (first !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(first, 200, 'served again within 5 s of the held connections ending');
  for (let i = 0; i < 5; i++) assert.equal((await httpGet(px.port, '/after')).status, 200, `request ${i + 1} after the held connections ended`);
  await stopClean(px);
});
