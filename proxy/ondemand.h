/* ondemand.h - the on-demand start: dev servers the daemon starts itself,
 * from the `.wtproxy` file a repository commits at its root (`start = CMD
 * {port}`), for callers whose worktree has none running: Playwright's
 * `port:` recipe, where wtproxy's own answer on the port means Playwright
 * never starts one. They stop again after `idle_stop` without requests.
 * (Not the command line starting the daemon: that is cli_daemon_start in
 * cli/client.c. Users call both "autostart", and the flags and variables
 * keep that word: WTPROXY_NO_AUTOSTART, --no-autostart.) */
#ifndef WTP_ONDEMAND_H
#define WTP_ONDEMAND_H

#include <stddef.h>

struct proxy_server;
struct ondemand;

struct ondemand *ondemand_new(struct proxy_server *s, const char *control_path,
                                const char *log_dir);
void ondemand_free(struct ondemand *a);

/* Start the server worktree declares for front, unless one started by us
 * for it is running. Returns 0 (started or running: wait for its
 * registration), or -1 when the worktree declares none for that front. */
int ondemand_ensure(struct ondemand *a, const char *worktree, int front);

/* Whether the server started for (worktree, front) has exited; its log's
 * path into log whenever one was started. */
int ondemand_exited(struct ondemand *a, const char *worktree, int front, char *log,
                     size_t loglen);

/* Whether the repository with this git common dir declares a server (its
 * main checkout has a .wtproxy): its worktrees count as known ones. */
int ondemand_declared(const char *common_dir);

#endif
