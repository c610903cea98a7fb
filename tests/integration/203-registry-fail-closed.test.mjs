// 203: a configured PostgreSQL registry that cannot be reached fails
// closed. The daemon refuses to start, a claim is refused (exit 1), each
// naming host and port and libpq's error, never the password; a server
// killed mid-run refuses the next claim the same way, and the daemon's
// lease ops answer `registry-down` naming the server and pg_isready. WTPROXY_REGISTRY_OPTIONAL=1
// is the one way on: the daemon runs on the embedded store and says so
// loudly (and in its ping reply), a claim falls back to the daemon's store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { makeWorktrees, startDaemon, cli, control, sanitizerClean } from './lib/registry.mjs';
import { startProxy } from './lib/wtproxy.mjs';
import { startPostgres } from './lib/pg.mjs';
import { runToExit } from './lib/conformance.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

async function closedPort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// Ask the daemon on tmp.control for ping, through a raw socket.
function ping(control) {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(control);
    let buf = '';
    c.on('connect', () => c.write('{"op":"ping"}\n'));
    c.on('data', (d) => { buf += d; if (buf.includes('\n')) { c.end(); resolve(JSON.parse(buf)); } });
    c.on('error', reject);
  });
}

test('server down before: the daemon does not start; the claim is refused; both name host and port, mask the password', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const port = await closedPort();
  const uri = `postgresql://wt:s3cr3t-pw@127.0.0.1:${port}/wtproxy_devtools`;
  const serve = await runToExit(wtproxyBin, ['serve', '--listen', '127.0.0.1:0', '--control', tmp.control,
    '--state', tmp.state, '--registry', uri], { ms: 20000 });
  sanitizerClean(assert, serve.stderr);
  assert.notEqual(serve.code, 0, 'the daemon refused to start');
  assert.match(serve.stderr, new RegExp(`host 127\\.0\\.0\\.1 port ${port}`));
  assert.match(serve.stderr, /Connection refused/);
  assert.match(serve.stderr, /WTPROXY_REGISTRY_OPTIONAL=1/);
  assert.doesNotMatch(serve.stderr, /s3cr3t/);
  assert.match(serve.stderr, /wt:\*\*\*@/);

  for (const reg of [uri, `host=127.0.0.1 port=${port} password='s3cr3t pw' dbname=x`]) {
    const r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.a, env: { WTPROXY_REGISTRY: reg } });
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`cannot claim emu: the registry at host 127\\.0\\.0\\.1 port ${port}`));
    assert.doesNotMatch(r.stderr, /s3cr3t/);
  }
});

test('the registry key of the config file, and PG* variables, select the store', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const fs = await import('node:fs');
  const conf = `${tmp.root}/wtproxy.conf`;
  fs.writeFileSync(conf, `# test\nregistry = ${pg.uri('postgres')}\n`);
  let r = await cli(tmp, ['claim', 'via-config', '--ttl', '1m'], { cwd: tmp.wt.a, env: { WTPROXY_CONFIG: conf } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /PostgreSQL store/);
  r = await cli(tmp, ['claim', 'via-pgenv', '--ttl', '1m'], { cwd: tmp.wt.a, env: { ...pg.env, WTPROXY_REGISTRY: 'postgresql://' } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(pg.psql("SELECT string_agg(id, ',' ORDER BY id) FROM wtproxy.leases"), 'via-config,via-pgenv');
  const px = await startProxy(t, ['--control', tmp.control, '--state', tmp.state, '--config', conf]);
  const p = await ping(tmp.control);
  assert.equal(p.store, 'postgresql');
  assert.equal(p.registry_ok, true);
  sanitizerClean(assert, px.stderr());
});

test('server killed mid-run: the next claim is refused naming the host; the daemon reports it', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a', 'b']);
  const env = { WTPROXY_REGISTRY: pg.uri('postgres') };
  const px = await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  let r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  pg.kill('SIGKILL');
  await new Promise((res) => setTimeout(res, 300));
  r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.b, env });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 1, 'refused: never falls back silently');
  assert.match(r.stderr, new RegExp(`host 127\\.0\\.0\\.1 port ${pg.port}`));
  // Through the daemon (its own connection to the server): registry-down,
  // naming the server and how to tell when it answers, for a raw client
  // and for the CLI, whose release says so too (not "nobody holds").
  const fix = `pg_isready -h 127\\.0\\.0\\.1 -p ${pg.port} tells when`;
  for (const req of [{ op: 'claim', id: 'emu', worktree: tmp.wt.b, pid: 0, ttl_ms: 60000 },
    { op: 'release', id: 'emu', worktree: tmp.wt.b }, { op: 'leases' }]) {
    const said = await control(tmp.control, req);
    assert.equal(said.error, 'registry-down', JSON.stringify(said));
    assert.match(said.message, new RegExp(`host 127\\.0\\.0\\.1 port ${pg.port}`), said.message);
    assert.match(said.message, new RegExp(fix), said.message);
  }
  r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.b });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`^wtproxy: cannot claim emu: claims are refused while the registry is down: .*${fix}`, 'm'));
  r = await cli(tmp, ['release', 'emu'], { cwd: tmp.wt.b });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`^wtproxy: cannot release emu: claims are refused while the registry is down: .*${fix}`, 'm'));
  // A registration change cannot be mirrored: the daemon says so, and keeps routing locally.
  r = await cli(tmp, ['register', '--port', '5999', '--ttl', '1m'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  const p = await ping(tmp.control);
  assert.equal(p.store, 'postgresql');
  assert.equal(p.registry_ok, false);
  assert.match(p.registry_error, new RegExp(`port ${pg.port}`));
  assert.match(px.stderr(), /WARNING: other machines do not see this machine's dev servers/);
  // ls says so too, under its table.
  r = await cli(tmp, ['ls'], { cwd: tmp.wt.a });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /5999/);
  assert.match(r.stderr, new RegExp(`WARNING: the registry does not answer \\(.*port ${pg.port}.*\\): other machines' servers are not listed.*routing goes on.*pg_isready -h 127\\.0\\.0\\.1 -p ${pg.port}`));
  // doctor's fix is to make the registry answer, not to run `wtproxy leases` again.
  r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env, ms: 30000 });
  const leases = JSON.parse(r.stdout).checks.find((c) => c.name === 'leases');
  assert.equal(leases.status, 'problem', JSON.stringify(leases));
  assert.match(leases.fix, new RegExp(`registry at 127\\.0\\.0\\.1:${pg.port} does not answer: start it.*pg_isready -h 127\\.0\\.0\\.1 -p ${pg.port}.*routing goes on`));
});

// A user test: with the registry down, the claim's refusal gives
// WTPROXY_REGISTRY_OPTIONAL=1 as the way on, and pasted it was refused
// again by the daemon, which has the registry. Now the CLI asks the
// daemon for its embedded store, as its warning says.
test('registry down mid-run: WTPROXY_REGISTRY_OPTIONAL=1, as the refusal says, claims on the daemon\'s embedded store', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a', 'b']);
  const env = { WTPROXY_REGISTRY: pg.uri('postgres') };
  await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  pg.kill('SIGKILL');
  await new Promise((res) => setTimeout(res, 300));
  let r = await cli(tmp, ['claim', 'x1', '--ttl', '5m'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /to go on without it \(claims then hold on this machine only\): WTPROXY_REGISTRY_OPTIONAL=1/);
  const optional = { ...env, WTPROXY_REGISTRY_OPTIONAL: '1' };
  r = await cli(tmp, ['claim', 'x1', '--ttl', '5m'], { cwd: tmp.wt.a, env: optional });
  sanitizerClean(assert, r.stderr);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /WARNING: WTPROXY_REGISTRY_OPTIONAL=1: using this machine's embedded store/);
  assert.match(r.stderr, /^wtproxy: claimed x1 for 5m \(embedded store\)$/m);
  r = await cli(tmp, ['claim', 'x1', '--ttl', '5m'], { cwd: tmp.wt.b, env: optional });
  assert.equal(r.code, 1, `one holder on this machine: ${r.stderr}`);
  r = await cli(tmp, ['leases', '--json'], { cwd: tmp.wt.b, env: optional });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).map((l) => [l.id, l.worktree]), [['x1', tmp.wt.a]]);
  r = await cli(tmp, ['release', 'x1'], { cwd: tmp.wt.a, env: optional });
  assert.equal(r.code, 0, r.stderr);
});

test('a registry connection lost and found again: the daemon says once that it answers again', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const px = await startDaemon(t, tmp, ['--registry', pg.uri('postgres')]);
  pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wtproxy'");
  // The register's mirror meets the cut connection; the ls after it reconnects.
  for (const args of [['register', '--port', '5999', '--ttl', '1m'], ['ls'], ['ls']]) {
    const r = await cli(tmp, args, { cwd: tmp.wt.a });
    assert.equal(r.code, 0, r.stderr);
  }
  const again = new RegExp(`registry: PostgreSQL postgresql://postgres@127\\.0\\.0\\.1:${pg.port}/postgres answers again`, 'g');
  for (let i = 0; i < 100 && !again.test(px.stderr()); i++) await new Promise((res) => setTimeout(res, 50));
  assert.equal(px.stderr().match(again)?.length, 1, px.stderr());
  // And mirrors again what it missed meanwhile: other machines see the registration.
  let p;
  for (let i = 0; i < 100 && !(p = await ping(tmp.control)).registry_ok; i++) await new Promise((res) => setTimeout(res, 50));
  assert.equal(p.registry_ok, true, JSON.stringify(p));
  assert.equal(pg.psql("SELECT entry->>'backend' FROM wtproxy.backends"), '127.0.0.1:5999');
});

test('the daemon on another store than this shell: doctor says so; a changed registry on SIGHUP is named', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const fs = await import('node:fs');
  const shellConf = `${tmp.root}/shell.conf`, daemonConf = `${tmp.root}/daemon.conf`;
  fs.writeFileSync(shellConf, `registry = ${pg.uri('postgres')}\n`);
  fs.writeFileSync(daemonConf, '# no registry: the embedded store\n');
  const px = await startDaemon(t, tmp, ['--config', daemonConf]);
  const r = await cli(tmp, ['doctor', '--json'], { cwd: tmp.wt.a, env: { WTPROXY_CONFIG: shellConf }, ms: 30000 });
  const daemon = JSON.parse(r.stdout).checks.find((c) => c.name === 'daemon');
  assert.equal(daemon.status, 'problem', JSON.stringify(daemon));
  assert.match(daemon.detail, new RegExp(`runs on the embedded store, but commands in this shell use the PostgreSQL registry postgresql://postgres@127\\.0\\.0\\.1:${pg.port}/postgres \\(\`registry =\` in ${shellConf}`));
  assert.match(daemon.detail, /other machines do not see this one's servers/);
  assert.match(daemon.fix, new RegExp(`stop --daemon && setsid -f \\S+ serve --config ${shellConf}`));
  // The daemon's config gets the registry: SIGHUP keeps the store, and says how to switch.
  fs.writeFileSync(daemonConf, `registry = ${pg.uri('postgres')}\n`);
  px.proc.kill('SIGHUP');
  for (let i = 0; i < 100 && !/reloaded/.test(px.stderr()); i++) await new Promise((res) => setTimeout(res, 50));
  assert.match(px.stderr(), new RegExp(`registry changed in ${daemonConf}: takes effect only when the daemon restarts: \\S+ stop --daemon && setsid -f \\S+ serve .*--config ${daemonConf}`));
  assert.equal((await ping(tmp.control)).store, 'embedded');
  sanitizerClean(assert, px.stderr());
});

test('WTPROXY_REGISTRY_OPTIONAL=1: the daemon runs on the embedded store, loudly; the claim falls back', async (t) => {
  const tmp = makeWorktrees(t, ['a', 'b']);
  const port = await closedPort();
  const uri = `postgresql://127.0.0.1:${port}/wtproxy_devtools`;
  const px = await startDaemon(t, tmp, ['--registry', uri], { env: { WTPROXY_REGISTRY_OPTIONAL: '1' } });
  assert.match(px.stderr(), /WARNING: .*cannot be reached/);
  assert.match(px.stderr(), /running on the EMBEDDED store/);
  const p = await ping(tmp.control);
  assert.equal(p.store, 'embedded');
  assert.equal(p.registry_optional, true);
  assert.match(p.registry_error, new RegExp(`port ${port}`));
  const env = { WTPROXY_REGISTRY: uri, WTPROXY_REGISTRY_OPTIONAL: '1' };
  let r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.a, env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /WARNING: .*embedded store/);
  assert.match(r.stderr, /claimed emu .*embedded store/);
  r = await cli(tmp, ['claim', 'emu', '--ttl', '1m'], { cwd: tmp.wt.b, env });
  assert.equal(r.code, 1, 'still one holder on this machine');
});
