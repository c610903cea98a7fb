/* doctor.c - `wtproxy doctor [--front PORT] [--json]`: check the setup
 * from the worktree it is run in. The facts several checks need (the
 * worktree, the daemon's ping and entries, the front port) are gathered
 * once here; each check (doctor_checks.c, doctor_env.c) then says ok,
 * problem (with the one command that fixes it) or skipped (it cannot run:
 * no daemon, no git worktree, no database server), and never stops the
 * others. Each is bounded in time. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor.h"
#include "wtfile.h"

/* clang-format off */
static const struct {
    const char *name;
    void (*run)(struct doc_ctx *c, struct doc_result *r);
} checks[] = {
    {"daemon", doc_daemon},
    {"worktree", doc_worktree},
    {"server", doc_server},
    {"middleware", doc_python},
    {"whoami", doc_whoami},
    {"go-embed", doc_go_embed},
    {"inotify", doc_inotify},
    {"playwright", doc_playwright},
    {"vite-proxy", doc_vite_proxy},
    {"leases", doc_leases},
    {"databases", doc_databases},
    {"load", doc_load},
};
/* clang-format on */

#define NCHECKS (sizeof checks / sizeof checks[0])

static const char *const status_names[] = {"ok", "problem", "skipped"};

void doc_set(struct doc_result *r, enum doc_status status, const char *fmt, ...)
{
    va_list ap;
    r->status = status;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
}

/* One request to the daemon (never starting one): its reply, or NULL
 * with err. */
static json_t *ask(const char *op, char *err, size_t errlen)
{
    json_t *req = json_pack("{ss}", "op", op), *reply = NULL;
    int r = req ? cli_call(req, 0, &reply, err, errlen) : -1;
    json_decref(req);
    if (r == 0 && !json_is_true(json_object_get(reply, "ok"))) {
        const char *m = json_string_value(json_object_get(reply, "message"));
        snprintf(err, errlen, "the daemon refused %s: %s", op, m ? m : "(no message)");
        json_decref(reply);
        return NULL;
    }
    return r == 0 ? reply : NULL;
}

/* This worktree's entry on c->front, from the daemon that answered ping. */
static void ask_entries(struct doc_ctx *c)
{
    char err[512];
    if (!c->ping || !(c->entries = ask("list", err, sizeof err)))
        return;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(c->entries, "entries"), i, e) {
        const char *w = json_string_value(json_object_get(e, "worktree"));
        if (c->have_wt && w && strcmp(w, c->wt.root) == 0 && !json_object_get(e, "remote") &&
            json_integer_value(json_object_get(e, "front")) == c->front)
            c->entry = e;
    }
}

/* The worktree's .wtproxy, read with the daemon's own parser (w): a typo
 * there makes the daemon refuse every start. Its error into c->file_err,
 * its services' fronts into c->fronts (a front end's proxy to its API's
 * front reaches a stray server when the daemon does not own that port
 * too), the start command on c->front into c->start. */
static void check_file(struct doc_ctx *c, const struct cli_wtproxy *w)
{
    snprintf(c->file_err, sizeof c->file_err, "%s", w->err);
    for (int i = 0; w->file && i < w->file->n; i++) {
        c->fronts[i] = w->file->svc[i].front;
        snprintf(c->front_svc[i], sizeof c->front_svc[i], "%s", w->file->svc[i].name);
        snprintf(c->front_start[i], sizeof c->front_start[i], "%s", w->file->svc[i].start);
    }
    c->nfronts = w->file ? w->file->n : 0;
    const struct wtfile_service *s = w->file ? wtfile_by_front(w->file, c->front) : NULL;
    if (s)
        snprintf(c->start, sizeof c->start, "%s", s->start);
}

/* The subfolder whose app c's start serves, into out: "api" of `cd api &&
 * ...`, "admin" of `... -m uvicorn admin.main:app` (a subfolder app's
 * module served from the top, as init writes it; not app/, the top's own
 * package). 0 when none. */
static int start_folder(const struct doc_ctx *c, char *out, size_t len)
{
    char path[2 * PATH_MAX], err[1024];
    struct cli_app app;
    size_t n = strncmp(c->start, "cd ", 3) == 0 ? strcspn(c->start + 3, " /") : 0;
    if (n && strncmp(c->start + 3 + n, " &&", 3) == 0)
        return snprintf(out, len, "%.*s", (int)n, c->start + 3), 1;
    if (doc_py_served_module(c->start, out, len, NULL) < 0 || !strchr(out, '.'))
        return 0;
    out[strcspn(out, ".")] = '\0';
    snprintf(path, sizeof path, "%s/%s", c->wt.root, out);
    int is = strcmp(out, "app") != 0 && cli_app_detect(path, &app, err, sizeof err) == 0;
    cli_app_free(&app);
    return is;
}

int doc_init_fix(const struct doc_ctx *c, char *out, size_t len)
{
    char here[PATH_MAX], err[1024], sub[256];
    int at_top = realpath(".", here) && strcmp(here, c->wt.root) == 0;
    struct cli_app app;
    if (start_folder(c, sub, sizeof sub)) {
        snprintf(out, len, "wtproxy init %s%s%s --apply", at_top ? "" : c->wt.root,
                 at_top ? "" : "/", sub);
        return 1;
    }
    int top_app = !c->have_wt;
    if (c->have_wt) {
        top_app = cli_app_detect(c->wt.root, &app, err, sizeof err) == 0;
        cli_app_free(&app);
    }
    if (top_app)
        return snprintf(out, len, "wtproxy init --apply"), 1;
    if (cli_sub_adopt(c->wt.root, out, len, NULL, 0) > 0)
        return 1;
    if (c->has_file) /* an app init refuses: the guides, never over its .wtproxy */
        snprintf(out, len,
                 "make the server answer /__whoami as wtproxy help whoami-protocol says "
                 "(wtproxy init knows no app here)");
    else
        snprintf(out, len,
                 "wtproxy help wtproxy-file > %s%s.wtproxy, then edit its start, and make the "
                 "server answer /__whoami as wtproxy help whoami-protocol says (wtproxy init "
                 "knows no app here)",
                 at_top ? "" : c->wt.root, at_top ? "" : "/");
    return 0;
}

/* The front port the checks judge, into c->front, and where it came from
 * into c->front_from (the output says it): --front (flag); else the
 * .wtproxy's (declared); else the port the Playwright config's baseURL
 * (else webServer.url) names, which the tests will use even before
 * `wtproxy init` wrote a .wtproxy; else as the other commands pick it: the
 * daemon's one port, else 8000. */
static void pick_front(struct doc_ctx *c, int flag, int declared)
{
    struct cli_playwright pw = {0};
    if (!flag && !declared && c->have_wt)
        cli_playwright_read(c->wt.root, &pw);
    int daemon = cli_daemon_port(c->ping);
    c->front = flag       ? flag
               : declared ? declared
               : pw.front ? pw.front
               : daemon   ? daemon
                          : WTP_DEFAULT_FRONT_PORT;
    if (flag)
        snprintf(c->front_from, sizeof c->front_from, "--front");
    else if (declared)
        snprintf(c->front_from, sizeof c->front_from, "%s",
                 c->has_file ? "the .wtproxy" : "the main checkout's .wtproxy");
    else if (pw.front) {
        snprintf(c->front_from, sizeof c->front_from, "%s %s", pw.file,
                 pw.base_port ? "baseURL" : "webServer.url");
        c->front_in_tests = 1;
    } else
        snprintf(c->front_from, sizeof c->front_from, "%s",
                 daemon ? "the one the daemon listens on" : "the default");
    free(pw.text);
}

/* Gather what the checks share. 0, or 2 for a bad --front. Without
 * --front the front is the .wtproxy's (its first service's when they are
 * on several: the server check names the others), as cli/front.c says. */
static int gather(struct doc_ctx *c, const char *front)
{
    long f = 0;
    if (front && cli_number(front, 1, 65535, &f) < 0) {
        fprintf(stderr, "wtproxy doctor: --front \"%s\" is not a port (1-65535)\n", front);
        return 2;
    }
    struct cli_wtproxy w = {0};
    c->have_wt = host_worktree_of(".", &c->wt, c->wt_err, sizeof c->wt_err) == 0;
    if (c->have_wt)
        cli_wtproxy_read(c->wt.root, &w);
    c->has_file = w.from == 1; /* the daemon starts a worktree's servers from its own only */
    c->main_has_file = w.from == 2;
    c->ping = ask("ping", c->daemon_err, sizeof c->daemon_err);
    /* The daemon check's fix starts one listening on the ports it checks:
     * the client's own start (on 8000) beside it would be a second,
     * different command. */
    char *start = strstr(c->daemon_err, CLI_NO_DAEMON_START);
    if (!c->ping && start)
        *start = '\0';
    c->front_given = f != 0;
    pick_front(c, (int)f, w.file && w.file->n ? w.file->svc[0].front : 0);
    if (c->has_file)
        check_file(c, &w);
    cli_wtproxy_free(&w);
    ask_entries(c);
    return 0;
}

static void print_text(const struct doc_result *res)
{
    for (size_t i = 0; i < NCHECKS; i++) {
        printf("%-8s %-11s %s\n", status_names[res[i].status], checks[i].name, res[i].detail);
        if (res[i].status == DOC_PROBLEM && res[i].fix[0])
            printf("%-8s %-11s fix: %s\n", "", "", res[i].fix);
    }
}

static void print_json(const struct doc_ctx *c, const struct doc_result *res, int ok)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < NCHECKS; i++)
        json_array_append_new(
            arr, json_pack("{ss ss ss so}", "name", checks[i].name, "status",
                           status_names[res[i].status], "detail", res[i].detail, "fix",
                           res[i].status == DOC_PROBLEM && res[i].fix[0] ? json_string(res[i].fix)
                                                                         : json_null()));
    json_t *o =
        json_pack("{sb si ss so so}", "ok", ok, "front", c->front, "front_from", c->front_from,
                  "worktree", c->have_wt ? json_string(c->wt.root) : json_null(), "checks", arr);
    json_dumpf(o, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(o);
}

int cli_doctor_main(int argc, char **argv)
{
    const char *front = NULL;
    int json = 0;
    const struct cli_opt opts[] = {{"front", &front, NULL}, {"json", NULL, &json}, {0}};
    char err[256];
    int r = cli_parse(argc, argv, opts, NULL, err, sizeof err);
    if (r) {
        if (r > 0)
            return CLI_HELP;
        fprintf(stderr, "wtproxy doctor: %s (see wtproxy doctor --help)\n", err);
        return 2;
    }
    struct doc_ctx c = {0};
    if ((r = gather(&c, front)) != 0)
        return r;
    struct doc_result *res = calloc(NCHECKS, sizeof *res);
    if (!res) {
        fprintf(stderr, "wtproxy doctor: out of memory\n");
        return 1;
    }
    int ok = 1;
    for (size_t i = 0; i < NCHECKS; i++) {
        checks[i].run(&c, &res[i]);
        ok &= res[i].status != DOC_PROBLEM;
    }
    if (json)
        print_json(&c, res, ok);
    else
        print_text(res);
    free(res);
    json_decref(c.ping);
    json_decref(c.entries);
    return ok ? 0 : 1;
}
