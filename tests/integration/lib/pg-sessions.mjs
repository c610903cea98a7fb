// pg-sessions.mjs - real client sessions that stay connected to a test's
// private PostgreSQL (a psql in pg_sleep), under an application_name, so
// that tests can fill max_connections or keep a template in use. Each is
// killed by pid in the test's after() hook; hold() resolves once the server
// lists them all in pg_stat_activity.
import { spawn } from 'node:child_process';
import { waitFor } from './registry.mjs';

export async function hold(t, pg, { db = 'postgres', app, count = 1 }) {
  const procs = [];
  for (let i = 0; i < count; i++) {
    const p = spawn('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', String(pg.port), '-U', 'postgres',
      '-d', db, '-c', 'SELECT pg_sleep(600)'], { stdio: 'ignore', env: { ...process.env, PGAPPNAME: app } });
    procs.push(p);
  }
  const stop = () => { for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM'); };
  t.after(stop);
  await waitFor(() => Number(pg.psql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${app}'`)) === count,
    20000, `${count} sessions of ${app}`);
  return {
    procs,
    // The client's death alone is not noticed by a backend in pg_sleep:
    // end the sessions on the server too.
    async release() {
      stop();
      pg.psql(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '${app}'`);
      await waitFor(() => pg.psql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${app}'`) === '0',
        20000, `${app} sessions gone`);
    },
  };
}
