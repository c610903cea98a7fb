/* run_cmd.c - CMD's process for `wtproxy run`: its argv with {port}
 * substituted, the fork and exec, and the signals around them. CMD stays in
 * the wrapper's process group (a kill of the group, which is how
 * Playwright stops its webServer, takes CMD down too); when the wrapper
 * alone dies, its keeper (run_keeper.c) stops CMD's tree. Apart from run.c's
 * supervision because what happens between fork and exec has rules of its
 * own (only async-signal-safe calls, the parent's signal mask). */
#include "run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The pid signals are forwarded to; set once, before signals are unblocked. */
static volatile pid_t child_pid;

/* Forward SIGINT/SIGHUP to CMD (SIGTERM stops its tree: the caller's
 * on_term). A signal the terminal sent (Ctrl-C, si_code SI_KERNEL) went to
 * the whole foreground group, CMD included: forwarding it would deliver it
 * twice. */
static volatile sig_atomic_t interrupted;

static void forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    interrupted = 1;
    if (si->si_code != SI_KERNEL && child_pid > 0)
        kill(child_pid, sig);
}

int cli_run_cmd_interrupted(void)
{
    return interrupted;
}

/* s with every "{port}" replaced by port, malloc'd; NULL when out of memory. */
static char *substitute(const char *s, int port)
{
    char num[16];
    int nlen = snprintf(num, sizeof num, "%d", port);
    size_t n = 0, len = strlen(s);
    for (const char *p = s; (p = strstr(p, "{port}")) != NULL; p += 6)
        n++;
    char *out = malloc(len + n * (size_t)nlen + 1), *o = out;
    for (const char *p = s, *hit; out && *p; p = hit + 6) {
        if (!(hit = strstr(p, "{port}"))) {
            memcpy(o, p, strlen(p));
            o += strlen(p);
            break;
        }
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, num, (size_t)nlen);
        o += nlen;
    }
    if (out)
        *o = '\0';
    return out;
}

int cli_run_build_argv(struct cli_run *r, int argc, char **argv)
{
    r->args = argv; /* as given: built again for another port (run_taken.c) */
    r->nargs = argc;
    r->argv = calloc((size_t)argc + 1, sizeof *r->argv);
    size_t used = 0;
    for (int i = 0; r->argv && i < argc; i++) {
        if (!(r->argv[i] = substitute(argv[i], r->port)))
            return -1;
        int n =
            snprintf(r->command + used, sizeof r->command - used, "%s%s", i ? " " : "", r->argv[i]);
        used = n < 0 || used + (size_t)n >= sizeof r->command ? sizeof r->command - 1
                                                              : used + (size_t)n;
    }
    return r->argv ? 0 : -1;
}

/* Append word to out (len bytes, used so far *used), in single quotes
 * unless every byte is one a shell takes as it is (no ',': "{a,b}" is a
 * brace expansion; "{port}" is not). Returns 0, or -1 when it did not fit. */
static int append_word(char *out, size_t len, size_t *used, const char *word)
{
    int plain = *word != '\0';
    for (const char *p = word; *p; p++)
        plain &= strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "_-+=./:@%{}",
                        *p) != NULL;
    size_t n = *used;
    if (n + 8 > len) /* no room for a space, two quotes and a byte */
        return -1;
    if (n)
        out[n++] = ' ';
    if (!plain)
        out[n++] = '\'';
    for (const char *p = word; *p && n + 6 < len; p++) {
        if (*p == '\'' && !plain) { /* close, an escaped quote, open again */
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    if (!plain)
        out[n++] = '\'';
    out[n] = '\0';
    *used = n;
    return n + 6 < len ? 0 : -1;
}

void cli_run_build_rerun(struct cli_run *r, int argc, char **argv)
{
    char front[16];
    size_t used = 0;
    int bad = 0;
    for (int i = 0; i < argc && !bad; i++)
        bad |= append_word(r->shell_command, sizeof r->shell_command, &used, argv[i]);
    if (bad) /* cut short, it would start something else: messages say none */
        r->shell_command[0] = '\0';
    used = 0;
    snprintf(front, sizeof front, "%d", r->front);
    const char *head[] = {"wtproxy", "run", "--front", front};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        bad |= append_word(r->rerun, sizeof r->rerun, &used, head[i]);
    const char *flags[][2] = {{"--service", r->service}, {"--health", r->health}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i][1]) {
            bad |= append_word(r->rerun, sizeof r->rerun, &used, flags[i][0]);
            bad |= append_word(r->rerun, sizeof r->rerun, &used, flags[i][1]);
        }
    if (r->restart_on_stale)
        bad |= append_word(r->rerun, sizeof r->rerun, &used, "--restart-on-stale");
    bad |= append_word(r->rerun, sizeof r->rerun, &used, "--");
    if (bad || used + 1 + strlen(r->shell_command) >= sizeof r->rerun)
        r->rerun[0] = '\0';
    else
        snprintf(r->rerun + used, sizeof r->rerun - used, " %s", r->shell_command);
}

void cli_run_free_argv(struct cli_run *r)
{
    for (size_t i = 0; r->argv && r->argv[i]; i++)
        free(r->argv[i]);
    free(r->argv);
    r->argv = NULL;
}

/* In the forked child: become CMD. Never returns. */
static void exec_cmd(const struct cli_run *r, pid_t wrapper, const sigset_t *mask)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(SIGUSR1, &dfl, NULL);
    cli_run_log_child(&r->log);
    sigprocmask(SIG_SETMASK, mask, NULL);
    /* Without a keeper, told of the wrapper's death (CMD alone); and if it
     * died before the line above took effect, nobody would tell us: stop
     * now. With one, CMD's tree must still be whole when the keeper stops
     * it: a shell killed first would leave its server to init. */
    if ((r->keeper < 0 && prctl(PR_SET_PDEATHSIG, SIGTERM) < 0) || getppid() != wrapper)
        _exit(1);
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    if (setenv("PORT", port, 1) < 0 || setenv("WTPROXY_PORT", port, 1) < 0 ||
        setenv("WTPROXY_WORKTREE", r->worktree, 1) < 0 ||
        (r->service && setenv("WTPROXY_SERVICE", r->service, 1) < 0))
        _exit(1);
    execvp(r->argv[0], r->argv);
    int e = errno;
    fprintf(stderr,
            "wtproxy: cannot run %s: %s; after -- give a program on PATH, or its path "
            "(wtproxy run -- CMD {port})\n",
            r->argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* "/bin/sh" alone would name no server anyone started. */
const char *cli_run_cmd_shown(const struct cli_run *r)
{
    const char *base = strrchr(r->argv[0], '/') ? strrchr(r->argv[0], '/') + 1 : r->argv[0];
    if (strcmp(base, "sh") == 0 && r->argv[1] && strcmp(r->argv[1], "-c") == 0 && r->argv[2] &&
        !r->argv[3])
        return r->argv[2];
    return r->command;
}

pid_t cli_run_start_cmd(const struct cli_run *r, void (*on_term)(int, siginfo_t *, void *))
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* No SA_RESTART: a sleep returns at once to stop the tree. */
    struct sigaction term = {.sa_sigaction = on_term, .sa_flags = SA_SIGINFO};
    sigemptyset(&term.sa_mask);
    sigaction(SIGTERM, &term, NULL);
    pid_t self = getpid(), pid = fork();
    if (pid == 0)
        exec_cmd(r, self, &old);
    if (pid < 0)
        fprintf(stderr, "wtproxy: cannot start %s: fork: %s\n", r->argv[0], strerror(errno));
    child_pid = pid;
    if (pid > 0)
        cli_run_keeper_tell(r->keeper, pid);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return pid;
}
