/* ls.c - `wtproxy ls [--json | --exited]`: what the daemon routes to, as
 * a table for people (with each worktree's branch, host_worktree_branch)
 * or as the daemon's JSON, and under it the servers that exited lately
 * with their last lines (ls_exited.c). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "servers.h"
#include "host.h"
#include "reg_pg.h"
#include "registry.h"

/* a machine-id's first characters are enough to tell them apart */
#define WTP_LS_MACHINE_WIDTH 12

enum {
    COL_MACHINE,
    COL_WORKTREE,
    COL_BRANCH,
    COL_SERVICE,
    COL_FRONT,
    COL_PORT,
    COL_PID,
    COL_STATE,
    COL_WHOAMI,
    COL_AGE,
    COL_REQUESTS,
    NCOL
};

static const char *const col_names[NCOL] = {"MACHINE", "WORKTREE", "BRANCH",  "SERVICE",
                                            "FRONT",   "PORT",     "PID",     "STATE",
                                            "WHOAMI",  "AGE",      "REQUESTS"};

/* One row's cells from one entry. */
static void row_cells(json_t *e, char cell[NCOL][PATH_MAX], long long now)
{
    const char *wt = json_string_value(json_object_get(e, "worktree"));
    const char *state = json_string_value(json_object_get(e, "state"));
    json_int_t pid = json_integer_value(json_object_get(e, "pid"));
    const char *machine = json_string_value(json_object_get(e, "machine"));
    snprintf(cell[COL_MACHINE], PATH_MAX, "%.*s", WTP_LS_MACHINE_WIDTH, machine ? machine : "?");
    snprintf(cell[COL_WORKTREE], PATH_MAX, "%s", wt ? wt : "?");
    host_worktree_branch(cell[COL_WORKTREE], cell[COL_BRANCH], PATH_MAX);
    const char *service = json_string_value(json_object_get(e, "service"));
    snprintf(cell[COL_SERVICE], PATH_MAX, "%s", service && *service ? service : "-");
    snprintf(cell[COL_FRONT], PATH_MAX, "%lld",
             (long long)json_integer_value(json_object_get(e, "front")));
    snprintf(cell[COL_PORT], PATH_MAX, "%lld",
             (long long)json_integer_value(json_object_get(e, "port")));
    if (pid > 0)
        snprintf(cell[COL_PID], PATH_MAX, "%lld", (long long)pid);
    else
        snprintf(cell[COL_PID], PATH_MAX, "-");
    /* Starting, but its start failed and it waits for a change: said, for
     * a "starting" that never ends sends the reader nowhere. */
    if (json_object_get(e, "start_failed"))
        state = "failed";
    snprintf(cell[COL_STATE], PATH_MAX, "%s", state ? state : "?");
    /* The gate's last verdict ("-" before its first request) */
    const char *who = json_string_value(json_object_get(json_object_get(e, "whoami"), "state"));
    snprintf(cell[COL_WHOAMI], PATH_MAX, "%s", who ? who : "-");
    /* since its server started: a restart is a new server */
    json_int_t started = json_integer_value(json_object_get(e, "started_ms"));
    if (!started)
        started = json_integer_value(json_object_get(e, "registered_ms"));
    host_age(now - started, cell[COL_AGE], PATH_MAX);
    snprintf(cell[COL_REQUESTS], PATH_MAX, "%lld",
             (long long)json_integer_value(json_object_get(e, "requests")));
}

/* Whether entries span machines (a PostgreSQL registry shows them all). */
static int several_machines(json_t *entries)
{
    const char *first = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        const char *m = json_string_value(json_object_get(e, "machine"));
        if (!first)
            first = m ? m : "";
        else if (!m || strcmp(m, first) != 0)
            return 1;
    }
    return 0;
}

/* Whether some entry serves a named `.wtproxy` service. */
static int any_service(json_t *entries)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        const char *s = json_string_value(json_object_get(e, "service"));
        if (s && *s)
            return 1;
    }
    return 0;
}

/* The MACHINE column only when entries span machines, SERVICE only when
 * some entry has one: a plain list keeps the columns scripts already read. */
static void print_row(char cell[NCOL][PATH_MAX], const int width[NCOL], int machines, int services)
{
    for (int c = machines ? 0 : 1; c < NCOL - 1; c++)
        if (c != COL_SERVICE || services)
            printf("%-*s  ", width[c], cell[c]);
    printf("%s\n", cell[NCOL - 1]);
}

/* Nothing runs. In a worktree whose .wtproxy declares servers, the daemon
 * starts them itself at their first request: say that, and how to start
 * them now, rather than send the reader to write a `wtproxy run` line.
 * When servers exited lately, what they said follows (print_exited). */
static void print_none(int exited)
{
    struct cli_wtproxy w = {0};
    char cwd[PATH_MAX], fronts[512];
    if (exited)
        printf("no dev server is registered\n");
    else if (getcwd(cwd, sizeof cwd) && cli_wtproxy_read(cwd, &w) == 0 && w.from == 1 && w.file) {
        cli_wtproxy_list(&w, fronts, sizeof fronts);
        printf("no dev server is registered; this worktree's .wtproxy declares %s: the daemon "
               "starts each at its first request there, or now with: wtproxy restart\n",
               fronts);
    } else {
        printf("no dev server is registered; start one in a worktree with: "
               "wtproxy run -- CMD ARGS... {port}\n");
    }
    cli_wtproxy_free(&w);
}

/* Print entries as a table, columns as wide as their widest cell. */
static int print_table(json_t *entries, int exited)
{
    size_t n = json_array_size(entries);
    if (n == 0) {
        print_none(exited);
        return 0;
    }
    char(*cells)[NCOL][PATH_MAX] = calloc(n + 1, sizeof *cells);
    if (!cells) {
        fprintf(stderr, "wtproxy: out of memory\n");
        return 1;
    }
    int width[NCOL] = {0};
    long long now = host_wall_ms();
    for (int c = 0; c < NCOL; c++)
        snprintf(cells[0][c], PATH_MAX, "%s", col_names[c]);
    for (size_t i = 0; i < n; i++)
        row_cells(json_array_get(entries, i), cells[i + 1], now);
    for (size_t i = 0; i <= n; i++)
        for (int c = 0; c < NCOL; c++)
            if ((int)strlen(cells[i][c]) > width[c])
                width[c] = (int)strlen(cells[i][c]);
    int machines = several_machines(entries), services = any_service(entries);
    for (size_t i = 0; i <= n; i++)
        print_row(cells[i], width, machines, services);
    free(cells);
    return 0;
}

/* Under the table: each server that exited lately (cli_exited_of), how
 * and when, its last lines and the command that starts it again. */
static void print_exited(json_t *gone)
{
    size_t i;
    json_t *x;
    json_array_foreach(gone, i, x)
        printf("\n%s\n", json_string_value(json_object_get(x, "said")));
}

/* Under the table: the on-demand starts that wait (op `starts`), for the
 * services they need or for the machine's load, with the load figure.
 * Nothing when none wait, or from a daemon without the op. */
static void print_waiting(void)
{
    json_t *req = json_pack("{s:s}", "op", "starts"), *reply = NULL, *st;
    char err[256];
    size_t i;
    if (!req || cli_call(req, 0, &reply, err, sizeof err) < 0 ||
        !json_is_true(json_object_get(reply, "ok"))) {
        json_decref(req);
        json_decref(reply);
        return;
    }
    json_int_t max = json_integer_value(json_object_get(reply, "start_max_load_pct"));
    json_array_foreach(json_object_get(reply, "starts"), i, st) {
        const char *svc = json_string_value(json_object_get(st, "service"));
        json_t *load = json_object_get(st, "load");
        if (i == 0)
            putchar('\n');
        printf("%s%s%s (front %lld) waits to start: ",
               json_string_value(json_object_get(st, "worktree")), svc && *svc ? " service " : "",
               svc ? svc : "", (long long)json_integer_value(json_object_get(st, "front")));
        if (load)
            printf("the load is %.2f per CPU, above start_max_load %.2f\n", json_number_value(load),
                   (double)max / 100);
        else
            printf("for the services it is started after\n");
    }
    json_decref(req);
    json_decref(reply);
}

/* Under the table, on stderr: the daemon's PostgreSQL registry does not
 * answer (its ping's registry_error). The table then lacks the other
 * machines' servers, and they do not see this one's; ls said nothing. */
static void warn_registry(void)
{
    json_t *req = json_pack("{s:s}", "op", "ping"), *reply = NULL;
    char err[256], host[256], port[32];
    if (req && cli_call(req, 0, &reply, err, sizeof err) == 0) {
        const char *reg = json_string_value(json_object_get(reply, "registry"));
        const char *why = json_string_value(json_object_get(reply, "registry_error"));
        if (reg && why && json_is_false(json_object_get(reply, "registry_ok"))) {
            reg_pg_where(reg, host, sizeof host, port, sizeof port);
            fprintf(stderr,
                    "wtproxy: WARNING: the registry does not answer (%s): other machines' "
                    "servers are not listed, nor do they see this machine's; routing goes on "
                    "from the daemon's own copy. Start it; check that it answers: pg_isready -h "
                    "%s -p %s\n",
                    why, host, port);
        }
    }
    json_decref(req);
    json_decref(reply);
}

/* Under the table, on stderr: a `wtproxy run` wrapper of e whose binary
 * was replaced (an install, a rebuild) lacks this build's guarantees, and
 * `wtproxy restart` restarts its server, not it: a stop replaces both,
 * with the .wtproxy's start (restart then) or the next `wtproxy run`. */
static void warn_wrapper(json_t *e)
{
    char exe[PATH_MAX], again[600], prog[256];
    if (!cli_wrapper_replaced(e, exe, sizeof exe))
        return;
    host_self_program(prog, sizeof prog, NULL, 0);
    const char *wt = json_string_value(json_object_get(e, "worktree"));
    long long front = json_integer_value(json_object_get(e, "front"));
    if (json_is_true(json_object_get(e, "daemon_started")))
        snprintf(again, sizeof again, " && %s restart --front %lld", prog, front);
    else
        snprintf(again, sizeof again, "; then the next wtproxy run starts it under this build");
    fprintf(stderr,
            "wtproxy: WARNING: %s's server on front %lld runs under the wtproxy run (pid %lld) of "
            "%s, replaced on disk since it started: that wrapper keeps its own build's behaviour "
            "(an older one's server outlives its kill -9), and wtproxy restart restarts the "
            "server, not the wrapper. Replace both: cd %s && %s stop --front %lld%s\n",
            wt ? wt : "?", front, (long long)json_integer_value(json_object_get(e, "pid")), exe,
            wt ? wt : "?", prog, front, again);
}

/* Under the table, on stderr: the daemon, or a server's wrapper, is
 * another build than this command (an install over them): they behave
 * as that build, and nothing else says so. */
static void warn_builds(json_t *entries)
{
    json_t *ping = cli_ping(0), *e;
    char said[PATH_MAX + 256], serve[2 * PATH_MAX + 2560], prog[256];
    size_t i;
    if (ping && cli_daemon_other_build(ping, said, sizeof said)) {
        cli_serve_cmd(ping, NULL, 0, serve, sizeof serve);
        host_self_program(prog, sizeof prog, NULL, 0);
        fprintf(stderr, "wtproxy: WARNING: %s; restart it as this one: %s stop --daemon && %s\n",
                said, prog, serve);
    }
    json_decref(ping);
    json_array_foreach(entries, i, e)
        warn_wrapper(e);
}

int cli_ls_main(int argc, char **argv)
{
    int json = 0, exited = 0;
    const struct cli_opt opts[] = {
        {"json", NULL, &json}, {"exited", NULL, &exited}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0) {
        fprintf(stderr, "wtproxy ls: %s (see wtproxy ls --help)\n", err);
        return 2;
    }
    json_t *req = json_pack("{s:s}", "op", "list"), *reply = NULL;
    r = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", req ? err : "out of memory");
        return 1;
    }
    json_t *entries = json_object_get(reply, "entries");
    if (!json_is_true(json_object_get(reply, "ok")) || !json_is_array(entries)) {
        r = cli_report(reply);
    } else if (json || exited) {
        /* --json stays the entries' array that scripts read */
        json_t *gone = exited ? cli_exited_of(reply, NULL) : NULL;
        char *text = json_dumps(exited ? gone : entries, JSON_INDENT(2));
        r = text ? 0 : 1;
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(gone);
    } else {
        json_t *gone = cli_exited_of(reply, NULL);
        r = print_table(entries, json_array_size(gone) > 0);
        print_exited(gone);
        print_waiting();
        warn_registry();
        warn_builds(entries);
        json_decref(gone);
    }
    json_decref(reply);
    return r;
}
