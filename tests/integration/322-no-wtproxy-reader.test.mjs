// 322: a daemon that could not make its .wtproxy reader at its start (here
// it cannot read /proc/self/exe, the wtproxy that runs each server:
// fixtures/no-self-exe.c in LD_PRELOAD) says so in its log and runs on. The
// ops that need the reader, `services` and `start`, answer `unsupported`
// (not `internal`: nothing failed at that moment), naming what this
// daemon does not do and the two ways on: restart it, or `wtproxy run`;
// the dashboard's start button gets the same refusal as a 501.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, declaring, startPreloadedDaemon, wtServer, control, sanitizerClean } from './lib/registry.mjs';
import { request, token } from './lib/ctl.mjs';

const WAYS_ON = 'it runs without its .wtproxy reader (its log said why when it started); restart it to have ' +
  'them (stop it, then wtproxy serve), or run your server yourself: wtproxy run -- CMD {port}';

test('services and start on a daemon without its .wtproxy reader: unsupported, naming the ways on', async (t) => {
  const tmp0 = makeWorktrees(t, ['a']);
  const px = await startPreloadedDaemon(t, tmp0, 'no-self-exe', {});
  assert.match(px.stderr(), /no on-demand starts from \.wtproxy files: cannot read \/proc\/self\/exe, .*Permission denied/);
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`, `front = ${px.port}`], ['b']);

  const services = await control(tmp0.control, { op: 'services', worktree: tmp.wt.b });
  assert.equal(services.error, 'unsupported', JSON.stringify(services));
  assert.equal(services.message, `this daemon reads no .wtproxy files: ${WAYS_ON}`);
  const start = await control(tmp0.control, { op: 'start', worktree: tmp.wt.b, front: px.port });
  assert.equal(start.error, 'unsupported', JSON.stringify(start));
  assert.equal(start.message, `this daemon starts no servers on demand: ${WAYS_ON}`);

  const host = `127.0.0.1:${px.port}`;
  const button = await request(px.port, 'POST', '/__wtproxy/api/start', {
    Host: host, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin',
    'Content-Type': 'application/json', 'X-Wtproxy-Token': await token(px.port),
  }, JSON.stringify({ worktree: tmp.wt.b, front: px.port }));
  assert.equal(button.status, 501, button.body);
  assert.equal(JSON.parse(button.body).error, 'unsupported');
  assert.equal(JSON.parse(button.body).message, start.message);
  await px.stop('SIGTERM');
  sanitizerClean(assert, px.stderr());
});
