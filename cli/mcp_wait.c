/* mcp_wait.c - what `wtproxy mcp` reads while a tool call waits (claim's
 * wait for its holder, restart's for its servers and their verdicts): the
 * waits sleep through cli_pause, which here reads stdin instead, so that
 * a client that gives up on the call can say so (MCP's
 * notifications/cancelled) and use the session again at once.
 *
 * One call runs at a time, on this one thread; while it waits:
 *   - a notifications/cancelled for it ends the wait at once (after the
 *     store's or the daemon's answer when one is asked just then): the
 *     call stops and is not answered (the spec's SHOULD); one for a
 *     tools/call still queued drops that call;
 *   - EOF on stdin, or a stdout that is gone, ends the wait the same way,
 *     and then the session (what is queued is dropped);
 *   - a tools/call is queued and answered after the call, in order;
 *   - every other message (ping, tools/list, initialize, a notification,
 *     an invalid one) is answered at once: none of them waits.
 * A waiting tool must leave nothing half done when cli_pause says the
 * wait is cancelled (mcp_act.c: a claim not made; one made as the
 * cancellation came is released again). */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "host.h"

static struct mcp *session; /* one session a process (cli_mcp_main) */

/* Say on stderr that id was cancelled (reason, when the client gave one),
 * and what became of it. */
static void say_cancelled(json_t *id, json_t *params, const char *what)
{
    char *text = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    const char *reason = json_string_value(json_object_get(params, "reason"));
    fprintf(stderr, "wtproxy mcp: the client cancelled request %s%s%.200s%s: %s\n",
            text ? text : "?", reason ? " (" : "", reason ? reason : "", reason ? ")" : "", what);
    free(text);
}

/* A notifications/cancelled: the call waiting now, or a queued one, is
 * cancelled. Any other id (an answered request: the cancellation crossed
 * its answer) is ignored, as the spec allows. */
static void cancel(struct mcp *m, json_t *params)
{
    json_t *id = json_object_get(params, "requestId");
    if (!id)
        return;
    if (m->call_id && json_equal(id, m->call_id)) {
        m->cancelled = 1;
        say_cancelled(id, params, "its wait stops; it gets no answer");
        return;
    }
    for (size_t i = 0; i < m->nqueued; i++)
        if (json_equal(id, json_object_get(m->queued[i], "id"))) {
            say_cancelled(id, params, "it had not begun; it gets no answer");
            json_decref(m->queued[i]);
            memmove(m->queued + i, m->queued + i + 1, (m->nqueued - i - 1) * sizeof *m->queued);
            m->nqueued--;
            return;
        }
}

/* msg (consumed), a message that came while a call waits. */
static void during_call(struct mcp *m, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id");
    if (!id && method && strcmp(method, "notifications/cancelled") == 0) {
        cancel(m, json_object_get(msg, "params"));
    } else if (id && method && strcmp(method, "tools/call") == 0) {
        m->queued[m->nqueued++] = msg; /* one call at a time: after this one */
        return;
    } else {
        json_t *reply = mcp_rpc_message(m, msg);
        if (reply && mcp_send(reply) < 0)
            m->ended = m->cancelled = 1; /* nobody reads our answers any more */
    }
    json_decref(msg);
}

/* cli_pause while a call waits: ms spent reading stdin. Returns 0, or -1
 * once the call is cancelled (or the client ended). */
static int pause_reading(long ms)
{
    struct mcp *m = session;
    long long deadline = host_mono_ms() + ms;
    while (!m->cancelled) {
        long long left = deadline - host_mono_ms();
        if (m->nqueued == MCP_QUEUE_MAX) { /* no more kept: stdin waits for the call's end */
            struct timespec ts = {left > 0 ? left / 1000 : 0, left > 0 ? left % 1000 * 1000000 : 0};
            nanosleep(&ts, NULL);
            return 0;
        }
        int r = mcp_next_line(&m->in, left > 0 ? left : 0);
        if (r == 0)
            return 0;
        if (r < 0) {
            fprintf(stderr, "wtproxy mcp: stdin ended while a tool call waited: the call stops "
                            "unanswered, and the session ends\n");
            m->ended = m->cancelled = 1;
            break;
        }
        json_t *reply = NULL, *msg = mcp_take_message(&m->in, &reply);
        if (msg)
            during_call(m, msg);
        else if (reply && mcp_send(reply) < 0)
            m->ended = m->cancelled = 1;
        if (host_mono_ms() > deadline && !m->cancelled)
            return 0; /* a client that writes without pause does not stall the wait */
    }
    return -1;
}

void mcp_wait_init(struct mcp *m)
{
    session = m;
    cli_pause_set(pause_reading);
}

json_t *mcp_wait_next(struct mcp *m)
{
    if (!m->nqueued)
        return NULL;
    json_t *msg = m->queued[0];
    memmove(m->queued, m->queued + 1, --m->nqueued * sizeof *m->queued);
    return msg;
}

void mcp_wait_drop(struct mcp *m)
{
    while (m->nqueued)
        json_decref(m->queued[--m->nqueued]);
}
