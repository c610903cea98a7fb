// 151: everything the dashboard shows from paths, commands and headers is
// text. Worktrees at <root>/<script>alert(1)</script> (a folder
// "<script>alert(1)<" holding "script>") and <root>/"><img src=x
// onerror=alert(2)>, a branch "x\"><svg/onload=alert(3)>", a server command
// carrying "<img src=x onerror=alert(4)>", and a refused request that names
// "<img src=x onerror=alert(5)>" in X-Wtproxy-Worktree: the page shows
// each string as written, no dialog opens, no script runs, and no element
// of theirs is in the document.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { makeWorktrees, startDaemon, startRun, get, git, sanitizerClean } from './lib/registry.mjs';
import { launchBrowser, openDashboard, waitRows, screenshot } from './lib/dashboard.mjs';

test('hostile worktree names, branches, commands and headers show as text', async (t) => {
  const tmp = makeWorktrees(t, []);
  const scriptWt = path.join(tmp.root, '<script>alert(1)</script>');
  const imgWt = path.join(tmp.root, '"><img src=x onerror=alert(2)>');
  const branch = 'x"><svg/onload=alert(3)>';
  git(tmp.repo, 'worktree', 'add', '-q', scriptWt, '-b', 'hostile-1');
  git(tmp.repo, 'worktree', 'add', '-q', imgWt, '-b', branch);
  const px = await startDaemon(t, tmp);
  const cmdArg = '<img src=x onerror=alert(4)>';
  const s1 = startRun(t, tmp, { cwd: scriptWt, front: px.port });
  const s2 = startRun(t, tmp, { cwd: imgWt, front: px.port, serverArgs: [cmdArg] });
  await s1.ready;
  await s2.ready;
  const named = '<img src=x onerror=alert(5)>';
  const refused = await get(px.port, { 'X-Wtproxy-Worktree': named });
  assert.equal(refused.status, 503);

  const browser = await launchBrowser(t);
  const { page, seen } = await openDashboard(browser, px.port);
  await waitRows(page, (rows) => rows.filter((r) => r.status === 'ready').length === 2, 2000, 'two ready rows');
  await page.waitForSelector('#refusals tbody tr', { timeout: 2000 });
  const text = await page.evaluate(() => document.body.innerText);
  for (const s of [scriptWt, imgWt, branch, cmdArg, named, 'script>']) {
    assert.ok(text.includes(s), `the page shows ${JSON.stringify(s)} as text`);
  }
  // Nothing of theirs became markup: one script (the page's), no img, no svg.
  const counts = await page.evaluate(() => ({
    script: document.querySelectorAll('script').length,
    img: document.querySelectorAll('img').length,
    svg: document.querySelectorAll('svg').length,
    handlers: [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
  }));
  assert.deepEqual(counts, { script: 1, img: 0, svg: 0, handlers: 0 });
  await page.waitForTimeout(300); // an injected handler would have fired by now
  assert.deepEqual(seen.dialogs, [], 'no dialog opened');
  assert.deepEqual(seen.errors, [], 'no script error');
  const file = await screenshot(page, '151-dashboard-hostile-names.png');
  t.diagnostic(`screenshot: ${file}`);
  await px.stop();
  sanitizerClean(assert, px.stderr());
});
