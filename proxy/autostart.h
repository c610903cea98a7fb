/* autostart.h - dev servers the daemon starts itself, from the `.wtproxy`
 * file a repository commits at its root (`start = CMD {port}`), for callers
 * whose worktree has none running: Playwright's `port:` recipe, where
 * wtproxy's own answer on the port means Playwright never starts one. They
 * stop again after `idle_stop` without requests. */
#ifndef WTP_AUTOSTART_H
#define WTP_AUTOSTART_H

#include <stddef.h>

struct proxy_server;
struct autostart;

struct autostart *autostart_new(struct proxy_server *s, const char *control_path,
                                const char *log_dir);
void autostart_free(struct autostart *a);

/* Start the server worktree declares for front, unless one started by us
 * for it is running. Returns 0 (started or running: wait for its
 * registration), or -1 when the worktree declares none for that front. */
int autostart_ensure(struct autostart *a, const char *worktree, int front);

/* Whether the server started for (worktree, front) has exited; its log's
 * path into log whenever one was started. */
int autostart_exited(struct autostart *a, const char *worktree, int front, char *log,
                     size_t loglen);

/* Whether the repository with this git common dir declares a server (its
 * main checkout has a .wtproxy): its worktrees count as known ones. */
int autostart_declared(const char *common_dir);

#endif
