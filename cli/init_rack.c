/* init_rack.c - a Rack app (a config.ru: Sinatra, Roda, Hanami, Rails) for
 * `wtproxy init`: its start (bin/rails server, else rackup, under `bundle
 * exec` beside a Gemfile), and whoami-protocol's Rack recipe in config.ru
 * above its `run`. Ruby has no middleware package of ours: the recipe
 * runs `wtproxy fingerprint --unknown-after-start` in the server as it
 * loads, and answers that. The block is cut from the guide built into the
 * binary, so that what init writes and what the guide shows never differ.
 * Three Ruby users met "unknown app layout" here and pasted it by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "init.h"
#include "topics_text.h"

#define RACKUP "rackup -o 127.0.0.1 -p {port}"

int cli_rack_detect(const char *dir, struct cli_app *app)
{
    if (!cli_is_file(dir, "config.ru", 0))
        return -1;
    app->kind = CLI_APP_RACK;
    if (cli_is_file(dir, "bin/rails", 0))
        snprintf(app->start, sizeof app->start, "bin/rails server -b 127.0.0.1 -p {port}");
    else if (cli_is_file(dir, "Gemfile", 0))
        snprintf(app->start, sizeof app->start, "bundle exec " RACKUP);
    else
        snprintf(app->start, sizeof app->start, RACKUP);
    return 0;
}

/* The guide's Rack block (its ```ruby fence after "For a Rack app"),
 * unindented from its list item, into t. -1 when the guide has none. */
static int recipe(struct init_text *t)
{
    const char *at = strstr(topic_whoami_protocol, "For a Rack app");
    const char *from = at ? strstr(at, "```ruby\n") : NULL;
    const char *to = from ? strstr(from += 8, "```") : NULL;
    if (!to)
        return -1;
    for (const char *eol; from < to && (eol = memchr(from, '\n', (size_t)(to - from)));
         from = eol + 1) {
        const char *line = from;
        for (int i = 0; i < 2 && line < eol && *line == ' '; i++)
            line++;
        init_put(t, line, (size_t)(eol - line) + 1);
    }
    return 0;
}

/* The first line of text that begins with `run ` (or `run(`): the app
 * config.ru serves, above which a `map` goes. NULL when there is none. */
static const char *run_line(const char *text)
{
    for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        if (!strncmp(l, "run ", 4) || !strncmp(l, "run(", 4))
            return l;
    return NULL;
}

int init_plan_rack(struct init_plan *p)
{
    char path[PATH_MAX], err[PATH_MAX + 64];
    struct init_text t = {0};
    if (p->app.kind != CLI_APP_RACK)
        return 0;
    char *text = cli_join(path, sizeof path, p->dir, "config.ru") < 0
                     ? NULL
                     : cli_read_text(path, CLI_INIT_FILE_MAX, err, sizeof err);
    if (!text) {
        init_note(p, "config.ru: left alone: %s", err);
        return 0;
    }
    if (strstr(text, "__whoami")) {
        init_note(p, "Rack: config.ru answers /__whoami already");
        free(text);
        return 0;
    }
    const char *run = run_line(text);
    if (!run) {
        init_note(p, "config.ru: no line beginning `run `, so init leaves it alone; paste the Rack "
                     "block of wtproxy help whoami-protocol above the line that runs the app");
        free(text);
        return 0;
    }
    init_put(&t, text, (size_t)(run - text));
    init_puts(&t, "# wtproxy: /__whoami, so that wtproxy serves this server only while it runs "
                  "this worktree's code on disk (wtproxy help whoami-protocol) - do not remove\n");
    if (recipe(&t) < 0) { /* a guide without it: this build's bug, said */
        init_note(p, "config.ru: this wtproxy's guide has no Rack block to add; see wtproxy "
                     "help whoami-protocol");
        free(t.s);
        free(text);
        return 0;
    }
    init_puts(&t, run);
    init_note(p, "config.ru runs `wtproxy fingerprint` as the server loads: wtproxy must be on "
                 "the server's PATH, or $WTPROXY_BIN name it");
    return init_add_change(p, "config.ru", text, &t);
}
