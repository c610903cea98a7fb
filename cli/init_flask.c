/* init_flask.c - the flags of the project's own `flask ... run` line that
 * `wtproxy init` keeps in the start it writes. init writes start anew
 * (its own --app, --host 127.0.0.1, --port {port}, --reload when the
 * project reloads), and dropped the rest: `flask --app app run --debug
 * --port 8430` lost --debug, debug mode's error pages and template
 * reloads, without a word. What the project gives flask is the project's
 * choice; only what wtproxy owns (the host, the port), init's own (--app,
 * the reload) are left out.
 *
 * Text inspection, as init_python.c's: a line is cut at its first quote
 * (a Playwright config's 'command: ...'), shell separator or comment, and
 * split at blanks. */
#include <stdio.h>
#include <string.h>

#include "init.h"

#define TOKEN_MAX 256

/* Append " TOKEN" to out (len bytes, a string). */
static void flag_add(char *out, size_t len, const char *tok)
{
    size_t used = strlen(out);
    snprintf(out + used, len - used, " %s", tok);
}

/* Whether tok is name, or name=VALUE (the value given within it). */
static int flag_is(const char *tok, const char *name, int *inline_value)
{
    size_t n = strlen(name);
    *inline_value = strncmp(tok, name, n) == 0 && tok[n] == '=';
    return strcmp(tok, name) == 0 || *inline_value;
}

/* Whether tok is one of names (NULL-ended); *skip the tokens its value
 * takes after it (0 or 1), when takes says it has one. */
static int flag_one_of(const char *tok, const char *const *names, int takes, int *skip)
{
    int inline_value;
    for (; *names; names++)
        if (flag_is(tok, *names, &inline_value)) {
            *skip = takes && !inline_value;
            return 1;
        }
    return 0;
}

/* The next blank-separated token of s (up to end) into tok; returns where
 * it ends, NULL when there is none. */
static const char *flag_token(const char *s, const char *end, char *tok)
{
    s += strspn(s, " \t");
    size_t n = 0;
    while (s + n < end && s[n] != ' ' && s[n] != '\t')
        n++;
    if (n == 0 || n >= TOKEN_MAX)
        return NULL;
    snprintf(tok, TOKEN_MAX, "%.*s", (int)n, s);
    return s + n;
}

/* The flags of one `flask ... run ...` command (from s to end) into group
 * (before run) and run (after it). Returns 1 when it is one. */
static int flask_run_flags(const char *s, const char *end, char *group, size_t glen, char *run,
                           size_t rlen)
{
    static const char *const app[] = {"--app", "-A", NULL};
    static const char *const env_file[] = {"--env-file", "-e", NULL};
    static const char *const debug[] = {"--debug", "--no-debug", NULL};
    static const char *const owned[] = {"--host", "-h", "--port", "-p", NULL};
    static const char *const reload[] = {"--reload", "--no-reload", NULL};
    char tok[TOKEN_MAX];
    int in_run = 0, skip = 0, keep_value = 0;
    group[0] = run[0] = '\0';
    while ((s = flag_token(s, end, tok))) {
        if (skip) { /* the value of the option before */
            if (keep_value)
                flag_add(in_run ? run : group, in_run ? rlen : glen, tok);
            skip = 0;
        } else if (!in_run && strcmp(tok, "run") == 0) {
            in_run = 1;
        } else if (flag_one_of(tok, app, 1, &skip) || flag_one_of(tok, owned, 1, &skip) ||
                   flag_one_of(tok, reload, 0, &skip)) {
            keep_value = 0; /* init's own, or wtproxy's */
        } else if (flag_one_of(tok, debug, 0, &skip)) {
            flag_add(group, glen, tok); /* before run: Flask 2.2 takes it only there */
        } else if (!in_run && flag_one_of(tok, env_file, 1, &skip)) {
            keep_value = 1;
            flag_add(group, glen, tok);
        } else if (tok[0] == '-') {
            /* flask run takes no argument: a word after its option is the
             * option's value (the group's other options take none) */
            char peek[TOKEN_MAX];
            const char *after = in_run && !strchr(tok, '=') ? flag_token(s, end, peek) : NULL;
            skip = after && peek[0] != '-';
            keep_value = 1;
            flag_add(in_run ? run : group, in_run ? rlen : glen, tok);
        } else if (!in_run) {
            return 0; /* another subcommand: flask routes, flask shell */
        }
    }
    return in_run;
}

int cli_flask_flags(const char *text, char *group, size_t glen, char *run, size_t rlen)
{
    for (const char *s = strstr(text, "flask"); s; s = strstr(s + 5, "flask")) {
        int word = (s == text || strchr(" \t\n/'\"`", s[-1])) && (s[5] == ' ' || s[5] == '\t');
        const char *end = s + 5 + strcspn(s + 5, "\n'\"`;&|#)");
        if (word && flask_run_flags(s + 5, end, group, glen, run, rlen))
            return 1;
    }
    group[0] = run[0] = '\0';
    return 0;
}
