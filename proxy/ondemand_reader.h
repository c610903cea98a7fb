/* ondemand_reader.h - the .wtproxy file read off the loop, for a start
 * asked by a caller that has only connected (ondemand_connected): a file
 * read can take milliseconds, and nothing that can runs on the loop. The
 * reader hands the file back to ondemand.c on the loop. */
#ifndef WTP_ONDEMAND_READER_H
#define WTP_ONDEMAND_READER_H

#include <event2/event.h>

struct ondemand;
struct ondemand_reader;
struct wtfile;

/* A reader answering a's ondemand_file_read; NULL with err when its
 * thread or event cannot be made. */
struct ondemand_reader *ondemand_reader_new(struct ondemand *a, struct event_base *base,
                                            char *err, size_t errlen);
void ondemand_reader_free(struct ondemand_reader *r);

/* Read worktree's .wtproxy on the worker, then call ondemand_file_read on
 * the loop. A read for the same worktree and front already queued makes
 * this one unneeded: it is dropped, as it is when too many are queued (the
 * request starts the server then). */
void ondemand_reader_submit(struct ondemand_reader *r, const char *worktree, int front);

/* ondemand.c: worktree's .wtproxy, read (f) for a caller on front. A
 * file that declares nothing there, or none, starts nothing. */
void ondemand_file_read(struct ondemand *a, const char *worktree, int front,
                        const struct wtfile *f);

#endif
