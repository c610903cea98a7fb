/* dash_actions.c - the dashboard's actions: POST /__wtproxy/api/restart,
 * /api/stop and /api/start, answered by the control ops of the same names
 * (ops_servers.c), and what keeps every other web page from sending them.
 *
 * The dashboard shares its origin, localhost:8000, with the pages under
 * test, and any page the person opens can send a request there. An action
 * must prove it comes from the dashboard page (DASHBOARD.md, "Actions"):
 *   - POST only; a GET never acts;
 *   - Host a loopback name with the port the connection came to (DNS
 *     rebinding names another host);
 *   - Origin, when sent, exactly http://<that Host>; Sec-Fetch-Site, when
 *     sent, same-origin;
 *   - Content-Type application/json: a form or sendBeacon cannot send it
 *     across origins without a preflight;
 *   - X-Wtproxy-Token, the daemon's random secret, which only a
 *     same-origin read of /api/token gets; a custom header forces a CORS
 *     preflight, and no answer of ours ever carries an Access-Control-*
 *     header, so a cross-origin fetch never sends it.
 * The checks are made on the head (on_head), while its fields exist; the
 * body, at most WTP_DASH_ACTION_BODY_MAX bytes, is read after. The op
 * then runs as the user whose process holds the client's socket
 * (dash_client_uid: sock_diag, as caller identification asks it): the
 * daemon's own user or root, the only ones the dashboard answers
 * (dash.c); the ops themselves refuse any other uid's servers too. */
#include "dash.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conn.h"
#include "ops.h"

#define TOKEN_BYTES 32

/* One daemon per process: its secret, hex; "" until dash_actions_init. */
static char token[TOKEN_BYTES * 2 + 1];

struct action {
    const char *path;                                              /* after /__wtproxy */
    json_t *(*op)(struct proxy_server *s, uid_t uid, json_t *req); /* NULL: later */
    json_t *(*later)(struct proxy_server *s, uid_t uid, json_t *req, proxy_op_reply_cb cb,
                     void *arg, void **pending);
};

/* start reads the worktree's .wtproxy, which may take seconds on a slow
 * filesystem: a worker reads it while c waits (DASH_NOTE_START); so does
 * a restart that finds nothing running, to start what the file declares
 * (a service that crashed), as `wtproxy restart` does. */
static const struct action actions[] = {
    {"/api/restart", NULL, proxy_op_restart_or_start},
    {"/api/stop", proxy_op_stop, NULL},
    {"/api/start", NULL, proxy_op_start},
};

#define NACTIONS (sizeof actions / sizeof actions[0])

/* What each failed check answers: the check's name and the sentence. */
static const char *const check_names[] = {
    [DASH_CHECK_HOST] = "host",
    [DASH_CHECK_ORIGIN] = "origin",
    [DASH_CHECK_FETCH_SITE] = "sec-fetch-site",
    [DASH_CHECK_TYPE] = "content-type",
    [DASH_CHECK_TOKEN] = "token",
};
static const char *const check_msgs[] = {
    [DASH_CHECK_HOST] = "the Host is not a loopback name with this front port",
    [DASH_CHECK_ORIGIN] = "the request comes from another origin than the dashboard's (Origin)",
    [DASH_CHECK_FETCH_SITE] = "the browser says the request is not same-origin (Sec-Fetch-Site)",
    [DASH_CHECK_TYPE] = "the body is not Content-Type: application/json",
    [DASH_CHECK_TOKEN] = "the X-Wtproxy-Token header is missing or wrong",
};

int dash_actions_init(void)
{
    unsigned char raw[TOKEN_BYTES];
    if (RAND_bytes(raw, sizeof raw) != 1)
        return -1;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    OPENSSL_cleanse(raw, sizeof raw);
    return 0;
}

void dash_actions_end(void)
{
    OPENSSL_cleanse(token, sizeof token);
}

int dash_action_index(const char *sub)
{
    for (size_t i = 0; i < NACTIONS; i++)
        if (strcmp(sub, actions[i].path) == 0)
            return (int)i;
    return -1;
}

static int field_is(const struct http_field *f, const char *v)
{
    return f && f->vlen == strlen(v) && strncasecmp(f->value, v, f->vlen) == 0;
}

/* Whether host (the Host field) names the port c came to. */
static int host_port_ok(const struct proxy_client *c, const struct http_field *host)
{
    const char *end = host->value + host->vlen, *colon = end;
    while (colon > host->value && colon[-1] != ':' && colon[-1] != ']')
        colon--;
    if (colon == host->value || colon[-1] != ':')
        return 0;
    long port = 0;
    for (const char *p = colon; p < end && port <= 65535; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        port = port * 10 + (*p - '0');
    }
    return colon < end && port == c->listener->port;
}

/* Whether origin is exactly "http://" followed by the Host. */
static int same_origin(const struct http_field *origin, const struct http_field *host)
{
    static const char scheme[] = "http://";
    size_t n = sizeof scheme - 1;
    return origin->vlen == n + host->vlen && strncasecmp(origin->value, scheme, n) == 0 &&
           strncasecmp(origin->value + n, host->value, host->vlen) == 0;
}

static int is_json_type(const struct http_field *f)
{
    static const char t[] = "application/json";
    size_t n = sizeof t - 1;
    return f && f->vlen >= n && strncasecmp(f->value, t, n) == 0 &&
           (f->vlen == n || f->value[n] == ';' || f->value[n] == ' ');
}

int dash_action_check(const struct proxy_client *c, const struct http_msg *m)
{
    const struct http_field *host = http_msg_field(m, "host", NULL),
                            *origin = http_msg_field(m, "origin", NULL),
                            *site = http_msg_field(m, "sec-fetch-site", NULL),
                            *tok = http_msg_field(m, "x-wtproxy-token", NULL);
    if (!host || !host_port_ok(c, host))
        return DASH_CHECK_HOST;
    if (origin && !same_origin(origin, host))
        return DASH_CHECK_ORIGIN;
    if (site && !field_is(site, "same-origin"))
        return DASH_CHECK_FETCH_SITE;
    if (!is_json_type(http_msg_field(m, "content-type", NULL)))
        return DASH_CHECK_TYPE;
    if (!token[0] || !tok || tok->vlen != strlen(token) ||
        CRYPTO_memcmp(tok->value, token, tok->vlen) != 0)
        return DASH_CHECK_TOKEN;
    return DASH_CHECK_OK;
}

static void respond_json(struct proxy_client *c, const char *status, json_t *j)
{
    static const char oom[] = "wtproxy: out of memory\n";
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        dash_respond(c, "500 Internal Server Error", "text/plain; charset=utf-8", NULL, oom,
                     sizeof oom - 1);
        return;
    }
    dash_respond(c, status, "application/json; charset=utf-8", NULL, s, strlen(s));
    free(s);
}

/* The HTTP status of an op's reply. */
static const char *status_of(json_t *reply)
{
    const char *e = json_string_value(json_object_get(reply, "error"));
    if (json_is_true(json_object_get(reply, "ok")))
        return "200 OK";
    if (e && strcmp(e, "not-found") == 0)
        return "404 Not Found";
    if (e && strcmp(e, "not-permitted") == 0)
        return "403 Forbidden";
    if (e && strcmp(e, "bad-request") == 0)
        return "400 Bad Request";
    if (e && strcmp(e, "timeout") == 0)
        return "504 Gateway Timeout"; /* the start's .wtproxy read outlived start_timeout */
    if (e && strcmp(e, "stopping") == 0)
        return "503 Service Unavailable";
    if (e && strcmp(e, "unsupported") == 0)
        return "501 Not Implemented"; /* no .wtproxy reader: no start button works */
    if (e && strcmp(e, "internal") == 0)
        return "500 Internal Server Error";
    return "409 Conflict"; /* not-restartable, not-declared, bad-wtproxy-file */
}

/* proxy_op_reply_cb: the start c waited for is answered. */
static void start_done(void *arg, json_t *reply)
{
    struct proxy_client *c = arg;
    c->handler_job = NULL;
    c->handler_note = 0;
    respond_json(c, status_of(reply), reply);
}

void dash_action_gone(struct proxy_client *c)
{
    proxy_op_start_cancel(c->handler_job);
    c->handler_job = NULL;
}

/* The whole body is in c's input: run the action on it, as the user
 * whose process sent it; a start answers when its file is read. */
static void act(struct proxy_client *c, int which, size_t len)
{
    struct evbuffer *in = stream_input(c->bev);
    json_t *req = json_loadb((const char *)evbuffer_pullup(in, (ssize_t)len), len, 0, NULL);
    evbuffer_drain(in, len);
    c->req_done = 1;
    if (!json_is_object(req)) {
        json_decref(req);
        respond_json(c, "400 Bad Request",
                     reg_fail("bad-request", "the body is not a JSON object such as "
                                             "{\"worktree\": \"/abs/path\", \"front\": 8000}"));
        return;
    }
    const char *wt = json_string_value(json_object_get(req, "worktree"));
    uid_t uid;
    if (dash_client_uid(c, &uid) < 0) {
        json_decref(req);
        respond_json(c, "403 Forbidden",
                     reg_fail("forbidden",
                              "wtproxy cannot tell which user's process sent this "
                              "action (sock_diag found no socket); use wtproxy restart/stop"));
        return;
    }
    proxy_log("dashboard action %s for %s from %s (uid %u)", actions[which].path, wt ? wt : "?",
              c->ip, (unsigned)uid);
    json_t *reply = actions[which].op
                        ? actions[which].op(c->srv, uid, req)
                        : actions[which].later(c->srv, uid, req, start_done, c, &c->handler_job);
    json_decref(req);
    if (reply) {
        respond_json(c, status_of(reply), reply);
        return;
    }
    /* CS_HANDLER still, until the file is read or start_timeout passes
     * (the op's own timer: control-socket starts wait the same way). */
    c->handler_note = DASH_NOTE_START;
    conn_stop_timer(c);
}

/* Read on while the body is not all there (CS_HANDLER). */
static void try_body(struct proxy_client *c)
{
    size_t len = (size_t)c->req.parser.content_length;
    if (evbuffer_get_length(stream_input(c->bev)) >= len)
        act(c, c->handler_note - DASH_NOTE_BODY, len);
}

/* 403 for a request that failed check, naming it. */
static void forbid(struct proxy_client *c, int check)
{
    char msg[400];
    snprintf(msg, sizeof msg,
             "refused: %s; actions are taken from the dashboard page "
             "itself (wtproxy dashboard prints its URL), or with wtproxy restart/stop",
             check_msgs[check]);
    char what[96]; /* c->path is an action's or the token's: a few, known */
    snprintf(what, sizeof what, "dashboard refused %.56s: %s", c->path, check_names[check]);
    conn_log(c, what, "dashboard request %s from %s refused: %s", c->path, c->ip,
             check_msgs[check]);
    json_t *j = reg_fail("forbidden", "%s", msg);
    json_object_set_new(j, "check", json_string(check_names[check]));
    respond_json(c, "403 Forbidden", j);
}

void dash_action_serve(struct proxy_client *c, int which, int check)
{
    static const char post_only[] = "wtproxy: dashboard actions are POST requests only; a GET "
                                    "never acts\n";
    char msg[200];
    if (strncmp(c->path, "POST ", 5) != 0) {
        dash_respond(c, "405 Method Not Allowed", "text/plain; charset=utf-8", "Allow: POST\r\n",
                     post_only, sizeof post_only - 1);
        return;
    }
    if (check != DASH_CHECK_OK) {
        forbid(c, check);
        return;
    }
    if (c->req_chunked || c->req.parser.content_length > WTP_DASH_ACTION_BODY_MAX) {
        snprintf(msg, sizeof msg,
                 "send the action's JSON with a Content-Length of at most %d "
                 "bytes",
                 WTP_DASH_ACTION_BODY_MAX);
        respond_json(c, c->req_chunked ? "411 Length Required" : "413 Content Too Large",
                     reg_fail("bad-request", "%s", msg));
        return;
    }
    c->handler_note = DASH_NOTE_BODY + which;
    c->state = CS_HANDLER;
    conn_arm_timer(c, WTP_DASH_ACTION_BODY_MS);
    try_body(c);
}

int dash_action_waiting(const struct proxy_client *c)
{
    return c->state == CS_HANDLER && c->handler_note >= DASH_NOTE_BODY &&
           c->handler_note < DASH_NOTE_BODY + (int)NACTIONS;
}

void dash_action_read(struct proxy_client *c)
{
    try_body(c);
}

void dash_action_timeout(struct proxy_client *c)
{
    c->keepalive = 0;
    respond_json(c, "408 Request Timeout",
                 reg_fail("bad-request", "the action's body did not arrive in time: "
                                         "press the button again, or use wtproxy restart/stop"));
}

void dash_action_token(struct proxy_client *c, int check)
{
    if (check == DASH_CHECK_HOST || check == DASH_CHECK_ORIGIN || check == DASH_CHECK_FETCH_SITE)
        forbid(c, check);
    else
        respond_json(c, "200 OK",
                     json_pack("{s:s, s:s}", "token", token, "header", "X-Wtproxy-Token"));
}
