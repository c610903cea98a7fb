// fingerprint.mjs - wtproxy-fp-v1 (whoami/PROTOCOL.md, section 2) for Node.
//
// Paths are Buffers throughout (raw bytes, no Unicode normalisation);
// entries are examined with lstat, symlinks hashed by their target and
// never followed, folders that an exclude "P/**" covers, or that no include
// can reach, not listed at all.
// Node has no openat, so folders are reached by their full path: a path
// longer than the system's PATH_MAX fails (ENAMETOOLONG) as an error.
import crypto from 'node:crypto';
import fs from 'node:fs';

export const ALGORITHM = 'wtproxy-fp-v1';
export const MAX_PATTERNS = 64;
export const PATTERN_MAX = 256;
export const MAX_FILES = 1048576;
const EMPTY = crypto.createHash('sha256').digest('hex');
const SLASH = 0x2f;
const READ_CHUNK = 65536;
// Running out of descriptors or memory must not pass for "unreadable".
const RESOURCE = new Set(['EMFILE', 'ENFILE', 'ENOMEM']);

export class FingerprintError extends Error {}

function split(b) {
  const out = [];
  if (!b.length) return out;
  let start = 0;
  for (let i = 0; i <= b.length; i++) {
    if (i === b.length || b[i] === SLASH) { out.push(b.subarray(start, i)); start = i + 1; }
  }
  return out;
}

const isDstar = (c) => c.length === 2 && c[0] === 0x2a && c[1] === 0x2a;

// One component: '*' any run of bytes, '?' one byte, others literal.
function matchComponent(p, s) {
  let i = 0; let j = 0; let starI = -1; let starJ = 0;
  while (j < s.length) {
    if (i < p.length && p[i] === 0x2a) { starI = ++i; starJ = j; }
    else if (i < p.length && (p[i] === 0x3f || p[i] === s[j])) { i++; j++; }
    else if (starI >= 0) { i = starI; j = ++starJ; }
    else return false;
  }
  while (i < p.length && p[i] === 0x2a) i++;
  return i === p.length;
}

// Whether Buffer pattern matches the whole Buffer path (PROTOCOL.md 2.2):
// greedy with one backtrack point at the last "**" component.
export function globMatch(pattern, path) {
  const pc = split(pattern); const sc = split(path);
  let i = 0; let j = 0; let starI = -1; let starJ = 0;
  while (j < sc.length) {
    if (i < pc.length && isDstar(pc[i])) { starI = ++i; starJ = j; }
    else if (i < pc.length && matchComponent(pc[i], sc[j])) { i++; j++; }
    else if (starI >= 0) { i = starI; j = ++starJ; }
    else return false;
  }
  while (i < pc.length && isDstar(pc[i])) i++;
  return i === pc.length;
}

// Whether Buffer pattern could match a path strictly below Buffer folder:
// its components match folder's up to a "**" or to folder's end, and go on
// below (glob.c's may_match_below).
function mayMatchBelow(pattern, folder) {
  const pc = split(pattern); const dc = split(folder);
  for (let i = 0; i < dc.length; i++) {
    if (i === pc.length) return false;
    if (isDstar(pc[i])) return true;
    if (!matchComponent(pc[i], dc[i])) return false;
  }
  return pc.length > dc.length;
}

const DSTAR_TAIL = Buffer.from('/**');

// Whether the folder path need not be listed: an exclude "P/**" with P
// matching it, or no include that can match a path below it.
function pruned(inc, exc, path) {
  return exc.some((p) => p.length >= 3 && p.subarray(-3).equals(DSTAR_TAIL) && globMatch(p.subarray(0, -3), path)) ||
    !inc.some((p) => mayMatchBelow(p, path));
}

// The patterns as Buffers; throws TypeError naming what is wrong.
export function checkPatterns(patterns, what) {
  if (!Array.isArray(patterns)) throw new TypeError(`${what} must be an array of glob strings`);
  if (patterns.length > MAX_PATTERNS) throw new TypeError(`${what} has ${patterns.length} patterns, more than ${MAX_PATTERNS}`);
  return patterns.map((p) => {
    const b = typeof p === 'string' ? Buffer.from(p) : null;
    if (!b || b.length < 1 || b.length > PATTERN_MAX || b.includes(0)) {
      throw new TypeError(`${what}: ${JSON.stringify(p)} is not a string of 1 to ${PATTERN_MAX} bytes without NUL`);
    }
    return b;
  });
}

const join = (a, b) => (a.length ? Buffer.concat([a, Buffer.from('/'), b]) : b);

function digestFile(full) {
  let fd;
  try {
    fd = fs.openSync(full, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch (e) {
    if (RESOURCE.has(e.code)) throw new FingerprintError(`cannot fingerprint: ${e.message} (raise the open-files limit with ulimit -n)`);
    if (e.code === 'ENOENT' || e.code === 'ELOOP') return null;
    return ['u', EMPTY];
  }
  const h = crypto.createHash('sha256');
  const buf = Buffer.allocUnsafe(READ_CHUNK);
  try {
    for (;;) {
      const n = fs.readSync(fd, buf, 0, READ_CHUNK, null);
      if (n === 0) return ['f', h.digest('hex')];
      h.update(buf.subarray(0, n));
    }
  } catch {
    return ['u', EMPTY];
  } finally {
    fs.closeSync(fd);
  }
}

function digestLink(full) {
  try {
    return ['l', crypto.createHash('sha256').update(fs.readlinkSync(full, { encoding: 'buffer' })).digest('hex')];
  } catch (e) {
    return e.code === 'ENOENT' ? null : ['u', EMPTY];
  }
}

// [type, digest] of the file at path (full), or null when it vanished:
// unknown when late says the server runs on other contents (walk's).
function judged(st, path, full, late) {
  const loaded = late.loaded?.get(path.toString());
  const isLate = loaded === undefined && st.mtimeMs > late.ms && (!late.only || late.only.some((p) => globMatch(p, path)));
  if (isLate) return ['u', EMPTY];
  const got = st.isSymbolicLink() ? digestLink(full) : digestFile(full);
  return got && loaded !== undefined && got[1] !== loaded ? ['u', EMPTY] : got;
}

// late: { ms, only, loaded }: a file modified after ms is recorded
// unknown, of the files matching a pattern of only (Buffers) when only is
// given; a file loaded names (Map of paths to the digest of the contents
// the server loaded, null for none) is judged by its contents instead.
function walk(root, rel, inc, exc, late, records) {
  let names;
  try {
    names = fs.readdirSync(join(root, rel), { encoding: 'buffer' });
  } catch (e) {
    if (RESOURCE.has(e.code) || e.code === 'ENAMETOOLONG') throw new FingerprintError(`cannot fingerprint: ${e.message}`);
    return;
  }
  for (const name of names) {
    const path = join(rel, name);
    const full = join(root, path);
    let st;
    try { st = fs.lstatSync(full); } catch (e) {
      if (e.code === 'ENOMEM' || e.code === 'ENAMETOOLONG') throw new FingerprintError(`cannot fingerprint: ${e.message}`);
      continue;
    }
    if (st.isDirectory()) {
      if (!pruned(inc, exc, path)) walk(root, path, inc, exc, late, records);
    } else if ((st.isFile() || st.isSymbolicLink()) && inc.some((p) => globMatch(p, path)) &&
        !exc.some((p) => globMatch(p, path))) {
      const got = judged(st, path, full, late);
      if (!got) continue;
      if (records.length === MAX_FILES) throw new FingerprintError(`cannot fingerprint: more than ${MAX_FILES} files are selected (narrow the include patterns or add excludes)`);
      records.push({ type: got[0], path, digest: got[1] });
    }
  }
}

// The fingerprint of the tree at root under include and exclude (arrays
// of strings): { files, hash, records: [{type, path (Buffer), digest}] }.
// atStart { since, patterns, loaded }, all optional: a file modified after
// since (ms since the epoch) is recorded unknown (index.mjs says why);
// with patterns, only a file matching one of them (the files a server
// reads once at start, vite.mjs); a file loaded (a Map of paths to the
// SHA-256, hex, of the contents the server loaded, null when it loaded
// none) is recorded unknown when its contents differ, whatever its time
// (the .env files next dev loads again, next.mjs). Throws FingerprintError
// when root is not a folder or resources run out.
export function compute(root, include, exclude, atStart = {}) {
  const inc = checkPatterns(include, 'include');
  const exc = checkPatterns(exclude, 'exclude');
  const late = { ms: atStart.since ?? Infinity, only: atStart.patterns && checkPatterns(atStart.patterns, 'atStart.patterns'), loaded: atStart.loaded };
  const rootBuf = Buffer.isBuffer(root) ? root : Buffer.from(root);
  let st;
  try { st = fs.statSync(rootBuf); } catch (e) {
    throw new FingerprintError(`cannot fingerprint ${root}: ${e.code === 'ENOENT' ? 'No such file or directory' : e.message} (give the checkout's folder)`);
  }
  if (!st.isDirectory()) throw new FingerprintError(`cannot fingerprint ${root}: Not a directory (give the checkout's folder)`);
  const records = [];
  walk(rootBuf, Buffer.alloc(0), inc, exc, late, records);
  records.sort((a, b) => Buffer.compare(a.path, b.path));
  const h = crypto.createHash('sha256');
  for (const r of records) h.update(Buffer.concat([Buffer.from(r.type), r.path, Buffer.from([0]), Buffer.from(r.digest + '\n')]));
  return { files: records.length, hash: `sha256:${h.digest('hex')}`, records };
}
