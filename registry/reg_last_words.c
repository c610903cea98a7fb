/* reg_last_words.c - what a server that exited said last, as its
 * `wtproxy run` wrapper told it with the `unregister` op: its output's
 * last lines and its exit status, per (front, worktree).
 *
 * A server that exits (a syntax error, a missing module, a port clash) has
 * its reason in its output. Its log's path alone sends the reader to
 * another command, which an agent seldom runs; the lines themselves, in
 * the 503 of the next request for that worktree, land where it reads (a
 * test runner's error snapshot). The wrapper holds them already; the
 * daemon never reads a log for them on its loop. Few are kept and not for
 * long: they explain the request that comes right after the exit, and the
 * `wtproxy ls` (the `list` op's "exited") an agent runs instead. */
#include "reg_server_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

/* The kept slot of (front, worktree), or NULL. */
static struct reg_last_words *find(struct reg_server *rs, int front, const char *worktree)
{
    for (size_t i = 0; i < rs->nlast_words; i++)
        if (rs->last_words[i].front == front && strcmp(rs->last_words[i].worktree, worktree) == 0)
            return &rs->last_words[i];
    return NULL;
}

/* A slot for new words: the key's own, a free one, else the oldest. */
static struct reg_last_words *slot(struct reg_server *rs, int front, const char *worktree)
{
    struct reg_last_words *w = find(rs, front, worktree);
    if (w)
        return w;
    if (rs->nlast_words < REG_LAST_WORDS_KEPT)
        return &rs->last_words[rs->nlast_words++];
    w = &rs->last_words[0];
    for (size_t i = 1; i < rs->nlast_words; i++)
        if (rs->last_words[i].ended_ms < w->ended_ms)
            w = &rs->last_words[i];
    return w;
}

/* The end of s that fits len bytes, from a character's first byte on:
 * the end of a server's output is what names its error. */
static const char *tail_of(const char *s, size_t len)
{
    size_t n = strlen(s);
    const char *from = s + (n > len - 1 ? n - (len - 1) : 0);
    while (((unsigned char)*from & 0xc0) == 0x80)
        from++;
    return from;
}

int reg_last_words_keep(struct reg_server *rs, const struct reg_backend *b, json_t *req, char *err,
                        size_t errlen)
{
    json_t *exit = json_object_get(req, "exit");
    if (!exit)
        return 0;
    json_t *lines = json_object_get(exit, "lines"), *status = json_object_get(exit, "status"),
           *sig = json_object_get(exit, "signal"), *rerun = json_object_get(exit, "rerun");
    if (!json_is_string(lines) || (!status == !sig) || (rerun && !json_is_string(rerun)) ||
        (status && (!json_is_integer(status) || json_integer_value(status) < 0 ||
                    json_integer_value(status) > 255)) ||
        (sig &&
         (!json_is_integer(sig) || json_integer_value(sig) < 1 || json_integer_value(sig) > 64))) {
        snprintf(err, errlen,
                 "\"exit\" is an object: \"lines\" (the server's last output) and either "
                 "\"status\" (0-255) or \"signal\" (1-64), and \"rerun\" (a string) or none");
        return -1;
    }
    struct reg_last_words *w = slot(rs, b->front, b->worktree);
    *w = (struct reg_last_words){.front = b->front,
                                 .uid = b->uid,
                                 .status = status ? (int)json_integer_value(status) : -1,
                                 .signal = sig ? (int)json_integer_value(sig) : 0,
                                 .daemon_started = b->daemon_started,
                                 .served = b->state == REG_READY,
                                 .ended_ms = host_wall_ms()};
    snprintf(w->worktree, sizeof w->worktree, "%s", b->worktree);
    snprintf(w->command, sizeof w->command, "%s", b->command);
    snprintf(w->service, sizeof w->service, "%s", b->service);
    snprintf(w->log, sizeof w->log, "%s", b->log);
    snprintf(w->rerun, sizeof w->rerun, "%s", rerun ? json_string_value(rerun) : "");
    snprintf(w->lines, sizeof w->lines, "%s", tail_of(json_string_value(lines), sizeof w->lines));
    return 0;
}

void reg_last_words_forget(struct reg_server *rs, int front, const char *worktree)
{
    struct reg_last_words *w = find(rs, front, worktree);
    if (w)
        *w = rs->last_words[--rs->nlast_words];
}

const struct reg_last_words *reg_server_last_words(struct reg_server *rs, int front,
                                                   const char *worktree)
{
    struct reg_last_words *w = rs && worktree ? find(rs, front, worktree) : NULL;
    return w && host_wall_ms() - w->ended_ms < REG_LAST_WORDS_MS ? w : NULL;
}

const struct reg_last_words *reg_server_last_words_at(struct reg_server *rs, size_t i)
{
    return rs && i < rs->nlast_words ? &rs->last_words[i] : NULL;
}

static int older_first(const void *a, const void *b)
{
    long long x = (*(const struct reg_last_words *const *)a)->ended_ms;
    long long y = (*(const struct reg_last_words *const *)b)->ended_ms;
    return (x > y) - (x < y);
}

json_t *reg_server_exited(struct reg_server *rs, uid_t uid)
{
    const struct reg_last_words *fresh[REG_LAST_WORDS_KEPT];
    size_t n = 0;
    for (size_t i = 0; rs && i < rs->nlast_words; i++) {
        const struct reg_last_words *w = &rs->last_words[i];
        if ((uid == 0 || uid == w->uid) && reg_server_last_words(rs, w->front, w->worktree) == w)
            fresh[n++] = w;
    }
    qsort(fresh, n, sizeof fresh[0], older_first);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, reg_last_words_to_json(fresh[i]));
    return arr;
}
