#!/bin/sh
# run-django-tests.sh - this worktree's Django tests on a database of its own
# (conf/DJANGO-TESTS.md). Run it in the worktree, next to manage.py.
# Settings with TEST_RUNNER = "wtproxy_whoami.django_db.ClaimingTestRunner"
# need no wrapper: plain `python3 manage.py test` claims the same way.
# Usage: run-django-tests.sh [manage.py test ARGS...]
# Env: WTPROXY_DB_SERVER (else PGHOST/PGPORT/PGUSER) names the app's server;
# DB_BASE (default test_shop); PYTHON (default python3).
set -eu
base=${DB_BASE:-test_shop}
# The migrations' hash: every */migrations/*.py, so a branch switch that
# changes them gets a fresh database and one that does not keeps it.
hash=$(find . -path ./.git -prune -o -path '*/node_modules' -prune -o -path '*/.venv' -prune \
    -o -path '*/migrations/*.py' -type f -print | LC_ALL=C sort | xargs -r sha256sum \
    | sha256sum | cut -c1-64)
wtproxy db claim --base "$base" --migrations-hash "sha256:$hash" --write-env .env.wt
set -a
. ./.env.wt
set +a
exec "${PYTHON:-python3}" manage.py test --keepdb --noinput "$@"
