// py-client.mjs - a long-lived python3 caller for the identification
// tests (123, 124): one process that makes request after request, moves
// between folders, and reports what answered, so a test can tell what the
// daemon remembered about that process from what it found again.
import { spawn } from 'node:child_process';

// A python3 process in cwd that reads commands on stdin: "get" (GET / on a
// new connection, closed before the next: its fd number is the next one's),
// "cd PATH", "loop MS STOPFILE" (a GET every MS ms until STOPFILE exists).
// One JSON line per answer: { t, status, worktree, body } (t: when the
// request began, ms since the epoch).
const pyClient = `
import json, os, socket, sys, time
port = int(sys.argv[1])
def dechunk(b):
    out = b''
    while True:
        size, _, rest = b.partition(b'\\r\\n')
        n = int(size.split(b';')[0], 16)
        if n == 0: return out
        out, b = out + rest[:n], rest[n + 2:]
def get():
    t = time.time() * 1000
    with socket.create_connection(('127.0.0.1', port), timeout=20) as s:
        s.sendall(b'GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n')
        data = b''
        while chunk := s.recv(65536): data += chunk
    head, _, body = data.partition(b'\\r\\n\\r\\n')
    if b'transfer-encoding: chunked' in head.lower(): body = dechunk(body)
    status, body = int(head.split()[1]), body.decode()
    wt = None
    try: wt = json.loads(body).get('worktree')
    except Exception: pass
    print(json.dumps({'t': t, 'status': status, 'worktree': wt, 'body': body}), flush=True)
print(json.dumps({'pid': os.getpid()}), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == 'get': get()
    elif cmd[0] == 'cd': os.chdir(cmd[1]); print('{}', flush=True)
    elif cmd[0] == 'loop':
        while not os.path.exists(cmd[2]):
            get(); time.sleep(int(cmd[1]) / 1000)
        print('{}', flush=True)
`;

export function startClient(t, cwd, port) {
  const proc = spawn('/usr/bin/python3', ['-c', pyClient, String(port)], { cwd, stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  const lines = [];
  const waiters = [];
  let buf = '';
  proc.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
      waiters.splice(0).forEach((w) => w());
    }
  });
  // The next line printed from now on.
  const next = () => {
    const at = lines.length;
    return new Promise((resolve) => {
      const check = () => (lines.length > at ? resolve(lines[at]) : waiters.push(check));
      check();
    });
  };
  const send = (cmd) => { const n = next(); proc.stdin.write(`${cmd}\n`); return n; };
  // The first line from now on that pred accepts.
  const until = (pred) => {
    const from = lines.length;
    return new Promise((resolve) => {
      const check = () => { const l = lines.slice(from).find(pred); l ? resolve(l) : waiters.push(check); };
      check();
    });
  };
  return { proc, lines, send, until, pid: next().then((l) => l.pid) };
}
