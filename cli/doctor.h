/* doctor.h - `wtproxy doctor`'s checks and what they share: the facts
 * gathered once (the worktree, the daemon's ping and entries, the front
 * port) and one result per check. Internal to cli/. */
#ifndef WTP_CLI_DOCTOR_H
#define WTP_CLI_DOCTOR_H

#include <jansson.h>

#include "app.h"
#include "front.h"
#include "host.h"
#include "wtfile.h"

#define DOC_WHOAMI_TIMEOUT_MS 3000 /* one GET /__whoami to the worktree's server */
#define DOC_WALK_MAX_MS 5000       /* counting this tree's folders */
#define DOC_WALK_MAX_DIRS 1000000
#define DOC_PG_TIMEOUT_S "3"       /* connect_timeout to the app's database server */
#define DOC_PG_STATEMENT_MS "3000" /* and each statement there */
#define DOC_LOAD_PER_CPU_MAX 1.5   /* above: timing-sensitive tests start to fail */
#define DOC_PG_FREE_MIN 10         /* connections left for a test run's workers */

enum doc_status { DOC_OK, DOC_PROBLEM, DOC_SKIP };

struct doc_result {
    enum doc_status status;
    char detail[2048]; /* what was found */
    char fix[1024];    /* with a problem: the one command that fixes it */
};

struct doc_ctx {
    int front;           /* the front port checked */
    char front_from[64]; /* where front came from: "--front", "playwright.config.ts baseURL"... */
    int front_in_tests;  /* front_from is the Playwright config: the tests name that port */
    int front_given;     /* by --front; else the .wtproxy's first (cli/front.c) */
    int have_wt;         /* the cwd is in a worktree */
    struct host_worktree wt;
    char wt_err[PATH_MAX + 256];
    int has_file;        /* the worktree has a .wtproxy: the daemon starts its servers from it */
    int main_has_file;   /* the main checkout has one (its worktrees' callers are placed) */
    char file_err[1024]; /* why the daemon refuses the worktree's; "" when it does not */
    char start[2048];    /* the start command it declares on front; "" none */
    int nfronts;         /* the front ports that .wtproxy declares, one per service */
    int fronts[WTFILE_MAX_SERVICES];
    char front_svc[WTFILE_MAX_SERVICES][REG_SERVICE_MAX]; /* each one's service, "" unnamed */
    char front_start[WTFILE_MAX_SERVICES][2048];          /* and its start command */
    json_t *ping; /* the daemon's ping reply; NULL: no daemon */
    char daemon_err[512];
    json_t *entry; /* this worktree's entry on front (borrowed from entries) */
    json_t *entries;
};

/* Each fills r. doctor_checks.c: the daemon and this worktree's server. */
void doc_daemon(struct doc_ctx *c, struct doc_result *r);
void doc_worktree(struct doc_ctx *c, struct doc_result *r);
void doc_server(struct doc_ctx *c, struct doc_result *r);
void doc_whoami(struct doc_ctx *c, struct doc_result *r);

/* doctor_python.c: the .wtproxy's Python imports the middleware, the
 * framework its start runs, and (doctor_pyapp.c) the app module it serves. */
void doc_python(struct doc_ctx *c, struct doc_result *r);
/* doctor_pyapp.c: the module a start serves into out, and where its name
 * begins in start into *at (at may be NULL): "admin.main" of `... -m
 * uvicorn admin.main:app ...` (uvicorn's first argument with a colon),
 * "app" of `flask --app app run`. -1 for another server, a module uvicorn
 * finds in --app-dir, or a path (--app src/app.py). */
int doc_py_served_module(const char *start, char *out, size_t len, const char **at);
/* doctor_pyapp.c: the app module a uvicorn or flask start serves does not
 * import with python (the start up to its interpreter, its `cd` kept;
 * label: what to call it): r says what it lacks, and the fix. 0 when it
 * imports, or the start serves none such. */
int doc_pyapp_missing(const struct doc_ctx *c, const char *python, const char *label,
                      struct doc_result *r);
/* doctor_node.c: the .wtproxy's Node start finds the middleware, and so
 * do its other Node services' starts; 0 when c's start is no Node one (r
 * untouched). */
int doc_node(struct doc_ctx *c, struct doc_result *r);
/* doctor_node.c: the node_modules/wtproxy-whoami Node finds from dir
 * (absolute) as it resolves a bare name, into found; -1 when no folder from
 * dir up holds one. */
int doc_node_resolve(const char *dir, char *found, size_t len);
/* doctor_node.c: the fix of a Node or Vite server without /__whoami into
 * fix, which init --apply does not write (it only notes them): the Vite
 * plugin in its config, or the Node middleware, then restart (the command
 * that restarts it); only restart when the config lists the plugin (the
 * server predates it). 0 when the .wtproxy's start is no Node one. */
int doc_node_whoami_fix(const struct doc_ctx *c, const char *restart, char *fix, size_t len);

/* doctor_env.c: the machine and the app around it. */
void doc_inotify(struct doc_ctx *c, struct doc_result *r);
void doc_playwright(struct doc_ctx *c, struct doc_result *r);
void doc_leases(struct doc_ctx *c, struct doc_result *r);
void doc_databases(struct doc_ctx *c, struct doc_result *r);
void doc_load(struct doc_ctx *c, struct doc_result *r);

/* doctor_goembed.c: a Go server built by the whoami-protocol recipe
 * fingerprints every file its //go:embed lines embed. */
void doc_go_embed(struct doc_ctx *c, struct doc_result *r);
/* doctor_goembed.c: whether start (a .wtproxy's, run in the worktree root)
 * runs `wtproxy fingerprint`, in its line or in a script of the worktree
 * it runs by its path. */
int doc_start_fingerprints(const char *root, const char *start);

/* doctor_vite.c: the Vite config of each .wtproxy service's folder
 * proxies only to fronts the .wtproxy declares. */
void doc_vite_proxy(struct doc_ctx *c, struct doc_result *r);
/* doctor_ng.c: the localhost ports the proxy config of an `ng serve` start
 * run in dir sends to (at most max), its name (relative to dir) into
 * name; 0 when start runs no ng or names no proxy config. */
int doc_ng_proxy_ports(const char *dir, const char *start, int *ports, int max, char *name,
                       size_t len);

/* doctor_devdb.c: adds to r (the databases check) when the dev database
 * this worktree's settings derive is missing or another checkout's. */
struct pg_conn;
void doc_dev_database(struct doc_ctx *c, struct pg_conn *conn, struct doc_result *r);

/* doctor_dbenv.c: an env file `wtproxy db claim --write-env FILE` wrote,
 * found by the database names it holds (WTPROXY_DEV_DB, WT_TEST_DB) among
 * the `.env*` files of a worktree's top or of a direct subfolder (an app
 * in api/ claims there). */
#define DOC_DBENV_MAX 4096 /* bytes of such a file read; a claim writes a few lines */
struct doc_dbenv {
    char rel[PATH_MAX]; /* its path relative to the worktree: .env.wt, api/.env.wt */
    char dev[64];       /* the dev database it names (WTPROXY_DEV_DB), "" none */
    char test[64];      /* the test database (WT_TEST_DB), "" none */
};
/* The first one in root whose dev database is dev (NULL: any) into e;
 * -1 when there is none. */
int doc_dbenv_find(const char *root, const char *dev, struct doc_dbenv *e);

/* doctor.c: the command that adopts wtproxy here, into out: `wtproxy init
 * --apply`, or, where that finds no app, the init of the subfolder c's
 * start runs in (`cd api && ...`), else of each subfolder's app (a top
 * folder of api/ and web/ only: init there refuses, naming those).
 * Returns 1 for an init, 0 where init knows no app (the guides). */
int doc_init_fix(const struct doc_ctx *c, char *out, size_t len);

/* Set r to status with a printf-style detail. */
void doc_set(struct doc_result *r, enum doc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
