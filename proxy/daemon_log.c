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

void proxy_log(const char *fmt, ...)
{
    char line[1024], err[PATH_MAX * 2 + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int n = fprintf(stderr, "wtproxy: %s\n", line);
    if (n > 0 && daemon_log.fd >= 0)
        rotated(host_log_wrote(&daemon_log, (size_t)n, 1, err, sizeof err), err);
}
