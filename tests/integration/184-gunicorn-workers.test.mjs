// 184: a server of several worker processes (gunicorn --workers 2), each
// of which loads the app and answers /__whoami for itself. After an edit,
// one worker ran the old code and a new one (its sibling killed, as a
// timeout or --max-requests replaces a worker; or gunicorn --reload
// missing an edit within a worker's first second) the new: the gate asked
// one of them, called the server current when the new one answered, and
// requests went to the old one too: a Django + gunicorn user's test passed
// on code no longer on disk. Every worker's answer now says when a live
// sibling loaded other code: the server is stale until all run the same,
// and a restart makes it so.
// Runs Debian's gunicorn (scripts/bootstrap) with wtproxy's WSGI middleware.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, cli, curlFrom, waitFor, git, sanitizerClean } from './lib/registry.mjs';
import { pythonPath } from './lib/whoami.mjs';

const app = `import greeting
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware


def app(environ, start_response):
    body = greeting.TEXT.encode()
    start_response('200 OK', [('Content-Type', 'text/plain'), ('Content-Length', str(len(body)))])
    return [body]


application = WhoamiWSGIMiddleware(app)
`;

const children = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch { return []; }
};
const cmdline = (pid) => { try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { return ''; } };

// gunicorn's master under the wrapper: the first gunicorn process down its tree.
function master(wrapper) {
  const queue = [wrapper];
  while (queue.length) {
    const pid = queue.shift();
    if (pid !== wrapper && cmdline(pid).includes('gunicorn')) return pid;
    queue.push(...children(pid));
  }
  return null;
}

test('gunicorn --workers 2, one worker on the old code after an edit: never served, and a restart serves the new', async (t) => {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, 'app.py'), app);
  fs.writeFileSync(path.join(tmp.repo, 'greeting.py'), "TEXT = 'v1'\n");
  fs.writeFileSync(path.join(tmp.repo, '.gitignore'), '__pycache__/\n');
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-qm', 'app');
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, {
    cwd: tmp.repo, front: px.port, env: { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' },
    command: ['/usr/bin/gunicorn', '--workers', '2', '--bind', '127.0.0.1:{port}', 'app:application'],
    stopSignal: 'SIGTERM',
  });
  await run.ready;
  const first = await curlFrom(tmp.repo, px.port);
  assert.equal(first.status, 200, first.body);
  assert.equal(first.body, 'v1');

  const m = master(run.pid);
  assert.ok(m, 'gunicorn\'s master runs under the wrapper');
  const old = await waitFor(() => children(m).length === 2 && children(m), 10000, 'two workers');
  fs.writeFileSync(path.join(tmp.repo, 'greeting.py'), "TEXT = 'v2'\n");
  process.kill(old[0], 'SIGKILL'); // its replacement loads v2; old[1] runs v1
  await waitFor(() => children(m).length === 2 && !children(m).includes(old[0]), 10000, 'a new worker');
  const fresh = children(m).find((p) => p !== old[1]);
  await waitFor(() => fs.readdirSync('/proc').includes(String(fresh)) && cmdline(fresh).includes('gunicorn'), 5000, 'the new worker up');

  const seen = [];
  for (let i = 0; i < 12; i++) {
    const r = await curlFrom(tmp.repo, px.port);
    seen.push(r.status === 200 ? r.body : r.status);
    assert.ok(r.status === 409 || (r.status === 200 && r.body === 'v2'),
      `request ${i + 1}: the old worker's code served (${r.status} ${r.body}); all so far: ${seen.join(' ')}`);
  }
  assert.ok(seen.includes(409), `the server with a worker on the old code was refused: ${seen.join(' ')}`);

  const restarted = await cli(tmp, ['restart', '--front', String(px.port)], { cwd: tmp.repo, ms: 60000 });
  assert.equal(restarted.code, 0, restarted.stderr);
  const after = await curlFrom(tmp.repo, px.port);
  assert.equal(after.status, 200, after.body);
  assert.equal(after.body, 'v2');
  sanitizerClean(assert, px.stderr());
});
