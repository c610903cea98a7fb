/* verdict.c - the daemon's /__whoami verdict on servers a command just
 * made ready (restart) or added (register), waited for and put into the
 * command's own line. The daemon asks such a server itself
 * (proxy/verify.c) and its entry says "unchecked" until it has an answer
 * ("changed" or "taking-in" while an edit made meanwhile is asked about):
 * a command that returned before then left an agent to learn of a server
 * serving another checkout, or with no /__whoami, from its tests' first
 * 421 or 502. */
#include "cli.h"
#include "servers.h"

#include <stdio.h>
#include <string.h>

#include "error_page.h"
#include "host.h"

#define VERDICT_POLL_MS 100

const char *cli_verdict(json_t *x)
{
    const char *s = json_string_value(json_object_get(json_object_get(x, "whoami"), "state"));
    return s ? s : "";
}

int cli_verdict_pending(json_t *x)
{
    const char *v = cli_verdict(x);
    return strcmp(v, "unchecked") == 0 || strcmp(v, "changed") == 0 || strcmp(v, "taking-in") == 0;
}

json_t *cli_await_verdicts(const struct cli_server_args *a, json_t *asked, long wait_ms,
                           int (*may_answer)(json_t *x))
{
    char err[PATH_MAX + 256];
    json_t *now = NULL, *e;
    size_t i, pending = 1;
    for (long waited = 0; pending && waited <= wait_ms; waited += VERDICT_POLL_MS) {
        if (waited && cli_pause(VERDICT_POLL_MS) < 0)
            break;
        json_decref(now);
        if (!(now = cli_servers_matching(a, err, sizeof err)))
            now = json_array(); /* said by the caller as not known */
        pending = 0;
        json_array_foreach(asked, i, e) {
            json_t *x = cli_entry_on_front(now, e);
            pending += cli_verdict_pending(x) && (!may_answer || may_answer(x));
        }
    }
    return now;
}

/* Whether detail begins with the verdict v ("stale since 12:00:01, when
 * ..."): a line that says the detail says v once, not "stale: stale since". */
static int detail_says(const char *v, const char *detail)
{
    size_t n = strlen(v);
    return n && strncmp(detail, v, n) == 0 && detail[n] == ' ';
}

void cli_verdict_named(json_t *x, char *out, size_t outlen)
{
    const char *v = cli_verdict(x);
    const char *detail = json_string_value(json_object_get(json_object_get(x, "whoami"), "detail"));
    snprintf(out, outlen, " (%s)", v);
    if (detail_says(v, detail ? detail : ""))
        out[0] = '\0';
}

enum cli_verdict_kind cli_verdict_words(json_t *x, long wait_ms, char *out, size_t outlen)
{
    const char *v = cli_verdict(x);
    const char *detail = json_string_value(json_object_get(json_object_get(x, "whoami"), "detail"));
    detail = detail ? detail : "";
    if (!v[0]) {
        snprintf(out, outlen, "its /__whoami is not checked (the daemon runs with whoami = off)");
        return CLI_VERDICT_OFF;
    }
    if (strcmp(v, "unchecked") == 0) {
        snprintf(out, outlen, "its /__whoami gave no verdict within %ld s (see: wtproxy ls)",
                 (wait_ms + 999) / 1000);
        return CLI_VERDICT_UNDECIDED;
    }
    if (cli_verdict_pending(x)) { /* an edit is being taken in, or asked about */
        snprintf(out, outlen, "its /__whoami gave no verdict within %ld s: %s",
                 (wait_ms + 999) / 1000, detail);
        return CLI_VERDICT_UNDECIDED;
    }
    if (strcmp(v, "verified") == 0 || strcmp(v, "trusted") == 0) {
        snprintf(out, outlen, "%s: %s", v, detail);
        return CLI_VERDICT_PASS;
    }
    if (detail_says(v, detail))
        snprintf(out, outlen, "but %s", detail);
    else
        snprintf(out, outlen, "but %s: %s", v, detail);
    return CLI_VERDICT_REFUSED;
}

void cli_restart_asked(json_t *asked)
{
    size_t i;
    json_t *e;
    json_array_foreach(asked, i, e)
        json_object_set_new(e, "asked_mono_ms", json_integer(host_mono_ms()));
}

void cli_restart_seen_ready(json_t *e)
{
    json_t *asked = json_object_get(e, "asked_mono_ms");
    if (asked && !json_object_get(e, "took_ms"))
        json_object_set_new(e, "took_ms", json_integer(host_mono_ms() - json_integer_value(asked)));
}

enum cli_verdict_kind cli_verdict_restarted(json_t *e, json_t *now, char *out, size_t len)
{
    char words[1280], took[32] = "";
    const char *wt = json_string_value(json_object_get(e, "worktree"));
    enum cli_verdict_kind k =
        cli_verdict_words(cli_entry_on_front(now, e), CLI_VERDICT_WAIT_MS, words, sizeof words);
    if (json_object_get(e, "took_ms")) /* as a started one's line says it */
        snprintf(took, sizeof took, " in %.1f s",
                 json_integer_value(json_object_get(e, "took_ms")) / 1000.0);
    snprintf(out, len, "%s's server on front %lld restarted and ready%s%s%s", wt ? wt : "?",
             json_integer_value(json_object_get(e, "front")), took,
             k == CLI_VERDICT_OFF         ? ""
             : k == CLI_VERDICT_UNDECIDED ? "; "
                                          : ", ",
             k == CLI_VERDICT_OFF ? "" : words);
    return k;
}

int cli_verdict_http(json_t *x, const char **reason)
{
    static const struct {
        const char *state;
        enum proxy_error e;
    } refusals[] = {{"mismatch", PE_CHECKOUT_MISMATCH}, {"stale", PE_STALE_CODE},
                    {"no-whoami", PE_NO_WHOAMI},        {"invalid", PE_WHOAMI_INVALID},
                    {"app-error", PE_APP_ERROR},        {"broken", PE_BROKEN}};
    const char *v = cli_verdict(x);
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (strcmp(v, refusals[i].state) == 0) {
            *reason = error_page_reason(refusals[i].e);
            return error_page_status(refusals[i].e);
        }
    return 0;
}
