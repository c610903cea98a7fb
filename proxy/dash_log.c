/* dash_log.c - /__wtproxy/log/<backend port>: a live tail of a server's log
 * (the registration's `log`) as Server-Sent Events, for the dashboard.
 *
 * A log is a regular file, which poll() always calls readable, so it is
 * read on a timer instead: every WTP_DASH_LOG_POLL_MS at most
 * WTP_DASH_LOG_CHUNK bytes, with pread (a page-cache copy: microseconds),
 * never the whole file; a stream starts WTP_DASH_LOG_TAIL bytes from its
 * end. The bytes go out as a JSON string, cleaned first: ANSI escape
 * sequences and other control characters removed, invalid UTF-8 replaced,
 * so what the page shows with textContent is the text a terminal would
 * show, and nothing a browser interprets.
 *
 * A log rotates (host/log_file.c): at the end of the file it reads, a
 * tail looks whether the log's name now holds another file (one stat:
 * microseconds) and goes on from that one's start; a stream opened on a
 * log just rotated starts in its .1. */
#include "dash.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"

#define HEARTBEAT_TICKS (WTP_DASH_HEARTBEAT_MS / WTP_DASH_LOG_POLL_MS)

struct log_stream {
    int fd;
    char path[PATH_MAX]; /* the log's name, which a rotation gives a new file */
    off_t off;           /* the next byte to send */
    int skip_line;       /* started mid-file: drop up to the first newline */
    unsigned idle;       /* ticks without a byte, for the heartbeat */
};

static int open_streams; /* one daemon per process: WTP_DASH_MAX_LOGS at most */

/* The length of the valid UTF-8 sequence at p (n bytes left), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
                 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
                 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                                : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* in[0..n) as text fit for a JSON string and a page: into out (3n bytes
 * at least). Returns its length. */
static size_t clean(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = in[i];
        if (b == 0x1b) { /* ESC [ params final, or ESC and one byte */
            i++;
            if (i < n && in[i] == '[')
                while (++i < n && !(in[i] >= 0x40 && in[i] <= 0x7e))
                    ;
            i++;
        } else if (b < 0x20 || b == 0x7f) {
            if (b == '\n' || b == '\t')
                out[o++] = (char)b;
            i++; /* \r, bells, backspaces: a terminal's, not text */
        } else if (b < 0x80) {
            out[o++] = (char)in[i++];
        } else {
            size_t len = utf8_len(in + i, n - i);
            if (len) {
                memcpy(out + o, in + i, len);
                o += len;
                i += len;
            } else {
                memcpy(out + o, "\xef\xbf\xbd", 3); /* U+FFFD */
                o += 3;
                i++;
            }
        }
    }
    return o;
}

/* At the end of ls's file: when the log's name holds another file now
 * (it rotated), that one is read next, from its start; when ls's file was
 * unlinked (a second rotation within a tick), the .1 is the next one. */
static void next_file(struct log_stream *ls)
{
    struct stat named, st;
    char old[PATH_MAX + 8];
    if (stat(ls->path, &named) < 0 || fstat(ls->fd, &st) < 0 ||
        (named.st_ino == st.st_ino && named.st_dev == st.st_dev))
        return;
    snprintf(old, sizeof old, "%s.1", ls->path);
    int fd = open(st.st_nlink == 0 ? old : ls->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    close(ls->fd);
    ls->fd = fd;
    ls->off = 0;
    ls->skip_line = 0;
}

/* Send the next piece of the log, if any. Returns 0, or -1 when c was
 * closed (it stopped reading). */
static int send_piece(struct proxy_client *c, struct log_stream *ls)
{
    unsigned char buf[WTP_DASH_LOG_CHUNK];
    char text[WTP_DASH_LOG_CHUNK * 3];
    struct stat st;
    if (evbuffer_get_length(stream_output(c->bev)) > WTP_DASH_STREAM_BUFFER) {
        conn_close(c);
        return -1;
    }
    if (fstat(ls->fd, &st) == 0 && st.st_size < ls->off)
        ls->off = 0; /* cut short: read it again from its start */
    ssize_t n = pread(ls->fd, buf, sizeof buf, ls->off);
    if (n <= 0) {
        next_file(ls);
        return 0;
    }
    size_t use = (size_t)n, start = 0;
    if (use == sizeof buf) { /* more follows: end on a line, when one ends here */
        unsigned char *nl = memrchr(buf, '\n', use);
        if (nl)
            use = (size_t)(nl - buf) + 1;
    }
    ls->off += (off_t)use;
    if (ls->skip_line) {
        unsigned char *nl = memchr(buf, '\n', use);
        if (!nl)
            return 0;
        start = (size_t)(nl - buf) + 1;
        ls->skip_line = 0;
    }
    size_t len = clean(buf + start, use - start, text);
    json_t *s = json_stringn_nocheck(text, len);
    char *data = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    if (data)
        evbuffer_add_printf(stream_output(c->bev), "event: log\ndata: %s\n\n", data);
    free(data);
    json_decref(s);
    ls->idle = 0;
    return 0;
}

/* The live registration on backend port, or NULL. */
static struct reg_backend *backend_on(struct proxy_server *s, long port)
{
    struct reg_table *t = s->reg ? reg_server_table(s->reg) : NULL;
    for (size_t i = 0; t && i < reg_table_count(t); i++) {
        struct reg_backend *b = reg_table_at(t, i);
        if (b->state != REG_DEAD && b->port == port)
            return b;
    }
    return NULL;
}

/* Where a new stream starts: WTP_DASH_LOG_TAIL bytes before the log's
 * end, in its .1 when the log holds fewer (next_file then moves on to the
 * log itself). st is ls->fd's. */
static void start_tail(struct log_stream *ls, const struct stat *st)
{
    char old[PATH_MAX + 8];
    struct stat ost;
    int ofd = -1;
    ls->off = st->st_size > WTP_DASH_LOG_TAIL ? st->st_size - WTP_DASH_LOG_TAIL : 0;
    snprintf(old, sizeof old, "%s.1", ls->path);
    if (st->st_size < WTP_DASH_LOG_TAIL &&
        (ofd = open(old, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) >= 0 && fstat(ofd, &ost) == 0 &&
        S_ISREG(ost.st_mode) && ost.st_uid == st->st_uid) {
        off_t want = WTP_DASH_LOG_TAIL - st->st_size;
        close(ls->fd);
        ls->fd = ofd;
        ls->off = ost.st_size > want ? ost.st_size - want : 0;
    } else if (ofd >= 0) {
        close(ofd);
    }
    ls->skip_line = ls->off > 0;
}

void dash_log_serve(struct proxy_client *c, const char *portv)
{
    char *end;
    long port = strtol(portv, &end, 10);
    struct reg_backend *b = *portv && !*end ? backend_on(c->srv, port) : NULL;
    char msg[2 * PATH_MAX + 200];
    if (!b || !b->log[0]) {
        snprintf(msg, sizeof msg,
                 "wtproxy: no live server on port %s has a log (servers "
                 "started with wtproxy run have one; see /__wtproxy/api/backends)\n",
                 portv);
        dash_respond(c, "404 Not Found", "text/plain; charset=utf-8", NULL, msg, strlen(msg));
        return;
    }
    struct log_stream *ls = open_streams < WTP_DASH_MAX_LOGS ? calloc(1, sizeof *ls) : NULL;
    struct stat st;
    if (ls && ((ls->fd = open(b->log, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
               fstat(ls->fd, &st) < 0)) {
        if (ls->fd >= 0)
            close(ls->fd);
        free(ls);
        snprintf(msg, sizeof msg, "wtproxy: cannot read %s; read it with: wtproxy logs %s\n",
                 b->log, b->worktree);
        dash_respond(c, "404 Not Found", "text/plain; charset=utf-8", NULL, msg, strlen(msg));
        return;
    }
    if (!ls) {
        snprintf(msg, sizeof msg, "wtproxy: %d log tails are open already; close one\n",
                 WTP_DASH_MAX_LOGS);
        dash_respond(c, "503 Service Unavailable", "text/plain; charset=utf-8",
                     "Retry-After: 5\r\n", msg, strlen(msg));
        return;
    }
    open_streams++;
    snprintf(ls->path, sizeof ls->path, "%s", b->log);
    start_tail(ls, &st);
    c->state = CS_HANDLER;
    c->resp_started = 1;
    c->handler_note = DASH_NOTE_LOG;
    c->handler_job = ls;
    evbuffer_add_printf(stream_output(c->bev),
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                        "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                        "Connection: close\r\n\r\nretry: 3000\n\n");
    json_t *file =
        json_pack("{s:s, s:s, s:i}", "path", b->log, "worktree", b->worktree, "front", b->front);
    char *data = file ? json_dumps(file, JSON_COMPACT) : NULL;
    if (data)
        evbuffer_add_printf(stream_output(c->bev), "event: file\ndata: %s\n\n", data);
    free(data);
    json_decref(file);
    dash_log_tick(c);
}

void dash_log_tick(struct proxy_client *c)
{
    struct log_stream *ls = c->handler_job;
    if (send_piece(c, ls) < 0)
        return;
    if (++ls->idle >= HEARTBEAT_TICKS) {
        evbuffer_add(stream_output(c->bev), ":\n\n", 3);
        ls->idle = 0;
    }
    conn_arm_timer(c, WTP_DASH_LOG_POLL_MS);
}

void dash_log_gone(struct proxy_client *c)
{
    struct log_stream *ls = c->handler_job;
    close(ls->fd);
    free(ls);
    c->handler_job = NULL;
    open_streams--;
}
