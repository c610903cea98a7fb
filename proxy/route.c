/* route.c - see route.h. */
#include "route.h"

#include "host.h"
#include "ondemand.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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

void route_hint(const struct http_msg *m, char *name, size_t len)
{
    const struct http_field *h = http_msg_field(m, "x-wtproxy-worktree", NULL);
    name[0] = '\0';
    if (h && h->vlen < len) {
        memcpy(name, h->value, h->vlen);
        name[h->vlen] = '\0';
    } else if ((h = http_msg_field(m, "host", NULL))) {
        localhost_name(h, name, len);
    }
}

static struct reg_table *table_of(struct proxy_server *s)
{
    return s->reg ? reg_server_table(s->reg) : NULL;
}

/* With no registration yet, a caller is still looked for when there is no
 * default backend: its worktree may declare a server to start (.wtproxy);
 * with a default backend and nothing registered, nobody pays for it. */
int route_needs_caller(struct proxy_server *s, const char *hint)
{
    if (hint[0] || !s->ident)
        return 0;
    return (table_of(s) && reg_table_count(table_of(s)) > 0) || (!s->backend && s->ondemand);
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

/* A caller of another user than the daemon's, which it could not place: a
 * daemon not run as root reads no other user's /proc. Its requests are
 * not this user's: the default backend, or a guess, would give its tests
 * a verdict on this user's code. */
static int other_users_caller(const struct identify_kept *who)
{
    return who && !who->placed && who->uid != (uid_t)-1 && who->uid != geteuid() && geteuid() != 0;
}

/* A caller of another user than the daemon's that it placed (a daemon run
 * as root reads every /proc), refused the server of its worktree: a
 * server of its own needs a daemon of its own, on a port of its own, since
 * `wtproxy run` as that user meets this one's port. */
static int placed_other_users_caller(const struct identify_kept *who)
{
    return who && who->placed && who->uid != geteuid();
}

struct reg_backend *route_pick(struct proxy_server *s, int front, const char *hint,
                               const struct identify_kept *who, enum proxy_error *e)
{
    struct reg_table *t = table_of(s);
    if (hint[0] && t)
        return by_hint(t, front, hint, e);
    if (who && who->placed && t) {
        struct reg_backend *b = reg_table_get(t, front, who->worktree);
        if (!b || b->state == REG_DEAD) {
            *e = PE_NO_BACKEND;
            return NULL;
        }
        /* One user's browser never reaches another user's server. */
        if (b->uid != who->uid) {
            *e = PE_OTHER_USER;
            return NULL;
        }
        return reg_backend_ref(b);
    }
    if (other_users_caller(who)) {
        *e = PE_OTHER_USER;
        return NULL;
    }
    if (s->backend)
        return reg_backend_ref(s->backend);
    *e = PE_NO_BACKEND;
    return NULL;
}

/* "registered on front :8000: /a, /b" (the ones named name, for an
 * ambiguous name); returns the bytes written. */
static size_t list_registered(struct reg_table *t, int front, const char *only, char *buf,
                              size_t len)
{
    size_t used = (size_t)snprintf(buf, len, " Registered on front :%d:", front), shown = 0;
    for (size_t i = 0; t && i < reg_table_count(t) && used < len; i++) {
        struct reg_backend *b = reg_table_at(t, i);
        if (b->front != front || b->state == REG_DEAD)
            continue;
        if (only && strcmp(reg_worktree_name(b), only) != 0)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s %s", shown++ ? "," : "", b->worktree);
    }
    if (!shown && used < len)
        used += (size_t)snprintf(buf + used, len - used, " none");
    return used < len ? used : len;
}

/* " Its server on front :8000 (pid 42) gets no request here: ..." appended
 * to buf's text for each of worktree's servers on another front. Only one
 * on the default front is likely a mistake: `wtproxy run` without --front
 * put it there. One on any other front was registered for it on purpose
 * (a Vite server on :5173 beside an API on :3000), so it is named as a
 * fact, and the caller's 503 ends with the command for this front. For a
 * .wtproxy service, the one meant for this front is not declared or did
 * not start, which the file's note says. Returns the bytes appended;
 * *services counts the services among them. */
static size_t other_fronts(struct reg_table *t, const char *worktree, int front, char *buf,
                           size_t len, int *services)
{
    size_t at = strnlen(buf, len), start = at;
    *services = 0;
    for (size_t i = 0; t && i < reg_table_count(t) && at + 1 < len; i++) {
        struct reg_backend *b = reg_table_at(t, i);
        if (b->front == front || b->state == REG_DEAD || strcmp(b->worktree, worktree) != 0)
            continue;
        if (b->service[0] && ++*services)
            at += (size_t)snprintf(buf + at, len - at,
                                   " Its service `%s` runs on front :%d (pid %d); none of its "
                                   "services is registered on :%d.",
                                   b->service, b->front, (int)b->pid, front);
        else if (b->front == WTP_DEFAULT_FRONT_PORT)
            at += (size_t)snprintf(buf + at, len - at,
                                   " Its server on front :%d (pid %d) gets no request sent to "
                                   ":%d: was it started without --front %d?",
                                   b->front, (int)b->pid, front, front);
        else
            at += (size_t)snprintf(buf + at, len - at,
                                   " Its server on front :%d (pid %d) serves that front only.",
                                   b->front, (int)b->pid);
    }
    return (at < len ? at : len - 1) - start;
}

/* The command that registers a server on front: `wtproxy run` alone
 * registers on the default port, so on any other the hint must name it, or
 * the server it starts never answers here. */
static void run_hint(int front, char *buf, size_t len)
{
    if (front == WTP_DEFAULT_FRONT_PORT)
        snprintf(buf, len, "wtproxy run -- <server command with {port}>");
    else
        snprintf(buf, len, "wtproxy run --front %d -- <server command with {port}>", front);
}

/* The length of who's cwd without the kernel's " (deleted)": its folder
 * was removed while it ran in it (git worktree remove); 0 when not so. */
/* Whether this daemon runs in a pid namespace of its own (a sandbox's,
 * a container's): a caller outside it is invisible, never placed. Read
 * once: one small /proc file. */
static int confined(void)
{
    static int seen = -1;
    if (seen < 0)
        seen = !host_pid_ns_sees_kernel();
    return seen;
}

#define CONFINED                                                                                   \
    " This daemon runs in a pid namespace of its own (it sees no kernel threads: it was started "  \
    "inside a sandbox or a container), so a caller outside it cannot be seen: started from an "    \
    "agent's sandbox, stop it there (wtproxy stop --daemon) and start it outside: wtproxy serve "  \
    "--listen %d."

static size_t removed_cwd(const struct identify_kept *who)
{
    static const char mark[] = " (deleted)";
    size_t n = who && who->cwd ? strlen(who->cwd) : 0, m = sizeof mark - 1;
    return n > m && strcmp(who->cwd + n - m, mark) == 0 ? n - m : 0;
}

/* "the calling process ... runs in DIR, which was removed": who's folder
 * dir (n bytes of it) is gone, and with it the worktree it was in.
 * Returns the bytes written. */
static size_t removed_caller(const struct identify_kept *who, int n, const char *dir, char *buf,
                             size_t len)
{
    return (size_t)snprintf(buf, len,
                            "the calling process (pid %d: %s) runs in %.*s, which was removed "
                            "(git worktree remove, or deleted) after it started there: its "
                            "worktree is gone, and wtproxy sends it to no other worktree's "
                            "server.",
                            (int)who->pid, who->comm, n, dir);
}

#define FIX_REMOVED                                                                                \
    "Run it from a worktree that exists: cd /path/to/worktree (wtproxy ls lists the registered "   \
    "ones; git worktree list all of them), then run it again"

void route_explain_gone(struct proxy_server *s, int front, const char *hint,
                        const struct identify_kept *who, char *buf, size_t len, char *fix,
                        size_t fixlen)
{
    size_t used;
    if (hint[0] == '/') {
        used = (size_t)snprintf(buf, len,
                                "no dev server is registered for worktree %s on front :%d, and "
                                "that worktree was removed (git worktree remove, or deleted): "
                                "nothing starts there.",
                                hint, front);
        snprintf(fix, fixlen,
                 "Name a worktree that exists: X-Wtproxy-Worktree: /path/to/worktree (wtproxy "
                 "ls lists the registered ones; git worktree list all of them)");
    } else {
        used = removed_caller(who, (int)strlen(who->worktree), who->worktree, buf, len);
        snprintf(fix, fixlen, FIX_REMOVED);
    }
    if (used < len)
        used += list_registered(table_of(s), front, NULL, buf + used, len - used);
    if (used < len)
        snprintf(buf + used, len - used,
                 hint[0] == '/' ? ". Name one of them" : ". Run it again from one of them");
}

int route_fix(struct proxy_server *s, int front, enum proxy_error e,
              const struct identify_kept *who, char *fix, size_t len)
{
    if (e == PE_NO_BACKEND && who && !who->placed && removed_cwd(who)) {
        snprintf(fix, len, FIX_REMOVED);
        return 1;
    }
    if (e != PE_OTHER_USER || !(other_users_caller(who) || placed_other_users_caller(who)))
        return 0;
    snprintf(fix, len,
             "This port is held by the daemon of %s: ask that user to stop it (as them: "
             "wtproxy stop --daemon), then start yours; or serve yours on a port of your own, "
             "with your tests' base URL on it: wtproxy serve --listen %d",
             s->user, front + 1);
    return 1;
}

void route_explain(struct proxy_server *s, int front, enum proxy_error e, const char *hint,
                   const struct identify_kept *who, const char *note, char *buf, size_t len)
{
    size_t used;
    int services = 0;
    char run[96];
    run_hint(front, run, sizeof run);
    if (e == PE_OTHER_USER && other_users_caller(who)) {
        snprintf(buf, len,
                 "your process runs as uid %u, and this wtproxy daemon on :%d as %s: a daemon "
                 "cannot see another user's processes, so it cannot tell your worktree, and "
                 "it never answers another user's requests with its own user's servers. "
                 "wtproxy runs one daemon per user, and this one holds :%d",
                 (unsigned)who->uid, front, s->user, front);
        return;
    }
    if (e == PE_OTHER_USER && placed_other_users_caller(who)) {
        snprintf(buf, len,
                 "your process runs as uid %u, and this wtproxy daemon on :%d as %s: the dev "
                 "server it has for your worktree is not yours, and it never answers one "
                 "user's requests with another user's servers. wtproxy runs one daemon per "
                 "user, and this one holds :%d",
                 (unsigned)who->uid, front, s->user, front);
        return;
    }
    if (e == PE_OTHER_USER) {
        snprintf(buf, len,
                 "the dev server registered for your worktree on front :%d belongs to "
                 "another user; start your own: %s",
                 front, run);
        return;
    }
    if (e == PE_AMBIGUOUS_WORKTREE)
        used = (size_t)snprintf(buf, len,
                                "\"%s\" names several worktrees; name one by its path "
                                "in X-Wtproxy-Worktree.",
                                hint);
    else if (hint[0])
        used = (size_t)snprintf(buf, len,
                                "no dev server is registered for worktree %s on "
                                "front :%d.",
                                hint, front);
    else if (who && who->placed) {
        used = (size_t)snprintf(buf, len,
                                "you called from worktree %s (pid %d, found by its %s), "
                                "which has no dev server on front :%d.",
                                who->worktree, (int)who->decided_by, who->how, front);
        used += other_fronts(table_of(s), who->worktree, front, buf, len, &services);
    } else if (who && who->pid && removed_cwd(who))
        used = removed_caller(who, (int)removed_cwd(who), who->cwd, buf, len);
    else if (who && who->pid)
        used = (size_t)snprintf(buf, len,
                                "the calling process (pid %d: %s, cwd %s) is in no "
                                "worktree wtproxy knows; run it from a worktree, set "
                                "WTPROXY_WORKTREE=/path/to/worktree in its environment, "
                                "or send X-Wtproxy-Worktree.",
                                (int)who->pid, who->comm, who->cwd);
    else
        used = (size_t)snprintf(buf, len,
                                "this request names no worktree and its caller could "
                                "not be placed; send X-Wtproxy-Worktree: <path>.");
    if (used < len && !hint[0] && !(who && (who->placed || who->pid)) && confined())
        used += (size_t)snprintf(buf + used, len - used, CONFINED, front);
    if (used < len)
        used += list_registered(table_of(s), front, e == PE_AMBIGUOUS_WORKTREE ? hint : NULL,
                                buf + used, len - used);
    if (used < len && note && note[0])
        snprintf(buf + used, len - used, ". %s", note);
    else if (used < len && removed_cwd(who))
        snprintf(buf + used, len - used, ". Run it again from one of them");
    else if (used < len && services)
        snprintf(buf + used, len - used,
                 ". Declare the one for :%d in the worktree's .wtproxy (a [service NAME] with "
                 "front = %d), or start it from its worktree: %s",
                 front, front, run);
    else if (used < len)
        snprintf(buf + used, len - used, ". Start yours from its worktree: %s", run);
}

/* The registered worktrees' paths, one after another, each ended by a
 * '\0', the list by an empty one: one block, so the worker owns it alone. */
void *route_known_snap(void *arg)
{
    struct proxy_server *s = arg;
    struct reg_table *t = table_of(s);
    const struct reg_last_words *w;
    size_t len = 1, at = 0, n = t ? reg_table_count(t) : 0;
    for (size_t i = 0; i < n; i++)
        len += strnlen(reg_table_at(t, i)->worktree, PATH_MAX) + 1;
    /* A worktree whose server exited lately is known too: the request
     * that comes next is placed there, and its 503 says why it ended. */
    for (size_t i = 0; (w = reg_server_last_words_at(s->reg, i)); i++)
        len += strnlen(w->worktree, PATH_MAX) + 1;
    char *v = malloc(len);
    for (size_t i = 0; v && i < n; i++)
        at += (size_t)snprintf(v + at, len - at, "%s", reg_table_at(t, i)->worktree) + 1;
    for (size_t i = 0; v && (w = reg_server_last_words_at(s->reg, i)); i++)
        at += (size_t)snprintf(v + at, len - at, "%s", w->worktree) + 1;
    if (v)
        v[at] = '\0';
    return v;
}

unsigned long route_known_version(void *arg)
{
    struct reg_table *t = table_of(arg);
    return t ? reg_table_changes(t) : 0;
}

int route_known_repo(const char *worktree, const char *common_dir, void *copy)
{
    if (ondemand_declared(worktree, common_dir))
        return 1;
    struct host_worktree w;
    for (const char *p = copy; *p; p += strlen(p) + 1)
        if (host_worktree_of(p, &w, NULL, 0) == 0 && strcmp(w.common, common_dir) == 0)
            return 1;
    return 0;
}
