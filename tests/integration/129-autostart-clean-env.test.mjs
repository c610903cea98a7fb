// 129: a daemon that a command starts (autostart) gets a clean environment,
// not that command's, so the servers it starts from another worktree's
// .wtproxy never run with the first worktree's variables. Two linked
// worktrees, each with a .wtproxy whose server (fixtures/env-server.mjs)
// answers with its environment; no daemon. From wt-b, a `wtproxy run` with
// what an activated virtualenv, npm and a Playwright webServer.env give it
// (FOO, VIRTUAL_ENV, npm_config_local_prefix, PLAYWRIGHT_TEST, PGDATABASE,
// PATH=<wt-b>/.venv/bin:<wt-b>/node_modules/.bin:$PATH, where .venv/bin
// has a `node` of wt-b's own) starts the daemon. Then a request from wt-a
// starts wt-a's server: it has none of them, no PATH entry inside wt-b
// (its `node` is the machine's, not wt-b's), and HOME. The daemon's own
// environment has only the allowed names, and its log says it was started
// clean, by whom, and which names it dropped, never their values. wt-b's
// own server, the run's CMD, keeps that run's environment. Every command
// that starts the daemon does it so: `wtproxy mcp`'s restart tool and
// `wtproxy claim` too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeWorktrees, startRun, autostartEnv, curlFrom, lsJson, sanitizerClean, pidAlive, cli, control } from './lib/registry.mjs';
import { startMcp, initialize } from './lib/mcp.mjs';
import { freePort } from './lib/whoami.mjs';
import { wtproxyBin } from './lib/wtproxy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const envServer = path.join(here, 'fixtures', 'env-server.mjs');

// The names a daemon the CLI starts may have (cli/daemon_env.c's list).
const allowed = [/^(HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|TZ|TMPDIR|PATH)$/, /^LC_/, /^XDG_\w+_(HOME|DIRS)$/,
  /^XDG_RUNTIME_DIR$/, /^(http|https|no|all)_proxy$/i, /^(SSL_CERT_FILE|SSL_CERT_DIR|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE)$/,
  /^WTPROXY_(CONTROL|CONFIG|REGISTRY|REGISTRY_OPTIONAL|MACHINE|LOG_MAX_BYTES|BIN)$/, /^[A-Z]*SAN_OPTIONS$/];

// The names in the environment of pid that the list does not allow.
function disallowed(pid) {
  return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean)
    .map((kv) => kv.slice(0, kv.indexOf('='))).filter((n) => !allowed.some((re) => re.test(n)));
}

// The process group of pid (field 5 of /proc/PID/stat).
function pgid(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

test('an autostarted daemon gives no server the starting command\'s environment', async (t) => {
  const groups = []; // the servers' process groups the daemon started: they outlive it
  t.after(() => { for (const g of groups) try { process.kill(-g, 'SIGKILL'); } catch { /* gone */ } });
  const tmp = makeWorktrees(t, ['a', 'b']);
  const front = await freePort();
  const env = autostartEnv(t, tmp);
  fs.writeFileSync(env.WTPROXY_CONFIG, `listen = 127.0.0.1:${front}\n`);
  const start = `node ${envServer} {port}`;
  for (const wt of Object.values(tmp.wt)) fs.writeFileSync(path.join(wt, '.wtproxy'), `start = ${start}\nfront = ${front}\n`);
  // wt-b's own node (a virtualenv's or node_modules' tool): it says so.
  const wtb = tmp.wt.b;
  for (const dir of ['.venv/bin', 'node_modules/.bin']) fs.mkdirSync(path.join(wtb, dir), { recursive: true });
  const shim = path.join(wtb, '.venv', 'bin', 'node');
  fs.writeFileSync(shim, `#!/bin/sh\nSHIM=wt-b exec ${process.execPath} "$@"\n`, { mode: 0o755 });
  const nodeDir = path.dirname(process.execPath);
  assert.ok(process.env.PATH.split(':').includes(nodeDir), `node's folder ${nodeDir} is on the test's PATH`);
  const runEnv = {
    ...env, FOO: 'foo-of-wt-b', VIRTUAL_ENV: path.join(wtb, '.venv'), PLAYWRIGHT_TEST: '1',
    npm_config_local_prefix: wtb, PGDATABASE: 'shop_b', WTPROXY_BIN: wtproxyBin,
    PATH: `${path.join(wtb, '.venv', 'bin')}:${path.join(wtb, 'node_modules', '.bin')}:${process.env.PATH}`,
  };

  const run = startRun(t, tmp, { cwd: wtb, env: runEnv, command: start.split(' '), stopSignal: 'SIGTERM' });
  await run.ready;
  const m = /wtproxy: started the daemon \(pid (\d+)\); log: (\S+)/.exec(run.stderr());
  assert.ok(m, run.stderr());
  const daemon = Number(m[1]);
  // wt-b's own server is the run's CMD: that run's environment, wt-b's node.
  const b = await curlFrom(wtb, front);
  assert.equal(b.status, 200, b.body);
  const benv = JSON.parse(b.body).env;
  assert.equal(benv.FOO, 'foo-of-wt-b');
  assert.equal(benv.SHIM, 'wt-b');

  // wt-a's server, started by the daemon: nothing of wt-b's run.
  const a = await curlFrom(tmp.wt.a, front);
  assert.equal(a.status, 200, a.body);
  const answer = JSON.parse(a.body);
  assert.equal(answer.worktree, tmp.wt.a);
  groups.push(pgid(answer.pid));
  const aenv = answer.env;
  for (const name of ['FOO', 'VIRTUAL_ENV', 'PLAYWRIGHT_TEST', 'npm_config_local_prefix', 'PGDATABASE', 'SHIM']) {
    assert.equal(aenv[name], undefined, `wt-a's server has ${name}=${aenv[name]}`);
  }
  const apath = aenv.PATH.split(':');
  assert.deepEqual(apath.filter((p) => p === wtb || p.startsWith(`${wtb}/`)), [], aenv.PATH);
  assert.ok(apath.includes(nodeDir), `PATH outside the worktree kept: ${aenv.PATH}`);
  assert.equal(aenv.HOME, process.env.HOME);

  // The daemon itself: only allowed names.
  assert.deepEqual(disallowed(daemon), []);
  const names = fs.readFileSync(`/proc/${daemon}/environ`, 'utf8');
  assert.match(names, /(^|\0)HOME=/);
  assert.match(names, /(^|\0)PATH=/);

  // Its log: started clean, by whom, the dropped names, never their values.
  const log = fs.readFileSync(m[2], 'utf8');
  const line = log.split('\n').find((l) => l.includes('clean environment'));
  assert.ok(line, log);
  assert.match(line, new RegExp(`^wtproxy: autostarted by \`wtproxy run\` \\(pid ${run.pid}, cwd ${wtb}\\) with a clean environment`));
  for (const name of ['FOO', 'VIRTUAL_ENV', 'PLAYWRIGHT_TEST', 'npm_config_local_prefix', 'PGDATABASE']) {
    assert.match(line, new RegExp(`\\b${name}\\b`));
  }
  assert.match(line, new RegExp(`2 entries of PATH \\(or WTPROXY_BIN, GOPATH...\\) inside ${wtb}`));
  assert.doesNotMatch(log, /foo-of-wt-b|shop_b/);
  assert.match(line, /wtproxy help wtproxy-file/);
  sanitizerClean(assert, log);
  assert.ok(pidAlive(daemon));
  assert.equal((await lsJson(tmp)).length, 2);
});

for (const starter of ['mcp', 'claim']) {
  test(`\`wtproxy ${starter}\` starts the daemon with the clean environment too`, async (t) => {
    const tmp = makeWorktrees(t, ['b']);
    const env = { ...autostartEnv(t, tmp), FOO: 'foo-of-wt-b', VIRTUAL_ENV: path.join(tmp.wt.b, '.venv') };
    if (starter === 'mcp') {
      const mcp = startMcp(t, { cwd: tmp.wt.b, env: { ...env, WTPROXY_CONTROL: tmp.control } });
      await initialize(mcp);
      const r = await mcp.call(1, 'restart'); // nothing to restart; the daemon now runs
      assert.match(r.content[0].text, /so this call started one \(pid \d+/, r.content[0].text);
      await mcp.end();
    } else {
      const r = await cli(tmp, ['claim', 'emu', '--', 'true'], { cwd: tmp.wt.b, env });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /started the daemon \(pid \d+\)/);
    }
    const daemon = (await control(tmp.control, { op: 'ping' })).pid;
    assert.deepEqual(disallowed(daemon), []);
    const log = fs.readFileSync(path.join(tmp.root, 'state', 'wtproxy', 'daemon.log'), 'utf8');
    assert.match(log, new RegExp(`^wtproxy: autostarted by \`wtproxy ${starter}\` \\(pid \\d+, cwd ${tmp.wt.b}\\) with a clean environment, not that command's: dropped .*\\bFOO\\b`, 'm'));
    assert.doesNotMatch(log, /foo-of-wt-b/);
  });
}
