// registry.mjs - helpers for the registry tests (100-149): a temp folder
// with a git repo and linked worktrees, a daemon whose control socket and
// state file live in that folder, the CLI pointed at it, `wtproxy run`
// wrappers serving lib/wt-server.mjs, and requests routed by worktree.
//
// The CLI gets WTPROXY_CONTROL=<tmp>/control.sock and
// WTPROXY_NO_AUTOSTART=1, so a test never starts (or reaches) a daemon
// other than its own. Everything started here is stopped by pid in the
// test's after() hook; the temp folder is removed there too.
import { spawn, execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { startProxy, wtproxyBin } from './wtproxy.mjs';
import { runToExit } from './conformance.mjs';
import { removeAfter } from './cleanup.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const wtServer = path.join(here, 'wt-server.mjs');

export const git = (cwd, ...args) => execFileSync('git', args, {
  cwd,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
});

// A temp folder holding repo/ (the main worktree, branch main) and one
// linked worktree wt-NAME on branch NAME per name. Returns { root, repo,
// wt: {NAME: path}, control, state }. All paths are realpaths.
export function makeWorktrees(t, names = ['a', 'b', 'c', 'd'], { mode } = {}) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-reg-')));
  if (mode !== undefined) fs.chmodSync(root, mode);
  // Retried: a daemon or server still stopping may write one last file.
  removeAfter(t, root);
  const repo = path.join(root, 'repo');
  fs.mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'init');
  const wt = {};
  for (const n of names) {
    wt[n] = path.join(root, `wt-${n}`);
    git(repo, 'worktree', 'add', '-q', wt[n], '-b', n);
  }
  return { root, repo, wt, control: path.join(root, 'control.sock'), state: path.join(root, 'registry.json') };
}

// A repo whose main checkout commits .wtproxy with these lines, and worktrees.
export function declaring(t, lines, names) {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'), lines.join('\n') + '\n');
  const g = (...a) => execFileSync('git', a, { cwd: tmp.repo, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
  g('add', '.wtproxy');
  g('commit', '-q', '-m', 'declare the dev server');
  for (const n of names) {
    tmp.wt[n] = path.join(tmp.root, `wt-${n}`);
    g('worktree', 'add', '-q', tmp.wt[n], '-b', n);
  }
  return tmp;
}

// Commit what tmp.repo holds (its __pycache__ ignored) and add its
// worktree wt-NAME on branch NAME as tmp.wt[NAME]. Returns tmp.
export function commitWorktree(tmp, name = 'a') {
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), '__pycache__/\n');
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'app');
  tmp.wt[name] = path.join(tmp.root, `wt-${name}`);
  git(tmp.repo, 'worktree', 'add', '-q', tmp.wt[name], '-b', name);
  return tmp;
}

// `wtproxy serve --control <tmp>/control.sock --state <tmp>/registry.json
// --listen 127.0.0.1:0 ARGS...`; see startProxy. The front port of the
// entries it routes is the port it listens on (px.port).
export function startDaemon(t, tmp, args = [], opts = {}) {
  return startProxy(t, ['--control', tmp.control, '--state', tmp.state, ...args], opts);
}

export function cliEnv(tmp, extra = {}) {
  return { WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1', ...extra };
}

// Run `wtproxy ARGS...` to its exit: { code, signal, stdout, stderr }.
export function cli(tmp, args, { cwd, env, ms = 10000 } = {}) {
  return runToExit(wtproxyBin, args, { cwd: cwd || tmp.root, env: cliEnv(tmp, env), ms });
}

// The daemon's entries, from `wtproxy ls --json`.
export async function lsJson(tmp) {
  const r = await cli(tmp, ['ls', '--json']);
  if (r.code !== 0) throw new Error(`wtproxy ls --json exited ${r.code ?? r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// Start `wtproxy run --front FRONT -- node wt-server.mjs {port} SERVERARGS`
// (or -- COMMAND, a real dev server's argv with its {port}) in cwd.
// Resolves at once with { proc, pid, stderr(), ready, exited }: ready
// resolves with the backend port when the wrapper says "is ready" (within
// readyMs), exited with { code, signal }. detached: true makes the wrapper
// lead its own process group, as Playwright starts its webServer. At the
// test's end the wrapper gets SIGKILL, or stopSignal and then the test
// waits for its exit (a wrapper stopped so stops its server and
// unregisters on the way out: what a Python server needs, which SIGKILL
// would orphan). bin: another wtproxy binary than the one under test.
export function startRun(t, tmp, {
  cwd, front, serverArgs = [], runArgs = [], detached = false, env, command, readyMs = 15000,
  stopSignal, bin = wtproxyBin,
} = {}) {
  const args = ['run', ...(front ? ['--front', String(front)] : []), ...runArgs, '--',
    ...(command || [process.execPath, wtServer, '{port}', ...serverArgs])];
  const proc = spawn(bin, args, {
    cwd, detached, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp, env) },
  });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  proc.stdout.on('data', (d) => { err += d; });
  const exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wtproxy run not ready in ${readyMs / 1000} s:\n${err}`)), readyMs);
    proc.stderr.on('data', () => {
      const m = /is ready on 127\.0\.0\.1:(\d+)/.exec(err);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    exited.then(({ code, signal }) => { clearTimeout(timer); reject(new Error(`wtproxy run exited (${code ?? signal}) before ready:\n${err}`)); });
  });
  ready.catch(() => {});
  const handle = { proc, pid: proc.pid, ready, exited, stderr: () => err };
  t.after(async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const sig = stopSignal || 'SIGKILL';
    try { detached ? process.kill(-proc.pid, sig) : proc.kill(sig); } catch { /* gone */ }
    if (stopSignal) await exited;
  });
  return handle;
}

// GET http://127.0.0.1:port/path with headers; resolves { status, headers, body }.
export function get(port, headers = {}, urlPath = '/') {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.setTimeout(10000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
  });
}

// GET routed to worktree (a path or a folder name) through the proxy.
export function getWorktree(port, worktree, urlPath = '/') {
  return get(port, { 'X-Wtproxy-Worktree': worktree }, urlPath);
}

// Poll fn every 50 ms until it returns a truthy value; throws after ms
// with what in the message. Resolves with that value.
export async function waitFor(fn, ms, what) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try { last = await fn(); } catch (e) { last = e; }
    if (last && !(last instanceof Error)) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// A fixture shim (tests/integration/fixtures/NAME.c) built for LD_PRELOAD
// into the test's temp folder: the slow disks and slow files of 313-321.
export function buildPreload(tmp, name) {
  const so = path.join(tmp.root, `${name}.so`);
  execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', so,
    path.join(here, '..', 'fixtures', `${name}.c`), '-ldl']);
  return so;
}

// startDaemon with the shim NAME preloaded and env its settings.
export function startPreloadedDaemon(t, tmp, name, env, args = []) {
  return startDaemon(t, tmp, args, {
    env: {
      LD_PRELOAD: buildPreload(tmp, name),
      ...env,
      // ours comes before the sanitizer's runtime in the library list
      ASAN_OPTIONS: `${process.env.ASAN_OPTIONS || ''}:verify_asan_link_order=0`,
    },
  });
}

// Whether a pid runs (a zombie counts as gone).
export function pidAlive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch { return false; }
}

// A long-running process of ours (sleep) to register by pid.
export function sleeper(t) {
  const p = spawn('sleep', ['1000'], { stdio: 'ignore' });
  t.after(() => { if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); });
  return p;
}

// No sanitizer report in a process's output.
export function sanitizerClean(assert, text) {
  assert.doesNotMatch(text, /AddressSanitizer|LeakSanitizer|runtime error:/, text);
}

// One request line on the daemon's control socket (registry/PROTOCOL.md),
// its reply line parsed; rejected when the daemon closes without one.
export function control(sock, req) {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(sock);
    let buf = '';
    s.on('connect', () => s.write(`${JSON.stringify(req)}\n`));
    s.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) { s.end(); resolve(JSON.parse(buf.slice(0, nl))); }
    });
    s.on('close', () => reject(new Error(`the daemon closed without a reply to ${JSON.stringify(req)}`)));
    s.on('error', reject);
  });
}

// Stop, after the test, every daemon started for tmp, found by the
// --control argument it was given: also those a failing test never
// learnt the pid of.
export function stopDaemonsAfter(t, tmp) {
  t.after(() => {
    for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      let argv;
      try { argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'); } catch { continue; }
      if (argv[1] === 'serve' && argv.includes(tmp.control)) {
        try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
      }
    }
  });
}

// The environment of a CLI command allowed to start its daemon: state in
// <tmp>/state, the config (WTPROXY_CONFIG) listening on a kernel-picked
// port, and extra. The daemons it starts are stopped after t.
export function autostartEnv(t, tmp, extra = {}) {
  stopDaemonsAfter(t, tmp);
  const conf = path.join(tmp.root, 'wtproxy.conf');
  fs.writeFileSync(conf, 'listen = 127.0.0.1:0\n');
  return { WTPROXY_NO_AUTOSTART: '', WTPROXY_CONFIG: conf, XDG_STATE_HOME: path.join(tmp.root, 'state'), ...extra };
}

// GET urlPath through the daemon on port with curl run in cwd: a caller
// the daemon places by its cwd, as a browser or test runner started there
// is. { status, body (curl's error when none), worktree (of a wt-server
// answer, else null), ms }. headers: extra ['Name: value', ...].
export function curlFrom(cwd, port, urlPath = '/', { headers = [], timeout = 60000 } = {}) {
  const start = Date.now();
  const args = ['-sS', '-o', '-', '-w', '\n%{http_code}', ...headers.flatMap((h) => ['-H', h]),
    `http://127.0.0.1:${port}${urlPath}`];
  return new Promise((resolve) => {
    execFile('curl', args, { cwd, timeout }, (err, stdout, stderr) => {
      const lines = stdout.trimEnd().split('\n');
      const status = Number(lines.pop());
      const body = lines.join('\n');
      let worktree = null;
      try { worktree = JSON.parse(body).worktree; } catch { /* an error page */ }
      resolve({ status, body: body || stderr, worktree, ms: Date.now() - start });
    });
  });
}
