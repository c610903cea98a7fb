/* caller.h - which worktree is calling (DESIGN.md §4): the client end of
 * an accepted TCP connection -> its socket inode and uid (host/host.h,
 * exact 4-tuple) -> the process holding that inode (/proc/PID/fd) -> its
 * ppid chain -> the first ancestor with WTPROXY_WORKTREE in its environment
 * or a cwd inside a worktree of a repository wtproxy knows.
 *
 * These functions block on /proc and netlink; caller_scan_all can take
 * 100+ ms on a busy machine and must not run on the event loop. */
#ifndef WTP_CALLER_H
#define WTP_CALLER_H

#include <limits.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define CALLER_MAX_DEPTH 16 /* ancestors walked at most */

/* Whether process pid has socket inode open (reads /proc/PID/fd). */
int caller_pid_has_socket(pid_t pid, unsigned long inode);

/* The same, telling the fd number that holds it (-1: none). */
int caller_pid_find_socket(pid_t pid, unsigned long inode);

/* Whether pid's fd number fd is socket inode: one readlink, for the fd
 * numbers a process is likely to reuse (those of its closed connections). */
int caller_fd_is_socket(pid_t pid, int fd, unsigned long inode);

/* The process of uid that holds socket inode, from a scan of every
 * /proc/PID/fd; 0 when none. Slow: never on the event loop. */
pid_t caller_scan_all(unsigned long inode, uid_t uid);

/* The worktree enclosing dir: the nearest ancestor (dir included) holding
 * a `.git` file or directory, as a canonical path, and the repository's
 * git common dir (for a linked worktree: the `gitdir:` of its .git file,
 * then that folder's `commondir`; for a main checkout: its .git folder),
 * canonical too. Returns 0, or -1 when dir is in no worktree. */
int caller_worktree_of(const char *dir, char *root, size_t rootlen, char *common,
                       size_t commonlen);

/* Whether the repository with this git common dir is one wtproxy knows
 * (has a registration in one of its worktrees). */
typedef int (*caller_known_fn)(const char *common_dir, void *arg);

struct caller_place {
    pid_t pid;                 /* the process holding the socket */
    pid_t decided_by;          /* the ancestor that decided; 0 when none did */
    char how[8];               /* "env" or "cwd" */
    char worktree[PATH_MAX];   /* "" when not placed */
    char common_dir[PATH_MAX]; /* the worktree's repository */
    int depth;                 /* 0 = the socket's process itself */
    char comm[64];             /* the socket process's command line, for messages */
    char cwd[PATH_MAX];        /* its cwd, for messages */
};

/* Walk from pid up the ppid chain, stopping at pid 1, at a process of
 * another uid, or after CALLER_MAX_DEPTH: the first process whose
 * environment holds WTPROXY_WORKTREE (a path: its worktree), or whose cwd
 * is inside a worktree of a known repository, decides. A cwd in a
 * repository known() rejects (say ~/notes) does not stop the walk. The
 * environment of a process we may not read (Chromium's network service
 * rewrites its own) is skipped, its cwd still counts. Returns 0 when
 * placed, -1 when not (place->pid, comm, cwd still filled for messages). */
int caller_place(pid_t pid, uid_t uid, caller_known_fn known, void *arg,
                 struct caller_place *place);

#endif
