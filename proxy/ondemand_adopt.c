/* ondemand_adopt.c - the servers a daemon before this one started from a
 * `.wtproxy` and left running when it died (registry/PROTOCOL.md,
 * "Liveness"). Each entry loaded from the state file whose wrapper a daemon
 * started (`daemon_started`) is matched against its worktree's `.wtproxy`
 * as it is now, read on the reader's worker; one that is still the service
 * the file declares on its front (same name) becomes this daemon's: its
 * idle time counts from its adoption, and idle_stop stops it through its
 * wrapper as one this daemon started (ondemand.c's sweep). Without this, a
 * machine whose daemon crashed keeps every such server for ever. Hand-run
 * servers (`wtproxy run`, `register`) are never the daemon's child, so
 * never adopted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ondemand_int.h"

/* One adoption waiting for its worktree's file: the entry as loaded. */
struct adoption {
    struct ondemand *a;
    int front;
    pid_t pid;
    char service[REG_SERVICE_MAX];
    char worktree[PATH_MAX];
};

/* Why the file read does not make ad's server the declared service on
 * its front; NULL when it does (*svc its index in f). */
static const char *not_declared(const struct adoption *ad, int rc, const struct wtfile *f,
                                const char *err, int *svc)
{
    const struct wtfile_service *s = rc == 0 ? wtfile_by_front(f, ad->front) : NULL;
    if (rc == ONDEMAND_TIMED_OUT)
        return "reading its .wtproxy took longer than start_timeout";
    if (rc != 0)
        return rc == 1 ? "its worktree has no .wtproxy any more" : err;
    if (!s)
        return "its .wtproxy declares no service on that front any more";
    if (strcmp(s->name, ad->service) != 0)
        return "its .wtproxy declares another service on that front now";
    *svc = (int)(s - f->svc);
    return NULL;
}

static void adopt_read(void *arg, const char *worktree, int rc, const struct wtfile *f,
                       const char *err)
{
    struct adoption *ad = arg;
    struct ondemand *a = ad->a;
    struct reg_backend *b = ondemand_registered(a, ad->worktree, ad->front);
    struct started *e = ondemand_find(a, ad->worktree, ad->front);
    int svc = 0;
    const char *why = not_declared(ad, rc, f, err, &svc);
    (void)worktree; /* the entry's, resolved already */
    if ((rc < 0 && !f) || !b || b->pid != ad->pid ||
        (e && (ondemand_running(a, e) || e->waiting))) {
        free(ad); /* the daemon stops (the next adopts it), or the server ended or was
                   * replaced while the file was read */
        return;
    }
    if (why) {
        proxy_log("left %s's server on front :%d (wrapper pid %d), started from its .wtproxy by "
                  "the daemon before, running without idle_stop: %s; stop it when done: wtproxy "
                  "stop %s --front %d",
                  ad->worktree, ad->front, (int)ad->pid, why, ad->worktree, ad->front);
    } else if (!(e = ondemand_slot(a, ad->worktree, f, svc))) {
        proxy_log("left %s's server on front :%d (wrapper pid %d) running without idle_stop: "
                  "the daemon keeps %d servers it started already; stop it when done: wtproxy "
                  "stop %s --front %d",
                  ad->worktree, ad->front, (int)ad->pid, ONDEMAND_MAX, ad->worktree, ad->front);
    } else {
        e->pid = ad->pid;
        e->status = 0;
        e->waiting = 0;
        e->adopted = 1;
        e->adopted_ms = (long long)proxy_now_ms(a->srv);
        char idle[64] = "its idle_stop is 0: it runs until stopped";
        if (e->svc.idle_ms)
            snprintf(idle, sizeof idle, "idle_stop (%llu ms) counts from now", e->svc.idle_ms);
        proxy_log("adopted %s's server%s%s (wrapper pid %d, front :%d), started from its .wtproxy "
                  "by the daemon before: %s",
                  e->worktree, e->svc.name[0] ? " for service " : "", e->svc.name, (int)e->pid,
                  e->svc.front, idle);
    }
    free(ad);
}

void ondemand_adopt(struct ondemand *a)
{
    struct reg_table *t = a->srv->reg ? reg_server_table(a->srv->reg) : NULL;
    for (size_t i = 0; t && i < reg_table_count(t); i++) {
        struct reg_backend *b = reg_table_at(t, i);
        struct adoption *ad;
        if (!b->restored || !b->daemon_started || b->pid <= 0 || !(ad = calloc(1, sizeof *ad)))
            continue;
        ad->a = a;
        ad->front = b->front;
        ad->pid = b->pid;
        snprintf(ad->service, sizeof ad->service, "%s", b->service);
        snprintf(ad->worktree, sizeof ad->worktree, "%s", b->worktree);
        if (!ondemand_read_later(a, b->worktree, a->srv->cfg.start_timeout_ms, adopt_read, ad))
            free(ad);
    }
}
