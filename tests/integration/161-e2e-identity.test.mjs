// 161: the two cases of issue #8 that only the /__whoami gate (issue #5)
// catches, with the Django shop of tests/e2e (its servers serve /__whoami
// through wtproxy_whoami.django.WhoamiMiddleware, whoami/python on
// PYTHONPATH), a private PostgreSQL and one wtproxy daemon.
//
// Recycled port: wt-old (branch b's code) runs its dev server on a pinned
// port P, registered; wt-old's folder is deleted while the server lives on.
// wt-a, whose scripts pin the same P, registers P. Without the gate, wt-a's
// requests reach wt-old's code and wt-a's e2e "fails" on correct code. With
// it: refused, status >= 404, X-Wtproxy-Refused: checkout-mismatch, the body
// naming wt-old's and wt-a's checkouts; the e2e run gets no verdict on
// wt-old's page.
//
// Own old server: wt-a's server is started (`wtproxy run`, --noreload)
// before the agent's last edit (store/pricing.py gains the bulk discount).
// Then: refused as stale-code (after the gate's grace), naming wt-a's
// checkout, and the e2e run gets no verdict on the old code; with
// `wtproxy run --restart-on-stale` the e2e run passes, on the new code.
//
// In both refused cases the e2e run ends with Playwright's webServer: its
// readiness check is refused (>= 404), so it runs `wtproxy run`, which
// finds the worktree's registration and says so. Without the gate (before
// issue #5) both cases served the wrong code and these tests failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startPostgres } from './lib/pg.mjs';
import { startDaemon, cli, get, waitFor, lsJson, git, sanitizerClean } from './lib/registry.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';
import { makeShop, setupDatabases, agentEnv, runSuite, classify, python } from '../e2e/lib/shop.mjs';

const GATE_MS = 15000; // the gate's grace and a restart, with room for a loaded machine

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// The shop in wt-a, wt-b, wt-c with their own databases, a daemon whose
// front port is px.port, and the environment an agent's runs get.
async function shopBehindWtproxy(t) {
  const pg = await startPostgres(t);
  const shop = makeShop(t);
  const tmp = { control: path.join(shop.root, 'control.sock'), state: path.join(shop.root, 'registry.json') };
  const px = await startDaemon(t, tmp);
  const env = agentEnv(pg, px.port, { SHOP_WTPROXY: '1', WTPROXY_BIN: wtproxyBin, WTPROXY_CONTROL: tmp.control, WTPROXY_NO_AUTOSTART: '1' });
  await setupDatabases(t, shop, pg, 'own', { bin: wtproxyBin, env });
  return { pg, shop, tmp, px, env };
}

// GET path through the front port as wt's requests, asking for text.
function asWorktree(px, wt, urlPath) {
  return get(px.port, { 'X-Wtproxy-Worktree': wt, Accept: 'text/plain' }, urlPath);
}

function assertRefused(r, reason, paths, what) {
  const seen = `${what}: ${r.status} X-Wtproxy-Refused: ${r.headers['x-wtproxy-refused']}\n${r.body.slice(0, 1500)}`;
  assert.ok(r.status >= 404, `a refusal is 404 or above, so Playwright never takes it for a ready server; ${seen}`);
  assert.equal(r.headers['x-wtproxy-refused'], reason, seen);
  for (const p of paths) assert.ok(r.body.includes(p), `the refusal names ${p}; ${seen}`);
}

// The e2e run got no verdict on a page of the wrong code: it did not pass,
// and no assertion of it compared page content.
function assertNoVerdictOnWrongCode(run, what) {
  assert.notEqual(run.code, 0, `${what}: the e2e passed:\n${run.out}`);
  assert.doesNotMatch(run.out, /Received: |element\(s\) not found/, `${what}: the e2e judged a page of the wrong code:\n${run.out}`);
}

// `python3 manage.py ARGS` in cwd, leading its own process group (stopped
// whole in t.after). Resolves once GET / on port answers 200.
async function runserver(t, cwd, env, port, args) {
  const proc = spawn(python, ['manage.py', 'runserver', ...args], { cwd, env, detached: true, stdio: 'ignore' });
  t.after(() => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } });
  await waitFor(async () => (await get(port)).status === 200, 20000, `runserver in ${cwd} answers on ${port}`);
  return proc;
}

// `wtproxy run [runArgs] -- python3 manage.py runserver --noreload
// 127.0.0.1:{port}` in cwd, leading its own process group as under
// Playwright. Resolves once the wrapper says the server is ready.
async function wtproxyRun(t, cwd, env, front, runArgs = []) {
  const proc = spawn(wtproxyBin, ['run', '--front', String(front), ...runArgs, '--',
    python, 'manage.py', 'runserver', '--noreload', '127.0.0.1:{port}'], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const stop = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  t.after(stop);
  await waitFor(() => /is ready on 127\.0\.0\.1:\d+/.test(out) || (proc.exitCode !== null && new Error(out)), 30000, `wtproxy run in ${cwd}`);
  return { proc, stop, out: () => out };
}

test('a server left running by a deleted worktree, on the port wt-a registered: refused, naming the old checkout', {
  timeout: 180000,
}, async (t) => {
  const { shop, tmp, px, env } = await shopBehindWtproxy(t);
  const wtOld = path.join(shop.root, 'wt-old');
  git(shop.repo, 'worktree', 'add', '-q', '-b', 'old', wtOld, 'b');
  fs.copyFileSync(path.join(shop.wt.b, '.env.wt'), path.join(wtOld, '.env.wt'));
  const P = await freePort();

  // wt-old: its dev server on P, registered; then the worktree is deleted
  const old = await runserver(t, wtOld, env, P, ['--noreload', `127.0.0.1:${P}`]);
  const reg = await cli(tmp, ['register', '--front', String(px.port), '--port', String(P), '--pid', String(old.pid)], { cwd: wtOld });
  assert.equal(reg.code, 0, reg.stderr);
  // it served its pages (templates are read once per process)
  for (const p of ['/', '/basket/?apple=10']) assert.equal((await get(P, {}, p)).status, 200);
  git(shop.repo, 'worktree', 'remove', '--force', wtOld);
  assert.ok(!fs.existsSync(wtOld));
  await waitFor(async () => !(await lsJson(tmp)).some((e) => e.worktree === wtOld), 5000, 'the deleted worktree\'s entry is dropped');
  const still = await get(P, {}, '/basket/?apple=10');
  assert.equal(still.status, 200, `wt-old's server still serves on P: ${still.body.slice(0, 300)}`);
  assert.match(still.body, /\$12\.00/, 'wt-old\'s code has no bulk discount');

  // wt-a pins the same port: registered on P, where wt-old's code answers
  // --no-wait: register would refuse it (147); what a request gets is tested here
  const mine = await cli(tmp, ['register', '--no-wait', '--front', String(px.port), '--port', String(P), '--ttl', '10m'], { cwd: shop.wt.a });
  assert.equal(mine.code, 0, mine.stderr);

  const r = await waitFor(async () => {
    const x = await asWorktree(px, shop.wt.a, '/basket/?apple=10');
    return x.status !== 200 || x.headers['x-wtproxy-refused'] ? x : new Error(`200: wt-old's page served to wt-a: ${x.body.replace(/\s+/g, ' ').slice(0, 300)}`);
  }, GATE_MS, 'wt-a\'s request is refused');
  assertRefused(r, 'checkout-mismatch', [wtOld, shop.wt.a], 'wt-a through a port wt-old\'s server holds');

  const run = await runSuite(t, 'e2e', shop.wt.a, env);
  assertNoVerdictOnWrongCode(run, 'wt-a\'s e2e with wt-old\'s server on its port');
  assert.equal(classify('a', 'e2e', run).verdict, 'refused', `the e2e log says wtproxy refused:\n${run.out}`);
  sanitizerClean(assert, px.stderr());
});

test('the agent\'s own server started before its last edit: refused as stale, or with --restart-on-stale the e2e passes on the new code', {
  timeout: 240000,
}, async (t) => {
  const { shop, tmp, px, env } = await shopBehindWtproxy(t);
  const wt = shop.wt.a;
  const pricing = path.join(wt, 'store', 'pricing.py');
  const before = git(shop.repo, 'show', 'main:store/pricing.py').toString(); // the agent's code before its edit
  const after = fs.readFileSync(pricing, 'utf8'); // the edit: the bulk discount
  const edit = () => { fs.writeFileSync(pricing, after); };

  for (const runArgs of [[], ['--restart-on-stale']]) {
    const label = `wtproxy run ${runArgs.join(' ')}`.trim();
    fs.writeFileSync(pricing, before);
    const server = await wtproxyRun(t, wt, env, px.port, runArgs);
    const old = await asWorktree(px, wt, '/basket/?apple=10');
    assert.equal(old.status, 200, `${label}: before the edit the server serves the code on disk: ${old.body.slice(0, 500)}`);
    assert.match(old.body, /\$12\.00/);

    edit();
    if (runArgs.length === 0) {
      const r = await waitFor(async () => {
        const x = await asWorktree(px, wt, '/basket/?apple=10');
        if (x.status === 200 && x.body.includes('$12.00')) return new Error('200 from the code before the edit');
        return x;
      }, GATE_MS, `${label}: the stale server is refused`);
      assertRefused(r, 'stale-code', [wt], `${label}: after the edit`);
      const run = await runSuite(t, 'e2e', wt, env);
      assertNoVerdictOnWrongCode(run, `${label}: e2e after the edit`);
      assert.equal(classify('a', 'e2e', run).verdict, 'refused', `${label}: the e2e log says wtproxy refused:\n${run.out}`);
    } else {
      const run = await runSuite(t, 'e2e', wt, env);
      assert.equal(run.code, 0, `${label}: the e2e passes on the new code:\n${run.out}\n--- server ---\n${server.out()}`);
      assert.equal(classify('a', 'e2e', run).verdict, 'right');
      const now = await asWorktree(px, wt, '/basket/?apple=10');
      assert.equal(now.status, 200, now.body);
      assert.match(now.body, /\$10\.80/, 'the new code answers');
    }
    server.stop();
    await waitFor(async () => (await lsJson(tmp)).length === 0, 5000, `${label}: its registration goes with it`);
  }
  sanitizerClean(assert, px.stderr());
});
