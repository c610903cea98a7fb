/* refusals.c - `wtproxy refusals [WORKTREE | --worktree DIR | --all]
 * [--since D] [--limit N] [--json]`: what the daemon refused lately that concerns a worktree (the
 * `refusals` op: the dashboard's records), each with its time, request,
 * status, reason, the sentence its caller got and the page's fix.
 * A test whose page swallowed a failed fetch fails on an unrelated
 * assertion; this says what wtproxy answered instead, where the test's
 * reader looks. The Playwright reporter of the Node package reads --json. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refusal_log.h" /* WTP_REFUSAL_LOG_SIZE: all the daemon keeps */

#define DEFAULT_LIMIT 20 /* without --since: the newest, a screenful */
#define PROCESS_SHOWN 60 /* of a caller's command line */

struct refusals_args {
    const char *dir, *since, *limit;
    int all, json;
    long long since_ms; /* 0: no --since */
    long max;
    char worktree[PATH_MAX];
};

/* Flags, then WORKTREE and more flags, into a. 0, 1 help, -1 with err. */
static int parse(int argc, char **argv, struct refusals_args *a, char *err, size_t errlen)
{
    const struct cli_opt opts[] = {{"all", NULL, &a->all},      {"json", NULL, &a->json},
                                   {"since", &a->since, NULL},  {"limit", &a->limit, NULL},
                                   {"worktree", &a->dir, NULL}, /* as cli_worktree's advice says */
                                   {NULL, NULL, NULL}};
    const char *named = NULL;
    int rest = argc, r = cli_parse(argc, argv, opts, &rest, err, errlen);
    if (r == 0 && rest < argc) {
        named = argv[rest];
        r = cli_parse(argc - rest, argv + rest, opts, NULL, err, errlen);
    }
    if (r != 0)
        return r;
    if (!!a->all + !!a->dir + !!named > 1) {
        snprintf(err, errlen, "give one of WORKTREE, --worktree DIR and --all");
        return -1;
    }
    if (named)
        a->dir = named;
    if (a->since && cli_duration("since", a->since, &a->since_ms, err, errlen) < 0)
        return -1;
    a->max = a->since ? WTP_REFUSAL_LOG_SIZE : DEFAULT_LIMIT;
    if (a->limit && cli_number(a->limit, 1, WTP_REFUSAL_LOG_SIZE, &a->max) < 0) {
        snprintf(err, errlen, "--limit \"%s\" is not a number from 1 to %d", a->limit,
                 WTP_REFUSAL_LOG_SIZE);
        return -1;
    }
    return a->all ? 0 : cli_worktree_holding(a->dir, a->worktree, sizeof a->worktree, err, errlen);
}

/* The op's records (a new reference), or NULL after saying why on
 * stderr. Every kept one is asked for: --since is judged here, on the
 * records' own times, before --limit keeps the newest. */
static json_t *ask(const struct refusals_args *a)
{
    json_t *req = json_pack("{s:s, s:i}", "op", "refusals", "limit", WTP_REFUSAL_LOG_SIZE);
    json_t *reply = NULL;
    char err[PATH_MAX + 256];
    if (req && !a->all)
        json_object_set_new(req, "worktree", json_string(a->worktree));
    int r = req ? cli_call(req, 0, &reply, err, sizeof err) : -1;
    json_decref(req);
    if (r < 0) {
        fprintf(stderr, "wtproxy: %s\n", req ? err : "out of memory");
        return NULL;
    }
    json_t *list = json_object_get(reply, "refusals");
    if (!json_is_true(json_object_get(reply, "ok")) || !json_is_array(list)) {
        cli_report(reply);
        json_decref(reply);
        return NULL;
    }
    json_incref(list);
    json_decref(reply);
    return list;
}

/* The records of all (oldest first) within --since, the newest a->max. */
static json_t *select_recent(json_t *all, const struct refusals_args *a)
{
    long long from = a->since_ms ? host_wall_ms() - a->since_ms : 0;
    json_t *out = json_array(), *r;
    size_t i;
    json_array_foreach(all, i, r)
        if (json_integer_value(json_object_get(r, "time_ms")) >= from)
            json_array_append(out, r);
    while (out && json_array_size(out) > (size_t)a->max)
        json_array_remove(out, 0);
    return out;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The page's Fix line under a record, its lines after the first indented
 * under it. */
static void print_fix(const char *fix)
{
    for (const char *line = fix, *nl; *line; line = nl + (*nl != '\0')) {
        nl = line + strcspn(line, "\n");
        printf("  %s%.*s\n", line == fix ? "Fix: " : "  ", (int)(nl - line), line);
    }
}

/* One record: its time and age, request, status and reason, who sent it,
 * then the sentence the caller got, each of its lines indented, and the
 * page's fix. */
static void print_one(json_t *r, int all, long long now)
{
    long long ms = json_integer_value(json_object_get(r, "time_ms"));
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char when[16] = "?", age[32];
    if (localtime_r(&secs, &tm))
        strftime(when, sizeof when, "%H:%M:%S", &tm);
    host_age(now - ms, age, sizeof age);
    printf("%s (%s ago)  %s -> %lld %s on :%lld\n", when, age, str(r, "request"),
           (long long)json_integer_value(json_object_get(r, "status")), str(r, "reason"),
           (long long)json_integer_value(json_object_get(r, "front")));
    json_int_t pid = json_integer_value(json_object_get(r, "caller_pid"));
    const char *wt = str(r, "caller_worktree");
    json_t *worker = json_object_get(r, "test_worker");
    char of_worker[48] = "";
    if (json_is_integer(worker))
        snprintf(of_worker, sizeof of_worker, ", Playwright worker %lld",
                 (long long)json_integer_value(worker));
    if (pid > 0)
        printf("  from pid %lld (%.*s)%s%s%s\n", (long long)pid, PROCESS_SHOWN,
               str(r, "caller_process"), of_worker, all && *wt ? " in " : "", all ? wt : "");
    for (const char *line = str(r, "detail"), *nl; *line; line = nl + (*nl != '\0')) {
        nl = line + strcspn(line, "\n");
        printf("  %.*s\n", (int)(nl - line), line);
    }
    print_fix(str(r, "fix"));
}

/* Nothing to show: said so, with what was looked at. */
static void print_none(const struct refusals_args *a)
{
    char span[64] = "";
    if (a->since)
        snprintf(span, sizeof span, " in the last %s", a->since);
    if (a->all)
        printf("wtproxy refused no request%s (it keeps its last %d refusals while it runs)\n", span,
               WTP_REFUSAL_LOG_SIZE);
    else
        printf("wtproxy refused no request of %s%s (it keeps its last %d refusals while it "
               "runs; every worktree's: wtproxy refusals --all)\n",
               a->worktree, span, WTP_REFUSAL_LOG_SIZE);
}

int cli_refusals_main(int argc, char **argv)
{
    struct refusals_args a = {0};
    char err[PATH_MAX + 256];
    int r = parse(argc, argv, &a, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0) {
        fprintf(stderr, "wtproxy refusals: %s (see wtproxy refusals --help)\n", err);
        return 2;
    }
    json_t *all = ask(&a), *shown = all ? select_recent(all, &a) : NULL;
    json_decref(all);
    if (!shown)
        return 1;
    if (a.json) {
        char *text = json_dumps(shown, JSON_INDENT(2));
        if (text)
            printf("%s\n", text);
        r = text ? 0 : 1;
        free(text);
    } else if (json_array_size(shown) == 0) {
        print_none(&a);
    } else {
        long long now = host_wall_ms();
        size_t i;
        json_t *one;
        json_array_foreach(shown, i, one) {
            if (i)
                putchar('\n');
            print_one(one, a.all, now);
        }
    }
    json_decref(shown);
    return r;
}
