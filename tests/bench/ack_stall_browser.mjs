// ack_stall_browser.mjs - load each URL in Debian's Chromium through
// Playwright, interleaved, LOADS times; a fresh browser context per load (an
// empty cache, new connections). Prints a JSON array: per URL, the load
// times in ms (navigation start to the load event). Run by ack_stall.py.
// Usage: node tests/bench/ack_stall_browser.mjs LOADS URL...
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'node_modules', 'x.js'));
const { chromium } = require('playwright');

const [loads, ...urls] = [Number(process.argv[2]), ...process.argv.slice(3)];
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
const times = urls.map(() => []);
try {
  for (let i = 0; i <= loads; i++) {
    for (const [j, url] of urls.entries()) {
      const ctx = await browser.newContext();
      const page = await ctx.newPage();
      await page.goto(url, { waitUntil: 'load', timeout: 30000 });
      const ms = await page.evaluate(() => {
        const n = performance.getEntriesByType('navigation')[0];
        return n.loadEventStart - n.startTime;
      });
      const css = await page.evaluate(() => document.styleSheets.length);
      if (css !== 30) throw new Error(`${url}: ${css} stylesheets loaded, want 30`);
      if (i > 0) times[j].push(Math.round(ms * 10) / 10); // load 0 warms up
      await ctx.close();
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(times));
