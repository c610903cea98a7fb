/* init_astro.c - an Astro app for `wtproxy init`: `astro dev` as its start,
 * and the /__whoami Vite plugin in astro.config.*'s `vite.plugins`, where
 * Astro takes the Vite settings of its dev server (it has no vite.config).
 * The entry is the one init_vite_plugin.c adds to a Vite config, loaded
 * under `wtproxy run` only, so `astro build` and CI never resolve the
 * package. An Astro user who found init refusing the app ("unknown app
 * layout") wrote it there by hand. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"

static const char *const astro_configs[] = {"astro.config.mjs", "astro.config.js",
                                            "astro.config.ts", "astro.config.mts",
                                            "astro.config.cjs"};
#define ASTRO_NCONFIGS (sizeof astro_configs / sizeof astro_configs[0])

int cli_astro_config(const char *dir, char *name, size_t len)
{
    for (size_t i = 0; i < ASTRO_NCONFIGS; i++)
        if (cli_is_file(dir, astro_configs[i], 0))
            return snprintf(name, len, "%s", astro_configs[i]) < (int)len ? 0 : -1;
    return -1;
}

/* The config init writes where there is none. */
static const char astro_new_config[] =
    "import { defineConfig } from 'astro/config';\n\nexport default defineConfig({});\n";

static void astro_by_hand(struct init_plan *p, const char *name, const char *why)
{
    init_note(p,
              "%s: %s, so init leaves it alone; add to its vite.plugins by hand, as one entry: "
              "`" CLI_VITE_WHOAMI_ENTRY
              "` (loaded under wtproxy run only: astro build and CI need no wtproxy-whoami; "
              "wtproxy help whoami); without it wtproxy refuses the server",
              name, why);
}

int init_plan_astro(struct init_plan *p)
{
    char name[64], path[PATH_MAX], err[PATH_MAX + 64];
    const char *why = NULL;
    struct init_text t = {0};
    if (p->app.kind != CLI_APP_ASTRO)
        return 0;
    char *text = NULL;
    if (cli_astro_config(p->dir, name, sizeof name) == 0 &&
        (cli_join(path, sizeof path, p->dir, name) < 0 ||
         !(text = cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err)))) {
        init_note(p, "%s: left alone: %s", name, err);
        return 0;
    }
    if (text && strstr(text, "wtproxy-whoami/vite")) {
        init_note(p, "Astro: %s lists the /__whoami plugin already (wtproxyWhoami)", name);
        free(text);
        return 0;
    }
    if (!text)
        snprintf(name, sizeof name, "astro.config.mjs");
    if (init_astro_config_edit(text ? text : astro_new_config, &t, &why) < 0) {
        astro_by_hand(p, name, why);
        free(t.s);
        free(text);
        return t.oom ? -1 : 0;
    }
    if (!cli_is_file(p->dir, "node_modules/wtproxy-whoami/package.json", 0))
        init_note(p,
                  "%s loads 'wtproxy-whoami/vite' under wtproxy run: link the package into each "
                  "worktree (npm link wtproxy-whoami, or a node_modules/wtproxy-whoami symlink to "
                  "the folder wtproxy help whoami names; wtproxy doctor prints it), or astro dev "
                  "cannot load its config",
                  name);
    return init_add_change(p, name, text, &t);
}
