/* dash_api.c - the dashboard's JSON (DASHBOARD.md): each registration as
 * `wtproxy ls --json` has it (reg_backend_to_json), plus what a person
 * wants to see next to it: the folder name, the branch, one status word
 * with its reason, the last request and the last refusal; then the starts
 * that wait and the servers that exited lately. */
#include "dash.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "ondemand.h"
#include "refusal_log.h"
#include "server.h"

/* The state a person reads: the registry's (starting, ready, dead) with
 * the whoami gate's verdict over it (stale, or refused for another
 * checkout, no /__whoami or a bad answer; checking while the daemon asks
 * it again after an edit, never ready-and-verified meanwhile); reason
 * says why. */
static const char *status_of(const struct reg_backend *b, char *reason, size_t len)
{
    const char *w = b->whoami.state;
    if (b->state == REG_DEAD) {
        snprintf(reason, len, "its server ended; the entry is about to be dropped");
        return "dead";
    }
    if (strcmp(w, "stale") == 0 || strcmp(w, "mismatch") == 0 || strcmp(w, "no-whoami") == 0 ||
        strcmp(w, "invalid") == 0 || strcmp(w, "app-error") == 0 || strcmp(w, "broken") == 0) {
        snprintf(reason, len, "%s", b->whoami.detail[0] ? b->whoami.detail : w);
        return w[0] == 's' ? "stale" : "refused";
    }
    if (b->state == REG_STARTING && b->start_failed[0] && b->start_failed_when == REG_FAILED_PORT) {
        const char *nl = strchr(b->start_failed, '\n'); /* the wrapper's line: which port */
        snprintf(reason, len,
                 "pid %d listens on another port than %d, the one wtproxy gave it: its start "
                 "ignores {port}; put {port} where its command takes its port, then restart it; "
                 "%.*s",
                 (int)b->pid, b->port, nl ? (int)(nl - b->start_failed) : 900, b->start_failed);
        return "failed";
    }
    if (b->state == REG_STARTING && b->start_failed[0] && b->start_failed_when == REG_FAILED_DIED) {
        const char *nl = strchr(b->start_failed, '\n'); /* the wrapper's line: which died, how */
        snprintf(reason, len, "%.*s; restart it: wtproxy restart --front %d",
                 nl ? (int)(nl - b->start_failed) : 900, b->start_failed, b->front);
        return "failed";
    }
    if (b->state == REG_STARTING && b->start_failed[0]) {
        size_t n;
        const char *error = host_error_line(b->start_failed, &n);
        snprintf(reason, len,
                 "%s; pid %d lives on without listening, waiting for a change to its files: fix "
                 "it and save (%s restarts it); its error: %.*s",
                 b->start_failed_when == REG_FAILED_EDIT
                     ? "an edit broke it: its reloader restarted it and the new "
                       "server failed"
                     : "failed at start",
                 (int)b->pid, b->reloader[0] ? b->reloader : "its autoreloader",
                 (int)(n < 900 ? n : 900), error);
        return "failed";
    }
    if (b->state == REG_STARTING && b->not_ready[0]) {
        char since[32];
        host_age(host_wall_ms() - b->not_ready_ms, since, sizeof since);
        snprintf(reason, len,
                 "pid %d listens on port %d, but its ready path did not answer 2xx or 3xx: %s, "
                 "each time for the last %s",
                 (int)b->pid, b->port, b->not_ready, since);
        return "starting";
    }
    if (b->state == REG_STARTING) {
        snprintf(reason, len, "registered; waiting for pid %d to listen on port %d", (int)b->pid,
                 b->port);
        return "starting";
    }
    if (strcmp(w, "changed") == 0 || strcmp(w, "taking-in") == 0) {
        snprintf(reason, len, "listening on port %d; %s", b->port, b->whoami.detail);
        return "checking";
    }
    if (strcmp(w, "verified") == 0)
        snprintf(reason, len,
                 "listening on port %d; /__whoami says it serves this worktree's "
                 "current code",
                 b->port);
    else if (strcmp(w, "trusted") == 0)
        snprintf(reason, len,
                 "listening on port %d; no /__whoami, trusted from its "
                 "registration (--trust-registry)",
                 b->port);
    else if (b->whoami.detail[0]) /* unchecked: asked now, or nothing answered it */
        snprintf(reason, len, "registered on port %d; /__whoami not checked yet: %s", b->port,
                 b->whoami.detail);
    else
        snprintf(reason, len, "listening on port %d; /__whoami not checked yet", b->port);
    return "ready";
}

/* What b's worktree's .wtproxy declares (ondemand_services_known: as a
 * worker last read it, never read here; or null), once per worktree per
 * answer: cache holds them by worktree. */
static json_t *declared_of(struct proxy_server *s, json_t *cache, const char *worktree)
{
    json_t *d = json_object_get(cache, worktree);
    if (!d) {
        d = worktree[0] ? ondemand_services_known(s, worktree) : NULL;
        if (!d)
            d = json_null();
        json_object_set_new(cache, worktree, d);
    }
    return json_incref(d);
}

static json_t *backend_json(struct proxy_server *s, const struct reg_backend *b, json_t *cache)
{
    json_t *o = reg_backend_to_json(b);
    if (!o)
        return NULL;
    char branch[PATH_MAX], reason[1280];
    host_worktree_branch(b->worktree, branch, sizeof branch);
    const char *status = status_of(b, reason, sizeof reason);
    json_t *last = refusal_log_last_for(s->refusals, b->front, b->worktree);
    json_object_set_new(o, "name", json_string(reg_worktree_name(b)));
    json_object_set_new(o, "branch", json_string(branch));
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "status_reason", json_string(reason));
    json_object_set_new(o, "last_request_ms", json_integer(b->last_request_ms));
    json_object_set_new(o, "active", json_integer(b->active));
    json_object_set_new(o, "last_refusal", last ? last : json_null());
    json_object_set_new(o, "declared", declared_of(s, cache, b->worktree));
    return o;
}

/* A row that is no registration (a start that waits, a server that
 * exited) named as registrations are: worktree's folder, branch, status. */
static void label_row(json_t *o, const char *wt, const char *status)
{
    char branch[PATH_MAX];
    const char *slash = strrchr(wt, '/');
    host_worktree_branch(wt, branch, sizeof branch);
    json_object_set_new(o, "name", json_string(slash ? slash + 1 : wt));
    json_object_set_new(o, "branch", json_string(branch));
    json_object_set_new(o, "status", json_string(status));
}

/* A start that waits (ondemand_pending's p) as a row of the backends:
 * "pending": true, its state and why, so that the page shows what waits
 * (for the services it needs, or for the machine's load) and the load. */
static json_t *pending_json(struct proxy_server *s, json_t *p, json_t *cache)
{
    const char *wt = json_string_value(json_object_get(p, "worktree"));
    const char *state = json_string_value(json_object_get(p, "state"));
    json_t *load = json_object_get(p, "load");
    char reason[256];
    unsigned max = s->cfg.start_max_load_pct;
    if (load)
        snprintf(reason, sizeof reason,
                 "waits to start: the load is %.2f per CPU, above "
                 "start_max_load %u.%02u",
                 json_number_value(load), max / 100, max % 100);
    else
        snprintf(reason, sizeof reason, "waits to start: for the services it is started after");
    json_t *o = json_deep_copy(p);
    json_object_set_new(o, "pending", json_true());
    label_row(o, wt, state);
    json_object_set_new(o, "status_reason", json_string(reason));
    json_object_set_new(o, "declared", declared_of(s, cache, wt));
    return o;
}

/* A server that exited lately (reg_server_exited's x) as a row of the
 * backends: "exited": true, its exit, last lines and how to start it
 * again, where the row of its registration was ("gone" told nothing of
 * why). Every user's: the page lists every registration too. */
static json_t *exited_json(struct proxy_server *s, json_t *x, json_t *cache)
{
    const char *wt = json_string_value(json_object_get(x, "worktree"));
    json_t *status = json_object_get(x, "status");
    char reason[PATH_MAX + 1600];
    const char *rerun = json_string_value(json_object_get(x, "rerun"));
    char again[PATH_MAX + 1100];
    if (json_is_true(json_object_get(x, "daemon_started")))
        snprintf(again, sizeof again,
                 "Start here, wtproxy restart %s, or a request there (the daemon starts the "
                 "server its .wtproxy declares)",
                 wt);
    else
        snprintf(again, sizeof again, "cd %s && %s", wt,
                 rerun ? rerun : "wtproxy run -- <its command with {port}>");
    /* No age: the JSON is sent again whenever it changes (the page shows
     * ended_ms's age itself). */
    char how[256];
    int killed =
        host_exit_words(status ? (int)json_integer_value(status) : -1,
                        (int)json_integer_value(json_object_get(x, "signal")),
                        json_string_value(json_object_get(x, "command")), NULL, how, sizeof how);
    /* A removed worktree has nothing to restart: `restart` fails there. */
    if (wt && host_worktree_removed(wt))
        snprintf(reason, sizeof reason,
                 "its server %s, and its worktree was removed since (git worktree remove): "
                 "nothing to start again there",
                 how);
    else
        snprintf(reason, sizeof reason, "its server %s; %s start it again: %s", how,
                 killed ? HOST_EXIT_KILLED ";"
                 : host_printed_nothing(json_string_value(json_object_get(x, "lines")))
                     ? "find in its log why it exited and fix that, then"
                     : "fix the error its last lines name, then",
                 again);
    json_t *o = json_deep_copy(x);
    json_object_set_new(o, "exited", json_true());
    label_row(o, wt, "exited");
    json_object_set_new(o, "status_reason", json_string(reason));
    json_object_set_new(o, "declared", declared_of(s, cache, wt));
    return o;
}

json_t *dash_api_backends(struct proxy_server *s)
{
    json_t *arr = json_array(), *cache = json_object(), *p;
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    for (size_t i = 0; arr && cache && t && i < reg_table_count(t); i++) {
        json_t *o = backend_json(s, reg_table_at(t, i), cache);
        if (o)
            json_array_append_new(arr, o);
    }
    json_t *pending = s->ondemand ? ondemand_pending(s->ondemand) : NULL;
    size_t i;
    json_array_foreach(pending, i, p)
        if (arr && cache)
            json_array_append_new(arr, pending_json(s, p, cache));
    json_decref(pending);
    json_t *exited = s->reg ? reg_server_exited(s->reg, 0) : NULL, *x;
    json_array_foreach(exited, i, x)
        if (arr && cache)
            json_array_append_new(arr, exited_json(s, x, cache));
    json_decref(exited);
    json_decref(cache);
    return arr;
}

json_t *dash_api_daemon(struct proxy_server *s)
{
    json_t *listen = json_array(), *fronts = json_array();
    for (int i = 0; listen && fronts && i < s->nlisteners; i++) {
        json_array_append_new(listen, json_string(s->listeners[i].name));
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= s->listeners[j].port == s->listeners[i].port;
        if (!seen)
            json_array_append_new(fronts, json_integer(s->listeners[i].port));
    }
    return json_pack("{s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:i}", "version", WTP_VERSION, "build",
                     host_build(), "pid", (int)getpid(), "machine", reg_machine_id(), "listen",
                     listen ? listen : json_array(), "fronts", fronts ? fronts : json_array(),
                     "default_backend", s->backend ? json_string(s->backend->name) : json_null(),
                     "refusal_log_size", WTP_REFUSAL_LOG_SIZE);
}

json_t *dash_api_leases(struct proxy_server *s, dash_leases_cb cb, void *arg, void **job)
{
    *job = NULL;
    if (!s->reg)
        return json_pack("{s:s, s:s}", "store", "embedded", "error",
                         "this daemon runs without a registry, so it holds no leases");
    return reg_server_leases(s->reg, cb, arg, job);
}

void dash_api_leases_cancel(struct proxy_server *s, void *job)
{
    if (s->reg)
        reg_server_cancel(s->reg, job);
}
