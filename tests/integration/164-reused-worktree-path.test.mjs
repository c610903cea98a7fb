// 164: a worktree removed and added again at the same path at once, as an
// orchestrator that reuses slot paths does (`git worktree remove --force W
// && git branch -D b && git worktree add -b b W other`). The wrapper looked
// for its worktree's .git once a second, and a new .git was back before it
// looked: the old server ran on in the deleted folder, still registered
// for the path. A Flask app there answered every request 500 and the daemon
// refused each with a 502 whose fixes were all wrong (init --apply,
// restart in the deleted folder, "already served ... stop it first").
// Now the wrapper holds its worktree's folder open from the start and
// stops its server once that folder is deleted, whatever stands at the
// path, saying why; the daemon drops an entry whose process runs in its
// worktree's deleted folder. The next request starts a server in the new
// folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  declaring, startDaemon, wtServer, lsJson, curlFrom, waitFor, pidAlive, sanitizerClean, git,
} from './lib/registry.mjs';

// The wt-server answer of a request placed in cwd: { worktree, pid }.
async function served(cwd, port) {
  const r = await curlFrom(cwd, port);
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body);
}

test('a worktree removed and added again at its path at once: the old server stops, a new one serves the new folder', async (t) => {
  const tmp = declaring(t, [`start = ${process.execPath} ${wtServer} {port}`], ['a']);
  const px = await startDaemon(t, tmp);
  fs.writeFileSync(path.join(tmp.repo, '.wtproxy'),
    `start = ${process.execPath} ${wtServer} {port}\nfront = ${px.port}\n`);
  git(tmp.repo, 'commit', '-qam', 'front');
  // the branch the new worktree gets: other code than a's
  git(tmp.repo, 'checkout', '-q', '-b', 'other');
  fs.writeFileSync(path.join(tmp.repo, 'app.txt'), 'the new task\'s code\n');
  git(tmp.repo, 'add', 'app.txt');
  git(tmp.repo, 'commit', '-qm', 'other');
  git(tmp.repo, 'checkout', '-q', 'main');
  git(tmp.wt.a, 'merge', '-q', '--ff-only', 'main');

  const old = await served(tmp.wt.a, px.port);
  const entry = (await lsJson(tmp)).find((e) => e.worktree === tmp.wt.a);
  t.after(() => {
    if (pidAlive(entry.pid)) try { process.kill(-entry.pid, 'SIGKILL'); } catch { /* gone */ }
  });

  execFileSync('sh', ['-c', `git worktree remove --force ${tmp.wt.a} && git branch -q -D a && ` +
    `git worktree add -q -b a ${tmp.wt.a} other`], { cwd: tmp.repo });
  const readded = Date.now();
  assert.ok(fs.existsSync(path.join(tmp.wt.a, 'app.txt')), 'the new worktree has the other code');

  await waitFor(() => !pidAlive(old.pid) && !pidAlive(entry.pid), 6000,
    `the old server (pid ${old.pid}, wrapper ${entry.pid}) stopped; the daemon's log:\n${px.stderr()}`);
  const took = Date.now() - readded;
  assert.ok(took < 3000, `stopped ${took} ms after the re-add`);
  assert.match(fs.readFileSync(entry.log, 'utf8'),
    /was removed, and the folder at its path now is another \(git worktree remove, then add at the same path\): its server runs in the deleted folder/,
    'the old server\'s log says why it stopped');

  // The next request: a new server, running in the new folder.
  const now = await served(tmp.wt.a, px.port);
  assert.notEqual(now.pid, old.pid);
  assert.equal(fs.readlinkSync(`/proc/${now.pid}/cwd`), tmp.wt.a, 'the new server runs in the new folder');
  const after = (await lsJson(tmp)).filter((e) => e.worktree === tmp.wt.a);
  assert.equal(after.length, 1, JSON.stringify(after));
  assert.notEqual(after[0].pid, entry.pid);
  t.after(() => {
    if (pidAlive(after[0].pid)) try { process.kill(-after[0].pid, 'SIGKILL'); } catch { /* gone */ }
  });
  sanitizerClean(assert, px.stderr());
});
