/* mcp_tools.c - the table of `wtproxy mcp`'s tools: each tool's name, its
 * description, its arguments (one table drives both the JSON Schema that
 * tools/list shows and the checks tools/call makes, so they cannot
 * differ), and its handler; and what the handlers share: the worktree a
 * call is about, the daemon, a failure's shape. */
#include "mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "servers.h"
#include "host.h"

#define MAX_ARGS 5

struct tool_arg {
    const char *name;
    char type; /* 's' a string, 'i' an integer in [min, max] */
    long long min, max;
    int required;
    const char *description;
};

struct tool {
    const char *name, *title, *description;
    int read_only;
    json_t *(*run)(struct mcp *m, json_t *args);
    struct tool_arg args[MAX_ARGS];
};

#define ARG_WORKTREE(what)                                                                         \
    {                                                                                              \
        "worktree", 's', 0, 0, 0, what                                                             \
    }
#define ARG_FRONT                                                                                  \
    {                                                                                              \
        "front", 'i', 1, 65535, 0,                                                                 \
            "the proxy port (default: --front, else the ports the worktree's .wtproxy declares, "  \
            "else the one the daemon listens on, else 8000)"                                       \
    }
#define ARG_SERVICE                                                                                \
    {                                                                                              \
        "service", 's', 0, 0, 0, "the server's .wtproxy service name"                              \
    }
#define READ_WT "another worktree's folder to look at (default: this session's worktree)"
#define ACT_WT "this session's worktree only (another is refused)"

static const struct tool tools[] = {
    {"servers",
     "This worktree's dev servers",
     "List the dev servers registered for this worktree (every front port), each with its "
     "state, the /__whoami gate's verdict, service, backend port, pid, command and log path; "
     "the services its .wtproxy declares, running or not, when the daemon knows them; its "
     "fronts: the URLs it is reached on, and whether the daemon listens there; and each of its "
     "servers that exited by itself in the last 10 minutes (exited): its exit status, last "
     "lines, and in said the commands that show its whole log and start it again.",
     1,
     mcp_tool_servers,
     {ARG_WORKTREE(READ_WT)}},
    {"why",
     "Where requests would be routed, and why",
     "Explain which worktree's server the requests of a process (pid) or of a process whose "
     "current folder is folder would reach, and why: the processes walked, the one that "
     "decided (WTPROXY_WORKTREE or its cwd), the backend. Default: this MCP server's process. "
     "Without front: on each front the worktree's .wtproxy declares (\"fronts\" has each "
     "one's verdict when there are several). "
     "When a test met another worktree's code, or a 503: give folder = the folder the test "
     "ran from (requests go by the test process's current folder, not where its files are).",
     1,
     mcp_tool_why,
     {{"pid", 'i', 1, 2147483647LL, 0, "a process id"},
      {"folder", 's', 0, 0, 0, "a folder (absolute path)"},
      ARG_FRONT}},
    {"refusals",
     "What wtproxy refused lately",
     "The daemon's recent refusals (no backend, stale or mismatched code, malformed "
     "requests) that concern this worktree, as caller, backend or named worktree, oldest "
     "first, each with the sentence the caller got and the fix.",
     1,
     mcp_tool_refusals,
     {ARG_WORKTREE(READ_WT),
      {"limit", 'i', 1, 200, 0, "the newest N (default 50)"},
      {"after", 'i', 0, 9007199254740991LL, 0, "only those after this sequence number"}}},
    {"logs",
     "A dev server's last log lines",
     "The last lines of the log file of this worktree's server (pick one with service or "
     "front when it has several). When none runs (it crashed at start, or was stopped), the "
     "last lines of its newest log, with running: false: the reason a server is missing.",
     1,
     mcp_tool_logs,
     {ARG_WORKTREE(READ_WT),
      ARG_SERVICE,
      ARG_FRONT,
      {"lines", 'i', 1, MCP_LOG_LINES_MAX, 0, "how many (default 100, at most 1000)"}}},
    {"restart",
     "Restart this worktree's dev server",
     "Restart this worktree's dev server (all of them, or one service or front port) and "
     "start those its .wtproxy declares that do not run, or run an older start line than the "
     "file's now (stopped, then started from the file); it returns once each is ready (30 s "
     "at most), or fails with the last log lines of one that exited. The fix for a stale "
     "server (409). Starts the daemon when none runs. Another worktree's server is refused.",
     0,
     mcp_tool_restart,
     {ARG_SERVICE, ARG_FRONT, ARG_WORKTREE(ACT_WT)}},
    {"claim",
     "Lease a shared resource",
     "Lease a named resource (an emulator, a device, a database) for this worktree. With ttl "
     "(30s, 10m, 2h, 1d) it ends then; without, when this MCP session ends. A resource "
     "another holds is refused, naming its holder; with wait (at most " MCP_CLAIM_WAIT_MAX
     ") it is claimed as soon as its holder releases it, ends or expires, or refused when "
     "the wait is over. Starts the daemon when none runs (its embedded store holds the "
     "leases, unless PostgreSQL does).",
     0,
     mcp_tool_claim,
     {{"resource", 's', 0, 0, 1, "the resource's name"},
      {"ttl", 's', 0, 0, 0, "how long: 30s, 10m, 2h, 1d"},
      {"wait", 's', 0, 0, 0,
       "while another holds it, wait up to this long for it: 10s, " MCP_CLAIM_WAIT_MAX
       " at most (default: refuse at once)"},
      {"purpose", 's', 0, 0, 0, "what it is for, shown to whoever is refused"},
      ARG_WORKTREE(ACT_WT)}},
    {"release",
     "Release a lease",
     "Release this worktree's lease of a resource. A lease another live process of this "
     "worktree holds (another agent's session) is refused, naming it. Starts the daemon as "
     "claim does.",
     0,
     mcp_tool_release,
     {{"resource", 's', 0, 0, 1, "the resource's name"}, ARG_WORKTREE(ACT_WT)}},
};

#define NTOOLS (sizeof tools / sizeof tools[0])

/* The JSON Schema of t's arguments. */
static json_t *schema(const struct tool *t)
{
    json_t *props = json_object(), *req = json_array();
    for (const struct tool_arg *a = t->args; a < t->args + MAX_ARGS && a->name; a++) {
        json_t *p = json_pack("{s:s, s:s}", "type", a->type == 'i' ? "integer" : "string",
                              "description", a->description);
        if (p && a->type == 'i') {
            json_object_set_new(p, "minimum", json_integer(a->min));
            json_object_set_new(p, "maximum", json_integer(a->max));
        }
        json_object_set_new(props, a->name, p);
        if (a->required)
            json_array_append_new(req, json_string(a->name));
    }
    json_t *s = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
                          "additionalProperties", 0);
    if (s && json_array_size(req))
        json_object_set(s, "required", req);
    json_decref(req);
    return s;
}

json_t *mcp_tools_list(void)
{
    json_t *list = json_array();
    for (size_t i = 0; i < NTOOLS; i++)
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:o, s:{s:b}}", "name", tools[i].name, "title",
                            tools[i].title, "description", tools[i].description, "inputSchema",
                            schema(&tools[i]), "annotations", "readOnlyHint", tools[i].read_only));
    return json_pack("{s:o}", "tools", list);
}

/* Check args against t's table. Returns 0, or -1 with err. */
static int check_args(const struct tool *t, json_t *args, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        const struct tool_arg *a = t->args;
        while (a < t->args + MAX_ARGS && a->name && strcmp(a->name, key) != 0)
            a++;
        if (a == t->args + MAX_ARGS || !a->name) {
            snprintf(err, errlen, "%s takes no argument \"%.64s\" (see its inputSchema)", t->name,
                     key);
            return -1;
        }
        int ok = a->type == 's' ? json_is_string(v)
                                : json_is_integer(v) && json_integer_value(v) >= a->min &&
                                      json_integer_value(v) <= a->max;
        if (!ok) {
            if (a->type == 's')
                snprintf(err, errlen, "%s: \"%s\" must be a string", t->name, a->name);
            else
                snprintf(err, errlen, "%s: \"%s\" must be an integer from %lld to %lld", t->name,
                         a->name, a->min, a->max);
            return -1;
        }
    }
    for (const struct tool_arg *a = t->args; a < t->args + MAX_ARGS && a->name; a++)
        if (a->required && !json_object_get(args, a->name)) {
            snprintf(err, errlen, "%s needs \"%s\"", t->name, a->name);
            return -1;
        }
    return 0;
}

/* The tools/call result of out (consumed): its JSON as text, or a
 * failure's sentence with isError. */
static json_t *call_result(json_t *out)
{
    const char *msg = json_string_value(json_object_get(out, "message"));
    int failed = json_object_get(out, "error") != NULL;
    char *text = failed ? NULL : json_dumps(out, JSON_COMPACT);
    json_t *res = json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text",
                            failed ? (msg ? msg : "failed")
                            : text ? text
                                   : "{}",
                            "structuredContent", out);
    free(text);
    if (res && failed)
        json_object_set_new(res, "isError", json_true());
    return res;
}

json_t *mcp_tools_call(struct mcp *m, const char *name, json_t *args, int *code, char *err,
                       size_t errlen)
{
    const struct tool *t = NULL;
    for (size_t i = 0; i < NTOOLS && !t; i++)
        if (strcmp(tools[i].name, name) == 0)
            t = &tools[i];
    *code = MCP_INVALID_PARAMS;
    if (!t) {
        snprintf(err, errlen, "no tool \"%.64s\" (see tools/list)", name);
        return NULL;
    }
    json_t *none = args ? NULL : json_object();
    if (check_args(t, args ? args : none, err, errlen) < 0) {
        json_decref(none);
        return NULL;
    }
    m->started_pid = 0;
    json_t *out = t->run(m, args ? args : none);
    json_decref(none);
    if (out && m->started_pid)
        mcp_daemon_started(m, out);
    return call_result(out ? out : mcp_fail("internal", "out of memory"));
}

json_t *mcp_fail(const char *code, const char *fmt, ...)
{
    char msg[3 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return json_pack("{s:s, s:o}", "error", code, "message", cli_json_text(msg, strlen(msg)));
}

/* "its server on front :F is pid N (CMD)" for each of worktree's entries,
 * into out: whose the servers are, for a refusal. */
static void whose(const char *worktree, char *out, size_t outlen)
{
    json_t *fail = NULL, *entries = mcp_entries(worktree, &fail), *e;
    size_t i, n = 0;
    out[0] = '\0';
    json_array_foreach(entries, i, e) {
        int w = snprintf(out + n, outlen - n, "; its server on front :%d is pid %d (%s)",
                         (int)json_integer_value(json_object_get(e, "front")),
                         (int)json_integer_value(json_object_get(e, "pid")),
                         json_string_value(json_object_get(e, "command")));
        if (w < 0 || (size_t)w >= outlen - n)
            break;
        n += (size_t)w;
    }
    json_decref(entries);
    json_decref(fail);
}

json_t *mcp_scope(struct mcp *m, json_t *args, int acting, char *out, size_t outlen)
{
    const char *want = json_string_value(json_object_get(args, "worktree"));
    struct host_worktree w;
    char err[PATH_MAX + 256], owners[2 * PATH_MAX];
    if (!want && !m->worktree[0]) /* a look may name one; an act is this session's */
        return mcp_fail("no-worktree", "%s%s", m->why_none,
                        acting ? "" : "; or give this call worktree, a worktree's absolute path");
    if (want && host_worktree_of(want, &w, err, sizeof err) < 0)
        return mcp_fail("not-a-worktree",
                        "%s; give worktree as the absolute path of a git worktree (git worktree "
                        "list prints them)",
                        err);
    const char *wt = want ? w.root : m->worktree;
    if (acting && strcmp(wt, m->worktree) != 0) {
        whose(wt, owners, sizeof owners);
        return mcp_fail("not-permitted",
                        "%s belongs to the worktree %s, not to this session's (%s)%s: this "
                        "tool changes only this worktree's servers and leases. Act from a "
                        "session in that worktree (wtproxy mcp --worktree %s)",
                        want, wt, m->worktree[0] ? m->worktree : "none", owners, wt);
    }
    snprintf(out, outlen, "%s", wt);
    return NULL;
}

json_t *mcp_entries(const char *worktree, json_t **fail)
{
    return mcp_entries_exited(worktree, fail, NULL);
}

json_t *mcp_entries_exited(const char *worktree, json_t **fail, json_t **exited)
{
    json_t *reply = mcp_ask(json_pack("{s:s}", "op", "list"), fail), *e;
    json_t *all = json_object_get(reply, "entries"), *mine = reply ? json_array() : NULL;
    size_t i;
    json_array_foreach(all, i, e) {
        const char *wt = json_string_value(json_object_get(e, "worktree"));
        if (wt && strcmp(wt, worktree) == 0 && !json_is_true(json_object_get(e, "remote")))
            json_array_append(mine, e);
    }
    if (reply && !json_is_array(all)) {
        const char *msg = json_string_value(json_object_get(reply, "message"));
        *fail = mcp_fail("daemon-refused",
                         "the daemon did not list its servers: %s; see what it does: wtproxy "
                         "doctor",
                         msg ? msg : "no entries in its answer");
        json_decref(mine);
        mine = NULL;
    }
    if (mine && exited)
        *exited = cli_exited_of(reply, worktree);
    json_decref(reply);
    return mine;
}

json_t *mcp_op(const char *op, const char *wt, json_t *args, const char *const *keys, json_t **fail)
{
    json_t *req = json_pack("{s:s, s:s}", "op", op, "worktree", wt);
    for (; req && *keys; keys++)
        if (json_object_get(args, *keys))
            json_object_set(req, *keys, json_object_get(args, *keys));
    json_t *reply = mcp_ask(req, fail);
    if (!reply || json_is_true(json_object_get(reply, "ok")))
        return reply;
    const char *error = json_string_value(json_object_get(reply, "error"));
    if (error && strcmp(error, "unknown-op") == 0) {
        *fail = mcp_unsupported(op);
        json_decref(reply);
        return NULL;
    }
    /* The daemon's refusal as it is (its holder, its log), as a failure. */
    json_object_del(reply, "ok");
    if (!error)
        json_object_set_new(reply, "error", json_string("daemon-refused"));
    if (!json_is_string(json_object_get(reply, "message")))
        json_object_set_new(reply, "message", json_string("the daemon refused"));
    *fail = reply;
    return NULL;
}

json_t *mcp_op_tool(struct mcp *m, json_t *args, int acting, const char *op,
                    const char *const *keys)
{
    char wt[PATH_MAX];
    json_t *fail = mcp_scope(m, args, acting, wt, sizeof wt);
    json_t *reply = fail ? NULL : mcp_op(op, wt, args, keys, &fail);
    if (!reply)
        return fail;
    json_object_del(reply, "ok");
    json_object_set_new(reply, "worktree", cli_json_text(wt, strlen(wt)));
    return reply;
}

void mcp_start_hint(const char *wt, const char *service, int front, char *out, size_t len)
{
    struct cli_server_args a = {.service = service, .front = front};
    snprintf(a.worktree, sizeof a.worktree, "%s", wt);
    /* Declared, running or not: a server that just exited may still count
     * as running until the daemon reaps its wrapper, and restart starts a
     * declared one that does not run as well as it restarts one that does. */
    json_t *declared = cli_declared_selected(&a, 0);
    char fr[32] = "";
    if (front)
        snprintf(fr, sizeof fr, " --front %d", front);
    if (json_array_size(declared))
        snprintf(out, len, "restart (it starts the server %s's .wtproxy declares)", wt);
    else /* in the background: a wrapper in the foreground would hold the agent's shell */
        snprintf(out, len,
                 "cd %s && setsid -f wtproxy run%s%s%s -- <server command with {port}> "
                 ">/dev/null 2>&1 (its output goes to its log: read it with logs)",
                 wt, fr, service ? " --service " : "", service ? service : "");
    json_decref(declared);
}
