// vite.mjs - the /__whoami contract (whoami/PROTOCOL.md) for the Vite dev
// server, as a Vite plugin:
//
//   import { wtproxyWhoami } from '/path/to/wtproxy/whoami/node/vite.mjs';
//   export default { plugins: [wtproxyWhoami()] };        // vite.config.js
//
// A plain Node server runs the code it loaded at start, so index.mjs
// fingerprints once. Vite instead reads and transforms a source file when
// it is requested, keeps that transform, and drops it when its watcher
// reports the file changed: what Vite serves follows its watcher. So the
// fingerprint here does too: computed at start, then again after the
// watcher reports a matching file added, changed or removed.
//
// The race: an edit reaches the disk before the watcher reports it, and
// until then Vite may still serve its transform of the old file. wtproxy
// compares our hash with the disk's; were we to read the disk on each
// /__whoami, a request served with old code would pass as verified. So a
// new hash is published only (1) after the watcher event, debounced, (2)
// when no further event came in while it was computed, and (3) when every
// file read is unchanged since the last event we saw for it (its stat
// signature, taken after the read, equals the one taken at that event).
// (3) matters because chokidar drops a second 'change' of a file within
// 50 ms of the first: such a write is never reported, and Vite may keep
// a transform of the first. We then report the change to Vite ourselves
// (a 'change', 'add' or 'unlink' on its watcher, as chokidar would have),
// which drops its transform, and publish on the next round. That round is
// also started by a /__whoami request when none ran for ASK_RECHECK_MS,
// which covers files no watcher sees (outside Vite's root) and edits made
// while Vite started. Until then wtproxy sees an older hash and holds the
// request (stale_grace): waiting, never wrong. From a watcher event until
// the round it started publishes, the answer says taking_in (PROTOCOL.md,
// section 1), so that a slow round on a loaded machine is waited for past
// stale_grace rather than taken for a server that missed the edit.
//
// A .env file is different: Vite, and the server code it runs (a
// SvelteKit module reading .env.wt, the file `wtproxy db claim
// --write-env` writes), read it once, at start; nothing takes an edit in
// but a restart (Vite restarts itself for .env, .env.local, .env.[mode]
// and .env.[mode].local, never for another, .env.wt among them). So a
// .env file modified after this server's config was loaded is recorded
// unknown, as index.mjs records a file modified after its process
// started: no disk matches it, and wtproxy calls the server stale (409,
// or a restart under --restart-on-stale) rather than verified on the old
// settings. A server Vite restarted loads its config again, and its
// .env files are current from then on.
//
// Recomputing runs in a worker thread (vite-fp.mjs): on a 2,000-file tree
// it takes 80-130 ms here, which Vite's event loop never waits for.
// `vite build` never loads it (apply: 'serve'); with NODE_ENV=production
// it adds nothing.
import fs from 'node:fs';
import path from 'node:path';
import { globMatch, checkPatterns, PATTERN_MAX } from './fingerprint.mjs';
import { COMMON_EXCLUDE, READ_AT_START, resolveCheckout, answerFor, serveWhoami, withTakingIn } from './index.mjs';
import { FingerprintWorker, fingerprintWithStats, signature, underRoot, lateWarning } from './vite-fp.mjs';

// What Vite transforms and keeps, under its root.
export const VITE_EXTENSIONS = ['js', 'mjs', 'cjs', 'jsx', 'ts', 'mts', 'cts', 'tsx', 'vue', 'svelte', 'astro',
  'css', 'scss', 'sass', 'less', 'styl', 'stylus', 'pcss', 'postcss', 'html', 'json'];
// index.mjs's, plus what test runners write inside a Vite project.
// (Vite's own cache, .vite/, is added as it is configured.)
export const VITE_EXCLUDE = [...COMMON_EXCLUDE, '**/.vite/**'];
// A burst (a `git checkout`, an editor saving several files) is one round
// once the watcher has been quiet this long; also chokidar's own throttle
// of repeated 'change' events.
export const DEBOUNCE_MS = 50;
// A /__whoami request starts a round if none ran for this long.
export const ASK_RECHECK_MS = 500;

// The default include: VITE_EXTENSIONS and READ_AT_START under Vite's
// root, relative to the checkout (everywhere when that root is the
// checkout, or cannot be written as a literal pattern prefix).
export function viteInclude(checkout, viteRoot) {
  return underRoot(checkout, viteRoot, [...VITE_EXTENSIONS.map((e) => `**/*.${e}`), ...READ_AT_START]);
}

// The .env files Vite restarts its server for (its getEnvFilesForMode),
// absolute; none when it loads none (envDir: false, or Vite 5's envFile).
function viteEnvFiles(config) {
  if (!config.envDir || config.inlineConfig?.envFile === false) return [];
  return ['.env', '.env.local', `.env.${config.mode}`, `.env.${config.mode}.local`].map((f) => path.resolve(config.envDir, f));
}

// When the config of the server about to start began loading, in ms: the
// process's start for its first (a vite.config.js may read .env files at
// its top), the call for a server Vite restarted in the same process
// (before it reads the .env files again). Kept on globalThis, since Vite
// may bundle this module into each load of its config.
const LOADS = Symbol.for('wtproxy-whoami.vite.loads');
function configLoadedAt() {
  const first = !globalThis[LOADS];
  globalThis[LOADS] = (globalThis[LOADS] || 0) + 1;
  return first ? performance.timeOrigin : Date.now();
}

// The default exclude: VITE_EXCLUDE, and Vite's cacheDir (which its
// watcher ignores and it writes while it serves) if those miss it.
export function viteExclude(checkout, cacheDir) {
  const rel = cacheDir ? path.relative(checkout, cacheDir).split(path.sep).join('/') : '';
  if (!rel || outside(rel) || /[*?]/.test(rel) || Buffer.byteLength(rel) + 3 > PATTERN_MAX) return [...VITE_EXCLUDE];
  const probe = Buffer.from(`${rel}/x`);
  if (VITE_EXCLUDE.some((p) => globMatch(Buffer.from(p), probe))) return [...VITE_EXCLUDE];
  return [...VITE_EXCLUDE, `${rel}/**`];
}

const outside = (rel) => rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);

// Files a framework on Vite takes in apart from Vite's watcher, keeping
// what it had when the new one fails, are read at start, as .env files
// are: edited, the server is stale (a 409, or the restart
// --restart-on-stale sends) until a new server loads them. Seen verified
// on old code, each by a user of the framework:
// - Nuxt builds its server routes (server/) with Nitro, later than Vite:
//   /__whoami moved to an edited server/api file's fingerprint about half
//   a second before Nitro served it.
// - React Router evaluates its route config (app/routes.ts) and
//   react-router.config.ts on a change, and when that fails (a syntax
//   error, no default export) logs it and serves the routes it had: a
//   routes.ts without the /notes route kept serving /notes, and the
//   tests passed.
// - Astro restarts its server for an edited astro.config.*, and when the
//   new config fails keeps the old one ("Continuing with previous valid
//   configuration"); a restart that works makes a new server, this
//   plugin with it, which reads the config as current.
// Each is known by its Vite plugins' names; [] for plain Vite.
const FRAMEWORK_AT_START = [
  { is: (n) => n.startsWith('nuxt:'), files: ['server/**'] },
  { is: (n) => n === 'react-router', files: [...atStartModules('app/routes'), ...atStartModules('react-router.config')] },
  { is: (n) => n.startsWith('astro:'), files: atStartModules('astro.config') },
];

function atStartModules(base) {
  return ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs', 'tsx', 'jsx'].map((e) => `${base}.${e}`);
}

function frameworkAtStart(config, checkout) {
  const names = (config.plugins ?? []).map((p) => (typeof p?.name === 'string' ? p.name : ''));
  const files = FRAMEWORK_AT_START.filter((f) => names.some(f.is)).flatMap((f) => f.files);
  return files.length ? underRoot(checkout, config.root, files) : [];
}

// One Vite dev server's fingerprint, following its watcher.
class Follower {
  constructor(server, checkout, include, exclude, loadedAt, readAtStart = []) {
    Object.assign(this, { server, checkout, include, exclude });
    this.atStart = { since: loadedAt, patterns: [...READ_AT_START, ...frameworkAtStart(server.config, checkout), ...readAtStart] };
    this.late = new Set(); // .env files told stale already
    this.inc = checkPatterns(include, 'include');
    this.exc = checkPatterns(exclude, 'exclude');
    this.viteRoot = server.config.root;
    this.gen = 0; // watcher events seen so far
    this.seen = new Map(); // path -> signature at the last event seen for it
    this.repaired = new Map(); // path -> signature already reported to Vite by us
    this.timer = null;
    this.running = false;
    this.again = false;
    this.lastRun = Date.now();
    this.closed = false;
    this.takingSince = 0; // the first watcher event not published yet, 0 none
    // Vite restarts itself (a new plugin, a new fingerprint) when these
    // change; this one then must not claim them while the old config runs.
    const { configFile, configFileDependencies = [] } = server.config;
    this.configFiles = new Set([configFile, ...configFileDependencies, ...viteEnvFiles(server.config)]
      .filter(Boolean).map((f) => path.resolve(f)));
    this.publish(fingerprintWithStats(checkout, include, exclude, this.atStart), true);
    this.worker = new FingerprintWorker();
    this.onWatch = (event, file) => this.watched(event, file);
    server.watcher.on('all', this.onWatch);
  }

  log(level, msg) { this.server.config.logger[level](`[wtproxy-whoami] ${msg}`, { timestamp: true }); }

  publish(fp, initial = false) {
    if (initial) for (const [rel, sig] of fp.sigs) this.seen.set(rel, sig);
    ({ answer: this.answer, body: this.body } = answerFor(this.checkout, this.include, this.exclude, fp));
    this.repaired.clear();
    this.takingSince = 0;
    const late = lateWarning(this.checkout, fp.late, this.late, 'this Vite server');
    if (late) this.log('warn', late);
  }

  // What /__whoami answers now: the published answer, saying taking_in
  // while a watcher event's round has not published.
  current() { return withTakingIn(this.answer, this.body, this.takingSince); }

  // The path relative to the checkout, '/'-separated, or null outside it.
  // Vite's root (and so its watcher's paths) need not be a realpath.
  relative(file) {
    let rel = path.relative(this.checkout, file);
    if (outside(rel)) {
      const inRoot = path.relative(this.viteRoot, file);
      if (outside(inRoot)) return null;
      if (this.realRoot === undefined) {
        try { this.realRoot = fs.realpathSync(this.viteRoot); } catch { this.realRoot = this.viteRoot; }
      }
      rel = path.relative(this.checkout, path.join(this.realRoot, inRoot));
      if (outside(rel)) return null;
    }
    return rel.split(path.sep).join('/');
  }

  matches(pats, rel) { const b = Buffer.from(rel); return pats.some((p) => globMatch(p, b)); }

  watched(event, file) {
    if (this.closed || typeof file !== 'string') return;
    if (this.configFiles.has(path.resolve(file))) { this.close(); return; }
    const rel = this.relative(file);
    if (rel === null || this.matches(this.exc, rel)) return;
    if (event === 'addDir' || event === 'unlinkDir') {
      // chokidar reports the files of a folder moved in or out one by one
      // too; the round after this one checks that nothing was missed.
    } else if (event === 'add' || event === 'change' || event === 'unlink') {
      if (!this.matches(this.inc, rel)) return;
      const sig = event === 'unlink' ? '' : signature(path.join(this.checkout, rel));
      if (sig) this.seen.set(rel, sig); else this.seen.delete(rel);
    } else {
      return;
    }
    this.gen++;
    this.takingSince ||= Date.now();
    this.schedule(DEBOUNCE_MS);
  }

  schedule(ms) {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.round(), ms);
  }

  // A /__whoami request: answer what is published, and check the disk
  // again if no round ran for a while.
  asked() {
    if (!this.running && !this.timer && Date.now() - this.lastRun >= ASK_RECHECK_MS) this.schedule(0);
  }

  async round() {
    this.timer = null;
    if (this.running) { this.again = true; return; }
    this.running = true;
    const gen = this.gen;
    const fp = await this.worker.compute({ root: this.checkout, include: this.include, exclude: this.exclude, atStart: this.atStart });
    this.running = false;
    this.lastRun = Date.now();
    if (this.closed) return;
    if (this.again) { this.again = false; this.schedule(DEBOUNCE_MS); }
    if (fp.error) { this.takingSince = 0; this.log('warn', `cannot fingerprint ${this.checkout}: ${fp.error}; /__whoami keeps the last fingerprint`); return; }
    if (gen !== this.gen) return; // an event came in meanwhile: its own round follows
    const unseen = this.unseen(fp.sigs);
    if (!unseen.length) { this.publish(fp); return; }
    this.report(unseen);
  }

  // Files read whose signature differs from the one seen at their last
  // event (or that vanished without an event): [[path, signature, event]].
  unseen(sigs) {
    const out = [];
    const now = new Set();
    for (const [rel, sig] of sigs) {
      now.add(rel);
      if (this.seen.get(rel) !== sig) out.push([rel, sig, !sig ? 'unlink' : this.seen.has(rel) ? 'change' : 'add']);
    }
    for (const rel of this.seen.keys()) if (!now.has(rel)) out.push([rel, '', 'unlink']);
    return out;
  }

  // Tell Vite (and ourselves) what its watcher did not: Vite drops its
  // transforms of those files, our listener records them and starts the
  // next round. A change reported once already is not reported again:
  // then the older answer stays, and wtproxy calls the server stale.
  report(unseen) {
    const fresh = unseen.filter(([rel, sig]) => this.repaired.get(rel) !== sig);
    if (!fresh.length) {
      this.takingSince = 0; // nothing it will take in
      const what = `${path.join(this.checkout, unseen[0][0])}${unseen.length > 1 ? ` and ${unseen.length - 1} more` : ''}`;
      this.log('warn', `${what} changed but this Vite server took no notice; /__whoami keeps the older fingerprint, so wtproxy calls the server stale: restart vite (or run it with wtproxy run --restart-on-stale)`);
      return;
    }
    for (const [rel, sig, event] of fresh) {
      this.repaired.set(rel, sig);
      const file = path.join(this.checkout, rel);
      this.server.watcher.emit(event, file);
      this.server.watcher.emit('all', event, file);
    }
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.server.watcher.off('all', this.onWatch);
    this.worker.close();
  }
}

// The plugin. options: { root, include, exclude } as whoami()'s; root
// defaults to WTPROXY_WHOAMI_ROOT, else the checkout holding Vite's root.
// readAtStart: patterns (relative to the checkout, as include's) of files
// the app's server code reads itself when it loads (fs.readFileSync of a
// JSON or YAML file at a module's top), which no watcher event makes it
// read again: an Astro user's edited data file was served old, verified.
// They are fingerprinted, and edited after the start they make the
// server stale, as .env files do.
export function wtproxyWhoami(options = {}) {
  const loadedAt = configLoadedAt();
  return {
    name: 'wtproxy-whoami',
    apply: 'serve',
    configureServer(server) {
      if (process.env.NODE_ENV === 'production') return;
      const checkout = resolveCheckout(options.root, server.config.root);
      const readAtStart = options.readAtStart ?? [];
      const include = [...(options.include ?? viteInclude(checkout, server.config.root)), ...readAtStart];
      const exclude = options.exclude ?? viteExclude(checkout, server.config.cacheDir);
      const f = new Follower(server, checkout, include, exclude, loadedAt, readAtStart);
      server.httpServer?.once('close', () => f.close());
      server.middlewares.use((req, res, next) => {
        if (!serveWhoami(req, res, f.current())) return next();
        return f.asked();
      });
    },
  };
}

export default wtproxyWhoami;
