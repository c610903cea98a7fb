"""Django test databases of this worktree's own, claimed by wtproxy.

Two settings lines (conf/DJANGO-TESTS.md has the whole diff)::

    from wtproxy_whoami.django_db import claimed_databases
    DATABASES = claimed_databases({...})   # dev NAME and TEST NAME per worktree
    TEST_RUNNER = "wtproxy_whoami.django_db.ClaimingTestRunner"

after which ``python3 manage.py test`` (with --parallel, with labels) is safe
while other worktrees run theirs against the same PostgreSQL. pytest-django:
wtproxy_whoami.pytest_db.

Every claim is made by the wtproxy CLI (`wtproxy db claim`, `wtproxy db
names`): the naming, the ownership stamp, the lock and the refusals exist
once, in C; this module only runs it and reads its KEY=VALUE output.
"""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["claimed_databases", "claimed_caches", "claim_test_databases", "ClaimingTestRunner"]


def _wtproxy():
    return os.environ.get("WTPROXY_BIN", "wtproxy")


def _run(args, settings_dict=None):
    """Run `wtproxy db ARGS --print-env`; returns (env dict, stderr).

    The server is the one the settings name (HOST, PORT, USER; the password
    through PGPASSWORD, never on a command line) unless WTPROXY_DB_SERVER
    says otherwise. Raises RuntimeError with wtproxy's own message.
    """
    env = dict(os.environ)
    if settings_dict and "WTPROXY_DB_SERVER" not in env:
        parts = ["dbname=postgres"]
        for key, word in (("HOST", "host"), ("PORT", "port"), ("USER", "user")):
            if settings_dict.get(key):
                parts.append("%s=%s" % (word, settings_dict[key]))
        env["WTPROXY_DB_SERVER"] = " ".join(parts)
        if settings_dict.get("PASSWORD"):
            env["PGPASSWORD"] = str(settings_dict["PASSWORD"])
    try:
        done = subprocess.run([_wtproxy(), "db"] + args + ["--print-env"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
    except FileNotFoundError:
        raise RuntimeError("wtproxy is not on PATH (or WTPROXY_BIN): install it, or take "
                           "TEST_RUNNER out of the settings to run without a claim")
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or "wtproxy db %s failed" % args[0])
    out = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out, done.stderr


def claimed_databases(databases, alias="default", dev_base=None, test_base=None):
    """Return databases with alias's NAME set to this worktree's dev
    database and TEST NAME to its test database, as `wtproxy db names`
    derives them (pure: no server is touched, so settings may run it on
    every import). dev_base defaults to NAME as written (e.g. "shop" gives
    shop_<machine>_<worktree>), test_base to "test_" + that. The dev
    database itself is made once per worktree: `wtproxy db claim --dev
    shop [--from shop]`. Without wtproxy (CI, production) the settings are
    returned unchanged, with a note on stderr.
    """
    db = dict(databases[alias])
    dev_base = dev_base or db["NAME"]
    test_base = test_base or "test_" + dev_base
    try:
        env, _ = _run(["names", "--dev", dev_base, "--base", test_base])
    except RuntimeError as e:
        print("wtproxy_whoami: database names unchanged: %s" % e, file=sys.stderr)
        return databases
    db["NAME"] = env["WTPROXY_DEV_DB"]
    db["TEST"] = dict(db.get("TEST") or {}, NAME=env["WTPROXY_TEST_DB"])
    return dict(databases, **{alias: db})


# Caches that live in one process: nothing another worktree's server shares.
_PROCESS_CACHES = ("django.core.cache.backends.locmem.LocMemCache",
                   "django.core.cache.backends.dummy.DummyCache")


def claimed_caches(caches):
    """Return caches with each shared cache's KEY_PREFIX led by this
    worktree's name, as `wtproxy db names` derives a database's
    (cache_<machine>_<worktree>): worktrees whose settings share one Redis,
    Memcached, cache table or cache folder no longer read each other's
    cached pages and sessions (a test passed on another branch's page
    from @cache_page). Pure, as claimed_databases; without wtproxy (CI,
    production) caches are returned unchanged, with a note on stderr.
    """
    try:
        env, _ = _run(["names", "--dev", "cache"])
    except RuntimeError as e:
        print("wtproxy_whoami: cache key prefixes unchanged: %s" % e, file=sys.stderr)
        return caches
    mine = env["WTPROXY_DEV_DB"]
    out = {}
    for alias, conf in caches.items():
        conf = dict(conf)
        if conf.get("BACKEND") not in _PROCESS_CACHES:
            theirs = conf.get("KEY_PREFIX")
            conf["KEY_PREFIX"] = "%s:%s" % (mine, theirs) if theirs else mine
        out[alias] = conf
    return out


def migrations_hash():
    """SHA-256 of every installed app's migration files (path and bytes),
    so that a branch switch that changes them gets a fresh test database
    and one that does not keeps it."""
    from django.apps import apps

    h = hashlib.sha256()
    for app in sorted(apps.get_app_configs(), key=lambda a: a.label):
        folder = Path(app.path) / "migrations"
        for f in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            h.update(("%s/%s" % (app.label, f.name)).encode() + b"\0")
            h.update(f.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


def _test_base(settings_dict):
    from django.conf import settings

    return getattr(settings, "WTPROXY_TEST_DB_BASE", None) or "test_" + settings_dict["NAME"]


def claim_test_databases(verbosity=1, min_free=None):
    """Claim the test database of every PostgreSQL alias through `wtproxy
    db claim`: TEST NAME exactly when set (claimed_databases sets it), else
    --base WTPROXY_TEST_DB_BASE or test_<NAME>. min_free: the connections
    the server must have free (wtproxy's default when None). Sets TEST
    NAME to the claimed name and returns the names. Raises RuntimeError
    when refused.
    """
    from django.db import connections

    names, digest = [], migrations_hash()
    for alias in connections:
        conn = connections[alias]
        sd = conn.settings_dict
        if conn.vendor != "postgresql" or sd.get("TEST", {}).get("MIRROR"):
            continue
        name = sd.get("TEST", {}).get("NAME")
        which = ["--name", name] if name else ["--base", _test_base(sd)]
        free = ["--min-free-connections", str(min_free)] if min_free is not None else []
        env, err = _run(["claim"] + which + ["--migrations-hash", digest] + free, sd)
        if verbosity >= 1 and err:
            sys.stderr.write(err)
        claimed = env.get("WTPROXY_TEST_DB") or env["WT_TEST_DB"]
        sd.setdefault("TEST", {})["NAME"] = claimed
        names.append(claimed)
    return names


def _drop_clones(parallel):
    """Drop <test name>_1 .. _N, Django's --parallel clones: with keepdb
    Django reuses a clone that exists, which after a migrations change has
    the old schema. Cloning again is a file copy on the server."""
    from django.db import connections

    for alias in connections:
        conn = connections[alias]
        if conn.vendor != "postgresql":
            continue
        name = conn.settings_dict["TEST"]["NAME"]
        with conn._nodb_cursor() as cursor:
            for i in range(1, parallel + 1):
                cursor.execute("DROP DATABASE IF EXISTS %s" % conn.ops.quote_name(
                    "%s_%d" % (name, i)))


try:
    from django.test.runner import DiscoverRunner
except ImportError:  # Django missing: the helpers above still import
    DiscoverRunner = object


class ClaimingTestRunner(DiscoverRunner):
    """manage.py test on this worktree's claimed test database, kept
    between runs (--keepdb is implied: wtproxy recreates the database when
    the migrations change, so keepdb never meets a stale schema)."""

    def __init__(self, *args, **kwargs):
        kwargs["keepdb"] = True
        super().__init__(*args, **kwargs)

    def setup_databases(self, **kwargs):
        # --parallel N holds N + 1 connections: ask for room for them all
        # (and wtproxy's default 5 at least), or the run would fail midway
        # with "too many clients already".
        claim_test_databases(self.verbosity, max(5, self.parallel + 2))
        if self.parallel > 1:
            _drop_clones(self.parallel)
        return super().setup_databases(**kwargs)
