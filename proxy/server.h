/* server.h - the daemon: event loop, listeners, signals, the live clients. */
#ifndef WTP_SERVER_H
#define WTP_SERVER_H

#include <event2/event.h>
#include <stdarg.h>
#include <sys/queue.h>

#include "pool.h"
#include "config.h"
#include "registry.h"
#include "sd_listen.h"

struct proxy_client;
struct proxy_handler;
struct proxy_signals;

struct proxy_listener {
    struct proxy_server *srv;
    struct event *ev; /* readable: a connection to accept (listener.c) */
    int fd;
    char name[80]; /* "127.0.0.1:8000", "[::1]:8000": the Host of last resort */
    int port;      /* the front port, which registrations are keyed by */
    int nodelay;   /* TCP_NODELAY is set on it: accepted sockets inherit it */
};

struct proxy_server {
    struct event_base *base;
    struct proxy_config cfg;
    int argc; /* `serve` arguments, kept for SIGHUP */
    char **argv;
    struct reg_backend *backend; /* the default backend, NULL = none */
    struct reg_server *reg;      /* registrations and the control socket */
    struct identify *ident;      /* caller identification, NULL when unavailable */
    struct ondemand *ondemand;   /* servers started from .wtproxy files */
    struct whoami_gate *gate;    /* the /__whoami gate; NULL with whoami = off */
    struct proxy_pool *pool;
    struct refusal_log *refusals;        /* what wtproxy refused lately, for the dashboard */
    struct log_flood *flood;             /* repeated log lines collapsed; NULL: none */
    struct dash *dash;                   /* the dashboard's event streams */
    const struct proxy_handler *handler; /* requests it answers itself (handler.h), NULL none */
    struct proxy_listener listeners[WTP_MAX_LISTEN * 2];
    int nlisteners;
    struct proxy_sd_socket
        inherited[WTP_SD_MAX_FDS]; /* from systemd; served instead of cfg.listen */
    int ninherited;
    struct proxy_sd_socket control;  /* the control socket from systemd; fd -1: we bind it */
    int accepting;                   /* listeners enabled */
    unsigned max_clients;            /* max_connections, or what the open-file limit allows */
    struct event *accept_retry;      /* accepting again after running out of fds */
    unsigned long long fd_warned_ms; /* when running out of fds was last said */
    unsigned nclients;
    TAILQ_HEAD(, proxy_client) clients;
    int stopping;
    struct proxy_signals *signals; /* SIGTERM, SIGINT, SIGHUP and their senders */
    struct event *stop_timer;
    char user[96]; /* "uid 1000 (alice)": whose daemon this is, for pages; read once at start */
};

/* `wtproxy serve ARGS`: returns the process exit status (0 after a clean
 * stop, 1 when it cannot start, 2 for bad arguments). */
int proxy_serve(int argc, char **argv);

/* reload_keys.c: the keys of cfg, just read by a reload, that apply only
 * at the daemon's start, each one changed named in the log with the
 * restart that applies it, and set back to s's running value. */
void proxy_keep_start_only(struct proxy_server *s, struct proxy_config *cfg);

/* The daemon's arguments after `serve`, as its state file keeps them for
 * the start that follows its death (a --registry's password masked; the
 * config file named when $WTPROXY_CONFIG gave it). New reference. */
struct json_t *proxy_start_flags(const struct proxy_server *s);

/* A client connection ended; the server forgets it (and, while stopping,
 * exits when it was the last). */
void proxy_server_client_gone(struct proxy_server *s, struct proxy_client *c);

/* The longest line of the daemon's log: a refusal's, its detail with
 * whose server it is (client_fail.c's whose, 5 * PATH_MAX + 1024 at most)
 * and its fix (CONN_FIX_MAX), a traceback's lines among them. A longer
 * line is cut where a UTF-8 character begins and ends with " (cut)". */
#define WTP_LOG_LINE_MAX (64 * 1024)

/* One line on stderr, "wtproxy: " first (daemon_log.c); the loop's only. */
void proxy_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* proxy_log with the arguments as a va_list (log_flood.c's). */
void proxy_vlog(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Cap the daemon's log when stderr is a regular file (daemon_log.c):
 * past host_log_max_bytes() it becomes FILE.1 and a new FILE starts. */
void proxy_log_cap(void);

/* Current time in milliseconds, from the loop's cached clock. */
unsigned long long proxy_now_ms(struct proxy_server *s);

#endif
