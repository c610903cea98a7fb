// load.mjs - helpers of the load and fault tests (300-319): the load
// client process (load-client.mjs) started in a worktree, and the daemon's
// fd count waited back to a baseline.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './registry.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const loadClient = path.join(here, 'load-client.mjs');

// Start `node load-client.mjs ARGS` in cwd. Resolves at once with
// { proc, lines (the JSON lines printed so far), next() (the next JSON
// line), exited }.
export function startLoad(t, cwd, args, env = {}) {
  const proc = spawn(process.execPath, [loadClient, ...args.map(String)], {
    cwd, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  let out = '';
  let err = '';
  const lines = [];
  const waiters = [];
  proc.stdout.on('data', (d) => {
    out += d;
    let i;
    while ((i = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      const v = JSON.parse(line);
      lines.push(v);
      const w = waiters.shift();
      if (w) w(v);
    }
  });
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((res) => proc.on('exit', (code, sig) => res({ code, sig, stderr: err })));
  let taken = 0;
  const next = () => new Promise((resolve, reject) => {
    if (taken < lines.length) { resolve(lines[taken++]); return; }
    waiters.push((v) => { taken++; resolve(v); });
    exited.then(({ code, sig }) => reject(new Error(`load client exited (${code ?? sig}):\n${err}`)));
  });
  return { proc, lines, next, exited };
}

// The daemon's open fds by kind: { total, pidfd, socket, other }.
export function fdKinds(pid) {
  const k = { total: 0, pidfd: 0, socket: 0, other: 0 };
  for (const f of fs.readdirSync(`/proc/${pid}/fd`)) {
    let target = '';
    try { target = fs.readlinkSync(`/proc/${pid}/fd/${f}`); } catch { continue; }
    k.total++;
    if (target === 'anon_inode:[pidfd]') k.pidfd++;
    else if (target.startsWith('socket:')) k.socket++;
    else k.other++;
  }
  return k;
}

// Caller identification keeps a pidfd for each of its most recent callers
// (proxy/identify.c RECENT_MAX), closed once that caller is seen ended.
const IDENTIFY_RECENT_MAX = 32;

// Wait until the daemon's fds are back to baseline (fdKinds): sockets and
// the rest exactly (pooled backend connections close after --pool-idle;
// the test sets it short), pidfds up to the identification cache more.
export async function fdsBackTo(pid, baseline, ms = 15000) {
  let now = fdKinds(pid);
  const back = () => now.socket <= baseline.socket && now.other <= baseline.other &&
    now.pidfd <= baseline.pidfd + IDENTIFY_RECENT_MAX;
  const deadline = Date.now() + ms;
  while (now = fdKinds(pid), !back() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!back()) {
    const fds = fs.readdirSync(`/proc/${pid}/fd`).map((f) => {
      try { return `${f}->${fs.readlinkSync(`/proc/${pid}/fd/${f}`)}`; } catch { return f; }
    });
    throw new Error(`daemon fds not back to ${JSON.stringify(baseline)} within ${ms} ms: ${JSON.stringify(now)}: ${fds.join(' ')}`);
  }
  return now;
}

// The daemon's environment for a memory measurement: ASan keeps freed
// memory in quarantine (256 MiB by default), which would read as growth.
export const measurableEnv = {
  ASAN_OPTIONS: `${process.env.ASAN_OPTIONS || 'detect_leaks=1'}:quarantine_size_mb=0`,
};
