// dashboard.mjs - helpers for the dashboard tests (150-159): Debian's
// Chromium driven by Playwright's library API, the dashboard opened on a
// daemon's front port, and the artefacts folder for screenshots.
import fs from 'node:fs';
import path from 'node:path';
import { chromium as pw } from '@playwright/test';
import { chromium as chromiumPath } from './playwright.mjs';
import { repoRoot } from './wtproxy.mjs';

// Screenshots go to $WTPROXY_ARTIFACTS, else tests/artifacts (gitignored).
export function artifactsDir() {
  const dir = process.env.WTPROXY_ARTIFACTS || path.join(repoRoot, 'tests', 'artifacts');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

// A headless Chromium, closed in t.after().
export async function launchBrowser(t) {
  const browser = await pw.launch({ executablePath: chromiumPath, headless: true });
  t.after(() => browser.close());
  return browser;
}

// A page on http://127.0.0.1:PORT/__wtproxy/ that records every request it
// makes (urls), every dialog it opens (dialogs, then dismissed) and every
// uncaught error (errors). Resolves once the first backends event is drawn.
export async function openDashboard(browser, port, { colorScheme = 'light', viewport = { width: 1400, height: 800 } } = {}) {
  const context = await browser.newContext({ colorScheme, viewport });
  const page = await context.newPage();
  const seen = { urls: [], dialogs: [], errors: [] };
  page.on('request', (r) => seen.urls.push(r.url()));
  page.on('dialog', (d) => { seen.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  const url = `http://127.0.0.1:${port}/__wtproxy/`;
  await page.goto(url);
  await page.waitForSelector('#live.on', { timeout: 5000 });
  return { page, context, seen, url };
}

// The backend rows as the page shows them: [{key, status, text}].
export function backendRows(page) {
  return page.$$eval('#backends tbody tr', (rows) => rows.map((r) => ({
    key: r.dataset.key, status: r.dataset.status, text: r.textContent,
  })));
}

// Wait until fn(rows) holds; resolves with the ms it took. Polls the page
// every 25 ms, up to ms.
export async function waitRows(page, fn, ms, what) {
  const start = Date.now();
  for (;;) {
    const rows = await backendRows(page);
    if (fn(rows)) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms; rows: ${JSON.stringify(rows.map((r) => [r.key, r.status]))}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function screenshot(page, name) {
  const file = path.join(artifactsDir(), name);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
