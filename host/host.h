/* host.h - what this machine offers: facts about its processes (/proc),
 * its sockets (sock_diag) and the worktree of a folder, its clocks, and
 * the worker threads that run slow work off the event loop. The bottom
 * layer: it knows no event loop, no registry and no HTTP, and every layer
 * above asks it instead of reading /proc or netlink itself
 * (ARCHITECTURE.md).
 *
 * Everything here may block for microseconds to milliseconds (it reads
 * the kernel's files): the daemon calls the cheap ones (one /proc file,
 * one sock_diag lookup) from its loop, and the scans from worker threads. */
#ifndef WTP_HOST_H
#define WTP_HOST_H

#include <limits.h>
#include <stddef.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

/* --- processes (proc.c) --- */

/* Where /proc is ("/proc"); unit tests point it at a fake tree. */
extern const char *host_proc_dir;

/* Start time of pid (field 22 of /proc/PID/stat, clock ticks since boot),
 * 0 when it does not run or is a zombie. (pid, start) names one process. */
unsigned long long host_pid_start(pid_t pid);

/* When pid started, in nanoseconds since the epoch, one clock tick late;
 * 0 when it does not run. Its start (ticks since boot, rounded down) is
 * turned into the epoch through CLOCK_BOOTTIME, never /proc/stat's btime:
 * whole seconds, up to 1 s early, so that a file a server's reloader saw
 * written just before it started was called newer than the server. The
 * tick added keeps such a write (within a tick of the start) older. */
long long host_pid_started_ns(pid_t pid);

/* The wait status (waitpid(2)'s) of pid while it is a zombie, its
 * parent yet to reap it (field 52 of /proc/PID/stat); -1 when pid is no
 * zombie or the kernel does not say. Only its parent can wait for it: a
 * process of a dev server killed under its reloader, which never reaps
 * it, is said with this. */
int host_zombie_status(pid_t pid);

/* The parent of pid (field 4 of /proc/PID/stat), 0 when unknown. */
pid_t host_pid_parent(pid_t pid);

/* A /proc entry name as a pid: all digits; 0 for anything else ("self",
 * "net", ...). */
long host_proc_pid(const char *name);

/* Read up to len - 1 bytes of path into buf, NUL-terminated. Returns the
 * count, or -1 when the file cannot be opened or read. */
ssize_t host_read_small_file(const char *path, char *buf, size_t len);

/* pid_ns.c: said, a pid that the process peer (as this process's pid
 * namespace numbers it, SO_PEERCRED's) gave for itself, numbered here:
 * peer when peer runs in a pid namespace below this one (a sandbox) and
 * said is its own pid there, -1 when said is another pid of that
 * namespace (which this one cannot name), said itself when both run in
 * one namespace. */
pid_t host_pid_of_peer(pid_t peer, pid_t said);

/* pid_ns.c: whether pid runs in a pid namespace below this process's. */
int host_pid_namespaced(pid_t pid);

/* pid_ns.c: whether this process sees the kernel's threads (kthreadd is
 * pid 2 of the machine's first pid namespace, and of no other): not in a
 * sandbox's or a container's pid namespace, which hides every process
 * outside it. */
int host_pid_ns_sees_kernel(void);

/* Argv of pid as one printable line in buf: arguments joined by spaces,
 * control characters as '?', a line cut short by len ending in "...";
 * "" when unreadable (a kernel thread, a process gone). */
void host_pid_cmdline(pid_t pid, char *buf, size_t len);

/* The cwd of pid (readlink /proc/PID/cwd). Returns 0, or -1 with "" in buf
 * when unreadable (another user's, a process gone) or longer than buf. */
int host_pid_cwd(pid_t pid, char *buf, size_t len);

/* The effective uid pid runs as (the owner of /proc/PID; root for a
 * process that made itself non-dumpable). Returns 0, or -1 when gone. */
int host_pid_uid(pid_t pid, uid_t *uid);

/* The value of environment variable name in the environment pid was
 * started with (a later setenv() is not seen) into buf. Returns 0, or -1
 * when absent, longer than buf, or unreadable (another user's process;
 * Chromium's network service writes its process title over its own). */
int host_pid_env(pid_t pid, const char *name, char *buf, size_t len);

/* Whether pid sees the files this process sees: 1 when both are in one
 * mount namespace, 0 when pid is in another (a sandbox's, a container's,
 * or this process is), -1 when unknown (pid gone, or not ours to read). */
int host_pid_same_mounts(pid_t pid);

/* The machine's 1-minute load average per online CPU, in hundredths
 * (/proc/loadavg; 150 is a load of 1.50 per CPU) into *pct, and the
 * load and the CPU count for people. Returns 0, or -1 when unknown. */
int host_load_pct(unsigned *pct, double *load, int *ncpu);

/* --- which process holds a socket (proc_fd.c) --- */

#define HOST_ANY_UID ((uid_t)-1)

/* The fd number of pid that is socket inode, or -1: none, or pid's fds
 * are not ours to read. Reads pid's whole fd table. */
int host_pid_socket_fd(pid_t pid, unsigned long inode);

/* Whether pid's fd number fd is socket inode: one readlink, for the fd
 * numbers a process is likely to reuse (those of its closed connections). */
int host_pid_fd_is_socket(pid_t pid, int fd, unsigned long inode);

/* What pid's fd number fd is, one readlink: 1 a socket (its inode in
 * *inode), 0 an open fd that is not a socket, -1 no such fd or process, or
 * not ours to read. */
int host_pid_fd_socket(pid_t pid, int fd, unsigned long *inode);

/* A guess among the newest processes (host_young_holder). */
struct host_guess {
    pid_t last;               /* the newest pid to try */
    int npids, maxfd, budget; /* pids tried, last fd number tried, readlinks */
    pid_t self;               /* never named busiest: the daemon holds many fds too */
    pid_t busiest;            /* out: of the processes tried, the one with the most open fds
                               * past maxfd (a load test's 1,500 sockets), 0 when none */
};

/* The newest process holding socket inode, guessed without any fd table
 * read: g->npids pids from g->last down, each tried at fd numbers 3 to
 * g->maxfd (a process that just started opens its first sockets there). A
 * thread found is reported as its process, as is g->busiest. Returns the
 * pid (its fd in *fd), or 0. At most npids opens and fstats and budget
 * readlinks: cheap enough for the daemon's loop with small bounds. Unlike
 * host_socket_holder, the holder found is the newest, not the lowest. */
pid_t host_young_holder(unsigned long inode, struct host_guess *g, int *fd);

/* The lowest pid holding one of the n socket inodes (the parent, when a
 * process forked after opening it), among the processes of uid
 * (HOST_ANY_UID: of any uid we can read); 0 when none. Reads every
 * process's fd table: 2 ms to 200 ms, never on the daemon's loop. */
pid_t host_socket_holder(const unsigned long *inodes, size_t n, uid_t uid);

/* Every process holding one of the n socket inodes, up to max, into pids
 * in ascending order: a forking server's parent and each child sharing its
 * listening socket (PHP_CLI_SERVER_WORKERS, a Node cluster), which all
 * hold the port until the last exits. Returns how many. As slow as
 * host_socket_holder, whose lowest pid is pids[0]. */
size_t host_socket_pids(const unsigned long *inodes, size_t n, pid_t *pids, size_t max);

/* The pid the kernel handed out last (/proc/loadavg's last field), 0 when
 * unknown: the processes started since an earlier reading are the pids
 * after it, up to this one, counting on past pid_max from 1. */
pid_t host_last_pid(void);

#define HOST_YOUNG_SPAN 4096

/* Which processes a host_socket_holders pass reads. */
struct host_scope {
    const pid_t *only; /* when set: only these nonly pids (callers found lately) */
    size_t nonly;
    /* Else the pids handed out after `after` up to `upto` (host_last_pid
     * readings: the young processes; tried by number, without listing
     * /proc, when at most HOST_YOUNG_SPAN); both 0: every process. */
    pid_t after, upto;
    /* When set: told of every socket of every fd table read, so that the
     * caller can keep an index of them for the connections to come. */
    void (*seen)(void *arg, unsigned long inode, pid_t pid, int fd);
    void *seen_arg;
};

/* Where each of n socket inodes is held, in one pass over the processes
 * of scope: for each i with pids[i] == 0 on entry, pids[i] and fds[i] are
 * set to the lowest pid of uid (HOST_ANY_UID: any we can read) holding
 * inodes[i] and its fd number there; left 0 when none. Returns how many it
 * found. A burst of new callers pays for one pass this way, not one scan
 * each; and a pass over the newest processes (above) reads a few fd
 * tables where a whole /proc scan reads thousands. */
size_t host_socket_holders(const unsigned long *inodes, size_t n, uid_t uid,
                           const struct host_scope *scope, pid_t *pids, int *fds);

/* --- where a process listens on a Unix socket (unix_listen.c) --- */

/* The file path of a listening Unix stream socket pid holds (a daemon's
 * control socket) into path, as it was bound: the path may name no file
 * in this process's mount namespace. Returns 1, or 0 when pid holds none
 * or its fds are not ours to read. Reads pid's fd table per listener. */
int host_pid_unix_listener(pid_t pid, char *path, size_t len);

/* --- the process listening on a port (port_owner.c) --- */

#define HOST_PORT_HOLDERS_MAX 16 /* processes sharing one listening socket that are named */

struct host_port_owner {
    pid_t pid; /* 0 when the socket was found but no process (another uid's, or gone) */
    pid_t holders[HOST_PORT_HOLDERS_MAX]; /* every process holding it, pid first, ascending */
    int nholders;                         /* 0 with pid 0; more than 1 for a forking server */
    uid_t uid;         /* the socket's owner, known even when its process is not */
    char cmdline[512]; /* as host_pid_cmdline, "" when unreadable */
    char cwd[4096];    /* "" when unreadable */
};

/* A TCP listening socket of this network namespace. */
struct host_listener {
    int port;
    unsigned long inode;
    uid_t uid; /* its owner */
};

/* Up to max of the TCP listeners (any address, IPv4 then IPv6), from
 * /proc/net/tcp{,6}, read only up to the end of their listeners. Returns
 * how many. */
size_t host_tcp_listeners(struct host_listener *out, size_t max);

/* Find the process holding a TCP listener on port (any address, IPv4 or
 * IPv6) from /proc/net/tcp{,6} and host_socket_pids: owner->pid the lowest
 * of owner->holders. Returns 1 when a listening socket was found
 * (owner->pid may still be 0), 0 when none. Slow like host_socket_holder. */
int host_port_owner_find(int port, struct host_port_owner *owner);

/* --- a dev server's project lock (dev_lock.c) --- */

/* Whether lines, a dev server's last output lines, say it did not start
 * because another dev server of its project holds the project's lock
 * (Vite 8's "Found another Vite dev process for this project at URL (PID
 * N)"): then out gets which process that is and the one command that
 * frees the project, "... stop it: kill N". Returns 1 or 0. */
int host_dev_lock_holder(const char *lines, char *out, size_t len);

/* --- an app's dependencies not installed where its server runs (app_deps.c) --- */

/* The folder a server's command runs in, into dir: the DIR of its leading
 * `cd DIR &&` (after `sh -c`, `env` and VAR=value settings), under
 * worktree unless absolute; else worktree. */
void host_command_dir(const char *command, const char *worktree, char *dir, size_t len);

/* The command that installs dir's Node dependencies, by the lockfile
 * there: "npm ci", "pnpm install", "yarn install", "bun install", else
 * "npm install". */
const char *host_node_install(const char *dir);

/* The folder whose install brings dir's Node dependencies, into root:
 * dir when it holds a lockfile; else the nearest folder above it, up to
 * top, that is a workspace's root (an npm, yarn, bun or pnpm workspace
 * hoists its members' installs there, under one lockfile); else dir. */
void host_node_install_root(const char *dir, const char *top, char *root, size_t len);

/* The path, from dir, where an install puts program's .bin entry, as a
 * start line run in dir must name it: node_modules/.bin/PROGRAM when dir
 * has it there or is its own install root; else the workspace root's
 * (host_node_install_root within top), ../../node_modules/.bin/PROGRAM
 * from apps/web: npm hoists a member's tools there. Into out. */
void host_node_bin(const char *dir, const char *top, const char *program, char *out, size_t len);

/* Whether dir holds a package.json whose dependencies are not installed:
 * no node_modules in dir or above it up to its install root
 * (host_node_install_root, within top), one no installer made (only a
 * link in it), or none with .bin/program or the package (either may be
 * NULL). Then out gets what is missing and the install, by the lockfile
 * there: "cd ROOT && npm ci" (pnpm, yarn, bun). Returns 1 or 0. */
int host_node_deps_missing(const char *dir, const char *top, const char *program,
                           const char *package, char *out, size_t len);

/* Whether lines, a dev server's last output lines, say a program or module
 * of its app's own dependencies is missing ("sh: 1: vite: not found",
 * "Cannot find module 'next'", "No module named 'django'") where command
 * runs (host_command_dir in worktree) has them not installed: then out
 * gets that and the one command that installs them (for Python: which
 * python ran it, and its install). wtproxy-whoami's and wtproxy_whoami's
 * are not the app's (whoami_missing_package). Returns 1 or 0. */
int host_deps_missing(const char *lines, const char *command, const char *worktree, char *out,
                      size_t len);

/* --- how a server's end is said (exit_words.c) --- */

/* The words of a server's end into out: status >= 0 is its exit status,
 * else signal ended it; ago ("3s", or NULL) follows the verb. "exited 3s
 * ago with status 1", "was killed by signal 9 (SIGKILL)", "exited with
 * status 137: 128+9, a child killed by signal 9 (SIGKILL), as a shell
 * reports it"; a status 256-N of a Python command (its command says
 * python, manage.py or django) as sys.exit(-N) of its child, Django's
 * autoreloader's way. Returns 1 when it reads as a kill by someone (a
 * signal other than a crash's: SIGSEGV, SIGABRT... are the program's own
 * error), else 0: then its last lines name no error, and the fix is to
 * start it again (HOST_EXIT_KILLED). */
int host_exit_words(int status, int signal, const char *command, const char *ago, char *out,
                    size_t len);

/* What a killed server's fix says before how to start it again. */
#define HOST_EXIT_KILLED "something killed it (not wtproxy: wtproxy says so when it stops a server)"
/* Whether the line [p, end) names an error: not indented (a stack frame
 * is), and says error, exception, fatal, panic or traceback. */
int host_names_error(const char *p, const char *end);

/* The line of a server's last lines to quote alone: the last one naming
 * an error, else the last one not blank; its length in *n. */
const char *host_error_line(const char *lines, size_t *n);

/* Said in place of "its last lines:" when there are none. */
#define HOST_EXIT_SILENT "it printed nothing before it exited"

/* Whether lines, a server's last output, are empty or only white space. */
int host_printed_nothing(const char *lines);

/* --- the worktree of a folder (worktree.c) --- */

/* The one definition of "the worktree of a folder", used by the command
 * line (run, register, ls, why) and the daemon (placing a caller, knowing
 * a repository) alike, so that whatever `wtproxy run` registers is a
 * worktree the daemon can place a caller in, and nothing else is.
 *
 * From the folder (symlinks, . and .. resolved) up, the nearest folder
 * holding a .git entry is the worktree, judged by git's own layout:
 *
 * - main checkout (ROOT/.git is a folder holding HEAD): root ROOT, gitdir
 *   and common dir ROOT/.git. A .git folder without HEAD is refused.
 * - linked worktree (ROOT/.git is a file "gitdir: G", G absolute or
 *   relative to ROOT; G/commondir names the common dir, relative to G):
 *   root ROOT, gitdir G, common dir the repository's .git. Every worktree
 *   of a repository has the same common dir: that is how a repository is
 *   named here.
 * - separate gitdir (`git init --separate-git-dir`; a gitfile whose G has
 *   no commondir): root ROOT, gitdir and common dir G.
 * - nested worktree (repo/.worktrees/wt-a inside the main checkout, or a
 *   worktree inside another's folder): the nearest .git wins, so a folder
 *   in wt-a is wt-a's, never the enclosing checkout's.
 * - pruned worktree (G is gone: `git worktree prune`, or the repository
 *   moved): refused, never silently the enclosing checkout. Git itself
 *   refuses such a folder ("not a git repository").
 * - moved (or copied) worktree (G's back-pointer G/gitdir names another
 *   folder's .git): accepted, since git keeps working in it and its dev
 *   server serves its files, with a note saying to run `git worktree
 *   repair` (else `git worktree prune` drops it once the old path is gone).
 * - garbage .git file (not "gitdir: PATH"): refused, as git refuses it.
 * - submodule (a gitfile into a git dir's modules/ folder: SUPER/.git/
 *   modules/NAME, or .git/worktrees/W/modules/NAME in a linked worktree
 *   of the superproject): a folder inside it belongs to the enclosing
 *   superproject's worktree. A dev server serves the superproject's
 *   checkout, of which the submodule's files are a part; the /__whoami
 *   gate fingerprints the worktree root, so an edit in the submodule is an
 *   edit of that worktree; and the developer's shell in lib/ is working on
 *   the superproject's branch. A submodule checkout with no superproject
 *   worktree above it is refused. An embedded repository with its own .git
 *   folder (an old-style submodule, a clone inside a checkout) cannot be
 *   told from a main checkout: it is its own worktree (`git submodule
 *   absorbgitdirs` turns it into the layout above).
 * - a folder in no repository: refused ("... is not inside a git
 *   worktree").
 *
 * Costs a realpath, one lstat per folder walked and 3-5 small reads. */
struct host_worktree {
    char root[PATH_MAX];     /* the worktree's top folder, canonical */
    char common[PATH_MAX];   /* the repository's git common dir, canonical */
    char gitdir[PATH_MAX];   /* this worktree's own git dir, canonical */
    char branch[256];        /* "main", "(detached abc1234)"; "" when HEAD is unreadable */
    char note[3 * PATH_MAX]; /* "" or a sentence about an accepted oddity (a moved worktree) */
};

/* The worktree of dir, as above. Returns 0 with out filled, or -1 with a
 * sentence in err (err may be NULL) saying why dir is in no worktree and
 * how to fix it. */
int host_worktree_of(const char *dir, struct host_worktree *out, char *err, size_t errlen);

/* The branch of the worktree of dir into out, for tables and pages: "-"
 * when dir is in no worktree or its HEAD is unreadable. */
void host_worktree_branch(const char *dir, char *out, size_t outlen);

/* Whether the worktree whose top folder is root was removed, as far as is
 * certain: its .git is gone, or it is a .git file whose gitdir is gone.
 * The second is what a `git worktree remove` leaves that failed "Directory
 * not empty" (a dev server writing into the tree): git stops at the first
 * entry it cannot delete, .git may come after it, and it deletes the
 * gitdir anyway. An EACCES or EIO says nothing: 0. */
int host_worktree_removed(const char *root);

/* --- which folder stands at a worktree's path (worktree_id.c) --- */

/* An fd held on the folder root (O_PATH), or -1: while it is open the
 * folder's inode stays allocated, even deleted, so that no new folder at
 * the same path can get its number. */
int host_worktree_pin(const char *root);

/* Whether the folder pinned as pin was deleted, or another folder now
 * stands at root (`git worktree remove` and `add` at one path within the
 * second a .git check polls: that check sees a .git and calls it there).
 * An EACCES or EIO says nothing: 0. */
int host_worktree_replaced(int pin, const char *root);

/* Whether the folder pinned as pin, still there, now has another path
 * than root (`git worktree move`, a parent folder renamed): its path into
 * to. The kernel follows the folder, not the path. */
int host_worktree_moved(int pin, const char *root, char *to, size_t len);

/* The identity of the folder root, for a record no process keeps open (a
 * database's stamp): "<inode>.<birth seconds>.<nanoseconds>". A new folder
 * at the same path may get the inode number again at once (ext4), never
 * also its birth time. Returns 0, or -1 with "" in out when the file
 * system keeps no birth time or root is unreadable: unknown. */
int host_worktree_identity(const char *root, char *out, size_t outlen);

/* When the worktree whose top folder is root came to be, as far as the
 * filesystem says: its folder's birth time (statx), else, for a linked
 * worktree, the time `git worktree add` wrote its .git file (git rewrites
 * it only on a repair). Returns 0 with *at, or -1 when neither is known (a
 * main checkout on a filesystem without birth times). What was written at
 * root's path before then was an earlier worktree's (a path reused). */
int host_worktree_born(const char *root, struct timespec *at);

/* Whether pid's cwd is the folder root deleted ("ROOT (deleted)"): a
 * server whose worktree was removed and added again at its path runs on
 * in the old folder, which the path no longer leads to. */
int host_pid_in_deleted(pid_t pid, const char *root);

/* --- sockets (diag.c) --- */

struct host_diag; /* an open NETLINK_SOCK_DIAG socket; one per thread */

/* NULL with err filled ("NETLINK_SOCK_DIAG socket: ...") when the kernel
 * offers no sock_diag. */
struct host_diag *host_diag_open(char *err, size_t errlen);
void host_diag_close(struct host_diag *d);

/* The socket whose own address is local and whose peer is peer (IPv4 or
 * IPv6; an IPv4-mapped IPv6 address is asked as IPv4); with peer NULL, the
 * listener that accepts connections to local. Returns 0 with *inode and
 * *uid, or -1 when the kernel has no such socket or reports inode 0 (a
 * connection already closing: unknown, never a guess). About 4 µs. */
int host_diag_socket(struct host_diag *d, const struct sockaddr *local, const struct sockaddr *peer,
                     unsigned long *inode, uid_t *uid);

/* --- worker threads (worker.c) --- */

/* A job: embed it in the caller's own job struct and get back with
 * container_of-style arithmetic (or put it first). */
struct host_job {
    STAILQ_ENTRY(host_job) link;
};
STAILQ_HEAD(host_job_list, host_job);

/* Runs on the worker thread, one job at a time, in submission order. */
typedef void (*host_job_fn)(struct host_job *j, void *ctx);

struct host_worker;

/* Start a thread that runs run(job, ctx) for each submitted job, nice
 * steps below the caller's priority (0: the same). NULL with err when the
 * pipe or the thread cannot be made. */
struct host_worker *host_worker_new(host_job_fn run, void *ctx, int nice, char *err, size_t errlen);

/* The same, but batch(jobs, ctx) gets every job queued when it starts
 * (in submission order; it must leave them in jobs): for work that costs
 * the same for one job as for many, such as a scan of /proc. */
typedef void (*host_batch_fn)(struct host_job_list *jobs, void *ctx);
struct host_worker *host_worker_new_batch(host_batch_fn batch, void *ctx, int nice, char *err,
                                          size_t errlen);

/* Readable when finished jobs wait: the caller's loop watches it and then
 * calls host_worker_finished. */
int host_worker_fd(const struct host_worker *w);

/* Queue j (the worker owns it until it comes back finished). */
void host_worker_submit(struct host_worker *w, struct host_job *j);

/* Move the finished jobs, in order, to the end of out (and clear the
 * wake-up bytes). Never blocks. */
void host_worker_finished(struct host_worker *w, struct host_job_list *out);

/* Stop the thread once its current job ends and free w: the jobs it
 * finished but nobody took go to the end of finished, the ones it never
 * started to the end of unstarted, for the caller to answer or free. */
void host_worker_free(struct host_worker *w, struct host_job_list *finished,
                      struct host_job_list *unstarted);

/* --- clocks (clock.c) --- */

/* Unix time in milliseconds (CLOCK_REALTIME): for what is stored or shown. */
long long host_wall_ms(void);

/* A duration as every message and table writes it, rounded down to its
 * largest unit: "0s" ... "59s", "1m" ... "59m", "1h" ... "23h", "1d" ...
 * (a negative one is "0s"). One format, so that "registered 2m ago" in a
 * refusal and the AGE column of `wtproxy ls` read alike. */
void host_age(long long ms, char *buf, size_t len);

/* A moment (unix ms) as the local time of day, "HH:MM:SS": when something
 * happened today, as a status says it ("code changed on disk at ..."). */
void host_time_of_day(long long wall_ms, char *buf, size_t len);

/* Milliseconds on CLOCK_MONOTONIC: for durations and deadlines, which a
 * wall-clock step must not stretch or cut. */
long long host_mono_ms(void);

/* --- which build this is (build.c) --- */

/* This binary's build: meson's version, then "+" and the source's git
 * commit when it was built from a checkout, then ".dirty." and a hash of
 * the uncommitted changes when it had some ("0.1.0+2dde6ebfe7c5",
 * "0.1.0+2dde6ebfe7c5.dirty.a4ffaa"); the plain version from a tarball.
 * Two binaries of one build behave alike. */
const char *host_build(void);

/* Whether pid's executable was deleted or replaced on disk since it
 * started (an install over it, a rebuild): 1, with the path it ran from
 * into exe; 0 when it is still there (exe: its path); -1 when pid's exe
 * is unreadable (gone, another user's). */
int host_exe_replaced(long pid, char *exe, size_t len);

/* Whether pid runs this very binary (the same file, not a copy or a
 * rebuild at its path): 1, 0 another, -1 unknown (gone, another user's). */
int host_pid_runs_self(pid_t pid);

/* --- how a shell names this binary (self.c) --- */

/* The first executable named name (n bytes) in PATH's folders, as a shell
 * finds it, into out; -1 when there is none. */
int host_which(const char *name, size_t n, char *out, size_t len);

/* This binary as a command a shell runs, into out: "wtproxy" when the
 * first wtproxy on PATH is this very file (an install; returns 0), else its
 * absolute path (returns 1), with the other wtproxy PATH finds, if any,
 * into other (NULL: not wanted). -1 with "wtproxy" when /proc/self/exe
 * is unreadable. */
int host_self_program(char *out, size_t len, char *other, size_t otherlen);

/* --- a uid's user name (user.c) --- */

/* The passwd file ("/etc/passwd"); unit tests point it at a fake one. */
extern const char *host_passwd_file;

/* The name of uid's entry in the passwd file into buf. Returns 0, or -1
 * when it has none (a user only NSS knows: LDAP, sssd) or cannot be read.
 * One read of a small local file, never an NSS lookup: the loop may ask. */
int host_user_name(uid_t uid, char *buf, size_t len);

/* "alice (uid 1000)" into buf, "uid 1000" when host_user_name knows no
 * name: whose a daemon, a file or a port is, in messages. */
void host_uid_words(uid_t uid, char *buf, size_t len);

/* --- a log file with a size cap (log_file.c) --- */

/* A log passes this many bytes: it becomes PATH.1 (one old generation) and
 * a new PATH starts. $WTPROXY_LOG_MAX_BYTES sets another cap, for the
 * daemon and for `wtproxy run` alike (HOST_LOG_MIN_BYTES at least). */
#define HOST_LOG_MAX_BYTES (16LL * 1024 * 1024)
#define HOST_LOG_MIN_BYTES 4096LL
#define HOST_LOG_SYNC_BYTES (64 * 1024) /* counted between two reads of the real size */

struct host_log {
    int fd;              /* the writer's fd; a rotation keeps its number */
    int also[2];         /* other fds on the same file, moved along (-1: none) */
    char path[PATH_MAX]; /* the file's name, PATH */
    long long size;      /* bytes in it, as counted */
    long long unsynced;  /* bytes counted since its size was last read */
    long long max;       /* the cap */
    long long rotated;   /* bytes of the files rotated out since attach: where the
                          * current file begins in what this writer wrote */
};

/* The cap: $WTPROXY_LOG_MAX_BYTES, else HOST_LOG_MAX_BYTES. */
long long host_log_max_bytes(void);

/* Cap the log that fd writes to, when it is a regular file still under
 * the name /proc/self/fd says (a terminal, a pipe or a deleted file is
 * not capped); those of the nalso fds in also that share its file follow
 * a rotation. Returns 0, or -1 (l is then inert). */
int host_log_attach(struct host_log *l, int fd, const int *also, int nalso);

/* n more bytes were written to l->fd, ending a line or not (line_end):
 * past the cap, at a line's end, rotate. Returns 1 when it rotated, 0 when
 * not, -1 with err when the rotation failed (the old file goes on; the
 * next try is a cap's worth of bytes later). */
int host_log_wrote(struct host_log *l, size_t n, int line_end, char *err, size_t errlen);

#endif
