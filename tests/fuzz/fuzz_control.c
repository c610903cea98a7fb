/* fuzz_control.c - the control protocol: each input line goes through
 * reg_server_request (registry/reg_server.c, what the control socket does
 * with a line) on a real reg_server whose state file is in a temporary
 * folder, and through reg_backend_from_json (the state file's entries).
 * The first byte picks the peer's uid (root or another user). Checked:
 * every reply is one JSON object with a boolean "ok", and a failure has
 * an "error" code and a "message"; an entry read from JSON and written
 * back reads again to the same JSON. Every run ends with the table
 * emptied, so runs do not depend on each other. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "fuzz_check.h"
#include "registry.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct reg_server *rs;
static struct event_base *base;
static char dir[] = "/tmp/wtp-fuzz-control-XXXXXX";

/* libFuzzer ends with exit(): the socket, state file and folder go. */
static void cleanup(void)
{
    char path[64];
    reg_server_free(rs);
    event_base_free(base);
    snprintf(path, sizeof path, "%s/state.json", dir);
    unlink(path);
    rmdir(dir);
}

static void violated(const char *what, const char *line, size_t len)
{
    fz_violated(what, line, len);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char sock[64], state[64], err[512];
    (void)argc;
    (void)argv;
    fz_quiet_logs(); /* "registered ..." on every register */
    base = event_base_new();
    if (!base || !mkdtemp(dir)) {
        perror("fuzz_control setup");
        abort();
    }
    snprintf(sock, sizeof sock, "%s/control.sock", dir);
    snprintf(state, sizeof state, "%s/state.json", dir);
    if (!(rs = reg_server_new(base, sock, -1, state, NULL, NULL, err,
                              sizeof err))) { /* embedded store */
        fprintf(stderr, "fuzz_control: %s\n", err);
        abort();
    }
    atexit(cleanup);
    return 0;
}

static json_t *request(uid_t uid, const char *line, size_t len)
{
    char *reply = reg_server_request(rs, uid, line, len);
    if (!reply)
        violated("no reply", line, len);
    json_t *r = json_loads(reply, 0, NULL);
    if (!json_is_object(r) || !json_is_boolean(json_object_get(r, "ok")))
        violated("a reply is not an object with a boolean \"ok\"", reply, strlen(reply));
    if (!json_is_true(json_object_get(r, "ok")) && (!json_is_string(json_object_get(r, "error")) ||
                                                    !json_is_string(json_object_get(r, "message"))))
        violated("a failure without \"error\" and \"message\"", reply, strlen(reply));
    free(reply);
    return r;
}

/* An entry that reads from JSON writes back to JSON that reads the same. */
static void round_trip(const char *line, size_t len)
{
    char err[512];
    json_t *o = json_loadb(line, len, 0, NULL);
    struct reg_backend *b = o ? reg_backend_from_json(o, err, sizeof err) : NULL;
    if (o && !b && !err[0])
        violated("reg_backend_from_json failed without a message", line, len);
    if (b) {
        json_t *j1 = reg_backend_to_json(b);
        struct reg_backend *b2 = reg_backend_from_json(j1, err, sizeof err);
        if (!b2)
            violated("an entry written back does not read again", err, strlen(err));
        json_t *j2 = reg_backend_to_json(b2);
        if (!json_equal(j1, j2))
            violated("an entry changed on its way back through JSON", line, len);
        json_decref(j1);
        json_decref(j2);
        reg_backend_unref(b);
        reg_backend_unref(b2);
    }
    json_decref(o);
}

/* Unregister everything, as root, through the protocol itself. */
static void empty_table(void)
{
    static const char list[] = "{\"op\":\"list\"}";
    json_t *r = request(0, list, sizeof list - 1);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r, "entries"), i, e) {
        json_t *q =
            json_pack("{s:s, s:O, s:O}", "op", "unregister", "front", json_object_get(e, "front"),
                      "worktree", json_object_get(e, "worktree"));
        char *line = json_dumps(q, JSON_COMPACT);
        json_decref(request(0, line, strlen(line)));
        free(line);
        json_decref(q);
    }
    json_decref(r);
    if (reg_table_count(reg_server_table(rs)) != 0)
        violated("unregister left entries behind", "", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uid_t uid = data[0] & 1 ? 0 : 4242;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)((nl ? nl : end) - p);
        json_decref(request(uid, p, len));
        round_trip(p, len);
        p += len + 1;
    }
    empty_table();
    return 0;
}
