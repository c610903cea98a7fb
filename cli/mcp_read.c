/* mcp_read.c - `wtproxy mcp`'s tools that only read: servers, why,
 * refusals, logs. Each may look at another worktree (its "worktree"
 * argument); none changes anything. */
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "servers.h"
#include "front.h"
#include "host.h"
#include "registry.h"
#include "wtfile.h"

/* Into out: the services worktree wt declares (the daemon's op services:
 * "file" and "services"), [] when it has no .wtproxy, else null with a
 * "services_note" saying why they are unknown (an older daemon, a bad
 * file): the registrations alone still answer the question. */
static void add_services(json_t *out, const char *wt)
{
    static const char *const none[] = {NULL};
    json_t *fail = NULL, *svc = mcp_op("services", wt, NULL, none, &fail);
    const char *code = json_string_value(json_object_get(fail, "error"));
    const char *note = json_string_value(json_object_get(fail, "message"));
    if (svc) {
        json_object_set(out, "file", json_object_get(svc, "file"));
        json_object_set(out, "services", json_object_get(svc, "services"));
    } else {
        json_object_set_new(out, "services",
                            code && strcmp(code, "not-declared") == 0 ? json_array() : json_null());
        json_object_set_new(out, "services_note",
                            cli_json_text(note ? note : "", note ? strlen(note) : 0));
    }
    json_decref(svc);
    json_decref(fail);
}

/* A server whose start failed and that lives on without listening is
 * "starting" in the registry (its wrapper waits for it to listen): shown
 * as failed, as `wtproxy ls` does, with what to do ("failed"), and its
 * verdict's "its server is restarting" left out. Else an agent waits for a
 * server that will not come up by itself. */
static void said_failed(json_t *entries)
{
    json_t *e;
    size_t i;
    json_array_foreach(entries, i, e) {
        char words[4 * PATH_MAX];
        if (!json_object_get(e, "start_failed") || !cli_failed_words(e, words, sizeof words))
            continue;
        json_object_set_new(e, "state", json_string("failed"));
        json_object_set_new(e, "failed", cli_json_text(words, strlen(words)));
        json_t *who = json_object_get(e, "whoami");
        if (json_is_object(who))
            json_object_set_new(who, "detail", cli_json_text(words, strlen(words)));
    }
}

json_t *mcp_tool_servers(struct mcp *m, json_t *args)
{
    char wt[PATH_MAX];
    json_t *fail = mcp_scope(m, args, 0, wt, sizeof wt), *entries, *exited = NULL;
    if (fail || !(entries = mcp_entries_exited(wt, &fail, &exited)))
        return fail;
    said_failed(entries);
    json_t *out = json_pack("{s:o, s:o, s:o}", "worktree", cli_json_text(wt, strlen(wt)), "servers",
                            entries, "exited", exited ? exited : json_array());
    if (out) {
        json_object_set_new(out, "fronts", mcp_fronts(m, wt));
        add_services(out, wt);
    }
    return out;
}

/* A why call: about pid or folder, on --front or the call's front, else
 * on the fronts `wtproxy why` takes for the folder asked about (else the
 * session's worktree): each its .wtproxy declares, else the one port the
 * daemon listens on, else 8000. A daemon on 18000 must not be judged on
 * 8000, nor an app's API left out. A .wtproxy the daemon refuses gives
 * none: its error is in "wtproxy_file_error". */
static json_t *why_on(const struct mcp *m, pid_t pid, const char *folder, int front, json_t *ping,
                      struct reg_table *t, json_t *exited, char *err, size_t errlen)
{
    struct cli_wtproxy w = {0};
    int fronts[WTFILE_MAX_SERVICES], n = 1;
    fronts[0] = front ? front : m->front;
    if (!fronts[0]) {
        cli_wtproxy_read(folder ? folder : m->worktree[0] ? m->worktree : ".", &w);
        n = cli_wtproxy_fronts(&w, ping, fronts);
    }
    json_t *o = cli_why_fronts_json(pid, folder, fronts, n, t, exited, err, errlen);
    if (o && w.err[0])
        json_object_set_new(o, "wtproxy_file_error", json_string(w.err));
    cli_wtproxy_free(&w);
    return o;
}

json_t *mcp_tool_why(struct mcp *m, json_t *args)
{
    json_t *pid = json_object_get(args, "pid"), *front = json_object_get(args, "front");
    const char *folder = json_string_value(json_object_get(args, "folder"));
    char err[PATH_MAX + 256];
    if (pid && folder)
        return mcp_fail("bad-arguments", "give pid or folder, not both");
    json_t *fail = NULL, *ping = mcp_ask(json_pack("{s:s}", "op", "ping"), &fail), *exited = NULL;
    struct reg_table *t = ping ? cli_table_exited(err, sizeof err, &exited) : NULL;
    if (!t) {
        json_decref(ping);
        return fail ? fail : mcp_fail("daemon-failed", "%s", err);
    }
    json_t *o =
        why_on(m, pid ? (pid_t)json_integer_value(pid) : getpid(), folder,
               front ? (int)json_integer_value(front) : 0, ping, t, exited, err, sizeof err);
    json_decref(ping);
    json_decref(exited);
    reg_table_free(t);
    return o ? o : mcp_fail("not-found", "%s", err);
}

json_t *mcp_tool_refusals(struct mcp *m, json_t *args)
{
    static const char *const keys[] = {"limit", "after", NULL};
    return mcp_op_tool(m, args, 0, "refusals", keys);
}

/* The one entry of entries that service and front (each may be NULL)
 * pick, or NULL with *fail naming the choices or the fix. */
static json_t *pick(json_t *entries, const char *wt, const char *service, json_t *front,
                    json_t **fail)
{
    json_t *found = NULL, *e;
    char choices[1024] = "", then[PATH_MAX + 256];
    size_t i, n = 0, len = 0;
    json_array_foreach(entries, i, e) {
        const char *sv = json_string_value(json_object_get(e, "service"));
        int f = (int)json_integer_value(json_object_get(e, "front"));
        if ((service && (!sv || strcmp(sv, service) != 0)) ||
            (front && f != json_integer_value(front)))
            continue;
        found = e;
        n++;
        int w = snprintf(choices + len, sizeof choices - len, "%s front %d%s%s", len ? "," : "", f,
                         sv ? " service " : "", sv ? sv : "");
        len = w > 0 && (size_t)w < sizeof choices - len ? len + (size_t)w : len;
    }
    if (n == 1)
        return found;
    if (!n)
        mcp_start_hint(wt, service, (int)json_integer_value(front), then, sizeof then);
    *fail = n ? mcp_fail("ambiguous",
                         "%s has %zu servers (%s): pick one with service or "
                         "front",
                         wt, n, choices)
              : mcp_fail("not-found", "no server of %s%s%s is registered; start one: %s", wt,
                         service ? " for service " : "", service ? service : "", then);
    return NULL;
}

/* The lines of buf[0, n), the end of a file that starts mid-file when
 * cut (its first, partial line is then left out): the last want of them,
 * {"lines", "truncated"} (truncated: the file has more). */
static json_t *last_lines(const char *buf, size_t n, int cut, size_t want)
{
    struct {
        size_t start, end;
    } ring[MCP_LOG_LINES_MAX];
    size_t p = 0, total = 0;
    if (cut) {
        const char *nl = memchr(buf, '\n', n);
        p = nl ? (size_t)(nl - buf) + 1 : n;
    }
    while (p < n) {
        const char *nl = memchr(buf + p, '\n', n - p);
        size_t e = nl ? (size_t)(nl - buf) : n;
        ring[total % want].start = p;
        ring[total % want].end = e;
        total++;
        p = e + 1;
    }
    json_t *lines = json_array();
    for (size_t i = total > want ? total - want : 0; lines && i < total; i++)
        json_array_append_new(lines, cli_json_text(buf + ring[i % want].start,
                                                   ring[i % want].end - ring[i % want].start));
    return json_pack("{s:o, s:b}", "lines", lines, "truncated", cut || total > want);
}

/* A log rotates (host/log_file.c): the end of path.1, room bytes at most,
 * into buf, when it is owner's; *cut set when that starts mid-file.
 * Returns the bytes read (0: none). The lines asked for may begin there. */
static size_t rotated_end(const char *path, uid_t owner, char *buf, size_t room, int *cut)
{
    char old[PATH_MAX + 8];
    struct stat st;
    snprintf(old, sizeof old, "%s.1", path);
    int fd = open(old, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    ssize_t n = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == owner) {
        off_t from = st.st_size > (off_t)room ? st.st_size - (off_t)room : 0;
        n = pread(fd, buf, room, from);
        *cut = n > 0 && from > 0;
    }
    if (fd >= 0)
        close(fd);
    return n > 0 ? (size_t)n : 0;
}

/* O_NONBLOCK: a FIFO put where the log was must not hang the session. */
json_t *mcp_log_tail(const char *path, uid_t owner, size_t want)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        return mcp_fail("unreadable", "cannot read the log %s: %s", path, strerror(e));
    }
    /* Anyone may register a server with a log path: read only a file of
     * the server's own user, never one of ours it merely names. */
    if (st.st_uid != owner) {
        close(fd);
        return mcp_fail("not-permitted",
                        "the log %s does not belong to the server's user "
                        "(uid %d): not shown",
                        path, (int)owner);
    }
    off_t from = st.st_size > MCP_LOG_BYTES_MAX ? st.st_size - MCP_LOG_BYTES_MAX : 0;
    char *buf = malloc(MCP_LOG_BYTES_MAX);
    int cut = from > 0;
    size_t k =
        buf && !cut ? rotated_end(path, owner, buf, MCP_LOG_BYTES_MAX - st.st_size, &cut) : 0;
    ssize_t n = buf ? pread(fd, buf + k, MCP_LOG_BYTES_MAX - k, from) : -1;
    close(fd);
    json_t *out = n < 0 ? mcp_fail("unreadable", "cannot read the log %s", path)
                        : last_lines(buf, k + (size_t)n, cut, want);
    free(buf);
    return out;
}

json_t *mcp_gone_log(const char *wt, const char *service, json_t *front, size_t want)
{
    struct cli_server_args a = {.service = service, .front = (int)json_integer_value(front)};
    char path[PATH_MAX], age[32];
    struct stat st;
    snprintf(a.worktree, sizeof a.worktree, "%s", wt);
    if (cli_last_log(&a, path, sizeof path) < 0 || stat(path, &st) < 0)
        return NULL;
    json_t *out = mcp_log_tail(path, getuid(), want);
    if (json_object_get(out, "error"))
        return out;
    host_age(host_wall_ms() - (long long)st.st_mtime * 1000, age, sizeof age);
    char note[3 * PATH_MAX + 256], then[PATH_MAX + 256];
    mcp_start_hint(wt, service, a.front, then, sizeof then);
    snprintf(note, sizeof note,
             "no server of %s%s%s runs now: these are the last lines of its newest log, "
             "written %s ago (a server that exits, e.g. at start, is unregistered but its log "
             "stays). Fix what they say, then start it again: %s",
             wt, service ? " for service " : "", service ? service : "", age, then);
    json_object_set_new(out, "running", json_false());
    json_object_set_new(out, "log", cli_json_text(path, strlen(path)));
    json_object_set_new(out, "age", cli_json_text(age, strlen(age)));
    json_object_set_new(out, "note", cli_json_text(note, strlen(note)));
    return out;
}

json_t *mcp_tool_logs(struct mcp *m, json_t *args)
{
    char wt[PATH_MAX];
    const char *service = json_string_value(json_object_get(args, "service"));
    json_t *lines = json_object_get(args, "lines"), *front = json_object_get(args, "front");
    json_t *entries = NULL, *e = NULL, *out = NULL;
    size_t want = lines ? (size_t)json_integer_value(lines) : MCP_LOG_LINES_DEFAULT;
    json_t *fail = mcp_scope(m, args, 0, wt, sizeof wt);
    if (!fail && (entries = mcp_entries(wt, &fail)))
        e = pick(entries, wt, service, front, &fail);
    const char *code = json_string_value(json_object_get(fail, "error"));
    if (code && strcmp(code, "not-found") == 0 && (out = mcp_unknown_selection(wt, args, "logs"))) {
        json_decref(fail);
        json_decref(entries);
        return out;
    }
    if (code && strcmp(code, "not-found") == 0 && (out = mcp_gone_log(wt, service, front, want))) {
        json_decref(fail);
        json_decref(entries);
        if (!json_object_get(out, "error"))
            json_object_set_new(out, "worktree", cli_json_text(wt, strlen(wt)));
        return out;
    }
    const char *log = json_string_value(json_object_get(e, "log"));
    if (e && !log)
        fail = mcp_fail("no-log",
                        "the server of %s on front :%d (pid %d: %s) has no log "
                        "file wtproxy knows of: its output goes where it was started. A "
                        "server started by wtproxy run has one (this one was registered "
                        "otherwise)",
                        wt, (int)json_integer_value(json_object_get(e, "front")),
                        (int)json_integer_value(json_object_get(e, "pid")),
                        json_string_value(json_object_get(e, "command")));
    out =
        fail ? NULL : mcp_log_tail(log, (uid_t)json_integer_value(json_object_get(e, "uid")), want);
    if (out && !json_object_get(out, "error")) {
        json_object_set_new(out, "worktree", cli_json_text(wt, strlen(wt)));
        json_object_set_new(out, "running", json_true());
        json_object_set(out, "front", json_object_get(e, "front"));
        json_object_set(out, "pid", json_object_get(e, "pid"));
        json_object_set(out, "log", json_object_get(e, "log"));
        if (json_object_get(e, "service"))
            json_object_set(out, "service", json_object_get(e, "service"));
    }
    json_decref(entries);
    return fail ? fail : out;
}
