/* whoami_fp.c - what a code fingerprint (whoami/fingerprint.c) costs on a
 * project-sized tree: FILES .py files of SIZE bytes in folders of 20, and a
 * node_modules of NM files the default excludes prune. Times, as medians
 * of RUNS: cold (no earlier result: every selected file is read and
 * hashed), warm (with the previous result: unchanged files are only
 * stat'ed), and cold without pruning (node_modules walked, nothing in it
 * selected) to show what pruning saves. The tree is aged past
 * WHOAMI_RACY_NS first, so warm runs reuse every digest.
 *
 * Usage: bench_whoami_fp [-f FILES] [-n NM] [-s SIZE] [-r RUNS]
 *        (defaults 2000, 20000, 2048, 5). Markdown on stdout. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "whoami.h"

static double now_ms(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void make_files(const char *root, const char *sub, const char *ext, int n, int size)
{
    char path[4096], *buf = malloc((size_t)size);
    memset(buf, '#', (size_t)size);
    for (int i = 0; i < n; i++) {
        if (i % 20 == 0) {
            snprintf(path, sizeof path, "%s/%s/d%d", root, sub, i / 20);
            mkdir(path, 0755);
        }
        snprintf(path, sizeof path, "%s/%s/d%d/f%d.%s", root, sub, i / 20, i, ext);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, buf, (size_t)size) != size)
            perror(path);
        close(fd);
    }
    free(buf);
}

/* Median wall and CPU ms of runs computations (CPU time is what the
 * machine's load hardly moves); with reuse, each gets the previous. */
static double time_runs(const char *root, const struct whoami_patterns *p, int runs, int reuse,
                        size_t *files, double *cpu_ms)
{
    double t[64], c[64];
    char err[512];
    struct whoami_fp prev = {0}, cur;
    if (reuse && whoami_fp_compute(root, p, NULL, &prev, err, sizeof err) < 0)
        return -1;
    for (int i = 0; i < runs; i++) {
        double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        if (whoami_fp_compute(root, p, reuse ? &prev : NULL, &cur, err, sizeof err) < 0) {
            fprintf(stderr, "bench_whoami_fp: %s\n", err);
            exit(1);
        }
        t[i] = now_ms(CLOCK_MONOTONIC) - t0;
        c[i] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        *files = cur.n;
        whoami_fp_free(&prev);
        prev = cur;
    }
    whoami_fp_free(&prev);
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    qsort(c, (size_t)runs, sizeof *c, cmp_double);
    *cpu_ms = c[runs / 2];
    return t[runs / 2];
}

int main(int argc, char **argv)
{
    int files = 2000, nm = 20000, size = 2048, runs = 5, opt;
    while ((opt = getopt(argc, argv, "f:n:s:r:")) != -1) {
        int v = (int)strtol(optarg, NULL, 10);
        if (opt == 'f')
            files = v;
        else if (opt == 'n')
            nm = v;
        else if (opt == 's')
            size = v;
        else if (opt == 'r')
            runs = v > 0 && v <= 64 ? v : 5;
    }
    char root[] = "/tmp/bench_whoami_fp.XXXXXX", path[4096];
    if (!mkdtemp(root))
        return 1;
    snprintf(path, sizeof path, "%s/app", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/node_modules", root);
    mkdir(path, 0755);
    make_files(root, "app", "py", files, size);
    make_files(root, "node_modules", "js", nm, 512);
    sleep(3); /* older than WHOAMI_RACY_NS: warm runs may reuse everything */

    char *inc[] = {"**/*.py"}, *exc[] = {"**/.git/**", "**/node_modules/**", "**/.venv/**",
                                         "**/venv/**", "**/__pycache__/**"};
    struct whoami_patterns pruned = {inc, 1, exc, 5}, unpruned = {inc, 1, exc, 0};
    size_t n1 = 0, n2 = 0, n3 = 0;
    double c1, c2, c3;
    double cold = time_runs(root, &pruned, runs, 0, &n1, &c1);
    double warm = time_runs(root, &pruned, runs, 1, &n2, &c2);
    double walk = time_runs(root, &unpruned, runs, 0, &n3, &c3);
    printf("| tree | run | files | median wall ms | median CPU ms |\n|---|---|---|---|---|\n");
    printf("| %d .py of %d B + node_modules %d | cold (no prev) | %zu | %.1f | %.1f |\n", files,
           size, nm, n1, cold, c1);
    printf("| same | warm (prev, nothing changed) | %zu | %.1f | %.1f |\n", n2, warm, c2);
    printf("| same | cold, node_modules not pruned | %zu | %.1f | %.1f |\n", n3, walk, c3);
    printf("\n(medians of %d runs)\n", runs);
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    return system(path) == 0 ? 0 : 1;
}
