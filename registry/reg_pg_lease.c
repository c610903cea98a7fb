/* reg_pg_lease.c - leases on the PostgreSQL store. The table's primary key
 * (the resource id) is the lock: a claim is one INSERT ... ON CONFLICT DO
 * UPDATE ... WHERE <expired, or the same holder> RETURNING, so of any
 * number of concurrent claimers exactly one gets a row back (the others
 * wait on the row lock, then see the winner's row and fail the WHERE).
 * Never a read then a write: the only reads are for the refusal message
 * and for a lease to remove (a dead holder's, or one a release may free:
 * reg_lease_may_release), which is removed by compare-and-swap on (id,
 * machine, pid, acquired_at) so a holder that renewed meanwhile stays. */
#include "reg_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

#define T REG_PG_SCHEMA ".leases"
#define COLS                                                                                       \
    "id, machine, worktree, session, pid, pid_start, purpose,"                                     \
    " (extract(epoch FROM acquired_at) * 1000)::bigint,"                                           \
    " coalesce((extract(epoch FROM expires_at) * 1000)::bigint, 0), acquired_at::text"
#define SAME_HOLDER                                                                                \
    "l.machine = EXCLUDED.machine AND l.worktree = EXCLUDED.worktree AND "                         \
    "l.session = EXCLUDED.session AND l.pid = EXCLUDED.pid AND l.pid_start = EXCLUDED.pid_start"

static const char claim_sql[] =
    "INSERT INTO " T " AS l (id, machine, worktree, session, pid, pid_start, purpose,"
    " acquired_at, expires_at)"
    " VALUES ($1, $2, $3, $4, $5::integer, $6::bigint, $7, now(),"
    " CASE WHEN $8::bigint > 0 THEN now() + $8::bigint * interval '1 millisecond' END)"
    " ON CONFLICT (id) DO UPDATE SET machine = EXCLUDED.machine, worktree = EXCLUDED.worktree,"
    " session = EXCLUDED.session, pid = EXCLUDED.pid, pid_start = EXCLUDED.pid_start,"
    " purpose = EXCLUDED.purpose, expires_at = EXCLUDED.expires_at,"
    " acquired_at = CASE WHEN " SAME_HOLDER " THEN l.acquired_at ELSE EXCLUDED.acquired_at END"
    " WHERE (l.expires_at IS NOT NULL AND l.expires_at <= now()) OR (" SAME_HOLDER ")"
    " RETURNING " COLS;

static const char holder_sql[] = "SELECT " COLS " FROM " T " WHERE id = $1";

static const char takeover_sql[] =
    "DELETE FROM " T " WHERE id = $1 AND machine = $2 AND pid = $3::integer"
    " AND acquired_at = $4::timestamptz";

/* Row i of r (COLS) into l. */
static void row_lease(PGresult *r, int i, struct reg_lease *l)
{
    memset(l, 0, sizeof *l);
    snprintf(l->id, sizeof l->id, "%s", PQgetvalue(r, i, 0));
    snprintf(l->machine, sizeof l->machine, "%s", PQgetvalue(r, i, 1));
    snprintf(l->worktree, sizeof l->worktree, "%s", PQgetvalue(r, i, 2));
    snprintf(l->session, sizeof l->session, "%s", PQgetvalue(r, i, 3));
    l->pid = (pid_t)strtol(PQgetvalue(r, i, 4), NULL, 10);
    l->pid_start = strtoull(PQgetvalue(r, i, 5), NULL, 10);
    snprintf(l->purpose, sizeof l->purpose, "%s", PQgetvalue(r, i, 6));
    l->acquired_ms = strtoll(PQgetvalue(r, i, 7), NULL, 10);
    l->expires_ms = strtoll(PQgetvalue(r, i, 8), NULL, 10);
    snprintf(l->acquired_at, sizeof l->acquired_at, "%s", PQgetvalue(r, i, 9));
}

/* One statement whose result is at most one lease row. Returns 1 with
 * *out, 0 no row, -1 with err. */
static int one_row(PGconn *pg, const char *sql, int n, const char *const *params,
                   struct reg_lease *out, char *err, size_t errlen)
{
    PGresult *r = reg_pg_exec(pg, sql, n, params, err, errlen);
    if (!r)
        return -1;
    int got = PQntuples(r) > 0;
    if (got)
        row_lease(r, 0, out);
    PQclear(r);
    return got;
}

/* Remove h's lease, only if it is still exactly h's. Returns 1 removed,
 * 0 changed meanwhile, -1 with err. */
static int remove_exactly(PGconn *pg, const struct reg_lease *h, char *err, size_t errlen)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)h->pid);
    const char *p[] = {h->id, h->machine, pid, h->acquired_at};
    PGresult *r = reg_pg_exec(pg, takeover_sql, 4, p, err, errlen);
    if (!r)
        return -1;
    int gone = strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    return gone;
}

/* Remove the dead holder h, only if it is still exactly h. Returns 0 or -1. */
static int take_over(PGconn *pg, const struct reg_lease *h, char *err, size_t errlen)
{
    int gone = remove_exactly(pg, h, err, errlen);
    if (gone > 0)
        fprintf(stderr, "wtproxy: %s was held by pid %d in %s, which is gone; taken over\n", h->id,
                (int)h->pid, h->worktree);
    return gone < 0 ? -1 : 0;
}

int reg_pg_claim(PGconn *pg, const struct reg_lease *c, long long ttl_ms, struct reg_lease *out,
                 char *err, size_t errlen)
{
    char pid[16], start[24], ttl[24];
    snprintf(pid, sizeof pid, "%d", (int)c->pid);
    snprintf(start, sizeof start, "%llu", c->pid_start);
    snprintf(ttl, sizeof ttl, "%lld", ttl_ms);
    const char *p[] = {c->id, c->machine, c->worktree, c->session, pid, start, c->purpose, ttl};
    for (int round = 0; round <= REG_LEASE_TAKEOVERS; round++) {
        int won = one_row(pg, claim_sql, 8, p, out, err, errlen);
        if (won != 0)
            return won;
        int held = one_row(pg, holder_sql, 1, p, out, err, errlen);
        if (held < 0)
            return -1;
        if (held && !reg_lease_holder_dead(out))
            return 0;
        if (held && take_over(pg, out, err, errlen) < 0)
            return -1;
    }
    return 0; /* holders keep dying under us: refuse rather than loop */
}

int reg_pg_release(PGconn *pg, const struct reg_lease *r, int force, struct reg_lease *holder,
                   char *err, size_t errlen)
{
    const char *p[] = {r->id};
    for (int round = 0; round <= REG_LEASE_TAKEOVERS; round++) {
        int held = one_row(pg, holder_sql, 1, p, holder, err, errlen);
        if (held <= 0) {
            memset(holder, 0, sizeof *holder);
            return held;
        }
        if (!reg_lease_may_release(holder, r, force))
            return 0;
        int gone = remove_exactly(pg, holder, err, errlen);
        if (gone != 0)
            return gone;
    }
    return 0; /* claimed again each time we looked: refuse rather than loop */
}

/* Whether row i of r (COLS) is a lease of this machine whose holder is
 * dead and that is now removed (said on stderr: the daemon's log, or the
 * listing command's). A failed removal is left for the next look. */
static int swept(PGconn *pg, PGresult *r, int i, struct reg_lease *l)
{
    char err[256];
    row_lease(r, i, l);
    if (!reg_lease_holder_dead(l) || remove_exactly(pg, l, err, sizeof err) <= 0)
        return 0;
    fprintf(stderr, "wtproxy: lease %s ended: its holder pid %d in %s is gone\n", l->id,
            (int)l->pid, l->worktree);
    return 1;
}

json_t *reg_pg_leases(PGconn *pg, char *err, size_t errlen)
{
    PGresult *r = reg_pg_exec(pg, "SELECT " COLS " FROM " T " ORDER BY id", 0, NULL, err, errlen);
    json_t *arr = r ? json_array() : NULL;
    for (int i = 0; arr && i < PQntuples(r); i++) {
        struct reg_lease l;
        if (swept(pg, r, i, &l))
            continue;
        l.acquired_at[0] = '\0'; /* internal to the compare-and-swap */
        json_array_append_new(arr, reg_lease_to_json(&l));
    }
    PQclear(r);
    return arr;
}

/* A lease or a holder as a reply: ok with "lease", or conflict /
 * not-permitted with "holder". */
static json_t *lease_reply(int won, const struct reg_lease *l, const char *code)
{
    if (won)
        return json_pack("{s:b, s:o}", "ok", 1, "lease", reg_lease_to_json(l));
    return reg_lease_held(code, l);
}

#define SEE_THEN_AGAIN "see whether it was done (wtproxy leases) and if not do it again"

/* The reply to an op the server did not answer (err: why, naming it).
 * A statement it received before it stopped may still run once it goes
 * on: what changes is not confirmed, rather than not made. */
static json_t *not_done(PGconn *pg, const char *what, const char *then, const char *err)
{
    return reg_fail("registry-down",
                    "%s: %s; once it answers (pg_isready -h %s -p %s tells when), %s", what, err,
                    PQhost(pg) ? PQhost(pg) : "?", PQport(pg) ? PQport(pg) : "?", then);
}

json_t *reg_pg_lease_op(PGconn *pg, const char *op, json_t *req)
{
    char err[PATH_MAX + 1024];
    struct reg_lease c, out;
    long long ttl = 0;
    int r;
    if (strcmp(op, "claim") == 0) {
        json_t *bad = reg_lease_claimer(req, &c, &ttl);
        if (bad)
            return bad;
        r = reg_pg_claim(pg, &c, ttl, &out, err, sizeof err);
        return r < 0 ? not_done(pg, "the registry did not confirm the claim", SEE_THEN_AGAIN, err)
                     : lease_reply(r, &out, "conflict");
    }
    if (strcmp(op, "release") == 0) {
        int force;
        json_t *bad = reg_lease_releaser(req, &c, &force);
        if (bad)
            return bad;
        r = reg_pg_release(pg, &c, force, &out, err, sizeof err);
        if (r < 0)
            return not_done(pg, "the registry did not confirm the release", SEE_THEN_AGAIN, err);
        if (r == 0 && !out.id[0])
            return reg_fail("not-found", "nobody holds %s (see: wtproxy leases)", c.id);
        return lease_reply(r, &out, "not-permitted");
    }
    json_t *arr = reg_pg_leases(pg, err, sizeof err);
    return arr ? json_pack("{s:b, s:o}", "ok", 1, "leases", arr)
               : not_done(pg, "the leases cannot be read", "ask again", err);
}
