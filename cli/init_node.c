/* init_node.c - a plain Node or Express server (`node FILE` in
 * scripts.dev or scripts.start), for `wtproxy init`: whether FILE imports
 * the /__whoami middleware already, so that init does not ask for it
 * again, and, when it does not, the lines for node:http as well as for
 * Express. Text inspection, as init_vite.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"

/* FILE of `node [FLAGS] FILE ...`, into file; -1 when start is not so. */
static int entry_file(const char *start, char *file, size_t len)
{
    const char *p = start + strspn(start, " \t");
    if (strncmp(p, "node", 4) != 0 || (p[4] != ' ' && p[4] != '\t'))
        return -1;
    for (p += 4;;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 0)
            return -1;
        if (*p != '-') {
            snprintf(file, len, "%.*s", (int)n, p);
            return 0;
        }
        p += n;
    }
}

void init_node_whoami(struct init_plan *p)
{
    char file[PATH_MAX], path[PATH_MAX], err[PATH_MAX + 64];
    char *text = NULL;
    if (entry_file(p->app.start, file, sizeof file) == 0 &&
        cli_join(path, sizeof path, p->dir, file) == 0)
        text = cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    int has = text && strstr(text, "wtproxy-whoami");
    free(text);
    if (has)
        init_note(p, "Node: %s imports wtproxy-whoami already", file);
    else
        init_note(p, "Node: add the /__whoami middleware by hand (wtproxy help whoami), once at "
                     "start: `import { whoami } from 'wtproxy-whoami'; const mw = whoami();`, "
                     "then `app.use(mw)` first (Express, Connect) or `http.createServer((req, "
                     "res) => mw(req, res, () => handler(req, res)))` (node:http); without it "
                     "wtproxy refuses the server");
    init_note(p, "Node: every worktree needs node_modules/wtproxy-whoami (node_modules is not "
                 "committed); wtproxy doctor, run in a worktree, prints the link that adds it");
}
