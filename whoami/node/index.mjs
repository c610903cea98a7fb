// index.mjs - the /__whoami contract (whoami/PROTOCOL.md) for Node dev
// servers: a Connect/Express middleware, `(req, res, next)`.
//
//   import { whoami } from '/path/to/wtproxy/whoami/node/index.mjs';
//   app.use(whoami());                      // Express or Connect, first
//   const mw = whoami();                    // node:http: once, at start
//   http.createServer((req, res) => mw(req, res, () => handler(req, res)))
//
// The fingerprint is computed once, when whoami() is called at start: it
// must describe the code this process loaded, so that a later edit makes
// wtproxy's fresh fingerprint of the disk differ from it. With
// NODE_ENV=production, whoami() returns a middleware that only calls next().
//
// The app's modules were imported before whoami() runs: a file edited
// between its import and the fingerprint would be hashed as its new
// contents while the old ones run, and the server called current. So a
// file modified after this process started (performance.timeOrigin, taken
// before any module loads) is recorded unknown, which no disk matches:
// the gate calls the server stale, and the restart loads and fingerprints
// it right. A file edited after the start but before its import is
// reported unknown too: a needless restart, never a wrong verdict.
import fs from 'node:fs';
import path from 'node:path';
import { ALGORITHM, compute } from './fingerprint.mjs';
import { nothingReloads } from './reloads.mjs';
import { workspaceInclude } from './workspace.mjs';

export { compute, globMatch, FingerprintError } from './fingerprint.mjs';

export const PATH = '/__whoami';
// The .env files: read once, at start, by a server (dotenv), by Vite and
// by next dev, and by the code they run (a module reading .env.wt, the
// file `wtproxy db claim --write-env` writes); vite.mjs and next.mjs say
// which ones their dev server loads again.
export const READ_AT_START = ['**/.env', '**/.env.*'];
// JSON, HTML and .env files too: a server that reads its data, its page or
// its config at start (a messages.json, an `import ... with { type: 'json' }`,
// a `readFileSync('page.html')` served on /, dotenv's .env) serves the old
// contents after an edit, and was called verified (a Fastify user's test
// passed on the old page).
export const DEFAULT_INCLUDE = ['**/*.js', '**/*.mjs', '**/*.cjs', '**/*.jsx', '**/*.ts', '**/*.mts', '**/*.cts',
  '**/*.tsx', '**/*.json', '**/*.html', ...READ_AT_START];
// The Python defaults, plus what a Node project builds or tests, the JSON
// its test runners write among it (Playwright's test-results/.last-run.json
// on every run): an e2e test edit or a test run must not make the server
// stale. Nor must a Next.js app of the same checkout (an API beside its
// front end): next dev writes .next and its /__whoami route's stamp
// (next-turbopack.mjs) at each compile. What every integration leaves
// out (vite.mjs and next.mjs add their own).
export const COMMON_EXCLUDE = ['**/.git/**', '**/node_modules/**', '**/.venv/**', '**/venv/**',
  '**/__pycache__/**', '**/dist/**', '**/e2e/**', '**/*.spec.*', '**/*.test.*', '**/coverage/**',
  '**/test-results/**', '**/playwright-report/**', '**/.nyc_output/**', '**/.next/**',
  '**/%5F%5Fwhoami/stamp.js'];
// The middleware's: also what other front ends of the checkout write as
// they run (ng serve's .angular/cache at each start made the API beside it
// stale at once, restarted in a loop; Vite's, SvelteKit's, Nuxt's, Astro's,
// Turborepo's and Parcel's caches), and the static files a server sends as
// they are on disk at each request (public/).
export const DEFAULT_EXCLUDE = [...COMMON_EXCLUDE, '**/.angular/**', '**/.vite/**', '**/.svelte-kit/**',
  '**/.nuxt/**', '**/.output/**', '**/.astro/**', '**/.turbo/**', '**/.cache/**', '**/.parcel-cache/**',
  '**/public/**'];
const ANSWER_MAX = 65536;
const CHECKOUT_MAX = 4095;
// What withTakingIn adds to an answer, at most.
const TAKING_IN_ROOM = 64;

// The realpath of the nearest ancestor of start (itself included) holding
// .git (a folder, or a linked worktree's .git file), else of start.
export function findCheckout(start) {
  const real = fs.realpathSync(start);
  for (let d = real; ; d = path.dirname(d)) {
    try { fs.lstatSync(path.join(d, '.git')); return d; } catch { /* keep climbing */ }
    if (path.dirname(d) === d) return real;
  }
}

function rfc3339(ms) {
  return new Date(Math.round(ms)).toISOString(); // 2026-12-02T08:00:00.250Z
}

// The checkout to describe: root (or WTPROXY_WHOAMI_ROOT, which wins) as
// a realpath, else the nearest checkout above start.
export function resolveCheckout(root, start = process.cwd()) {
  const fromEnv = process.env.WTPROXY_WHOAMI_ROOT || root;
  const checkout = fromEnv ? fs.realpathSync(fromEnv) : findCheckout(start);
  if (Buffer.byteLength(checkout) > CHECKOUT_MAX) throw new Error(`the checkout path ${checkout} is longer than ${CHECKOUT_MAX} bytes`);
  return checkout;
}

// The answer of this process for fingerprint fp ({ files, hash }) of
// checkout under include and exclude: { answer, body (Buffer) }.
export function answerFor(checkout, include, exclude, fp) {
  const answer = {
    wtproxy_whoami: 1,
    checkout,
    pid: process.pid,
    started_at: rfc3339(Date.now() - process.uptime() * 1000),
    fingerprint: { algorithm: ALGORITHM, include: [...include], exclude: [...exclude], files: fp.files, hash: fp.hash },
  };
  const body = Buffer.from(JSON.stringify(answer));
  if (body.length + TAKING_IN_ROOM > ANSWER_MAX) throw new Error(`the /__whoami answer would be ${body.length} bytes, more than ${ANSWER_MAX - TAKING_IN_ROOM}: declare fewer or shorter patterns`);
  return { answer, body };
}

// The body of answer (answerFor's), saying "taking_in" (PROTOCOL.md,
// section 1) when sinceMs is set: this process has seen a change on disk
// since then and is taking it in now, so its fingerprint (still the code it
// serves) is about to move. body as it is otherwise.
export function withTakingIn(answer, body, sinceMs) {
  if (!sinceMs) return body;
  // never before started_at, which the answer's rounding may put a ms later
  const since = Math.max(sinceMs, Date.parse(answer.started_at));
  return Buffer.from(JSON.stringify({ ...answer, taking_in: { since: rfc3339(since) } }));
}

// The answer leaves room for this many bytes of scoped patterns: a
// workspace of hundreds of members falls back to the whole checkout.
const SCOPED_MAX = 32768;

// The default patterns scoped to the workspace member this server runs
// from (workspace.mjs): its main script's package, else its working
// folder's; null when it runs from none.
function memberInclude(checkout) {
  let main = null;
  try { main = process.argv[1] && fs.realpathSync(process.argv[1]); } catch { /* not a file */ }
  const scoped = (main && workspaceInclude(checkout, DEFAULT_INCLUDE, main)) ||
    workspaceInclude(checkout, DEFAULT_INCLUDE, fs.realpathSync(process.cwd()));
  return scoped && scoped.join('').length < SCOPED_MAX ? scoped : null;
}

// The answer for this process: { answer, body (Buffer) }. Its fingerprint
// is computed once, so it says "reloads": false when no watcher above it
// can start a process that catches up (reloads.mjs).
export function whoamiAnswer({ root, include, exclude = DEFAULT_EXCLUDE } = {}) {
  const checkout = resolveCheckout(root);
  include ||= memberInclude(checkout) || DEFAULT_INCLUDE;
  const fp = compute(checkout, include, exclude, { since: performance.timeOrigin });
  const made = answerFor(checkout, include, exclude, fp);
  if (!nothingReloads()) return made;
  const answer = { ...made.answer, reloads: false };
  return { answer, body: Buffer.from(JSON.stringify(answer)) };
}

// Answer req with body if it asks for /__whoami; false if it does not.
export function serveWhoami(req, res, body) {
  if ((req.url || '').split('?')[0] !== PATH) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain', 'Content-Length': '0' });
    res.end();
    return true;
  }
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', 'Content-Length': String(body.length) });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}

// What the middleware answers /__whoami with when it is off under wtproxy
// run (NODE_ENV=production in the shell that started it): an Express
// user was told for each request, by the 502, doctor and `wtproxy
// restart`, that the middleware was missing, and restarted in a loop.
// wtproxy quotes the line that begins so.
const OFF = 'wtproxy-whoami: off: this server runs with NODE_ENV=production, where the ' +
  'middleware serves nothing (and Express caches its views, which wtproxy cannot follow); ' +
  'start it from a shell without NODE_ENV=production\n';

export function whoami(options = {}) {
  if (process.env.NODE_ENV === 'production') {
    if (!process.env.WTPROXY_PORT) return (req, res, next) => next();
    return (req, res, next) => {
      if ((req.url || '').split('?')[0] !== PATH) return next();
      res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': String(Buffer.byteLength(OFF)) });
      return res.end(OFF);
    };
  }
  const { body } = whoamiAnswer(options);
  return function wtproxyWhoami(req, res, next) {
    return serveWhoami(req, res, body) || next();
  };
}

export default whoami;
