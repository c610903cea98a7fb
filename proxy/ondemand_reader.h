/* ondemand_reader.h - every .wtproxy file the daemon reads for a caller,
 * read off the loop: for a caller that has only connected
 * (ondemand_connected), for a request that found no server
 * (ondemand_ensure_front_later: the request waits, as it waits for a
 * starting server), and the looks that keep ondemand_cache.h fresh for
 * the dashboard. On a slow filesystem (NFS, FUSE) an open or a read can
 * take seconds, and nothing that can runs on the loop. The reader hands
 * each file back to ondemand.c on the loop. */
#ifndef WTP_ONDEMAND_READER_H
#define WTP_ONDEMAND_READER_H

#include <event2/event.h>

#include "ondemand.h"

struct ondemand_reader;
struct ondemand_cached;
struct wtfile;

/* A reader answering a's ondemand_file_read and ondemand_file_answer;
 * NULL with err when its thread or event cannot be made. */
struct ondemand_reader *ondemand_reader_new(struct ondemand *a, struct event_base *base, char *err,
                                            size_t errlen);
void ondemand_reader_free(struct ondemand_reader *r);

/* Read worktree's .wtproxy on the worker, then call ondemand_file_read on
 * the loop. A read for the same worktree and front not yet begun makes
 * this one unneeded: it is dropped, as it is when too many are queued (the
 * request starts the server then). */
void ondemand_reader_submit(struct ondemand_reader *r, const char *worktree, int front);

/* Read worktree's .wtproxy, begun after this call, then call
 * ondemand_file_answer(a, worktree, front, ..., cb, arg) on the loop.
 * Returns a ticket for ondemand_reader_cancel, NULL when out of memory. */
void *ondemand_reader_read(struct ondemand_reader *r, const char *worktree, int front,
                           ondemand_ensured_cb cb, void *arg);

/* ondemand_read_later (ondemand.h): worktree resolved, then the file
 * itself to cb on the loop (at the reader's end: rc -1, f NULL; after
 * timeout_ms: ONDEMAND_TIMED_OUT). Returns a ticket for
 * ondemand_reader_cancel, NULL out of memory. */
void *ondemand_reader_file(struct ondemand_reader *r, const char *worktree, unsigned timeout_ms,
                           ondemand_file_cb cb, void *arg);

/* The read's answer is not wanted any more: cb is not called. */
void ondemand_reader_cancel(void *ticket);

/* The command a read's note ends with (a worktree without a .wtproxy in a
 * repository whose main checkout has one: the `cp` that brings it), into
 * fix; 0 when note has none. The 503's Fix line is that command, not the
 * generic `wtproxy run` with no command to run. */
int ondemand_note_fix(const char *note, char *fix, size_t len);

/* What the worker last read of worktree's .wtproxy, NULL when it has not
 * yet; a look is queued when that is older than ONDEMAND_CACHE_FRESH_MS
 * at now_ms. Never touches the file. */
const struct ondemand_cached *
ondemand_reader_cached(struct ondemand_reader *r, const char *worktree, unsigned long long now_ms);

/* ondemand.c: worktree's .wtproxy, read (f) for a caller on front. A
 * file that declares nothing there, or none, starts nothing. */
void ondemand_file_read(struct ondemand *a, const char *worktree, int front,
                        const struct wtfile *f);

/* ondemand.c: worktree's .wtproxy read for a request on front (rc and
 * err as wtfile_read's; with rc 1, err is "" or why the main checkout's
 * file does not count here): what ondemand_ensure_front does with the
 * file, answered to cb. */
void ondemand_file_answer(struct ondemand *a, const char *worktree, int front, int rc,
                          const struct wtfile *f, const char *err, ondemand_ensured_cb cb,
                          void *arg);

/* ondemand.c: the daemon's clock, for the cache's ages. */
unsigned long long ondemand_now_ms(struct ondemand *a);

#endif
