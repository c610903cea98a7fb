// 154: the dashboard's Leases section, on the daemon's embedded store, in
// Debian's Chromium: the empty state says how to take a lease; a lease
// taken with `wtproxy claim` while the page is open appears without a
// reload, with its purpose and holder; a resource and purpose that are
// HTML show as text; /__wtproxy/api/leases holds the same lease objects as
// `wtproxy leases --json`; `wtproxy release` takes the row away again.
// On a PostgreSQL store the same, and a store that goes down is shown as
// unreadable, with why and how to tell when it is back, not as an empty
// list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, cli, get, sanitizerClean } from './lib/registry.mjs';
import { launchBrowser, openDashboard, screenshot } from './lib/dashboard.mjs';
import { startPostgres } from './lib/pg.mjs';

const HOSTILE_ID = '<img/src=x/onerror=alert(1)>'; // resource names have no spaces
const HOSTILE_PURPOSE = '<img src=x onerror=alert(1)>';

// The lease rows as the page shows them: [{id, text}].
function leaseRows(page) {
  return page.$$eval('#leases tbody tr', (rows) => rows.map((r) => ({ id: r.dataset.id, text: r.textContent })));
}

async function waitLeases(page, fn, ms, what) {
  const start = Date.now();
  for (;;) {
    const rows = await leaseRows(page);
    if (fn(rows)) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms; rows: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function apiLeases(port) {
  const r = await get(port, {}, '/__wtproxy/api/leases');
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^application\/json/);
  return JSON.parse(r.body);
}

test('the dashboard lists leases live, as text, as wtproxy leases --json has them', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const px = await startDaemon(t, tmp);
  assert.deepEqual(await apiLeases(px.port), { store: 'embedded', leases: [] });

  const browser = await launchBrowser(t);
  const { page, seen } = await openDashboard(browser, px.port);
  await page.waitForSelector('#leases-empty:not([hidden])', { timeout: 2000 });
  assert.match(await page.textContent('#leases-empty'), /wtproxy claim RESOURCE --ttl 10m/);
  assert.match(await page.textContent('#lease-count'), /0 held · embedded store/);
  // The databases `db claim` makes are listed by `wtproxy db ls`, which the
  // note named as `db claim ... --print-env` (one worktree's names only);
  // the footer names the guide, not a file of the repository.
  assert.match(await page.textContent('#h-leases + .panel + .note'), /wtproxy db claim.*wtproxy db ls\s+lists\s+them/s);
  assert.match(await page.textContent('footer'), /wtproxy help dashboard-api/);
  assert.doesNotMatch(await page.textContent('footer'), /\.md\b/);
  await page.evaluate(() => { window.__sameDocument = true; });

  // A claim appears within a second, with its purpose and its holder.
  const env = { WTPROXY_SESSION: 'e2e-session' };
  let r = await cli(tmp, ['claim', 'build-cache', '--ttl', '10m', '--purpose', 'e2e run'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  const shown = await waitLeases(page, (rows) => rows.some((x) => x.id === 'build-cache'), 1000, 'build-cache on the page');
  t.diagnostic(`build-cache shown ${shown} ms after wtproxy claim exited`);
  const row = (await leaseRows(page)).find((x) => x.id === 'build-cache');
  for (const want of ['build-cache', 'e2e run', 'wt-a', tmp.wt.a, 'session e2e-session', 'manual (TTL)']) {
    assert.ok(row.text.includes(want), `the row shows ${want}: ${row.text}`);
  }
  assert.match(row.text, /9m \d+s|10m 0s/, `expires in about 10 minutes: ${row.text}`);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');

  // Hostile text: shown as text, nothing of it became markup.
  r = await cli(tmp, ['claim', HOSTILE_ID, '--ttl', '10m', '--purpose', HOSTILE_PURPOSE], { cwd: tmp.wt.b, env });
  assert.equal(r.code, 0, r.stderr);
  await waitLeases(page, (rows) => rows.some((x) => x.id === HOSTILE_ID), 1000, 'the hostile lease on the page');
  const hostile = await page.$$eval('#leases tbody tr', (rows, id) => {
    const tr = rows.find((x) => x.dataset.id === id);
    return { resource: tr.querySelector('.resource').textContent, text: tr.textContent };
  }, HOSTILE_ID);
  assert.equal(hostile.resource, HOSTILE_ID);
  assert.ok(hostile.text.includes(HOSTILE_PURPOSE), hostile.text);
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0, 'no img element');
  await page.waitForTimeout(300); // an injected handler would have fired by now
  assert.deepEqual(seen.dialogs, [], 'no dialog opened');

  // The API and the CLI list the same leases.
  const cliList = await cli(tmp, ['leases', '--json']);
  assert.equal(cliList.code, 0, cliList.stderr);
  const api = await apiLeases(px.port);
  assert.equal(api.store, 'embedded');
  assert.deepEqual(api.leases, JSON.parse(cliList.stdout));
  assert.deepEqual(api.leases.map((l) => l.id).sort(), ['build-cache', HOSTILE_ID].sort());
  const file = await screenshot(page, '154-dashboard-leases.png');
  t.diagnostic(`screenshot: ${file}`);

  // Released: the row goes; with none left, the empty state is back.
  r = await cli(tmp, ['release', 'build-cache'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  const gone = await waitLeases(page, (rows) => !rows.some((x) => x.id === 'build-cache') && rows.length === 1, 1000, 'build-cache gone');
  t.diagnostic(`build-cache gone ${gone} ms after wtproxy release exited`);
  r = await cli(tmp, ['release', HOSTILE_ID], { cwd: tmp.wt.b });
  assert.equal(r.code, 0, r.stderr);
  await page.waitForSelector('#leases-empty:not([hidden])', { timeout: 1000 });
  assert.deepEqual(seen.errors, [], 'no script error');

  await px.stop();
  sanitizerClean(assert, px.stderr());
});

test('a PostgreSQL store: its leases, then, once it is down, why they cannot be read', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  const browser = await launchBrowser(t);
  const { page, seen } = await openDashboard(browser, px.port);
  await page.waitForSelector('#leases-empty:not([hidden])', { timeout: 2000 });
  assert.match(await page.textContent('#lease-count'), /postgresql store/);

  // Claimed through the daemon (no registry in the CLI's environment): on the server.
  const r = await cli(tmp, ['claim', 'emulator-1', '--ttl', '10m', '--purpose', 'android e2e'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(pg.psql("SELECT count(*) FROM wtproxy.leases WHERE id = 'emulator-1'").trim(), '1');
  const shown = await waitLeases(page, (rows) => rows.some((x) => x.id === 'emulator-1' && x.text.includes('android e2e')), 2000, 'emulator-1 on the page');
  t.diagnostic(`emulator-1 shown ${shown} ms after wtproxy claim exited (PostgreSQL read at most once a second)`);
  const direct = await cli(tmp, ['leases', '--json'], { env: { WTPROXY_REGISTRY: pg.uri('postgres') } });
  assert.equal(direct.code, 0, direct.stderr);
  const api = await apiLeases(px.port);
  assert.equal(api.store, 'postgresql');
  assert.deepEqual(api.leases, JSON.parse(direct.stdout));

  // The server goes: the page says the leases cannot be read, and why.
  pg.kill('SIGKILL');
  await page.waitForSelector('#leases-error:not([hidden])', { timeout: 3000 });
  const said = await page.textContent('#leases-error');
  assert.match(said, /cannot be read from the postgresql store/);
  assert.match(said, new RegExp(`port ${pg.port}`));
  assert.match(said, new RegExp(`pg_isready -h 127\\.0\\.0\\.1 -p ${pg.port} tells when`), 'and how to tell when it is back');
  assert.equal(await page.isHidden('#leases'), true, 'no stale rows under the error');
  assert.equal(await page.isHidden('#leases-empty'), true, 'not shown as no leases');
  const down = await apiLeases(px.port);
  assert.equal(down.store, 'postgresql');
  assert.equal(down.leases, undefined);
  assert.match(down.error, new RegExp(`port ${pg.port}`));
  assert.match(down.error, new RegExp(`pg_isready -h 127\\.0\\.0\\.1 -p ${pg.port} tells when`));
  assert.deepEqual(seen.errors, [], 'no script error');
  const file = await screenshot(page, '154-dashboard-leases-pg-down.png');
  t.diagnostic(`screenshot: ${file}`);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});
