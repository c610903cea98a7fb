// wtproxy.mjs - start the real daemon and real loopback peers for a test.
//
// Every test starts its own daemon on a port the kernel picks
// (--listen 127.0.0.1:0) and reads the port back from the daemon's
// "listening on" line, so tests never collide and never guess ports.
// Everything started here is stopped by pid in the test's cleanup.
import { spawn } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import os from 'node:os';

const here = path.dirname(fileURLToPath(import.meta.url));

// Every test file runs in its own process: give it its own runtime and
// state folders, so no daemon it starts (nor the CLI it runs) touches the
// developer's real registry or control socket, or another file's.
const isolated = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-test-'));
process.env.XDG_RUNTIME_DIR = path.join(isolated, 'run');
process.env.XDG_STATE_HOME = path.join(isolated, 'state');
fs.mkdirSync(process.env.XDG_RUNTIME_DIR, { mode: 0o700 });
fs.mkdirSync(process.env.XDG_STATE_HOME, { mode: 0o700 });
process.on('exit', () => fs.rmSync(isolated, { recursive: true, force: true }));
let daemons = 0;
export const repoRoot = path.resolve(here, '../../..');
export const wtproxyBin = process.env.WTPROXY_BIN ||
  path.join(repoRoot, 'build-asan/proxy/wtproxy');

// WTPROXY_VALGRIND=1 (tests/run's memcheck pass, on a build without ASan):
// each daemon runs under valgrind memcheck, and the test fails when, at
// the end of the test, the daemon stopped with SIGTERM reports any memory
// error or a definite or indirect leak. Everything is ~20x slower there.
export const underValgrind = process.env.WTPROXY_VALGRIND === '1';
const valgrindArgs = ['--leak-check=full', '--show-leak-kinds=definite,indirect',
  '--errors-for-leak-kinds=definite,indirect', '--error-exitcode=99', '--track-fds=no'];
const slow = underValgrind ? 6 : 1;

// The daemon's own leak and error report at its exit, or '' when clean.
// A daemon the test itself stopped or killed (kill -9 tests) is not judged.
async function valgrindVerdict(handle) {
  if (handle.proc.exitCode !== null || handle.proc.signalCode !== null) return '';
  let hung = false;
  const killer = setTimeout(() => { hung = true; handle.proc.kill('SIGKILL'); }, 60000);
  const { code } = await handle.stop('SIGTERM');
  clearTimeout(killer);
  const report = handle.stderr().split('\n').filter((l) => /^==\d+==/.test(l)).join('\n');
  if (code === 99 || hung || /ERROR SUMMARY: [1-9]|definitely lost|indirectly lost/.test(report))
    return `valgrind memcheck (exit ${hung ? 'hung on SIGTERM' : code}):\n${report}`;
  return '';
}

// The servers a daemon started from a .wtproxy file: `wtproxy run`
// wrappers, each leading a session of its own, that outlive the daemon by
// design (a restarted daemon finds them serving). They are its children
// only while it lives, so their pids are noted then (any stop, and the
// cleanup), and the cleanup stops their groups.
function startedGroups(pid) {
  const pids = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try { stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1'); } catch { continue; }
    const [, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    if (ppid === pid && pgrp === Number(name)) pids.push(pgrp); // leaders only: never our group
  }
  return pids;
}

function stopGroups(pids) {
  for (const pid of pids) {
    try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

// Start `wtproxy serve ARGS...` (default: --listen 127.0.0.1:0). Resolves
// once every listener is up, with { port, ports, proc, stderr(), stop() }.
// opts.prefix: a command that execs the daemon (['prlimit', '--nofile=64:64']);
// opts.bin: another wtproxy binary than this build's.
// `t` is the node:test context; its after() hook stops the daemon.
export async function startProxy(t, args = [], opts = {}) {
  const listen = args.includes('--listen') ? [] : ['--listen', '127.0.0.1:0'];
  // Daemons of one file may run at once: each gets its own control socket
  // and state file unless the test chose them.
  const own = path.join(isolated, `daemon-${++daemons}`);
  fs.mkdirSync(own, { mode: 0o700 });
  const registry = args.includes('--control') ? [] :
    ['--control', path.join(own, 'control.sock'), '--state', path.join(own, 'registry.json')];
  const argv = [opts.bin || wtproxyBin, 'serve', ...listen, ...registry, ...args];
  const cmd = underValgrind ? ['valgrind', ...valgrindArgs, ...argv] : [...(opts.prefix || []), ...argv];
  const proc = spawn(cmd[0], cmd.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    // This binary first on PATH, as installed: the pages' fixes name it
    // `wtproxy` bare (test 178 runs it from its build folder, opts.env.PATH).
    env: { ...process.env, PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}`, ...(opts.env || {}) },
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.gid } : {}), // run as another user
  });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  proc.stdout.on('data', (d) => { err += d; });
  const exited = new Promise((res) => proc.on('exit', (code, sig) => res({ code, sig })));
  const want = opts.listeners || 1;
  const ports = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wtproxy did not listen in ${10 * slow} s:\n${err}`)), 10000 * slow);
    const check = () => {
      const found = [...err.matchAll(/listening on (\S+):(\d+)/g)].map((m) => Number(m[2]));
      if (found.length >= want) { clearTimeout(timer); resolve(found); }
    };
    proc.stderr.on('data', check);
    exited.then(({ code, sig }) => { clearTimeout(timer); reject(new Error(`wtproxy exited (${code ?? sig}) before listening:\n${err}`)); });
  });
  const started = new Set();
  const handle = {
    port: ports[0], ports, proc, exited,
    stderr: () => err,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) {
        for (const pid of startedGroups(proc.pid)) started.add(pid);
        proc.kill(signal);
      }
      return exited;
    },
  };
  if (t && underValgrind) {
    t.after(async () => {
      const verdict = await valgrindVerdict(handle);
      stopGroups(started);
      if (verdict) throw new Error(verdict);
    });
  } else if (t) {
    t.after(async () => {
      await handle.stop('SIGKILL');
      stopGroups(started);
    });
  }
  return handle;
}

// A scripted raw-socket backend: `onConn(socket, info)` is called for every
// accepted connection; `info.received` accumulates every byte the backend
// got, on all connections, so a test can assert what reached it.
export async function rawBackend(t, onConn) {
  const info = { received: '', connections: 0 };
  const sockets = new Set();
  const server = net.createServer((s) => {
    info.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('data', (d) => { info.received += d.toString('latin1'); });
    s.on('error', () => {});
    onConn(s, info);
  });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  info.port = server.address().port;
  info.close = () => new Promise((res) => { for (const s of sockets) s.destroy(); server.close(() => res()); });
  if (t) t.after(info.close);
  return info;
}

// Send raw bytes to 127.0.0.1:port and collect everything until the peer
// closes or `ms` pass without the connection closing. Resolves with
// { data (latin1 string), closed (bool) }.
export function rawRequest(port, bytes, ms = 3000, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    let data = '';
    let done = false;
    const finish = (closed) => { if (done) return; done = true; clearTimeout(timer); s.destroy(); resolve({ data, closed }); };
    const timer = setTimeout(() => finish(false), ms);
    s.on('connect', () => s.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes));
    s.on('data', (d) => { data += d.toString('latin1'); });
    s.on('end', () => finish(true));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
  });
}

// The first status code of a raw response, or 0.
export function statusOf(raw) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

// Peak and current resident memory of a pid, in KiB, from /proc.
export function memoryKiB(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const get = (k) => Number((new RegExp(`${k}:\\s+(\\d+)`).exec(s) || [0, 0])[1]);
  return { rss: get('VmRSS'), hwm: get('VmHWM') };
}

// Sample pid's VmRSS every 100 ms, from start (a memoryKiB(pid).rss read
// before), until stop() (or the test t's end). stop() returns the peak.
export function samplePeakRss(t, pid, start) {
  let peak = start;
  const sampler = setInterval(() => {
    try { peak = Math.max(peak, memoryKiB(pid).rss); } catch {}
  }, 100);
  t.after(() => clearInterval(sampler));
  return { stop: () => { clearInterval(sampler); return peak; } };
}

// Number of open fds of a pid, less its pidfds: the daemon keeps one per
// process in its cache of recent callers (proxy/identify.c, at most
// RECENT_MAX = 32), which a caller seen anew may add to at any time.
// pidfdCount counts those, for a test that bounds them.
export function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length - pidfdCount(pid);
}

export function pidfdCount(pid) {
  let n = 0;
  for (const f of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${f}`) === 'anon_inode:[pidfd]') n++;
    } catch { /* closed meanwhile */ }
  }
  return n;
}
