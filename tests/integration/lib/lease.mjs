// lease.mjs - helpers for the lease and database-claim tests (200-229):
// `wtproxy claim ... -- CMD` started in the background, and waiting for a
// lease to appear in (or leave) a store.
import { spawn } from 'node:child_process';
import { wtproxyBin } from './wtproxy.mjs';
import { cliEnv, waitFor } from './registry.mjs';

// Start `wtproxy ARGS` in cwd; resolves at once with { proc, pid, stderr(),
// exited } (exited resolves { code, signal }). Killed by pid in t.after.
export function startCli(t, tmp, args, { cwd, env } = {}) {
  const proc = spawn(wtproxyBin, args, {
    cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp, env) },
  });
  let err = '';
  let out = '';
  proc.stderr.on('data', (d) => { err += d; });
  proc.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  return { proc, pid: proc.pid, stderr: () => err, stdout: () => out, exited };
}

// Wait until `cond(rows)` holds for the rows psql returns for sql.
export function waitRows(pg, sql, cond, what, ms = 10000) {
  return waitFor(() => cond(pg.psql(sql)), ms, what);
}
