// 156: the dashboard's actions against the browser it runs in, in real
// Chromium. A page of another origin (a second port on this machine) tries
// every action with fetch (JSON, with a guessed token header, and a
// no-cors text/plain one that the browser does send), a form POST and
// navigator.sendBeacon, and tries to read the token: each fails, and the
// server runs on with the same pid and an unchanged registration. The
// dashboard page itself, clicked, shows the log as text, restarts the
// server and stops it. (A DNS-rebinding Host is test 155's.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { makeWorktrees, startDaemon, lsJson, getWorktree, waitFor } from './lib/registry.mjs';
import { runServer, ready } from './lib/ctl.mjs';
import { launchBrowser, openDashboard, waitRows, screenshot } from './lib/dashboard.mjs';

// The attacker's page: every way a page can send a cross-origin POST.
function attackerPage(target, worktree, front) {
  return `<!doctype html><meta charset="utf-8"><iframe name="sink"></iframe><script>
const target = ${JSON.stringify(target)};
const body = JSON.stringify({ worktree: ${JSON.stringify(worktree)}, front: ${front} });
window.results = [];
async function attempt(name, fn) {
  try { const r = await fn(); window.results.push([name, 'answered', r]); }
  catch (e) { window.results.push([name, 'failed', String(e)]); }
}
async function readable(r) { return r.type === 'opaque' ? 'opaque' : r.status + ' ' + (await r.text()); }
window.attack = async () => {
  await attempt('token', async () => readable(await fetch(target + '/__wtproxy/api/token')));
  for (const a of ['restart', 'stop', 'start']) {
    const url = target + '/__wtproxy/api/' + a;
    await attempt(a + ' json', async () => readable(await fetch(url, { method: 'POST', body,
      headers: { 'Content-Type': 'application/json' } })));
    await attempt(a + ' guessed token', async () => readable(await fetch(url, { method: 'POST', body,
      headers: { 'Content-Type': 'application/json', 'X-Wtproxy-Token': '0'.repeat(64) } })));
    await attempt(a + ' no-cors', async () => readable(await fetch(url, { method: 'POST', body, mode: 'no-cors',
      headers: { 'Content-Type': 'text/plain' } })));
    await attempt(a + ' beacon', async () => navigator.sendBeacon(url, body));
    await attempt(a + ' beacon json', async () => navigator.sendBeacon(url, new Blob([body], { type: 'application/json' })));
    await attempt(a + ' form', async () => {
      const f = document.createElement('form');
      f.method = 'POST'; f.action = url; f.target = 'sink'; f.enctype = 'text/plain';
      const i = document.createElement('input');
      i.name = body.slice(0, -1) + ',"x":"'; i.value = '"}';
      f.appendChild(i); document.body.appendChild(f); f.submit();
      await new Promise((r) => setTimeout(r, 300));
      return 'submitted';
    });
  }
};
</script>`;
}

test('another origin cannot act; the dashboard page can', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--trust-registry']);
  runServer(t, tmp, tmp.wt.a, px.port);
  const before = await ready(tmp, tmp.wt.a);
  const serverPid = JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid;

  const evil = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(attackerPage(`http://127.0.0.1:${px.port}`, tmp.wt.a, px.port));
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  t.after(() => evil.close());
  const browser = await launchBrowser(t);

  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${evil.address().port}/`);
  await page.evaluate(() => window.attack());
  await new Promise((r) => setTimeout(r, 1000)); // the beacons and forms land
  const results = await page.evaluate(() => window.results);
  await context.close();
  for (const [name, how, what] of results) {
    // Nothing readable came back; what was sent at all was refused.
    assert.ok(how === 'failed' || what === 'opaque' || what === false || what === true || what === 'submitted',
      `${name}: ${how} ${what}`);
    assert.ok(!String(what).includes('"ok":true'), `${name} acted: ${what}`);
  }
  assert.equal(results.length, 1 + 3 * 6);
  // The ones the browser did send reached the daemon and were refused there.
  assert.match(px.stderr(), /dashboard request POST \/__wtproxy\/api\/stop from 127\.0\.0\.1 refused: the request comes from another origin/);
  assert.doesNotMatch(px.stderr(), /restarting .*wt-a's server|stopping .*wt-a's server/);

  const [after] = await lsJson(tmp);
  assert.ok(after, 'the registration is gone');
  for (const k of ['pid', 'pid_start', 'port', 'state', 'registered_ms', 'started_ms', 'command', 'log'])
    assert.deepEqual(after[k], before[k], k);
  assert.equal(JSON.parse((await getWorktree(px.port, tmp.wt.a)).body).pid, serverPid, 'the server was restarted or stopped');

  // The dashboard itself: its buttons.
  const dash = await openDashboard(browser, px.port);
  const row = `#backends tr[data-key="${px.port} ${tmp.wt.a}"]`;
  await dash.page.click(`${row} button[data-action=log]`);
  await dash.page.waitForFunction(() => /starting <script>alert\(1\)<\/script> red/.test(document.getElementById('log-text').textContent), null, { timeout: 5000 });
  assert.equal(await dash.page.evaluate(() => document.querySelectorAll('#log-text *').length), 0, 'the log made elements');
  assert.equal(await dash.page.evaluate(() => document.getElementById('log-text').textContent.includes('\x1b')), false);
  await screenshot(dash.page, '156-dashboard-log.png');

  await dash.page.click(`${row} button[data-action=restart]`);
  await dash.page.waitForFunction(() => /restart: wt-a .* is restarting/.test(document.getElementById('action-status').textContent), null, { timeout: 5000 });
  await waitFor(async () => {
    const r = await getWorktree(px.port, tmp.wt.a);
    return r.status === 200 && JSON.parse(r.body).pid !== serverPid;
  }, 15000, 'a new server answers after Restart');
  await waitRows(dash.page, (rows) => rows.some((r) => r.status === 'ready'), 5000, 'ready again');

  await dash.page.click(`${row} button[data-action=stop]`);
  await waitFor(async () => (await lsJson(tmp)).length === 0, 15000, 'the entry is gone after Stop');
  await waitRows(dash.page, (rows) => rows.length === 1 && rows[0].status === 'gone', 5000, 'the row shows gone');
  assert.equal(await dash.page.isVisible(`${row} button[data-action=start]`), true, 'a gone server offers Start');
  assert.deepEqual(dash.seen.errors, []);
  assert.deepEqual(dash.seen.dialogs, []);
});
