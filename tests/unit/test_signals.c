/* test_signals.c - the daemon's SIGTERM, SIGINT and SIGHUP with their
 * sender (proxy/signals.c): a signal this process sends itself reaches the
 * callback on the loop as what it is, naming this process by pid, command
 * line and uid, and its parent; one catcher per process; freed, the
 * default actions are back. */
#include "../../proxy/signals.c"
#include "tap.h"

#include <sys/wait.h>

static int got_sig;
static char got_from[1024];

static void on(int sig, const char *from, void *arg)
{
    (void)arg;
    got_sig = sig;
    snprintf(got_from, sizeof got_from, "%s", from);
}

/* What describe() says of this process as the sender of sig. */
static void expected(const char *name, char *out, size_t len)
{
    char me[256], parent[256];
    host_pid_cmdline(getpid(), me, sizeof me);
    host_pid_cmdline(getppid(), parent, sizeof parent);
    snprintf(out, len, "SIG%s from pid %d (%s), uid %u, whose parent is pid %d (%s)", name,
             (int)getpid(), me, (unsigned)getuid(), (int)getppid(), parent);
}

static void sent_to_self(struct event_base *base, int sig, const char *name, int line)
{
    char want[1024];
    got_sig = 0;
    got_from[0] = '\0';
    kill(getpid(), sig);
    event_base_loop(base, EVLOOP_ONCE);
    expected(name, want, sizeof want);
    tap_ok(got_sig == sig, __FILE__, line, "SIG%s reaches the callback on the loop", name);
    if (!tap_ok(strcmp(got_from, want) == 0, __FILE__, line, "  naming its sender and parent"))
        printf("#   got: %s\n#  want: %s\n", got_from, want);
}

int main(void)
{
    struct event_base *base = event_base_new();
    struct proxy_signals *ps = proxy_signals_new(base, on, NULL);
    tap_ok(ps != NULL, __FILE__, __LINE__, "catching SIGTERM, SIGINT and SIGHUP");
    tap_ok(proxy_signals_new(base, on, NULL) == NULL, __FILE__, __LINE__,
           "a second catcher in the process: NULL (the handlers have one pipe)");
    sent_to_self(base, SIGTERM, "TERM", __LINE__);
    sent_to_self(base, SIGHUP, "HUP", __LINE__);
    sent_to_self(base, SIGINT, "INT", __LINE__);

    proxy_signals_free(ps);
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    tap_ok(now.sa_handler == SIG_DFL, __FILE__, __LINE__, "freed: SIGTERM's default action back");
    ps = proxy_signals_new(base, on, NULL);
    tap_ok(ps != NULL, __FILE__, __LINE__, "caught again after the free");
    proxy_signals_free(ps);
    event_base_free(base);
    return done_testing();
}
