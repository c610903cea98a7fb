// 325: a prefork server (Debian's gunicorn --workers 2) answers /__whoami
// from a worker, so the pid its answer names is a worker's. Told "Stop it:
// kill WORKER", a user had gunicorn's master fork another worker, the port
// still serving the other checkout (morbo's manager, alike, held the port
// with nobody answering: every later request hung, then a 502). The 421
// names every process holding the server's listening socket, master and
// workers, in its kill, and says why; pasted as printed, that kill stops
// the server (the port no longer answers), and the page's next step then
// serves the right worktree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { git, makeWorktrees, startDaemon, cli, cliEnv, curlFrom, waitFor, lsJson, pidAlive, sanitizerClean } from './lib/registry.mjs';
import { pythonPath } from './lib/whoami.mjs';
import { closedPort } from './lib/backends.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const gunicorn = '/usr/bin/gunicorn'; // Debian's, on /usr/bin/python3
const pythonEnv = { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };

const appPy = `import os
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware

def app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [('served from %s' % os.getcwd()).encode()]

application = WhoamiWSGIMiddleware(app)
`;

// A repo whose main branch holds the WSGI app and a .wtproxy declaring its
// gunicorn on front, and worktrees a and b of it.
function gunicornWorktrees(t, front) {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, 'app.py'), appPy);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'),
    `start = PYTHONPATH=${pythonPath} ${gunicorn} --workers 2 --bind 127.0.0.1:{port} app:application\nfront = ${front}\n`);
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), '__pycache__/\n');
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'app');
  for (const n of ['a', 'b']) {
    tmp.wt[n] = path.join(tmp.root, `wt-${n}`);
    git(tmp.repo, 'worktree', 'add', '-q', tmp.wt[n], '-b', n);
  }
  return tmp;
}

const children = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch { return []; }
};

const answers = (port) => new Promise((res) => {
  const s = net.connect(port, '127.0.0.1', () => { s.destroy(); res(true); });
  s.on('error', () => res(false));
});

// gunicorn --workers 2 started by hand in cwd, as a user does: its master's
// pid and its workers', once both workers answer. Every process of it is
// stopped after t, whatever the test did.
async function handGunicorn(t, cwd) {
  const port = await closedPort();
  const master = spawn(gunicorn, ['--workers', '2', '--bind', `127.0.0.1:${port}`, 'app:application'], {
    cwd, stdio: 'ignore', env: { ...process.env, ...pythonEnv },
  });
  const seen = new Set();
  t.after(() => {
    for (const pid of [master.pid, ...seen, ...children(master.pid)]) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  });
  const workers = await waitFor(() => {
    const w = children(master.pid);
    w.forEach((p) => seen.add(p));
    return w.length === 2 && w;
  }, 20000, 'gunicorn\'s two workers');
  await waitFor(() => answers(port), 20000, `gunicorn on ${port}`);
  return { port, master: master.pid, workers };
}

test('gunicorn --workers 2 of another checkout: the 421\'s kill names its master and workers, and pasted stops it', async (t) => {
  const tmp0 = makeWorktrees(t, []);
  const px = await startDaemon(t, tmp0);
  const tmp = gunicornWorktrees(t, px.port);
  const b = await handGunicorn(t, tmp.wt.b);

  // registered for a with the master's pid, as explore-gun did
  const reg = await cli(tmp0, ['register', '--port', String(b.port), '--pid', String(b.master), '--front', String(px.port)],
    { cwd: tmp.wt.a, ms: 30000 });
  assert.equal(reg.code, 1, reg.stderr);

  const r = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(r.status, 421, r.body);
  const all = [b.master, ...b.workers].sort((x, y) => x - y);
  const answered = Number(/the server there \(pid (\d+),/.exec(r.body)?.[1]);
  assert.ok(b.workers.includes(answered), `a worker answered /__whoami: ${r.body}`);
  const others = all.filter((p) => p !== answered).join(' ');
  assert.ok(r.body.includes(`; it shares its listening socket with pids ${others}, which hold the port after it exits)`), r.body);
  const stop = /Stop it: (kill [\d ]+) \(unless/.exec(r.body)?.[1];
  assert.equal(stop, `kill ${all.join(' ')}`, r.body);
  assert.ok(r.body.includes(`(unless ${tmp.wt.b} still needs it; its exit ends your worktree's registration of it); then start your own server: cd ${tmp.wt.a} && wtproxy restart --front ${px.port} (`), r.body);

  // pasted as printed: the server stops, the port answers no more
  execFileSync('sh', ['-c', stop]);
  await waitFor(async () => !(await answers(b.port)), 10000, `port ${b.port} no longer answering after \`${stop}\``);
  // "its exit ends your worktree's registration of it": gunicorn's master
  // exits once its workers did
  await waitFor(() => all.every((p) => !pidAlive(p)), 30000, 'gunicorn\'s processes gone');
  await waitFor(async () => !(await lsJson(tmp0)).some((e) => e.worktree === tmp.wt.a), 10000, 'a\'s registration gone');

  // the page's next step: a's own server, from its .wtproxy
  const next = /then start your own server: (cd \S+ && wtproxy restart --front \d+)/.exec(r.body)[1];
  const env = { ...process.env, ...cliEnv(tmp0), PATH: `${path.dirname(wtproxyBin)}:${process.env.PATH}` };
  execFileSync('sh', ['-c', next], { env, timeout: 60000 });
  await waitFor(async () => (await lsJson(tmp0)).find((e) => e.worktree === tmp.wt.a)?.whoami?.state === 'verified',
    30000, 'a\'s own server verified');
  const ok = await curlFrom(tmp.wt.a, px.port, '/');
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.body, `served from ${tmp.wt.a}`);
  sanitizerClean(assert, px.stderr());
});
