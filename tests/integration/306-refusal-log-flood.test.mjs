// 306: a loop hammering a refused route does not flood the daemon's log.
// 10,000 requests that get the same refusal (503 no-backend: nothing is
// registered for the caller's worktree) write the first line at once and
// then one summary per 10 s window with the count of the rest
// ("... and 9,999 more like it in the last 10 s (KIND)"), not 10,000
// lines. Another kind of refusal meanwhile (a request naming a worktree)
// is written at once, not swallowed by the first kind's count; the
// dashboard's refusal log still has the details. A refusal quoting a
// traceback is written whole, its last line (the error) and fix included:
// the log cut every line at 1023 bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startProxy } from './lib/wtproxy.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { makeWorktrees, waitFor, startDaemon, cli, curlFrom } from './lib/registry.mjs';

const N = 10000;

// n GETs on keep-alive connections (50 at once); resolves with the statuses seen.
async function hammer(port, n, headers = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  const seen = {};
  let next = 0;
  const one = () => new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/poll/${next}`, headers, agent }, (res) => {
      seen[res.statusCode] = (seen[res.statusCode] || 0) + 1;
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
  });
  const worker = async () => { while (next++ < n) await one(); };
  await Promise.all(Array.from({ length: 50 }, worker));
  agent.destroy();
  return seen;
}

const refusalLines = (log) => log.split('\n').filter((l) => /wtproxy: 503 no-backend: GET \/poll\//.test(l));
const summaries = (log) => [...log.matchAll(/\.\.\. and ([\d,]+) more like it in the last (\d+) s \((503 no-backend, [^)]*named -[^)]*)\)/g)];

test('10,000 refused requests: one line, then a summary with the count', { timeout: 60000 }, async (t) => {
  const px = await startProxy(t);
  const before = px.stderr().length;
  const first = await hammer(px.port, 1);
  assert.deepEqual(first, { 503: 1 });
  // The first line is written at once: an agent reading the log sees it.
  await waitFor(() => refusalLines(px.stderr()).length === 1, 2000, 'the first refusal logged at once');

  const started = Date.now();
  const seen = await hammer(px.port, N - 1);
  assert.deepEqual(seen, { 503: N - 1 });
  const during = px.stderr().slice(before);
  assert.equal(refusalLines(during).length, 1, `lines written during the flood:\n${during.slice(0, 2000)}`);
  const floodMs = Date.now() - started;

  // A refusal of another kind (it names a worktree) is not counted into the first.
  const tmp = makeWorktrees(t, ['x']);
  const named = await hammer(px.port, 3, { 'X-Wtproxy-Worktree': tmp.wt.x });
  assert.equal(Object.keys(named).length, 1, JSON.stringify(named));
  await waitFor(() => px.stderr().includes(`from 127.0.0.1`) &&
    px.stderr().split('\n').filter((l) => l.includes(tmp.wt.x) && !l.includes('... and')).length === 1,
  2000, 'the named refusal logged at once, once');

  // Within a window and a bit of the flood's end, the summaries say the rest.
  await waitFor(() => summaries(px.stderr()).reduce((n, m) => n + Number(m[1].replace(/,/g, '')), 0) === N - 1,
    floodMs + 12000, `summaries counting ${N - 1}`);
  const all = px.stderr().slice(before);
  for (const m of summaries(all)) {
    assert.ok(Number(m[2]) >= 9 && Number(m[2]) <= 11, m[0]);
    assert.match(m[3], /^503 no-backend, caller's worktree -, named -, backend -$/, m[0]);
  }
  // Bounded: a few hundred bytes a window, whatever the request count.
  assert.ok(all.length < 4096, `${all.length} bytes of log for ${N} refusals:\n${all}`);
  process.stderr.write(`306: ${N} refused requests in ${floodMs} ms wrote ${all.length} bytes of log (${all.split('\n').length - 1} lines)\n`);

  // The dashboard's refusal log keeps each refusal's details.
  const api = await new Promise((resolve, reject) => http.get({ host: '127.0.0.1', port: px.port, path: '/__wtproxy/api/refusals' }, (res) => {
    let body = '';
    res.on('data', (d) => { body += d; });
    res.on('end', () => resolve({ status: res.statusCode, body }));
  }).on('error', reject));
  assert.equal(api.status, 200, api.body);
  assert.match(api.body, /\/poll\/\d+/);
});

// A server that prints a Python traceback over 1,000 bytes (non-ASCII
// paths in it) and exits, as Django's does on a syntax error.
const TRACEBACK = [
  "const frames = Array.from({ length: 7 }, (_, i) => `  File \"/srv/app/módulo_${i}/views.py\", line ${10 + i}, in handler_${i}\\n    return render(request, \"página_${i}.html\", context_with_a_long_name_${i})`);",
  "console.error(['Traceback (most recent call last):', ...frames, '  File \"/srv/app/urls.py\", line 3', \"    path('x', views.x, name='x'\", '                              ^', 'SyntaxError: invalid syntax'].join('\\n'));",
  'process.exit(1);',
].join('\n');

test('a refusal quoting a long traceback: its line in the log is whole, the error and the fix in it', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.wt.a, 'server.mjs'), TRACEBACK);
  const run = await cli(tmp, ['run', '--front', String(px.port), '--', process.execPath, 'server.mjs', '{port}'], { cwd: tmp.wt.a });
  assert.equal(run.code, 1, run.stderr);
  const r = await curlFrom(tmp.wt.a, px.port, '/long');
  assert.equal(r.status, 503, r.body);
  assert.match(r.body, /\nSyntaxError: invalid syntax\n/, r.body);
  await waitFor(() => px.stderr().includes('wtproxy: 503 no-backend: GET /long'), 2000, 'the refusal logged');
  const log = px.stderr();
  const from = log.indexOf('wtproxy: 503 no-backend: GET /long');
  const next = log.indexOf('\nwtproxy: ', from);
  const line = log.slice(from, next < 0 ? undefined : next + 1);
  assert.ok(line.indexOf('SyntaxError') > 1024, `the error is past 1023 bytes: ${line.indexOf('SyntaxError')}`);
  assert.match(line, /página_6\.html[^]*\nSyntaxError: invalid syntax\nFix the error its last lines above name, then start it again from its worktree: cd /, line);
});
