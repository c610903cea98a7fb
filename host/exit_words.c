/* exit_words.c - how a server's end is said (host.h): the one wording of
 * an exit status or a signal for the 503 of the next request
 * (proxy/last_words.c), `wtproxy ls`, `why` and the MCP servers tool
 * (cli/ls_exited.c) and the dashboard (proxy/dash_api.c).
 *
 * A dev server is often not the wrapper's own child: `sh -c "next dev"`,
 * npm, Django's autoreloader. When someone kills it (kill -9, the OOM
 * killer), its parent exits with a number: a shell's 128+N, Python's
 * sys.exit(-N) as 256-N. Said as a bare "status 137" over empty last
 * lines, it read as an error to fix, and the reader looked for one. */
#include "host.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Signals a program raises on itself when it crashes: its error is its
 * own (the fix is in its code), not someone's kill. */
static int crash_signal(int sig)
{
    return sig == 4 || sig == 5 || sig == 6 || sig == 7 || sig == 8 || sig == 11 || sig == 31;
}

/* " (SIGKILL)" for sig, or "" for one without a name here (real-time). */
static void sig_name(int sig, char *out, size_t len)
{
    static const char *const names[] = {
        NULL,        "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
        "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
        "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
        "SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS",
    };
    if (sig > 0 && (size_t)sig < sizeof names / sizeof names[0])
        snprintf(out, len, " (%s)", names[sig]);
    else
        out[0] = '\0';
}

/* Whether command runs Python (python, python3.12, a venv's python,
 * manage.py): only then does 256-N read as sys.exit(-N). */
static int python_command(const char *command)
{
    return strstr(command, "python") || strstr(command, "manage.py") || strstr(command, "django");
}

int host_exit_words(int status, int signal, const char *command, const char *ago, char *out,
                    size_t len)
{
    char name[16], when[48] = "";
    if (ago && ago[0])
        snprintf(when, sizeof when, " %s ago", ago);
    command = command ? command : "";
    if (status < 0) {
        sig_name(signal, name, sizeof name);
        snprintf(out, len, "was killed%s by signal %d%s", when, signal, name);
        return !crash_signal(signal);
    }
    int sig = status > 128 && status <= 128 + 64 ? status - 128 : 0;
    if (sig) {
        sig_name(sig, name, sizeof name);
        snprintf(out, len,
                 "exited%s with status %d: 128+%d, a child killed by signal %d%s, as a shell "
                 "reports it",
                 when, status, sig, sig, name);
        return !crash_signal(sig);
    }
    sig = status >= 256 - 64 && status < 256 ? 256 - status : 0;
    if (sig && python_command(command)) {
        sig_name(sig, name, sizeof name);
        snprintf(out, len,
                 "exited%s with status %d, which is how %s reports its server killed by "
                 "signal %d%s",
                 when, status,
                 strstr(command, "manage.py") || strstr(command, "django")
                     ? "Django's autoreloader"
                     : "a Python autoreloader",
                 sig, name);
        return !crash_signal(sig);
    }
    snprintf(out, len, "exited%s with status %d", when, status);
    return 0;
}

int host_printed_nothing(const char *lines)
{
    return !lines || !lines[strspn(lines, " \t\r\n")];
}

int host_names_error(const char *p, const char *end)
{
    static const char *const words[] = {"error", "exception", "fatal", "panic", "traceback"};
    if (p == end || *p == ' ' || *p == '\t')
        return 0;
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
        for (const char *q = p; q + strlen(words[w]) <= end; q++)
            if (strncasecmp(q, words[w], strlen(words[w])) == 0)
                return 1;
    return 0;
}

/* Not simply the last line: a server's stdout and stderr reach its
 * wrapper through two pipes, and what it wrote to one just before its
 * traceback on the other can be read after it (seen in CI: Django's
 * "Performing system checks..." quoted as a failed start's last line). */
const char *host_error_line(const char *lines, size_t *n)
{
    const char *error = NULL, *last = lines, *end = lines + strlen(lines);
    size_t error_n = 0, last_n = 0;
    for (const char *p = lines; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        eol = eol ? eol : end;
        size_t w = (size_t)(eol - p);
        while (w && strchr(" \t\r", p[w - 1]))
            w--;
        if (host_names_error(p, p + w)) {
            error = p;
            error_n = w;
        } else if (w) {
            last = p;
            last_n = w;
        }
        p = eol + 1;
    }
    *n = error ? error_n : last_n;
    return error ? error : last;
}
