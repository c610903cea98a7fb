// reloads.mjs - whether anything will take a change on disk in for this
// process (PROTOCOL.md, section 1.2: "reloads").
//
// index.mjs's middleware computes its fingerprint once per process, so only
// a new process can catch up with an edit, and every watcher that makes one
// (node --watch, nodemon, tsx watch) is a process above the server. When
// every process between this one and the `wtproxy run` that started it is
// a shell, env, or a package manager running a script, nothing will: the
// answer says "reloads": false and wtproxy restarts (or refuses) at once
// instead of waiting stale_grace. Anything else, or no `wtproxy run` above
// (a server started by hand), is unknown: nothing is said. So is a shell
// that runs a loop or a file watcher (`while inotifywait ...; do ...;
// done`, `ls *.js | entr -r node ...`): it makes a new server on a change.
import fs from 'node:fs';

// What may stand between `wtproxy run` and the server without reloading
// it: /proc/PID/comm, or its first word (npm names itself "npm run dev").
const PASS_THROUGH = new Set(['sh', 'bash', 'dash', 'zsh', 'env', 'npm', 'npx', 'yarn', 'pnpm']);
const WRAPPER = 'wtproxy';
const MAX_DEPTH = 8;
// What in a shell's command line may start a new server after an edit.
const RELOADING_SHELL = /\b(while|until|inotifywait|entr|watchexec|fswatch|nodemon|watchmedo)\b/;

// Whether pid, a shell, runs something that may replace the server.
function shellMayReload(pid) {
  return RELOADING_SHELL.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' '));
}

// [comm, ppid] of pid from /proc/PID/stat; comm may hold spaces and
// parentheses, so it is what lies between the first '(' and the last ')'.
function commAndParent(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  const close = stat.lastIndexOf(')');
  return [stat.slice(stat.indexOf('(') + 1, close), Number(stat.slice(close + 2).split(' ')[1])];
}

// True when nothing above this process can replace it (see above); false
// when something may, or when /proc cannot tell. Bun's --hot reloads the
// modules in this process, the middleware's with them (Bun says it in
// execArgv, as Node and Bun say --watch): a Bun user's every edit was
// restarted at once, as "nothing reloads it", while Bun served the new
// code already.
// Deno's `run --watch` restarts the module in this same process, and says
// so nowhere a module can read (its execArgv is empty): under Deno, each
// edit was refused "nothing reloads it" while Deno had the new code up a
// second later. So under Deno this is unknown.
export function nothingReloads() {
  if (globalThis.Deno) return false;
  if (process.execArgv.some((a) => a.startsWith('--watch') || a === '--hot')) return false;
  try {
    let parent = process.ppid;
    for (let i = 0; i < MAX_DEPTH && parent > 1; i++) {
      const [comm, grand] = commAndParent(parent);
      if (comm === WRAPPER) return true;
      if (!PASS_THROUGH.has(comm.split(' ')[0]) || shellMayReload(parent)) return false;
      parent = grand;
    }
  } catch { /* no /proc, or a process gone meanwhile: unknown */ }
  return false;
}
