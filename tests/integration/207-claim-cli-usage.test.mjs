// 207: usage of claim, release, leases and db: --help exits 0 with the
// usage on stdout; bad arguments exit 2 with one line naming the problem,
// before any store is asked (no daemon, no registry here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, cli, sanitizerClean } from './lib/registry.mjs';

test('--help of each command: exit 0, usage on stdout; listed in wtproxy --help', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  for (const args of [['claim', '--help'], ['release', '--help'], ['leases', '--help'], ['db', '--help']]) {
    const r = await cli(tmp, args, { cwd: tmp.wt.a });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`usage: wtproxy ${args[0]}`));
  }
  const top = await cli(tmp, ['--help']);
  for (const cmd of ['claim', 'release', 'leases', 'db']) assert.match(top.stdout, new RegExp(`\\n  ${cmd} `));
});

test('bad arguments: exit 2, one line naming the problem', async (t) => {
  const tmp = makeWorktrees(t, ['a']);
  const cases = [
    [['claim'], /give the RESOURCE/],
    [['claim', '--', 'true'], /give the RESOURCE/],
    [['claim', 'emu'], /needs --ttl/],
    [['claim', 'emu', '--ttl', '30'], /--ttl "30" is not a duration/],
    [['claim', 'emu', 'extra', '--ttl', '1m'], /unexpected argument "extra"/],
    [['claim', 'has space', '--ttl', '1m'], /printable ASCII without spaces/],
    [['claim', 'emu', '--bogus'], /--bogus/],
    [['release'], /give the RESOURCE/],
    [['leases', 'x'], /unexpected argument/],
    [['db'], /usage: wtproxy db/],
    [['db', 'drop'], /unknown db command "drop"/],
    [['db', 'claim'], /give --base/],
    [['db', 'claim', '--base', 'test_a', '--name', 'test_b'], /not both/],
  ];
  for (const [args, re] of cases) {
    const r = await cli(tmp, args, { cwd: tmp.wt.a });
    sanitizerClean(assert, r.stderr);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re, args.join(' '));
    if (args.join(' ') !== 'db') assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
