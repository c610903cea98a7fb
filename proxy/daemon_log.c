/* daemon_log.c - the daemon's log: proxy_log's lines on stderr, and the
 * cap on the file stderr is (daemon.log when the CLI started the daemon;
 * any regular file serve's stderr was sent to). A terminal, a pipe or the
 * journal is not capped: whoever reads it keeps what it wants.
 *
 * The rotation (host/log_file.c: one rename and one open in the state
 * folder, then dup2) runs on the loop, inside the proxy_log call whose
 * line passed the cap. That is the loop writing to the same file it
 * already writes every line to, once per cap's worth of lines (16 MiB:
 * with repeats collapsed by log_flood.c, days): microseconds on a local
 * folder, the kind of call the loop's rule allows, and a worker would
 * need the loop's lines to wait for it or to go to a file being renamed. */
#include "server.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

static struct host_log daemon_log = {.fd = -1, .also = {-1, -1}};

void proxy_log_cap(void)
{
    int also[] = {STDOUT_FILENO};
    if (host_log_attach(&daemon_log, STDERR_FILENO, also, 1) < 0)
        daemon_log.fd = -1;
}

/* After a rotation, the new file's first line says where the earlier
 * lines are; a failed one says why the file goes on growing. */
static void rotated(int r, const char *err)
{
    int n = 0;
    if (r > 0)
        n = fprintf(stderr, "wtproxy: earlier lines are in %s.1 (this log passed %lld bytes)\n",
                    daemon_log.path, daemon_log.max);
    else if (r < 0)
        n = fprintf(stderr, "wtproxy: %s: this log goes on in the same file\n", err);
    if (n > 0)
        host_log_wrote(&daemon_log, (size_t)n, 1, NULL, 0);
}

/* n, or less, so that s[0, n) does not end inside a UTF-8 character:
 * a cut line stays text for whoever reads it as UTF-8. */
static size_t whole_chars(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    unsigned char lead = i > 0 ? (unsigned char)s[i - 1] : 0;
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    return need > n - (i - 1) ? i - 1 : n;
}

void proxy_vlog(const char *fmt, va_list ap)
{
    char small[1024], *line = small, *big = NULL, err[PATH_MAX * 2 + 64];
    size_t size = sizeof small;
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    /* Most lines fit; a refusal quoting a traceback does not, and its
     * last line is the one that names the error. Out of memory: what fit. */
    if (len >= (int)sizeof small) {
        size_t want = (size_t)len < WTP_LOG_LINE_MAX ? (size_t)len + 1 : WTP_LOG_LINE_MAX;
        if ((big = malloc(want)) != NULL) {
            vsnprintf(big, want, fmt, again);
            line = big;
            size = want;
        }
    }
    va_end(again);
    size_t kept = len < 0 ? 0 : (size_t)len < size ? (size_t)len : whole_chars(line, size - 1);
    int n = fprintf(stderr, "wtproxy: %.*s%s\n", (int)kept, line,
                    len > 0 && kept < (size_t)len ? " (cut)" : "");
    free(big);
    if (n > 0 && daemon_log.fd >= 0)
        rotated(host_log_wrote(&daemon_log, (size_t)n, 1, err, sizeof err), err);
}

void proxy_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    proxy_vlog(fmt, ap);
    va_end(ap);
}
