/* reg_json.c - one registration as the JSON entry of PROTOCOL.md
 * ("Entry"), for the control protocol and the store file alike:
 *   {"machine", "front", "worktree", "backend" (HOST:PORT), "port", "uid",
 *    "pid", "pid_start", "command", "registered_ms", "started_ms",
 *    "expires_ms", "state" ("starting", "ready", "dead"), "requests",
 *    "daemon_started" when true, "start_failed" {"lines", "reloader",
 *    "when"} while its start failed, and "whoami" {...} once the gate has
 *    checked it (PROTOCOL.md)}
 * Every field is required on the way in and checked against its range;
 * the address is resolved again from "backend". Also the refusal every
 * control op answers with (reg_fail), and what a server that exited said
 * last (reg_last_words_to_json: the `list` op's "exited"). */
#include "registry.h"

#include "host.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_SIZE(f) sizeof(((struct reg_backend *)0)->f)

static const char *const state_names[] = {
    [REG_STARTING] = "starting",
    [REG_READY] = "ready",
    [REG_DEAD] = "dead",
};

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when none starts
 * there: a stray continuation byte, an overlong form, a surrogate, a code
 * point past U+10FFFF, or a sequence cut short. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned long cp, min;
    size_t n;

    if (s[0] < 0x80)
        return 1;
    if (s[0] < 0xC2 || s[0] > 0xF4)
        return 0; /* continuation, overlong C0/C1, past U+10FFFF */
    n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    cp = s[0] & (0x7F >> n);
    min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0; /* the NUL at the end stops here too */
        cp = cp << 6 | (s[i] & 0x3F);
    }
    return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : n;
}

/* s as a JSON string. jansson refuses a string that is not UTF-8, and a
 * command cut to fit its field may end in half a character; rather than
 * making the whole file unwritable, such bytes become '?'. */
static json_t *utf8_string(const char *s)
{
    json_t *j;
    char *fixed;
    size_t n;

    if ((j = json_string(s)))
        return j;
    if (!(fixed = strdup(s)))
        return NULL;
    for (unsigned char *p = (unsigned char *)fixed; *p; p += n) {
        if ((n = utf8_seq(p)) == 0) {
            *p = '?';
            n = 1;
        }
    }
    j = json_string(fixed);
    free(fixed);
    return j;
}

/* The gate's view of b: {"state", "detail", "checkout", "hash",
 * "disk_hash", "checked_ms", "refused"[, "silent": true]}. */
static json_t *whoami_to_json(const struct reg_whoami *w)
{
    json_t *o = json_pack("{s:s, s:o, s:o, s:s, s:s, s:I, s:I}", "state", w->state, "detail",
                          utf8_string(w->detail), "checkout", utf8_string(w->checkout), "hash",
                          w->hash, "disk_hash", w->disk_hash, "checked_ms",
                          (json_int_t)w->checked_ms, "refused", (json_int_t)w->refused);
    if (o && w->silent && json_object_set_new(o, "silent", json_true()) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *reg_backend_to_json(const struct reg_backend *b)
{
    json_t *o;

    if ((unsigned)b->state >= sizeof state_names / sizeof state_names[0])
        return NULL;
    /* "o" steals the new strings; json_pack frees them if it fails. */
    o = json_pack("{s:o, s:i, s:o, s:o, s:i, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:s, s:I}",
                  "machine", utf8_string(b->machine), "front", b->front, "worktree",
                  utf8_string(b->worktree), "backend", utf8_string(b->name), "port", b->port, "uid",
                  (json_int_t)b->uid, "pid", (json_int_t)b->pid, "pid_start",
                  (json_int_t)b->pid_start, "command", utf8_string(b->command), "registered_ms",
                  (json_int_t)b->registered_ms, "started_ms", (json_int_t)b->started_ms,
                  "expires_ms", (json_int_t)b->expires_ms, "state", state_names[b->state],
                  "requests", (json_int_t)b->requests);
    if (o &&
        ((b->restart_on_stale && json_object_set_new(o, "restart_on_stale", json_true()) < 0) ||
         (b->daemon_started && json_object_set_new(o, "daemon_started", json_true()) < 0))) {
        json_decref(o);
        return NULL;
    }
    if (o && ((b->service[0] && json_object_set_new(o, "service", utf8_string(b->service)) < 0) ||
              (b->log[0] && json_object_set_new(o, "log", utf8_string(b->log)) < 0) ||
              (b->shell_command[0] &&
               json_object_set_new(o, "shell_command", utf8_string(b->shell_command)) < 0) ||
              (b->start_load_pct >= 0 &&
               json_object_set_new(o, "start_load", json_real(b->start_load_pct / 100.0)) < 0))) {
        json_decref(o);
        return NULL;
    }
    if (o && b->start_failed[0] &&
        json_object_set_new(o, "start_failed",
                            json_pack("{s:o, s:o, s:s, s:I}", "lines", utf8_string(b->start_failed),
                                      "reloader", utf8_string(b->reloader), "when",
                                      reg_failed_when_name(b->start_failed_when), "told_ms",
                                      (json_int_t)b->start_failed_ms)) < 0) {
        json_decref(o);
        return NULL;
    }
    if (o && b->not_ready[0] && b->state == REG_STARTING &&
        json_object_set_new(o, "not_ready",
                            json_pack("{s:o, s:I}", "said", utf8_string(b->not_ready), "since_ms",
                                      (json_int_t)b->not_ready_ms)) < 0) {
        json_decref(o);
        return NULL;
    }
    /* Only once checked. The store file carries it as last written, and
     * a daemon loading the file ignores it: it asks the server again. */
    if (o && b->whoami.state[0] &&
        json_object_set_new(o, "whoami", whoami_to_json(&b->whoami)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *reg_last_words_to_json(const struct reg_last_words *w)
{
    json_t *o = json_pack("{s:i, s:o, s:I, s:o, s:o, s:b, s:I}", "front", w->front, "worktree",
                          utf8_string(w->worktree), "uid", (json_int_t)w->uid, "command",
                          utf8_string(w->command), "lines", utf8_string(w->lines), "daemon_started",
                          w->daemon_started, "ended_ms", (json_int_t)w->ended_ms);
    const char *opt[][2] = {{"service", w->service}, {"log", w->log}, {"rerun", w->rerun}};
    if (o && json_object_set_new(o, w->status >= 0 ? "status" : "signal",
                                 json_integer(w->status >= 0 ? w->status : w->signal)) < 0) {
        json_decref(o);
        return NULL;
    }
    for (size_t i = 0; o && i < sizeof opt / sizeof opt[0]; i++)
        if (opt[i][1][0] && json_object_set_new(o, opt[i][0], utf8_string(opt[i][1])) < 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* The integer fields of an entry and their ranges. */
enum { F_FRONT, F_PORT, F_UID, F_PID, F_PID_START, F_REGISTERED, F_STARTED, F_EXPIRES, F_REQUESTS };
static const struct {
    const char *key;
    long long min, max;
} int_fields[] = {
    [F_FRONT] = {"front", 1, 65535},
    [F_PORT] = {"port", 1, 65535},
    [F_UID] = {"uid", 0, (long long)(uid_t)-1 - 1}, /* (uid_t)-1 is "no uid" */
    [F_PID] = {"pid", 0, INT_MAX},
    [F_PID_START] = {"pid_start", 0, LLONG_MAX},
    [F_REGISTERED] = {"registered_ms", 0, LLONG_MAX},
    [F_STARTED] = {"started_ms", 0, LLONG_MAX},
    [F_EXPIRES] = {"expires_ms", 0, LLONG_MAX},
    [F_REQUESTS] = {"requests", 0, LLONG_MAX},
};
#define N_INT_FIELDS (sizeof int_fields / sizeof int_fields[0])

/* The string fields, with the size of the field each is copied into. */
enum { S_MACHINE, S_WORKTREE, S_BACKEND, S_COMMAND, S_STATE };
static const struct {
    const char *key;
    size_t size;
} str_fields[] = {
    [S_MACHINE] = {"machine", FIELD_SIZE(machine)},
    [S_WORKTREE] = {"worktree", FIELD_SIZE(worktree)},
    [S_BACKEND] = {"backend", FIELD_SIZE(name)},
    [S_COMMAND] = {"command", FIELD_SIZE(command)},
    [S_STATE] = {"state", 16},
};
#define N_STR_FIELDS (sizeof str_fields / sizeof str_fields[0])

/* Read and check o's fields into num and str. Returns 0, or -1 with err
 * naming the field. */
static int read_fields(json_t *o, long long *num, const char **str, char *err, size_t errlen)
{
    json_t *v;

    for (size_t i = 0; i < N_INT_FIELDS; i++) {
        const char *key = int_fields[i].key;
        if (!json_is_integer(v = json_object_get(o, key))) {
            snprintf(err, errlen, "\"%s\" is %s", key, v ? "not an integer" : "missing");
            return -1;
        }
        num[i] = json_integer_value(v);
        if (num[i] < int_fields[i].min || num[i] > int_fields[i].max) {
            snprintf(err, errlen, "\"%s\": %lld is out of range (%lld..%lld)", key, num[i],
                     int_fields[i].min, int_fields[i].max);
            return -1;
        }
    }
    for (size_t i = 0; i < N_STR_FIELDS; i++) {
        const char *key = str_fields[i].key;
        if (!json_is_string(v = json_object_get(o, key))) {
            snprintf(err, errlen, "\"%s\" is %s", key, v ? "not a string" : "missing");
            return -1;
        }
        str[i] = json_string_value(v);
        if (json_string_length(v) >= str_fields[i].size ||
            strlen(str[i]) != json_string_length(v)) {
            snprintf(err, errlen, "\"%s\" is longer than %zu bytes or holds a NUL", key,
                     str_fields[i].size - 1);
            return -1;
        }
    }
    return 0;
}

/* The state named s, or -1. */
static int parse_state(const char *s)
{
    for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++)
        if (strcmp(s, state_names[i]) == 0)
            return (int)i;
    return -1;
}

/* Check what read_fields cannot check alone: returns 0, or -1 with err. */
static int check_fields(const long long *num, const char **str, char *err, size_t errlen)
{
    char host[FIELD_SIZE(name)];
    int port;

    if (str[S_WORKTREE][0] != '\0' && str[S_WORKTREE][0] != '/') {
        snprintf(err, errlen, "\"worktree\": \"%s\" is not an absolute path", str[S_WORKTREE]);
        return -1;
    }
    if (parse_state(str[S_STATE]) < 0) {
        snprintf(err, errlen, "\"state\": \"%s\" is not starting, ready or dead", str[S_STATE]);
        return -1;
    }
    if (reg_split_hostport(str[S_BACKEND], host, sizeof host, &port) == 0 && port != num[F_PORT]) {
        snprintf(err, errlen, "\"port\": %lld does not match \"backend\": \"%s\"", num[F_PORT],
                 str[S_BACKEND]);
        return -1;
    }
    return 0;
}

int reg_backend_read_labels(struct reg_backend *b, json_t *o, char *err, size_t errlen)
{
    json_t *sv = json_object_get(o, "service"), *lg = json_object_get(o, "log");
    if (sv && !json_is_string(sv)) {
        snprintf(err, errlen, "\"service\" is not a string");
        return -1;
    }
    if (sv && !reg_service_name_ok(json_string_value(sv), err, errlen))
        return -1;
    if (lg && (!json_is_string(lg) || json_string_value(lg)[0] != '/' ||
               json_string_length(lg) >= sizeof b->log)) {
        snprintf(err, errlen, "\"log\" is not an absolute path shorter than %zu bytes",
                 sizeof b->log);
        return -1;
    }
    json_t *sh = json_object_get(o, "shell_command");
    if (sh && (!json_is_string(sh) || json_string_length(sh) >= sizeof b->shell_command ||
               strlen(json_string_value(sh)) != json_string_length(sh))) {
        snprintf(err, errlen, "\"shell_command\" is not a string shorter than %zu bytes",
                 sizeof b->shell_command);
        return -1;
    }
    json_t *ld = json_object_get(o, "start_load");
    if (ld && (!json_is_number(ld) || json_number_value(ld) < 0 || json_number_value(ld) > 1e6)) {
        snprintf(err, errlen, "\"start_load\" is not a load per CPU (a number >= 0)");
        return -1;
    }
    snprintf(b->service, sizeof b->service, "%s", sv ? json_string_value(sv) : "");
    snprintf(b->log, sizeof b->log, "%s", lg ? json_string_value(lg) : "");
    snprintf(b->shell_command, sizeof b->shell_command, "%s", sh ? json_string_value(sh) : "");
    b->start_load_pct = ld ? (int)(json_number_value(ld) * 100 + 0.5) : -1;
    return 0;
}

const char *reg_failed_when_name(enum reg_failed_when w)
{
    return w == REG_FAILED_EDIT   ? "edit"
           : w == REG_FAILED_PORT ? "port"
           : w == REG_FAILED_DIED ? "died"
                                  : "start";
}

/* when as a reg_failed_when; -1 for none of their names. */
static int failed_when(const char *when)
{
    for (int w = REG_FAILED_START; w <= REG_FAILED_DIED; w++)
        if (strcmp(when, reg_failed_when_name(w)) == 0)
            return w;
    return -1;
}

int reg_backend_read_failed(struct reg_backend *b, json_t *o, char *err, size_t errlen)
{
    const char *lines = NULL, *reloader = "", *when = "start";
    if (json_unpack(o, "{s:s, s?s, s?s}", "lines", &lines, "reloader", &reloader, "when", &when) <
            0 ||
        !lines[0] || strlen(reloader) >= sizeof b->reloader || failed_when(when) < 0) {
        snprintf(err, errlen,
                 "give \"lines\" (the server's last output, not empty), and optionally "
                 "\"reloader\" (what restarts it, under %zu bytes) and \"when\" (\"start\", "
                 "\"edit\", \"port\" or \"died\")",
                 sizeof b->reloader);
        return -1;
    }
    /* The end of its output is what names the error: keep that, from a
     * character's first byte on. */
    size_t n = strlen(lines), max = sizeof b->start_failed - 1;
    const char *from = lines + (n > max ? n - max : 0);
    while (((unsigned char)*from & 0xc0) == 0x80)
        from++;
    snprintf(b->start_failed, sizeof b->start_failed, "%s", from);
    snprintf(b->reloader, sizeof b->reloader, "%s", reloader);
    b->start_failed_when = (enum reg_failed_when)failed_when(when);
    json_t *told = json_object_get(o, "told_ms"); /* an entry's; a wrapper's is now */
    b->start_failed_ms = json_is_integer(told) ? json_integer_value(told) : host_wall_ms();
    return 0;
}

/* An entry's "start_failed", when it has one. Only a starting entry's: a
 * ready one listens, whatever its server printed. */
static int read_failed(struct reg_backend *b, json_t *o, char *err, size_t errlen)
{
    json_t *failed = json_object_get(o, "start_failed");
    if (!failed || b->state != REG_STARTING)
        return 0;
    char why[256];
    if (reg_backend_read_failed(b, failed, why, sizeof why) == 0)
        return 0;
    snprintf(err, errlen, "\"start_failed\": %s", why);
    return -1;
}

/* An entry's "not_ready", when it has one (optional: `why` reads it). */
static void read_not_ready(struct reg_backend *b, json_t *o)
{
    json_t *n = json_object_get(o, "not_ready");
    const char *said = json_string_value(json_object_get(n, "said"));
    if (!said || b->state != REG_STARTING)
        return;
    snprintf(b->not_ready, sizeof b->not_ready, "%s", said);
    b->not_ready_ms = json_integer_value(json_object_get(n, "since_ms"));
}

struct reg_backend *reg_backend_from_json(json_t *o, char *err, size_t errlen)
{
    long long num[N_INT_FIELDS];
    const char *str[N_STR_FIELDS];
    char berr[512];
    struct reg_backend *b;

    if (!json_is_object(o)) {
        snprintf(err, errlen, "the entry is not a JSON object");
        return NULL;
    }
    if (read_fields(o, num, str, err, errlen) < 0 || check_fields(num, str, err, errlen) < 0)
        return NULL;
    if (!(b = reg_backend_new(str[S_BACKEND], berr, sizeof berr))) {
        snprintf(err, errlen, "\"backend\": %s", berr);
        return NULL;
    }
    snprintf(b->machine, sizeof b->machine, "%s", str[S_MACHINE]);
    snprintf(b->worktree, sizeof b->worktree, "%s", str[S_WORKTREE]);
    snprintf(b->command, sizeof b->command, "%s", str[S_COMMAND]);
    b->front = (int)num[F_FRONT];
    b->port = (int)num[F_PORT];
    b->uid = (uid_t)num[F_UID];
    b->pid = (pid_t)num[F_PID];
    b->pid_start = (unsigned long long)num[F_PID_START];
    b->registered_ms = num[F_REGISTERED];
    b->started_ms = num[F_STARTED];
    b->expires_ms = num[F_EXPIRES];
    b->requests = (unsigned long)num[F_REQUESTS];
    b->state = (enum reg_state)parse_state(str[S_STATE]);
    b->been_ready = b->state == REG_READY;
    b->restart_on_stale = json_is_true(json_object_get(o, "restart_on_stale")); /* optional */
    b->daemon_started = json_is_true(json_object_get(o, "daemon_started"));     /* optional */
    if (reg_backend_read_labels(b, o, err, errlen) < 0 || read_failed(b, o, err, errlen) < 0) {
        reg_backend_unref(b);
        return NULL;
    }
    read_not_ready(b, o);
    return b;
}

/* Sized to the message: one that names two worktree paths and a start
 * command can pass any fixed size, and its end is the fix. */
json_t *reg_fail(const char *code, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:b, s:s, s:s}", "ok", 0, "error", code, "message",
                          n >= 0 ? msg : "out of memory while saying why");
    free(n >= 0 ? msg : NULL);
    return o;
}
