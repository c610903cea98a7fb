// vite-fp.mjs - the fingerprint the Vite plugin (vite.mjs) and the Next.js
// wrapper (next.mjs) publish, with each selected file's stat signature
// taken AFTER its content was read, so the plugin can tell whether a file
// changed since the last watcher event it saw for it. Loaded as a worker
// thread too: a recompute on a big tree (about 50 ms for 2,000 files) then
// never stalls the dev server's event loop.
import fs from 'node:fs';
import path from 'node:path';
import { isMainThread, parentPort, workerData, Worker } from 'node:worker_threads';
import { compute, globMatch, PATTERN_MAX } from './fingerprint.mjs';

// What changes when a file is written, renamed over or replaced: ctime
// (set by the kernel, not by `touch -d`) and size catch every write but
// one of the same size in the same clock tick as our stat, the "racy
// clean" case that any stat cache has.
export function signature(full) {
  try {
    const st = fs.lstatSync(full, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.mode}`;
  } catch {
    return '';
  }
}

// { files, hash, sigs: [[relative path (UTF-8 string), signature]], late }.
// atStart { since, patterns, loaded } (compute's): the files the server
// reads once, at start (patterns), modified after since (ms) are recorded
// unknown, and listed in late (relative paths); a file of loaded is
// recorded unknown while its contents are not the ones the server loaded,
// and is not listed: the server loads it again.
export function fingerprintWithStats(root, include, exclude, atStart = null) {
  const fp = compute(root, include, exclude, atStart ?? {});
  const prefix = Buffer.from(`${root}/`);
  const sigs = fp.records.map((r) => [r.path.toString(), signature(Buffer.concat([prefix, r.path]))]);
  const pats = (atStart?.patterns ?? []).map((p) => Buffer.from(p));
  const late = fp.records.filter((r) => r.type === 'u' && pats.some((p) => globMatch(p, r.path)))
    .map((r) => r.path.toString()).filter((rel) => !atStart.loaded?.has(rel));
  return { files: fp.files, hash: fp.hash, sigs, late };
}

// patterns ("**/*.js") under the folder root, relative to the checkout
// ("web/**/*.js"); as they are when root is the checkout, is outside it,
// or cannot be written as a literal pattern prefix.
export function underRoot(checkout, root, patterns) {
  let rel = path.relative(checkout, root).split(path.sep).join('/');
  if (rel.startsWith('..') || path.isAbsolute(rel) || /[*?]/.test(rel)) rel = '';
  return patterns.map((all) => {
    const p = `${rel ? `${rel}/` : ''}${all}`;
    return Buffer.byteLength(p) <= PATTERN_MAX ? p : all;
  });
}

// The warning for the files of late (fingerprintWithStats's) not in told
// (a Set, which takes them): they changed after server (its name in the
// log: "this Vite server") started, which reads them at start only; '' when
// there are none.
export function lateWarning(checkout, late, told, server) {
  const fresh = late.filter((rel) => !told.has(rel));
  for (const rel of fresh) told.add(rel);
  if (!fresh.length) return '';
  const them = fresh.length > 1 ? 'them' : 'it';
  return `${fresh.map((rel) => path.join(checkout, rel)).join(', ')} changed after ${server} started, which read ${them} at start only: /__whoami says so, and wtproxy calls the server stale until it restarts: wtproxy restart (or run it with wtproxy run --restart-on-stale)`;
}

// This file as a worker thread, one job at a time: compute({ root,
// include, exclude, atStart }) resolves to fingerprintWithStats's result or
// { error }. A worker is never what keeps the dev server's process alive;
// where none can run, the job runs on the calling thread.
export class FingerprintWorker {
  constructor() {
    this.worker = null;
    this.pending = null;
    try { this.start(); } catch { /* compute() falls back to this thread */ }
  }

  compute(job) {
    try {
      if (!this.worker) this.start();
    } catch {
      try { return Promise.resolve(fingerprintWithStats(job.root, job.include, job.exclude, job.atStart)); } catch (e) { return Promise.resolve({ error: e.message }); }
    }
    return new Promise((resolve) => { this.pending = resolve; this.worker.postMessage(job); });
  }

  start() {
    const w = new Worker(new URL(import.meta.url), { workerData: { wtproxyWhoami: true } });
    w.unref();
    const settle = (r) => { const p = this.pending; this.pending = null; if (p) p(r); };
    w.on('message', settle);
    w.on('error', (e) => { this.worker = null; settle({ error: e.message }); });
    w.on('exit', () => { if (this.worker === w) this.worker = null; settle({ error: 'the fingerprint worker exited' }); });
    this.worker = w;
  }

  close() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
  }
}

if (!isMainThread && workerData?.wtproxyWhoami) {
  parentPort.on('message', ({ root, include, exclude, atStart }) => {
    try {
      parentPort.postMessage(fingerprintWithStats(root, include, exclude, atStart));
    } catch (e) {
      parentPort.postMessage({ error: e.message });
    }
  });
}
