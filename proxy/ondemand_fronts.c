/* ondemand_fronts.c - a .wtproxy that declares a front this daemon does
 * not listen on (ondemand.h), said once in the daemon's log. The daemon
 * still starts the service there: its siblings call it by that port (a
 * Vite proxy to the API's front), so the fix is the daemon's listen, which
 * only the person who started the daemon can change; and that person
 * reads the daemon's log, not the server's. */
#include "ondemand.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ondemand_int.h"

static int listens_on(const struct proxy_server *s, int port)
{
    for (int i = 0; i < s->nlisteners; i++)
        if (s->listeners[i].port == port)
            return 1;
    return 0;
}

/* " --listen P" for each port the daemon listens on, then for front:
 * a `wtproxy serve` that drops none of today's fronts. Bare ports:
 * 127.0.0.1 and ::1, as doctor's fix. */
static void serve_args(const struct proxy_server *s, int front, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < s->nlisteners && used < len; i++) {
        int p = s->listeners[i].port, seen = 0;
        for (int k = 0; k < i; k++)
            seen |= s->listeners[k].port == p;
        if (!seen)
            used += (size_t)snprintf(out + used, len - used, " --listen %d", p);
    }
    if (used < len)
        snprintf(out + used, len - used, " --listen %d", front);
}

/* Whether front was said already (and remember it now). */
static int said_before(struct ondemand *a, int front)
{
    for (int i = 0; i < a->nunheard; i++)
        if (a->unheard[i] == front)
            return 1;
    if (a->nunheard < ONDEMAND_MAX_UNHEARD)
        a->unheard[a->nunheard++] = front;
    return 0;
}

void ondemand_check_fronts(struct ondemand *a, const char *worktree, const struct wtfile *f)
{
    struct proxy_server *s = a->srv;
    for (int i = 0; i < f->n; i++) {
        int front = f->svc[i].front;
        if (s->nlisteners == 0 || listens_on(s, front) || said_before(a, front))
            continue;
        char serve[16 * WTP_MAX_LISTEN + 32];
        serve_args(s, front, serve, sizeof serve);
        proxy_log("%s/.wtproxy declares %s%s%son front :%d, which this daemon (pid %d) does not "
                  "listen on: the server it starts there gets no request through wtproxy, and "
                  "a call to :%d (from a sibling service or a test) reaches whatever else "
                  "listens there. Make the daemon listen on every front (the registrations "
                  "survive its restart): kill %d && tail --pid=%d -f /dev/null; wtproxy "
                  "serve%s (or one listen = line per port in its config file)",
                  worktree, f->svc[i].name[0] ? "service `" : "a server ", f->svc[i].name,
                  f->svc[i].name[0] ? "` " : "", front, (int)getpid(), front, (int)getpid(),
                  (int)getpid(), serve);
    }
}
