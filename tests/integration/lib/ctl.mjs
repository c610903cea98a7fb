// ctl.mjs - helpers for the control tests (115, 155, 156): a server of
// fixtures/ctl-server.mjs run by `wtproxy run`, and the dashboard's
// actions sent as a script (not a browser) would send them.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliEnv, lsJson, waitFor } from './registry.mjs';
import { wtproxyBin } from './wtproxy.mjs';

export const ctlServer = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'ctl-server.mjs');

// `wtproxy run --front FRONT -- node ctl-server.mjs {port} ARGS` in cwd,
// with stdout and stderr pipes (not files: the wrapper relays and logs).
// Resolves at once with { proc, out: {stdout, stderr}, exited }.
export function runServer(t, tmp, cwd, front, args = []) {
  const proc = spawn(wtproxyBin, ['run', '--front', String(front), '--', process.execPath, ctlServer, '{port}', ...args],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...cliEnv(tmp) } });
  const out = { stdout: '', stderr: '' };
  proc.stdout.on('data', (d) => { out.stdout += d; });
  proc.stderr.on('data', (d) => { out.stderr += d; });
  const exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  return { proc, out, exited };
}

// The entry of worktree wt once it is ready.
export function ready(tmp, wt) {
  return waitFor(async () => (await lsJson(tmp)).find((e) => e.worktree === wt && e.state === 'ready'), 15000, `${wt} ready`);
}

// A request to 127.0.0.1:port with exactly these headers (Host included
// when given) and body; resolves { status, headers, body }.
export function request(port, method, urlPath, headers = {}, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent: false }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.setTimeout(10000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

// The daemon's action token, read as the dashboard page reads it.
export async function token(port) {
  const r = await request(port, 'GET', '/__wtproxy/api/token');
  return JSON.parse(r.body).token;
}
