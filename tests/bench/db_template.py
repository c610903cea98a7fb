#!/usr/bin/python3
"""db_template.py - time to a fresh migrated test database: migrating an
empty one against `wtproxy db copy` of this worktree's migrated template
(tests/bench/RESULTS-db-template.md).

A private PostgreSQL cluster (Debian's binaries, fsync off as in the
tests) and a schema of N migrations (default 300: tables with a foreign key to
the one before, added columns, indexes, a backfill), applied by one of two runners:

- sql: N SQL files, each its own transaction recorded in a
  schema_migrations table, all in one psql session (the fastest runner
  there is: the floor for any migration tool);
- django: a Django app with N migrations (CreateModel, AddField,
  AddIndex), `manage.py migrate` with Debian's /usr/bin/python3.

Rounds are interleaved (migrate, copy, migrate, copy, ...), each on a new
database name; the medians and their ratio are printed as a markdown table.

  tests/bench/db_template.py [--wtproxy build-rel/proxy/wtproxy] [--runner sql|django]
                             [--rounds 9] [--migrations 300]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import die, free_port, say, wait_port  # noqa: E402


def migration(i):
    """The i-th migration's SQL: a cycle of the steps real schemas take."""
    t = i // 3
    kind = i % 3
    if kind == 0:
        ref = f" REFERENCES t{t - 1} (id)" if t else ""
        return (f"CREATE TABLE t{t} (id bigserial PRIMARY KEY, name text NOT NULL, "
                f"created timestamptz NOT NULL DEFAULT now(), ref bigint{ref}, body jsonb);")
    if kind == 1:
        return (f"ALTER TABLE t{t} ADD COLUMN state text NOT NULL DEFAULT 'new'; "
                f"INSERT INTO t{t} (name) SELECT 'row ' || g FROM generate_series(1, 20) g;")
    return f"CREATE INDEX t{t}_state ON t{t} (state, created); UPDATE t{t} SET state = 'old';"


def write_migrations(d, n):
    os.makedirs(d)
    for i in range(n):
        with open(os.path.join(d, f"{i:04d}.sql"), "w") as f:
            f.write(migration(i) + "\n")


def runner_script(migrations):
    """One psql script applying every migration in its own transaction."""
    parts = ["CREATE TABLE schema_migrations (name text PRIMARY KEY, applied timestamptz);"]
    for name in sorted(os.listdir(migrations)):
        with open(os.path.join(migrations, name)) as f:
            sql = f.read()
        parts.append(f"BEGIN;\n{sql}INSERT INTO schema_migrations VALUES ('{name}', now());\nCOMMIT;")
    return "\n".join(parts) + "\n"


DJANGO_SETTINGS = """import os
SECRET_KEY = "bench"
INSTALLED_APPS = ["bench"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql",
    "NAME": os.environ["PGDATABASE"], "HOST": os.environ["PGHOST"],
    "PORT": os.environ["PGPORT"], "USER": os.environ["PGUSER"]}}
"""


def django_operation(i):
    """The i-th Django migration's operation: the same cycle as the SQL."""
    t = i // 3
    if i % 3 == 0:
        ref = (f"models.ForeignKey(null=True, on_delete=models.CASCADE, to='bench.t{t - 1}')"
               if t else "models.BigIntegerField(null=True)")
        return (f"migrations.CreateModel(name='T{t}', fields=[('id', models.BigAutoField("
                f"primary_key=True, serialize=False)), ('name', models.CharField(max_length=50)),"
                f" ('created', models.DateTimeField(auto_now_add=True)), ('ref', {ref})])")
    if i % 3 == 1:
        return (f"migrations.AddField('t{t}', 'state', models.CharField(default='new', "
                f"max_length=10))")
    return f"migrations.AddIndex('t{t}', models.Index(fields=['state', 'created'], name='t{t}_state'))"


def write_django(wt, n):
    """A Django project in wt whose app bench has n migrations."""
    mig = os.path.join(wt, "bench", "migrations")
    os.makedirs(mig)
    os.makedirs(os.path.join(wt, "proj"))
    for f, text in (("manage.py", "import os, sys\nos.environ.setdefault('DJANGO_SETTINGS_MODULE',"
                                  " 'proj.settings')\nfrom django.core.management import "
                                  "execute_from_command_line\nexecute_from_command_line(sys.argv)\n"),
                    ("proj/__init__.py", ""), ("proj/settings.py", DJANGO_SETTINGS),
                    ("bench/__init__.py", ""), ("bench/models.py", ""),
                    ("bench/migrations/__init__.py", "")):
        with open(os.path.join(wt, f), "w") as fh:
            fh.write(text)
    for i in range(n):
        dep = f"[('bench', '{i - 1:04d}_m')]" if i else "[]"
        with open(os.path.join(mig, f"{i:04d}_m.py"), "w") as fh:
            fh.write(f"from django.db import migrations, models\n\n\nclass Migration("
                     f"migrations.Migration):\n    dependencies = {dep}\n    operations = "
                     f"[{django_operation(i)}]\n")
    return mig


def start_pg(tmp):
    majors = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int)
    if not majors:
        die("PostgreSQL is not installed (Debian package postgresql)")
    bin_dir = f"/usr/lib/postgresql/{majors[-1]}/bin"
    as_owner = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    if os.getuid() == 0:
        shutil.chown(tmp, "postgres")
    data = os.path.join(tmp, "data")
    subprocess.run(as_owner + [f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "postgres",
                               "--no-sync", "--no-instructions"], check=True,
                   stdout=subprocess.DEVNULL)
    port = free_port()
    proc = subprocess.Popen(as_owner + [f"{bin_dir}/postgres", "-D", data, "-p", str(port), "-c",
                                        "listen_addresses=127.0.0.1", "-c",
                                        f"unix_socket_directories={tmp}", "-c", "fsync=off",
                                        "-c", "synchronous_commit=off"],
                            stderr=subprocess.DEVNULL)
    wait_port(port, proc, "postgres")
    return proc, port


def tpl_env(out):
    """The template's name from `wtproxy db template --print-env`."""
    for line in out.splitlines():
        if line.startswith("WTPROXY_TEMPLATE_DB="):
            return line.split("=", 1)[1]
    die(f"no WTPROXY_TEMPLATE_DB in {out!r}")


def psql(env, db, *args):
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, *args], env=env,
                   check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wtproxy", default=os.path.join(os.path.dirname(__file__),
                                                      "../../build-rel/proxy/wtproxy"))
    ap.add_argument("--runner", choices=("sql", "django"), default="sql")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--migrations", type=int, default=300)
    a = ap.parse_args()
    wtproxy = os.path.abspath(a.wtproxy)
    if not os.access(wtproxy, os.X_OK):
        die(f"no {wtproxy}: meson setup build-rel && meson compile -C build-rel")
    tmp = tempfile.mkdtemp(prefix="wtproxy-bench-db-")
    os.chmod(tmp, 0o755)
    pg, port = start_pg(tmp)
    try:
        wt = os.path.join(tmp, "wt")
        os.makedirs(wt)
        subprocess.run(["git", "init", "-q", wt], check=True)
        if a.runner == "sql":
            mig = os.path.join(wt, "migrations")
            write_migrations(mig, a.migrations)
            with open(os.path.join(wt, "migrate.sql"), "w") as f:
                f.write(runner_script(mig))
            migrate = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "migrate.sql"]
        else:
            mig = write_django(wt, a.migrations)
            migrate = ["/usr/bin/python3", "manage.py", "migrate", "--noinput", "-v", "0"]
        env = dict(os.environ, PGHOST="127.0.0.1", PGPORT=str(port), PGUSER="postgres",
                   PGDATABASE="postgres", WTPROXY_MACHINE="bench", PYTHONDONTWRITEBYTECODE="1")
        tpl = subprocess.run([wtproxy, "db", "template", "--base", "test_bench",
                              "--migrations-dir", mig, "--print-env", "--"] + migrate, cwd=wt,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if tpl.returncode != 0:
            die(tpl.stderr)
        tpl_name = tpl_env(tpl.stdout)
        times = {"migrate": [], "copy": [], "raw": []}
        for r in range(a.rounds):
            name = f"test_bench_migrated_{r}"
            t0 = time.monotonic()
            psql(env, "postgres", "-c", f"CREATE DATABASE {name}")
            subprocess.run(migrate, cwd=wt, env=dict(env, PGDATABASE=name), check=True,
                           stdout=subprocess.DEVNULL)
            times["migrate"].append(time.monotonic() - t0)
            t0 = time.monotonic()
            subprocess.run([wtproxy, "db", "copy", "--base", "test_bench", f"r{r}"], cwd=wt,
                           env=env, check=True, stderr=subprocess.DEVNULL)
            times["copy"].append(time.monotonic() - t0)
            t0 = time.monotonic()
            psql(env, "postgres", "-c", f"CREATE DATABASE test_bench_raw_{r} TEMPLATE {tpl_name}")
            times["raw"].append(time.monotonic() - t0)
            say(f"round {r + 1}: migrate {times['migrate'][-1]:.3f} s, "
                f"copy {times['copy'][-1]:.3f} s, raw {times['raw'][-1]:.3f} s")
        m, c = statistics.median(times["migrate"]), statistics.median(times["copy"])
        print(f"| way to a fresh migrated database ({a.migrations} migrations, runner "
              f"{a.runner}) | median | min | max |")
        print("|---|---|---|---|")
        for k, label in (("migrate", "CREATE DATABASE + " + " ".join(migrate[:3])),
                         ("copy", "`wtproxy db copy` of the migrated template"),
                         ("raw", "psql CREATE DATABASE ... TEMPLATE (no wtproxy: the floor)")):
            v = times[k]
            print(f"| {label} | {statistics.median(v) * 1000:.0f} ms | {min(v) * 1000:.0f} ms "
                  f"| {max(v) * 1000:.0f} ms |")
        print(f"\nratio (median migrate / median copy): {m / c:.1f}x over {a.rounds} "
              f"interleaved rounds; load average at the end: {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")
    finally:
        pg.terminate()
        pg.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
