/* test_reg_pg_worker.c - the daemon's PostgreSQL thread, with the store
 * replaced by jobs that block as a hung server would: the loop keeps
 * running while a job blocks; jobs run in order off the loop and their
 * callbacks on it; a cancelled job's callback never runs; at shutdown the
 * finished job is answered and the queued ones get NULL; the store's
 * failure after each job reaches the loop (ping's registry_error). */
#include "../../registry/reg_pg_worker.c"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

/* The store, as far as the worker sees it: each job's failure text. */
struct reg_mirror {
    char error[64];
    char shown[REG_PG_URI_MAX + 1024]; /* as long as a job's error */
    char first_shown[64];
    int shows;
};

void reg_mirror_job_begin(struct reg_mirror *m, long long queued_ms)
{
    (void)m;
    (void)queued_ms;
}

int reg_mirror_job_end(struct reg_mirror *m, char *error, size_t errlen)
{
    snprintf(error, errlen, "%s", m->error);
    return 0;
}

void reg_mirror_show(struct reg_mirror *m, const char *error)
{
    snprintf(m->shown, sizeof m->shown, "%s", error);
    if (m->shows++ == 0)
        snprintf(m->first_shown, sizeof m->first_shown, "%.40s", error);
}

void reg_pg_set_query_timeout(int ms)
{
    (void)ms;
}

static pthread_t loop_thread;
static atomic_int hanging; /* set: "the server does not answer" */
static int order[8], norder, off_loop = 1, on_loop = 1, answered_null;

/* A job: {"n": N, "hang": bool, "fail": "text"}; answers {"n": N}. */
static json_t *job(struct reg_mirror *m, json_t *in)
{
    off_loop &= !pthread_equal(pthread_self(), loop_thread);
    while (json_is_true(json_object_get(in, "hang")) && atomic_load(&hanging))
        usleep(1000);
    const char *fail = json_string_value(json_object_get(in, "fail"));
    snprintf(m->error, sizeof m->error, "%s", fail ? fail : "");
    return json_pack("{s:O}", "n", json_object_get(in, "n"));
}

static void done(void *arg, json_t *answer)
{
    (void)arg;
    on_loop &= pthread_equal(pthread_self(), loop_thread);
    if (!answer)
        answered_null++;
    else if (norder < 8)
        order[norder++] = (int)json_integer_value(json_object_get(answer, "n"));
    json_decref(answer);
}

static void *submit(struct reg_pgw *w, int n, int hang, const char *fail)
{
    json_t *in = json_pack("{s:i, s:b}", "n", n, "hang", hang);
    if (fail)
        json_object_set_new(in, "fail", json_string(fail));
    return reg_pgw_submit(w, job, in, done, NULL);
}

/* The server answers again after 100 ms (while the loop thread waits in
 * reg_pgw_free). */
static void *answer_later(void *arg)
{
    (void)arg;
    usleep(100000);
    atomic_store(&hanging, 0);
    return NULL;
}

static int ticks;
static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    ticks++;
}

/* Run the loop until want answers came, or about 2 s passed. */
static void loop_until(struct event_base *base, int want)
{
    for (int i = 0; i < 200 && norder + answered_null < want; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
}

int main(void)
{
    char err[256];
    struct reg_mirror m = {0};
    struct event_base *base = event_base_new();
    loop_thread = pthread_self();
    struct reg_pgw *w = reg_pgw_new(base, &m, err, sizeof err);
    ok(w != NULL, "the thread starts");

    atomic_store(&hanging, 1);
    submit(w, 1, 1, "the registry did not answer");
    submit(w, 2, 0, NULL);
    void *cancelled = submit(w, 3, 0, NULL);
    submit(w, 4, 0, NULL);
    reg_pgw_cancel(cancelled);
    struct event *timer = event_new(base, -1, EV_PERSIST, tick, NULL);
    struct timeval ms10 = {0, 10000};
    event_add(timer, &ms10);
    loop_until(base, 1); /* nothing can answer: about 2 s of loop */
    ok(ticks >= 50 && norder == 0,
       "while a job hangs, the loop runs on (%d timer ticks) and nothing is answered", ticks);
    atomic_store(&hanging, 0);
    loop_until(base, 3);
    ok(norder == 3 && order[0] == 1 && order[1] == 2 && order[2] == 4,
       "then the jobs are answered in order, the cancelled one not at all");
    ok(off_loop && on_loop, "jobs ran off the loop's thread, callbacks on it");
    ok(m.shows == 4 && strcmp(m.first_shown, "the registry did not answer") == 0 &&
           strcmp(m.shown, "") == 0,
       "each job's outcome reached the loop in order: the failure, then \"\" (%d shown)", m.shows);

    atomic_store(&hanging, 1);
    submit(w, 5, 1, NULL); /* running at shutdown */
    submit(w, 6, 0, NULL); /* queued */
    submit(w, 7, 0, NULL);
    usleep(50000);
    pthread_t t;
    pthread_create(&t, NULL, answer_later, NULL);
    reg_pgw_free(w); /* waits for the running job */
    pthread_join(t, NULL);
    ok(norder == 4 && order[3] == 5 && answered_null == 2,
       "at shutdown the running job is answered, the queued ones get NULL");
    event_free(timer);
    event_base_free(base);
    return done_testing();
}
