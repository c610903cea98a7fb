/* mcp.c - `wtproxy mcp [--worktree DIR] [--front PORT]`: the agent
 * interface. It speaks the Model Context Protocol over stdio: one JSON-RPC
 * 2.0 message a line on stdin, one reply a line on stdout, nothing else on
 * stdout (people's messages go to stderr). A line longer than MCP_LINE_MAX
 * is read to its end and dropped, and answered with an error, so that no
 * input makes the process grow without bound or stop answering. While a
 * tool call waits, stdin is still read (mcp_wait.c): the client may
 * cancel it. EOF on stdin ends it with status 0, during a wait too. */
#include "mcp.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"

/* Write all of buf to stdout. Returns 0, or -1 (the client is gone). */
static int write_all(const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int mcp_send(json_t *reply)
{
    char *text = json_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    if (!text) {
        fprintf(stderr, "wtproxy mcp: out of memory writing a reply\n");
        return 0;
    }
    size_t n = strlen(text);
    int r = write_all(text, n) < 0 || write_all("\n", 1) < 0 ? -1 : 0;
    free(text);
    return r;
}

json_t *mcp_take_message(struct mcp_input *in, json_t **reply)
{
    json_t *msg = NULL;
    *reply = NULL;
    if (in->too_long) {
        char data[160];
        snprintf(data, sizeof data, "a message is at most %d bytes; this one was discarded",
                 MCP_LINE_MAX);
        *reply = mcp_rpc_error(NULL, MCP_INVALID_REQUEST, "Invalid Request", data);
    } else {
        while (in->len > 0 && (in->line[in->len - 1] == '\r' || in->line[in->len - 1] == ' ' ||
                               in->line[in->len - 1] == '\t'))
            in->len--;
        if (in->len > 0) /* blank lines are no messages */
            msg = mcp_rpc_parse(in->line, in->len, reply);
    }
    in->len = 0;
    in->too_long = 0;
    return msg;
}

/* Add n bytes of one line to in, keeping at most MCP_LINE_MAX. */
static void add_bytes(struct mcp_input *in, const char *p, size_t n)
{
    if (in->too_long || in->len + n > MCP_LINE_MAX) {
        in->too_long = 1;
        return;
    }
    memcpy(in->line + in->len, p, n);
    in->len += n;
}

/* Read what stdin has into in->chunk, waiting until deadline (a
 * monotonic ms; -1: blocking). Returns 1, or 0 when nothing came. */
static int fill(struct mcp_input *in, long long deadline)
{
    for (;;) {
        long long left = deadline < 0 ? -1 : deadline - host_mono_ms();
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&p, 1, deadline < 0 ? -1 : left > 0 ? (int)left : 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return 0;
        ssize_t n = read(STDIN_FILENO, in->chunk, sizeof in->chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            fprintf(stderr, "wtproxy mcp: reading stdin: %s\n", strerror(errno));
            in->failed = 1;
        }
        in->eof = n <= 0;
        in->at = 0;
        in->end = n > 0 ? (size_t)n : 0;
        return 1;
    }
}

int mcp_next_line(struct mcp_input *in, long wait_ms)
{
    long long deadline = wait_ms < 0 ? -1 : host_mono_ms() + wait_ms;
    for (;;) {
        if (in->at < in->end) {
            char *p = in->chunk + in->at;
            char *nl = memchr(p, '\n', in->end - in->at);
            size_t n = (size_t)((nl ? nl : in->chunk + in->end) - p);
            add_bytes(in, p, n);
            in->at += n + (nl ? 1 : 0);
            if (nl)
                return 1;
        } else if (in->eof) { /* a last line without its newline still counts */
            return in->len > 0 || in->too_long ? 1 : -1;
        } else if (!fill(in, deadline)) {
            return 0;
        }
    }
}

/* Answer each message to EOF: the tools/call requests that came while a
 * call waited first (mcp_wait.c), then stdin's next. Returns the exit
 * status. */
static int serve(struct mcp *m)
{
    if (!(m->in.line = malloc(MCP_LINE_MAX))) {
        fprintf(stderr, "wtproxy mcp: out of memory\n");
        return 1;
    }
    mcp_wait_init(m);
    while (!m->ended) {
        json_t *reply = NULL, *msg = mcp_wait_next(m);
        if (!msg && mcp_next_line(&m->in, -1) < 0)
            break;
        if (!msg)
            msg = mcp_take_message(&m->in, &reply);
        if (msg)
            reply = mcp_rpc_message(m, msg);
        json_decref(msg);
        if (reply && mcp_send(reply) < 0)
            break; /* the client closed our stdout: it is gone */
    }
    mcp_wait_drop(m);
    mcp_release_held(m);
    free(m->in.line);
    return m->in.failed;
}

/* The session's worktree: --worktree DIR (its top folder, as run takes
 * it), else the cwd's. Without one the tools that need it say why.
 * Returns 0, or -1 with err for a bad --worktree. */
static int find_worktree(struct mcp *m, const char *dir, char *err, size_t errlen)
{
    struct host_worktree w;
    if (dir)
        return cli_serve_worktree(dir, m->worktree, sizeof m->worktree, err, errlen);
    if (host_worktree_of(".", &w, m->why_none, sizeof m->why_none) == 0) {
        snprintf(m->worktree, sizeof m->worktree, "%s", w.root);
        return 0;
    }
    size_t n = strlen(m->why_none);
    snprintf(m->why_none + n, sizeof m->why_none - n,
             "; start wtproxy mcp in a worktree, or pass it --worktree DIR");
    fprintf(stderr, "wtproxy mcp: warning: %s\n", m->why_none);
    return 0;
}

int cli_mcp_main(int argc, char **argv)
{
    static struct mcp m;
    const char *dir = NULL, *frontv = NULL;
    const struct cli_opt opts[] = {
        {"worktree", &dir, NULL}, {"front", &frontv, NULL}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 256];
    m.front = 0; /* none given: each call's own (mcp_tool_why), as the CLI's */
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0 || (frontv && cli_port("front", frontv, &m.front, err, sizeof err) < 0) ||
        find_worktree(&m, dir, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy mcp: %s (see wtproxy mcp --help)\n", err);
        return 2;
    }
    if (m.worktree[0]) /* a daemon a tool starts listens on its fronts */
        cli_daemon_listen_for(m.worktree);
    /* A client that closes its end must not kill us mid-write. */
    signal(SIGPIPE, SIG_IGN);
    return serve(&m);
}
