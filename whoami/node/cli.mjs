#!/usr/bin/env node
// cli.mjs - `node whoami/node/cli.mjs fingerprint [DIR] [--include GLOB]...
// [--exclude GLOB]... [--no-exclude] [--json | --list]`: the arguments,
// output bytes and exit statuses of `wtproxy fingerprint`, with its
// defaults (the Python ones), so the three implementations compare byte
// for byte. Node decodes argv as UTF-8 with replacement, so a pattern
// holding U+FFFD is refused as not UTF-8.
import { compute, FingerprintError, ALGORITHM, MAX_PATTERNS, PATTERN_MAX } from './fingerprint.mjs';

// As npm installs it (package.json's bin); in a checkout, node whoami/node/cli.mjs.
const PROG = 'wtproxy-whoami fingerprint';
const DEFAULT_INCLUDE = ['**/*.py', '**/.env', '**/.env.*'];
const DEFAULT_EXCLUDE = ['**/.git/**', '**/node_modules/**', '**/.venv/**', '**/venv/**', '**/__pycache__/**'];
const SHORT = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

class UsageError extends Error {}

// JSON as jansson's json_dumps(JSON_ENSURE_ASCII) writes it.
function json(v) {
  if (Array.isArray(v)) return `[${v.map(json).join(', ')}]`;
  if (typeof v === 'number') return String(v);
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${json(k)}: ${json(x)}`).join(', ')}}`;
  let out = '';
  for (let i = 0; i < v.length; i++) {
    const ch = v[i]; const o = v.charCodeAt(i);
    if (SHORT[ch]) out += SHORT[ch];
    else if (o < 0x20 || o > 0x7f) out += `\\u${o.toString(16).toUpperCase().padStart(4, '0')}`;
    else out += ch;
  }
  return `"${out}"`;
}

function pattern(flag, value, into) {
  if (value === undefined) throw new UsageError(`missing the pattern after "${flag}"`);
  if (value.includes('\uFFFD')) throw new UsageError(`a pattern must be UTF-8: "${value}"`);
  const n = Buffer.byteLength(value);
  if (n < 1 || n > PATTERN_MAX) throw new UsageError(`a pattern is 1 to 256 bytes, not "${value}"`);
  if (into.length === MAX_PATTERNS) throw new UsageError(`at most 64 patterns each; too many at "${value}"`);
  into.push(value);
}

function parse(argv) {
  const o = { dir: null, include: [], exclude: [], json: false, list: false, noExclude: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') return null;
    if (a === '--json' || a === '--list') o[a.slice(2)] = true;
    else if (a === '--no-exclude') o.noExclude = true;
    else if (a === '--include' || a === '--exclude') pattern(a, argv[++i], o[a.slice(2)]);
    else if (a.startsWith('-') && a !== '-') throw new UsageError(`unknown option "${a}"`);
    else if (o.dir !== null) throw new UsageError(`one folder only; extra argument "${a}"`);
    else o.dir = a;
  }
  if (o.json && o.list) throw new UsageError('choose one of --json and "--list"');
  return o;
}

function main(argv) {
  if (argv[0] !== 'fingerprint') {
    process.stderr.write(`usage: ${PROG} [DIR] [options] (see --help)\n`);
    return 2;
  }
  let o;
  try { o = parse(argv.slice(1)); } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${PROG}: ${e.message} (see ${PROG} --help)\n`);
    return 2;
  }
  if (!o) {
    process.stdout.write(`usage: ${PROG} [DIR] [--include GLOB]... [--exclude GLOB]... [--no-exclude] [--json | --list]\n`);
    return 0;
  }
  const include = o.include.length ? o.include : DEFAULT_INCLUDE;
  const exclude = o.exclude.length || o.noExclude ? o.exclude : DEFAULT_EXCLUDE;
  let fp;
  try { fp = compute(o.dir ?? '.', include, exclude); } catch (e) {
    if (!(e instanceof FingerprintError)) throw e;
    process.stderr.write(`${PROG}: ${e.message}\n`);
    return 1;
  }
  if (o.json) {
    process.stdout.write(`${json({ algorithm: ALGORITHM, include, exclude, files: fp.files, hash: fp.hash })}\n`);
    return 0;
  }
  const parts = [];
  for (const r of o.list ? fp.records : []) {
    const esc = [];
    for (const b of r.path) esc.push(b < 0x20 || b === 0x7f || b === 0x5c ? Buffer.from(`\\x${b.toString(16).padStart(2, '0')}`) : Buffer.from([b]));
    parts.push(Buffer.from(`${r.type} ${r.digest} `), ...esc, Buffer.from('\n'));
  }
  parts.push(Buffer.from(`${fp.hash} (${fp.files} file${fp.files === 1 ? '' : 's'})\n`));
  process.stdout.write(Buffer.concat(parts));
  return 0;
}

process.exitCode = main(process.argv.slice(2));
