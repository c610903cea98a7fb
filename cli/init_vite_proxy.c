/* init_vite_proxy.c - a Vite front end whose dev-server proxy sends to a
 * fixed localhost port that no .wtproxy service has as its front, for
 * `wtproxy init`: the daemon does not own that port, so under parallel
 * worktrees each worktree's Vite reaches whichever process holds it, the
 * API of another worktree (seen: a test of wt-b read "hello from main",
 * wt-c's API failed with EADDRINUSE). Said, not edited: which API it
 * calls, and on which front, is the team's choice; `wtproxy doctor`
 * checks it in every worktree (doctor_vite.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "front.h"
#include "init.h"
#include "wtfile.h"

struct api_of {
    const char *own;
    char name[PATH_MAX];
    int n;
};

/* Count the workspace members or subfolders (but own) that hold a server
 * other than a front end: the API a Vite proxy calls, when it is one. */
static void count_api(void *arg, const char *name, const char *path)
{
    struct api_of *a = arg;
    struct cli_app app;
    char err[1024];
    if (strcmp(name, a->own) != 0 && cli_app_detect(path, &app, err, sizeof err) == 0 &&
        app.kind != CLI_APP_VITE && app.kind != CLI_APP_NEXT) {
        snprintf(a->name, sizeof a->name, "%s", name);
        a->n++;
    }
    cli_app_free(&app);
}

void init_vite_proxy_note(struct init_plan *p)
{
    char name[PATH_MAX];
    int ports[16], built;
    char *text = init_vite_config(p->dir, "", name, sizeof name);
    int n = text ? init_vite_proxy_ports(text, ports, 16, &built) : 0;
    free(text);
    struct cli_wtproxy w;
    cli_wtproxy_read(p->top[0] ? p->top : p->dir, &w);
    for (int k = 0; k < n; k++) {
        if (ports[k] == p->front || (w.file && wtfile_by_front(w.file, ports[k])))
            continue;
        struct api_of a = {p->top[0] ? p->dir + strlen(p->top) + 1 : "", "", 0};
        if (p->top[0])
            init_members_each(p->top, count_api, &a);
        char cmd[PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, "wtproxy init %s --front %d --apply",
                 a.n == 1 ? a.name : "FOLDER", ports[k]);
        init_note(p,
                  "%s: its dev-server proxy sends to http://localhost:%d, which no .wtproxy "
                  "service has as its front: the daemon does not own that port, so under parallel "
                  "worktrees every worktree's Vite reaches whichever process holds it (another "
                  "worktree's API); declare that API as a service on front %d (%s%s), or proxy to "
                  "the front the daemon gives it, `http://localhost:${process.env.WTPROXY_FRONT_"
                  "NAME}` (wtproxy doctor checks it)",
                  name, ports[k], ports[k], cmd,
                  a.n == 1 ? ", from the top folder" : ", FOLDER its folder");
    }
    cli_wtproxy_free(&w);
}
