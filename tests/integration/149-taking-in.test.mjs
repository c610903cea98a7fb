// 149: a server still taking an edit in is waited for, not restarted. A
// Next 16 app under `next dev` (Turbopack, then webpack), started by the
// daemon from its .wtproxy (so restarted when found stale), behind a
// daemon with stale_grace 0: after every edit the server reports the older
// fingerprint until next dev has recompiled, which always outlasts that
// grace, and only its /__whoami's taking_in keeps the daemon from
// restarting it (without it: a restart at every edit, 3-4 s each here).
// 1. /__whoami asked straight after an edit says taking_in (since a time
//    after the edit's), and stops saying it once the edit is taken in;
// 2. edits, each followed at once by a request through wtproxy, are
//    served the new page by the same next dev process: its pid unchanged,
//    and no restart in its log (`wtproxy logs`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeWorktrees, startDaemon, cli, waitFor, sanitizerClean, curlFrom } from './lib/registry.mjs';
import { page, headingOf, next16Files, next16Modules, linkNext16, writeApp, entryOf, servingPid } from './lib/next-app.mjs';
import { diskFingerprint, patternArgs } from './lib/whoami.mjs';
import { killUnder } from '../e2e/lib/shop.mjs';

const EDITS = 5;
const RESTART_LINE = /the daemon asked to restart/;

// The app under `next dev EXTRA` in a worktree of its own, started by a
// daemon with stale_grace 0: steps 1 and 2.
async function takenInNotRestarted(t, extra) {
  assert.ok(fs.existsSync(path.join(next16Modules, 'next/package.json')),
    `${next16Modules} has no next: scripts/bootstrap installs it (cd tests/next16 && npm ci)`);
  const t0 = Date.now();
  const tmp = makeWorktrees(t, []);
  t.after(() => killUnder(tmp.root)); // next dev's processes, if any are left
  writeApp(tmp.repo, next16Files());
  const px = await startDaemon(t, tmp, ['--stale-grace', '0ms'], { env: { NEXT_TELEMETRY_DISABLED: '1' } });
  const r = await cli(tmp, ['init', '--apply', '--front', String(px.port)], { cwd: tmp.repo });
  assert.equal(r.code, 0, r.stderr);
  const declared = path.join(tmp.repo, '.wtproxy');
  fs.writeFileSync(declared, fs.readFileSync(declared, 'utf8').replace('next dev', ['next dev', ...extra].join(' ')));
  git(tmp.repo, 'add', '-A');
  git(tmp.repo, 'commit', '-q', '-m', 'adopt wtproxy');
  const a = path.join(tmp.root, 'wt-a');
  tmp.wt.a = a;
  git(tmp.repo, 'worktree', 'add', '-q', a, '-b', 'a');
  linkNext16(a);
  fs.writeFileSync(path.join(a, 'app/page.js'), page('Shop a'));

  try {
    // The daemon starts next dev from the .wtproxy at the first request.
    const first = await curlFrom(a, px.port, '/', { timeout: 150000 });
    assert.equal(first.status, 200, first.body);
    assert.equal(headingOf(first.body), 'Shop a');
    const logs = () => cli(tmp, ['logs', '--front', String(px.port)], { cwd: a });
    const started = await logs();
    assert.match(started.stdout + started.stderr, extra.includes('--webpack') ? /\(webpack\)/ : /\(Turbopack\)/);
    const pid = await servingPid(a, px.port);
    const direct = `http://127.0.0.1:${(await entryOf(tmp, a)).port}/__whoami`;
    t.diagnostic(`next dev up, its page compiled: ${Date.now() - t0} ms`);

    // 1. Straight after an edit, the server says it is taking it in.
    const edited = Date.now();
    fs.writeFileSync(path.join(a, 'app/page.js'), page('Shop a v0'));
    const taking = await (await fetch(direct)).json();
    assert.ok(taking.taking_in, `taking_in after an edit: ${JSON.stringify(taking)}`);
    // (a file's ctime is the kernel's coarse clock: up to a tick behind)
    assert.ok(Date.parse(taking.taking_in.since) >= edited - 20, `since ${taking.taking_in.since} is after the edit`);
    const disk = await diskFingerprint(a, patternArgs(taking.fingerprint.include, taking.fingerprint.exclude));
    assert.notEqual(taking.fingerprint.hash, disk.hash, 'its fingerprint is still the older code\'s');
    await waitFor(async () => {
      const w = await (await fetch(direct)).json();
      return w.fingerprint.hash === disk.hash && !('taking_in' in w);
    }, 60000, 'the edit taken in: the disk\'s fingerprint, no taking_in');

    // 2. Edits served new by the same process, held meanwhile.
    const held = [];
    for (let i = 1; i <= EDITS; i++) {
      fs.writeFileSync(path.join(a, 'app/page.js'), page(`Shop a v${i}`));
      const got = await curlFrom(a, px.port, '/');
      held.push(got.ms);
      assert.equal(got.status, 200, `edit ${i}: ${got.body}`);
      assert.equal(headingOf(got.body), `Shop a v${i}`, `edit ${i}: the new page, not the old`);
    }
    t.diagnostic(`edit -> new page: ${held.join(', ')} ms`);
    assert.equal(await servingPid(a, px.port), pid, 'served by the same next dev process');
    const after = await logs();
    assert.doesNotMatch(after.stdout + after.stderr, RESTART_LINE, 'its wrapper never restarted it');
    assert.equal((await entryOf(tmp, a)).whoami.state, 'verified');
    sanitizerClean(assert, px.stderr());
    t.diagnostic(`whole test: ${Date.now() - t0} ms`);
  } finally {
    await px.stop('SIGKILL');
    await waitFor(() => killUnder(tmp.root) === 0, 5000, 'the servers the daemon started, stopped');
  }
}

test('next dev under Turbopack taking an edit in says so, and is waited for past stale_grace instead of restarted',
  (t) => takenInNotRestarted(t, []));

// webpack: taking_in from the watcher's report of the edit (or, for an
// ask that comes first, from the write of a file a compile read) until
// the recompile's fingerprint is published.
test('next dev --webpack taking an edit in says so, and is waited for past stale_grace instead of restarted',
  (t) => takenInNotRestarted(t, ['--webpack']));
