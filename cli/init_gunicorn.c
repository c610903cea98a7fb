/* init_gunicorn.c - a Django app whose Playwright webServer runs gunicorn
 * keeps gunicorn as its start. init wrote `python3 manage.py runserver`
 * for every Django app: a team serving `/usr/bin/gunicorn --reload
 * --workers 2 --bind 127.0.0.1:8610 shop.wsgi` had its server swapped
 * without a word, and run by the python3 on PATH (a pyenv one without
 * Django) where gunicorn's first line named /usr/bin/python3. The command
 * is the team's; only its address is wtproxy's: the one bind (`--bind
 * X`, `--bind=X`, `-b X`, `-bX`) becomes 127.0.0.1:{port}, or is added
 * when it has none (gunicorn's default is 127.0.0.1:8000, or $PORT on
 * every interface).
 *
 * Text inspection, as init_flask.c's: a line of plain words only (no
 * quote, shell operator or variable), split at blanks. */
#include <stdio.h>
#include <string.h>

#include "init.h"

#define GUNICORN_BIND "127.0.0.1:{port}"

/* Whether the word at w (n bytes) is gunicorn's program: `gunicorn` or a
 * path ending in /gunicorn. */
static int is_gunicorn(const char *w, size_t n)
{
    return (n == 8 || (n > 8 && w[n - 9] == '/')) && memcmp(w + n - 8, "gunicorn", 8) == 0;
}

/* The offset in cmd just after its gunicorn program (`gunicorn`,
 * `/usr/bin/gunicorn`, `.venv/bin/python -m gunicorn`), -1 when it runs
 * no gunicorn first. */
static long program_end(const char *cmd)
{
    static const char dash_m[] = " -m gunicorn";
    size_t n = strcspn(cmd, " \t"), k = sizeof dash_m - 1;
    if (is_gunicorn(cmd, n))
        return (long)n;
    const char *base = memrchr(cmd, '/', n);
    base = base ? base + 1 : cmd;
    if (strncmp(base, "python", 6) == 0 && strncmp(cmd + n, dash_m, k) == 0 &&
        strchr(" \t", cmd[n + k])) /* the terminator too */
        return (long)(n + k);
    return -1;
}

/* The bind option of the word at w (n bytes): the offset and length of
 * its value, within it (`--bind=X`, `-bX`) or the next word's (`--bind
 * X`, `-b X`), from cmd's start. 0 when w is no bind, -1 when its value
 * is missing. */
static int bind_value(const char *cmd, const char *w, size_t n, size_t *at, size_t *len)
{
    const char *v;
    if ((n == 6 && memcmp(w, "--bind", 6) == 0) || (n == 2 && memcmp(w, "-b", 2) == 0)) {
        v = w + n + strspn(w + n, " \t");
        *len = strcspn(v, " \t");
    } else if (n > 7 && memcmp(w, "--bind=", 7) == 0) {
        v = w + 7;
        *len = n - 7;
    } else if (n > 2 && memcmp(w, "-b", 2) == 0) {
        v = w + 2;
        *len = n - 2;
    } else {
        return 0;
    }
    *at = (size_t)(v - cmd);
    return *len ? 1 : -1;
}

/* cmd's gunicorn start with its one bind made GUNICORN_BIND (added after
 * the program when it has none), into out. -1 when cmd is no such line
 * (another program, shell syntax, several binds). */
static int bound_start(const char *cmd, char *out, size_t len)
{
    long prog = strpbrk(cmd, "'\"`$&|;<>()\\\n") ? -1 : program_end(cmd);
    size_t at = 0, n = 0, binds = 0;
    if (prog < 0)
        return -1;
    for (const char *w = cmd + prog;;) {
        w += strspn(w, " \t");
        size_t wn = strcspn(w, " \t"), a, l;
        if (wn == 0)
            break;
        int b = bind_value(cmd, w, wn, &a, &l);
        if (b < 0 || (b > 0 && binds++))
            return -1;
        if (b > 0) {
            at = a;
            n = l;
        }
        w = b > 0 ? cmd + a + l : w + wn;
    }
    int w = binds
                ? snprintf(out, len, "%.*s%s%s", (int)at, cmd, GUNICORN_BIND, cmd + at + n)
                : snprintf(out, len, "%.*s --bind %s%s", (int)prog, cmd, GUNICORN_BIND, cmd + prog);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

int cli_gunicorn_start(const struct cli_playwright *pw, char *out, size_t len)
{
    const char *cmd = pw->run_cmd[0] ? pw->run_cmd : pw->command;
    return bound_start(cmd + strspn(cmd, " \t"), out, len);
}
