// cpu.mjs - the CPU a round costs, per component: dev servers, wtproxy's
// `wtproxy run` wrappers, the daemon, the test runners (manage.py test,
// Playwright's node), the browsers. Used by tests/e2e/run.mjs.
//
// How: Linux BSD process accounting (acct(2), turned on through Python's
// ctypes: no package needed) writes one record per exiting process with
// its pid, parent pid, command name and CPU time (all its threads'), to
// the kernel's 10 ms; every process of a round exits by its end (the daemon
// is stopped after each round). A record says only a command name (that
// of its last thread to exit: Chromium's are "HangWatcher" and the like),
// and its parent
// as it was at exit (a process killed with its group may have been
// reparented), so a sampler walks /proc every SAMPLE_MS while rounds run
// and names each of our processes once, when first seen, by its command
// line and its parent's name: a `runserver` the daemon started through
// `wtproxy run` is a dev server, not the daemon. A record the sampler never
// saw (it lived less than SAMPLE_MS) takes its name from its command, else
// from its parent's. Processes that descend from none of ours (other users
// of the machine) are left out.
//
// The whoami middleware's fingerprint work runs inside the dev server's
// process and is counted there: it cannot be told apart from outside.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

export const COMPONENTS = ['dev server', 'wtproxy run', 'daemon', 'django tests', 'playwright', 'browser', 'postgres', 'other'];
const SAMPLE_MS = 200;
const RECORD = 64; // struct acct_v3
const AHZ = 100; // acct's ticks per second

// acct(2) on file, or off with null; '' when done, else why not.
function acct(file) {
  const arg = file ? `b${JSON.stringify(file)}` : 'None';
  const r = spawnSync('/usr/bin/python3', ['-c',
    `import ctypes, os, sys\nl = ctypes.CDLL(None, use_errno=True)\nif l.acct(${arg}) != 0: sys.exit(os.strerror(ctypes.get_errno()))`],
  { encoding: 'utf8' });
  return r.status === 0 ? '' : (r.stderr || r.error?.message || `exit ${r.status}`).trim();
}

// comp_t: 3 bits of base-8 exponent, 13 bits of mantissa.
const comp = (v) => (v & 0x1fff) << (3 * (v >> 13));

function records(buf) {
  const out = [];
  for (let o = 0; o + RECORD <= buf.length; o += RECORD) {
    if (buf[o + 1] !== 3) continue; // not a v3 record
    const comm = buf.toString('latin1', o + 48, o + 64).replace(/\0.*$/s, '');
    out.push({ pid: buf.readUInt32LE(o + 16), ppid: buf.readUInt32LE(o + 20), comm,
      cpu: (comp(buf.readUInt16LE(o + 32)) + comp(buf.readUInt16LE(o + 34))) / AHZ });
  }
  return out;
}

// The component a process is by itself: its command line (argv) and comm;
// null when only its parent can say.
function byItself(comm, argv, parentName) {
  const line = argv.join(' ');
  if (/^chrom/.test(comm) || /chrom(e|ium)/.test(path.basename(argv[0] || ''))) return 'browser';
  // before runserver: `wtproxy run -- python3 manage.py runserver` is the wrapper
  if (comm.startsWith('wtproxy') || /wtproxy/.test(path.basename(argv[0] || ''))) {
    if (argv[1] === 'run') return 'wtproxy run';
    if (argv[1] === 'serve') return 'daemon';
    return 'other';
  }
  if (/\brunserver\b/.test(line)) return 'dev server';
  if (/manage\.py test\b/.test(line)) return 'django tests';
  if (comm === 'postgres') return 'postgres';
  // whatever the daemon or a wrapper starts is the server it declares
  if (parentName === 'daemon' || parentName === 'wtproxy run') return 'dev server';
  if (parentName === 'runner') return /\bplaywright\b/.test(line) || comm === 'npx' ? 'playwright' : 'other';
  return null;
}

function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const close = s.lastIndexOf(')');
    const f = s.slice(close + 2).split(' ');
    return { comm: s.slice(s.indexOf('(') + 1, close), ppid: Number(f[1]), start: f[19] };
  } catch { return null; }
}

function argvOf(pid) {
  try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean); } catch { return []; }
}

// A meter for one runner process (root, default this one). start() turns
// accounting on into dir/pacct and starts the sampler; round() returns the
// CPU seconds per component since the last call; stop() turns both off.
export function cpuMeter(dir, root = process.pid) {
  const file = path.join(dir, 'pacct');
  const seen = new Map(); // pid -> { start, comm, name }
  let offset = 0, timer = null, why = '';
  seen.set(root, { start: procStat(root)?.start, comm: 'node', name: 'runner' });

  function sample() {
    const fresh = new Map();
    for (const d of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      const pid = Number(d);
      const st = procStat(pid);
      if (!st) continue;
      const old = seen.get(pid);
      // exec keeps the pid: a process seen between fork and exec (its
      // parent's command line) is named again until it has its own
      if (old && old.start === st.start) {
        if (old.comm !== st.comm || old.name === 'other') {
          old.comm = st.comm;
          old.name = byItself(st.comm, argvOf(pid), old.parent) || old.name;
        }
        continue;
      }
      fresh.set(pid, st);
    }
    // parents first: a name comes from the parent's
    const nameOf = (pid) => {
      const known = seen.get(pid);
      if (known) return known.name;
      const st = fresh.get(pid);
      if (!st) return null;
      fresh.delete(pid);
      const parent = nameOf(st.ppid);
      if (!parent) return null; // not ours
      const name = byItself(st.comm, argvOf(pid), parent) || (parent === 'runner' ? 'other' : parent);
      seen.set(pid, { start: st.start, comm: st.comm, name, parent });
      return name;
    };
    for (const pid of [...fresh.keys()]) nameOf(pid);
  }

  return {
    start() {
      fs.writeFileSync(file, '');
      why = acct(file);
      if (why) return why;
      sample();
      timer = setInterval(sample, SAMPLE_MS);
      return '';
    },
    // { totals, detail }: CPU seconds per component of the processes that
    // exited since the last call, ours only; detail per "component/comm".
    round() {
      const totals = Object.fromEntries(COMPONENTS.map((c) => [c, 0]));
      const detail = {};
      if (why) return { totals, detail };
      sample();
      const buf = fs.readFileSync(file);
      const recs = records(buf.subarray(offset - (offset % RECORD)));
      offset = buf.length;
      const byPid = new Map(recs.map((r) => [r.pid, r]));
      const nameOf = (r, depth = 0) => {
        const known = seen.get(r.pid);
        if (known) return /^chrom/.test(r.comm) ? 'browser' : known.name;
        const parent = seen.get(r.ppid)?.name || (depth < 20 && byPid.has(r.ppid) && byPid.get(r.ppid) !== r ? nameOf(byPid.get(r.ppid), depth + 1) : null);
        if (!parent) return null;
        return byItself(r.comm, [], parent) || (parent === 'runner' ? 'other' : parent);
      };
      for (const r of recs) {
        const name = nameOf(r);
        if (!name || name === 'runner') continue;
        totals[name] += r.cpu;
        detail[`${name}/${r.comm}`] = (detail[`${name}/${r.comm}`] || 0) + r.cpu;
      }
      // the exited are forgotten: their pids may come back as others
      for (const r of recs) if (r.pid !== root) seen.delete(r.pid);
      return { totals, detail };
    },
    stop() {
      clearInterval(timer);
      if (!why) acct(null);
    },
  };
}
