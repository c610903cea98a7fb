/* reg_pg.c - the PostgreSQL store's connection: which server (the env, the
 * config file), connecting with a bounded wait, creating the tables on
 * first use, and masking the password in every message.
 *
 * Two daemons (or sixteen claimers) may connect to a fresh server at the
 * same moment; CREATE ... IF NOT EXISTS alone still races (two creators
 * both pass the check, one fails on the catalog's unique index), so the
 * creation runs under a transaction-scoped advisory lock. */
#include "reg_pg.h"

#include <ctype.h>
#include <errno.h>
#include <libpq-events.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host.h"

static _Thread_local char last_state[6];
static _Thread_local int query_timeout_ms; /* 0: wait as long as the server takes */
static _Thread_local char last_error[1024];
static _Thread_local int last_late; /* the last failed statement ran out of time */

static const char schema_sql[] =
    "CREATE SCHEMA IF NOT EXISTS " REG_PG_SCHEMA ";"
    "CREATE TABLE IF NOT EXISTS " REG_PG_SCHEMA ".leases ("
    " id text PRIMARY KEY, machine text NOT NULL, worktree text NOT NULL,"
    " session text NOT NULL, pid integer NOT NULL, pid_start bigint NOT NULL,"
    " purpose text NOT NULL, acquired_at timestamptz NOT NULL, expires_at timestamptz);"
    "CREATE TABLE IF NOT EXISTS " REG_PG_SCHEMA ".backends ("
    " machine text NOT NULL, front integer NOT NULL, worktree text NOT NULL,"
    " entry jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(),"
    " PRIMARY KEY (machine, front, worktree));";

int reg_pg_optional(void)
{
    const char *v = getenv("WTPROXY_REGISTRY_OPTIONAL");
    return v && strcmp(v, "1") == 0;
}

/* The value of `registry = VALUE` in the config file at path: 1 found, 0
 * not, -1 unreadable. */
static int config_value(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char line[REG_PG_URI_MAX + 64];
    int found = 0;
    if (!f) {
        snprintf(err, errlen,
                 "cannot read the config file %s ($WTPROXY_CONFIG): %s; fix "
                 "WTPROXY_CONFIG, or unset it",
                 path, strerror(errno));
        return -1;
    }
    while (!found && fgets(line, sizeof line, f)) {
        char *p = line, *end;
        while (isspace((unsigned char)*p))
            p++;
        if (strncmp(p, "registry", 8) != 0)
            continue;
        for (p += 8; *p == ' ' || *p == '\t'; p++) {
        }
        if (*p++ != '=')
            continue;
        while (*p == ' ' || *p == '\t')
            p++;
        for (end = p + strlen(p); end > p && isspace((unsigned char)end[-1]); end--) {
        }
        *end = '\0';
        found = *p != '\0';
        snprintf(out, outlen, "%s", p);
    }
    fclose(f);
    return found;
}

int reg_pg_configured(char *out, size_t outlen, char *err, size_t errlen)
{
    const char *env = getenv("WTPROXY_REGISTRY"), *conf = getenv("WTPROXY_CONFIG");
    if (env && env[0]) {
        snprintf(out, outlen, "%s", env);
        return 1;
    }
    if (conf && conf[0])
        return config_value(conf, out, outlen, err, errlen);
    return 0;
}

/* The value of key in a parsed conninfo, "" when not given. */
static const char *opt(const PQconninfoOption *o, const char *key)
{
    for (; o && o->keyword; o++)
        if (strcmp(o->keyword, key) == 0)
            return o->val ? o->val : "";
    return "";
}

int reg_pg_same_server(const char *a, const char *b)
{
    static const char *const keys[] = {"host", "hostaddr", "port", "dbname", "user"};
    PQconninfoOption *pa = PQconninfoParse(a, NULL), *pb = PQconninfoParse(b, NULL);
    int same = pa && pb ? 1 : strcmp(a, b) == 0;
    for (size_t i = 0; pa && pb && i < sizeof keys / sizeof keys[0]; i++)
        same &= strcmp(opt(pa, keys[i]), opt(pb, keys[i])) == 0;
    PQconninfoFree(pa);
    PQconninfoFree(pb);
    return same;
}

void reg_pg_where(const char *uri, char *host, size_t hlen, char *port, size_t plen)
{
    PQconninfoOption *o = PQconninfoParse(uri, NULL);
    const char *h = opt(o, "host"), *p = opt(o, "port"), *eh = getenv("PGHOST"),
               *ep = getenv("PGPORT");
    snprintf(host, hlen, "%s", h[0] ? h : eh && eh[0] ? eh : "localhost");
    snprintf(port, plen, "%s", p[0] ? p : ep && ep[0] ? ep : "5432");
    PQconninfoFree(o);
}

/* Length of the value starting at p in a conninfo or URI query: quoted
 * '...' (with \' escapes), or up to a space or '&'. */
static size_t value_len(const char *p)
{
    size_t n = 0;
    if (p[0] == '\'') {
        for (n = 1; p[n] && p[n] != '\''; n++)
            if (p[n] == '\\' && p[n + 1])
                n++;
        return p[n] ? n + 1 : n;
    }
    while (p[n] && !isspace((unsigned char)p[n]) && p[n] != '&')
        n++;
    return n;
}

/* Append n bytes of s to out at *used, bounded. */
static void put(char *out, size_t outlen, size_t *used, const char *s, size_t n)
{
    if (*used + 1 >= outlen)
        return;
    if (n > outlen - 1 - *used)
        n = outlen - 1 - *used;
    memcpy(out + *used, s, n);
    *used += n;
    out[*used] = '\0';
}

/* In a URI, the end of the user:password@ part: the '@' before the host,
 * or NULL. */
static const char *userinfo_at(const char *uri)
{
    const char *s = strstr(uri, "://");
    if (!s || (strncmp(uri, "postgresql://", 13) != 0 && strncmp(uri, "postgres://", 11) != 0))
        return NULL;
    s += 3;
    size_t auth = strcspn(s, "/?");
    const char *at = NULL;
    for (size_t i = 0; i < auth; i++)
        if (s[i] == '@')
            at = s + i;
    return at;
}

void reg_pg_mask(const char *uri, char *out, size_t outlen)
{
    size_t used = 0;
    const char *at = userinfo_at(uri), *p = uri;
    out[0] = '\0';
    if (at) {
        const char *user = strstr(uri, "://") + 3;
        const char *colon = memchr(user, ':', (size_t)(at - user));
        if (colon) {
            put(out, outlen, &used, uri, (size_t)(colon + 1 - uri));
            put(out, outlen, &used, "***", 3);
            p = at;
        }
    }
    while (*p) {
        const char *hit = strstr(p, "password");
        int key = hit && (hit == uri || hit[-1] == ' ' || hit[-1] == '?' || hit[-1] == '&' ||
                          hit[-1] == '\t');
        const char *q = hit ? hit + 8 : NULL;
        while (key && (*q == ' ' || *q == '\t'))
            q++;
        if (!hit || !key || *q != '=') {
            size_t n = hit ? (size_t)(hit + 8 - p) : strlen(p);
            put(out, outlen, &used, p, n);
            p += n;
            continue;
        }
        q++;
        while (*q == ' ' || *q == '\t')
            q++;
        put(out, outlen, &used, p, (size_t)(q - p));
        put(out, outlen, &used, "***", 3);
        p = q + value_len(q);
    }
}

/* libpq's multi-line message as one line, its password (if it echoes a
 * conninfo) masked. */
static void one_line(const char *in, char *out, size_t outlen)
{
    char flat[512];
    size_t n = 0;
    for (const char *p = in; *p && n + 1 < sizeof flat; p++) {
        int space = *p == '\n' || *p == '\t' || *p == '\r';
        if (!(space && (n == 0 || flat[n - 1] == ' ')))
            flat[n++] = space ? ' ' : *p;
    }
    while (n > 0 && flat[n - 1] == ' ')
        n--;
    flat[n] = '\0';
    reg_pg_mask(flat, out, outlen);
}

const char *reg_pg_last_state(void)
{
    return last_state;
}

const char *reg_pg_last_error(void)
{
    return last_error;
}

int reg_pg_last_late(void)
{
    return last_late;
}

void reg_pg_set_query_timeout(int ms)
{
    query_timeout_ms = ms;
}

/* Wait until c's socket is ready for events. Returns 0, or -1 once the
 * deadline passed. */
static int wait_socket(PGconn *c, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - host_mono_ms();
        struct pollfd p = {.fd = PQsocket(c), .events = events};
        if (left <= 0)
            return -1;
        if (poll(&p, 1, (int)left) != 0)
            return 0; /* ready, or an error the next libpq call reports */
    }
}

/* PQexec / PQexecParams that gives up after query_timeout_ms: a server
 * that is stopped (SIGSTOP, a frozen VM) keeps the TCP connection open and
 * never answers, and libpq would wait forever. Returns the result (as
 * PQexec: the last one, or the first error), or NULL: *late set when the
 * time ran out, else the connection failed (PQerrorMessage says why). A
 * connection that ran late is shut down, so that libpq marks it
 * CONNECTION_BAD and its owner reconnects: its reply may still come. */
static PGresult *exec_within(PGconn *c, const char *sql, int n, const char *const *params,
                             int *late)
{
    *late = 0;
    if (query_timeout_ms <= 0)
        return n ? PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0) : PQexec(c, sql);
    long long deadline = host_mono_ms() + query_timeout_ms;
    PGresult *last = NULL, *r;
    if (!(n ? PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0) : PQsendQuery(c, sql)))
        return NULL;
    for (;;) {
        int f;
        while ((f = PQflush(c)) == 1)
            if (wait_socket(c, POLLOUT | POLLIN, deadline) < 0)
                goto late;
        while (f == 0 && PQisBusy(c)) {
            if (wait_socket(c, POLLIN, deadline) < 0)
                goto late;
            if (!PQconsumeInput(c))
                break;
        }
        if (f < 0 || !(r = PQgetResult(c)))
            break;
        if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
            PQclear(r);
        } else {
            PQclear(last);
            last = r;
        }
    }
    return last;
late:
    PQclear(last);
    *late = 1;
    shutdown(PQsocket(c), SHUT_RDWR);
    PQconsumeInput(c); /* reads the end: the connection is CONNECTION_BAD */
    return NULL;
}

/* A connection to an app's database server (wtproxy db), told from the
 * registry's by libpq's instance data of this do-nothing event procedure:
 * a failed query must name the server it failed on. A database server
 * stopped under a test run was called "the registry", whose port was
 * another, and no fix was said. */
static int db_server_proc(PGEventId id, void *info, void *pass)
{
    (void)id;
    (void)info;
    (void)pass;
    return 1;
}

static char db_server_tag;

static void mark_db_server(PGconn *c)
{
    if (PQregisterEventProc(c, db_server_proc, "wtproxy-db-server", NULL))
        PQsetInstanceData(c, db_server_proc, &db_server_tag);
}

static int is_db_server(const PGconn *c)
{
    return PQinstanceData(c, db_server_proc) == &db_server_tag;
}

/* name as an SQL identifier into out: bare when lower-case letters,
 * digits and _, else double-quoted ("" for a quote in it). */
static void sql_ident(const char *name, char *out, size_t len)
{
    size_t used = 0;
    if (name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(name) &&
        !isdigit((unsigned char)name[0])) {
        snprintf(out, len, "%s", name);
        return;
    }
    put(out, len, &used, "\"", 1);
    for (const char *p = name; *p; p++)
        put(out, len, &used, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
    put(out, len, &used, "\"", 1);
}

void reg_pg_grant_fix(const char *host, const char *port, const char *db, const char *role,
                      const char *msg, char *out, size_t len)
{
    char r[256], d[256], grant[768];
    int connecting = strstr(msg, "cannot be reached") != NULL;
    sql_ident(role, r, sizeof r);
    sql_ident(db, d, sizeof d);
    if (strstr(msg, "permission denied for database") && connecting)
        snprintf(grant, sizeof grant, "GRANT CONNECT ON DATABASE %s TO %s", d, r);
    else if (strstr(msg, "permission denied for database")) /* creating the schema, first use */
        snprintf(grant, sizeof grant, "GRANT CREATE ON DATABASE %s TO %s", d, r);
    else
        snprintf(grant, sizeof grant,
                 "GRANT USAGE ON SCHEMA " REG_PG_SCHEMA " TO %s; GRANT SELECT, INSERT, UPDATE, "
                 "DELETE ON ALL TABLES IN SCHEMA " REG_PG_SCHEMA " TO %s",
                 r, r);
    snprintf(out, len,
             "it runs, and the role %s lacks a right on the registry's database %s; as its owner "
             "or a superuser, grant it: psql -h %s -p %s -d %s -c '%s' (wtproxy help claims: "
             "the role's rights)",
             role, db, host, port, db, grant);
}

void reg_pg_uri_grant_fix(const char *uri, const char *msg, char *out, size_t len)
{
    char host[256], port[32];
    PQconninfoOption *o = PQconninfoParse(uri, NULL);
    const char *user = opt(o, "user"), *db = opt(o, "dbname");
    const char *eu = getenv("PGUSER"), *ed = getenv("PGDATABASE");
    struct passwd *pw = getpwuid(geteuid());
    user = user[0] ? user : eu && eu[0] ? eu : pw ? pw->pw_name : "ROLE";
    db = db[0] ? db : ed && ed[0] ? ed : user;
    reg_pg_where(uri, host, sizeof host, port, sizeof port);
    reg_pg_grant_fix(host, port, db, user, msg, out, len);
    PQconninfoFree(o);
}

int reg_pg_denied(const char *msg)
{
    return strstr(msg, "SQLSTATE 42501") || strstr(msg, "permission denied for");
}

/* A failed query's sentence on c (msg: libpq's, one line; code: its
 * SQLSTATE or NULL): which server, what it said, and what to do. */
static void query_failed(PGconn *c, int late, const char *msg, const char *code, char *err,
                         size_t errlen)
{
    const char *h = PQhost(c), *p = PQport(c);
    char said[640];
    if (late)
        snprintf(said, sizeof said,
                 "did not answer within %d ms (the server is stopped, overloaded or cut off)",
                 query_timeout_ms);
    else
        snprintf(said, sizeof said, "failed a query: %s%s%s%s", msg, code ? " (SQLSTATE " : "",
                 code ? code : "", code ? ")" : "");
    /* A server that answered with a SQLSTATE runs: "start it" would send the
     * reader after a server that is up. Not allowed (42501: another role's
     * database, another user's on a shared machine, or a right such as
     * CREATEDB the role lacks) says which role asked. */
    int answered = !late && code && strncmp(code, "08", 2) != 0 && strncmp(code, "57P", 3) != 0;
    if (is_db_server(c) && answered && strcmp(code, "42501") == 0)
        snprintf(err, errlen,
                 "the database server at host %s port %s (the app's, which wtproxy db uses: "
                 "--server, else WTPROXY_DB_SERVER, else PG*; not the registry) %s: the role %s "
                 "lacks the "
                 "privilege for it; a database another role owns (on a machine several users "
                 "share, another user's) is that role's to change; else grant %s what it lacks "
                 "(as a superuser: ALTER ROLE %s CREATEDB, to create databases), or connect as "
                 "a role that has it: PGUSER=ROLE",
                 h, p, said, PQuser(c), PQuser(c), PQuser(c));
    else if (is_db_server(c) && answered)
        snprintf(err, errlen,
                 "the database server at host %s port %s (the app's, which wtproxy db uses: "
                 "--server, else WTPROXY_DB_SERVER, else PG*; not the registry) %s: it runs and "
                 "refused this; "
                 "fix what it says",
                 h, p, said);
    else if (is_db_server(c))
        snprintf(err, errlen,
                 "the database server at host %s port %s (the app's, which wtproxy db uses: "
                 "--server, else WTPROXY_DB_SERVER, else PG*; not the registry) %s; if it "
                 "stopped, start it; check that it answers: pg_isready -h %s -p %s",
                 h, p, said, h, p);
    else if (late)
        snprintf(err, errlen,
                 "the registry at host %s port %s %s; make it answer (psql), or fix "
                 "WTPROXY_REGISTRY / `registry =`",
                 h, p, said);
    else if (answered && strcmp(code, "42501") == 0) {
        char fix[1536];
        reg_pg_grant_fix(h, p, PQdb(c), PQuser(c), msg, fix, sizeof fix);
        snprintf(err, errlen, "the registry at host %s port %s %s: %s", h, p, said, fix);
    } else
        snprintf(err, errlen, "the registry at host %s port %s %s", h, p, said);
}

PGresult *reg_pg_exec(PGconn *c, const char *sql, int n, const char *const *params, char *err,
                      size_t errlen)
{
    int late;
    PGresult *r = exec_within(c, sql, n, params, &late);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    last_state[0] = '\0';
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(last_state, sizeof last_state, "%s", code ? code : "");
    last_late = late;
    char msg[512];
    one_line(PQerrorMessage(c), msg, sizeof msg);
    query_failed(c, late, msg, code, err, errlen);
    snprintf(last_error, sizeof last_error, "%s", err);
    PQclear(r);
    return NULL;
}

/* Create the schema and tables unless they exist. Returns 0 or -1. */
static int ensure_schema(PGconn *c, char *err, size_t errlen)
{
    PGresult *r = reg_pg_exec(c,
                              "SELECT to_regclass('" REG_PG_SCHEMA ".leases') IS NOT NULL "
                              "AND to_regclass('" REG_PG_SCHEMA ".backends') IS NOT NULL",
                              0, NULL, err, errlen);
    if (!r)
        return -1;
    int there = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (there)
        return 0;
    char sql[sizeof schema_sql + 128];
    snprintf(sql, sizeof sql, "BEGIN; SELECT pg_advisory_xact_lock(%d); %s COMMIT;",
             REG_PG_SCHEMA_LOCK, schema_sql);
    r = reg_pg_exec(c, sql, 0, NULL, err, errlen);
    if (!r) {
        char ignored[256];
        PQclear(reg_pg_exec(c, "ROLLBACK", 0, NULL, ignored, sizeof ignored));
        return -1;
    }
    PQclear(r);
    return 0;
}

int reg_pg_connect_timed_out(const char *msg)
{
    /* libpq's own words (fe-connect.c) when connect_timeout passes, for one
     * host or each of several; a server's message never says them. */
    return msg && strstr(msg, "timeout expired") != NULL;
}

/* Whether neither uri nor PGDATABASE names a database: libpq would then
 * connect to the one named as the user, which a role made for an app
 * (PGUSER=shop) seldom has; "database shop does not exist" stopped the
 * claim that a doctor connected to postgres found fine. */
static int names_no_database(const char *uri)
{
    const char *env = getenv("PGDATABASE");
    if (env && *env)
        return 0;
    PQconninfoOption *opts = PQconninfoParse(uri, NULL);
    int none = 1;
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "dbname") == 0 && o->val && *o->val)
            none = 0;
    PQconninfoFree(opts);
    return opts != NULL && none;
}

/* One connect attempt with our defaults; NULL only when out of memory.
 * maintenance: to postgres when nothing names a database (createdb's
 * rule), as the app's database server is only asked to create and drop. */
static PGconn *dial_once(const char *uri, int maintenance)
{
    /* Ours first: with expand_dbname, what the URI says overrides them;
     * the second dbname, not expanded, overrides a URI that names none. */
    const char *keys[] = {"connect_timeout", "application_name", "dbname", "dbname", NULL};
    const char *const vals[] = {REG_PG_CONNECT_TIMEOUT, "wtproxy", uri, "postgres", NULL};
    if (!maintenance || !names_no_database(uri))
        keys[3] = NULL;
    return PQconnectdbParams(keys, vals, 1);
}

PGconn *reg_pg_dial(const char *uri, const char *what, char *err, size_t errlen)
{
    char masked[REG_PG_URI_MAX + 64], msg[512];
    int maintenance = strcmp(what, "the registry") != 0;
    PGconn *c = dial_once(uri, maintenance);
    int retried = 0;
    if (c && PQstatus(c) != CONNECTION_OK && reg_pg_connect_timed_out(PQerrorMessage(c))) {
        PQfinish(c);
        c = dial_once(uri, maintenance);
        retried = 1;
    }
    reg_pg_mask(uri, masked, sizeof masked);
    if (!c) {
        snprintf(err, errlen, "cannot connect to %s %s: out of memory", what, masked);
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        char why[sizeof msg + 160];
        one_line(PQerrorMessage(c), msg, sizeof msg);
        if (retried && reg_pg_connect_timed_out(msg))
            snprintf(why, sizeof why,
                     "connecting timed out twice after " REG_PG_CONNECT_TIMEOUT
                     " s: is PostgreSQL overloaded (many connections starting at once) or its "
                     "host down? (%s)",
                     msg);
        else
            snprintf(why, sizeof why, "%s", msg);
        snprintf(err, errlen, "%s at host %s port %s (%s) cannot be reached: %s", what,
                 PQhost(c) ? PQhost(c) : "?", PQport(c) ? PQport(c) : "?", masked, why);
        PQfinish(c);
        return NULL;
    }
    if (maintenance)
        mark_db_server(c);
    PQclear(reg_pg_exec(c, "SET client_min_messages = warning", 0, NULL, msg, sizeof msg));
    return c;
}

PGconn *reg_pg_connect(const char *uri, char *err, size_t errlen)
{
    PGconn *c = reg_pg_dial(uri, "the registry", err, errlen);
    size_t n = c ? 0 : strlen(err);
    if (!c && reg_pg_denied(err) && n + 2 < errlen) { /* it runs: "start it" would be wrong */
        char fix[1536];
        reg_pg_uri_grant_fix(uri, err, fix, sizeof fix);
        snprintf(err + n, errlen - n, "; %s", fix);
        return NULL;
    }
    if (!c) {
        snprintf(err + n, errlen - n,
                 "; start it or fix WTPROXY_REGISTRY / `registry =`; to go "
                 "on without it (claims then hold on this machine only): "
                 "WTPROXY_REGISTRY_OPTIONAL=1");
        return NULL;
    }
    if (ensure_schema(c, err, errlen) < 0) {
        PQfinish(c);
        return NULL;
    }
    return c;
}
