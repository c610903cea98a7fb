/* test_reg_live.c - host/proc.c and registry/reg_live.c: /proc/PID/stat parsing with
 * hostile process names (a fake /proc too), the start time of this process
 * and of an exited child, and reg_backend_alive for each way an entry
 * dies: the pid exited, the pid was reused, the TTL passed, the worktree
 * was removed, its path taken by a new folder while its process runs in
 * the old one (host/worktree_id.c). Plus the machine id. */
#include "../../registry/reg_backend.c"
#include "../../host/proc.c"
#include "../../registry/reg_live.c"
#include "../../host/worktree_id.c"

#include <sys/wait.h>
#include <time.h>

#include "tap.h"

/* A stat line for comm with the given state and starttime (field 22). */
static void stat_line(char *buf, size_t len, const char *comm, char state, const char *start)
{
    snprintf(buf, len,
             "4242 (%s) %c 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 %s "
             "12345678 900 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
             comm, state, start);
}

static void test_parse_stat(void)
{
    static const char *comms[] = {"python3", "a b", "a) b", "x) S 1 2 3 (", ")", "((", "a\nb"};
    char line[512];

    for (size_t i = 0; i < sizeof comms / sizeof comms[0]; i++) {
        stat_line(line, sizeof line, comms[i], 'S', "123456");
        is_int((long long)parse_stat_starttime(line), 123456, "starttime with comm \"%s\"",
               comms[i][1] == '\n' ? "a\\nb" : comms[i]);
    }
    stat_line(line, sizeof line, "python3", 'R', "18446744073709551615");
    ok(parse_stat_starttime(line) == 18446744073709551615ULL, "the largest start time");
    stat_line(line, sizeof line, "python3", 'Z', "123456");
    is_int((long long)parse_stat_starttime(line), 0, "a zombie has exited: 0");
    is_int((long long)parse_stat_starttime("4242 (python3 S 1 2 3"), 0, "no ')': 0");
    is_int((long long)parse_stat_starttime("4242 (python3) S 1 2 3 4 5 6"), 0, "too few fields: 0");
    stat_line(line, sizeof line, "python3", 'S', "-5");
    is_int((long long)parse_stat_starttime(line), 0, "a negative start time: 0");
    stat_line(line, sizeof line, "python3", 'S', "18446744073709551616");
    is_int((long long)parse_stat_starttime(line), 0, "a start time past 64 bits: 0");
    is_int((long long)parse_stat_starttime(""), 0, "an empty line: 0");
}

static void test_fake_proc(void)
{
    char dir[] = "/tmp/wtp-live-XXXXXX", path[128], line[512];
    FILE *f;

    if (!mkdtemp(dir))
        return;
    snprintf(path, sizeof path, "%s/4242", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/4242/stat", dir);
    stat_line(line, sizeof line, "evil) Z 1 1 1 (", 'S', "987654");
    if ((f = fopen(path, "w"))) {
        fputs(line, f);
        fclose(f);
    }
    host_proc_dir = dir;
    is_int((long long)host_pid_start(4242), 987654, "host_pid_start reads /proc/4242/stat");
    is_int((long long)host_pid_start(4243), 0, "no /proc/4243: 0");
    host_proc_dir = "/proc";
    unlink(path);
    snprintf(path, sizeof path, "%s/4242", dir);
    rmdir(path);
    rmdir(dir);
}

/* A child that has exited; reaped when reap is set. Returns its pid. */
static pid_t exited_child(int reap)
{
    siginfo_t si;
    pid_t pid = fork();

    if (pid == 0)
        _exit(0);
    if (reap)
        waitpid(pid, NULL, 0);
    else
        waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT); /* exited, still a zombie */
    return pid;
}

static void test_pid_start(void)
{
    unsigned long long me = host_pid_start(getpid());
    pid_t pid;

    ok(me != 0, "this process has a start time");
    ok(host_pid_start(getpid()) == me, "  the same each time");
    ok(host_pid_start(1) != 0, "pid 1 runs");
    is_int((long long)host_pid_start(0), 0, "pid 0: 0");
    is_int((long long)host_pid_start(-1), 0, "pid -1: 0");
    pid = exited_child(0);
    is_int((long long)host_pid_start(pid), 0, "an exited child not yet reaped: 0");
    waitpid(pid, NULL, 0);
    is_int((long long)host_pid_start(pid), 0, "a reaped child: 0");
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_alive(void)
{
    char wt[] = "/tmp/wtp-wt-XXXXXX", why[512], want[600];
    struct reg_backend b = {.front = 8000, .pid = getpid(), .pid_start = host_pid_start(getpid())};
    long long now = now_ms();
    FILE *f;

    if (!mkdtemp(wt))
        return;
    snprintf(b.worktree, sizeof b.worktree, "%s", wt);
    snprintf(b.command, sizeof b.command, "python3 manage.py runserver");
    is_int(reg_backend_alive(&b, now, why, sizeof why), 1,
           "running pid, same start, worktree there");

    b.pid_start++;
    is_int(reg_backend_alive(&b, now, why, sizeof why), 0, "a reused pid (start time differs)");
    snprintf(want, sizeof want,
             "pid %ld (python3 manage.py runserver) exited "
             "(the pid now belongs to another process)",
             (long)b.pid);
    is_str(why, want, "  why");
    b.pid_start = 0;
    is_int(reg_backend_alive(&b, now, why, sizeof why), 1,
           "no start time: the pid running is enough");

    b.pid = exited_child(1);
    is_int(reg_backend_alive(&b, now, why, sizeof why), 0, "a pid that exited");
    snprintf(want, sizeof want, "pid %ld (python3 manage.py runserver) exited", (long)b.pid);
    is_str(why, want, "  why");
    b.command[0] = '\0';
    reg_backend_alive(&b, now, why, sizeof why);
    snprintf(want, sizeof want, "pid %ld exited", (long)b.pid);
    is_str(why, want, "  why, without a command");

    b.pid = 0;
    b.expires_ms = now + 60000;
    is_int(reg_backend_alive(&b, now, why, sizeof why), 1, "manual entry before its TTL");
    is_int(reg_backend_alive(&b, now + 65000, why, sizeof why), 0, "manual entry after its TTL");
    is_str(why, "TTL passed (5 s ago)", "  why");
    b.expires_ms = 0;
    is_int(reg_backend_alive(&b, now, why, sizeof why), 1, "no pid and no TTL: no deadline");

    b.expires_ms = now + 60000;
    rmdir(wt);
    is_int(reg_backend_alive(&b, now, why, sizeof why), 0, "worktree folder removed");
    snprintf(want, sizeof want, "worktree %s was removed", wt);
    is_str(why, want, "  why");
    if ((f = fopen(wt, "w")))
        fclose(f);
    is_int(reg_backend_alive(&b, now, why, sizeof why), 0, "worktree replaced by a file");
    has_str(why, "is no longer a folder", "  why");
    unlink(wt);
    b.worktree[0] = '\0';
    is_int(reg_backend_alive(&b, now, why, sizeof why), 1, "no worktree (the default backend)");
}

/* A worktree removed and added again at its path while its server runs
 * in it: the path has a folder again, but not the server's; the wrapper's
 * pin and the daemon's look at the server's cwd both tell. */
static void test_replaced(void)
{
    char wt[] = "/tmp/wtp-re-XXXXXX", why[512], id[64], id2[64];
    int ready[2], done[2];

    if (!mkdtemp(wt) || pipe(ready) < 0 || pipe(done) < 0)
        return;
    int pin = host_worktree_pin(wt);
    ok(pin >= 0, "the worktree's folder pinned");
    is_int(host_worktree_replaced(pin, wt), 0, "  not replaced while it stands");
    int have_id = host_worktree_identity(wt, id, sizeof id) == 0;
    pid_t child = fork();
    if (child == 0) {
        char c;
        if (chdir(wt) < 0)
            _exit(1);
        (void)!write(ready[1], "r", 1);
        (void)!read(done[0], &c, 1); /* until the parent is done */
        _exit(0);
    }
    char c;
    (void)!read(ready[0], &c, 1);
    struct reg_backend b = {.front = 8000, .pid = child, .pid_start = host_pid_start(child)};
    snprintf(b.worktree, sizeof b.worktree, "%s", wt);
    is_int(reg_backend_alive(&b, now_ms(), why, sizeof why), 1, "a server in its worktree: alive");
    rmdir(wt);
    mkdir(wt, 0700); /* at once: ext4 gives the freed inode number again */
    is_int(host_worktree_replaced(pin, wt), 1, "the pinned folder removed, a new one at its path");
    is_int(host_pid_in_deleted(child, wt), 1, "  the server runs in the deleted one");
    is_int(reg_backend_alive(&b, now_ms(), why, sizeof why), 0, "  its entry is dead");
    has_str(why, "the folder at its path now is another", "  why");
    if (have_id) {
        host_worktree_identity(wt, id2, sizeof id2);
        ok(strcmp(id, id2) != 0, "  the new folder's identity differs (%s, %s)", id, id2);
    }
    (void)!write(done[1], "x", 1);
    waitpid(child, NULL, 0);
    close(pin);
    for (int i = 0; i < 2; i++) {
        close(ready[i]);
        close(done[i]);
    }
    rmdir(wt);
}

static void test_machine_id(void)
{
    char dir[] = "/tmp/wtp-mid-XXXXXX", path[128], line[64], want[128];
    const char *id = reg_machine_id();
    FILE *f;

    ok(id[0] != '\0', "a machine id: %s", id);
    ok(reg_machine_id() == id, "  computed once");
    read_first_line("/etc/machine-id", want, sizeof want);
    if (!want[0])
        gethostname(want, sizeof want);
    is_str(id, want, "  /etc/machine-id, else the hostname");

    if (!mkdtemp(dir))
        return;
    snprintf(path, sizeof path, "%s/machine-id", dir);
    if ((f = fopen(path, "w"))) {
        fputs("  3f1c0ffee \r\nsecond line\n", f);
        fclose(f);
    }
    read_first_line(path, line, sizeof line);
    is_str(line, "3f1c0ffee", "the first line, trimmed");
    if ((f = fopen(path, "w")))
        fclose(f);
    read_first_line(path, line, sizeof line);
    is_str(line, "", "an empty file: \"\"");
    unlink(path);
    read_first_line(path, line, sizeof line);
    is_str(line, "", "no file: \"\"");
    rmdir(dir);
}

int main(void)
{
    test_parse_stat();
    test_fake_proc();
    test_pid_start();
    test_alive();
    test_replaced();
    test_machine_id();
    return done_testing();
}
