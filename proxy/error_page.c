/* error_page.c - see error_page.h. */
#include "error_page.h"

#include "proxy_limits.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WTP_STR_(x) #x
#define WTP_STR(x) WTP_STR_(x)

struct error_kind {
    int status;
    const char *title;  /* status text */
    const char *reason; /* X-Wtproxy-Error */
    const char *message;
    const char *fix;
};

static const struct error_kind kinds[] = {
    [PE_BAD_REQUEST] =
        {400, "Bad Request", "bad-request",
         "wtproxy refused a malformed HTTP request; nothing of it reached a backend.",
         "Send a well-formed HTTP/1.1 request (CRLF line ends, one Host, one framing header)."},
    [PE_REQUEST_LINE_TOO_LONG] =
        {414, "URI Too Long", "request-line-too-long",
         "The request line is longer than wtproxy's max_request_line.",
         "Shorten the URL, or raise max_request_line in the wtproxy config and send SIGHUP."},
    [PE_HEAD_TOO_LARGE] =
        {431, "Request Header Fields Too Large", "head-too-large",
         "The request head is larger than wtproxy's max_head_size.",
         "Send fewer or smaller headers (often: too many cookies), or raise max_head_size."},
    [PE_TOO_MANY_HEADERS] =
        {431, "Request Header Fields Too Large", "too-many-headers",
         "The request has more header lines than wtproxy's max_header_count.",
         "Send fewer headers, or raise max_header_count in the wtproxy config."},
    [PE_HEAD_TIMEOUT] =
        {408, "Request Timeout", "head-timeout",
         "The request head did not arrive within wtproxy's head_timeout.",
         "Send the whole request head at once; raise head_timeout for a slow client."},
    [PE_UNSUPPORTED_TE] =
        {501, "Not Implemented", "unsupported-transfer-coding",
         "The request's body uses a transfer coding wtproxy does not implement (only chunked).",
         "Send the body with Content-Length or Transfer-Encoding: chunked."},
    [PE_UNSUPPORTED_METHOD] =
        {501, "Not Implemented", "unsupported-method",
         "wtproxy is a reverse proxy for dev servers and does not tunnel CONNECT.",
         "Send the request to wtproxy directly, without CONNECT."},
    [PE_METHOD_TOO_LONG] =
        {501, "Not Implemented", "method-too-long",
         "The request's method is longer than any wtproxy relays (" WTP_STR(
             WTP_MAX_METHOD) " bytes, WTP_MAX_METHOD); nothing of it reached a backend.",
         "Send a method of at most " WTP_STR(WTP_MAX_METHOD) " bytes: standard and extension "
                                                             "methods alike are relayed."},
    [PE_NO_BACKEND] =
        {503, "Service Unavailable", "no-backend", "No dev server is registered for this request.",
         "Start your dev server through wtproxy, from its worktree: wtproxy run{front} -- <server "
         "command with {port}> (or give wtproxy a default: wtproxy serve --backend HOST:PORT)"},
    [PE_AMBIGUOUS_WORKTREE] =
        {409, "Conflict", "ambiguous-worktree",
         "The worktree name in this request matches several registered worktrees.",
         "Name the worktree by its full path: X-Wtproxy-Worktree: /path/to/worktree"},
    /* 421, not 403: a test runner takes 2xx, 3xx and 400-403 for a ready
     * server (Playwright's webServer url), so a 403 here had another
     * user's suite skip its server's start and run against this page, and
     * a test expecting its app's own 403 pass on it. 421, as
     * checkout-mismatch: this daemon cannot answer for the caller's code. */
    [PE_OTHER_USER] = {421, "Misdirected Request", "other-user",
                       "This request is another user's than the dev server or the daemon it "
                       "would reach: wtproxy never serves one user's requests with another "
                       "user's code, nor starts another user's server.",
                       "Start your own dev server, as yourself: wtproxy run{front} -- <server "
                       "command with {port}>"},
    [PE_BACKEND_NOT_READY] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree did not become ready in time.",
         "Read the dev server's output for why it does not start: wtproxy logs{front} (in its "
         "worktree); or raise start_timeout in the daemon's config file and send it SIGHUP."},
    [PE_BACKEND_EXITED] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree exited before it listened; no request reached it.",
         "Read why in its output: wtproxy logs{front} (in its worktree); once that is fixed, "
         "send the request again: it starts the server its .wtproxy declares again."},
    [PE_BACKEND_ENDED] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree served, then exited (an edit may have broken it, or "
         "the restart after one: its output says why); this request did not reach it.",
         "Read why in its output: wtproxy logs{front} (in its worktree); once that is fixed, "
         "send the request again: it starts the server its .wtproxy declares again."},
    [PE_AFTER_NOT_READY] =
        {503, "Service Unavailable", "backend-not-ready",
         "A service this dev server is started after (its .wtproxy's `after`) did not become "
         "ready, so wtproxy did not start this one; no request reached either.",
         "Read why that service did not start: the wtproxy logs command above (in its "
         "worktree); once that is fixed, send the request again: it starts the services the "
         ".wtproxy declares again. A service must listen on its {port}: a background worker "
         "that serves no HTTP goes in the start of the server it works for (wtproxy help "
         "wtproxy-file, \"Background workers\")."},
    [PE_START_FAILED] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree failed at start and waits for a change to its files "
         "(its autoreloader lives on; it does not listen, or answers each request with its "
         "error); no request reached it.",
         "Fix the error its last lines above name and save the file: its autoreloader starts "
         "it again, and the next request is served. A fix outside the files it watches "
         "(uvicorn --reload watches *.py only: an .env file, a config read at start) starts "
         "nothing: then wtproxy restart{front} (in its worktree). All its output: wtproxy "
         "logs{front} (in its worktree)."},
    [PE_EDIT_FAILED] =
        {503, "Service Unavailable", "backend-not-ready",
         "An edit broke the dev server of this worktree: it was serving, its autoreloader "
         "restarted it after a change to its files, and the new server failed; it serves no "
         "request until the next change (it does not listen, or answers each with its error); "
         "no request reached it.",
         "Fix the error its last lines above name and save the file: its autoreloader starts it "
         "again, and the next request is served. All its output: wtproxy logs{front} (in its "
         "worktree)."},
    [PE_FIXED_UNSEEN] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree failed and waits for a change to its files; they "
         "changed since it failed, yet its reloader did not start it again (one that took its "
         "first look at them after the save never does); no request reached it.",
         "Restart it: wtproxy restart{front} (in its worktree). All its output: wtproxy "
         "logs{front}."},
    [PE_WRONG_PORT] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree started, but it listens on another port than the one "
         "wtproxy gave it (which one is said below): its start command ignores {port} and "
         "$PORT; no request reached it.",
         "Put {port} where its command takes its port (the .wtproxy's `start`, or the command "
         "after `wtproxy run --`): vite --port {port} --strictPort, flask run --port {port}, "
         "manage.py runserver 127.0.0.1:{port}, next dev -p {port}; then start it again: "
         "wtproxy restart{front} (in its worktree)."},
    [PE_SERVER_DIED] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree served, then the process that served died (how is "
         "said below: killed, or crashed) while its autoreloader lives on and starts no new "
         "one: nobody answers on its port (or connections wait there, when the reloader "
         "holds it); no request reached it.",
         "Restart it, its reloader and all: wtproxy restart{front} (in its worktree). Its "
         "reloader starts a new one only after a change to a file it watches. All its output: "
         "wtproxy logs{front}."},
    [PE_START_NO_DB] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree failed at start: the database it runs on, this "
         "worktree's own dev database, does not exist (its autoreloader lives on, it does not "
         "listen); no request reached it.",
         "Claim and migrate that database as the line above says, in its worktree; then start "
         "the server again: wtproxy restart{front}. No file of the app needs a change."},
    [PE_START_DB_DOWN] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree failed at start: the PostgreSQL server it runs on "
         "refused its connection (it is not running, or not on that port); its autoreloader "
         "lives on, it does not listen; no request reached it.",
         "Start that database server as the line above says; then start the dev server again: "
         "wtproxy restart{front}. No file of the app needs a change."},
    [PE_START_NO_WHOAMI] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree failed: it imports wtproxy's /__whoami middleware "
         "package, which this worktree (or its python) lacks; it does not listen; no request "
         "reached it.",
         "Link the package with the command above, in its worktree (no file of the app needs a "
         "change, and no registry has wtproxy's package); then start the server again: wtproxy "
         "restart{front}."},
    [PE_START_NO_DEPS] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree failed: a package the app needs is not installed "
         "where it runs (a new worktree starts without them; a branch may have added one); "
         "its autoreloader lives on, it does not listen; no request reached it.",
         "Install them with the command above, in its worktree (no file of the app needs a "
         "change; saving one does not help: the autoreloader waits for the app's files); then "
         "start the server again: wtproxy restart{front}."},
    [PE_APP_ERROR] =
        {503, "Service Unavailable", "backend-not-ready",
         "The dev server of this worktree fails to load its app: it answers every request with "
         "an error and a Python traceback (its last lines are below); no request reached it.",
         "Fix the error the traceback names and save the file: its autoreloader loads the app "
         "again, and the next request is served (a server without one: restart it, wtproxy "
         "restart{front}). All its output: wtproxy logs{front} (in its worktree)."},
    [PE_BROKEN] =
        {503, "Service Unavailable", "backend-not-ready",
         "A change to its files broke the dev server of this worktree: it answered /__whoami "
         "until they changed, and now answers it with an error (its first lines are below); "
         "no request reached it.",
         "Fix the error and save the file (a server that reloads itself, or that wtproxy "
         "restarts on a change, is served at the next request), or restart it: wtproxy "
         "restart{front}. All its output: wtproxy logs{front} (in its worktree)."},
    [PE_BAD_WTPROXY_FILE] =
        {503, "Service Unavailable", "bad-wtproxy-file",
         "This worktree's .wtproxy declares its dev server, but wtproxy cannot read it; no "
         "server was started.",
         "Correct the line of the .wtproxy named above (it lists the keys a .wtproxy may "
         "have); wtproxy doctor, run in the worktree, checks the file again."},
    [PE_BACKEND_UNREACHABLE] =
        {502, "Bad Gateway", "backend-unreachable", "wtproxy could not connect to the dev server.",
         "Read why the dev server stopped answering: wtproxy logs{front} (in its worktree); "
         "then start it again from there: wtproxy restart{front} (which also starts a server "
         "the worktree's .wtproxy declares after it died), or, for one you started yourself, "
         "wtproxy run{front} -- <server command with {port}>."},
    [PE_BACKEND_HANGS] =
        {502, "Bad Gateway", "backend-unreachable",
         "wtproxy connected to the dev server, but it sent no answer in time, each time it was "
         "asked for reload_grace: it takes connections and answers nothing (an app that failed "
         "to load under a server that lives on, a reload waiting for connections to close).",
         "Read why it stopped answering in its output: wtproxy logs{front} (in its worktree); "
         "fix the error it names and save, or, when it names none, start it again from there: "
         "wtproxy restart{front}."},
    [PE_BACKEND_BAD_RESPONSE] =
        {502, "Bad Gateway", "backend-bad-response",
         "The dev server sent a malformed response, or closed before its response head.",
         "Read the dev server's output for a crash or an error at this request: wtproxy "
         "logs{front} (in its worktree); then restart it: wtproxy restart{front}."},
    [PE_BACKEND_TIMEOUT] =
        {504, "Gateway Timeout", "backend-timeout",
         "The dev server accepted the request but sent no response head in time.",
         "Find the request stuck in the dev server (its output: wtproxy logs{front}, in its "
         "worktree), or raise response_timeout in the daemon's config file and send it SIGHUP."},
    [PE_IDENTIFY_TIMEOUT] =
        {503, "Service Unavailable", "identify-timeout",
         "wtproxy could not find which process opened this connection in time (WTP_IDENTIFY_"
         "TIMEOUT_MS, " WTP_STR(
             WTP_IDENTIFY_TIMEOUT_MS) " ms): the machine is too busy to "
                                      "read /proc. It did not guess a worktree for it.",
         "Retry the request; if it recurs, lower the machine's load, or name the worktree with "
         "X-Wtproxy-Worktree: /path/to/worktree (or <name>.localhost)."},
    [PE_OUT_OF_FDS] =
        {503, "Service Unavailable", "out-of-fds",
         "wtproxy ran out of file descriptors (or kernel memory) for a connection to the dev "
         "server; the dev server was not asked and is not at fault.",
         "Retry the request. Raise wtproxy's open-file limit (ulimit -Hn before wtproxy serve, "
         "LimitNOFILE= in its systemd unit) or lower max_connections."},
    [PE_CHECKOUT_MISMATCH] =
        {421, "Misdirected Request", "checkout-mismatch",
         "The server on your worktree's port serves another checkout; wtproxy refused to let "
         "it answer for yours.",
         "Stop the server named above and start your own (the command is above)."},
    [PE_STALE_CODE] =
        {409, "Conflict", "stale-code",
         "Your dev server runs older code than the code on disk now; wtproxy refused to let "
         "it answer.",
         "Restart the server (the command is above); wtproxy run --restart-on-stale does it "
         "for you. If it wrote the files named itself (a data store, uploads), leave them out "
         "of its fingerprint instead (wtproxy help whoami): its next write would stale it again."},
    [PE_NO_WHOAMI] =
        {502, "Bad Gateway", "no-whoami",
         "The dev server does not answer GET /__whoami, so wtproxy cannot tell which "
         "checkout and which code it serves.",
         "Restart the server if it started before its /__whoami was added; else give it one "
         "(above: a middleware of wtproxy help whoami, or, for a Go or other server no "
         "middleware covers, wtproxy help whoami-protocol) and restart it; or run wtproxy serve "
         "--trust-registry (above: what it watches for this server)."},
    [PE_WHOAMI_INVALID] =
        {502, "Bad Gateway", "whoami-invalid",
         "The dev server's answer to GET /__whoami is not one wtproxy can use.",
         "Fix the server's /__whoami (wtproxy help whoami-protocol), or restart it if it hangs."},
};

int error_page_status(enum proxy_error e)
{
    return kinds[e].status;
}
const char *error_page_reason(enum proxy_error e)
{
    return kinds[e].reason;
}

/* k's fix, each {front} in it written " --front N", or "" on the default
 * front (where the commands need no flag). */
static void fix_for(const struct error_kind *k, int front, char *out, size_t len)
{
    static const char mark[] = "{front}";
    char flag[24] = "";
    size_t used = 0;
    if (front > 0 && front != WTP_DEFAULT_FRONT_PORT)
        snprintf(flag, sizeof flag, " --front %d", front);
    out[0] = '\0';
    for (const char *p = k->fix; *p && used + 1 < len;) {
        int at_mark = strncmp(p, mark, sizeof mark - 1) == 0;
        int n = snprintf(out + used, len - used, at_mark ? "%s" : "%.1s", at_mark ? flag : p);
        used = n < 0 || used + (size_t)n >= len ? len - 1 : used + (size_t)n;
        p += at_mark ? sizeof mark - 1 : 1;
    }
}

void error_page_fix(enum proxy_error e, int front, char *out, size_t len)
{
    fix_for(&kinds[e], front, out, len);
}

/* Which binary the fixes' `wtproxy` commands mean, when a shell would not
 * find it by that name ("" when it would): set at start. */
static char program_line[2 * PATH_MAX + 96], program_path[PATH_MAX];

void error_page_set_program(const char *prog, const char *other)
{
    snprintf(program_path, sizeof program_path, "%s", prog);
    if (other && other[0])
        snprintf(program_line, sizeof program_line,
                 "`wtproxy` above is %s (the wtproxy on this daemon's PATH, %s, is another one)",
                 prog, other);
    else
        snprintf(program_line, sizeof program_line,
                 "`wtproxy` above is %s (no wtproxy is on this daemon's PATH)", prog);
}

/* The program line, when s names a wtproxy command ("wtproxy " not as the
 * end of ".wtproxy"); NULL otherwise. */
static const char *program_for(const char *s)
{
    for (const char *p = s && program_line[0] ? strstr(s, "wtproxy ") : NULL; p;
         p = strstr(p + 1, "wtproxy "))
        if (p == s || p[-1] != '.')
            return program_line;
    return NULL;
}

enum format { FMT_TEXT, FMT_HTML, FMT_JSON };

/* The first of HTML or JSON that Accept names wins; q-values are not
 * weighed: a browser lists text/html first, an API client application/json. */
static enum format format_for(const char *accept)
{
    if (!accept)
        return FMT_TEXT;
    const char *html = strstr(accept, "text/html");
    const char *json = strstr(accept, "application/json");
    if (html && (!json || html < json))
        return FMT_HTML;
    return json ? FMT_JSON : FMT_TEXT;
}

static void add_html_escaped(struct evbuffer *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            evbuffer_add(out, "&lt;", 4);
            break;
        case '>':
            evbuffer_add(out, "&gt;", 4);
            break;
        case '&':
            evbuffer_add(out, "&amp;", 5);
            break;
        case '"':
            evbuffer_add(out, "&quot;", 6);
            break;
        case '\'':
            evbuffer_add(out, "&#39;", 5);
            break;
        default:
            evbuffer_add(out, s, 1);
        }
    }
}

static void body_html(struct evbuffer *b, const struct error_kind *k, const char *detail,
                      const char *fix, const char *prog)
{
    evbuffer_add_printf(b,
                        "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
                        "<title>%d %s - wtproxy</title></head>\n<body>\n"
                        "<h1>%d %s</h1>\n<p>",
                        k->status, k->title, k->status, k->title);
    add_html_escaped(b, k->message);
    if (detail) {
        evbuffer_add_printf(b, "</p>\n<p><code style=\"white-space: pre-wrap\">");
        add_html_escaped(b, detail);
        evbuffer_add_printf(b, "</code>");
    }
    evbuffer_add_printf(b, "</p>\n<p><strong>Fix:</strong> ");
    add_html_escaped(b, fix);
    evbuffer_add_printf(b, "</p>\n");
    if (prog) {
        evbuffer_add_printf(b, "<p>");
        add_html_escaped(b, prog);
        evbuffer_add_printf(b, "</p>\n");
    }
    evbuffer_add_printf(b, "<p><small>X-Wtproxy-Error: %s</small></p>\n</body></html>\n",
                        k->reason);
}

static void body_json(struct evbuffer *b, const struct error_kind *k, const char *detail,
                      const char *fix, const char *prog)
{
    json_t *o = json_pack("{s:s, s:i, s:s, s:s}", "error", k->reason, "status", k->status,
                          "message", k->message, "fix", fix);
    if (o && detail)
        json_object_set_new(o, "detail", json_string(detail));
    if (o && prog) /* the binary itself: a client runs it */
        json_object_set_new(o, "program", json_string(program_path));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s) {
        evbuffer_add_printf(b, "%s\n", s);
        free(s);
    } else {
        evbuffer_add_printf(b, "{\"error\":\"%s\",\"status\":%d}\n", k->reason, k->status);
    }
    json_decref(o);
}

static void body_text(struct evbuffer *b, const struct error_kind *k, const char *detail,
                      const char *fix, const char *prog)
{
    evbuffer_add_printf(b, "wtproxy: %d %s: %s\n", k->status, k->title, k->message);
    if (detail)
        evbuffer_add_printf(b, "  %s\n", detail);
    evbuffer_add_printf(b, "Fix: %s\n", fix);
    if (prog)
        evbuffer_add_printf(b, "  %s\n", prog);
}

void error_page_write(struct evbuffer *out, enum proxy_error e, const char *accept,
                      const char *detail, const char *given_fix, int front, int close, int head)
{
    char own[ERROR_PAGE_FIX_MAX];
    static const char *const types[] = {"text/plain", "text/html", "application/json"};
    const struct error_kind *k = &kinds[e];
    enum format f = format_for(accept);
    struct evbuffer *body = evbuffer_new();
    if (!body)
        return;
    fix_for(k, front, own, sizeof own);
    const char *fix = given_fix ? given_fix : own;
    const char *prog = program_for(fix) ? program_line : program_for(detail);
    if (f == FMT_HTML)
        body_html(body, k, detail, fix, prog);
    else if (f == FMT_JSON)
        body_json(body, k, detail, fix, prog);
    else
        body_text(body, k, detail, fix, prog);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", k->status, k->title);
    if (e >= PE_CHECKOUT_MISMATCH) /* the gate's: a refusal, not an error */
        evbuffer_add_printf(out, "X-Wtproxy-Refused: %s\r\n", k->reason);
    evbuffer_add_printf(out,
                        "X-Wtproxy-Error: %s\r\n"
                        "Content-Type: %s; charset=utf-8\r\nContent-Length: %zu\r\n"
                        "Cache-Control: no-store\r\n%s\r\n",
                        k->reason, types[f], evbuffer_get_length(body),
                        close ? "Connection: close\r\n" : "");
    if (!head)
        evbuffer_add_buffer(out, body);
    evbuffer_free(body);
}
