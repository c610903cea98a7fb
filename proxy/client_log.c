/* client_log.c - a line of the daemon's log about one connection's
 * request: a refusal, a dropped header, a response cut short, a timeout,
 * a dashboard answer. Each can happen once per request, so a load test, a
 * browser's retry loop or a broken backend makes them by the thousand a
 * second; they go through log_flood.c, which writes the first of a kind at
 * once and counts the rest. */
#include "client.h"

#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "log_flood.h"

void conn_log(struct proxy_client *c, const char *what, const char *fmt, ...)
{
    char kind[WTP_LOG_FLOOD_KIND_LEN];
    const struct identify_kept *p = c->who;
    snprintf(kind, sizeof kind, "%.96s, caller's worktree %.128s, named %.64s, backend %.48s", what,
             p && p->placed && p->worktree[0] ? p->worktree : "-",
             strchr(c->path, ' ') && c->route_name[0] ? c->route_name : "-",
             c->backend ? c->backend->name : "-");
    va_list ap;
    va_start(ap, fmt);
    log_flood_vline(c->srv->flood, kind, fmt, ap);
    va_end(ap);
}
