// 181: PHP's built-in server (`php -S`) behind the gate. It answers with
// `Connection: close` and no Content-Length: the body ends at the close
// (RFC 9112 6.3), which the gate's client called "closed the connection in
// the middle of its answer". A router.php answering without it is verified
// and served; a server with no whoami (its index.php answers 404) is
// refused no-whoami, and one whose router does not compile (PHP answers an
// empty 200) whoami-invalid saying the answer is empty, never
// backend-unreachable. The recipe `wtproxy help whoami` gives PHP, taken
// from the help's text into a .wtproxy: verified, served, and restarted at
// the first request after an edit ("reloads": false), with stale_grace
// at 60 s. Skipped without /usr/bin/php (scripts/bootstrap installs php-cli).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {
  makeWorktrees, startDaemon, startRun, getWorktree, lsJson, cli, curlFrom,
} from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const php = '/usr/bin/php';
const noPhp = !fs.existsSync(php) && `${php} is not installed (scripts/bootstrap installs php-cli)`;

function refusedAs(r, reason) {
  assert.equal(r.headers['x-wtproxy-refused'], reason, `expected ${reason}: ${r.status} ${r.body}`);
  assert.ok(r.status >= 404, `a refusal's status is 404 or above, got ${r.status}`);
}

// The backend's own answer, asked directly: { status, headers, body }.
function direct(port, urlPath) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

// The fingerprint taken before php starts, answered by router.php without
// Content-Length.
const devServer = `#!/bin/sh
mkdir -p .wtproxy-run && ${wtproxyBin} fingerprint . --json --include '**/*.php' > .wtproxy-run/fp.json || exit 1
exec ${php} -S 127.0.0.1:"$1" -t public router.php
`;
const router = `<?php
if (parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH) === '/__whoami') {
    $fp = __DIR__ . '/.wtproxy-run/fp.json';
    header('Content-Type: application/json');
    header('Cache-Control: no-store');
    echo json_encode([
        'wtproxy_whoami' => 1, 'checkout' => __DIR__, 'pid' => getmypid(),
        'started_at' => gmdate('Y-m-d\\TH:i:s\\Z', filemtime($fp)),
        'fingerprint' => json_decode(file_get_contents($fp)), 'reloads' => false,
    ]);
    return true;
}
return false;
`;
const page = (greeting) => `<?php echo json_encode(['greeting' => '${greeting}', 'checkout' => dirname(__DIR__)]);\n`;

function writePhpApp(dir, files) {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
}

test('php -S answering /__whoami without Content-Length: verified and served', { skip: noPhp }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  const wt = tmp.wt.a;
  writePhpApp(wt, { 'bin/dev-server': devServer, 'router.php': router, 'public/index.php': page('Hello') });
  const run = startRun(t, tmp, {
    cwd: wt, front: px.port, stopSignal: 'SIGTERM',
    command: ['/bin/sh', 'bin/dev-server', '{port}'],
  });
  const port = await run.ready;
  const own = await direct(port, '/__whoami');
  assert.equal(own.status, 200, own.body);
  assert.equal(own.headers['content-length'], undefined, 'php -S frames its answer by the close');
  assert.equal(JSON.parse(own.body).checkout, wt);

  let r = await getWorktree(px.port, wt);
  assert.equal(r.status, 200, r.body);
  assert.equal(r.headers['x-wtproxy-refused'], undefined);
  assert.deepEqual(JSON.parse(r.body), { greeting: 'Hello', checkout: wt });
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));
  assert.equal(run.stderr().includes('in the middle of its answer'), false, run.stderr());

});

test('php -S without /__whoami (a 404 that ends at the close): no-whoami, not whoami-invalid', { skip: noPhp }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  writePhpApp(tmp.wt.a, { 'public/index.php': '<?php http_response_code(404); echo "nf";\n' });
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, stopSignal: 'SIGTERM',
    command: [php, '-S', '127.0.0.1:{port}', '-t', 'public'],
  });
  const port = await run.ready;
  assert.equal((await direct(port, '/__whoami')).headers['content-length'], undefined);
  const r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'no-whoami');
  assert.equal(r.status, 502);
  assert.match(r.body, /HTTP 404/);
  assert.doesNotMatch(r.body, /in the middle of its answer/);
});

test('php -S whose router does not compile (an empty 200 that ends at the close): whoami-invalid, not backend-unreachable', { skip: noPhp }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  writePhpApp(tmp.wt.a, { 'router.php': '<?php\nif (true) {\n', 'public/index.php': page('Hello') });
  const run = startRun(t, tmp, {
    cwd: tmp.wt.a, front: px.port, stopSignal: 'SIGTERM',
    command: [php, '-S', '127.0.0.1:{port}', '-t', 'public', 'router.php'],
  });
  const port = await run.ready;
  const own = await direct(port, '/__whoami');
  assert.equal(own.status, 200);
  assert.equal(own.body, '');
  const r = await getWorktree(px.port, tmp.wt.a);
  refusedAs(r, 'whoami-invalid');
  assert.equal(r.status, 502);
  assert.match(r.body, /answered GET \/__whoami with something wtproxy cannot use: the answer is empty \(a 200 with no body/);
  assert.doesNotMatch(r.body, /in the middle of its answer|could not connect|stopped answering/);
});

// The PHP section of `wtproxy help whoami`: its .wtproxy start line and
// its router.php, as a user copies them.
async function phpRecipe(tmp) {
  const help = await cli(tmp, ['help', 'whoami']);
  assert.equal(help.code, 0, help.stderr);
  const at = help.stdout.indexOf('## PHP (`php -S`)');
  assert.ok(at >= 0, `wtproxy help whoami has no PHP section:\n${help.stdout.slice(0, 400)}`);
  const section = help.stdout.slice(at, help.stdout.indexOf('\n## ', at + 1));
  assert.match(section, /OPcache/);
  const start = /^start = .*$/m.exec(section)?.[0];
  const routerPhp = /```php\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(start && routerPhp, `no start line or router.php in:\n${section}`);
  return { start, routerPhp };
}

test('wtproxy help whoami\'s PHP recipe, in a .wtproxy: verified, served, restarted at the first request after an edit', { skip: noPhp }, async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  // stale_grace 60 s: an edit waited for instead of restarted at once
  // would show as a request not answered in time
  const px = await startDaemon(t, tmp, ['--stale-grace', '60s']);
  const wt = tmp.wt.a;
  const { start, routerPhp } = await phpRecipe(tmp);
  writePhpApp(wt, {
    '.wtproxy': `${start}\nfront = ${px.port}\n`, 'router.php': routerPhp, 'public/index.php': page('Hello'),
  });
  let r = await curlFrom(wt, px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(JSON.parse(r.body), { greeting: 'Hello', checkout: wt });
  const [e] = await lsJson(tmp);
  assert.equal(e.whoami.state, 'verified', JSON.stringify(e.whoami));

  // a later mtime than the fingerprint's, then the edit
  await new Promise((res) => setTimeout(res, 1100));
  fs.writeFileSync(path.join(wt, 'public/index.php'), page('Howdy'));
  r = await curlFrom(wt, px.port, '/', { timeout: 20000 });
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).greeting, 'Howdy');
  assert.ok(r.ms < 15000, `restarted at once, not after stale_grace: ${r.ms} ms`);
});
