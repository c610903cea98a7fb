/* test_exit_words.c - how a server's end is said (host/exit_words.c): a
 * shell's 128+N as the signal that killed its child, Python's 256-N only
 * for a Python command, a signal the wrapper saw by its name; a crash's
 * signal never read as someone's kill, and a plain status left plain;
 * the one line of a server's last lines quoted alone is its error. */
#include "../../host/exit_words.c"
#include "tap.h"

static char out[512];

static void quoted(const char *lines, const char *want, int line)
{
    size_t n = 0;
    const char *got = host_error_line(lines, &n);
    snprintf(out, sizeof out, "%.*s", (int)n, got);
    tap_is_str(out, want, __FILE__, line, "quoted alone: %s", want);
}

static void said(int status, int sig, const char *command, const char *ago, const char *want,
                 int killed, int line)
{
    int got = host_exit_words(status, sig, command, ago, out, sizeof out);
    if (!tap_ok(got == killed && strcmp(out, want) == 0, __FILE__, line, "%s", want))
        printf("#   got %d: %s\n#  want %d: %s\n", got, out, killed, want);
}

int main(void)
{
    said(1, 0, "node server.mjs 8001", "3s", "exited 3s ago with status 1", 0, __LINE__);
    said(137, 0, "/bin/sh -c next dev", "0s",
         "exited 0s ago with status 137: 128+9, a child killed by signal 9 (SIGKILL), as a shell "
         "reports it",
         1, __LINE__);
    said(143, 0, "npm run dev", NULL,
         "exited with status 143: 128+15, a child killed by signal 15 (SIGTERM), as a shell "
         "reports it",
         1, __LINE__);
    said(139, 0, "/bin/sh -c ./server", NULL,
         "exited with status 139: 128+11, a child killed by signal 11 (SIGSEGV), as a shell "
         "reports it",
         0, __LINE__);
    said(247, 0, "/usr/bin/python3 manage.py runserver 127.0.0.1:8001", "1m",
         "exited 1m ago with status 247, which is how Django's autoreloader reports its server "
         "killed by signal 9 (SIGKILL)",
         1, __LINE__);
    said(247, 0, ".venv/bin/python -m flask run", NULL,
         "exited with status 247, which is how a Python autoreloader reports its server killed "
         "by signal 9 (SIGKILL)",
         1, __LINE__);
    said(247, 0, "node server.mjs 8001", NULL, "exited with status 247", 0, __LINE__);
    said(255, 0, "/usr/bin/python3 manage.py runserver", NULL,
         "exited with status 255, which is how Django's autoreloader reports its server killed by "
         "signal 1 (SIGHUP)",
         1, __LINE__);
    said(128, 0, "sh -c x", NULL, "exited with status 128", 0, __LINE__);
    said(-1, 9, "node server.mjs", "2s", "was killed 2s ago by signal 9 (SIGKILL)", 1, __LINE__);
    said(-1, 6, "node server.mjs", NULL, "was killed by signal 6 (SIGABRT)", 0, __LINE__);
    said(-1, 40, NULL, NULL, "was killed by signal 40", 1, __LINE__);

    tap_ok(host_printed_nothing(NULL), __FILE__, __LINE__, "no lines: nothing printed");
    tap_ok(host_printed_nothing(" \r\n\n"), __FILE__, __LINE__, "white space: nothing printed");
    tap_ok(!host_printed_nothing("\nKilled\n"), __FILE__, __LINE__, "a line: printed");

    /* stdout read after the traceback on stderr, as two pipes may */
    quoted("Traceback (most recent call last):\n  File \"urls.py\", line 3\n"
           "SyntaxError: '[' was never closed\nPerforming system checks...\n\n",
           "SyntaxError: '[' was never closed", __LINE__);
    quoted("/srv/app.js:3\n  throw new Error('boom')\n  ^\n\nError: boom\n    at main "
           "(/srv/app.js:3:9)\n\nNode.js v20.19.2\n",
           "Error: boom", __LINE__);
    quoted("listening soon\r\nstill nothing  \n\n", "still nothing", __LINE__);
    quoted("", "", __LINE__);
    return done_testing();
}
