/* mcp.c - `wtproxy mcp [--worktree DIR] [--front PORT]`: the agent
 * interface. It speaks the Model Context Protocol over stdio: one JSON-RPC
 * 2.0 message a line on stdin, one reply a line on stdout, nothing else on
 * stdout (people's messages go to stderr). A line longer than MCP_LINE_MAX
 * is read to its end and dropped, and answered with an error, so that no
 * input makes the process grow without bound or stop answering. EOF on
 * stdin ends it with status 0. */
#include "mcp.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host.h"

#define READ_CHUNK 65536

/* A line being read: at most MCP_LINE_MAX bytes are kept; past that the
 * rest of the line is counted and dropped (too_long). */
struct line {
    char *buf;
    size_t len;
    int too_long;
};

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

/* Send reply (consumed) as one line. Returns 0, or -1. */
static int send_reply(json_t *reply)
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

/* Answer the line l holds and make it empty again. Blank lines are no
 * messages. Returns 0, or -1 when stdout is gone. */
static int finish_line(struct mcp *m, struct line *l)
{
    json_t *reply = NULL;
    if (l->too_long) {
        char data[160];
        snprintf(data, sizeof data, "a message is at most %d bytes; this one was discarded",
                 MCP_LINE_MAX);
        reply = mcp_rpc_error(NULL, MCP_INVALID_REQUEST, "Invalid Request", data);
    } else {
        while (l->len > 0 && (l->buf[l->len - 1] == '\r' || l->buf[l->len - 1] == ' ' ||
                              l->buf[l->len - 1] == '\t'))
            l->len--;
        if (l->len > 0)
            reply = mcp_rpc_handle(m, l->buf, l->len);
    }
    l->len = 0;
    l->too_long = 0;
    return reply ? send_reply(reply) : 0;
}

/* Add n bytes of one line to l, keeping at most MCP_LINE_MAX. */
static void add_bytes(struct line *l, const char *p, size_t n)
{
    if (l->too_long || l->len + n > MCP_LINE_MAX) {
        l->too_long = 1;
        return;
    }
    memcpy(l->buf + l->len, p, n);
    l->len += n;
}

/* Read stdin to EOF, answering each line. Returns the exit status. */
static int serve(struct mcp *m)
{
    static char chunk[READ_CHUNK];
    struct line l = {.buf = malloc(MCP_LINE_MAX)};
    if (!l.buf) {
        fprintf(stderr, "wtproxy mcp: out of memory\n");
        return 1;
    }
    int status = 0;
    for (;;) {
        ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "wtproxy mcp: reading stdin: %s\n", strerror(errno));
            status = 1;
            break;
        }
        if (n == 0) { /* EOF: a last line without its newline still counts */
            if ((l.len > 0 || l.too_long) && finish_line(m, &l) < 0)
                status = 1;
            break;
        }
        for (char *p = chunk, *end = chunk + n; p < end;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            add_bytes(&l, p, (size_t)((nl ? nl : end) - p));
            if (nl && finish_line(m, &l) < 0) {
                free(l.buf);
                return 0; /* the client closed our stdout: it is gone */
            }
            p = nl ? nl + 1 : end;
        }
    }
    free(l.buf);
    return status;
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
    /* A client that closes its end must not kill us mid-write. */
    signal(SIGPIPE, SIG_IGN);
    return serve(&m);
}
