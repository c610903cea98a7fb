// ack_stall_browser.mjs - load each URL in Debian's Chromium through
// Playwright, interleaved, LOADS times; a fresh browser context per load (an
// empty cache, new connections). Prints JSON: per URL, the load times in ms
// (navigation start to the load event). Run by ack_stall.py.
// With --timeline, prints { times, timelines, first }: timelines[url][load]
// is the summary of that load's Resource Timing (see timeline() below), and
// first[url] the warm-up load's [ms, timeline]: each url's first load from
// this browser (a daemon meets the browser's processes for the first time).
// Usage: node tests/bench/ack_stall_browser.mjs [--timeline] LOADS URL...
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'node_modules', 'x.js'));
const { chromium } = require('playwright');

const args = process.argv.slice(2);
const withTimeline = args[0] === '--timeline';
if (withTimeline) args.shift();
const [loads, ...urls] = [Number(args[0]), ...args.slice(1)];
const r1 = (x) => Math.round(x * 10) / 10;

// Is the page's time spent waiting on the network or on Chromium? From the
// navigation and the 30 style sheets' Resource Timing (ms from navigation
// start) and the connection ids Chromium reported over CDP:
//   conns       connections the 31 responses came over
//   newConns    style sheets that waited for a new connection (connectEnd > connectStart)
//   htmlTtfb    the page's first byte; htmlEnd its last
//   cssFirst    the first style sheet's fetchStart (the parser found the links)
//   cssLastEnd  the last style sheet's responseEnd
//   load        the load event
//   waitMed/waitMax  request sent to first byte (the server's answer time), per sheet
//   queueMax    fetchStart to requestStart (waiting for a connection), worst sheet
//   connectMax  TCP connect, worst sheet
//   chain       requests on the connection whose last response ended last
//   idle        time before the load event with no request in flight
function timeline(nav, css, connOf) {
  const spans = [[0, nav.responseEnd], ...css.map((e) => [e.fetchStart, e.responseEnd])]
    .sort((a, b) => a[0] - b[0]);
  let busy = 0;
  let [s, e] = spans[0];
  for (const [a, b] of spans.slice(1)) {
    if (a > e) { busy += e - s; [s, e] = [a, b]; } else e = Math.max(e, b);
  }
  busy += e - s;
  const lastCss = css.reduce((a, b) => (b.responseEnd > a.responseEnd ? b : a));
  const waits = css.map((x) => x.responseStart - x.requestStart).sort((a, b) => a - b);
  return {
    conns: new Set(connOf.values()).size,
    newConns: css.filter((x) => x.connectEnd > x.connectStart).length,
    htmlTtfb: r1(nav.responseStart),
    htmlEnd: r1(nav.responseEnd),
    cssFirst: r1(Math.min(...css.map((x) => x.fetchStart))),
    cssLastEnd: r1(Math.max(...css.map((x) => x.responseEnd))),
    load: r1(nav.loadEventStart),
    waitMed: r1(waits[Math.floor(waits.length / 2)]),
    waitMax: r1(waits[waits.length - 1]),
    queueMax: r1(Math.max(...css.map((x) => x.requestStart - x.fetchStart))),
    connectMax: r1(Math.max(...css.map((x) => x.connectEnd - x.connectStart))),
    chain: [...connOf.values()].filter((c) => c === connOf.get(lastCss.name)).length,
    idle: r1(nav.loadEventStart - busy),
  };
}

// One load of url in a fresh context: [load ms, timeline or null].
async function loadOnce(browser, url) {
  const ctx = await browser.newContext();
  try {
    const page = await ctx.newPage();
    const connOf = new Map(); // url -> the connection id its response came over
    if (withTimeline) {
      const cdp = await ctx.newCDPSession(page);
      cdp.on('Network.responseReceived',
        (ev) => connOf.set(ev.response.url, ev.response.connectionId));
      await cdp.send('Network.enable');
    }
    await page.goto(url, { waitUntil: 'load', timeout: 30000 });
    const [nav, css, sheets] = await page.evaluate(() => [
      performance.getEntriesByType('navigation')[0].toJSON(),
      performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.css'))
        .map((e) => e.toJSON()),
      document.styleSheets.length,
    ]);
    if (sheets !== 30 || css.length !== 30) {
      throw new Error(`${url}: ${sheets} stylesheets loaded (${css.length} timed), want 30`);
    }
    const ms = r1(nav.loadEventStart - nav.startTime);
    return [ms, withTimeline ? timeline(nav, css, connOf) : null];
  } finally {
    await ctx.close();
  }
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
const times = urls.map(() => []);
const timelines = urls.map(() => []);
const first = urls.map(() => null);
try {
  for (let i = 0; i <= loads; i++) {
    for (const [j, url] of urls.entries()) {
      const [ms, tl] = await loadOnce(browser, url);
      if (i === 0) { first[j] = [ms, tl]; continue; } // load 0 warms up
      times[j].push(ms);
      timelines[j].push(tl);
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(withTimeline ? { times, timelines, first } : times));
