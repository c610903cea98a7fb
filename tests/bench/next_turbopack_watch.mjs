// next_turbopack_watch.mjs - does `next dev` under Turbopack serve the old
// page after an edit, and for how long; and does a stamp file, written
// after the edit and served by a route that imports it, prove the edit
// taken in (whoami/node/next-turbopack.mjs). No wtproxy involved.
//
//   node tests/bench/next_turbopack_watch.mjs [ROUNDS]    (tests/next16 installed)
//
// Makes an App Router app in a temp folder (its node_modules hard links to
// tests/next16's), starts `next dev` (Turbopack) on a free port, then:
// 1. ROUNDS times per delay (0, 5, 20, 50 ms): write app/page.js, wait
//    the delay, GET / and count the answers with the old heading;
// 2. ROUNDS times: write app/page.js, then app/probe/stamp.js, GET
//    /probe until it serves the new stamp, then GET / and count old pages.
// Results: tests/bench/RESULTS-next-turbopack.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rounds = Number(process.argv[2] || 30);
const page = (h) => `export default function Home() {\n  return <h1>${h}</h1>;\n}\n`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const freePort = () => new Promise((res) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'next-tp-'));
const files = {
  'package.json': '{ "name": "bench", "private": true }\n',
  'app/layout.js': 'export default function RootLayout({ children }) {\n  return (<html lang="en"><body>{children}</body></html>);\n}\n',
  'app/page.js': page('v0'),
  'app/probe/stamp.js': 'export default 0;\n',
  'app/probe/route.js': "import stamp from './stamp.js';\nexport const dynamic = 'force-dynamic';\nexport function GET() { return new Response(String(stamp)); }\n",
};
for (const [name, text] of Object.entries(files)) {
  fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
  fs.writeFileSync(path.join(dir, name), text);
}
execFileSync('cp', ['-al', path.join(repo, 'tests/next16/node_modules'), path.join(dir, 'node_modules')]);
const port = await freePort();
const next = spawn('node_modules/.bin/next', ['dev', '--hostname', '127.0.0.1', '--port', String(port)],
  { cwd: dir, stdio: 'ignore', detached: true, env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
const stop = () => { try { process.kill(-next.pid, 'SIGKILL'); } catch { /* gone */ } fs.rmSync(dir, { recursive: true, force: true }); };
process.on('exit', stop);

const text = async (p) => (await fetch(`http://127.0.0.1:${port}${p}`)).text();
const heading = async () => (/<h1>([^<]*)<\/h1>/.exec(await text('/')) || [])[1];
for (let i = 0; ; i++) {
  try { await heading(); await text('/probe'); break; } catch { if (i > 120) throw new Error('next dev did not answer'); await sleep(1000); }
}

let v = 0;
console.log(`next dev (Turbopack), ${rounds} rounds each, load ${os.loadavg()[0].toFixed(2)}`);
for (const delay of [0, 5, 20, 50]) {
  let old = 0;
  for (let i = 0; i < rounds; i++) {
    fs.writeFileSync(path.join(dir, 'app/page.js'), page(`v${++v}`));
    if (delay) await sleep(delay);
    if ((await heading()) !== `v${v}`) old++;
    await sleep(50);
  }
  console.log(`edit, then GET / after ${delay} ms: ${old}/${rounds} old pages`);
}
let old = 0;
const waits = [];
for (let s = 1; s <= rounds; s++) {
  fs.writeFileSync(path.join(dir, 'app/page.js'), page(`v${++v}`));
  fs.writeFileSync(path.join(dir, 'app/probe/stamp.js'), `export default ${s};\n`);
  const t0 = Date.now();
  while (Number(await text('/probe')) < s) { /* until Turbopack took the stamp in */ }
  waits.push(Date.now() - t0);
  if ((await heading()) !== `v${v}`) old++;
}
waits.sort((a, b) => a - b);
console.log(`edit, stamp, GET /probe until it serves the stamp, GET /: ${old}/${rounds} old pages; ` +
  `stamp served after median ${waits[waits.length >> 1]} ms, max ${waits[waits.length - 1]} ms`);
process.exit(0);
