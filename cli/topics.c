/* topics.c - the guides `wtproxy help TOPIC` prints: the repository's
 * documents a user acts on (the .wtproxy format, the config file, the
 * /__whoami middleware...), built into the binary (scripts/embed_text.py, from
 * the files cli/meson.build names). A message points at a topic, never at
 * a file of the repository: an installed wtproxy has no checkout, and a
 * topic prints the same text in both (tests/pointers.py checks every
 * `wtproxy help NAME` a string of ours names). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "packages.h"
#include "topics.h"
#include "topics_text.h"
#include "wtp_install_paths.h"

struct topic {
    const char *name;
    const char *summary; /* its line in `wtproxy help --topics` */
    const char *text;
};

/* clang-format off */
static const struct topic topics[] = {
    {"wtproxy-file", "the .wtproxy file: how a worktree's dev servers are started", topic_wtproxy_file},
    {"config", "the daemon's config file (--config): every key, explained", topic_config},
    {"whoami", "the /__whoami middleware (Django, WSGI, ASGI, Node, Vite, Next.js; PHP)", topic_whoami},
    {"whoami-protocol", "the /__whoami answer and fingerprint, for any other server", topic_whoami_protocol},
    {"playwright", "Playwright and e2e tests through wtproxy; logs, idle stop", topic_playwright},
    {"django-tests", "Django and pytest-django with this worktree's own databases", topic_django_tests},
    {"node-db-tests", "Node test suites with a migrated template database each", topic_node_db_tests},
    {"adopting", "adopting wtproxy in an app: wtproxy init and wtproxy doctor", topic_adopting},
    {"mcp-setup", "wtproxy mcp in Claude Code, Codex, Gemini CLI and Cursor", topic_mcp_setup},
    {"systemd", "the systemd user units: the daemon started on first connect", topic_systemd},
    {"relay", "what the relay forwards, drops and refuses; the daemon's log", topic_relay},
    {"control-protocol", "the control socket's JSON lines, op by op", topic_control_protocol},
    {"dashboard-api", "the dashboard's JSON API and event stream", topic_dashboard_api},
    {"claims", "leases and test databases: the rules of wtproxy claim and db claim", topic_claims},
};
/* clang-format on */

#define NTOPICS (sizeof topics / sizeof topics[0])

static const struct topic *find(const char *name)
{
    for (size_t i = 0; i < NTOPICS; i++)
        if (strcmp(topics[i].name, name) == 0)
            return &topics[i];
    return NULL;
}

int cli_topic_exists(const char *name)
{
    return find(name) != NULL;
}

void cli_topics_list(FILE *f, int with_summaries)
{
    for (size_t i = 0; i < NTOPICS; i++)
        if (with_summaries)
            fprintf(f, "  %-17s %s\n", topics[i].name, topics[i].summary);
        else
            fprintf(f, "%s\n", topics[i].name);
}

static int exists(const char *root, const char *dir, const char *file)
{
    char path[8192];
    struct stat st;
    snprintf(path, sizeof path, "%s%s/%s", root, dir, file);
    return stat(path, &st) == 0;
}

/* What makes the Python package importable: nothing where the install put
 * it on Debian's python3's path; in a private prefix (meson said so at
 * setup), a link in the user site, which every dev server of this user
 * reads, whoever starts it (the daemon from a .wtproxy, Playwright, a
 * shell), and which no repository has to carry. */
static void python_how(FILE *f, const char *dir)
{
    if (WTP_PYTHON_SEARCHED) {
        fprintf(f,
                "          Debian's /usr/bin/python3 imports it with no setting; another\n"
                "          python3 (a virtualenv) needs %s on PYTHONPATH\n",
                dir);
        return;
    }
    fprintf(f,
            "          Debian's /usr/bin/python3 does NOT search this prefix: a dev server\n"
            "          fails with \"No module named 'wtproxy_whoami'\" until it is linked\n"
            "          into your user site, once:\n"
            "    d=$(/usr/bin/python3 -m site --user-site) && mkdir -p \"$d\" && "
            "ln -sfn %s/wtproxy_whoami \"$d\"/\n"
            "          (a virtualenv's python: wtproxy doctor in the app names its folder)\n",
            dir);
}

/* Run from a build folder: the packages of the checkout meson set it up
 * from, by their real paths, so that the commands shown can be pasted. */
static void whoami_checkout(FILE *f)
{
    static const char src[] = WTP_SOURCE_DIR;
    int py = exists(src, "/whoami/python", "wtproxy_whoami/__init__.py");
    int js = exists(src, "/whoami/node", "package.json");
    const char *missing = " (missing: the checkout this wtproxy was built from moved; build it "
                          "again there)";
    fprintf(f,
            "Where the packages are: this wtproxy runs from a build folder of the checkout\n"
            "%s, not installed:\n"
            "  Python  %s/whoami/python/wtproxy_whoami%s\n"
            "          a python3 imports it with PYTHONPATH=%s/whoami/python\n"
            "  Node    %s/whoami/node%s\n"
            "          in an app: npm link wtproxy-whoami, or a symlink\n"
            "          node_modules/wtproxy-whoami to it\n"
            "`meson install` or the Debian package installs both (below).\n\n",
            src, src, py ? "" : missing, src, src, js ? "" : missing);
}

/* Where the middleware a dev server loads is, for this wtproxy: the
 * folders its install put them in (what a refusal's "wtproxy help whoami"
 * is asked for), or, run from a build folder, the checkout's. */
static void whoami_where(FILE *f)
{
    char root[4096], py_dir[4200];
    if (whoami_install_root(root, sizeof root) < 0) {
        whoami_checkout(f);
        return;
    }
    snprintf(py_dir, sizeof py_dir, "%s%s", root, WTP_PYTHON_DIR);
    int py = exists(root, WTP_PYTHON_DIR, "wtproxy_whoami/__init__.py");
    int js = exists(root, WTP_NODE_DIR, "package.json");
    const char *missing = " (missing: install wtproxy again)";
    fprintf(f, "Where this wtproxy installed the packages:\n  Python  %s/wtproxy_whoami%s\n",
            py_dir, py ? "" : missing);
    python_how(f, py_dir);
    fprintf(f,
            "  Node    %s%s%s\n"
            "          in an app: npm link wtproxy-whoami, or a symlink\n"
            "          node_modules/wtproxy-whoami to it\n\n",
            root, WTP_NODE_DIR, js ? "" : missing);
}

/* The files of the doc folder a guide tells you to copy or run, by their
 * path there (the guide's text can only say PREFIX): an installed wtproxy
 * has no checkout, and "conf/vitest-db-setup.mjs" was found nowhere. */
static const struct {
    const char *topic, *file;
} copied[] = {
    {"playwright", "conf/playwright.config.example.js"},
    {"django-tests", "conf/run-django-tests.sh"},
    {"node-db-tests", "conf/vitest-db-setup.mjs"},
};

/* Above such a guide: where its files are, installed or, run from a build
 * folder, in the checkout. */
static void files_where(FILE *f, const char *name)
{
    char root[4096];
    int installed = whoami_install_root(root, sizeof root) == 0;
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        if (strcmp(copied[i].topic, name) != 0)
            continue;
        if (installed)
            fprintf(f, "The file this guide names, as this wtproxy installed it:\n  %s%s/%s\n\n",
                    root, WTP_DOC_DIR, copied[i].file);
        else
            fprintf(f,
                    "The file this guide names: this wtproxy runs from a build folder of the "
                    "checkout\n%s, not installed:\n  %s/%s\n\n",
                    WTP_SOURCE_DIR, WTP_SOURCE_DIR, copied[i].file);
    }
}

int cli_topic_print(const char *name, FILE *f)
{
    const struct topic *t = find(name);
    if (!t)
        return -1;
    if (strcmp(t->name, "whoami") == 0)
        whoami_where(f);
    files_where(f, t->name);
    fputs(t->text, f);
    return 0;
}
