/* refusal_log.c - see refusal_log.h. A ring of WTP_REFUSAL_LOG_SIZE
 * entries; each entry's strings are its own copies, freed when the slot is
 * reused, so a long detail costs memory only while it is kept. */
#include "refusal_log.h"

#include <stdlib.h>
#include <string.h>

/* The strings of an entry, in the order of their JSON keys. */
enum {
    RS_REASON,
    RS_DETAIL,
    RS_FIX,
    RS_REQUEST,
    RS_PEER,
    RS_CALLER_PROCESS,
    RS_CALLER_WORKTREE,
    RS_NAMED,
    RS_BACKEND_WORKTREE,
    RS_BACKEND,
    RS_COUNT
};

static const char *const string_keys[RS_COUNT] = {
    "reason",         "detail",          "fix",   "request",          "peer",
    "caller_process", "caller_worktree", "named", "backend_worktree", "backend",
};

struct refusal_entry {
    unsigned long long seq; /* 0: the slot is empty */
    long long time_ms;
    int status, front, test_worker;
    pid_t caller_pid;
    char *s[RS_COUNT];
};

struct subscriber {
    refusal_log_notify fn; /* NULL: a free slot */
    void *arg;
};

struct refusal_log {
    struct refusal_entry ring[WTP_REFUSAL_LOG_SIZE];
    unsigned long long seq; /* of the newest entry */
    struct subscriber subs[WTP_REFUSAL_LOG_SUBSCRIBERS];
};

struct refusal_log *refusal_log_new(void)
{
    return calloc(1, sizeof(struct refusal_log));
}

static void entry_clear(struct refusal_entry *e)
{
    for (int i = 0; i < RS_COUNT; i++)
        free(e->s[i]);
    memset(e, 0, sizeof *e);
}

void refusal_log_free(struct refusal_log *log)
{
    if (!log)
        return;
    for (size_t i = 0; i < WTP_REFUSAL_LOG_SIZE; i++)
        entry_clear(&log->ring[i]);
    free(log);
}

unsigned long long refusal_log_seq(const struct refusal_log *log)
{
    return log ? log->seq : 0;
}

void refusal_log_add(struct refusal_log *log, const struct refusal_info *r, long long time_ms)
{
    const char *in[RS_COUNT] = {
        r->reason,         r->detail,          r->fix,   r->request,          r->peer,
        r->caller_process, r->caller_worktree, r->named, r->backend_worktree, r->backend};
    struct refusal_entry *e = &log->ring[log->seq % WTP_REFUSAL_LOG_SIZE];
    entry_clear(e);
    e->seq = ++log->seq;
    e->time_ms = time_ms;
    e->status = r->status;
    e->front = r->front;
    e->caller_pid = r->caller_pid;
    e->test_worker = r->test_worker;
    for (int i = 0; i < RS_COUNT; i++)
        e->s[i] = strdup(in[i] ? in[i] : "");
    for (size_t i = 0; i < WTP_REFUSAL_LOG_SUBSCRIBERS; i++)
        if (log->subs[i].fn)
            log->subs[i].fn(log->subs[i].arg, e->seq);
}

int refusal_log_subscribe(struct refusal_log *log, refusal_log_notify fn, void *arg)
{
    for (size_t i = 0; i < WTP_REFUSAL_LOG_SUBSCRIBERS; i++)
        if (!log->subs[i].fn) {
            log->subs[i] = (struct subscriber){fn, arg};
            return 0;
        }
    return -1;
}

void refusal_log_unsubscribe(struct refusal_log *log, refusal_log_notify fn, void *arg)
{
    for (size_t i = 0; i < WTP_REFUSAL_LOG_SUBSCRIBERS; i++)
        if (log->subs[i].fn == fn && log->subs[i].arg == arg)
            log->subs[i] = (struct subscriber){NULL, NULL};
}

/* Strings that are not UTF-8 (a path is bytes) are not JSON strings:
 * jansson refuses them, so such a value is sent with '?' for each bad
 * byte rather than dropped. */
static json_t *text(const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (j || !s)
        return j;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (unsigned char *p = (unsigned char *)copy; *p; p++)
        if (*p >= 0x80)
            *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

static json_t *entry_json(const struct refusal_entry *e)
{
    json_t *o = json_pack("{s:I, s:I, s:i, s:i, s:I}", "seq", (json_int_t)e->seq, "time_ms",
                          (json_int_t)e->time_ms, "status", e->status, "front", e->front,
                          "caller_pid", (json_int_t)e->caller_pid);
    for (int i = 0; o && i < RS_COUNT; i++)
        json_object_set_new(o, string_keys[i], text(e->s[i]));
    if (o)
        json_object_set_new(o, "test_worker",
                            e->test_worker >= 0 ? json_integer(e->test_worker) : json_null());
    return o;
}

json_t *refusal_log_json(const struct refusal_log *log, unsigned long long after)
{
    json_t *arr = json_array();
    if (!arr || !log)
        return arr;
    unsigned long long first =
        log->seq > WTP_REFUSAL_LOG_SIZE ? log->seq - WTP_REFUSAL_LOG_SIZE + 1 : 1;
    if (after + 1 > first)
        first = after + 1;
    for (unsigned long long seq = first; seq <= log->seq; seq++)
        json_array_append_new(arr, entry_json(&log->ring[(seq - 1) % WTP_REFUSAL_LOG_SIZE]));
    return arr;
}

json_t *refusal_log_last_for(const struct refusal_log *log, int front, const char *worktree)
{
    if (!log || !worktree[0])
        return NULL;
    for (unsigned long long n = 0; n < WTP_REFUSAL_LOG_SIZE && n < log->seq; n++) {
        const struct refusal_entry *e = &log->ring[(log->seq - 1 - n) % WTP_REFUSAL_LOG_SIZE];
        const char *wt = e->s[RS_BACKEND_WORKTREE] && e->s[RS_BACKEND_WORKTREE][0]
                             ? e->s[RS_BACKEND_WORKTREE]
                             : e->s[RS_CALLER_WORKTREE];
        if (e->front == front && wt && strcmp(wt, worktree) == 0)
            return entry_json(e);
    }
    return NULL;
}
