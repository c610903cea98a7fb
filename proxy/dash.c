/* dash.c - the dashboard's requests (see dash.h, DASHBOARD.md): which
 * requests are its, who may ask (loopback peers, loopback Host names, the
 * daemon's own user and root), and the answers: the page compiled from
 * dash/index.html, the JSON API and the event stream. */
#include "dash.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conn.h"
#include "dash_page.h"
#include "handler.h"
#include "host.h"
#include "refusal_log.h"

/* Every answer: never cached, never framed by another page, never sniffed
 * into another type; the page may load nothing from anywhere (no image, no
 * script but its own inline one), so text a hostile name smuggled into the
 * DOM could still fetch nothing. */
static const char security_headers[] =
    "Cache-Control: no-store\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "X-Frame-Options: DENY\r\n"
    "Referrer-Policy: no-referrer\r\n"
    "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n";

static const struct proxy_handler dash_handler;

/* One daemon per process: the loop's sock_diag socket, for the uid of a
 * client (NULL: none could be opened, diag_err says why, and every uid is
 * unknown), and the daemon's own user, "alice (uid 1000)", as the refusal
 * of another names it. */
static struct host_diag *diag;
static char diag_err[256];
static uid_t daemon_uid;
static char daemon_user[96];

/* What c->handler_note says about the request being read: the Host's
 * verdict in its low bits, an action's first failed check (dash.h) above. */
enum { DASH_LOCAL = 1, DASH_FOREIGN_HOST };
#define NOTE_HOST_MASK 0xf
#define NOTE_CHECK_SHIFT 4

int dash_start(struct proxy_server *s)
{
    s->handler = &dash_handler;
    daemon_uid = geteuid();
    host_uid_words(daemon_uid, daemon_user, sizeof daemon_user);
    if (!diag && !(diag = host_diag_open(diag_err, sizeof diag_err)))
        proxy_log("the dashboard answers no one (it cannot tell a client's user): %s", diag_err);
    if (dash_actions_init() < 0)
        proxy_log("the dashboard's actions are off: no random secret (RAND_bytes failed)");
    s->refusals = refusal_log_new();
    s->dash = s->refusals ? dash_events_new(s) : NULL;
    return s->refusals && s->dash ? 0 : -1;
}

void dash_listening(struct proxy_server *s)
{
    const char *names[WTP_MAX_LISTEN * 2];
    for (int i = 0; i < s->nlisteners; i++)
        names[i] = s->listeners[i].name;
    if (s->reg)
        reg_server_set_listen(s->reg, names, (size_t)s->nlisteners);
}

void dash_stop(struct proxy_server *s)
{
    s->handler = NULL;
    dash_events_free(s->dash);
    s->dash = NULL;
    refusal_log_free(s->refusals);
    s->refusals = NULL;
    dash_actions_end();
    host_diag_close(diag);
    diag = NULL;
}

int dash_client_uid(const struct proxy_client *c, uid_t *uid)
{
    struct sockaddr_storage local, peer;
    socklen_t llen = sizeof local, plen = sizeof peer;
    unsigned long inode;
    int fd = stream_fd(c->bev);
    if (!diag || getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
        return -1;
    return host_diag_socket(diag, (struct sockaddr *)&peer, (struct sockaddr *)&local, &inode, uid);
}

/* Whether the Host's name part is one only this machine resolves to us:
 * localhost, *.localhost, 127.x.y.z or [::1]. */
static int loopback_host(const char *v, size_t n)
{
    const char *end = v + n;
    if (n && v[0] == '[')
        return n >= 5 && strncmp(v, "[::1]", 5) == 0 && (n == 5 || v[5] == ':');
    const char *colon = memchr(v, ':', n);
    if (colon)
        end = colon;
    size_t len = (size_t)(end - v);
    static const char lh[] = "localhost", dotlh[] = ".localhost";
    if (len == sizeof lh - 1 && strncasecmp(v, lh, len) == 0)
        return 1;
    if (len > sizeof dotlh - 1 &&
        strncasecmp(end - (sizeof dotlh - 1), dotlh, sizeof dotlh - 1) == 0)
        return 1;
    char ip[INET_ADDRSTRLEN];
    struct in_addr a;
    if (len >= sizeof ip)
        return 0;
    memcpy(ip, v, len);
    ip[len] = '\0';
    return inet_pton(AF_INET, ip, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* The handler's on_head: DASH_LOCAL or DASH_FOREIGN_HOST by the Host
 * header (a loopback name, or a page of another site reaching 127.0.0.1
 * through DNS rebinding). */
static void note_head(struct proxy_client *c, const struct http_msg *m)
{
    const struct http_field *host = http_msg_field(m, "host", NULL);
    c->handler_note =
        !host || loopback_host(host->value, host->vlen) ? DASH_LOCAL : DASH_FOREIGN_HOST;
    c->handler_note |= dash_action_check(c, m) << NOTE_CHECK_SHIFT;
}

static int loopback_peer(const char *ip)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, ip, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, ip, &a6) != 1)
        return 0;
    if (IN6_IS_ADDR_V4MAPPED(&a6))
        return a6.s6_addr[12] == 127;
    return IN6_IS_ADDR_LOOPBACK(&a6);
}

/* Write one whole answer; the connection goes on to its next request when
 * the request was read to its end and the client keeps it. */
void dash_respond(struct proxy_client *c, const char *status, const char *type, const char *extra,
                  const void *body, size_t len)
{
    struct evbuffer *out = stream_output(c->bev);
    int keep = c->req_done && c->keepalive && !c->stopping && !c->srv->stopping;
    evbuffer_add_printf(out, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s%s\r\n",
                        status, type, len, security_headers, extra ? extra : "",
                        keep ? "" : "Connection: close\r\n");
    if (!c->is_head)
        evbuffer_add(out, body, len);
    c->resp_started = 1;
    if (keep)
        conn_next_request(c);
    else
        conn_close_after_flush(c);
}

static void respond_text(struct proxy_client *c, const char *status, const char *extra,
                         const char *text)
{
    char what[64];
    snprintf(what, sizeof what, "dashboard %s", status);
    conn_log(c, what, "%s: %s from %s", status, c->path, c->ip);
    dash_respond(c, status, "text/plain; charset=utf-8", extra, text, strlen(text));
}

static void respond_json(struct proxy_client *c, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    if (!s) {
        respond_text(c, "500 Internal Server Error", NULL, "wtproxy: out of memory\n");
        return;
    }
    dash_respond(c, "200 OK", "application/json; charset=utf-8", NULL, s, strlen(s));
    free(s);
}

/* "GET /__wtproxy/api/backends" -> "/api/backends"; the query is gone. */
static const char *sub_path(const struct proxy_client *c)
{
    const char *sp = strchr(c->path, ' ');
    return sp ? sp + 1 + sizeof WTP_DASH_PREFIX - 1 : "";
}

/* The 403 of a client who is not the daemon's user: JSON under /api/
 * (what a script reads, shaped as an action's refusal), else text (the
 * page, the event and log streams). uid is -1 when unknown. */
static void forbid_user(struct proxy_client *c, long long uid, const char *caller, const char *msg)
{
    conn_log(c, "dashboard refused: not the daemon's user",
             "dashboard request %s from %s refused: its process runs as %s, not as the "
             "daemon's user, %s",
             c->path, c->ip, caller, daemon_user);
    if (strncmp(sub_path(c), "/api/", 5) != 0) {
        char text[800];
        snprintf(text, sizeof text, "wtproxy: %s\n", msg);
        dash_respond(c, "403 Forbidden", "text/plain; charset=utf-8", NULL, text, strlen(text));
        return;
    }
    /* daemon_pid: another user's `wtproxy serve` meeting this port names
     * this daemon by it (proxy/port_stranger.c); ps shows it to all anyway. */
    json_t *j =
        json_pack("{s:b, s:s, s:s, s:s, s:I, s:I, s:o}", "ok", 0, "error", "forbidden", "check",
                  "user", "message", msg, "daemon_uid", (json_int_t)daemon_uid, "daemon_pid",
                  (json_int_t)getpid(), "uid", uid < 0 ? json_null() : json_integer(uid));
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (body)
        dash_respond(c, "403 Forbidden", "application/json; charset=utf-8", NULL, body,
                     strlen(body));
    else
        respond_text(c, "500 Internal Server Error", NULL, "wtproxy: out of memory\n");
    free(body);
}

/* Whether c was refused (403) for not being the daemon's user nor root.
 * The dashboard shows this user's servers' worktrees, commands and pids,
 * their logs (0600 files on disk), the refusals and the actions' token,
 * and any other user's process on the machine can reach the port. A
 * client whose uid cannot be found (sock_diag found no socket: the
 * connection is closing, or the daemon has no sock_diag socket) is
 * refused too: failing open would show it all to whoever makes the
 * lookup fail, while the daemon's user only has to load it again. */
static int user_refused(struct proxy_client *c)
{
    uid_t uid;
    char caller[96], msg[640];
    if (!diag) {
        snprintf(msg, sizeof msg,
                 "this is the wtproxy dashboard of %s, shown to that user and root only, and "
                 "this daemon cannot check whose process sent a request (%s), so it shows it "
                 "to no one; as that user, wtproxy ls and wtproxy refusals show the same",
                 daemon_user, diag_err);
        forbid_user(c, -1, "a user that could not be checked", msg);
        return 1;
    }
    if (dash_client_uid(c, &uid) < 0) {
        snprintf(msg, sizeof msg,
                 "this is the wtproxy dashboard of %s, shown to that user and root only, and "
                 "the user of the process that sent this request could not be checked (the "
                 "kernel's sock_diag found no socket for this connection: it may be closing); "
                 "load it again as that user: the URL wtproxy dashboard prints",
                 daemon_user);
        forbid_user(c, -1, "a user that could not be checked", msg);
        return 1;
    }
    if (uid == 0 || uid == daemon_uid)
        return 0;
    host_uid_words(uid, caller, sizeof caller);
    snprintf(msg, sizeof msg,
             "this is the wtproxy dashboard of %s, and your process runs as %s: a daemon shows "
             "its servers, their logs and its refusals to its own user and root only. Yours is "
             "on your own daemon: run wtproxy dashboard as yourself; it prints its URL",
             daemon_user, caller);
    forbid_user(c, uid, caller, msg);
    return 1;
}

/* The dashboard refusing a request is not a routing refusal: it goes to the
 * log as a line, not into the refusal log the dashboard shows. Actions
 * (POST) are judged by dash_action_serve once their user passed. */
static int refused(struct proxy_client *c, int action)
{
    int get = strncmp(c->path, "GET ", 4) == 0 || c->is_head;
    if (!loopback_peer(c->ip))
        respond_text(c, "403 Forbidden", NULL,
                     "wtproxy: the dashboard answers loopback clients only; open it on this "
                     "machine: wtproxy dashboard\n");
    else if ((c->handler_note & NOTE_HOST_MASK) == DASH_FOREIGN_HOST)
        respond_text(c, "403 Forbidden", NULL,
                     "wtproxy: the dashboard answers only requests addressed to localhost, "
                     "127.0.0.1 or [::1] (another Host is how a web page reaches it through DNS "
                     "rebinding); open the URL that wtproxy dashboard prints\n");
    else if (user_refused(c))
        return 1;
    else if (!get && !action)
        respond_text(c, "405 Method Not Allowed", "Allow: GET, HEAD\r\n",
                     "wtproxy: only GET and HEAD are answered here; the dashboard's actions "
                     "are POSTs to /__wtproxy/api/restart, /api/stop and /api/start\n");
    else
        return 0;
    return 1;
}

/* The PostgreSQL thread read the leases for parked c. */
static void leases_ready(void *arg, json_t *leases)
{
    struct proxy_client *c = arg;
    c->handler_job = NULL;
    respond_json(c, leases);
}

/* /api/leases: answered now from the embedded store; a PostgreSQL store
 * parks c (reads off, no timer: the PG thread's own timeouts bound the
 * wait) until its thread has read them. */
static void serve_leases(struct proxy_client *c)
{
    void *job = NULL;
    json_t *now = dash_api_leases(c->srv, leases_ready, c, &job);
    if (now || !job) { /* NULL and no job: out of memory, a 500 */
        respond_json(c, now);
        return;
    }
    c->handler_job = job;
    c->state = CS_HANDLER;
    stream_disable_read(c->bev);
    conn_stop_timer(c);
}

/* The handler's serve: the head of a dashboard request is parsed; answer
 * it (page, JSON, event stream, or 403/404/405). */
static void serve(struct proxy_client *c)
{
    const char *p = sub_path(c);
    int action = dash_action_index(p);
    if (refused(c, action >= 0))
        return;
    if (action >= 0)
        dash_action_serve(c, action, c->handler_note >> NOTE_CHECK_SHIFT);
    else if (strcmp(p, "") == 0 || strcmp(p, "/") == 0 || strcmp(p, "/index.html") == 0)
        dash_respond(c, "200 OK", "text/html; charset=utf-8", NULL, dash_page_html,
                     sizeof dash_page_html - 1);
    else if (strcmp(p, "/api/backends") == 0)
        respond_json(c, dash_api_backends(c->srv));
    else if (strcmp(p, "/api/refusals") == 0)
        respond_json(c, refusal_log_json(c->srv->refusals, 0));
    else if (strcmp(p, "/api/daemon") == 0)
        respond_json(c, dash_api_daemon(c->srv));
    else if (strcmp(p, "/api/leases") == 0)
        serve_leases(c);
    else if (strcmp(p, "/api/token") == 0)
        dash_action_token(c, c->handler_note >> NOTE_CHECK_SHIFT);
    else if (strncmp(p, "/log/", 5) == 0 && !c->is_head)
        dash_log_serve(c, p + 5);
    else if (strcmp(p, "/events") == 0 && c->is_head)
        dash_respond(c, "200 OK", "text/event-stream", NULL, "", 0);
    else if (strcmp(p, "/events") == 0)
        dash_events_serve(c);
    else
        respond_text(c, "404 Not Found", NULL,
                     "wtproxy: no such dashboard page; the dashboard is at /__wtproxy/ and its "
                     "API is described by wtproxy help dashboard-api\n");
}

/* The stream cannot start: too many are open, or memory ran out. */
void dash_events_refuse(struct proxy_client *c)
{
    char msg[200];
    snprintf(msg, sizeof msg,
             "wtproxy: %d dashboard event streams are open already; close a "
             "dashboard tab and reload\n",
             WTP_DASH_MAX_STREAMS);
    respond_text(c, "503 Service Unavailable", "Retry-After: 5\r\n", msg);
}

/* The handler's on_timer: an action waiting for its body, a log tail, an
 * event stream (a start's wait for its .wtproxy has the op's own timer). */
static void on_timer(struct proxy_client *c)
{
    if (dash_action_waiting(c))
        dash_action_timeout(c);
    else if (c->handler_note == DASH_NOTE_LOG)
        dash_log_tick(c);
    else if (dash_events_has(c))
        dash_events_heartbeat(c);
}

/* The handler's on_read: an action's body, else nothing wanted. */
static void on_read(struct proxy_client *c)
{
    if (dash_action_waiting(c))
        dash_action_read(c);
    else
        evbuffer_drain(stream_input(c->bev), evbuffer_get_length(stream_input(c->bev)));
}

/* The handler's on_close. */
static void on_close(struct proxy_client *c)
{
    if (c->handler_note == DASH_NOTE_LOG)
        dash_log_gone(c);
    else if (c->handler_note == DASH_NOTE_START)
        dash_action_gone(c);
    else if (c->handler_job)
        dash_api_leases_cancel(c->srv, c->handler_job);
    c->handler_job = NULL;
    dash_events_gone(c);
}

static const struct proxy_handler dash_handler = {
    .prefix = WTP_DASH_PREFIX,
    .prefix_len = sizeof WTP_DASH_PREFIX - 1,
    .on_head = note_head,
    .serve = serve,
    .on_read = on_read,
    .on_timer = on_timer,
    .on_close = on_close,
};
