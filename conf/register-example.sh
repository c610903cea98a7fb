#!/bin/sh
# register-example.sh - route to a dev server that `wtproxy run` does not
# start (an IDE's run configuration, a runserver wrapper of your own).
#
#   conf/register-example.sh PORT CMD ARGS...
#   e.g. conf/register-example.sh 8123 python3 manage.py runserver 127.0.0.1:8123
#
# Run it inside the worktree. It starts CMD in the background, registers
# CMD's pid for this worktree on front 8000 (WTPROXY_FRONT to change), and
# waits for CMD. The daemon drops the entry by itself when CMD exits, so
# nothing needs undoing; stopping this script stops CMD. CMD has only just
# started, so the registration does not wait for the daemon's /__whoami
# verdict on it (--no-wait): `wtproxy ls` shows it once CMD listens.
set -eu
port=$1
shift
"$@" &
pid=$!
trap 'kill "$pid" 2>/dev/null' INT TERM HUP
if ! wtproxy register --no-wait --port "$port" --pid "$pid" --front "${WTPROXY_FRONT:-8000}"; then
    kill "$pid" 2>/dev/null
    exit 1
fi
wait "$pid"
