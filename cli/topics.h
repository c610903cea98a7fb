/* topics.h - the guides `wtproxy help TOPIC` prints (topics.c): documents
 * built into the binary, so a message names a topic, never a file of the
 * repository an installed user does not have. */
#ifndef WTP_CLI_TOPICS_H
#define WTP_CLI_TOPICS_H

#include <stddef.h>
#include <stdio.h>

/* Whether name is a topic. */
int cli_topic_exists(const char *name);

/* The topics one a line: "  NAME  summary" (with_summaries), else bare
 * names (`wtproxy help --topics`, for scripts and tests). */
void cli_topics_list(FILE *f, int with_summaries);

/* Print topic name's text (the whoami topic first says where this
 * wtproxy installed the middleware packages); -1 when there is none. */
int cli_topic_print(const char *name, FILE *f);

#endif
