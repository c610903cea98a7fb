#!/usr/bin/env bash
# tests/bench/edit_turnaround.sh - how long the first request after an edit
# takes to be answered by the new code, for a dev server nothing reloads
# (Django's runserver --noreload under `wtproxy run --restart-on-stale`,
# the daemon at its default stale_grace).
#
# Two variants of the same server, the same binary, interleaved round by
# round, so that the second is the first's baseline in the same run:
#   said      the middleware says "reloads": false (its parent is the
#             wrapper): restarted at the first request after the edit
#   unsaid    the same server with a Python process between it and the
#             wrapper (so the middleware cannot tell and says nothing): the
#             daemon waits stale_grace for a reload that never comes, then
#             restarts it (what every such server paid before "reloads")
#
#   tests/bench/edit_turnaround.sh            ROUNDS=5 EDITS=3
#   WTPROXY_BIN=path                          this binary (default: build/,
#                                             the README's build)
# Prints one line per edit and a table of medians (ms from the request's
# start to the new code's answer).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-5} EDITS=${EDITS:-3}
BIN=${WTPROXY_BIN:-$repo/build/proxy/wtproxy}
[ -x "$BIN" ] || { echo "edit_turnaround.sh: no $BIN; run scripts/build first" >&2; exit 2; }
PY=/usr/bin/python3 # Debian's, with python3-django
work=$(mktemp -d /tmp/wtproxy-edit-bench.XXXXXX)
dpid='' rpid=''
cleanup() {
  [ -n "$rpid" ] && kill -TERM "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  [ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A one-view Django project in a git repository at $1.
make_app() {
  mkdir -p "$1/app" "$1/site_cfg" && cd "$1" && git init -q .
  printf '%s\n' "import os, sys" \
    "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'site_cfg.settings')" \
    "from django.core.management import execute_from_command_line" \
    "execute_from_command_line(sys.argv)" >manage.py
  : >site_cfg/__init__.py && : >app/__init__.py
  printf '%s\n' "SECRET_KEY = 'bench'; DEBUG = True; ALLOWED_HOSTS = ['*']" \
    "INSTALLED_APPS = []; DATABASES = {}; ROOT_URLCONF = 'site_cfg.urls'" \
    "MIDDLEWARE = ['wtproxy_whoami.django.WhoamiMiddleware']" >site_cfg/settings.py
  printf '%s\n' "from django.urls import path" "from app import views" \
    "urlpatterns = [path('hello/', views.hello)]" >site_cfg/urls.py
  view v0
  cd - >/dev/null
}
view() { printf 'from django.http import HttpResponse\ndef hello(r): return HttpResponse("%s")\n' "$1" >app/views.py; }

# One variant's server under wtproxy run; its edits; each request's ms.
measure() {
  local variant=$1 app=$work/$1 front=$2 out=$3
  local cmd=("$PY" manage.py runserver --noreload '127.0.0.1:{port}')
  [ "$variant" = unsaid ] && cmd=("$PY" -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' "${cmd[@]}")
  cd "$app"
  "$BIN" run --front "$front" --restart-on-stale -- "${cmd[@]}" >"$work/run-$variant.log" 2>&1 &
  rpid=$!
  for _ in $(seq 300); do grep -q 'is ready' "$work/run-$variant.log" && break; sleep 0.1; done
  curl -fsS -o /dev/null -H "X-Wtproxy-Worktree: $app" "127.0.0.1:$front/hello/"
  for e in $(seq "$EDITS"); do
    sleep 1.2 # a later mtime than the server's start or last restart
    view "$variant-$e"
    local t0 t1 body
    t0=$(date +%s%N)
    body=$(curl -sS -m 90 -H "X-Wtproxy-Worktree: $app" "127.0.0.1:$front/hello/")
    t1=$(date +%s%N)
    [ "$body" = "$variant-$e" ] || { echo "edit_turnaround.sh: $variant got \"$body\"" >&2; exit 1; }
    echo "$variant $(((t1 - t0) / 1000000))" | tee -a "$out"
  done
  kill -TERM "$rpid" && wait "$rpid" 2>/dev/null || true
  rpid=''
  cd - >/dev/null
}

export PYTHONPATH=$repo/whoami/python WTPROXY_CONTROL=$work/control.sock WTPROXY_NO_AUTOSTART=1
front=$(( 20000 + RANDOM % 20000 ))
"$BIN" serve --control "$work/control.sock" --state "$work/state.json" --listen "$front" \
  >"$work/daemon.log" 2>&1 &
dpid=$!
make_app "$work/said" && make_app "$work/unsaid"
sleep 0.5
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="said unsaid"; else order="unsaid said"; fi
  for v in $order; do measure "$v" "$front" "$work/ms"; done
done
echo
echo "build: $BIN ($(meson introspect "$repo/build" --buildoptions 2>/dev/null |
  "$PY" -c 'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o["buildtype"], "b_lto="+str(o["b_lto"]).lower())' 2>/dev/null || echo "options unknown"))"
"$PY" - "$work/ms" <<'EOF'
import statistics, sys
ms = {}
for line in open(sys.argv[1]):
    v, n = line.split()
    ms.setdefault(v, []).append(int(n))
said, unsaid = statistics.median(ms['said']), statistics.median(ms['unsaid'])
print('| server | edits | median ms | min-max |')
print('|---|---|---|---|')
for v, label in (('said', 'says "reloads": false'), ('unsaid', 'says nothing (baseline)')):
    print(f'| {label} | {len(ms[v])} | {statistics.median(ms[v]):.0f} | {min(ms[v])}-{max(ms[v])} |')
print(f'\nratio said/unsaid: {said / unsaid:.2f}x')
EOF
