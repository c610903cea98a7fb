/* doctor_checks.c - `wtproxy doctor`'s checks of the daemon and of this
 * worktree's server: the daemon owns the front port (else who does, in
 * the daemon's own words for a taken port), this folder is a worktree,
 * it has a .wtproxy or a registered server, and that server answers
 * /__whoami with this checkout and the fingerprint of the code on disk
 * now (the gate's contract, asked with the gate's own fetch and parser). */
#include <event2/event.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "fetch.h"
#include "port_taken.h"
#include "whoami.h"

void doc_daemon(struct doc_ctx *c, struct doc_result *r)
{
    if (c->ping) {
        long pid = (long)json_integer_value(json_object_get(c->ping, "pid"));
        char *listen = json_dumps(json_object_get(c->ping, "listen"), JSON_COMPACT);
        if (cli_listens_on(c->ping, c->front) == 1) {
            doc_set(r, DOC_OK, "wtproxy daemon pid %ld listens on %s", pid, listen ? listen : "?");
        } else {
            doc_set(r, DOC_PROBLEM,
                    "the daemon (pid %ld) listens on %s, not on port %d: "
                    "requests to localhost:%d do not reach it",
                    pid, listen ? listen : "?", c->front, c->front);
            if (c->file_err[0]) /* its front unreadable: 8000 is a guess, not a reason */
                snprintf(r->fix, sizeof r->fix,
                         "correct the .wtproxy first (see the server check), then run "
                         "wtproxy doctor again");
            else
                snprintf(r->fix, sizeof r->fix, "kill %ld; wtproxy serve --listen 127.0.0.1:%d",
                         pid, c->front);
        }
        free(listen);
        return;
    }
    char taken[1024];
    struct host_port_owner o;
    if (host_port_owner_find(c->front, &o)) {
        proxy_port_taken("127.0.0.1", c->front, taken, sizeof taken);
        doc_set(r, DOC_PROBLEM, "no wtproxy daemon answers (%s), and %s", c->daemon_err, taken);
        if (o.pid > 0)
            snprintf(r->fix, sizeof r->fix, "kill %ld", (long)o.pid);
        else
            snprintf(r->fix, sizeof r->fix, "ss -ltnp 'sport = :%d'", c->front);
        return;
    }
    doc_set(r, DOC_PROBLEM, "no wtproxy daemon answers: %s", c->daemon_err);
    if (c->front == WTP_DEFAULT_FRONT_PORT)
        snprintf(r->fix, sizeof r->fix, "wtproxy serve");
    else
        snprintf(r->fix, sizeof r->fix, "wtproxy serve --listen 127.0.0.1:%d", c->front);
}

void doc_worktree(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->have_wt) {
        doc_set(r, DOC_PROBLEM, "%s", c->wt_err);
        snprintf(r->fix, sizeof r->fix,
                 "cd into your app's git worktree and run wtproxy doctor "
                 "there");
        return;
    }
    doc_set(r, DOC_OK, "%s (branch %s)%s%s", c->wt.root, c->wt.branch[0] ? c->wt.branch : "?",
            c->wt.note[0] ? "; " : "", c->wt.note);
}

void doc_server(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->have_wt) {
        doc_set(r, DOC_SKIP, "not in a worktree");
        return;
    }
    if (c->entry) {
        doc_set(r, DOC_OK, "registered on front %d: %s, pid %lld, %s", c->front,
                json_string_value(json_object_get(c->entry, "backend")),
                json_integer_value(json_object_get(c->entry, "pid")),
                json_string_value(json_object_get(c->entry, "state")));
        return;
    }
    if (c->has_file && c->file_err[0]) {
        doc_set(r, DOC_PROBLEM, "the daemon refuses the .wtproxy, so it starts no server: %s",
                c->file_err);
        snprintf(r->fix, sizeof r->fix,
                 "correct that line of the .wtproxy, then run wtproxy doctor again");
        return;
    }
    if (c->has_file && c->fronts[0]) {
        doc_set(r, DOC_PROBLEM,
                "no server runs now, and the .wtproxy declares none on front %d, only on%s: "
                "requests to :%d from here get 503 no-backend",
                c->front, c->fronts, c->front);
        snprintf(r->fix, sizeof r->fix,
                 "give the server meant for :%d front = %d in .wtproxy (or check another port: "
                 "wtproxy doctor --front PORT)",
                 c->front, c->front);
        return;
    }
    if (c->has_file) {
        doc_set(r, DOC_OK,
                "no server runs now; the .wtproxy makes the daemon start one on this "
                "worktree's first request");
        return;
    }
    if (c->main_has_file) { /* the daemon's 503 says the same (ondemand_reader.c) */
        char main[PATH_MAX];
        cli_main_checkout(&c->wt, main, sizeof main);
        doc_set(r, DOC_PROBLEM,
                "no server runs now, and this worktree (branch %s) has no .wtproxy: the daemon "
                "starts a worktree's servers only from its own, and %s/.wtproxy is in the main "
                "checkout only. Requests from here get 503 no-backend",
                c->wt.branch[0] ? c->wt.branch : "?", main);
        snprintf(r->fix, sizeof r->fix,
                 "cp %.480s/.wtproxy %.480s/ (or merge the branch that added it)", main,
                 c->wt.root);
        return;
    }
    doc_set(r, DOC_PROBLEM,
            "no .wtproxy and no registered server%s: requests from here get "
            "503 no-backend",
            c->ping ? "" : " known (no daemon to ask)");
    snprintf(r->fix, sizeof r->fix, "wtproxy init --apply");
}

struct fetched {
    int done, status;
    enum whoami_fetch_result result;
    char *body;
    size_t len;
    char error[256];
};

static void on_fetch(void *arg, const struct whoami_fetch_reply *rep)
{
    struct fetched *f = arg;
    f->done = 1;
    f->result = rep->result;
    f->status = rep->status;
    snprintf(f->error, sizeof f->error, "%s", rep->error ? rep->error : "");
    if (rep->result == WF_OK && (f->body = malloc(rep->len + 1))) {
        memcpy(f->body, rep->body, rep->len);
        f->len = rep->len;
    }
}

/* GET /__whoami from backend ("HOST:PORT", [v6] bracketed) on a private
 * event loop, within DOC_WHOAMI_TIMEOUT_MS. 0 with f, -1 with f->error. */
static int fetch_whoami(const char *backend, struct fetched *f)
{
    char host[256];
    const char *colon = strrchr(backend, ':');
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM},
                    *ai = NULL;
    if (!colon || (size_t)(colon - backend) >= sizeof host)
        goto bad;
    snprintf(host, sizeof host, "%.*s", (int)(colon - backend - (backend[0] == '[') * 2),
             backend + (backend[0] == '['));
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        goto bad;
    struct event_base *base = event_base_new();
    struct whoami_fetch *wf = base ? whoami_fetch_start(base, ai->ai_addr, ai->ai_addrlen, backend,
                                                        DOC_WHOAMI_TIMEOUT_MS, on_fetch, f)
                                   : NULL;
    freeaddrinfo(ai);
    if (wf)
        event_base_dispatch(base);
    if (base)
        event_base_free(base);
    if (!wf)
        snprintf(f->error, sizeof f->error, "connection refused");
    return f->done && f->result == WF_OK ? 0 : -1;
bad:
    snprintf(f->error, sizeof f->error, "the entry's address %s is not HOST:PORT", backend);
    return -1;
}

/* The command that makes this worktree's registration right again, as
 * the gate's refusals say it (whoami/refusal.c): a `wtproxy run` server
 * (its entry has a log) is restarted, or stopped, through wtproxy; a
 * `register --pid` one ends with its pid; a TTL one (pid 0, where `kill 0`
 * would signal the reader's own process group) is unregistered. */
static void entry_fix(struct doc_ctx *c, int restart, char *out, size_t len)
{
    long pid = (long)json_integer_value(json_object_get(c->entry, "pid"));
    if (json_string_value(json_object_get(c->entry, "log")))
        snprintf(out, len, "wtproxy %s --front %d", restart ? "restart" : "stop", c->front);
    else if (pid > 0)
        snprintf(out, len, "kill %ld (then start it again: wtproxy run --front %d -- CMD {port})",
                 pid, c->front);
    else
        snprintf(out, len,
                 "wtproxy unregister --front %d (then start it: wtproxy run --front %d -- "
                 "CMD {port})",
                 c->front, c->front);
}

/* Compare a parsed answer with this checkout and its code on disk. */
static void judge(struct doc_ctx *c, const struct whoami_answer *a, struct doc_result *r)
{
    char real[PATH_MAX], err[PATH_MAX + 256];
    struct whoami_fp fp;
    if (!realpath(a->checkout, real) || strcmp(real, c->wt.root) != 0) {
        doc_set(r, DOC_PROBLEM, "the server (pid %ld) serves %s, not this worktree %s",
                (long)a->pid, a->checkout, c->wt.root);
        entry_fix(c, 0, r->fix, sizeof r->fix);
        return;
    }
    if (whoami_fp_compute(c->wt.root, &a->patterns, NULL, &fp, err, sizeof err) < 0) {
        doc_set(r, DOC_PROBLEM, "cannot fingerprint %s: %s", c->wt.root, err);
        snprintf(r->fix, sizeof r->fix, "wtproxy fingerprint --list %.900s", c->wt.root);
        return;
    }
    if (strcmp(fp.hash, a->hash) != 0) {
        doc_set(r, DOC_PROBLEM,
                "stale: the server (pid %ld, started %s) loaded %s, the code on "
                "disk is %s",
                (long)a->pid, a->started_at, a->hash, fp.hash);
        entry_fix(c, 1, r->fix, sizeof r->fix);
    } else {
        doc_set(r, DOC_OK,
                "the server (pid %ld) serves this checkout, current code %s (%zu "
                "files)",
                (long)a->pid, fp.hash, fp.n);
    }
    whoami_fp_free(&fp);
}

void doc_whoami(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->entry) {
        doc_set(r, DOC_SKIP, "no registered server to ask%s", c->ping ? "" : " (no daemon)");
        return;
    }
    const char *state = json_string_value(json_object_get(c->entry, "state"));
    if (!state || strcmp(state, "ready") != 0) {
        doc_set(r, DOC_SKIP,
                "the server is %s, not ready yet: run wtproxy doctor again once it "
                "listens",
                state ? state : "in no known state");
        return;
    }
    const char *backend = json_string_value(json_object_get(c->entry, "backend"));
    struct fetched f = {0};
    struct whoami_answer a;
    char err[512];
    if (fetch_whoami(backend ? backend : "", &f) < 0) {
        doc_set(r, DOC_PROBLEM, "GET http://%s/__whoami: %s", backend, f.error);
        entry_fix(c, 1, r->fix, sizeof r->fix);
    } else if (f.status != 200 || whoami_answer_parse(f.body, f.len, &a, err, sizeof err) < 0) {
        doc_set(r, DOC_PROBLEM,
                "GET http://%s/__whoami answered %d%s%s: the whoami middleware "
                "is missing or broken",
                backend, f.status, f.status == 200 ? ", " : "", f.status == 200 ? err : "");
        snprintf(r->fix, sizeof r->fix, "wtproxy init --apply");
    } else {
        judge(c, &a, r);
        whoami_answer_free(&a);
    }
    free(f.body);
}
