/* test_dev_lock.c - a dev server's last lines read for another server of
 * its project holding the project's lock (host/dev_lock.c): Vite 8's
 * words with and without the URL it names, told as that pid and its kill;
 * anything else, a line cut before the pid included, left to the generic
 * message (a wrong pid would send a kill to someone else's process). */
#include "../../host/dev_lock.c"
#include "tap.h"

static char out[1024];

static void held(const char *lines, const char *want, const char *what, int line)
{
    out[0] = '\0';
    int got = host_dev_lock_holder(lines, out, sizeof out);
    if (!tap_ok(got == 1 && strcmp(out, want) == 0, __FILE__, line, "%s", what))
        printf("#   got %d: %s\n#  want: %s\n", got, out, want);
}

static void not_held(const char *lines, const char *what, int line)
{
    out[0] = '\0';
    int got = host_dev_lock_holder(lines, out, sizeof out);
    if (!tap_ok(got == 0, __FILE__, line, "%s: not a lock", what))
        printf("#   got: %s\n", out);
}

int main(void)
{
    held("error when starting dev server:\nError: Found another Vite dev process for this "
         "project at http://localhost:5173/ (PID 4242).\nPass --bypass-lock to bypass this "
         "check.\n    at scanCommandLocks (file:///w/app/node_modules/vite/dist/node/cli.js)\n",
         "another Vite dev server of this project already runs (pid 4242, at "
         "http://localhost:5173/), and Vite starts one per project: stop it: kill 4242",
         "Vite 8 with its URL", __LINE__);
    held("Error: Found another Vite dev process for this project (PID 17).\n",
         "another Vite dev server of this project already runs (pid 17), and Vite starts one "
         "per project: stop it: kill 17",
         "Vite 8 without a URL", __LINE__);
    held("Error: Found another Vite preview process for this project at http://localhost:4173/ "
         "(PID 99).\n",
         "another Vite preview server of this project already runs (pid 99, at "
         "http://localhost:4173/), and Vite starts one per project: stop it: kill 99",
         "vite preview", __LINE__);
    not_held("Found another Vite dev server\nError: Found another Vite process for this project "
             "(PID 5).",
             "not Vite's sentence", __LINE__);
    not_held("Error: Found another Vite dev process for this project at http://localhost:5173/",
             "cut before its pid", __LINE__);
    not_held("Error: Found another Vite dev process for this project at x\n(PID 5)",
             "pid on another line", __LINE__);
    not_held("Error: Found another Vite dev process for this project (PID 0).", "pid 0", __LINE__);
    not_held("Error: Found another Vite dev process for this project (PID 12x).", "not a number",
             __LINE__);
    not_held("Error: listen EADDRINUSE: address already in use 127.0.0.1:5173", "a taken port",
             __LINE__);
    not_held(NULL, "no lines", __LINE__);
    return done_testing();
}
