// next-turbopack.mjs - the /__whoami answer under `next dev` with
// Turbopack (Next 16's default, Next 15's --turbopack): next.mjs's
// withWtproxyWhoami makes one when process.env.TURBOPACK is set.
//
// Turbopack has no webpack hooks to follow, and nothing else in the
// process says when it has taken an edit in. It is demand-driven: its
// watcher (inotify, in a Rust thread) marks what a changed file feeds as
// dirty, and the next request for a route recompiles it before serving.
// So a request is served the new code once the watcher has handled the
// edit, and the old code before. How long that takes has no bound
// (measured with next 16.5 on 2 busy CPUs, a page written then asked for
// at once: 28 of 30 requests got the old page; 5 ms later, 11 of 30; 20
// ms later, 0 of 30 idle but 1 of 20 with both CPUs loaded): a rule on
// time alone would say verified while the old code is served.
//
// What is sound is an order: the watcher reads one inotify queue and
// handles its events in the order the writes happened. So each round
// (1) fingerprints the disk, then (2) writes a new number to stamp.js, a
// file next to route.js that the route imports; the fingerprint is
// published once the route serves that number or a later one: Turbopack
// has then handled the stamp's write, and with it every edit made
// before (2), so every route asked for from then on is compiled from a
// disk at least as new as the fingerprint. (Measured: of 250 page edits
// each followed by a stamp, a wait until the route served it and a
// request, none got the old page, with the CPUs idle or loaded.) An edit
// after the fingerprint was taken leaves the disk unlike it: wtproxy
// calls the server stale, asks again, and that ask starts the next
// round. A round whose files did not change since the last published one
// (same stat signatures) writes nothing: no recompile while idle.
//
// Until a round is proven, /__whoami answers the last proven fingerprint
// (503 before the first) with taking_in (PROTOCOL.md, section 1): this
// process knows the disk changed and that Turbopack is taking it in, so
// wtproxy holds the request and asks again, about 100 ms later, however
// long the recompile takes on a loaded machine (up to its start_timeout),
// rather than restarting next dev at stale_grace and throwing the compile
// away. An ask that finds no round pending waits (ASK_WAIT_MS at most) for
// a round begun after it arrived: its answer then says taking_in whenever
// the disk changed before the ask, whatever stale_grace is.
// stamp.js is not part of the fingerprint (NEXT_EXCLUDE), and is
// gitignored by the .gitignore `wtproxy init` writes beside route.js.
// An edit of next.config.* is never published: next dev restarts for it.
import fs from 'node:fs';
import path from 'node:path';
import { answerFor, withTakingIn } from './index.mjs';
import { FingerprintWorker, signature, lateWarning } from './vite-fp.mjs';

export const ROUTE_DIR = '%5F%5Fwhoami';
export const STAMP = 'stamp.js';
// How long an ask waits for its round (a fingerprint in the worker
// thread: milliseconds, 80-130 ms for 2,000 files) before it answers what
// it has: well within wtproxy's whoami_timeout (2 s).
const ASK_WAIT_MS = 1000;
// A stamp the route still does not serve when asked this long after it
// was written: said once in next dev's log, as the watcher is then not
// doing its part.
const UNSEEN_WARN_MS = 5000;
// A route.js without the stamp is said in the log at most this often.
const OLD_ROUTE_LOG_MS = 10000;

const stampText = (n) =>
  `// wtproxy-whoami: next dev rewrites this file (withWtproxyWhoami): route.js serves this number once Turbopack took every earlier edit in\nexport default ${n};\n`;

// The stamp files of the App Router folders of dir whose route imports
// one, created where missing (in every phase: `next build` compiles route.js
// too, and a fresh worktree has none, as it is gitignored).
export function ensureStamps(dir) {
  const found = [];
  for (const appdir of ['app', 'src/app']) {
    const routeDir = path.join(dir, appdir, ROUTE_DIR);
    let route = '';
    try { route = fs.readFileSync(path.join(routeDir, 'route.js'), 'utf8'); } catch { continue; }
    if (!route.includes(`./${STAMP}`)) continue;
    const file = path.join(routeDir, STAMP);
    if (!fs.existsSync(file)) {
      try { fs.writeFileSync(file, stampText(0)); } catch (e) { console.warn(`[wtproxy-whoami] cannot write ${file}: ${e.message}`); }
    }
    found.push(file);
  }
  return found;
}

function readStamp(file) {
  try { return Number(/export default (\d+);/.exec(fs.readFileSync(file, 'utf8'))?.[1] ?? 0); } catch { return 0; }
}

const sameSigs = (a, b) => a && b && a.length === b.length && a.every(([rel, sig], i) => rel === b[i][0] && sig === b[i][1]);
// The same files and hash: a .env file next dev loaded again has the
// signature it had when it was recorded unknown, and another hash now.
const sameFp = (fp, published) => published && fp.hash === published.hash && sameSigs(fp.sigs, published.sigs);

export class TurbopackFollower {
  // dir: the app (next dev's cwd); fp: { checkout, include, exclude,
  // configSigs, atStart } as next.mjs's Follower has them.
  constructor(dir, fp) {
    Object.assign(this, fp);
    this.stamps = ensureStamps(dir);
    this.written = Math.max(0, ...this.stamps.map(readStamp));
    this.worker = new FingerprintWorker();
    this.body = null; // the published answer
    this.published = null; // its fingerprint: { hash, sigs }
    this.pending = null; // { stamp, at, since, answer, body, fp }: a round waiting for its proof
    this.running = null; // the round under way (a promise)
    this.queued = null; // the next round, for the asks that came during this one
    this.warned = 0;
    this.toldOld = 0;
    this.late = new Set(); // .env files told stale already
    if (this.stamps.length === 0) {
      this.log(`no ${path.join(dir, 'app', ROUTE_DIR, 'route.js')} (nor under src/app) importing ./${STAMP}: /__whoami cannot answer under Turbopack; wtproxy init --apply in the app writes it`);
    }
    this.nextRound();
  }

  log(msg) { console.warn(`[wtproxy-whoami] ${msg}`); }

  // A /__whoami request; stamp is the number the route was compiled with
  // (undefined from a route.js written for webpack only). A promise.
  async response(got) {
    if (typeof got?.stamp !== 'number') {
      const why = `${ROUTE_DIR}/route.js is older than next dev with Turbopack needs (it imports no ./${STAMP}): run wtproxy init --apply in the app to update it, or run next dev --webpack`;
      // in next dev's log too, where `wtproxy logs` shows its tail
      if (Date.now() - this.toldOld >= OLD_ROUTE_LOG_MS) { this.toldOld = Date.now(); this.log(why); }
      return text(501, `wtproxy-whoami: ${why}\n`);
    }
    this.proven(got.stamp);
    if (!this.pending) {
      let timer;
      await Promise.race([this.nextRound(), new Promise((res) => { timer = setTimeout(res, ASK_WAIT_MS); })]);
      clearTimeout(timer);
    }
    if (!this.body) return text(503, 'wtproxy-whoami: next dev (Turbopack) has not compiled this route from the current disk yet\n', { 'Retry-After': '1' });
    return new Response(withTakingIn(this.answer, this.body, this.pending?.since), { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' } });
  }

  // The route serves stamp: a pending round written at or before it is
  // proven, and its fingerprint published.
  proven(stamp) {
    if (this.pending && stamp >= this.pending.stamp) {
      ({ answer: this.answer, body: this.body, fp: this.published } = this.pending);
      this.pending = null;
    } else if (this.pending && Date.now() - this.pending.at >= UNSEEN_WARN_MS && !this.warned++) {
      this.log(`next dev (Turbopack) still serves an older ${this.stamps[0]} ${UNSEEN_WARN_MS / 1000} s after it was written, so /__whoami keeps the older fingerprint (saying it is taking the change in) and wtproxy calls the server stale once its start_timeout has passed: if it stays so, restart next dev (or run it with wtproxy run --restart-on-stale)`);
    }
  }

  // A round begun after now: the one queued behind the round under way,
  // or a new one. Asks that come meanwhile share it.
  nextRound() {
    if (!this.queued) {
      this.queued = (this.running ?? Promise.resolve()).then(() => {
        this.queued = null;
        this.running = this.round().finally(() => { this.running = null; });
        return this.running;
      });
    }
    return this.queued;
  }

  async round() {
    if (this.pending) return; // proven first; the next ask starts the next
    try {
      this.pending = await this.prove();
    } catch (e) {
      this.log(`cannot answer for ${this.checkout}: ${e.message}; /__whoami keeps the last fingerprint`);
    }
  }

  // Fingerprint the disk, then write the next stamp: the pending answer,
  // or null when nothing changed since the published one (or it failed).
  async prove() {
    const since = Date.now();
    const fp = await this.worker.compute({ root: this.checkout, include: this.include, exclude: this.exclude, atStart: this.atStart() });
    if (fp.error) { this.log(`cannot fingerprint ${this.checkout}: ${fp.error}; /__whoami keeps the last fingerprint`); return null; }
    if (sameFp(fp, this.published) || this.configChanged()) return null;
    const late = lateWarning(this.checkout, fp.late, this.late, 'this next dev');
    if (late) this.log(late);
    const stamp = ++this.written;
    try {
      for (const file of this.stamps) {
        // renamed over: Turbopack never reads a half-written file
        await fs.promises.writeFile(`${file}.tmp`, stampText(stamp));
        await fs.promises.rename(`${file}.tmp`, file);
      }
    } catch (e) {
      this.log(`cannot write ${this.stamps.join(', ')}: ${e.message}; /__whoami keeps the last fingerprint`);
      return null;
    }
    return { stamp, at: Date.now(), since, ...answerFor(this.checkout, this.include, this.exclude, fp), fp };
  }

  configChanged() {
    for (const [full, sig] of this.configSigs) if (signature(full) !== sig) return true;
    return false;
  }
}

function text(status, body, headers = {}) {
  return new Response(body, { status, headers: { 'Content-Type': 'text/plain', 'Cache-Control': 'no-store', ...headers } });
}
