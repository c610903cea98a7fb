/* test_whoami_fp.c - whoami_fp_compute (whoami/fingerprint.c) on real
 * trees: reuse of an earlier result (an unchanged file is not read again,
 * counted by the kernel's rchar; a changed one is, even with its mtime put
 * back; a racily fresh one is), whoami_fp_diff, paths longer than
 * PATH_MAX, FIFOs and symlink loops, unreadable files (as nobody when
 * root), and a missing root. */
#include <grp.h>
#include <sys/wait.h>

#include "../../whoami/fingerprint.c"
#include "../../whoami/glob.c"
#include "tap.h"

#define MiB (1024 * 1024)

static char dir[] = "/tmp/test_whoami_fp.XXXXXX";

/* Bytes this process has read so far (/proc/self/io rchar). */
static long long rchar(void)
{
    char buf[512];
    long long v = -1;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return -1;
    while (fgets(buf, sizeof buf, f))
        if (sscanf(buf, "rchar: %lld", &v) == 1)
            break;
    fclose(f);
    return v;
}

static void write_file(const char *rel, char fill, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < n; i++)
        fputc(fill, f);
    fclose(f);
}

static struct whoami_patterns py = {(char *[]){"**/*.py"}, 1, (char *[]){"skip/**"}, 1};

static const struct whoami_file *find(const struct whoami_fp *fp, const char *path)
{
    for (size_t i = 0; i < fp->n; i++)
        if (strcmp(fp->file[i].path, path) == 0)
            return &fp->file[i];
    return NULL;
}

static void test_reuse(void)
{
    char err[512] = "", path[512];
    struct whoami_fp a, b, c;
    write_file("big.py", 'b', 4 * MiB);
    write_file("small.py", 's', 100);
    sleep(2);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL); /* both now older than WHOAMI_RACY_NS */
    write_file("fresh.py", 'f', MiB);

    long long r0 = rchar();
    is_int(whoami_fp_compute(dir, &py, NULL, &a, err, sizeof err), 0, "first pass: %s", err);
    long long r1 = rchar();
    is_int((long long)a.n, 3, "three files");
    ok(r1 - r0 >= 5 * MiB, "the first pass read all 5 MiB (rchar +%lld)", r1 - r0);

    is_int(whoami_fp_compute(dir, &py, &a, &b, err, sizeof err), 0, "second pass with prev");
    long long r2 = rchar();
    is_str(b.hash, a.hash, "the same hash");
    ok(r2 - r1 >= MiB && r2 - r1 < 2 * MiB,
       "only fresh.py (written within 2 s of the first pass) was read again (rchar +%lld)",
       r2 - r1);

    /* same size, mtime put back: only the ctime tells */
    const struct whoami_file *small = find(&b, "small.py");
    struct timespec times[2] = {{0, UTIME_OMIT},
                                {small->mtime_ns / 1000000000LL, small->mtime_ns % 1000000000LL}};
    write_file("small.py", 'S', 100);
    snprintf(path, sizeof path, "%s/small.py", dir);
    utimensat(AT_FDCWD, path, times, 0);
    is_int(whoami_fp_compute(dir, &py, &b, &c, err, sizeof err), 0, "third pass after an edit");
    long long r3 = rchar();
    ok(strcmp(c.hash, b.hash) != 0, "the edit changed the hash (mtime and size unchanged)");
    ok(r3 - r2 < 4 * MiB, "big.py was still not read (rchar +%lld)", r3 - r2);
    const char *changed[4];
    is_int((long long)whoami_fp_diff(&b, &c, changed, 4), 1, "diff: one path changed");
    is_str(changed[0], "small.py", "  small.py");

    write_file("new.py", 'n', 1);
    snprintf(path, sizeof path, "%s/big.py", dir);
    unlink(path);
    whoami_fp_free(&a);
    is_int(whoami_fp_compute(dir, &py, &c, &a, err, sizeof err), 0, "fourth pass");
    is_int((long long)whoami_fp_diff(&c, &a, changed, 1), 2,
           "diff counts an added and a removed file");
    is_str(changed[0], "big.py", "  listing at most max of them, in path order");
    is_int((long long)whoami_fp_diff(&a, &a, changed, 4), 0, "no difference with itself");
    whoami_fp_free(&a);
    whoami_fp_free(&b);
    whoami_fp_free(&c);
}

static void test_odd_entries(void)
{
    char err[512] = "", path[512];
    struct whoami_fp fp;
    snprintf(path, sizeof path, "%s/fifo.py", dir);
    mkfifo(path, 0644);
    snprintf(path, sizeof path, "%s/loop", dir);
    symlink(".", path);
    snprintf(path, sizeof path, "%s/self.py", dir);
    symlink("self.py", path);
    snprintf(path, sizeof path, "%s/skip", dir);
    mkdir(path, 0755);
    write_file("skip/x.py", 'x', 1);
    is_int(whoami_fp_compute(dir, &py, NULL, &fp, err, sizeof err), 0,
           "a FIFO and symlink loops: %s", err);
    ok(!find(&fp, "fifo.py"), "the FIFO is ignored (and not opened: no hang)");
    ok(find(&fp, "self.py") && find(&fp, "self.py")->type == 'l',
       "a link to itself is an 'l' record");
    ok(!find(&fp, "loop/small.py"), "a link to a folder is not followed");
    ok(!find(&fp, "skip/x.py"), "an excluded folder adds nothing");
    whoami_fp_free(&fp);
}

static void test_long_path(void)
{
    char name[201], err[512] = "";
    memset(name, 'd', 200);
    name[200] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    for (int i = 0; i < 30; i++) { /* 30 * 201 bytes: beyond PATH_MAX */
        mkdirat(fd, name, 0755);
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY);
        close(fd);
        fd = next;
    }
    int f = openat(fd, "deep.py", O_WRONLY | O_CREAT, 0644);
    close(f);
    close(fd);
    struct whoami_fp fp;
    is_int(whoami_fp_compute(dir, &py, NULL, &fp, err, sizeof err), 0,
           "a tree deeper than PATH_MAX: %s", err);
    const struct whoami_file *deep = NULL;
    for (size_t i = 0; i < fp.n; i++)
        if (strstr(fp.file[i].path, "deep.py"))
            deep = &fp.file[i];
    ok(deep && strlen(deep->path) > PATH_MAX && deep->type == 'f',
       "its file is fingerprinted (path of %zu bytes)", deep ? strlen(deep->path) : 0);
    whoami_fp_free(&fp);
}

/* Run as nobody when root: root reads a mode 000 file. Exit 0 when the
 * unreadable file is a 'u' record with the empty digest. */
static int check_unreadable(void)
{
    static const unsigned char empty[4] = {0xe3, 0xb0, 0xc4, 0x42};
    char err[512] = "";
    struct whoami_fp fp;
    if (getuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
        return 3;
    if (whoami_fp_compute(dir, &py, NULL, &fp, err, sizeof err) < 0)
        return 4;
    const struct whoami_file *f = find(&fp, "secret.py");
    int r = f && f->type == 'u' && memcmp(f->digest, empty, 4) == 0 && !find(&fp, "locked/in.py")
                ? 0
                : 5;
    whoami_fp_free(&fp);
    return r;
}

static void test_unreadable(void)
{
    char path[512];
    write_file("secret.py", 's', 10);
    snprintf(path, sizeof path, "%s/secret.py", dir);
    chmod(path, 0);
    snprintf(path, sizeof path, "%s/locked", dir);
    mkdir(path, 0755);
    write_file("locked/in.py", 'i', 1);
    chmod(path, 0);
    chmod(dir, 0755);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(check_unreadable());
    int status = 0;
    waitpid(pid, &status, 0);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0,
           "an unreadable file is a 'u' record, an unreadable folder adds nothing%s",
           getuid() == 0 ? " (checked as nobody)" : "");
    chmod(path, 0755);
}

static void test_errors(void)
{
    char err[512] = "";
    struct whoami_fp fp;
    ok(whoami_fp_compute("/nonexistent/wtproxy", &py, NULL, &fp, err, sizeof err) == -1,
       "a missing root is an error");
    has_str(err,
            "cannot fingerprint /nonexistent/wtproxy: No such file or directory (give the "
            "checkout's folder)",
            "  that says so");
    ok(whoami_fp_compute("/etc/hostname", &py, NULL, &fp, err, sizeof err) == -1,
       "a file as root is an error");
    struct whoami_patterns none = {NULL, 0, NULL, 0};
    is_int(whoami_fp_compute(dir, &none, NULL, &fp, err, sizeof err), 0, "no include");
    is_str(fp.hash, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
           "  selects nothing: the hash of empty input");
    whoami_fp_free(&fp);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    test_reuse();
    test_odd_entries();
    test_long_path();
    test_unreadable();
    test_errors();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return done_testing();
}
