// next.mjs - the /__whoami contract (whoami/PROTOCOL.md) for `next dev`
// (Next.js 13 to 16, the App Router; webpack here, Turbopack in
// next-turbopack.mjs), in two parts:
//
//   // next.config.mjs: follows what next dev compiled
//   import { withWtproxyWhoami } from 'wtproxy-whoami/next';
//   export default withWtproxyWhoami(nextConfig);   // options { root, include, exclude }
//
//   // app/%5F%5Fwhoami/route.js: answers GET /__whoami with it
//   import stamp from './stamp.js';   // gitignored; Turbopack's proof
//   export const dynamic = 'force-dynamic';
//   export function GET() { return globalThis[Symbol.for('wtproxy-whoami.next')].response({ stamp }); }
//
// Next has no middleware chain to join, and does not route a folder named
// __whoami (a private folder): %5F is its escape for a leading underscore.
// The route file imports only its stamp, so Next's bundler never has to
// resolve this package; the config part, loaded by Node itself in the
// process that compiles and serves, leaves the answer on globalThis for
// it. With process.env.TURBOPACK (Next 16's plain `next dev`, Next 15's
// `next dev --turbopack`) there are no webpack compilers to follow and
// the answer is next-turbopack.mjs's; otherwise (Next 13-15's `next dev`,
// Next 16's `next dev --webpack`) it is this file's:
//
// What the answer must mean under webpack. next dev compiles each route when it is
// first asked for, from the disk as it is then, and recompiles a compiled
// route after its watcher reports a change to one of the files it read.
// Between the edit and the end of that recompile it serves the old code
// (measured with next 14.2: half the requests sent at once after an edit
// got the old page). So neither a fingerprint taken once at start (every
// edit would be a 409 until a restart, though next dev takes edits in) nor
// one of the disk at each ask (verified while the old code is served) is
// right. This one follows the compilers, as the Vite plugin follows Vite's
// watcher: a new fingerprint is published only (1) when every compiler
// (client, server, edge) has finished the compile its watcher's last
// report started, (2) when no compile began while it was computed, and
// (3) when every file a compiler read was last written before that
// compiler's last compile began: a file a compile read, written since,
// waits for the watcher's report and its recompile (one written within a
// clock tick of the start, for SETTLE_MS after the compile's end: the
// watcher reports it by then if it came after the read). A file no compile read
// (a route never asked for) is published as it is on disk: next dev will
// compile it from there. An edit of next.config.* is never published:
// next dev restarts for it, and the new process answers for the new config.
//
// A .env file is read at start, by next dev and by the code it runs (a
// module reading .env.wt, the file `wtproxy db claim --write-env`
// writes), and next dev loads four of them again when its watcher reports
// an edit (NEXT_ENV_FILES, "Reload env: .env" in its log), never another.
// So, as in vite.mjs, another .env file modified after this process
// started is recorded unknown, which no disk matches: wtproxy calls the
// server stale (409, or a restart under --restart-on-stale) rather than
// verified on the old settings. One of next dev's four is recorded
// unknown only while its contents are not the ones next dev loaded last
// (@next/env's): after the reload it is current, never stale for ever.
//
// Until a new fingerprint is published, wtproxy sees the older one, holds
// the request (stale_grace) and asks again: waiting, never wrong. From the
// watcher's report (a compiler's invalid) until the round after that
// compile publishes, the answer also says taking_in (PROTOCOL.md, section
// 1): wtproxy then waits past stale_grace (up to its start_timeout) for a
// recompile that a loaded machine makes slow, instead of restarting next
// dev and throwing the compile away. A file a compile read and that was
// written during it keeps it so for REPORT_WAIT_MS more, as the watcher's
// report of it is on its way; a write the watcher never reports (its mtime
// kept) is not taken in, and says nothing of the kind. Asking
// starts a round when none ran for ASK_RECHECK_MS, which takes in files
// no compile read. The fingerprint is computed in a worker thread
// (vite-fp.mjs). With NODE_ENV=production, in `next build` and in `next
// start`, withWtproxyWhoami adds nothing (and /__whoami answers 501).
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { checkPatterns, globMatch } from './fingerprint.mjs';
import { COMMON_EXCLUDE, READ_AT_START, resolveCheckout, answerFor, withTakingIn } from './index.mjs';
import { FingerprintWorker, signature, underRoot, lateWarning } from './vite-fp.mjs';
import { ROUTE_DIR, STAMP, TurbopackFollower, ensureStamps } from './next-turbopack.mjs';

export const KEY = Symbol.for('wtproxy-whoami.next');
export const NEXT_EXTENSIONS = ['js', 'mjs', 'cjs', 'jsx', 'ts', 'mts', 'cts', 'tsx', 'css', 'scss', 'sass',
  'json', 'md', 'mdx'];
// index.mjs's (Next's build folder and the stamp among them), plus its
// static export.
export const NEXT_EXCLUDE = [...COMMON_EXCLUDE, '**/out/**'];
// The route's stamp (next-turbopack.mjs): next dev's own writes, not code.
const STAMP_EXCLUDE = `**/${ROUTE_DIR}/${STAMP}`;
// The watcher's reports of one burst (an editor saving several files, a
// `git checkout`) in one round; next dev's own aggregateTimeout is 5 ms.
export const DEBOUNCE_MS = 20;
export const ASK_RECHECK_MS = 500;
// A file's ctime comes from the kernel's coarse clock, up to a tick (4-10
// ms) behind Date.now(): a write within this of a compile's start may
// have come before or after it.
const CLOCK_TICK_NS = 10_000_000n;
// How long after a compile's end next dev's watcher has reported a write
// made while it ran (it looks at the files' times against the compile's
// start as it begins watching again). A write within a tick of the start
// that it did not report within this time came before the compile read
// the file.
export const SETTLE_MS = 200;
// How long the answer still says taking_in after a round found a file a
// compile read written during that compile: its watcher's report is due.
export const REPORT_WAIT_MS = 2000;
const DEV_PHASE = 'phase-development-server';
// The .env files next dev loads (@next/env, in development) and loads again
// when its watcher reports one changed: process.env is updated and the
// server's modules evaluated again (measured with next 16.5, Turbopack and
// webpack: the first request after an edit of .env, .env.local or
// .env.development got the new value, read in a handler or at a module's
// top). Any other .env file is read at start only.
export const NEXT_ENV_FILES = ['.env.development.local', '.env.local', '.env.development', '.env'];

const ctimeNs = (sig) => (sig ? BigInt(sig.split(':')[4]) : 0n);

// One next dev process's fingerprint, following its compilers.
class Follower {
  constructor(dir, options) {
    Object.assign(this, patterns(dir, options));
    this.inc = checkPatterns(this.include, 'include');
    this.exc = checkPatterns(this.exclude, 'exclude');
    this.compilers = new Map(); // name -> { busy, begun (ms), deps: Set of absolute paths, own: the app's }
    this.gen = 0; // compiles begun so far
    this.answer = null; // the published answer, null before the first
    this.body = null; // its bytes
    this.published = 0; // answers published so far
    this.takingSince = 0; // since when a change is being taken in (takingIn), 0 none
    this.afterDone = false; // a compile ended and its round has not ended yet
    this.reportBy = 0; // a file written during a compile: its report is due by then
    this.timer = null;
    this.running = false;
    this.again = false;
    this.lastRun = 0;
    this.warned = new Set();
    this.late = new Set(); // .env files told stale already
    this.worker = new FingerprintWorker();
  }

  log(msg) { console.warn(`[wtproxy-whoami] ${msg}`); }

  // The webpack plugin's part: the watch compiles of compiler `name`
  // (client, nodejs, edge), which replaces an older one of that name.
  follow(name, compiler) {
    const c = { busy: false, begun: 0, doneAt: 0, deps: new Set(), own: [] };
    this.compilers.set(name, c);
    const begin = () => { c.busy = true; this.gen++; this.takingSince ||= Date.now(); };
    compiler.hooks.invalid.tap('wtproxy-whoami', begin);
    compiler.hooks.watchRun.tap('wtproxy-whoami', () => { begin(); c.begun = Date.now(); });
    compiler.hooks.done.tap('wtproxy-whoami', (stats) => {
      c.busy = false;
      c.doneAt = Date.now();
      c.deps = new Set(stats.compilation.fileDependencies);
      c.own = [...c.deps].filter((full) => this.selected(full)); // the app's files, not its packages'
      this.afterDone = true;
      this.schedule(DEBOUNCE_MS);
    });
    compiler.hooks.failed.tap('wtproxy-whoami', () => { c.busy = false; this.afterDone = true; this.schedule(DEBOUNCE_MS); });
  }

  // Since when next dev has been taking a change in, 0 when it is not: a
  // compile runs, or one ended and its round has not published, or a file
  // it read changed during it and the watcher's report is due.
  takingIn() {
    if (!this.busy() && !this.afterDone && Date.now() >= this.reportBy) this.unreportedWrite();
    if (this.busy() || this.afterDone || Date.now() < this.reportBy) return this.takingSince;
    this.takingSince = 0; // ended without a new fingerprint: the next change starts anew
    return 0;
  }

  // A file of the app a compile read, written since that compile began:
  // an edit the watcher has yet to report (it does within milliseconds,
  // which an ask sent right after the save can beat), so taken in from
  // its write, for REPORT_WAIT_MS at most. Stats the app's own files
  // only, not its packages': an lstat each, about a microsecond.
  unreportedWrite() {
    for (const c of this.compilers.values()) {
      for (const full of c.own) {
        const written = ctimeNs(signature(full));
        if (written <= BigInt(c.begun) * 1_000_000n + CLOCK_TICK_NS) continue;
        const ms = Number(written / 1_000_000n);
        this.takingSince ||= Math.min(ms, Date.now());
        this.reportBy = ms + REPORT_WAIT_MS;
        return;
      }
    }
  }

  schedule(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.round(), ms);
    this.timer.unref();
  }

  // A /__whoami request: the published answer (503 before the first), and
  // a look at the disk again if no round ran for a while.
  response() {
    if (!this.running && !this.timer && Date.now() - this.lastRun >= ASK_RECHECK_MS) this.schedule(0);
    if (!this.body) {
      return new Response('wtproxy-whoami: next dev has not finished its first compile yet\n',
        { status: 503, headers: { 'Content-Type': 'text/plain', 'Cache-Control': 'no-store', 'Retry-After': '1' } });
    }
    return new Response(withTakingIn(this.answer, this.body, this.takingIn()), { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' } });
  }

  busy() { return [...this.compilers.values()].some((c) => c.busy); }

  async round() {
    this.timer = null;
    if (this.running) { this.again = true; return; }
    if (this.busy()) return; // its done schedules the next round
    this.running = true;
    const gen = this.gen;
    const fp = await this.worker.compute({ root: this.checkout, include: this.include, exclude: this.exclude, atStart: this.atStart() });
    this.running = false;
    this.lastRun = Date.now();
    if (this.again) { this.again = false; this.schedule(DEBOUNCE_MS); }
    if (fp.error) { this.afterDone = false; this.log(`cannot fingerprint ${this.checkout}: ${fp.error}; /__whoami keeps the last fingerprint`); return; }
    if (gen !== this.gen || this.busy()) return; // a compile began meanwhile: its done starts a round
    const unread = this.unread(fp.sigs);
    if (unread?.settle) { this.schedule(unread.settle); return; }
    if (unread) { this.unreported(unread); return; }
    ({ answer: this.answer, body: this.body } = answerFor(this.checkout, this.include, this.exclude, fp));
    const late = lateWarning(this.checkout, fp.late, this.late, 'this next dev');
    if (late) this.log(late);
    this.published++;
    this.takingSince = 0;
    this.afterDone = false;
    this.reportBy = 0;
  }

  // A round found a file a compile read written after that compile began
  // (unread's): while next dev was taking a change in, the watcher's report
  // of this one is due; then it is said in the log.
  unreported(unread) {
    if (this.afterDone && !unread.config) this.reportBy = Date.now() + REPORT_WAIT_MS;
    this.afterDone = false;
    this.warn(unread);
  }

  // The first selected file some compile read that was written (or
  // removed) since that compile began, or a next.config changed since
  // start, else null; with `settle` (ms) when the write was within a tick
  // of the compile's start, to look again once the watcher had the time to
  // report it.
  unread(sigs) {
    const now = Date.now();
    const present = new Set();
    for (const [rel, sig] of sigs) {
      const full = path.join(this.checkout, rel);
      present.add(full);
      if (this.configSigs.has(full)) {
        if (this.configSigs.get(full) !== sig) return { full, config: true };
        continue;
      }
      const written = ctimeNs(sig);
      for (const c of this.compilers.values()) {
        const begun = BigInt(c.begun) * 1_000_000n;
        if (!c.deps.has(full) || written + CLOCK_TICK_NS <= begun) continue;
        if (written > begun + CLOCK_TICK_NS) return { full, sig };
        if (now - c.doneAt < SETTLE_MS) return { full, sig, settle: c.doneAt + SETTLE_MS - now };
      }
    }
    for (const c of this.compilers.values()) {
      for (const full of c.deps) if (!present.has(full) && this.selected(full)) return { full, sig: '' };
    }
    return null;
  }

  selected(full) {
    const rel = path.relative(this.checkout, full);
    if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return false;
    const b = Buffer.from(rel.split(path.sep).join('/'));
    return this.inc.some((p) => globMatch(p, b)) && !this.exc.some((p) => globMatch(p, b));
  }

  // Usually the watcher's report is on its way; said once per version of
  // a file in case it never comes.
  warn({ full, sig, config }) {
    if (config) return; // next dev restarts for it
    if (this.warned.has(`${full}\0${sig}`)) return;
    this.warned.add(`${full}\0${sig}`);
    const published = this.published;
    setTimeout(() => {
      if (this.published !== published) return;
      this.log(`${full} ${sig ? 'changed' : 'was removed'} but next dev has not recompiled it; /__whoami keeps the older fingerprint, so wtproxy calls the server stale: restart next dev (or run it with wtproxy run --restart-on-stale)`);
    }, 5000).unref();
  }
}

// What both followers fingerprint: the checkout, the patterns (the .env
// files under the app's folder), the next.config.* files as they were at
// start, and atStart(), the .env files' rule (vite-fp.mjs's) for a round.
function patterns(dir, options) {
  const exclude = options.exclude ?? [...NEXT_EXCLUDE];
  const checkout = resolveCheckout(options.root, dir);
  const app = fs.realpathSync(dir);
  const envs = underRoot(checkout, app, READ_AT_START);
  return {
    checkout,
    include: options.include ?? [...NEXT_EXTENSIONS.map((e) => `**/*.${e}`), ...envs],
    exclude: exclude.includes(STAMP_EXCLUDE) ? exclude : [...exclude, STAMP_EXCLUDE],
    configSigs: configSignatures(dir),
    atStart: () => ({ since: performance.timeOrigin, patterns: envs, loaded: nextEnvLoaded(app, checkout) }),
  };
}

// NEXT_ENV_FILES of app as next dev loaded them last, for the
// fingerprint's atStart.loaded: a Map of their paths (relative to
// checkout) to the SHA-256 of the file on disk when next dev loaded its
// contents, null when it did not (it loaded other contents, or none).
// null when this process's @next/env has loaded nothing: the start rule
// then holds for them too.
function nextEnvLoaded(app, checkout) {
  let env;
  try {
    env = createRequire(createRequire(path.join(app, 'package.json')).resolve('next/package.json'))('@next/env');
  } catch {
    return null;
  }
  if (!env.initialEnv) return null; // loadEnvConfig below would load them
  const texts = new Map(env.loadEnvConfig(app, true).loadedEnvFiles.map((f) => [f.path, f.contents]));
  const loaded = new Map();
  for (const name of NEXT_ENV_FILES) {
    const full = path.join(app, name);
    let disk = null;
    try { disk = fs.readFileSync(full); } catch { /* none: not recorded */ }
    // @next/env read it as UTF-8: compared as text, hashed as bytes
    const same = disk && texts.has(name) && disk.toString('utf8') === texts.get(name);
    loaded.set(path.relative(checkout, full).split(path.sep).join('/'), same ? crypto.createHash('sha256').update(disk).digest('hex') : null);
  }
  return loaded;
}

// The next.config.* files of dir and their signatures at start.
function configSignatures(dir) {
  const sigs = new Map();
  for (const ext of ['js', 'mjs', 'cjs', 'ts']) {
    const full = path.join(fs.realpathSync(dir), `next.config.${ext}`);
    const got = signature(full);
    if (got) sigs.set(full, got);
  }
  return sigs;
}

class WtproxyWhoamiPlugin {
  constructor(follower, name) { Object.assign(this, { follower, name }); }
  apply(compiler) { this.follower.follow(this.name, compiler); }
}

// The Next config, with the plugin on next dev's compilers. nextConfig: an
// object or a function (phase, ctx) as next.config exports.
export function withWtproxyWhoami(nextConfig = {}, options = {}) {
  ensureStamps(process.cwd()); // route.js imports it, in next build too
  return async (phase, ctx) => {
    const config = typeof nextConfig === 'function' ? await nextConfig(phase, ctx) : nextConfig;
    if (phase !== DEV_PHASE || process.env.NODE_ENV === 'production') return config;
    if (process.env.TURBOPACK) {
      globalThis[KEY] ??= new TurbopackFollower(process.cwd(), patterns(process.cwd(), options));
      return config;
    }
    return {
      ...config,
      webpack(webpackConfig, wctx) {
        const out = config.webpack ? config.webpack(webpackConfig, wctx) : webpackConfig;
        if (wctx.dev) {
          globalThis[KEY] ??= new Follower(wctx.dir, options);
          out.plugins.push(new WtproxyWhoamiPlugin(globalThis[KEY], wctx.nextRuntime ?? 'client'));
        }
        return out;
      },
    };
  };
}

export default withWtproxyWhoami;
