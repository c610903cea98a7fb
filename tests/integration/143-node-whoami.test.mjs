// 143: the Node implementation (whoami/node/): its fingerprint CLI
// reproduces every test vector with the same --json and --list bytes as
// `wtproxy fingerprint`, and its Connect-style middleware on a real
// node:http server answers /__whoami (checkout, pid, the hash of the code
// at start, still the old one after an edit), passes every other path to
// the app, and with NODE_ENV=production serves nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { httpGet } from './lib/backends.mjs';
import { git, waitFor, makeWorktrees, startDaemon, startRun, getWorktree, cli } from './lib/registry.mjs';
import { repoRoot } from './lib/wtproxy.mjs';
import { compute } from '../../whoami/node/fingerprint.mjs';
import { loadVectors, tempDir, buildTree, patternArgs, fingerprintCli, isRoot, diskFingerprint } from './lib/whoami.mjs';

for (const v of loadVectors()) {
  test(`node: vector ${v.file}`, async (t) => {
    const dir = path.join(tempDir(t), 'tree');
    fs.mkdirSync(dir, { mode: 0o755 });
    buildTree(v, dir);
    const asNobody = isRoot && v.tree.some((e) => e.mode !== undefined);
    const args = [dir, ...patternArgs(v.include, v.exclude)];
    const node = await fingerprintCli('node', [...args, '--json'], { asNobody });
    assert.equal(node.code, 0, node.stderr);
    const got = JSON.parse(node.stdout);
    assert.deepEqual({ files: got.files, hash: got.hash }, v.expected);
    const c = await fingerprintCli('c', [...args, '--json'], { asNobody });
    assert.equal(node.stdout, c.stdout, 'the same --json bytes as wtproxy fingerprint');
    const nodeList = await fingerprintCli('node', [...args, '--list'], { asNobody });
    const cList = await fingerprintCli('c', [...args, '--list'], { asNobody });
    assert.equal(nodeList.stdout, cList.stdout, 'the same records');
  });
}

const serverJs = `import http from 'node:http';
import { whoami } from ${JSON.stringify(path.join(repoRoot, 'whoami/node/index.mjs'))};
const mw = whoami(JSON.parse(process.env.WHOAMI_OPTS || '{}'));
const server = http.createServer((req, res) => mw(req, res, () => {
  res.writeHead(200, { 'Content-Type': 'text/plain', 'X-App': 'yes' });
  res.end('app saw ' + req.method + ' ' + req.url);
}));
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
`;

async function startNode(t, cwd, env = {}, script = 'server.mjs') {
  const proc = spawn(process.execPath, [script], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  t.after(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  const port = await waitFor(() => Number((/port (\d+)/.exec(out) || [])[1]), 10000, `node server\n${out}`);
  return { proc, port };
}

function project(t) {
  const repo = path.join(tempDir(t), 'web');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  fs.mkdirSync(path.join(repo, 'e2e'));
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'src/server.mjs'), serverJs);
  fs.writeFileSync(path.join(repo, 'src/logic.ts'), 'export const v = 1;\n');
  fs.writeFileSync(path.join(repo, 'e2e/app.spec.ts'), 'test("x", () => {});\n');
  fs.writeFileSync(path.join(repo, 'src/messages.json'), '{"hello": "v1"}\n');
  fs.writeFileSync(path.join(repo, '.env'), 'GREETING=v1\n');
  return repo;
}

const nodeArgs = ['--include', '**/*.js', '--include', '**/*.mjs', '--include', '**/*.cjs', '--include', '**/*.jsx',
  '--include', '**/*.ts', '--include', '**/*.mts', '--include', '**/*.cts', '--include', '**/*.tsx',
  '--include', '**/*.json', '--include', '**/*.html', '--include', '**/.env', '--include', '**/.env.*', '--exclude', '**/.git/**', '--exclude', '**/node_modules/**',
  '--exclude', '**/.venv/**', '--exclude', '**/venv/**', '--exclude', '**/__pycache__/**', '--exclude', '**/dist/**',
  '--exclude', '**/e2e/**', '--exclude', '**/*.spec.*', '--exclude', '**/*.test.*', '--exclude', '**/coverage/**',
  '--exclude', '**/test-results/**', '--exclude', '**/playwright-report/**', '--exclude', '**/.nyc_output/**',
  '--exclude', '**/.next/**', '--exclude', '**/%5F%5Fwhoami/stamp.js', ...['.angular', '.vite', '.svelte-kit', '.nuxt',
    '.output', '.astro', '.turbo', '.cache', '.parcel-cache', 'public'].flatMap((d) => ['--exclude', `**/${d}/**`])];

test('node middleware: /__whoami for the checkout; other paths reach the app; the hash of the code at start', async (t) => {
  const repo = project(t);
  const s = await startNode(t, path.join(repo, 'src'));
  const r = await httpGet(s.port, '/__whoami');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['cache-control'], 'no-store');
  const who = JSON.parse(r.body);
  assert.equal(who.checkout, fs.realpathSync(repo));
  assert.equal(who.pid, s.proc.pid);
  assert.match(who.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const disk = await diskFingerprint(repo, nodeArgs);
  assert.deepEqual(who.fingerprint, disk, 'the same as wtproxy fingerprint with the declared patterns');
  assert.equal(disk.files, 4, 'server.mjs, logic.ts, and the messages.json and .env it may read; the e2e spec is not code the server loads');

  const other = await httpGet(s.port, '/__whoami/x?y');
  assert.equal(other.headers['x-app'], 'yes');
  assert.equal(other.body.toString(), 'app saw GET /__whoami/x?y');
  assert.equal((await httpGet(s.port, '/__whoami?fresh=1')).status, 200);
  assert.equal((await httpGet(s.port, '/__whoami', { method: 'HEAD' })).body.length, 0);
  assert.equal((await httpGet(s.port, '/__whoami', { method: 'DELETE' })).status, 405);

  fs.writeFileSync(path.join(repo, 'e2e/app.spec.ts'), 'test("edited", () => {});\n');
  fs.mkdirSync(path.join(repo, 'test-results'));
  fs.writeFileSync(path.join(repo, 'test-results/.last-run.json'), '{"status": "passed"}\n');
  assert.equal((await diskFingerprint(repo, nodeArgs)).hash, disk.hash, 'an e2e edit, or a test run\'s results, changes nothing');
  fs.writeFileSync(path.join(repo, 'src/messages.json'), '{"hello": "v2"}\n');
  const data = await diskFingerprint(repo, nodeArgs);
  assert.notEqual(data.hash, disk.hash, 'an edit of the data the server read at start makes it stale');
  fs.writeFileSync(path.join(repo, '.env'), 'GREETING=v2\n');
  const env = await diskFingerprint(repo, nodeArgs);
  assert.notEqual(env.hash, data.hash, 'so does an edit of its .env');
  fs.writeFileSync(path.join(repo, 'src/logic.ts'), 'export const v = 2;\n');
  assert.notEqual((await diskFingerprint(repo, nodeArgs)).hash, env.hash);
  assert.equal(JSON.parse((await httpGet(s.port, '/__whoami')).body).fingerprint.hash, disk.hash);
});

test('node middleware: a Next.js app beside the server compiling leaves its fingerprint alone', async (t) => {
  // An API and a Next.js front end in one checkout: next dev writes its
  // build output (.next) and its /__whoami route's stamp at each compile.
  // Neither is the API's code: counted, every page compile made the API
  // stale, and `wtproxy restart` of both servers exited 1 every time.
  const repo = project(t);
  const s = await startNode(t, path.join(repo, 'src'));
  const who = JSON.parse((await httpGet(s.port, '/__whoami')).body).fingerprint;
  fs.mkdirSync(path.join(repo, 'web/.next/dev/server'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'web/.next/dev/server/page.js'), 'compiled();\n');
  fs.mkdirSync(path.join(repo, 'web/app/%5F%5Fwhoami'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'web/app/%5F%5Fwhoami/stamp.js'), 'export default "1";\n');
  const disk = await diskFingerprint(repo, patternArgs(who.include, who.exclude));
  assert.equal(disk.hash, who.hash, 'next dev\'s output is not the code this server loaded');
});

// A Fastify user's server read src/page.html once at start and served it
// on /: after an edit of the page, a test passed on the old one while the
// server was verified. And ng serve beside an API writes .angular/cache at
// each start: the API was stale at once and restarted in a loop; public/'s
// files are sent as they are at each request.
test('node middleware: a page it may read at start makes it stale; an Angular cache or public/ file does not', async (t) => {
  const repo = project(t);
  fs.writeFileSync(path.join(repo, 'src/page.html'), '<h1 id="greeting">hi</h1>\n');
  const s = await startNode(t, path.join(repo, 'src'));
  const who = JSON.parse((await httpGet(s.port, '/__whoami')).body).fingerprint;
  const args = patternArgs(who.include, who.exclude);
  assert.equal((await diskFingerprint(repo, args)).hash, who.hash);
  fs.mkdirSync(path.join(repo, '.angular/cache/17.3.17/vite/deps_temp_1'), { recursive: true });
  fs.writeFileSync(path.join(repo, '.angular/cache/17.3.17/vite/deps_temp_1/package.json'), '{"type": "module"}\n');
  fs.mkdirSync(path.join(repo, 'public'));
  fs.writeFileSync(path.join(repo, 'public/index.html'), '<p>static</p>\n');
  assert.equal((await diskFingerprint(repo, args)).hash, who.hash, 'a cache ng serve writes, a static file: not code');
  fs.writeFileSync(path.join(repo, 'src/page.html'), '<h1 id="title">hi</h1>\n');
  assert.notEqual((await diskFingerprint(repo, args)).hash, who.hash, 'the edited page');
});

test('node middleware: NODE_ENV=production passes /__whoami to the app', async (t) => {
  const repo = project(t);
  const s = await startNode(t, path.join(repo, 'src'), { NODE_ENV: 'production' });
  const r = await httpGet(s.port, '/__whoami');
  assert.equal(r.body.toString(), 'app saw GET /__whoami');
});

// An Express user started `wtproxy run` from a shell with
// NODE_ENV=production: the middleware, off, answered nothing, and the 502,
// doctor and `wtproxy restart` said it was missing; the restart they
// proposed gave the same, in a loop. Off under wtproxy run, it says so,
// and the refusal quotes it with the fix: the server's start.
test('node middleware under wtproxy run with NODE_ENV=production: the refusal says the middleware is off and why', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), serverJs.replace("server.listen(0, '127.0.0.1'", "server.listen(Number(process.env.PORT), '127.0.0.1'"));
  const px = await startDaemon(t, tmp);
  const run = startRun(t, tmp, { cwd: tmp.wt.a, front: px.port, env: { NODE_ENV: 'production' }, command: [process.execPath, 'server.mjs'] });
  await run.ready;
  const r = await getWorktree(px.port, tmp.wt.a);
  assert.equal(r.status, 502, r.body);
  assert.equal(r.headers['x-wtproxy-refused'], 'no-whoami');
  assert.match(r.body, /answers GET \/__whoami with HTTP 404, its middleware saying that it is off: this server runs with NODE_ENV=production/);
  assert.ok(r.body.includes(`then start it again from a shell without that setting: cd ${tmp.wt.a} && wtproxy run --front ${px.port} --restart-on-stale -- `), r.body);
  assert.doesNotMatch(r.body, /add the whoami middleware|app\.use\(mw\)/, 'it is there');
  const d = await cli(tmp, ['doctor', '--json', '--front', String(px.port)], { cwd: tmp.wt.a });
  const w = JSON.parse(d.stdout).checks.find((c) => c.name === 'whoami');
  assert.equal(w.status, 'problem', JSON.stringify(w));
  assert.match(w.detail, /its middleware saying that it is off: this server runs with NODE_ENV=production/);
  assert.equal(w.fix, `wtproxy stop --front ${px.port}, then start it again from a shell without NODE_ENV=production`);
});

// whoami() fingerprints when it is called, after the app imported its
// modules: a module edited in between was hashed as its new contents while
// the old ones ran, and the server was called current. A file modified
// after the process started is reported unknown instead.
test('node middleware: a module edited between its import and whoami() is never vouched for', async (t) => {
  const repo = project(t);
  const src = path.join(repo, 'src');
  fs.writeFileSync(path.join(src, 'lib.mjs'), 'export const v = 1;\n');
  fs.writeFileSync(path.join(src, 'race.mjs'), `import fs from 'node:fs';
import http from 'node:http';
import { whoami } from ${JSON.stringify(path.join(repoRoot, 'whoami/node/index.mjs'))};
import { v } from './lib.mjs';
fs.writeFileSync('loaded', '');
while (!fs.existsSync('go')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
const mw = whoami();
const server = http.createServer((req, res) => mw(req, res, () => res.end(String(v))));
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
`);
  const starting = startNode(t, src, {}, 'race.mjs');
  await waitFor(() => fs.existsSync(path.join(src, 'loaded')), 10000, 'race.mjs imported lib.mjs');
  fs.writeFileSync(path.join(src, 'lib.mjs'), 'export const v = 2;\n');
  fs.writeFileSync(path.join(src, 'go'), '');
  const race = await starting;
  assert.equal((await httpGet(race.port, '/')).body.toString(), '1', 'the server runs v = 1');
  const who = JSON.parse((await httpGet(race.port, '/__whoami')).body).fingerprint;
  const disk = await diskFingerprint(repo, nodeArgs);
  assert.notEqual(who.hash, disk.hash, 'a server running v = 1 is not vouched for as the disk, v = 2');
  const h = crypto.createHash('sha256');
  for (const r of compute(repo, who.include, who.exclude).records) {
    const unknown = r.path.toString() === 'src/lib.mjs';
    h.update(Buffer.concat([Buffer.from(unknown ? 'u' : r.type), r.path, Buffer.from([0]),
      Buffer.from((unknown ? crypto.createHash('sha256').digest('hex') : r.digest) + '\n')]));
  }
  assert.equal(who.hash, `sha256:${h.digest('hex')}`, 'only lib.mjs is unknown; the rest as on disk');
  race.proc.kill('SIGKILL');

  const fresh = await startNode(t, src, {}, 'race.mjs');
  assert.equal((await httpGet(fresh.port, '/')).body.toString(), '2');
  assert.equal(JSON.parse((await httpGet(fresh.port, '/__whoami')).body).fingerprint.hash, disk.hash,
    'the restart loads and fingerprints it right');
});
