/* front_pick.c - which server of a worktree's .wtproxy a run, register or
 * unregister is when its command line names none (no --service, no
 * --front) and the file declares services on several fronts (a front end
 * and its API). Any one front would be a guess, and a wrong guess is
 * silent: the Vite front end registered on the API's front gets the API's
 * requests, and the app's tests fail as if its code were broken. So run
 * takes the one service whose `start` its command is (a Playwright
 * webServer carrying the .wtproxy's command), and everything else is
 * refused before anything starts or registers, naming each service with
 * its front and start and the command that says which server it is.
 *
 * "Its command is the start": run's CMD ARGS as given ({port} as written,
 * before run puts the port in) are the argv /bin/sh would make of start
 * (its words, quotes removed, leading VAR=value assignments aside: the
 * environment does not make it another server), or are the daemon's own
 * form, `/bin/sh -c START` (`sh -c START`). A start that is more than
 * words (`&&`, `$VAR`, a glob, a redirection) has no argv but the shell's:
 * only that form matches it. */
#include "cli.h"
#include "front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wtfile.h"

#define PICK_MAX_WORDS 128

/* Append c to the word being built at *o, below end. -1 when full. */
static int put(char **o, const char *end, char c)
{
    if (*o >= end)
        return -1;
    *(*o)++ = c;
    return 0;
}

/* Copy the quoted text after the quote at *s (' or ") to *o and step *s
 * past its closing quote. -1 when it is not closed, or holds an expansion
 * (" with $ or `), or the word is full. */
static int quoted(const char **s, char **o, const char *end)
{
    char q = **s;
    const char *p = *s + 1;
    for (; *p && *p != q; p++) {
        if (q == '"' && (*p == '$' || *p == '`'))
            return -1;
        if (q == '"' && *p == '\\' && p[1] && strchr("$`\"\\", p[1]))
            p++;
        if (put(o, end, *p) < 0)
            return -1;
    }
    if (*p != q)
        return -1;
    *s = p + 1;
    return 0;
}

/* Split s into words as /bin/sh would, into buf (words point into it).
 * Returns how many, or -1 when s is more than words (an operator, an
 * expansion, a glob, a comment) or too long. */
static int sh_words(const char *s, char *buf, size_t len, char **words, int max)
{
    int n = 0;
    char *o = buf;
    const char *end = buf + len - 1;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            return n;
        if (n == max || *s == '#' || *s == '~')
            return -1;
        words[n++] = o;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'' || *s == '"') {
                if (quoted(&s, &o, end) < 0)
                    return -1;
                continue;
            }
            if (strchr("|&;<>()$`*?[\n", *s) || (*s == '\\' && !*++s))
                return -1;
            if (put(&o, end, *s++) < 0)
                return -1;
        }
        if (put(&o, end + 1, '\0') < 0)
            return -1;
    }
}

/* Whether word is VAR=value. */
static int assignment(const char *word)
{
    size_t n = strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    return n > 0 && !(word[0] >= '0' && word[0] <= '9') && word[n] == '=';
}

/* Whether argv (run's CMD ARGS as given) runs start (the header says how). */
static int is_start(const char *start, int argc, char **argv)
{
    char buf[sizeof((struct wtfile_service *)0)->start + 1], *w[PICK_MAX_WORDS];
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (argc == 3 && strcmp(base, "sh") == 0 && strcmp(argv[1], "-c") == 0 &&
        strcmp(argv[2], start) == 0)
        return 1;
    int n = sh_words(start, buf, sizeof buf, w, PICK_MAX_WORDS), i = 0;
    while (i < n && assignment(w[i]))
        i++;
    if (n < 0 || n - i != argc)
        return 0;
    for (int k = 0; k < argc; k++)
        if (strcmp(w[i + k], argv[k]) != 0)
            return 0;
    return 1;
}

/* a as a shell word for a command to paste: as it is when it has nothing
 * the shell reads, else in single quotes. Appended to out at *used. */
static void sh_quote(const char *a, char *out, size_t len, size_t *used)
{
    const char *safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./{}-";
    int plain = a[0] && strspn(a, safe) == strlen(a);
    if (*used < len)
        *used += (size_t)snprintf(out + *used, len - *used, " %s", plain ? a : "'");
    for (const char *p = a; !plain && *p && *used < len; p++)
        *used += (size_t)snprintf(out + *used, len - *used, *p == '\'' ? "'\\''" : "%c", *p);
    if (!plain && *used < len)
        *used += (size_t)snprintf(out + *used, len - *used, "'");
}

/* The command c again with flag (" --service web") after its name. */
static void fix_with(const struct cli_server_cmd *c, const char *flag, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "wtproxy %s%s", c->name, flag);
    for (int i = 0; i < c->argc; i++)
        sh_quote(c->argv[i], out, len, &used);
}

/* The command c again, saying it is s: `wtproxy run --service web ARGS`
 * (unregister, which has no --service: --front N). */
static void fix_for(const struct cli_server_cmd *c, const struct wtfile_service *s, char *out,
                    size_t len)
{
    char flag[64];
    if (c->cmdv || strcmp(c->name, "register") == 0)
        snprintf(flag, sizeof flag, " --service %s", s->name);
    else
        snprintf(flag, sizeof flag, " --front %d", s->front);
    fix_with(c, flag, out, len);
}

/* What c would have done: "started", "registered", "unregistered". */
static const char *undone(const struct cli_server_cmd *c)
{
    return c->cmdv ? "started" : strcmp(c->name, "register") == 0 ? "registered" : "unregistered";
}

/* Refuse c: why (the services its command is the start of, or none), each
 * service with its front, start and the command that names it. */
static void refuse(const struct wtfile *f, const struct cli_server_cmd *c, const char *matched)
{
    char why[512], fix[8192];
    if (matched[0])
        snprintf(why, sizeof why, "its command is the start of several of them (%s)", matched);
    else if (c->cmdv)
        snprintf(why, sizeof why, "its command is the start of none of them");
    else
        snprintf(why, sizeof why, "register is given no command to tell which it is");
    if (c->cmdv || strcmp(c->name, "register") == 0)
        fprintf(stderr,
                "wtproxy %s: %s declares services on several fronts and %s: which front this "
                "server serves is unknown, and on another service's front it would get that "
                "service's requests. Nothing was %s. Say which server it is:\n",
                c->name, f->path, why, undone(c));
    else
        fprintf(stderr,
                "wtproxy %s: %s declares services on several fronts, so which front's entry to "
                "remove is unknown. Nothing was unregistered. Say which:\n",
                c->name, f->path);
    for (int i = 0; i < f->n; i++) {
        fix_for(c, &f->svc[i], fix, sizeof fix);
        fprintf(stderr, "  %s (front %d, start = %s):\n    %s\n", f->svc[i].name, f->svc[i].front,
                f->svc[i].start, fix);
    }
}

int cli_wtproxy_pick(const struct cli_wtproxy *w, struct cli_server_cmd *c)
{
    const struct wtfile *f = w->file;
    const struct wtfile_service *hit = NULL;
    char matched[512] = "";
    size_t used = 0;
    int hits = 0;
    for (int i = 0; c->cmdv && i < f->n; i++) {
        if (!is_start(f->svc[i].start, c->cmdc, c->cmdv))
            continue;
        hit = &f->svc[i];
        hits++;
        if (used < sizeof matched)
            used += (size_t)snprintf(matched + used, sizeof matched - used, "%s%s",
                                     used ? ", " : "", f->svc[i].name);
    }
    if (hits != 1) {
        refuse(f, c, matched);
        return -1;
    }
    snprintf(c->service, sizeof c->service, "%s", hit->name);
    fprintf(stderr, "wtproxy: this is service %s of %s (its start command): front %d\n", hit->name,
            f->path, hit->front);
    return hit->front;
}

void cli_wtproxy_refuse_unparsed(const struct cli_wtproxy *w, const struct cli_server_cmd *c,
                                 json_t *listen)
{
    char fix[8192], flag[32], list[256] = "";
    int ports[WTFILE_MAX_SERVICES], n = 0, server = c->cmdv || strcmp(c->name, "register") == 0;
    size_t i, used = 0;
    json_t *a;
    json_array_foreach(listen, i, a) {
        const char *addr = json_string_value(a), *colon = addr ? strrchr(addr, ':') : NULL;
        int port = colon ? atoi(colon + 1) : 0, seen = 0;
        for (int k = 0; k < n; k++)
            seen |= ports[k] == port;
        if (port > 0 && !seen && n < WTFILE_MAX_SERVICES && used < sizeof list) {
            ports[n++] = port;
            used +=
                (size_t)snprintf(list + used, sizeof list - used, "%s:%d", n > 1 ? ", " : "", port);
        }
    }
    fprintf(stderr,
            "wtproxy %s: the daemon refuses the .wtproxy, so it gives %s no front, and the daemon "
            "listens on several (%s): %s. Nothing was %s. Correct the file (wtproxy doctor checks "
            "it): %s\nor say which front:\n",
            c->name, server ? "this server" : "its entry", list,
            server ? "which one this server serves is unknown, and on another service's front it "
                     "would get that service's requests"
                   : "which front's entry to remove is unknown",
            undone(c), w->err);
    for (int k = 0; k < n; k++) {
        snprintf(flag, sizeof flag, " --front %d", ports[k]);
        fix_with(c, flag, fix, sizeof fix);
        fprintf(stderr, "    %s\n", fix);
    }
}
