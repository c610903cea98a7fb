/* test_front_pick.c - cli/front_pick.c: which service of a .wtproxy a
 * `wtproxy run -- CMD` is by its command (the start as /bin/sh would split
 * it, or the daemon's own `/bin/sh -c START`), and the commands a refusal
 * prints, pasted into a shell, being the ones given. */
#include "../../cli/front_pick.c"

#include "tap.h"

/* Whether the NULL-terminated words are start, as run compares them. */
static int same(const char *start, const char *const *words)
{
    int argc = 0;
    while (words[argc])
        argc++;
    return is_start(start, argc, (char **)words);
}

static void test_words(void)
{
    ok(same("npm run dev -- --port {port}",
            (const char *[]){"npm", "run", "dev", "--", "--port", "{port}", NULL}),
       "a Playwright command carrying the start is it");
    ok(same("  vite\t--port {port}  ", (const char *[]){"vite", "--port", "{port}", NULL}),
       "blanks and tabs only separate words");
    ok(same("py run \"127.0.0.1:{port}\" 'a b' c\\ d",
            (const char *[]){"py", "run", "127.0.0.1:{port}", "a b", "c d", NULL}),
       "quotes and backslashes are removed as sh removes them");
    ok(same("A=1 B_2=x py {port}", (const char *[]){"py", "{port}", NULL}),
       "leading assignments are set aside: the environment is not another server");
    ok(!same("py {port} A=1", (const char *[]){"py", "{port}", NULL}),
       "an assignment after the command is an argument");
    ok(!same("npm run dev -- --port {port}",
             (const char *[]){"npm", "run", "dev", "--port", "{port}", NULL}),
       "a word missing is another command");
    ok(!same("npm run dev {port}", (const char *[]){"npm", "run", "dev", "8000", NULL}),
       "{port} is compared as written, not as a port");
    ok(same("cd web && vite --port {port}",
            (const char *[]){"/bin/sh", "-c", "cd web && vite --port {port}", NULL}),
       "the daemon's own form, /bin/sh -c START, is it");
    ok(same("cd web && vite", (const char *[]){"sh", "-c", "cd web && vite", NULL}),
       "sh -c START too");
    ok(!same("cd web && vite", (const char *[]){"cd", "web", "&&", "vite", NULL}),
       "a start with shell syntax has no argv but the shell's");
    ok(!same("vite --port $PORT", (const char *[]){"vite", "--port", "$PORT", NULL}),
       "nor has one with an expansion");
    ok(!same("vite \"$X\"", (const char *[]){"vite", "$X", NULL}),
       "an expansion in double quotes either");
    ok(!same("vite 'open", (const char *[]){"vite", "open", NULL}),
       "an unclosed quote is no match");
}

static void test_quote(void)
{
    char out[256];
    size_t used = 0;
    out[0] = '\0';
    const char *words[] = {"--", "node", "srv.js", "127.0.0.1:{port}", "a b", "it's", ""};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        sh_quote(words[i], out, sizeof out, &used);
    is_str(out, " -- node srv.js 127.0.0.1:{port} 'a b' 'it'\\''s' ''",
           "words sh reads as they are stay bare; others are single-quoted");
}

int main(void)
{
    test_words();
    test_quote();
    return done_testing();
}
