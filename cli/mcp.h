/* mcp.h - `wtproxy mcp`, the agent interface: the Model Context Protocol
 * over stdio (conf/MCP.md). Inside cli/ only: mcp.c reads and writes the
 * lines, mcp_rpc.c answers each JSON-RPC 2.0 message, mcp_tools.c holds
 * the table of tools (name, arguments, schema, handler) and what they
 * share, mcp_read.c the tools that read, mcp_restart.c restart,
 * mcp_act.c the leases, mcp_daemon.c the daemon (who starts it),
 * mcp_front.c the fronts the session names and mcp_wait.c what the
 * session reads while a tool call waits (its cancellation). */
#ifndef WTP_MCP_H
#define WTP_MCP_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define MCP_LINE_MAX (1024 * 1024) /* a longer message is discarded, with an error */
#define MCP_LOG_LINES_MAX 1000     /* the logs tool's `lines`, at most */
#define MCP_LOG_LINES_DEFAULT 100
#define MCP_LOG_BYTES_MAX (256 * 1024) /* of a log's end read, at most */
/* restart waits this long for its servers to be ready again: a dev
 * server's start (Django's checks), under the tool-call timeouts of agent
 * CLIs (a minute and more) */
#define MCP_RESTART_WAIT_MS 30000
#define MCP_RESTART_POLL_MS 100
#define MCP_RESTART_LOG_LINES 15 /* of a server that did not come back, in the sentence */

/* claim's wait, at most: a whole wait (and a daemon's start, 5 s) ends
 * within the 60 s after which agent CLIs and MCP's SDKs give up on a tool
 * call by default; an agent that must wait longer calls claim again */
#define MCP_CLAIM_WAIT_MAX_MS 50000
#define MCP_CLAIM_WAIT_MAX "50s"

#define MCP_READ_CHUNK 65536
/* The tools/call requests that arrive while a call waits are kept for
 * after it, at most this many; past that stdin is not read until the call
 * ends (a cancellation behind them is seen then). */
#define MCP_QUEUE_MAX 8

/* JSON-RPC 2.0's error codes. */
#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)

/* stdin, split into lines (mcp.c). */
struct mcp_input {
    char *line; /* the line being read: at most MCP_LINE_MAX bytes are kept */
    size_t len;
    int too_long;               /* past that the rest is dropped */
    char chunk[MCP_READ_CHUNK]; /* read ... */
    size_t at, end;             /* ... and chunk[at, end) not split yet */
    int eof;                    /* stdin ended (or could not be read: failed) */
    int failed;
};

/* One `wtproxy mcp` session. */
struct mcp {
    char worktree[PATH_MAX]; /* its worktree; "" when none (why_none says why) */
    char why_none[PATH_MAX + 256];
    int front;             /* the tools' front port from --front; 0: as the CLI picks it */
    long long started_pid; /* the daemon the current tool call started; 0: none */
    struct mcp_input in;
    json_t *call_id; /* the tools/call being answered; NULL between calls */
    int cancelled;   /* the client cancelled it, or ended: it stops, and is not answered */
    int ended;       /* stdin ended, or stdout is gone, during a call: the session ends */
    json_t *queued[MCP_QUEUE_MAX]; /* tools/call requests that came during a call */
    size_t nqueued;
    int holds; /* claimed a lease without a ttl, held while the session runs */
};

/* mcp.c: the next line of stdin into m->in (line, len, too_long), within
 * wait_ms (-1: blocking). Returns 1, 0 when none came in time, -1 at EOF
 * (a last line without its newline is a line first). */
int mcp_next_line(struct mcp_input *in, long wait_ms);

/* The line just read as a message (a new reference), the line emptied.
 * NULL when it is none: *reply is then its error (not JSON, too long),
 * or NULL (a blank line). */
json_t *mcp_take_message(struct mcp_input *in, json_t **reply);

/* Send reply (consumed) as one line on stdout. Returns 0, or -1 (the
 * client is gone). */
int mcp_send(json_t *reply);

/* mcp_wait.c: make cli_pause, while a tool call waits, read stdin:
 * answer what is cheap, keep other tools/call requests for after (in
 * m->queued), and end the wait on the call's cancellation or EOF. */
void mcp_wait_init(struct mcp *m);

/* The oldest tools/call that came during a call (a new reference), or
 * NULL. */
json_t *mcp_wait_next(struct mcp *m);

/* Drop what is still queued (the session ends). */
void mcp_wait_drop(struct mcp *m);

/* mcp_rpc.c: one line (without its newline) as a message, a new
 * reference; NULL with *reply the parse error. */
json_t *mcp_rpc_parse(const char *line, size_t len, json_t **reply);

/* The reply to msg, a new reference; NULL when none is due (a
 * notification, a response, a tools/call the client cancelled). */
json_t *mcp_rpc_message(struct mcp *m, json_t *msg);

/* A JSON-RPC error reply: {"jsonrpc":"2.0","id":id (null when NULL),
 * "error":{"code","message"[,"data"]}}. */
json_t *mcp_rpc_error(json_t *id, int code, const char *message, const char *data);

/* mcp_tools.c: the tools/list result, a new reference. */
json_t *mcp_tools_list(void);

/* The tools/call result of tool name with args (NULL: none given):
 * {"content":[{"type":"text","text"}],"structuredContent"[,"isError":true]}.
 * NULL with *code and err when the call is invalid (an unknown tool,
 * arguments of the wrong type or range: JSON-RPC's invalid params). */
json_t *mcp_tools_call(struct mcp *m, const char *name, json_t *args, int *code, char *err,
                       size_t errlen);

/* --- what the tools share (mcp_tools.c) --- */

/* A tool's failure: {"error": code, "message": the sentence with the fix}. */
json_t *mcp_fail(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The worktree a call is about into out: args' "worktree" (the worktree
 * of that folder) or the session's. A state-changing call (acting set)
 * may name no worktree but the session's. Returns NULL, or the failure. */
json_t *mcp_scope(struct mcp *m, json_t *args, int acting, char *out, size_t outlen);

/* mcp_daemon.c: send req (consumed) to the daemon, starting none: the
 * read-only tools never start one (a look changes nothing). Returns the
 * reply (ok or not), or NULL with *fail set: "no-daemon" (how to start
 * one), or "daemon-failed" (it answered not as it should). */
json_t *mcp_ask(json_t *req, json_t **fail);

/* For the tools that act (restart, claim and release on the embedded
 * store): a daemon answers, started now when none did, as `wtproxy run`
 * and `wtproxy claim` start it (not with WTPROXY_NO_AUTOSTART=1); the
 * call's result then says so. Returns NULL, or the failure. */
json_t *mcp_daemon_up(struct mcp *m);

/* The failure of a daemon older than this wtproxy, without op: the
 * command that replaces it with this version, on its ports, in the
 * background (a foreground `wtproxy serve` would hold the agent's shell). */
json_t *mcp_unsupported(const char *op);

/* When the tool call that returned out (a result or a failure) started
 * the daemon: say so in it ("daemon_started", and the failure's message). */
void mcp_daemon_started(struct mcp *m, json_t *out);

/* The daemon's reply to {"op": op, "worktree": wt} with the members of
 * args named in keys (NULL-terminated) when given; NULL with *fail: its
 * refusal (the reply with "error" and "message"), or "unsupported" when
 * the daemon predates op. */
json_t *mcp_op(const char *op, const char *wt, json_t *args, const char *const *keys,
               json_t **fail);

/* A tool that is one daemon op about the call's worktree (mcp_scope; acting
 * as there): its reply without "ok", with "worktree", or the failure. */
json_t *mcp_op_tool(struct mcp *m, json_t *args, int acting, const char *op,
                    const char *const *keys);

/* This machine's registrations of worktree (a new array), or NULL with
 * *fail set. */
json_t *mcp_entries(const char *worktree, json_t **fail);
/* The same, and into *exited (a new array) the servers of worktree that
 * exited lately, as `wtproxy ls` says them (cli_exited_of). */
json_t *mcp_entries_exited(const char *worktree, json_t **fail, json_t **exited);

/* mcp_front.c: the instructions initialize gives, into out: the URLs of
 * the session's worktree's fronts (as the CLI picks them, every one),
 * whether the daemon runs and listens there, what the tools do. */
void mcp_instructions(const struct mcp *m, char *out, size_t len);

/* The fronts of worktree wt as the servers tool shows them (a new array):
 * [{"front", "url", "listening" (null: no daemon answers)[, "service"]}]. */
json_t *mcp_fronts(const struct mcp *m, const char *wt);

/* mcp_read.c: the last want lines of the file at path, reading at most
 * MCP_LOG_BYTES_MAX of its end, when the file is owner's: {"lines",
 * "truncated"}; or a failure. */
json_t *mcp_log_tail(const char *path, uid_t owner, size_t want);

/* The last want lines of the newest log a server of wt (of that service
 * and front, when given) that runs no more left, with a "note" saying so
 * and what to do; a failure when it cannot be read; NULL when there is
 * none. A server that exits at start (a syntax error) is unregistered at
 * once, and that crash is what an agent asks about. */
json_t *mcp_gone_log(const char *wt, const char *service, json_t *front, size_t want);

/* mcp_select.c: the failure (not-found) of a tool called with a front or
 * service (args) that names nothing of wt, neither a server that runs nor
 * one its .wtproxy declares, saying what there is; NULL otherwise. */
json_t *mcp_unknown_selection(const char *wt, json_t *args, const char *tool);

/* Into out: how an agent starts wt's server (of that service and front,
 * each may be NULL or 0) again: the restart tool when wt's .wtproxy
 * declares it (restart starts a declared server that does not run), else
 * the `wtproxy run` command line. */
void mcp_start_hint(const char *wt, const char *service, int front, char *out, size_t len);

/* The tools (mcp_read.c, mcp_act.c, mcp_restart.c): args are checked against the table;
 * each returns its structured result, or a failure (mcp_fail). */
json_t *mcp_tool_servers(struct mcp *m, json_t *args);
json_t *mcp_tool_why(struct mcp *m, json_t *args);
json_t *mcp_tool_refusals(struct mcp *m, json_t *args);
json_t *mcp_tool_logs(struct mcp *m, json_t *args);
json_t *mcp_tool_restart(struct mcp *m, json_t *args);
json_t *mcp_tool_claim(struct mcp *m, json_t *args);
json_t *mcp_tool_release(struct mcp *m, json_t *args);

/* mcp_act.c, at the session's end: release the leases it holds while it
 * runs (claimed without a ttl), on the PostgreSQL store too, where no
 * other machine can tell that its pid is gone. */
void mcp_release_held(struct mcp *m);

#endif
