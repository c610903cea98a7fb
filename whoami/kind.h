/* kind.h - what kind of server a registered command starts (Go, Node,
 * Python...), read from its words: the files a server trusted without
 * /__whoami (--trust-registry) is built from, which the gate watches for
 * it, and whether a wtproxy middleware gives it a /__whoami or it needs
 * one of its own (wtproxy help whoami-protocol). Internal to whoami/. */
#ifndef WTP_WHOAMI_KIND_H
#define WTP_WHOAMI_KIND_H

#include "whoami.h"

struct whoami_kind {
    const char *name; /* "a Go server", ...; "a server of an unknown kind" */
    /* What a server of this kind reads at start, for --trust-registry: a
     * file selected and newer than the server makes it stale. Never what
     * a run writes (build output, test results): stale mid-run, a server
     * would be restarted under the tests. */
    struct whoami_patterns patterns;
    const char *watched; /* the patterns said in words, NULL: listed */
    const char *unseen;  /* what it may load that the patterns cannot name */
    int middleware;      /* a wtproxy middleware answers /__whoami for it */
    const char *guide;   /* without one: how to give it a /__whoami ("" with one) */
};

/* The kind command starts ("" or NULL: unknown): the first kind whose
 * word it runs, else every kind's sources, since wtproxy cannot tell
 * which it is built from (a needless restart, never old code trusted). */
const struct whoami_kind *whoami_kind_of(const char *command);

/* Whether command names one of words (NULL-terminated) as a whole word,
 * after a space or a slash: "/usr/bin/node" and "node_modules/.bin/vite"
 * count; followed by the end, a space, a '.' or a '3' ("manage.py",
 * "python3"). */
int whoami_runs_one_of(const char *command, const char *const *words);

/* What is watched for k, for people: its include patterns, comma-separated,
 * or in words where the list is every kind's. */
void whoami_kind_watched(const struct whoami_kind *k, char *out, size_t outlen);

#endif
