/* dev_lock.c - a dev server that did not start because another one of the
 * same project holds the project's lock, as its output says it.
 *
 * Vite 8 keeps one dev server per project: a second one exits at once with
 * "Found another Vite dev process for this project at URL (PID N). Pass
 * --bypass-lock to bypass this check." The other is most often the user's
 * own `npm run dev` in that worktree, so the Vite the daemon starts from
 * the .wtproxy exits, and its callers got "fix the error they name". The
 * fix an agent reads there is the kill of that pid, never --bypass-lock:
 * two Vites writing one project's cache is what the lock is for. */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Vite's words: "Found another Vite dev process for this project", or
 * "preview" for `vite preview`; their command into cmd. NULL when absent,
 * else where the words end. */
static const char *vite_lock(const char *lines, char *cmd, size_t len)
{
    static const char head[] = "Found another Vite ", tail[] = " process for this project";
    for (const char *p = lines; p && (p = strstr(p, head)); p += sizeof head - 1) {
        const char *word = p + sizeof head - 1, *end = strchr(word, ' ');
        if (end && end - word < 16 && (size_t)(end - word) < len &&
            strncmp(end, tail, sizeof tail - 1) == 0) {
            snprintf(cmd, len, "%.*s", (int)(end - word), word);
            return end + sizeof tail - 1;
        }
    }
    return NULL;
}

/* The URL after " at " up to " (PID", into url ("" when Vite named none). */
static void lock_url(const char *from, const char *pid_at, char *url, size_t len)
{
    url[0] = '\0';
    if (strncmp(from, " at ", 4) == 0 && pid_at > from + 4 && (size_t)(pid_at - from - 4) < len)
        snprintf(url, len, "%.*s", (int)(pid_at - from - 4), from + 4);
}

int host_dev_lock_holder(const char *lines, char *out, size_t len)
{
    char cmd[16];
    const char *after = vite_lock(lines, cmd, sizeof cmd);
    if (!after)
        return 0;
    const char *eol = strchr(after, '\n'), *pid_at = strstr(after, " (PID ");
    if (!pid_at || (eol && pid_at > eol))
        return 0;
    char *end;
    long pid = strtol(pid_at + 6, &end, 10);
    if (pid <= 0 || *end != ')')
        return 0;
    char url[256], at[300] = "";
    lock_url(after, pid_at, url, sizeof url);
    if (url[0])
        snprintf(at, sizeof at, ", at %s", url);
    snprintf(out, len,
             "another Vite %s server of this project already runs (pid %ld%s), and Vite starts "
             "one per project: stop it: kill %ld",
             cmd, pid, at, pid);
    return 1;
}
