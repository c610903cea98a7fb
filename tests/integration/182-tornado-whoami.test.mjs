// 182: a real Tornado app (Debian's python3-tornado) with autoreload=True,
// /__whoami from wtproxy_whoami.tornado's route, under `wtproxy run`.
// Tornado's autoreload re-executes the same process on a change (same pid,
// same start time): its answer said "reloads": false (nothing above it
// reloads) and reported every file edited since the process began as
// unknown, so one edit gave a 409 "nothing reloads it" for good while
// Tornado had reloaded. Now an edit, and an edit to a template (which
// Tornado caches compiled), are each served by the reloaded process,
// verified, never refused and never the old code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { httpGet } from './lib/backends.mjs';
import { commitWorktree, makeWorktrees, startDaemon, startRun, get, lsJson, waitFor } from './lib/registry.mjs';
import { pythonPath } from './lib/whoami.mjs';

// Debian's Python, which has Tornado (python3 on PATH may not)
const python = '/usr/bin/python3';
const pythonEnv = { PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' };

const appPy = (version) => `import os, sys
import tornado.ioloop, tornado.web
VERSION = "${version}"

class Main(tornado.web.RequestHandler):
    def get(self):
        self.render('index.html', version=VERSION)

routes = [(r'/', Main)]
if os.environ.get('WTPROXY_PORT'):
    from wtproxy_whoami.tornado import whoami_route
    routes.insert(0, whoami_route())
app = tornado.web.Application(routes, autoreload=True,
    template_path=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'templates'))
app.listen(int(sys.argv[1]), '127.0.0.1')
tornado.ioloop.IOLoop.current().start()
`;

function tornadoWorktree(t) {
  const tmp = makeWorktrees(t, []);
  fs.writeFileSync(path.join(tmp.repo, 'app.py'), appPy('v1'));
  fs.mkdirSync(path.join(tmp.repo, 'templates'));
  fs.writeFileSync(path.join(tmp.repo, 'templates/index.html'), '<p>notes {{ version }} tpl-1</p>\n');
  return commitWorktree(tmp);
}

const page = async (px, wt) => {
  const r = await get(px.port, { 'X-Wtproxy-Worktree': wt }, '/');
  return { ...r, text: String(r.body).trim() };
};

test('Tornado autoreload: each edit, code or template, is served by the reloaded process, verified, never a 409', async (t) => {
  const tmp = tornadoWorktree(t);
  const wt = tmp.wt.a;
  const px = await startDaemon(t, tmp, ['--stale-grace', '20s']);
  const run = startRun(t, tmp, {
    cwd: wt, front: px.port, readyMs: 30000, stopSignal: 'SIGTERM', env: pythonEnv,
    command: [python, 'app.py', '{port}'],
  });
  const port = await run.ready;
  const first = await page(px, wt);
  assert.equal(first.status, 200, first.body + run.stderr());
  assert.equal(first.text, '<p>notes v1 tpl-1</p>');
  const who = JSON.parse((await httpGet(port, '/__whoami')).body);
  assert.equal(who.checkout, wt);
  assert.equal(who.reloads, undefined, 'Tornado reloads it: never "reloads": false');
  assert.equal(who.fingerprint.files, 2, 'app.py and templates/index.html');
  const head = await httpGet(port, '/__whoami', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);

  // Tornado's watcher takes the files' times at its first look, 0.5 s
  // after the start: an edit before that is never reloaded (and the gate
  // rightly says stale).
  await new Promise((r) => setTimeout(r, 1200));
  fs.writeFileSync(path.join(wt, 'app.py'), appPy('v2'));
  const after = await page(px, wt);
  assert.equal(after.status, 200, after.body + run.stderr());
  assert.equal(after.text, '<p>notes v2 tpl-1</p>', 'the new code, once Tornado re-executed');
  const again = JSON.parse((await httpGet(port, '/__whoami')).body);
  assert.equal(again.pid, who.pid, 'reloaded in place: the same process');
  assert.notEqual(again.fingerprint.hash, who.fingerprint.hash);

  await new Promise((r) => setTimeout(r, 1200)); // the new image's first look
  fs.writeFileSync(path.join(wt, 'templates/index.html'), '<p>notes {{ version }} tpl-2</p>\n');
  const tpl = await page(px, wt);
  assert.equal(tpl.status, 200, tpl.body + run.stderr());
  assert.equal(tpl.text, '<p>notes v2 tpl-2</p>', 'the edited template, not the cached one');
  const [e] = await lsJson(tmp);
  await waitFor(async () => (await lsJson(tmp))[0].whoami.state === 'verified', 5000, 'verified');
  assert.equal(e.pid > 0, true);
});
