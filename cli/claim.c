/* claim.c - `wtproxy claim|release|leases`: leases of named
 * resources, on the PostgreSQL store when one is configured
 * ($WTPROXY_REGISTRY or `registry =`), else on the daemon's embedded
 * store. A configured store that cannot be reached refuses the claim
 * (fail closed) unless WTPROXY_REGISTRY_OPTIONAL=1.
 * Exit status: 0 done, 1 refused or the store failed, 2 bad usage; with
 * -- CMD, CMD's status (128+N when signal N ended it). */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "reg_lease.h"
#include "registry.h"

static volatile pid_t child_pid;
/* A signal that came before CMD started: CMD is then never started. */
static volatile sig_atomic_t early_sig;

static void forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (child_pid <= 0)
        early_sig = sig;
    /* A terminal's Ctrl-C reached CMD's group already (SI_KERNEL). */
    else if (si->si_code != SI_KERNEL)
        kill(child_pid, sig);
}

/* Caught from before the claim is asked for, not from CMD's start: a
 * signal in between once killed the claim with its lease still held
 * (until someone noticed the dead pid) and CMD's status lost. */
static void catch_signals(void)
{
    struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* The pause between a --wait's polls: a signal cancels the wait. */
static int claim_pause(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (!early_sig && nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
    return early_sig ? -1 : 0;
}

int cli_lease_holder(struct reg_lease *c, const char *id, const char *wt, const char *purpose,
                     char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (reg_lease_check_id(id, err, errlen) < 0)
        return -1;
    if (cli_worktree(wt, c->worktree, sizeof c->worktree, err, errlen) < 0 &&
        (wt || !realpath(".", c->worktree)))
        return -1;
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->machine, sizeof c->machine, "%s", reg_machine_id());
    snprintf(c->purpose, sizeof c->purpose, "%s", purpose ? purpose : "");
    reg_lease_session(c->session, sizeof c->session);
    return 0;
}

/* Run argv with SIGINT/SIGTERM/SIGHUP forwarded (catch_signals); its
 * status, or 128+N without running it when signal N came first. */
static int run_cmd(char **argv, const char *id)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    if (early_sig) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        fprintf(stderr, "wtproxy: %s came before %s started: not run; releasing %s\n",
                strsignal(early_sig), argv[0], id);
        return 128 + early_sig;
    }
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGINT, &dfl, NULL);
        sigaction(SIGTERM, &dfl, NULL);
        sigaction(SIGHUP, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        /* The lease dies with the claim's pid: CMD must not go on using
         * the resource unprotected. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(1);
        setenv("WTPROXY_LEASE", id, 1);
        execvp(argv[0], argv);
        fprintf(stderr,
                "wtproxy: cannot run %s: %s; after -- give a program on PATH, or its "
                "path\n",
                argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        fprintf(stderr, "wtproxy: cannot start %s: %s\n", argv[0], strerror(errno));
        return 1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void print_claimed(void *pg, const struct reg_lease *c, long long ttl, long long waited)
{
    char left[32] = "", after[48] = "";
    if (waited > 0) {
        host_age(waited, left, sizeof left);
        snprintf(after, sizeof after, " after waiting %s", left);
    }
    if (ttl) {
        host_age(ttl, left, sizeof left);
        fprintf(stderr, "wtproxy: claimed %s for %s%s (%s store)\n", c->id, left, after,
                pg ? "PostgreSQL" : "embedded");
    } else {
        fprintf(stderr, "wtproxy: claimed %s while pid %d runs%s (%s store)\n", c->id, (int)c->pid,
                after, pg ? "PostgreSQL" : "embedded");
    }
}

/* One shell word, quoted when the shell would split or expand it. */
static void put_word(const char *w)
{
    if (w[0] &&
        strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") ==
            strlen(w)) {
        fprintf(stderr, " %s", w);
        return;
    }
    fputs(" '", stderr);
    for (; *w; w++)
        if (*w == '\'')
            fputs("'\\''", stderr);
        else
            fputc(*w, stderr);
    fputc('\'', stderr);
}

/* A refusal: whose it is, then the command that waits for it (this claim
 * again, with --wait after RESOURCE), since waiting is the fix for a
 * resource in use. */
static void print_held(const char *msg, int argc, char **argv, const char *id)
{
    fprintf(stderr, "wtproxy: %s; to wait until it is free: wtproxy claim", msg);
    for (int i = 1; i < argc; i++) {
        put_word(argv[i]);
        if (argv[i] == id)
            fputs(" --wait 10m", stderr);
    }
    fputc('\n', stderr);
}

/* Claim c for ttl, waiting for wait_ms while another holds it
 * (cli_lease_claim_wait); print the outcome (a refusal with the command
 * line argv, whose RESOURCE is the argument id). Returns 1 won, 0 refused
 * (whose it is printed), -1 (printed). */
static int claim_waiting(void *pg, const struct reg_lease *c, long long ttl, long long wait_ms,
                         int argc, char **argv, const char *id)
{
    char err[REG_LEASE_MESSAGE_MAX], span[32];
    json_t *info = NULL;
    long long waited;
    int r = cli_lease_claim_wait(pg, c, ttl, wait_ms, &info, &waited, err, sizeof err);
    json_decref(info);
    host_age(wait_ms, span, sizeof span);
    if (r < 0)
        fprintf(stderr, "wtproxy: cannot claim %s: %s\n", c->id, err);
    else if (r > 0)
        print_claimed(pg, c, ttl, waited);
    else if (!wait_ms)
        print_held(err, argc, argv, id);
    else
        fprintf(stderr, "wtproxy: did not claim %s within %s: %s\n", c->id, span, err);
    return r;
}

/* Release our lease after CMD, on a fresh connection (the server may have
 * restarted while CMD ran). A failure is a warning: the lease dies with
 * our pid anyway. */
static void release_after(const struct reg_lease *c)
{
    char err[PATH_MAX + 1024];
    void *pg = NULL;
    json_t *holder = NULL;
    if (cli_lease_open(&pg, err, sizeof err) < 0 ||
        cli_lease_release(pg, c, 0, &holder, err, sizeof err) < 0)
        fprintf(stderr, "wtproxy: warning: could not release %s (it ends with pid %d): %s\n", c->id,
                (int)c->pid, err);
    json_decref(holder);
    cli_lease_close(pg);
}

/* Parse `claim RESOURCE [flags] [-- CMD...]` (flags may come first too).
 * Returns 0 with *id and *cmd (argc index of CMD, argc when none), 1 for
 * help, -1 with err. */
static int claim_args(int argc, char **argv, const struct cli_opt *opts, const char **id, int *cmd,
                      char *err, size_t errlen)
{
    int rest, r = cli_parse(argc, argv, opts, &rest, err, errlen);
    if (r != 0)
        return r;
    if (rest >= argc || strcmp(argv[rest - 1], "--") == 0) {
        snprintf(err, errlen, "give the RESOURCE to claim, e.g. wtproxy claim emulator-1 --ttl 1h");
        return -1;
    }
    *id = argv[rest];
    int more;
    r = cli_parse(argc - rest, argv + rest, opts, &more, err, errlen);
    if (r != 0)
        return r;
    *cmd = rest + more;
    if (*cmd < argc && strcmp(argv[*cmd - 1], "--") != 0) {
        snprintf(err, errlen, "unexpected argument \"%s\" (a command goes after --)", argv[*cmd]);
        return -1;
    }
    return 0;
}

static int usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "wtproxy %s: %s (see wtproxy %s --help)\n", cmd, msg, cmd);
    return 2;
}

int cli_claim_main(int argc, char **argv)
{
    const char *ttlv = NULL, *purpose = NULL, *wt = NULL, *id = NULL, *maxv = NULL, *waitv = NULL,
               *heldv = NULL;
    const struct cli_opt opts[] = {
        {"ttl", &ttlv, NULL},      {"purpose", &purpose, NULL},    {"worktree", &wt, NULL},
        {"max-load", &maxv, NULL}, {"load-timeout", &waitv, NULL}, {"wait", &heldv, NULL},
        {NULL, NULL, NULL}};
    char err[PATH_MAX + 1024];
    long long ttl = 0, load_wait = CLI_LOAD_TIMEOUT_MS, held_wait = 0;
    unsigned max_load = 0;
    int cmd = argc;
    struct reg_lease c;
    int r = claim_args(argc, argv, opts, &id, &cmd, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r == 0 && ttlv)
        r = cli_duration("ttl", ttlv, &ttl, err, sizeof err);
    if (r == 0 && maxv)
        r = cli_load("max-load", maxv, &max_load, err, sizeof err);
    if (r == 0 && waitv)
        r = cli_duration("load-timeout", waitv, &load_wait, err, sizeof err);
    if (r == 0 && heldv)
        r = cli_duration("wait", heldv, &held_wait, err, sizeof err);
    if (r == 0 && cmd >= argc && !ttlv) {
        snprintf(err, sizeof err,
                 "a claim without a command needs --ttl D (e.g. --ttl 1h), or "
                 "hold it while a command runs: wtproxy claim %s -- CMD",
                 id);
        r = -1;
    }
    if (r < 0 || cli_lease_holder(&c, id, wt, purpose, err, sizeof err) < 0)
        return usage_error("claim", err);
    if (cmd < argc) {
        c.pid = getpid();
        c.pid_start = host_pid_start(c.pid);
    }
    if (max_load && cli_wait_load(max_load, load_wait, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: did not claim %s: %s\n", id, err);
        return 1;
    }
    void *pg = NULL;
    if (cli_lease_open(&pg, err, sizeof err) < 0) {
        fprintf(stderr, "wtproxy: cannot claim %s: %s\n", id, err);
        return 1;
    }
    if (cmd < argc) {
        catch_signals();
        cli_pause_set(claim_pause);
    }
    r = claim_waiting(pg, &c, ttl, held_wait, argc, argv, id);
    cli_lease_close(pg);
    if (r <= 0)
        return early_sig ? 128 + early_sig : 1;
    if (cmd >= argc)
        return 0;
    r = run_cmd(argv + cmd, c.id);
    release_after(&c);
    return r;
}

/* "released R", and whose it was when that is news: a holder that was gone
 * (released without --force for that), or a live one --force took it from. */
static void print_released(const char *id, json_t *lease, int force)
{
    struct reg_lease l;
    char err[128];
    if (!lease || reg_lease_from_json(lease, &l, err, sizeof err) < 0 || l.pid <= 0 ||
        strcmp(l.machine, reg_machine_id()) != 0)
        fprintf(stderr, "wtproxy: released %s\n", id);
    else if (reg_lease_holder_dead(&l))
        fprintf(stderr, "wtproxy: released %s: its holder, pid %d in %s, is gone\n", id, (int)l.pid,
                l.worktree);
    else if (force)
        fprintf(stderr, "wtproxy: released %s from under pid %d, which still runs\n", id,
                (int)l.pid);
    else
        fprintf(stderr, "wtproxy: released %s\n", id);
}

int cli_release_main(int argc, char **argv)
{
    const char *wt = NULL;
    int force = 0, rest;
    const struct cli_opt opts[] = {
        {"worktree", &wt, NULL}, {"force", NULL, &force}, {NULL, NULL, NULL}};
    char err[REG_LEASE_MESSAGE_MAX];
    struct reg_lease c;
    int r = cli_parse(argc, argv, opts, &rest, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    const char *id = r == 0 && rest < argc && strcmp(argv[rest - 1], "--") ? argv[rest] : NULL;
    if (r == 0 && !id)
        snprintf(err, sizeof err, "give the RESOURCE to release");
    if (id && cli_parse(argc - rest, argv + rest, opts, NULL, err, sizeof err) == 0 &&
        cli_lease_holder(&c, id, wt, NULL, err, sizeof err) == 0)
        r = 0;
    else
        return usage_error("release", err);
    void *pg = NULL;
    json_t *h = NULL;
    if (cli_lease_open(&pg, err, sizeof err) < 0 ||
        (r = cli_lease_release(pg, &c, force, &h, err, sizeof err)) < 0) {
        fprintf(stderr, "wtproxy: cannot release %s: %s\n", id, err);
        cli_lease_close(pg);
        return 1;
    }
    cli_lease_close(pg);
    if (r > 0)
        print_released(id, h, force);
    else
        fprintf(stderr, "wtproxy: %s\n", err);
    json_decref(h);
    return r > 0 ? 0 : 1;
}

/* One line per lease, for people. */
static void print_leases(json_t *arr)
{
    size_t i;
    json_t *o;
    long long now = host_wall_ms();
    if (json_array_size(arr) == 0)
        printf("no leases; take one with: wtproxy claim RESOURCE --ttl 1h\n");
    else
        printf("%-24s  %-16s  %-8s  %-6s  %-8s  %s\n", "RESOURCE", "MACHINE", "PID", "AGE",
               "EXPIRES", "WORKTREE  PURPOSE");
    json_array_foreach(arr, i, o) {
        struct reg_lease l;
        char err[128], age[32], left[32] = "-", pid[16] = "manual";
        if (reg_lease_from_json(o, &l, err, sizeof err) < 0)
            continue;
        host_age(now - l.acquired_ms, age, sizeof age);
        if (l.expires_ms && l.expires_ms <= now)
            snprintf(left, sizeof left, "expired");
        else if (l.expires_ms)
            host_age(l.expires_ms - now, left, sizeof left);
        if (l.pid)
            snprintf(pid, sizeof pid, "%d", (int)l.pid);
        printf("%-24s  %-16.16s  %-8s  %-6s  %-8s  %s  %s\n", l.id, l.machine, pid, age, left,
               l.worktree, l.purpose);
    }
}

int cli_leases_main(int argc, char **argv)
{
    int json = 0;
    const struct cli_opt opts[] = {{"json", NULL, &json}, {NULL, NULL, NULL}};
    char err[PATH_MAX + 1024];
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r > 0)
        return CLI_HELP;
    if (r < 0)
        return usage_error("leases", err);
    void *pg = NULL;
    json_t *arr = NULL;
    if (cli_lease_open(&pg, err, sizeof err) < 0 || !(arr = cli_lease_list(pg, err, sizeof err))) {
        fprintf(stderr, "wtproxy: cannot list leases: %s\n", err);
        cli_lease_close(pg);
        return 1;
    }
    cli_lease_close(pg);
    if (json) {
        char *text = json_dumps(arr, JSON_INDENT(2));
        printf("%s\n", text ? text : "[]");
        free(text);
    } else {
        print_leases(arr);
    }
    json_decref(arr);
    return 0;
}
