// mcp.mjs - a scripted client of `wtproxy mcp` (tests 078-079): the real
// binary on real pipes, exact bytes in, every line out kept as it came.
// The client never rewrites what it sends: a test writes the bytes it
// means (malformed JSON, 10 MiB lines, half lines) and reads the replies
// one line at a time. Stopped by pid in the test's after().
import { spawn } from 'node:child_process';
import { wtproxyBin } from './wtproxy.mjs';

// Start `wtproxy mcp ARGS` in cwd with env added to ours. Returns
// { proc, send(bytes), line(ms), request(id, method, params), call(id,
// name, args), end(), stderr(), lines }: line() resolves with the next
// line of stdout (without its newline) and rejects after ms.
export function startMcp(t, { cwd, args = [], env = {} } = {}) {
  const proc = spawn(wtproxyBin, ['mcp', ...args], {
    cwd, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  let pending = '';
  let err = '';
  const lines = [];
  const waiters = [];
  const wake = () => {
    while (waiters.length && lines.length) waiters.shift().resolve(lines.shift());
  };
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (d) => {
    pending += d;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      lines.push(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
    wake();
  });
  proc.stderr.on('data', (d) => { err += d; });
  proc.stdin.on('error', () => {}); // a test that ends it early must not crash on EPIPE
  const exited = new Promise((res) => proc.on('close', (code, signal) => res({ code, signal, rest: pending })));
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });

  const line = (ms = 15000) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line from wtproxy mcp in ${ms} ms; stderr:\n${err}`)), ms);
    waiters.push({ resolve: (l) => { clearTimeout(timer); resolve(l); } });
    wake();
  });
  const send = (bytes) => new Promise((res) => proc.stdin.write(bytes, res));
  const request = async (id, method, params) => {
    await send(`${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`);
    return JSON.parse(await line());
  };
  const call = async (id, name, args) => {
    const r = await request(id, 'tools/call', { name, ...(args ? { arguments: args } : {}) });
    if (!r.result) throw new Error(`tools/call ${name}: ${JSON.stringify(r)}`);
    return r.result;
  };
  const end = () => { proc.stdin.end(); return exited; };
  return { proc, send, line, request, call, end, exited, stderr: () => err, lines };
}

// The handshake a client makes first: initialize, then the notification.
export async function initialize(mcp, version = '2025-06-18') {
  const r = await mcp.request(0, 'initialize', {
    protocolVersion: version, capabilities: {}, clientInfo: { name: 'wtproxy-test', version: '1' },
  });
  await mcp.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  return r;
}
