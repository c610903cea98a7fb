/* test_reg_db.c - the pure parts of `wtproxy db` and the PostgreSQL store:
 * slugs, derived names and their guards, the owner stamp, the migrations
 * hash, and password masking. Includes the .c files under test. */
#include "../../registry/reg_db.c"
#include "../../registry/reg_pg.c"

#include <unistd.h>

#include "tap.h"

static void test_slug(void)
{
    char out[64];
    reg_db_slug("wt-Feature/X.2", 20, out, sizeof out);
    is_str(out, "wt_feature_x_2", "slug: lowercase, runs of others one '_'");
    reg_db_slug("--a__b--", 20, out, sizeof out);
    is_str(out, "a_b", "  leading and trailing '_' dropped, runs merged");
    reg_db_slug("3d1219c7c4c5404aaa1f", 8, out, sizeof out);
    is_str(out, "3d1219c7", "  cut to its maximum");
    reg_db_slug("abcdefg-hij", 8, out, sizeof out);
    is_str(out, "abcdefg", "  a cut that ends in '_' drops it");
    reg_db_slug("ÄÖ", 8, out, sizeof out);
    is_str(out, "", "  nothing left of non-ASCII");
}

static void test_names(void)
{
    char name[128], err[512];
    ok(reg_db_name("test_shop", "m1", "/x/wt-a", name, sizeof name, err, sizeof err) == 0,
       "test_shop on m1 in /x/wt-a");
    is_str(name, "test_shop_m1_wt_a", "  <base>_<machine>_<worktree>");
    ok(reg_db_name("test_shop", "3D1219C7C4C5404A", "/x/My Branch", name, sizeof name, err,
                   sizeof err) == 0,
       "a machine-id and a folder with spaces");
    is_str(name, "test_shop_3d1219c7_my_branch", "  slugged");
    ok(reg_db_name("shop", "m1", "/x/wt-a", name, sizeof name, err, sizeof err) < 0,
       "no \"test\": refused");
    ok(strstr(err, "must contain \"test\"") != NULL, "  says which rule: %s", err);
    ok(reg_db_check_name("Test_shop", err, sizeof err) < 0 && strstr(err, "^[a-z0-9_]+$"),
       "uppercase: the charset rule");
    ok(reg_db_check_name("test-shop", err, sizeof err) < 0 && strstr(err, "^[a-z0-9_]+$"),
       "a dash: the charset rule");
    char n60[61], n61[62];
    memset(n60, 'x', 60);
    memcpy(n60, "test", 4);
    n60[60] = '\0';
    memset(n61, 'x', 61);
    memcpy(n61, "test", 4);
    n61[61] = '\0';
    ok(reg_db_check_name(n60, err, sizeof err) == 0, "60 bytes: room for _NN within 63");
    ok(reg_db_check_name(n61, err, sizeof err) < 0 && strstr(err, "_NN"),
       "61 bytes: refused for the workers' suffix");
    ok(reg_db_name("test_shop", "--", "/x/wt-a", name, sizeof name, err, sizeof err) < 0,
       "a machine id with nothing to slug: refused");
}

static void test_stamp(void)
{
    char s[PATH_MAX + 256];
    struct reg_db_owner o;
    reg_db_stamp("m1", "/x/wt:a", "", "sha256:ab", s, sizeof s);
    is_str(s, "wtproxy:m1:/x/wt:a|sha256:ab", "the stamp");
    ok(reg_db_parse_stamp(s, &o) == 0, "  parses back");
    is_str(o.machine, "m1", "  machine");
    is_str(o.id, "", "  no identity");
    is_str(o.worktree, "/x/wt:a", "  worktree (with a ':')");
    is_str(o.hash, "sha256:ab", "  hash");
    reg_db_stamp("m1", "/x/wt:a", "1234.1796609848.280759743", "dev", s, sizeof s);
    is_str(s, "wtproxy:m1:1234.1796609848.280759743:/x/wt:a|dev", "the stamp with an identity");
    ok(reg_db_parse_stamp(s, &o) == 0, "  parses back");
    is_str(o.id, "1234.1796609848.280759743", "  identity");
    is_str(o.worktree, "/x/wt:a", "  worktree");
    is_str(o.hash, "dev", "  hash");
    ok(reg_db_parse_stamp("wtproxy:m1:/x|", &o) == 0 && o.hash[0] == '\0', "an empty hash");
    ok(reg_db_parse_stamp("made by hand", &o) < 0, "a comment not ours");
    ok(reg_db_parse_stamp("wtproxy:m1", &o) < 0, "a cut stamp");
    ok(reg_db_parse_stamp(NULL, &o) < 0, "no comment");
}

static void test_hash_dir(void)
{
    char dir[] = "/tmp/wtp-test-db-XXXXXX", path[PATH_MAX], h1[96], h2[96], h3[96], err[256];
    ok(mkdtemp(dir) != NULL, "a temporary folder");
    snprintf(path, sizeof path, "%s/0001.py", dir);
    FILE *f = fopen(path, "w");
    fputs("one\n", f);
    fclose(f);
    ok(reg_db_hash_dir(dir, h1, sizeof h1, err, sizeof err) == 0, "hash a folder");
    ok(strncmp(h1, "sha256:", 7) == 0 && strlen(h1) == 71, "  sha256:<64 hex>: %s", h1);
    snprintf(path, sizeof path, "%s/__pycache__", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/__pycache__/0001.pyc", dir);
    f = fopen(path, "w");
    fputs("cache", f);
    fclose(f);
    reg_db_hash_dir(dir, h2, sizeof h2, err, sizeof err);
    is_str(h2, h1, "  caches do not count");
    snprintf(path, sizeof path, "%s/0001.py", dir);
    f = fopen(path, "a");
    fputs("two\n", f);
    fclose(f);
    reg_db_hash_dir(dir, h3, sizeof h3, err, sizeof err);
    ok(strcmp(h3, h1) != 0, "  an edit changes it");
    ok(reg_db_hash_dir("/nonexistent-wtp", h3, sizeof h3, err, sizeof err) < 0,
       "a missing folder: an error: %s", err);
    unlink(path);
    snprintf(path, sizeof path, "%s/__pycache__/0001.pyc", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/__pycache__", dir);
    rmdir(path);
    rmdir(dir);
}

static void test_mask(void)
{
    static const char *const cases[][2] = {
        {"postgresql://u:secret@h:5432/db", "postgresql://u:***@h:5432/db"},
        {"postgres://u:p%40ss@h/db?sslmode=require", "postgres://u:***@h/db?sslmode=require"},
        {"postgresql://u@h/db", "postgresql://u@h/db"},
        {"postgresql://h/db?user=u&password=secret&sslmode=x",
         "postgresql://h/db?user=u&password=***&sslmode=x"},
        {"host=h password=secret dbname=d", "host=h password=*** dbname=d"},
        {"host=h password = 'a b\\' c' dbname=d", "host=h password = *** dbname=d"},
        {"password=secret", "password=***"},
        {"host=h mypassword=x", "host=h mypassword=x"},
        {"postgresql:///wtproxy_devtools", "postgresql:///wtproxy_devtools"},
        {"", ""},
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reg_pg_mask(cases[i][0], out, sizeof out);
        is_str(out, cases[i][1], "mask \"%s\"", cases[i][0]);
    }
    char tiny[12];
    reg_pg_mask("postgresql://u:secret@h/db", tiny, sizeof tiny);
    ok(strstr(tiny, "sec") == NULL, "a short buffer never shows the password: %s", tiny);
}

static void test_kinds(void)
{
    char err[512], name[128];
    ok(reg_db_check_dev_name("shop_m1_wt_a", "shop", NULL, err, sizeof err) == 0,
       "dev: shop_m1_wt_a from base shop");
    ok(reg_db_check_dev_name("shop", "shop", NULL, err, sizeof err) < 0 &&
           strstr(err, "the shared database itself"),
       "dev: never the base: %s", err);
    ok(reg_db_check_dev_name("main_dev", NULL, "main_dev", err, sizeof err) < 0,
       "dev: never the --from source");
    memset(name, 'd', 63);
    name[63] = '\0';
    ok(reg_db_check_dev_name(name, NULL, NULL, err, sizeof err) == 0, "dev: 63 bytes fit");
    strcat(name, "d");
    ok(reg_db_check_dev_name(name, NULL, NULL, err, sizeof err) < 0, "dev: 64 do not");
    ok(reg_db_check_dev_name("Shop", NULL, NULL, err, sizeof err) < 0, "dev: the charset");
    ok(reg_db_check_template_name("test_app_m1_wt_a", err, sizeof err) == 0, "template ok");
    memcpy(name, "test", 4);
    memset(name + 4, 't', 51);
    name[55] = '\0';
    ok(reg_db_check_template_name(name, err, sizeof err) < 0 && strstr(err, "at most 54"),
       "template: room for _<suffix>: %s", err);
    ok(reg_db_check_suffix("w12", err, sizeof err) == 0, "suffix w12");
    ok(reg_db_check_suffix("w_1", err, sizeof err) < 0, "suffix: no '_'");
    ok(reg_db_check_suffix("abcdefghi", err, sizeof err) < 0, "suffix: at most 8");
    ok(reg_db_check_suffix("", err, sizeof err) < 0, "suffix: not empty");
    ok(reg_db_kind_of("") == REG_DB_TEST && reg_db_kind_of("sha256:ab") == REG_DB_TEST,
       "kind: a hash or none is a test database");
    ok(reg_db_kind_of("dev") == REG_DB_DEV, "kind: dev");
    ok(reg_db_kind_of("template:sha256:ab") == REG_DB_TEMPLATE &&
           reg_db_kind_of("template-pending:x") == REG_DB_TEMPLATE,
       "kind: template");
    ok(reg_db_kind_of("copy:test_app_m1_wt_a") == REG_DB_COPY, "kind: copy");
    struct reg_db_owner o;
    ok(reg_db_parse_stamp("wtproxy:m1:/x/wt-a|copy:test_app_m1_wt_a", &o) == 0 &&
           o.kind == REG_DB_COPY && strcmp(o.worktree, "/x/wt-a") == 0,
       "a copy's stamp parses");
}

/* A failed start's lines naming the dev database `db claim --dev BASE`
 * gives this worktree: its base; any other database: none. */
static void test_missing_dev(void)
{
    char db[64], base[64];
    const char *lines = "django.db.utils.OperationalError: connection to server failed: FATAL:  "
                        "database \"notes_3d1219c7_wt_a\" does not exist\n";
    ok(reg_db_missing_dev(lines, "3D1219C7C4C5", "/x/wt-a", db, sizeof db, base, sizeof base) == 1,
       "a missing dev database of this worktree");
    is_str(db, "notes_3d1219c7_wt_a", "  its name");
    is_str(base, "notes", "  its base, for db claim --dev");
    ok(reg_db_missing_dev(lines, "3d1219c7", "/x/wt-b", db, sizeof db, base, sizeof base) == 0,
       "another worktree's name: not this one's to claim");
    ok(reg_db_missing_dev("FATAL:  database \"shop\" does not exist", "m1", "/x/wt-a", db,
                          sizeof db, base, sizeof base) == 0,
       "a fixed name: not a claimed one");
    ok(reg_db_missing_dev("database \"notes_m1_wt_a\" is being accessed", "m1", "/x/wt-a", db,
                          sizeof db, base, sizeof base) == 0,
       "another error about it");
}

/* A failed start's lines saying its PostgreSQL refused the connection
 * (psycopg2 and Django, libpq before 14, node-postgres): its host and
 * port, with pg_isready; a refusal of another server: none. */
static void test_refused(void)
{
    char fix[512];
    const char *want = "its database server at 127.0.0.1:5499 does not answer: start it "
                       "(pg_isready -h 127.0.0.1 -p 5499 says when it answers)";
    ok(reg_db_refused("psycopg2.OperationalError: connection to server at \"127.0.0.1\", port "
                      "5499 failed: Connection refused\n\tIs the server running on that host and "
                      "accepting TCP/IP connections?\n",
                      fix, sizeof fix) == 1,
       "psycopg2's refusal");
    is_str(fix, want, "  its host, port and pg_isready");
    ok(reg_db_refused("django.db.utils.OperationalError: connection to server at \"127.0.0.1\", "
                      "port 5499 failed: Connection refused\n",
                      fix, sizeof fix) == 1 &&
           strcmp(fix, want) == 0,
       "Django's: %s", fix);
    ok(reg_db_refused("django.db.utils.OperationalError: could not connect to server: Connection "
                      "refused\n\tIs the server running on host \"127.0.0.1\" and accepting\n"
                      "\tTCP/IP connections on port 5499?\n",
                      fix, sizeof fix) == 1 &&
           strcmp(fix, want) == 0,
       "libpq before 14: %s", fix);
    ok(reg_db_refused("Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap."
                      "afterConnect [as oncomplete] (node:net:1555:16)\n",
                      fix, sizeof fix) == 1 &&
           strstr(fix, "at 127.0.0.1:5432 does not answer") &&
           strstr(fix, "pg_isready -h 127.0.0.1 -p 5432"),
       "node-postgres: %s", fix);
    ok(reg_db_refused("Error: connect ECONNREFUSED 127.0.0.1:6379\n    at TCPConnectWrap.\n", fix,
                      sizeof fix) == 0,
       "another server's refusal (Redis): not PostgreSQL");
    ok(reg_db_refused("redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. "
                      "Connection refused.\n",
                      fix, sizeof fix) == 0,
       "Python's Redis: not PostgreSQL");
}

int main(void)
{
    test_slug();
    test_names();
    test_stamp();
    test_hash_dir();
    test_mask();
    test_kinds();
    test_missing_dev();
    test_refused();
    return done_testing();
}
