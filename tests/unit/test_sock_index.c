/* test_sock_index.c - proxy/sock_index.c and the loop's cheap lookups of
 * host/proc_fd.c (host_pid_fd_socket, host_young_holder): the index, its
 * learning of a process's new fds, and the guess among young processes, on
 * a fake /proc tree (gaps in an fd table, a thread, another process's
 * sockets) and on the real /proc with this test's own sockets. Includes
 * the .c files to reach their statics. */
#include "../../host/proc.c"
#include "../../host/proc_fd.c"
#include "../../proxy/sock_index.c"

#include <ftw.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "tap.h"

static struct sock_index idx; /* 256 KiB: not on the stack */

static void mk(const char *dir, const char *name, const char *link_target)
{
    char path[512];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (link_target ? symlink(link_target, path) : mkdir(path, 0700)) {
        perror(path);
        exit(1);
    }
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!(f = fopen(path, "w")) || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static int rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void test_put_get(void)
{
    memset(&idx, 0, sizeof idx);
    sock_index_put(&idx, 1000, 7, 5);
    sock_index_put(&idx, 1001, 8, 6);
    sock_index_put(&idx, 0, 9, 9);
    const struct sock_index_slot *s = sock_index_get(&idx, 1000);
    ok(s && s->pid == 7 && s->fd == 5, "a socket put is found with its pid and fd");
    ok(!sock_index_get(&idx, 0), "inode 0 (no socket) is never kept");
    sock_index_put(&idx, 1000, 11, 3);
    s = sock_index_get(&idx, 1000);
    ok(s && s->pid == 11 && s->fd == 3 && idx.used == 2, "a second put replaces the first");
    for (unsigned long i = 0; i < SOCK_INDEX_SLOTS / 2; i++)
        sock_index_put(&idx, 5000 + i, 1, (int)i);
    ok(idx.used < SOCK_INDEX_SLOTS / 2 && !sock_index_get(&idx, 1001),
       "a half-full index is emptied, never probed forever");
    s = sock_index_get(&idx, 5000 + SOCK_INDEX_SLOTS / 2 - 1);
    ok(s && s->fd == SOCK_INDEX_SLOTS / 2 - 1, "  and keeps what is put after");
}

/* Pid 40: a load test's fd table with a hole (fd 8 closed, 9-11 never
 * opened before 12); pid 60 and its thread 62 share one; 61 is another
 * process with sockets of its own. */
static void fake_tree(const char *dir)
{
    static const char *dirs[] = {"40", "40/fd", "60", "60/fd", "61", "61/fd", "62", "62/fd"};
    char name[64], link[64];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        mk(dir, dirs[i], NULL);
    mk(dir, "40/fd/0", "/dev/null");
    mk(dir, "40/fd/3", "anon_inode:[eventpoll]");
    for (int fd = 4; fd <= 7; fd++) {
        snprintf(name, sizeof name, "40/fd/%d", fd);
        snprintf(link, sizeof link, "socket:[%d]", 900 + fd);
        mk(dir, name, link);
    }
    mk(dir, "40/fd/12", "socket:[912]");
    mk(dir, "40/fd/30", "socket:[930]");
    mk(dir, "60/fd/5", "socket:[700]");
    mk(dir, "62/fd/5", "socket:[700]");
    mk(dir, "62/fd/14", "socket:[714]");
    put(dir, "62/status", "Name:\twrk\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t60\nPid:\t62\n");
    mk(dir, "61/fd/4", "socket:[800]");
    put(dir, "61/status", "Name:\tcurl\nTgid:\t61\n");
}

static pid_t busiest;

/* host_young_holder with its guess in arguments; busiest kept. */
static pid_t self = 1; /* not this test: it is the busy process of test_real_proc */

static pid_t young(unsigned long inode, pid_t last, int npids, int maxfd, int budget, int *fd)
{
    struct host_guess g = {last, npids, maxfd, budget, self, 0};
    pid_t pid = host_young_holder(inode, &g, fd);
    busiest = g.busiest;
    return pid;
}

static void test_fake_proc(void)
{
    char dir[] = "/tmp/wtp-test-sockidx-XXXXXX";
    unsigned long inode = 1;
    int fd = -1;

    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    fake_tree(dir);
    host_proc_dir = dir;

    is_int(host_pid_fd_socket(40, 5, &inode), 1, "fd 5 of pid 40 is a socket");
    is_int((long long)inode, 905, "  its inode");
    is_int(host_pid_fd_socket(40, 3, &inode), 0, "an epoll fd is open but no socket");
    is_int(host_pid_fd_socket(40, 8, &inode), -1, "a closed fd is none");
    is_int(host_pid_fd_socket(99, 0, &inode), -1, "a process gone has none");

    memset(&idx, 0, sizeof idx);
    is_int(sock_index_learn(&idx, 40, 0, 100), 13,
           "learning pid 40 reads past a hole of 4 to fd 12, stops after 8 missing");
    const struct sock_index_slot *s = sock_index_get(&idx, 912);
    ok(s && s->pid == 40 && s->fd == 12, "  and indexes fd 12's socket");
    ok(sock_index_get(&idx, 904) && !sock_index_get(&idx, 930),
       "  4 to 7 too, not 30 past the gap");
    is_int(sock_index_learn(&idx, 40, 13, 100), 13, "learning again from 13: nothing new, no move");
    memset(&idx, 0, sizeof idx);
    is_int(sock_index_learn(&idx, 40, 0, 5), 5, "a budget of 5 readlinks stops at fd 4");
    ok(sock_index_get(&idx, 904) && !sock_index_get(&idx, 905), "  having indexed fd 4 only");

    is_int(young(700, 62, 3, 12, 64, &fd), 60,
           "the newest holder is thread 62, reported as its process 60");
    is_int(fd, 5, "  at fd 5");
    is_int(young(800, 62, 3, 12, 64, &fd), 61, "pid 61's socket is found under 62");
    is_int(young(800, 62, 1, 12, 64, &fd), 0, "  but not when only the newest is tried");
    is_int(young(714, 62, 3, 12, 64, &fd), 0, "a socket above the fd window is not guessed");
    is_int(young(714, 62, 3, 14, 64, &fd), 60, "  and is with a wider one");
    is_int(young(912, 45, 10, 12, 64, &fd), 40, "pids that are gone are skipped");
    is_int(young(999, 62, 30, 12, 64, &fd), 0, "a socket nobody holds: 0");
    is_int(young(912, 45, 10, 12, 9, &fd), 0, "  nor one past the readlink budget");

    host_proc_dir = "/proc";
    nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* The real kernel: this process's own sockets. */
static void test_real_proc(void)
{
    int fds[6];
    struct stat st;
    for (int i = 0; i < 6; i++)
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (!ok(fds[0] >= 0 && fds[5] >= 0 && fstat(fds[5], &st) == 0, "six sockets of our own"))
        return;
    unsigned long inode = 0;
    is_int(host_pid_fd_socket(getpid(), fds[5], &inode), 1, "the kernel names our socket");
    is_int((long long)inode, (long long)st.st_ino, "  with the inode fstat gives");
    int fd = -1;
    pid_t got = young(st.st_ino, getpid(), 1, fds[5], 64, &fd);
    is_int(got, getpid(), "we are guessed as the newest holder of our socket");
    is_int(fd, fds[5], "  at its fd");
    is_int(young(st.st_ino, getpid(), 1, 3, 64, &fd), 0, "not when only fd 3 is tried");
    is_int(busiest, getpid(), "  but we are named the young process with many fds");
    self = getpid();
    young(st.st_ino, getpid(), 1, 3, 64, &fd);
    is_int(busiest, 0, "  unless we are the one asking");
    self = 1;
    is_int(young(st.st_ino, getpid(), 1, 1000, 64, &fd), getpid(), "found with a wide window");
    is_int(busiest, 0, "  and then none is named busiest");
    memset(&idx, 0, sizeof idx);
    int next = sock_index_learn(&idx, getpid(), fds[0], 64);
    const struct sock_index_slot *s = sock_index_get(&idx, st.st_ino);
    ok(next > fds[5] && s && s->pid == getpid() && s->fd == fds[5],
       "learning our fds from the first socket's indexes the last one");
    for (int i = 0; i < 6; i++)
        close(fds[i]);
}

int main(void)
{
    test_put_get();
    test_fake_proc();
    test_real_proc();
    return done_testing();
}
