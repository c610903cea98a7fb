// 304: a burst of 1,500 new connections while the daemon's loop is busy
// (here: stopped with SIGSTOP for up to 3 s) completes every TCP handshake
// at once: the kernel queues them for the next accepts. With a listen
// backlog of 511 (nginx's default, and wtproxy's until stop 30) everything
// past the 512th connection had its SYN dropped and waited for the client's
// SYN retransmission, 1 s and then 3 s later: a test runner's burst got
// second-long tails for nothing. Afterwards every connection gets its
// answer from the backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import { startProxy } from './lib/wtproxy.mjs';
import { httpBackend, stopClean } from './lib/backends.mjs';

const BURST = 1500;
const PAUSE_MS = 3000;

function somaxconn() {
  return Number(fs.readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
}

// One connection: resolves with the status of its one request's answer.
function ask(sock) {
  return new Promise((resolve) => {
    let got = '';
    sock.on('data', (d) => { got += d; });
    sock.on('close', () => resolve(Number((/^HTTP\/1\.1 (\d{3})/.exec(got) || [])[1] || 0)));
    sock.on('error', () => {});
    sock.write('GET /burst HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  });
}

test('1,500 connections opened while the daemon is busy: every handshake completes, every request answered', { timeout: 120000 }, async (t) => {
  assert.ok(somaxconn() >= BURST, `net.core.somaxconn is ${somaxconn()}: the kernel caps every listen backlog there`);
  const be = await httpBackend(t);
  const px = await startProxy(t, ['--backend', `127.0.0.1:${be.port}`]);
  process.kill(px.proc.pid, 'SIGSTOP');
  t.after(() => { try { process.kill(px.proc.pid, 'SIGCONT'); } catch { /* gone */ } });

  let established = 0;
  const socks = [];
  for (let i = 0; i < BURST; i++) {
    const s = net.connect(px.port, '127.0.0.1');
    s.on('connect', () => { established++; });
    s.on('error', () => {});
    socks.push(s);
  }
  const deadline = Date.now() + PAUSE_MS;
  while (established < BURST && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const whileBusy = established;
  process.kill(px.proc.pid, 'SIGCONT');
  assert.equal(whileBusy, BURST,
    `only ${whileBusy} of ${BURST} connections were established while the daemon was busy: ` +
    'the rest had their SYN dropped by a full accept queue (the listen backlog)');

  const statuses = await Promise.all(socks.map(ask));
  const ok = statuses.filter((s) => s === 200).length;
  assert.equal(ok, BURST, `answers other than 200: ${JSON.stringify(statuses.filter((s) => s !== 200).slice(0, 5))}`);
  await stopClean(px);
});
