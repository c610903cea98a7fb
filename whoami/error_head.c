/* error_head.c - the first lines of a server's error answer, for a
 * refusal to quote: a dev server that answered /__whoami until an edit
 * and now answers it with a 500 (hugo server after an atomic-rename save
 * or a template error; any app whose framework serves its error page to
 * every path) says why in that page, where the user's agent reads it only
 * if the refusal quotes it. An HTML page is read as its text: tags and
 * what <head>, <style> and <script> hold are left out, a few entities
 * written as their characters. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "whoami.h"

#define HEAD_LINES 4      /* a headline and the error's file and line fit */
#define HEAD_LINE_MAX 200 /* a minified page's one line is cut here */

/* Whether the tag at p (just after '<', to end) opens (or with '/',
 * closes) an element whose content is no text for a person. */
static int hidden_tag(const char *p, const char *end, int closing)
{
    static const char *const names[] = {"head", "style", "script"};
    if (closing != (p < end && *p == '/'))
        return 0;
    p += closing;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if ((size_t)(end - p) > n && strncasecmp(p, names[i], n) == 0 &&
            (p[n] == '>' || p[n] == ' ' || p[n] == '\t' || p[n] == '\n'))
            return 1;
    }
    return 0;
}

/* The character an entity at p (at '&') stands for, its length in *n; 0
 * when it is none of the few an error page uses. */
static char entity(const char *p, const char *end, size_t *n)
{
    static const struct {
        const char *name;
        char ch;
    } known[] = {{"&lt;", '<'},   {"&gt;", '>'},  {"&amp;", '&'}, {"&quot;", '"'},
                 {"&#39;", '\''}, {"&#34;", '"'}, {"&nbsp;", ' '}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        *n = strlen(known[i].name);
        if ((size_t)(end - p) >= *n && memcmp(p, known[i].name, *n) == 0)
            return known[i].ch;
    }
    return 0;
}

/* Append the line (n bytes, its spaces at either end dropped) to out as
 * one more line; returns whether it had any text. */
static int add_line(const char *line, size_t n, char *out, size_t outlen, size_t *used)
{
    while (n && line[n - 1] == ' ')
        n--;
    while (n && line[0] == ' ')
        line++, n--;
    if (!n || *used >= outlen)
        return 0;
    *used +=
        (size_t)snprintf(out + *used, outlen - *used, "%s%.*s", *used ? "\n" : "", (int)n, line);
    return 1;
}

int whoami_error_head(const char *body, size_t len, char *out, size_t outlen)
{
    char line[HEAD_LINE_MAX];
    size_t n = 0, used = 0;
    int lines = 0, hidden = 0;
    const char *end = body ? body + len : NULL;
    if (outlen == 0)
        return 0;
    out[0] = '\0';
    for (const char *p = body; p && p <= end && lines < HEAD_LINES; p++) {
        char ch = p < end ? *p : '\n';
        size_t skip = 0;
        char decoded;
        if (ch == '<' && p + 1 < end &&
            (p[1] == '/' || p[1] == '!' || isalpha((unsigned char)p[1]))) {
            hidden = hidden ? !hidden_tag(p + 1, end, 1) : hidden_tag(p + 1, end, 0);
            const char *gt = memchr(p, '>', (size_t)(end - p));
            p = gt ? gt : end - 1;
            ch = ' '; /* a tag parts words: <br>, </td><td> */
        } else if (ch == '&' && (decoded = entity(p, end, &skip))) {
            ch = decoded;
            p += skip - 1;
        }
        if (hidden)
            continue;
        if (ch == '\n') {
            lines += add_line(line, n, out, outlen, &used);
            n = 0;
        } else if (n < sizeof line && (ch == ' ' || ch == '\t' || ch == '\r')) {
            if (n && line[n - 1] != ' ')
                line[n++] = ' ';
        } else if (n < sizeof line && (unsigned char)ch >= 0x20) {
            line[n++] = ch;
        }
    }
    return used > 0;
}
