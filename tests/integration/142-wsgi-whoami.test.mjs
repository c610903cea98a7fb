// 142: wtproxy_whoami.wsgi.WhoamiWSGIMiddleware around a plain WSGI app on
// wsgiref.simple_server: /__whoami answers like the Django middleware
// (checkout found from the working folder, pid, the fingerprint taken at
// start), every other path reaches the app untouched, the arguments
// root, include and exclude are honoured, and a module run from stale
// bytecode is never reported as the code on disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { httpGet } from './lib/backends.mjs';
import { git, waitFor } from './lib/registry.mjs';
import { python, pythonPath, tempDir, startPython, freePort, diskFingerprint } from './lib/whoami.mjs';

const serverPy = (wrapArgs) => `import sys
from wsgiref.simple_server import make_server, WSGIRequestHandler
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware

def app(environ, start_response):
    body = ('app saw %s %s?%s' % (environ['REQUEST_METHOD'], environ['PATH_INFO'],
                                  environ.get('QUERY_STRING', ''))).encode()
    start_response('200 OK', [('Content-Type', 'text/plain'), ('X-App', 'yes')])
    return [body]

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

application = WhoamiWSGIMiddleware(app${wrapArgs})
make_server('127.0.0.1', int(sys.argv[1]), application, handler_class=Quiet).serve_forever()
`;

function project(t, wrapArgs = '') {
  const repo = path.join(tempDir(t), 'svc');
  fs.mkdirSync(path.join(repo, 'src/pkg'), { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'src/server.py'), serverPy(wrapArgs));
  fs.writeFileSync(path.join(repo, 'src/pkg/logic.py'), 'VALUE = 1\n');
  fs.writeFileSync(path.join(repo, 'notes.txt'), 'notes\n');
  return repo;
}

async function serve(t, cwd) {
  const port = await freePort();
  return startPython(t, ['server.py', String(port)], { cwd, port });
}

test('WSGI: /__whoami answers for the checkout; other paths reach the app untouched', async (t) => {
  const repo = project(t);
  const server = await serve(t, path.join(repo, 'src'));
  const r = await httpGet(server.port, '/__whoami');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['cache-control'], 'no-store');
  const who = JSON.parse(r.body);
  assert.equal(who.checkout, fs.realpathSync(repo), 'the nearest folder with .git above the cwd');
  assert.equal(who.pid, server.pid);
  const disk = await diskFingerprint(repo);
  assert.deepEqual(who.fingerprint, disk);
  assert.equal(disk.files, 2);

  for (const p of ['/', '/__whoami/', '/__whoamix', '/api/__whoami', '/x?y=1']) {
    const o = await httpGet(server.port, p);
    assert.equal(o.status, 200);
    assert.equal(o.headers['x-app'], 'yes', p);
    assert.equal(o.body.toString(), `app saw GET ${p.split('?')[0]}?${p.split('?')[1] || ''}`);
  }
  const head = await httpGet(server.port, '/__whoami', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(Number(head.headers['content-length']), r.body.length);
  assert.equal(head.body.length, 0);
  const post = await httpGet(server.port, '/__whoami', { method: 'POST', body: 'x' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, 'GET, HEAD');

  fs.writeFileSync(path.join(repo, 'src/pkg/logic.py'), 'VALUE = 2\n');
  assert.notEqual((await diskFingerprint(repo)).hash, disk.hash);
  assert.equal(JSON.parse((await httpGet(server.port, '/__whoami')).body).fingerprint.hash, disk.hash,
    'the fingerprint of the code loaded at start, not of the disk now');
});

test('WSGI: root, include and exclude arguments', async (t) => {
  const repo = project(t, ", root='..', include=['**/*.txt', '**/*.py'], exclude=['src/pkg/**']");
  const server = await serve(t, path.join(repo, 'src'));
  const who = JSON.parse((await httpGet(server.port, '/__whoami')).body);
  assert.equal(who.checkout, fs.realpathSync(repo));
  assert.deepEqual(who.fingerprint.include, ['**/*.txt', '**/*.py']);
  assert.deepEqual(who.fingerprint.exclude, ['src/pkg/**']);
  assert.equal(who.fingerprint.files, 2, 'notes.txt and src/server.py');
  const disk = await diskFingerprint(repo, ['--include', '**/*.txt', '--include', '**/*.py', '--exclude', 'src/pkg/**']);
  assert.equal(who.fingerprint.hash, disk.hash);
});

// Python runs a .pyc whose header matches its source's size and mtime in
// whole seconds: an edit of the same size saved within the second the
// version before it was compiled (a reloader compiles within a second of
// an edit) runs the old code. Its fingerprint, taken from the files, said
// the new one, and the gate served the old code as current.
test('WSGI: a module run from stale bytecode is never vouched for, and its .pyc goes', async (t) => {
  const repo = project(t);
  const src = path.join(repo, 'src');
  const logic = path.join(src, 'pkg/logic.py');
  fs.writeFileSync(path.join(src, 'value_server.py'), `import sys
from wsgiref.simple_server import make_server, WSGIRequestHandler
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware
from pkg.logic import VALUE

def app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [str(VALUE).encode()]

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

make_server('127.0.0.1', int(sys.argv[1]), WhoamiWSGIMiddleware(app), handler_class=Quiet).serve_forever()
`);
  // Bytecode written, to a folder of the test's rather than beside the
  // sources of wtproxy_whoami, which the servers import too.
  const writes = { PYTHONDONTWRITEBYTECODE: '', PYTHONPYCACHEPREFIX: path.join(repo, '..', 'pycache') };
  const second = 1700000000; // VALUE = 1 saved at .1, compiled at .2, VALUE = 2 saved at .5
  fs.utimesSync(logic, second, second + 0.1);
  const compiled = spawnSync(python, ['-c', 'import pkg.logic; print(pkg.logic.__cached__)'],
    { cwd: src, env: { ...process.env, ...writes } });
  assert.equal(compiled.status, 0, compiled.stderr.toString());
  const pyc = compiled.stdout.toString().trim();
  fs.utimesSync(pyc, second, second + 0.2);
  fs.writeFileSync(logic, 'VALUE = 2\n');
  fs.utimesSync(logic, second, second + 0.5);

  const stalePort = await freePort();
  const stale = await startPython(t, ['value_server.py', String(stalePort)], { cwd: src, port: stalePort, env: writes });
  assert.equal((await httpGet(stale.port, '/')).body.toString(), '1', 'Python ran the old bytecode');
  const disk = await diskFingerprint(repo);
  assert.notEqual(JSON.parse((await httpGet(stale.port, '/__whoami')).body).fingerprint.hash, disk.hash,
    'the fingerprint of a server running VALUE = 1 must not be that of the disk, VALUE = 2');
  assert.ok(!fs.existsSync(pyc), 'the stale .pyc is removed, so that a restart compiles the source');
  await stale.stop();

  const freshPort = await freePort();
  const fresh = await startPython(t, ['value_server.py', String(freshPort)], { cwd: src, port: freshPort, env: writes });
  assert.equal((await httpGet(fresh.port, '/')).body.toString(), '2');
  assert.equal(JSON.parse((await httpGet(fresh.port, '/__whoami')).body).fingerprint.hash, disk.hash);
});

// The middleware fingerprints when it is built, after the app imported its
// modules: a module edited in between was hashed as its new contents while
// the old ones ran, and the server was called current. A file modified
// after the process started is reported unknown instead.
test('WSGI: a module edited between its import and the fingerprint is never vouched for', async (t) => {
  const repo = project(t);
  const src = path.join(repo, 'src');
  const logic = path.join(src, 'pkg/logic.py');
  fs.writeFileSync(path.join(src, 'slow_server.py'), `import os, sys, time
from wsgiref.simple_server import make_server, WSGIRequestHandler
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware
from pkg.logic import VALUE

open('loaded', 'w').close()
while not os.path.exists('go'):
    time.sleep(0.01)

def app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [str(VALUE).encode()]

class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass

make_server('127.0.0.1', int(sys.argv[1]), WhoamiWSGIMiddleware(app), handler_class=Quiet).serve_forever()
`);
  const racePort = await freePort();
  const starting = startPython(t, ['slow_server.py', String(racePort)], { cwd: src, port: racePort });
  await waitFor(() => fs.existsSync(path.join(src, 'loaded')), 10000, 'slow_server.py imported pkg.logic');
  fs.writeFileSync(logic, 'VALUE = 2\n');
  fs.writeFileSync(path.join(src, 'go'), '');
  const race = await starting;
  assert.equal((await httpGet(race.port, '/')).body.toString(), '1', 'the server runs VALUE = 1');
  const who = JSON.parse((await httpGet(race.port, '/__whoami')).body).fingerprint;
  const disk = await diskFingerprint(repo);
  assert.notEqual(who.hash, disk.hash, 'a server running VALUE = 1 is not vouched for as the disk, VALUE = 2');
  const asUnknown = spawnSync(python, ['-c', `from wtproxy_whoami import fingerprint as fp
r = fp.compute('.').records
print(fp.Fingerprint([(b'u', p, fp.EMPTY_DIGEST) if p == b'src/pkg/logic.py' else (k, p, d) for k, p, d in r]).hash)`],
  { cwd: repo, env: { ...process.env, PYTHONPATH: pythonPath } });
  assert.equal(who.hash, asUnknown.stdout.toString().trim(), 'only logic.py is unknown; the rest as on disk');
  await race.stop();

  fs.rmSync(path.join(src, 'loaded'));
  const freshPort = await freePort();
  const fresh = await startPython(t, ['slow_server.py', String(freshPort)], { cwd: src, port: freshPort });
  assert.equal((await httpGet(fresh.port, '/')).body.toString(), '2');
  assert.equal(JSON.parse((await httpGet(fresh.port, '/__whoami')).body).fingerprint.hash, disk.hash,
    'the restart loads and fingerprints it right');
});
