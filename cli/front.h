/* front.h - a worktree's .wtproxy as the daemon's own parser reads it:
 * the one reader of "which front port" for every command (the rule is at
 * the top of cli/front.c). Internal to cli/. */
#ifndef WTP_CLI_FRONT_H
#define WTP_CLI_FRONT_H

#include <jansson.h>
#include <stddef.h>

#include "registry.h" /* REG_SERVICE_MAX */

struct wtfile;

struct cli_wtproxy {
    int from;            /* 0 none; 1 the worktree's own; 2 its main checkout's */
    char err[1024];      /* it does not parse: the parser's "FILE:LINE: what"; else "" */
    struct wtfile *file; /* its services when it parses, else NULL */
};

/* Read dir's worktree's .wtproxy (dir itself when it is in none) into w,
 * else its main checkout's. 0, or -1 with w->err. Free with
 * cli_wtproxy_free. */
int cli_wtproxy_read(const char *dir, struct cli_wtproxy *w);
void cli_wtproxy_free(struct cli_wtproxy *w);

/* The front w gives service, or without one (NULL) the front of its one
 * service; 0 when it gives none (no file, no such service, a file that
 * does not parse), -1 when its services are on several fronts. */
int cli_wtproxy_service_front(const struct cli_wtproxy *w, const char *service);

/* The fronts a command judges a worktree's requests on without --front,
 * into fronts (WTFILE_MAX_SERVICES): each w declares, in file order; else
 * the one port the daemon of ping (NULL: none answers) listens on; else
 * 8000. Returns how many (>= 1). */
int cli_wtproxy_fronts(const struct cli_wtproxy *w, json_t *ping, int *fronts);

/* A server's command line (run, register, unregister), for
 * cli_server_front: what it is matched on and what a refusal repeats. */
struct cli_server_cmd {
    const char *name; /* "run", "register" or "unregister" */
    int argc;         /* its arguments as given, after its name */
    char **argv;
    int cmdc; /* run's CMD ARGS as given ({port} as written); 0 and NULL for the others */
    char **cmdv;
    char service[REG_SERVICE_MAX]; /* out: the service run's CMD is the start of, else "" */
};

/* The front a server of dir registers on without --front (run, register,
 * unregister): the one the worktree's .wtproxy gives it (service's, or
 * its one service's), as the daemon starts that server and the app's tests
 * call it there. Of services on several fronts: the one whose start run's
 * CMD is (c->service names it), else -1, refused with each service's
 * command printed (exit 2: nothing is started). Without a file: the one
 * port the daemon listens on (started now when start_daemon and none
 * answers, as the command would start it); else 8000, with a warning when
 * the file does not parse (refused, -1, when the daemon listens on
 * several: 8000 would be a guess among them). A front the daemon does not
 * listen on is warned about by run. */
int cli_server_front(const char *dir, const char *service, struct cli_server_cmd *c,
                     int start_daemon);

/* Of w's services on several fronts, the one c is (front_pick.c): the one
 * run's CMD is the start of, its name in c->service, said. Returns its
 * front, or -1 (c is refused: each service with the command that names it,
 * printed). */
int cli_wtproxy_pick(const struct cli_wtproxy *w, struct cli_server_cmd *c);

/* c's refusal when w does not parse (w->err) and the daemon listens on
 * several fronts (listen: its ping's list): which is this server's is a
 * guess, 8000 perhaps another service's. Says the parser's error and the
 * command with each --front the daemon listens on. */
void cli_wtproxy_refuse_unparsed(const struct cli_wtproxy *w, const struct cli_server_cmd *c,
                                 json_t *listen);

/* ":5173 (web), :3001 (api)": w's services' fronts, for messages. */
void cli_wtproxy_list(const struct cli_wtproxy *w, char *out, size_t len);

#endif
