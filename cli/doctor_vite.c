/* doctor_vite.c - `wtproxy doctor`'s vite-proxy check: the Vite config
 * (or Angular's proxy config, doctor_ng.c) of each .wtproxy service's
 * folder proxies only to ports the daemon owns for this worktree. A front
 * end whose `server.proxy` sends /api to a fixed `http://localhost:3001`
 * that no service has as its front reaches whichever process holds 3001:
 * under parallel worktrees another worktree's API (a test of wt-b read
 * "hello from main"), while the other worktrees' APIs fail to start
 * (EADDRINUSE). On a service's front, the daemon routes each worktree's
 * Vite to its own API. Read as text, as init reads a Vite config
 * (init_vite.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "init.h"

#define PORTS_MAX 16

/* The folder of a start `cd DIR && ...` into out, "" (the top) else. */
static void start_folder(const char *start, char *out, size_t len)
{
    size_t n = strncmp(start, "cd ", 3) == 0 ? strcspn(start + 3, " ") : 0;
    if (n && strncmp(start + 3 + n, " &&", 3) == 0)
        snprintf(out, len, "%.*s", (int)n, start + 3);
    else
        out[0] = '\0';
    n = strlen(out);
    if (n > 1 && out[n - 1] == '/')
        out[n - 1] = '\0';
}

/* The one fix for service s's Vite proxying to port, which no service of
 * f has as its front. */
static void fix_for(const struct wtfile *f, int s, const char *config, int port, char *fix,
                    size_t len)
{
    int other = -1, others = 0;
    for (int i = 0; i < f->n; i++)
        if (i != s && f->svc[i].name[0])
            other = i, others++;
    if (others == 1) {
        char var[REG_SERVICE_MAX + 16];
        wtfile_front_var(f->svc[other].name, var, sizeof var);
        snprintf(fix, len,
                 "in %.400s, proxy to `http://localhost:${process.env.%s || %d}` in place of "
                 "http://localhost:%d: the daemon sets %s to [service %s]'s front (%d) in each "
                 "server it starts, and routes each worktree's Vite there to its own %s (or give "
                 "[service %s] front = %d)",
                 config, var, port, port, var, f->svc[other].name, f->svc[other].front,
                 f->svc[other].name, f->svc[other].name, port);
    } else if (others) {
        snprintf(fix, len,
                 "front = %d in the .wtproxy's service of the server %.400s calls there, then "
                 "restart the daemon so that it listens there (this doctor's daemon check prints "
                 "the command)",
                 port, config);
    } else {
        snprintf(fix, len,
                 "declare the server %.400s calls on :%d in the .wtproxy as a service with front = "
                 "%d: wtproxy init FOLDER --front %d --apply, FOLDER its folder",
                 config, port, port, port);
    }
}

/* The first port a Vite config of a service of f proxies to that is no
 * front of f: 1 with its service, config and port, else 0; *seen counts
 * the configs read. */
static int stray_proxy(const char *root, const struct wtfile *f, int *svc, char *config, size_t len,
                       int *port, int *seen)
{
    for (int i = 0; i < f->n; i++) {
        char dir[PATH_MAX], name[PATH_MAX];
        int ports[PORTS_MAX], built;
        start_folder(f->svc[i].start, dir, sizeof dir);
        char *text = init_vite_config_of(root, dir, dir, f->svc[i].start, name, sizeof name);
        int n = text ? init_vite_proxy_ports(text, ports, PORTS_MAX, &built) : 0;
        free(text);
        *seen += text != NULL;
        if (!text) { /* an Angular dev server's proxy config */
            char at[2 * PATH_MAX], file[PATH_MAX];
            snprintf(at, sizeof at, "%s%s%s", root, dir[0] ? "/" : "", dir);
            n = doc_ng_proxy_ports(at, f->svc[i].start, ports, PORTS_MAX, file, sizeof file);
            *seen += n > 0;
            snprintf(name, sizeof name, "%.*s%s%.*s", (int)(sizeof name / 2), dir,
                     dir[0] ? "/" : "", (int)(sizeof name / 2 - 2), file);
        }
        for (int k = 0; k < n; k++)
            if (!wtfile_by_front(f, ports[k])) {
                *svc = i;
                *port = ports[k];
                snprintf(config, len, "%s", name);
                return 1;
            }
    }
    return 0;
}

void doc_vite_proxy(struct doc_ctx *c, struct doc_result *r)
{
    if (!c->have_wt || !c->has_file || c->file_err[0]) {
        doc_set(r, DOC_SKIP, "%s",
                !c->have_wt   ? "not in a worktree"
                : c->has_file ? "the daemon refuses the .wtproxy (the server check says why)"
                              : "no .wtproxy here");
        return;
    }
    struct cli_wtproxy w;
    char config[PATH_MAX], fronts[512];
    int svc = 0, port = 0, seen = 0;
    cli_wtproxy_read(c->wt.root, &w);
    if (!w.file) {
        doc_set(r, DOC_SKIP, "the .wtproxy could not be read: %s", w.err);
    } else if (stray_proxy(c->wt.root, w.file, &svc, config, sizeof config, &port, &seen)) {
        const char *name = w.file->svc[svc].name;
        cli_wtproxy_list(&w, fronts, sizeof fronts);
        doc_set(r, DOC_PROBLEM,
                "%.400s%s%s%s: its dev-server proxy sends to http://localhost:%d, a port the "
                ".wtproxy declares no service on (its fronts: %s): the daemon does not own it, "
                "so under parallel worktrees each worktree's Vite reaches whichever process "
                "holds %d, another worktree's API, and the other worktrees' APIs fail to start "
                "there (EADDRINUSE)",
                config, name[0] ? " ([service " : "", name, name[0] ? "])" : "", port, fronts,
                port);
        fix_for(w.file, svc, config, port, r->fix, sizeof r->fix);
    } else {
        doc_set(r, DOC_OK, "%s",
                seen ? "the dev-server proxy configs of the .wtproxy's services (Vite's, "
                       "Angular's) proxy only to its fronts, which the daemon routes to this "
                       "worktree's own servers"
                     : "no Vite config nor Angular proxy config in the folders of the "
                       ".wtproxy's services");
    }
    cli_wtproxy_free(&w);
}
