/* front.h - a worktree's .wtproxy as the daemon's own parser reads it:
 * the one reader of "which front port" for every command (the rule is at
 * the top of cli/front.c). Internal to cli/. */
#ifndef WTP_CLI_FRONT_H
#define WTP_CLI_FRONT_H

#include <jansson.h>
#include <stddef.h>

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

/* ":5173 (web), :3001 (api)": w's services' fronts, for messages. */
void cli_wtproxy_list(const struct cli_wtproxy *w, char *out, size_t len);

#endif
