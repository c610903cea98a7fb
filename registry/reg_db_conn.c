/* reg_db_conn.c - who holds a database server's connections. Two suites
 * run at once exhaust max_connections, and the test that cannot connect
 * fails with "too many clients already", which reads like a flaky test: a
 * claim refuses first, naming the holders and how to raise the limit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reg_db_pg.h"
#include "reg_pg.h"

#define GROUPS_SHOWN 8 /* holder groups named in a refusal; the rest are counted */

/* Append to out at *used, never past outlen. */
__attribute__((format(printf, 4, 5))) static void append(char *out, size_t outlen, size_t *used,
                                                         const char *fmt, ...)
{
    if (*used >= outlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *used, outlen - *used, fmt, ap);
    va_end(ap);
    *used += n > 0 ? (size_t)n : 0;
}

/* The client sessions grouped by application, user and database, largest
 * first, as "N x application "A", user U, database D; ..." into out. */
static int groups(PGconn *c, char *out, size_t outlen, char *err, size_t errlen)
{
    PGresult *r = reg_pg_exec(c,
                              "SELECT count(*)::text, coalesce(nullif(application_name, "
                              "''), '(none)'), coalesce(usename::text, '?'), "
                              "coalesce(datname::text, '?') FROM pg_stat_activity WHERE "
                              "backend_type = 'client backend' GROUP BY 2, 3, 4 "
                              "ORDER BY count(*) DESC, 2, 3, 4",
                              0, NULL, err, errlen);
    size_t used = 0;
    out[0] = '\0';
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && i < GROUPS_SHOWN; i++)
        append(out, outlen, &used, "%s%s x application \"%s\", user %s, database %s", i ? "; " : "",
               PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
    if (PQntuples(r) > GROUPS_SHOWN)
        append(out, outlen, &used, "; and %d more groups", PQntuples(r) - GROUPS_SHOWN);
    PQclear(r);
    return 0;
}

int reg_db_headroom(PGconn *c, int min_free, char *err, size_t errlen)
{
    PGresult *r = reg_pg_exec(c,
                              "SELECT current_setting('max_connections')::int, "
                              "current_setting('superuser_reserved_connections')::int + "
                              "coalesce(current_setting('reserved_connections', true), "
                              "'0')::int, (SELECT count(*)::int FROM pg_stat_activity WHERE "
                              "backend_type = 'client backend')",
                              0, NULL, err, errlen);
    if (!r)
        return -1;
    long max = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    long reserved = strtol(PQgetvalue(r, 0, 1), NULL, 10);
    long used = strtol(PQgetvalue(r, 0, 2), NULL, 10);
    long free_now = max - reserved - used;
    PQclear(r);
    if (free_now >= min_free)
        return 0;
    char who[2048];
    if (groups(c, who, sizeof who, err, errlen) < 0)
        return -1;
    snprintf(err, errlen,
             "refused: the database server has %ld connection%s free "
             "(max_connections %ld, %ld reserved, %ld in use) and a claim leaves at least %d "
             "(--min-free-connections), or the tests that follow fail with \"too many clients "
             "already\". Held by: %s. Close idle ones (a stopped run's pool, an old psql), or "
             "raise the limit: psql -c 'ALTER SYSTEM SET max_connections = %ld' and restart "
             "PostgreSQL (sudo systemctl restart postgresql); --min-free-connections 0 skips "
             "this check",
             free_now, free_now == 1 ? "" : "s", max, reserved, used, min_free, who, max * 2);
    return 1;
}

int reg_db_holders(PGconn *c, const char *db, char *out, size_t outlen, char *err, size_t errlen)
{
    const char *p[] = {db};
    PGresult *r = reg_pg_exec(c,
                              "SELECT pid::text, coalesce(application_name, ''), "
                              "coalesce(usename::text, '?'), coalesce(host(client_addr), "
                              "'local socket') FROM pg_stat_activity WHERE datname = $1 AND "
                              "pid <> pg_backend_pid() ORDER BY pid",
                              1, p, err, errlen);
    size_t used = 0;
    out[0] = '\0';
    if (!r)
        return -1;
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        append(out, outlen, &used, "%spid %s (application \"%s\", user %s, from %s)", i ? "; " : "",
               PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
    PQclear(r);
    return n;
}
