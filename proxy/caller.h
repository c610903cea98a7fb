/* caller.h - which worktree is calling (ARCHITECTURE.md): the client end of
 * an accepted TCP connection -> its socket inode and uid (host_diag_socket,
 * exact 4-tuple) -> the process holding that inode (host_pid_socket_fd,
 * host_socket_holder) -> its ppid chain -> the first ancestor with
 * WTPROXY_WORKTREE in its environment or a cwd inside a worktree
 * (host_worktree_of) of a repository wtproxy knows. This file is the walk;
 * the facts are host/'s.
 *
 * caller_place reads a few /proc files per ancestor and the .git entries
 * up its folders: tens of µs, seconds on a slow or cold filesystem (NFS,
 * FUSE), so the daemon runs it on its identification worker, where
 * known() must be thread-safe (identify.h, struct identify_known). */
#ifndef WTP_CALLER_H
#define WTP_CALLER_H

#include <limits.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define CALLER_MAX_DEPTH 16 /* ancestors walked at most */

/* Whether worktree, of the repository with this git common dir, is in one
 * wtproxy knows (a .wtproxy declares its servers, or one of its worktrees
 * has a registration). */
typedef int (*caller_known_fn)(const char *worktree, const char *common_dir, void *arg);

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
 * rewrites its own) is skipped, its cwd still counts. A process whose
 * cwd was removed (" (deleted)") and that has no WTPROXY_WORKTREE stops
 * the walk: its worktree is gone. Returns 0 when
 * placed, -1 when not (place->pid, comm, cwd still filled for messages). */
int caller_place(pid_t pid, uid_t uid, caller_known_fn known, void *arg,
                 struct caller_place *place);

/* The Playwright worker pid belongs to: the TEST_WORKER_INDEX of pid or
 * of its nearest ancestor of uid that has one (a worker's browser inherits
 * it), a few up at most; -1 when none has. Asked for a refusal only (its
 * record names the worker, for the Playwright reporter), never for a
 * request served: a few /proc reads, while the socket's process lives. */
int caller_test_worker(pid_t pid, uid_t uid);

/* How a process whose cwd is dir (and without WTPROXY_WORKTREE) would be
 * placed, by the same rule as one step of caller_place's walk: dir inside
 * a worktree of a repository known() accepts. Returns 0 when placed (how
 * "cwd", worktree, common_dir; pid and decided_by 0), -1 when not. */
int caller_place_dir(const char *dir, caller_known_fn known, void *arg, struct caller_place *place);

#endif
