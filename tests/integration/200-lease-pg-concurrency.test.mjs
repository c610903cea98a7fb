// 200: leases on the PostgreSQL store under contention. 16 `wtproxy claim`
// processes race for one resource, 50 rounds: exactly one wins each
// round. The winners are counted by the database itself (a trigger on
// wtproxy.leases logs every row a claim actually wrote) and checked
// against the CLI's exit codes; the losers' messages name the winner.
// Half the rounds race on a fresh resource (the INSERT path), half on one
// whose lease has expired (the ON CONFLICT ... DO UPDATE path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWorktrees, cli, sanitizerClean } from './lib/registry.mjs';
import { startPostgres } from './lib/pg.mjs';

const CLAIMERS = 16;
const ROUNDS = 50;

const logWins = `
CREATE TABLE public.wins (id text, session text, op text);
CREATE FUNCTION public.log_win() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.session LIKE 'claimer-%' THEN
    INSERT INTO public.wins VALUES (NEW.id, NEW.session, TG_OP);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER log_win AFTER INSERT OR UPDATE ON wtproxy.leases
  FOR EACH ROW EXECUTE FUNCTION public.log_win();`;

test('16 concurrent claimers on a fresh server: the tables are created once, one claimer wins', async (t) => {
  const pg = await startPostgres(t);
  const tmp = makeWorktrees(t, ['a']);
  const env = (i) => ({ WTPROXY_REGISTRY: pg.uri('postgres'), WTPROXY_SESSION: `claimer-${i}` });
  const runs = await Promise.all(Array.from({ length: CLAIMERS }, (_, i) =>
    cli(tmp, ['claim', 'first', '--ttl', '1m'], { cwd: tmp.wt.a, env: env(i), ms: 60000 })));
  for (const r of runs) sanitizerClean(assert, r.stderr);
  const codes = runs.map((r) => r.code);
  assert.equal(codes.filter((c) => c === 0).length, 1, runs.map((r) => r.stderr).join('\n'));
  assert.equal(codes.filter((c) => c === 1).length, CLAIMERS - 1, codes.join(','));
  const winner = runs.findIndex((r) => r.code === 0);
  assert.equal(pg.psql("SELECT session FROM wtproxy.leases WHERE id = 'first'"), `claimer-${winner}`);
  assert.equal(pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'wtproxy'"), '2');
});

test(`${CLAIMERS} concurrent claimers, ${ROUNDS} rounds: exactly one winner per round, counted in the database`, async (t) => {
  const pg = await startPostgres(t, { settings: { max_connections: '100' } });
  const tmp = makeWorktrees(t, ['a', 'b', 'c', 'd']);
  const wts = Object.values(tmp.wt);
  const boot = await cli(tmp, ['leases'], { env: { WTPROXY_REGISTRY: pg.uri('postgres') } });
  assert.equal(boot.code, 0, boot.stderr);
  pg.psql(logWins);

  const winners = [];
  for (let round = 0; round < ROUNDS; round++) {
    const id = `res-${round}`;
    if (round % 2) {
      // An expired lease already holds the key: the claim must go through DO UPDATE.
      pg.psql(`INSERT INTO wtproxy.leases VALUES ('${id}', 'm0', '/gone', 'seed', 0, 0, 'old',
        now() - interval '2 minutes', now() - interval '1 minute')`);
    }
    const runs = await Promise.all(Array.from({ length: CLAIMERS }, (_, i) =>
      cli(tmp, ['claim', id, '--ttl', '10m', '--purpose', `round ${round}`], {
        cwd: wts[i % wts.length],
        env: { WTPROXY_REGISTRY: pg.uri('postgres'), WTPROXY_SESSION: `claimer-${i}` },
        ms: 60000,
      })));
    const won = runs.map((r, i) => (r.code === 0 ? i : -1)).filter((i) => i >= 0);
    for (const r of runs) {
      sanitizerClean(assert, r.stderr);
      assert.ok(r.code === 0 || r.code === 1, `round ${round}: exit ${r.code ?? r.signal}: ${r.stderr}`);
    }
    assert.equal(won.length, 1, `round ${round}: winners by exit code ${won}`);
    for (const r of runs.filter((x) => x.code === 1)) {
      assert.match(r.stderr, new RegExp(`${id} is held by this machine .*session claimer-${won[0]}\\b`), r.stderr);
      assert.match(r.stderr, new RegExp(`wtproxy release ${id}`));
    }
    winners.push(won[0]);
  }

  // The database's own count: one written row per round, by the one claimer that exited 0.
  const rows = pg.psql('SELECT id, session, op FROM public.wins ORDER BY id').split('\n').map((l) => l.split('|'));
  const byRound = new Map();
  for (const [id, session, op] of rows) byRound.set(id, [...(byRound.get(id) || []), { session, op }]);
  for (let round = 0; round < ROUNDS; round++) {
    const w = byRound.get(`res-${round}`) || [];
    assert.equal(w.length, 1, `round ${round}: rows written ${JSON.stringify(w)}`);
    assert.equal(w[0].session, `claimer-${winners[round]}`, `round ${round}`);
    assert.equal(w[0].op, round % 2 ? 'UPDATE' : 'INSERT', `round ${round}`);
  }
  assert.equal(pg.psql("SELECT count(*) FROM wtproxy.leases WHERE session LIKE 'claimer-%'"), String(ROUNDS));
});
