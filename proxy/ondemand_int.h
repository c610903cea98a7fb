/* ondemand_int.h - the on-demand starts' state, shared by ondemand.c
 * (asking for starts, their order, idle stop), ondemand_launch.c (forking
 * one server's wrapper) and ondemand_starts.c (what is known of each
 * start). Internal to proxy/. */
#ifndef WTP_ONDEMAND_INT_H
#define WTP_ONDEMAND_INT_H

#include <limits.h>
#include <sys/types.h>

#include "ondemand.h"
#include "server.h"
#include "wtfile.h"

#define ONDEMAND_MAX 64
#define ONDEMAND_SWEEP_MS 1000
#define ONDEMAND_MAX_UNHEARD 16 /* fronts said to be unheard, each once */
#define ONDEMAND_ENV_EXTRA (WTFILE_MAX_SERVICES + 3)

struct sibling {
    char name[REG_SERVICE_MAX];
    int front;
};

struct started {
    char worktree[PATH_MAX];
    struct wtfile_service svc;
    struct sibling sib[WTFILE_MAX_SERVICES]; /* the file's services, in its order */
    int nsib;
    pid_t pid;   /* of its `wtproxy run`, leader of its own process group; 0 not running */
    int adopted; /* pid is a wrapper a daemon before this one started (ondemand_adopt.c): not
                  * our child, so its end is seen in the registry, not by waitpid */
    long long adopted_ms; /* when it was adopted: its idle time counts from then */
    int status;           /* its wait status once it ended (pid 0), for what a refusal says */
    int waiting; /* for those it is started after to be ready, or for the load; then launched */
    unsigned load_pct; /* while it waits for the load: the load per CPU last seen (hundredths) */
    unsigned long long since_ms; /* when it began waiting */
    char log[PATH_MAX + 64];
    char failed[3 * PATH_MAX + 512]; /* why it was not started (two paths, a log); "" */
    int failed_after; /* failed because a service it is started after was not ready */
};

struct ondemand {
    struct proxy_server *srv;
    char exe[PATH_MAX];
    char control[PATH_MAX + 32];
    char log_dir[PATH_MAX];
    char last_err[1024]; /* the last bad file reported, so it is logged once */
    struct started list[ONDEMAND_MAX];
    int n;
    struct event *sigchld, *sweep, *tick;
    struct ondemand_reader *reader;    /* .wtproxy files read for callers, off the loop */
    int unheard[ONDEMAND_MAX_UNHEARD]; /* declared fronts it does not listen on, said */
    int nunheard;
};

/* ondemand.c: the start of (worktree, front), NULL none; its live
 * registration, NULL none. */
struct started *ondemand_find(struct ondemand *a, const char *worktree, int front);
struct reg_backend *ondemand_registered(struct ondemand *a, const char *worktree, int front);

/* ondemand.c: whether e's wrapper runs (an adopted one's pid is cleared
 * here once its registration went); a slot for service i of f in
 * worktree, filled from f, NULL when all ONDEMAND_MAX are used. */
int ondemand_running(struct ondemand *a, struct started *e);
struct started *ondemand_slot(struct ondemand *a, const char *worktree, const struct wtfile *f,
                              int i);

/* ondemand_launch.c: fork e's `wtproxy run`. Returns 0, or -1 with
 * e->failed saying why (also in the daemon's output). */
int ondemand_launch(struct ondemand *a, struct started *e);

#endif
