// pg.mjs - a private PostgreSQL server for one test: Debian's postgresql
// binaries, a fresh cluster in a temp folder (initdb, trust auth for the
// superuser "postgres"), listening on 127.0.0.1 at a port it picks and on a
// Unix socket in that folder. As root, the cluster is owned by and run as
// the `postgres` user (initdb refuses root). Stopped by pid, then removed,
// in one after() hook: removed first, a server still writing its WAL made
// the removal fail, which skipped the stop, and the test file waited for
// the server for ever.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { removeQuietly } from './cleanup.mjs';

// The newest /usr/lib/postgresql/<major>/bin.
export function pgBinDir() {
  const base = '/usr/lib/postgresql';
  const majors = fs.existsSync(base) ? fs.readdirSync(base).filter((d) => /^\d+$/.test(d)) : [];
  if (majors.length === 0) throw new Error('PostgreSQL is not installed: run scripts/bootstrap (Debian package postgresql)');
  return path.join(base, majors.sort((a, b) => b - a)[0], 'bin');
}

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// Spawn options that run a PostgreSQL binary as the cluster's owner:
// postgres when we are root. Set directly (not through runuser), so that
// the pid we signal is the server's own.
function ownerOpts() {
  if (process.getuid() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }));
  return { uid: id('-u'), gid: id('-g'), env: { ...process.env, HOME: '/var/lib/postgresql' } };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Start a server; resolves once it accepts connections. Returns
// { host, port, socketDir, user, uri(db), env, psql(sql, {db}), stop(),
//   kill(sig), pid }.
export async function startPostgres(t, { settings = {} } = {}) {
  const bin = pgBinDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wtproxy-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid() === 0) execFileSync('chown', ['postgres:', dir]);
  let pg = null;
  t.after(async () => {
    if (pg) await pg.stop();
    removeQuietly(t, dir);
  });

  const owner = ownerOpts();
  execFileSync(path.join(bin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir, ...owner });

  const port = await freePort();
  const conf = { listen_addresses: '127.0.0.1', unix_socket_directories: dir, fsync: 'off',
    synchronous_commit: 'off', full_page_writes: 'off', max_connections: '100', ...settings };
  const cargs = Object.entries(conf).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  const proc = spawn(path.join(bin, 'postgres'), ['-D', data, '-p', String(port), ...cargs],
    { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir, ...owner });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((r) => proc.on('exit', r));
  let running = true;
  proc.on('exit', () => { running = false; });

  pg = {
    host: '127.0.0.1', port, socketDir: dir, user: 'postgres', pid: proc.pid,
    get log() { return log; },
    uri: (db = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${db}`,
    env: { PGHOST: '127.0.0.1', PGPORT: String(port), PGUSER: 'postgres', PGDATABASE: 'postgres' },
    // One statement through psql: its rows, unaligned, tuples only.
    psql(sql, { db = 'postgres' } = {}) {
      return execFileSync('psql', ['-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
        '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', db, '-c', sql],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    },
    kill(sig = 'SIGKILL') { if (running) process.kill(proc.pid, sig); },
    // A fast shutdown (SIGINT): clients are disconnected. One that has not
    // ended in 10 s is killed, so that no test waits on it for ever.
    async stop() {
      if (!running) return;
      process.kill(proc.pid, 'SIGINT');
      const timer = setTimeout(() => { if (running) process.kill(proc.pid, 'SIGKILL'); }, 10000);
      await exited;
      clearTimeout(timer);
    },
  };

  for (let i = 0; ; i++) {
    try {
      pg.psql('select 1');
      return pg;
    } catch (e) {
      if (!running || i > 200) throw new Error(`PostgreSQL did not start: ${log || e.message}`);
      await sleep(50);
    }
  }
}

// The stamp `wtproxy db claim` gives a database of worktree wt on machine
// (registry/CLAIMS.md, "Owner"): with the identity of wt's folder, its
// inode and birth time, as host_worktree_identity writes it.
export function dbStamp(machine, wt, field) {
  const st = fs.statSync(wt, { bigint: true });
  const ns = st.birthtimeNs;
  const id = `${st.ino}.${ns / 1000000000n}.${String(ns % 1000000000n).padStart(9, '0')}`;
  return `wtproxy:${machine}:${id}:${wt}|${field}`;
}
