// wt-server.mjs - a worktree's stand-in dev server for the registry tests
// (100-149), started by `wtproxy run -- node wt-server.mjs {port} ...`.
//
//   node wt-server.mjs PORT [--reloader] [--pids FILE] [--delay MS] [--stale-while FILE]
//                           [--fail-while FILE] [--broken-by FILE]
//
// Answers every request with JSON {worktree, port, pid}: worktree from
// $WTPROXY_WORKTREE, so a test sees which worktree's server a request
// reached. --reloader serves from a child process while this one only
// waits, as Django's autoreloader does (the listener is then a grandchild
// of `wtproxy run`). --pids FILE appends each process's pid to FILE, so a
// test can check that every one of them died. --delay MS waits that long
// before listening, as a slow dev server does. GET /__reload?ms=N stops
// listening for N ms (for good without ms), the process living on, as an
// autoreloading server between two versions of the code. An Upgrade is
// answered 101, then each chunk echoed as "PID:chunk".
//
// GET /__whoami answers as whoami/PROTOCOL.md says, for the checkout in
// $WTPROXY_WORKTREE (or --checkout DIR, else the current folder), with the fingerprint that
// `wtproxy fingerprint --json` gave when this process started: what a dev
// server with the middleware does. --no-whoami answers it 404, as a server
// without the middleware. --taking-in adds "taking_in" since its start to
// every answer: a server that says it is taking a change in, and never
// does (a compile stuck for good). --fail-root N answers / with status
// N and an error line, the app's own. --stale-while FILE: a process started
// while FILE exists answers a hash no disk has, as one that loaded older
// code than its files (Python's stale bytecode) does. --fail-while FILE
// answers every request, /__whoami too, with a 500 and an error page
// while FILE exists, as a server whose code an edit broke; --broken-by
// FILE does once FILE changed after the process started, which its
// restart cures (hugo server after an atomic-rename save).
import http from 'node:http';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveWhoami, whoamiAnswer } from '../fixtures/playwright-app/whoami.mjs';

// The answer at start; null: no /__whoami.
function whoamiAt(argv) {
  if (argv.includes('--no-whoami')) return Promise.resolve(null);
  const at = argv.indexOf('--checkout');
  let answer = whoamiAnswer(at >= 0 ? argv[at + 1] : process.env.WTPROXY_WORKTREE || process.cwd());
  const staleAt = argv.indexOf('--stale-while');
  if (staleAt >= 0 && fs.existsSync(argv[staleAt + 1])) {
    answer = answer.then((text) => {
      const a = JSON.parse(text);
      const h = a.fingerprint.hash;
      return JSON.stringify({ ...a, fingerprint: { ...a.fingerprint, hash: h.slice(0, -1) + (h.endsWith('0') ? '1' : '0') } });
    });
  }
  if (!argv.includes('--taking-in')) return answer;
  const since = new Date().toISOString(); // to the ms; started_at is to the second
  return answer.then((text) => JSON.stringify({ ...JSON.parse(text), taking_in: { since } }));
}

// Whether this process answers every request with its error now:
// --fail-while's FILE exists, or --broken-by's changed since it started.
function broken(argv, startedMs) {
  const at = (flag) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : null);
  if (at('--fail-while') && fs.existsSync(at('--fail-while'))) return true;
  const by = at('--broken-by');
  return Boolean(by && fs.existsSync(by) && fs.statSync(by).mtimeMs > startedMs);
}

const args = process.argv.slice(2);
const port = Number(args[0]);
const pidsAt = args.indexOf('--pids');
if (pidsAt >= 0) fs.appendFileSync(args[pidsAt + 1], `${process.pid}\n`);

if (args.includes('--reloader')) {
  const rest = args.filter((a) => a !== '--reloader');
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...rest], { stdio: 'inherit' });
  child.on('exit', (code, sig) => process.exit(code ?? 128));
  // keep running while the child serves; the wrapper's signals reach us
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => { child.kill(s); });
} else {
  const whoami = whoamiAt(args);
  const failRoot = args.includes('--fail-root') ? Number(args[args.indexOf('--fail-root') + 1]) : 0;
  const startedMs = Date.now();
  const server = http.createServer((req, res) => {
    if (broken(args, startedMs)) {
      const page = '<html><head><style>p { color: red }</style></head><body>\n' +
        '<h1>Error: failed to render pages</h1>\n<p>layouts/index.html:3: unexpected &quot;}&quot;</p>\n</body></html>\n';
      res.writeHead(500, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(page) });
      res.end(page);
      return;
    }
    if (serveWhoami(req, res, whoami)) return;
    if (req.url.startsWith('/__reload')) {
      // An autoreloader's gap: stop listening while this process lives,
      // then listen again after ?ms=N (never, without it).
      const ms = Number(new URL(req.url, 'http://x').searchParams.get('ms'));
      res.writeHead(200, { 'Content-Length': 0, Connection: 'close' });
      res.end(() => server.close());
      if (ms) setTimeout(() => server.listen(port, '127.0.0.1'), ms);
      else setInterval(() => {}, 1 << 30); // the process lives on, listening or not
      return;
    }
    if (req.url.startsWith('/status?')) { // answers ?code=N with the text ?say=, chunked
      const q = new URL(req.url, 'http://x').searchParams;
      res.writeHead(Number(q.get('code')), { 'Content-Type': 'text/plain' });
      res.write(`${q.get('say')}\nmore\n`);
      res.end();
      return;
    }
    if (req.url === '/' && failRoot) { // --fail-root N: the app's own error at /
      const text = 'PHP Parse error: unexpected "}"\nx\n';
      res.writeHead(failRoot, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const slow = /^\/slow\?ms=(\d+)/.exec(req.url); // answers after ms: a long request
    if (slow) {
      setTimeout(() => { res.writeHead(200, { 'Content-Length': 4 }); res.end('done'); }, Number(slow[1]));
      return;
    }
    const body = JSON.stringify({ worktree: process.env.WTPROXY_WORKTREE, port, pid: process.pid, url: req.url });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  // An Upgrade (a raw one, as a WebSocket's tunnel carries bytes): each
  // chunk comes back as "PID:chunk", so that a test sees which process
  // answers an open tunnel.
  server.on('upgrade', (req, socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (d) => socket.write(`${process.pid}:${d}`));
    socket.on('error', () => {});
  });
  const delayAt = args.indexOf('--delay');
  setTimeout(() => server.listen(port, '127.0.0.1'), delayAt >= 0 ? Number(args[delayAt + 1]) : 0);
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => process.exit(0));
}
