// 150: the dashboard in a real browser (Debian's Chromium through
// Playwright): it lists the registered dev servers with their worktree,
// branch, ports and state; a server registered while the page is open
// appears without a reload within a second of being ready; one whose
// wrapper is killed is shown gone; a refusal shows up in the refusals
// list. The page loads nothing but its own origin's /__wtproxy/ URLs.
// Screenshots (light, dark, narrow) are saved under tests/artifacts (or
// $WTPROXY_ARTIFACTS) and their paths printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, startDaemon, startRun, getWorktree, lsJson, sanitizerClean } from './lib/registry.mjs';
import { launchBrowser, openDashboard, backendRows, waitRows, screenshot } from './lib/dashboard.mjs';

test('the dashboard shows backends, live changes and refusals', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const px = await startDaemon(t, tmp);
  const front = px.port;
  const a = startRun(t, tmp, { cwd: tmp.wt.a, front });
  const b = startRun(t, tmp, { cwd: tmp.wt.b, front });
  const portA = await a.ready;
  await b.ready;

  const browser = await launchBrowser(t);
  const { page, seen, url } = await openDashboard(browser, front);
  const key = (wt) => `${front} ${wt}`;

  // The rows of the two servers, with what a person looks for.
  await waitRows(page, (rows) => rows.filter((r) => r.status === 'ready').length === 2, 2000, 'two ready rows');
  const rows = await backendRows(page);
  const rowA = rows.find((r) => r.key === key(tmp.wt.a));
  assert.ok(rowA, `a row for ${tmp.wt.a}: ${JSON.stringify(rows)}`);
  const entryA = (await lsJson(tmp)).find((e) => e.worktree === tmp.wt.a);
  for (const want of ['wt-a', tmp.wt.a, `:${front}`, `127.0.0.1:${portA}`, `pid ${entryA.pid}`, 'wt-server.mjs', 'ready']) {
    assert.ok(rowA.text.includes(want), `row a shows ${want}: ${rowA.text}`);
  }
  const branchA = await page.$$eval('#backends tbody tr', (trs, k) => trs.find((r) => r.dataset.key === k)?.querySelector('.branch')?.textContent, key(tmp.wt.a));
  assert.equal(branchA, 'a', 'the branch of wt-a, read from its .git');

  // A new registration appears without a reload, within a second of ready.
  await page.evaluate(() => { window.__sameDocument = true; });
  const c = startRun(t, tmp, { cwd: tmp.wt.c, front });
  await c.ready;
  const appeared = await waitRows(page, (rs) => rs.some((r) => r.key === key(tmp.wt.c) && r.status === 'ready'), 1000, 'wt-c ready on the page');
  t.diagnostic(`wt-c shown ready ${appeared} ms after wtproxy run said it was ready`);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');

  // Killing b's wrapper (and so its server) shows it gone.
  b.proc.kill('SIGKILL');
  const gone = await waitRows(page, (rs) => ['gone', 'dead'].includes(rs.find((r) => r.key === key(tmp.wt.b))?.status), 2000, 'wt-b gone');
  t.diagnostic(`wt-b shown gone ${gone} ms after SIGKILL`);

  // A refusal: wt-d is a worktree of the repo with no server.
  const refused = await getWorktree(front, tmp.wt.d, '/checkout');
  assert.equal(refused.status, 503);
  const shown = Date.now();
  await page.waitForFunction((wt) => [...document.querySelectorAll('#refusals tbody tr')]
    .some((r) => r.textContent.includes('no-backend') && r.textContent.includes(wt)), tmp.wt.d, { timeout: 1000 });
  t.diagnostic(`refusal shown ${Date.now() - shown} ms after it was answered`);
  const refusalText = await page.$eval('#refusals tbody tr', (r) => r.textContent);
  assert.match(refusalText, /503/);
  assert.match(refusalText, /GET \/checkout/);

  // Only the dashboard's own URLs were fetched: nothing external, no favicon.
  const origin = new URL(url).origin;
  for (const u of seen.urls) {
    assert.ok(u.startsWith(`${origin}/__wtproxy/`) || u.startsWith('data:'), `the page fetched ${u}`);
  }
  assert.deepEqual(seen.errors, [], 'no script error');

  const files = [await screenshot(page, '150-dashboard-light.png')];
  await page.emulateMedia({ colorScheme: 'dark' });
  files.push(await screenshot(page, '150-dashboard-dark.png'));
  await page.setViewportSize({ width: 420, height: 900 });
  files.push(await screenshot(page, '150-dashboard-narrow-dark.png'));
  await page.emulateMedia({ colorScheme: 'light' });
  files.push(await screenshot(page, '150-dashboard-narrow-light.png'));
  for (const f of files) t.diagnostic(`screenshot: ${f}`);
  console.log(`screenshots:\n  ${files.join('\n  ')}`);

  await px.stop();
  sanitizerClean(assert, px.stderr());
});
