/* test_daemon_log.c - a line of the daemon's log (proxy/daemon_log.c):
 * a line past the old 1023 bytes is written whole (a refusal quoting a
 * traceback ends with its error); one past WTP_LOG_LINE_MAX is cut where a
 * UTF-8 character begins, never inside one, and says "(cut)". */
#include "../../proxy/daemon_log.c"
#include "tap.h"

#include <stdlib.h>

/* What proxy_log wrote for line, read back from stderr sent to a file. */
static char *logged(const char *line)
{
    static char *out;
    FILE *f = tmpfile();
    int saved = dup(STDERR_FILENO);
    fflush(stderr);
    dup2(fileno(f), STDERR_FILENO);
    proxy_log("%s", line);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    off_t n = lseek(fileno(f), 0, SEEK_END); /* written through the fd, not f */
    free(out);
    out = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
    if (out && pread(fileno(f), out, (size_t)n, 0) != n)
        out[0] = '\0';
    fclose(f);
    return out ? out : "";
}

/* A line of n bytes: 'x's, then "é" (2 bytes) across byte at, then "END". */
static char *line_of(size_t n, size_t at)
{
    char *s = malloc(n + 1);
    memset(s, 'x', n);
    memcpy(s + at, "\xc3\xa9", 2);
    memcpy(s + n - 3, "END", 3);
    s[n] = '\0';
    return s;
}

int main(void)
{
    char *s = line_of(5000, 100);
    char *got = logged(s);
    tap_ok(strlen(got) == 5000 + strlen("wtproxy: \n") && strstr(got, "END\n"), __FILE__, __LINE__,
           "a line of 5,000 bytes is written whole (got %zu bytes)", strlen(got));
    free(s);

    /* "é" begins on the last byte that fits: the cut goes before it. */
    size_t fit = WTP_LOG_LINE_MAX - 1;
    s = line_of(WTP_LOG_LINE_MAX + 100, fit - 1);
    got = logged(s);
    size_t want = strlen("wtproxy: ") + fit - 1;
    tap_ok(strlen(got) == want + strlen(" (cut)\n") && memcmp(got + want, " (cut)\n", 7) == 0 &&
               (unsigned char)got[want - 1] == 'x',
           __FILE__, __LINE__,
           "a line past WTP_LOG_LINE_MAX is cut before a UTF-8 character and says (cut)");
    free(s);

    /* "é" ends on the last byte that fits: kept whole. */
    s = line_of(WTP_LOG_LINE_MAX + 100, fit - 2);
    got = logged(s);
    want = strlen("wtproxy: ") + fit;
    tap_ok(strlen(got) == want + strlen(" (cut)\n") &&
               memcmp(got + want - 2, "\xc3\xa9 (cut)\n", 9) == 0,
           __FILE__, __LINE__, "a character that fits is kept");
    free(s);
    return done_testing();
}
