/* route.c - see route.h. Caller identification by process (issue #4)
 * comes before the default backend here. */
#include "route.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROUTE_MAX_CANDIDATES 8

/* "wt-a.localhost" or "wt-a.localhost:8000" -> "wt-a"; else 0. */
static int localhost_name(const struct http_field *host, char *name, size_t len)
{
    static const char suffix[] = ".localhost";
    size_t n = host->vlen;
    const char *colon = memchr(host->value, ':', n);
    if (colon)
        n = (size_t)(colon - host->value);
    size_t slen = sizeof suffix - 1;
    if (n <= slen || strncasecmp(host->value + n - slen, suffix, slen) != 0 || n - slen >= len)
        return 0;
    memcpy(name, host->value, n - slen);
    name[n - slen] = '\0';
    return 1;
}

static struct reg_backend *by_hint(struct reg_table *t, int front, const char *hint,
                                   enum proxy_error *e)
{
    struct reg_backend *found[ROUTE_MAX_CANDIDATES], *b = NULL;
    char real[PATH_MAX];
    if (hint[0] == '/') {
        b = reg_table_get(t, front, hint);
        if (!b && realpath(hint, real))
            b = reg_table_get(t, front, real);
    } else {
        size_t n = reg_table_by_name(t, front, hint, found, ROUTE_MAX_CANDIDATES);
        if (n > 1) {
            *e = PE_AMBIGUOUS_WORKTREE;
            return NULL;
        }
        b = n ? found[0] : NULL;
    }
    if (!b || b->state == REG_DEAD) {
        *e = PE_NO_BACKEND;
        return NULL;
    }
    return reg_backend_ref(b);
}

struct reg_backend *route_request(struct proxy_server *s, int front, const struct http_msg *m,
                                  enum proxy_error *e, char *name, size_t namelen)
{
    const struct http_field *h = http_msg_field(m, "x-wtproxy-worktree", NULL);
    name[0] = '\0';
    if (h && h->vlen < namelen) {
        memcpy(name, h->value, h->vlen);
        name[h->vlen] = '\0';
    } else if ((h = http_msg_field(m, "host", NULL))) {
        localhost_name(h, name, namelen);
    }
    if (name[0] && s->reg)
        return by_hint(reg_server_table(s->reg), front, name, e);
    if (s->backend)
        return reg_backend_ref(s->backend);
    *e = PE_NO_BACKEND;
    return NULL;
}

void route_explain(struct proxy_server *s, int front, enum proxy_error e, const char *name,
                   char *buf, size_t len)
{
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    size_t n = t ? reg_table_count(t) : 0, used = 0, shown = 0;
    if (e == PE_AMBIGUOUS_WORKTREE)
        used = (size_t)snprintf(buf, len, "\"%s\" names several worktrees on front :%d; name one "
                                          "by its path in X-Wtproxy-Worktree:", name, front);
    else if (name[0])
        used = (size_t)snprintf(buf, len, "no dev server is registered for worktree %s on "
                                          "front :%d; registered:", name, front);
    else
        used = (size_t)snprintf(buf, len, "this request names no worktree and wtproxy has no "
                                          "default backend; registered on front :%d:", front);
    for (size_t i = 0; i < n && used < len; i++) {
        struct reg_backend *b = reg_table_at(t, i);
        if (b->front != front || b->state == REG_DEAD)
            continue;
        if (e == PE_AMBIGUOUS_WORKTREE && strcmp(reg_worktree_name(b), name) != 0)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s %s", shown++ ? "," : "", b->worktree);
    }
    if (!shown && used < len)
        used += (size_t)snprintf(buf + used, len - used, " none");
    if (used < len)
        snprintf(buf + used, len - used, ". Start yours from its worktree: wtproxy run -- "
                                         "<server command with {port}>");
}
