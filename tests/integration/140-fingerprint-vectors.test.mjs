// 140: the C fingerprint (`wtproxy fingerprint`) and the Python one
// (`python3 -m wtproxy_whoami fingerprint`) reproduce every test vector of
// whoami/testvectors/ (expected values from the independent reference.py),
// and print the same bytes for --json and --list. A vector that makes
// files unreadable runs both as user nobody when the test runs as root
// (root reads anything), in a temp folder nobody can traverse. And
// `wtproxy fingerprint --unknown-after-start PID`, what a server no
// middleware covers (Perl, Ruby) runs at its start: the Python
// middleware's own answer for the same tree and process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import {
  loadVectors, tempDir, buildTree, patternArgs, fingerprintCli, isRoot, python, pythonPath,
} from './lib/whoami.mjs';

for (const v of loadVectors()) {
  test(`vector ${v.file}: ${v.description}`, async (t) => {
    const dir = path.join(tempDir(t), 'tree');
    fs.mkdirSync(dir, { mode: 0o755 });
    buildTree(v, dir);
    const asNobody = isRoot && v.tree.some((e) => e.mode !== undefined);
    const args = [dir, ...patternArgs(v.include, v.exclude)];
    const out = {};
    for (const impl of ['c', 'py']) {
      const json = await fingerprintCli(impl, [...args, '--json'], { asNobody });
      assert.equal(json.code, 0, `${impl}: ${json.stderr}`);
      assert.equal(json.stderr, '', `${impl} printed nothing else (no sanitizer report)`);
      const got = JSON.parse(json.stdout);
      assert.deepEqual({ files: got.files, hash: got.hash }, v.expected, `${impl} on ${v.file}`);
      assert.deepEqual(got.include, v.include);
      assert.deepEqual(got.exclude, v.exclude);
      assert.equal(got.algorithm, 'wtproxy-fp-v1');
      const list = await fingerprintCli(impl, [...args, '--list'], { asNobody });
      assert.equal(list.code, 0, `${impl}: ${list.stderr}`);
      out[impl] = { json: json.stdout, list: list.stdout };
    }
    assert.equal(out.py.json, out.c.json, 'the two --json outputs are the same bytes');
    assert.equal(out.py.list, out.c.list, 'the two --list outputs are the same records');
    assert.equal(out.c.list.trim().split('\n').length, v.expected.files + 1);
  });
}

test('an unreadable file is a "u" record: the hash changes once it can be read', async (t) => {
  const v = loadVectors().find((x) => x.file.startsWith('07-'));
  const dir = path.join(tempDir(t), 'tree');
  buildTree(v, dir);
  const args = [dir, '--list', ...patternArgs(v.include, v.exclude)];
  for (const impl of ['c', 'py']) {
    const before = await fingerprintCli(impl, args, { asNobody: isRoot });
    assert.match(before.stdout, /^u e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 secret\.py$/m);
    assert.doesNotMatch(before.stdout, /inner\.py|noexec/);
    fs.chmodSync(path.join(dir, 'secret.py'), 0o644);
    const after = await fingerprintCli(impl, args, { asNobody: isRoot });
    assert.match(after.stdout, /^f [0-9a-f]{64} secret\.py$/m);
    assert.notEqual(after.stdout.split('\n').at(-2), before.stdout.split('\n').at(-2), 'the hash changed');
    fs.chmodSync(path.join(dir, 'secret.py'), 0o000);
  }
});

test('both CLIs refuse a missing folder and bad arguments the same way', async (t) => {
  const dir = tempDir(t);
  for (const impl of ['c', 'py']) {
    const missing = await fingerprintCli(impl, [path.join(dir, 'nope')]);
    assert.equal(missing.code, 1, `${impl}: ${missing.stdout}`);
    assert.match(missing.stderr, /cannot fingerprint .*nope: No such file or directory \(give the checkout's folder\)/);
    const unknown = await fingerprintCli(impl, [dir, '--frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown option "--frobnicate" \(see .*fingerprint --help\)/);
    const long = await fingerprintCli(impl, [dir, '--include', 'x'.repeat(257)]);
    assert.equal(long.code, 2);
    assert.match(long.stderr, /a pattern is 1 to 256 bytes/);
    const ok = await fingerprintCli(impl, [dir]);
    assert.equal(ok.code, 0);
    assert.equal(ok.stdout, 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 (0 files)\n');
  }
});

test('the three CLIs\' default patterns agree: .py files and .env files (settings read at start)', async (t) => {
  const dir = tempDir(t);
  for (const [rel, body] of [['app.py', 'x = 1\n'], ['.env', 'DEBUG=1\n'], ['cfg/.env.local', 'A=2\n'], ['README.md', '#\n']]) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  }
  const out = {};
  for (const impl of ['c', 'py', 'node']) {
    const r = await fingerprintCli(impl, [dir, '--json']);
    assert.equal(r.code, 0, `${impl}: ${r.stderr}`);
    out[impl] = r.stdout;
  }
  assert.deepEqual(JSON.parse(out.c).include, ['**/*.py', '**/.env', '**/.env.*']);
  assert.equal(JSON.parse(out.c).files, 3, 'app.py, .env, cfg/.env.local; not README.md');
  assert.equal(out.py, out.c, 'the Python CLI: the same defaults, the same bytes');
  assert.equal(out.node, out.c, 'the Node CLI: the same defaults, the same bytes');
});

// A Python process in dir that prints its pid, then, at each line on its
// stdin, the middleware's fingerprint object (wtproxy_whoami.answer): the
// files edited after its start as unknown. Killed by pid at the end.
function middlewareProcess(t, dir) {
  const proc = spawn(python, ['-c', `import json, os, sys
from wtproxy_whoami.answer import Whoami
print(os.getpid(), flush=True)
for _ in sys.stdin:
    print(json.dumps(Whoami(root='.').answer['fingerprint']), flush=True)
`], { cwd: dir, stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' } });
  t.after(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  const lines = [];
  let buf = '';
  proc.stdout.on('data', (d) => { buf += d; const parts = buf.split('\n'); buf = parts.pop(); lines.push(...parts); });
  const line = async (n) => {
    for (let i = 0; i < 400 && lines.length < n; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(lines.length >= n, `the Python process printed ${lines.length} lines, not ${n}`);
    return lines[n - 1];
  };
  return { proc, line };
}

test('--unknown-after-start PID: the files edited after PID started are unknown, as the Python middleware answers in that process', async (t) => {
  const dir = tempDir(t);
  // written just before the start: loaded, so never unknown (/proc/stat's
  // whole-second btime put the start up to 1 s early and called it so)
  fs.writeFileSync(path.join(dir, 'app.py'), 'x = 1\n');
  const py = middlewareProcess(t, dir);
  const pid = Number(await py.line(1));
  await new Promise((r) => setTimeout(r, 50));
  fs.writeFileSync(path.join(dir, 'views.py'), 'y = 2\n');
  fs.writeFileSync(path.join(dir, '.env'), 'DEBUG=1\n');
  py.proc.stdin.write('\n');
  const theirs = JSON.parse(await py.line(2));
  const json = await fingerprintCli('c', [dir, '--json', '--unknown-after-start', String(pid)]);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), theirs, 'the middleware\'s fingerprint object, byte for byte');
  const list = await fingerprintCli('c', [dir, '--list', '--unknown-after-start', String(pid)]);
  assert.match(list.stdout, /^f [0-9a-f]{64} app\.py$/m, 'written before the start: its digest');
  assert.match(list.stdout, /^u e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 \.env$/m);
  assert.match(list.stdout, /^u e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 views\.py$/m);
  const plain = await fingerprintCli('c', [dir, '--json']);
  assert.notEqual(JSON.parse(plain.stdout).hash, theirs.hash, 'no disk fingerprint matches it: stale until restarted');
  // the same cut given as a time: the start, in ns since the epoch
  const at = await fingerprintCli('c', [dir, '--json', '--unknown-after', String(BigInt(fs.statSync(path.join(dir, 'app.py'), { bigint: true }).mtimeNs))]);
  assert.equal(JSON.parse(at.stdout).hash, theirs.hash, '--unknown-after NS');
  py.proc.kill('SIGKILL');
  await new Promise((r) => py.proc.once('exit', r));
  const gone = await fingerprintCli('c', [dir, '--json', '--unknown-after-start', String(pid)]);
  assert.equal(gone.code, 1);
  assert.equal(gone.stdout, '');
  assert.equal(gone.stderr, `wtproxy fingerprint: no process ${pid} runs, so its start is unknown: ` +
    '--unknown-after-start takes the pid of the server that runs it ($$ in Perl, Ruby or a shell)\n');
});
