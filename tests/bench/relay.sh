#!/usr/bin/env bash
# relay.sh - how much does wtproxy cost per request, next to nginx doing the
# same job?
#
# wrk on loopback against three targets, in interleaved rounds:
#   direct   wrk -> backend (nginx, one worker, small static body)
#   nginx    wrk -> nginx reverse proxy (one worker, upstream keepalive) -> backend
#   wtproxy  wrk -> wtproxy serve -> backend
# each with keep-alive clients and with `Connection: close` clients, for
# each client shape (wrk's threads x connections).
# wrk is pinned to one CPU, the backend and the proxies to another, so a
# proxy's req/s next to direct's shows the CPU that proxy adds per request.
#
# Usage: tests/bench/relay.sh            (see tests/bench/README.md)
# Env:   ROUNDS=5 DURATION=4 WARMUP=1 BODY_BYTES=128
#        SHAPES='1x50 2x50 1x500 2x500'  wrk -tTHREADS -cCONNECTIONS per shape;
#                              THREADS=.. and/or CONNECTIONS=.. alone make it
#                              the one shape THREADSxCONNECTIONS (1x50 if unset)
#        WTPROXY_BIN=path      bench this binary (default: the README's build,
#                              build/, made by scripts/build when absent)
#        BUILD=0               don't build or update build/; just use
#                              build/proxy/wtproxy unless WTPROXY_BIN is set
#        WTPROXY_CMD='cmd {listen} {backend}'  start the "wtproxy" target with
#                              this command instead ({listen}/{backend} become
#                              127.0.0.1:PORT); WTPROXY_CMD=nginx stands a second
#                              nginx proxy in for it (to test this script itself)
#        WRK_CPU=0 SERVER_CPU=1  the CPUs to pin to; PIN=0 turns pinning off
#        KEEP_TMP=1            keep the temp dir (configs, logs, wrk output)
#        IDENTIFY=1            identification on: wtproxy has no default backend;
#                              the backend is registered for a temp git worktree
#                              and wrk runs inside it, so every connection is
#                              identified by wrk's cwd (targets: close >= 0.7x
#                              nginx, keep-alive >= 1.0x)
#        GATE=1                the /__whoami gate: IDENTIFY=1, the worktree holds
#                              a realistic tree, the backend serves a static
#                              /__whoami naming it, and a fourth target,
#                              wtproxy-nogate (the same daemon with --whoami off),
#                              runs beside wtproxy (target: wtproxy/wtproxy-nogate
#                              >= 0.97 with keep-alive)
#        PY_FILES=200 NM_FILES=3000  the tree GATE=1 puts in the worktree
#        POOL=512              idle backend connections each proxy keeps (nginx
#                              upstream keepalive, wtproxy --pool-size): above
#                              the largest shape's connections, so that neither
#                              proxy closes backend connections it needs again
#        FLOOR=1               a target "floor": bench_floor_relay (floor_relay.c),
#                              the least any read/write socket proxy does per
#                              request on edge-triggered epoll: keep-alive, a
#                              bare TCP forwarder; Connection: close, a pooling
#                              relay that reads only Content-Length
#        FLOOR_BIN=path        that binary (default: build/tests/bench/bench_floor_relay,
#                              built with build/ unless BUILD=0)
#        URING=1               a target "uring": bench_floor_uring (floor_uring.c),
#                              the same floor on io_uring (no syscall of its own
#                              per request); needs liburing-dev when build/ is set up
#        URING_BIN=path        that binary (default: build/tests/bench/bench_floor_uring)
#        URING_SETUP=defer     its ring's setup flags: defer, coop, plain or sqpoll;
#                              more than one ('defer plain sqpoll'): the first is
#                              "uring", each other a target "uring:SETUP" beside it
#        COMPARE='NAME=BIN ...'  more wtproxy binaries (other builds), each a
#                              target "wtproxy:NAME" in every round beside
#                              wtproxy, judged against it and against nginx
# The report (markdown) goes to stdout, progress to stderr.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-4}
# client shapes: THREADSxCONNECTIONS; the old single-shape variables still work
if [[ -z ${SHAPES:-} ]]; then
  if [[ -n ${THREADS:-} || -n ${CONNECTIONS:-} ]]; then
    SHAPES="${THREADS:-1}x${CONNECTIONS:-50}"
  else
    SHAPES="1x50 2x50 1x500 2x500"
  fi
fi
WARMUP=${WARMUP:-1}
BODY_BYTES=${BODY_BYTES:-128}
WRK_CPU=${WRK_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
PIN=${PIN:-1}
BUILD=${BUILD:-1}
KEEP_TMP=${KEEP_TMP:-0}
WTPROXY_CMD=${WTPROXY_CMD:-}
POOL=${POOL:-512}
IDENTIFY=${IDENTIFY:-0}
GATE=${GATE:-0}
FLOOR=${FLOOR:-0}
URING=${URING:-0}
URING_SETUP=${URING_SETUP:-defer}
PY_FILES=${PY_FILES:-200}
NM_FILES=${NM_FILES:-3000}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

say() { printf '%s\n' "$*" >&2; }
die() { printf 'relay.sh: FAIL: %s\n' "$*" >&2; exit 1; }

for v in ROUNDS DURATION WARMUP POOL BODY_BYTES WRK_CPU SERVER_CPU PY_FILES NM_FILES; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"
done
(( ROUNDS >= 1 && DURATION >= 1 )) || die "ROUNDS and DURATION must be >= 1"
read -ra shapes <<<"$SHAPES"
(( ${#shapes[@]} >= 1 )) || die "SHAPES is empty"
for sh in "${shapes[@]}"; do
  [[ $sh =~ ^([0-9]+)x([0-9]+)$ ]] || die "a shape is THREADSxCONNECTIONS (like 2x500), got '$sh'"
  (( BASH_REMATCH[1] >= 1 && BASH_REMATCH[2] >= BASH_REMATCH[1] )) ||
    die "shape $sh: need 1 <= threads <= connections"
done
(( BODY_BYTES >= 2 )) || die "BODY_BYTES must be >= 2"
[[ $IDENTIFY == 0 || $IDENTIFY == 1 ]] || die "IDENTIFY must be 0 or 1, got '$IDENTIFY'"
[[ $GATE == 0 || $GATE == 1 ]] || die "GATE must be 0 or 1, got '$GATE'"
[[ $FLOOR == 0 || $FLOOR == 1 ]] || die "FLOOR must be 0 or 1, got '$FLOOR'"
[[ $URING == 0 || $URING == 1 ]] || die "URING must be 0 or 1, got '$URING'"
read -ra uring_setups <<<"$URING_SETUP"
(( ${#uring_setups[@]} >= 1 )) || die "URING_SETUP is empty"
for u in "${uring_setups[@]}"; do
  [[ $u =~ ^(defer|coop|plain|sqpoll)$ ]] || die "URING_SETUP takes defer, coop, plain or sqpoll; got '$u'"
done
# the gate checks registered backends only: it needs identification on
[[ $GATE == 1 ]] && IDENTIFY=1
COMPARE=${COMPARE:-}
cmp_names=() cmp_bins=()
for spec in $COMPARE; do
  [[ $spec =~ ^([A-Za-z0-9_.-]+)=(.+)$ ]] || die "COMPARE takes NAME=WTPROXY_BIN words, got '$spec'"
  b=${BASH_REMATCH[2]}; [[ $b == /* ]] || b=$PWD/$b
  [[ -x $b ]] || die "COMPARE: no wtproxy binary at $b"
  cmp_names+=("${BASH_REMATCH[1]}"); cmp_bins+=("$b")
done
[[ -z $COMPARE || ($IDENTIFY == 0 && -z $WTPROXY_CMD) ]] ||
  die "COMPARE compares wtproxy builds in the plain relay: leave IDENTIFY, GATE and WTPROXY_CMD unset"
[[ $IDENTIFY == 0 || -z $WTPROXY_CMD ]] ||
  die "IDENTIFY=1 benchmarks the real wtproxy: leave WTPROXY_CMD unset (WTPROXY_BIN picks the binary)"

# --- tools ------------------------------------------------------------------
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[[ -x $NGINX ]] || die "nginx not found (apt-get install -y nginx)"
command -v wrk >/dev/null || die "wrk not found (apt-get install -y wrk)"
tools=(curl python3 taskset)
[[ $IDENTIFY == 1 ]] && tools+=(git)
for t in "${tools[@]}"; do
  command -v "$t" >/dev/null || die "$t not found (apt-get install -y curl python3 util-linux)"
done

# --- temp dir and cleanup -----------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wtproxy-bench.XXXXXX")
pids=()
cleanup() {
  local rc=$? pid st
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 30); do
      st=$(ps -o stat= -p "$pid" 2>/dev/null || true)
      [[ -z $st || $st == Z* ]] && break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ $KEEP_TMP == 1 ]]; then
    say "relay.sh: kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- CPU pinning --------------------------------------------------------------
allowed=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
pinned=0
if [[ $PIN == 1 ]]; then
  if [[ $WRK_CPU != "$SERVER_CPU" && " $allowed " == *" $WRK_CPU "* && " $allowed " == *" $SERVER_CPU "* ]]; then
    pinned=1
  else
    say "relay.sh: WARNING: CPUs $WRK_CPU and $SERVER_CPU are not both usable (allowed: $allowed); running UNPINNED"
  fi
fi
on_wrk_cpu() { if [[ $pinned == 1 ]]; then taskset -c "$WRK_CPU" "$@"; else "$@"; fi; }

# --- which wtproxy --------------------------------------------------------------
standin=0
wtproxy_desc=
build_desc="not wtproxy's build (WTPROXY_CMD)"
if [[ $WTPROXY_CMD == nginx ]]; then
  standin=1
  wtproxy_desc="STAND-IN: a second nginx reverse proxy (WTPROXY_CMD=nginx), not wtproxy"
elif [[ -n $WTPROXY_CMD ]]; then
  wtproxy_desc="WTPROXY_CMD: $WTPROXY_CMD"
else
  if [[ -z ${WTPROXY_BIN:-} ]]; then
    # the README's build, the one people get: scripts/build makes build/ with
    # the project's default options; an existing build/ is brought up to date
    if [[ $BUILD == 1 ]]; then
      if [[ ! -f $repo/build/build.ninja ]]; then
        say "relay.sh: no build/: making the README's build with scripts/build (BUILD=0 or WTPROXY_BIN=... to skip)"
        "$repo/scripts/build" >"$tmp/build.log" 2>&1 ||
          { tail -n 30 "$tmp/build.log" >&2; die "scripts/build failed"; }
      else
        say "relay.sh: bringing build/ up to date (BUILD=0 or WTPROXY_BIN=... to skip)"
        meson compile -C "$repo/build" wtproxy >"$tmp/build.log" 2>&1 ||
          { tail -n 40 "$tmp/build.log" >&2; die "meson compile -C $repo/build wtproxy failed"; }
      fi
    fi
    WTPROXY_BIN=$repo/build/proxy/wtproxy
  fi
  [[ $WTPROXY_BIN == /* ]] || WTPROXY_BIN=$PWD/$WTPROXY_BIN
  [[ -x $WTPROXY_BIN ]] || die "no wtproxy binary at $WTPROXY_BIN"
  wtproxy_desc="$WTPROXY_BIN"
  build_desc=$(python3 "$here/build_info.py" "$WTPROXY_BIN") || die "build_info.py $WTPROXY_BIN failed"
  say "relay.sh: measuring $WTPROXY_BIN: $build_desc"
  if grep -qa -e __asan_init -e __tsan_init -e __msan_init "$WTPROXY_BIN"; then
    say "relay.sh: WARNING: $WTPROXY_BIN is built with a sanitizer; its numbers mean little"
    wtproxy_desc+=" (SANITIZER BUILD: numbers not representative)"
  fi
  # its own control socket and state file: a developer's running daemon
  # (and its registry) stays out of the measurement
  if [[ $IDENTIFY == 1 ]]; then
    # no default backend: a request is served only when its caller is
    # placed in the registered worktree (anyone else gets 503)
    WTPROXY_CMD="$(printf '%q' "$WTPROXY_BIN") serve --listen {listen}"
    wtproxy_desc+=" (identification on: no default backend, the backend registered for a temp worktree, wrk's cwd in it)"
    # the gate (on by default) needs a /__whoami on the backend: GATE=1
    # serves one and says --whoami on, so a config file cannot turn it off;
    # IDENTIFY=1 alone measures identification alone, as it did before the gate
    if [[ $GATE == 1 ]]; then
      WTPROXY_CMD+=" --whoami on"
    else
      WTPROXY_CMD+=" --whoami off"
      wtproxy_desc+=" (the /__whoami gate off: --whoami off)"
    fi
  else
    WTPROXY_CMD="$(printf '%q' "$WTPROXY_BIN") serve --listen {listen} --backend {backend}"
  fi
  WTPROXY_CMD+=" --pool-size $POOL --control $tmp/control.sock --state $tmp/registry.json"
fi

# --- the floor: a bare relay, built with build/ ------------------------------------
if [[ $FLOOR == 1 ]]; then
  if [[ -z ${FLOOR_BIN:-} ]]; then
    FLOOR_BIN=$repo/build/tests/bench/bench_floor_relay
    if [[ $BUILD == 1 ]]; then
      [[ -f $repo/build/build.ninja ]] || "$repo/scripts/build" >"$tmp/build-floor.log" 2>&1 ||
        { tail -n 30 "$tmp/build-floor.log" >&2; die "scripts/build failed"; }
      meson compile -C "$repo/build" bench_floor_relay >>"$tmp/build-floor.log" 2>&1 ||
        { tail -n 40 "$tmp/build-floor.log" >&2; die "meson compile -C $repo/build bench_floor_relay failed"; }
    fi
  fi
  [[ $FLOOR_BIN == /* ]] || FLOOR_BIN=$PWD/$FLOOR_BIN
  [[ -x $FLOOR_BIN ]] || die "FLOOR=1: no floor relay at $FLOOR_BIN (meson compile -C build bench_floor_relay)"
  say "relay.sh: the floor: $FLOOR_BIN"
fi

# --- the io_uring floor: the same relay on io_uring, built with build/ when liburing is there
if [[ $URING == 1 ]]; then
  if [[ -z ${URING_BIN:-} ]]; then
    URING_BIN=$repo/build/tests/bench/bench_floor_uring
    if [[ $BUILD == 1 ]]; then
      [[ -f $repo/build/build.ninja ]] || "$repo/scripts/build" >"$tmp/build-uring.log" 2>&1 ||
        { tail -n 30 "$tmp/build-uring.log" >&2; die "scripts/build failed"; }
      meson compile -C "$repo/build" bench_floor_uring >>"$tmp/build-uring.log" 2>&1 ||
        { tail -n 40 "$tmp/build-uring.log" >&2
          die "URING=1: build/ has no bench_floor_uring: it is built only with liburing (apt-get install -y liburing-dev && meson setup --reconfigure build)"; }
    fi
  fi
  [[ $URING_BIN == /* ]] || URING_BIN=$PWD/$URING_BIN
  [[ -x $URING_BIN ]] || die "URING=1: no io_uring floor at $URING_BIN (apt-get install -y liburing-dev && meson setup --reconfigure build && meson compile -C build bench_floor_uring)"
  say "relay.sh: the io_uring floor: $URING_BIN (setup $URING_SETUP)"
fi

# the work tree as the run starts (the binary may be older: see WTPROXY_BIN)
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$repo" status --porcelain 2>/dev/null) ]]; then commit+="+dirty"; fi

# --- is the machine quiet? ------------------------------------------------------
# Other work on the machine (a build, a test suite) moves the numbers a lot;
# interleaving spreads it over all targets, but say so in the report.
busy=$(python3 -c '
import time
def snap():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f), f[3] + f[4]
t0, i0 = snap(); time.sleep(1); t1, i1 = snap()
print(round(100 * (1 - (i1 - i0) / max(1, t1 - t0))))')
warnings=()
if (( busy > 10 )); then
  warnings+=("the machine was ${busy}% busy (all CPUs) in the second before the benchmark: other load makes the numbers noisy")
  say "relay.sh: WARNING: the machine is ${busy}% busy before the benchmark; numbers will be noisy"
fi

# --- ports, body, configs ---------------------------------------------------------
read -r port_backend port_nginx port_wtproxy port_nogate < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])
for s in ss: s.close()')

mkdir -p "$tmp/www"
python3 -c '
import sys
n = int(sys.argv[1])
line = "wtproxy relay bench body\n"
sys.stdout.write((line * (n // len(line) + 1))[:n - 1] + "\n")' "$BODY_BYTES" >"$tmp/www/body.txt"
path=/body.txt

# nginx_conf NAME PORT ROLE -> writes $tmp/NAME/nginx.conf; ROLE is backend or proxy
nginx_conf() {
  local name=$1 port=$2 role=$3 d=$tmp/$1
  mkdir -p "$d/tmp"
  {
    cat <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    server_tokens off;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    types { text/plain txt; }
    default_type text/plain;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
EOF
    if [[ $role == backend ]]; then
      cat <<EOF
    open_file_cache max=16 inactive=600s;
    open_file_cache_valid 600s;
    server {
        listen 127.0.0.1:$port;
        root $tmp/www;
        location / { }
        location = /__whoami { default_type application/json; }
    }
}
EOF
    else
      cat <<EOF
    upstream backend {
        server 127.0.0.1:$port_backend;
        keepalive $POOL;
        keepalive_requests 1000000;
        keepalive_timeout 30s;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_set_header X-Forwarded-For \$remote_addr;
            proxy_set_header X-Forwarded-Host \$http_host;
            proxy_set_header X-Forwarded-Proto \$scheme;
        }
    }
}
EOF
    fi
  } >"$d/nginx.conf"
}

# start NAME LOG CMD... : start CMD on the server CPU, remember its pid. The
# command is started directly (taskset execs it), so $! is its own pid, not a
# subshell's, and the cleanup trap kills the process itself.
start() {
  local name=$1 log=$2; shift 2
  local cmd=("$@")
  [[ $pinned == 1 ]] && cmd=(taskset -c "$SERVER_CPU" "$@")
  "${cmd[@]}" >"$log" 2>&1 &
  pids+=("$!")
  printf -v "pid_$name" '%s' "$!"
}

# wait_ready NAME PORT LOG : the process is alive and PORT accepts (or it said
# "listening on")
wait_ready() {
  local name=$1 port=$2 log=$3 pidvar=pid_$1
  local pid=${!pidvar}
  for _ in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null || [[ $(ps -o stat= -p "$pid") == Z* ]]; then
      tail -n 20 "$log" >&2
      die "$name exited before listening on 127.0.0.1:$port (log above)"
    fi
    if grep -q "listening on 127.0.0.1:$port" "$log" 2>/dev/null ||
       (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  tail -n 20 "$log" >&2
  die "$name did not listen on 127.0.0.1:$port within 10 s (log above)"
}

alive() {
  local name=$1 log=$2 pidvar=pid_$1
  local st
  st=$(ps -o stat= -p "${!pidvar}" 2>/dev/null || true)
  if [[ -z $st || $st == Z* ]]; then
    tail -n 20 "$log" >&2
    die "$name died during the benchmark (log above)"
  fi
}

nginx_conf backend "$port_backend" backend
nginx_conf nginx "$port_nginx" proxy
start backend "$tmp/backend/stderr.log" \
  "$NGINX" -p "$tmp/backend/" -c "$tmp/backend/nginx.conf" -e "$tmp/backend/error.log"
wait_ready backend "$port_backend" "$tmp/backend/stderr.log"
start nginx "$tmp/nginx/stderr.log" \
  "$NGINX" -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log"
wait_ready nginx "$port_nginx" "$tmp/nginx/stderr.log"

mkdir -p "$tmp/wtproxy"
wtproxy_log=$tmp/wtproxy/stderr.log
if [[ $standin == 1 ]]; then
  nginx_conf wtproxy "$port_wtproxy" proxy
  start wtproxy "$wtproxy_log" \
    "$NGINX" -p "$tmp/wtproxy/" -c "$tmp/wtproxy/nginx.conf" -e "$tmp/wtproxy/error.log"
else
  wt_cmd=${WTPROXY_CMD//\{listen\}/127.0.0.1:$port_wtproxy}
  wt_cmd=${wt_cmd//\{backend\}/127.0.0.1:$port_backend}
  say "relay.sh: starting: $wt_cmd"
  start wtproxy "$wtproxy_log" bash -c "exec $wt_cmd"
fi
wait_ready wtproxy "$port_wtproxy" "$wtproxy_log"
if [[ $GATE == 1 ]]; then
  # the same daemon with the gate off, its own control socket and state
  mkdir -p "$tmp/nogate"
  nogate_log=$tmp/nogate/stderr.log
  nogate_cmd="$(printf '%q' "$WTPROXY_BIN") serve --listen 127.0.0.1:$port_nogate --whoami off"
  nogate_cmd+=" --pool-size $POOL --control $tmp/nogate/control.sock --state $tmp/nogate/registry.json"
  say "relay.sh: starting: $nogate_cmd"
  start nogate "$nogate_log" bash -c "exec $nogate_cmd"
  wait_ready nogate "$port_nogate" "$nogate_log"
fi
# COMPARE: each other build as its own daemon, the same flags as wtproxy
cmp_ports=() cmp_descs=()
for i in "${!cmp_names[@]}"; do
  cmp_ports+=("$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')")
  mkdir -p "$tmp/cmp$i"
  c="$(printf '%q' "${cmp_bins[$i]}") serve --listen 127.0.0.1:${cmp_ports[$i]} --backend 127.0.0.1:$port_backend"
  c+=" --pool-size $POOL --control $tmp/cmp$i/control.sock --state $tmp/cmp$i/registry.json"
  say "relay.sh: starting wtproxy:${cmp_names[$i]}: $c"
  start "cmp$i" "$tmp/cmp$i/stderr.log" bash -c "exec $c"
  wait_ready "cmp$i" "${cmp_ports[$i]}" "$tmp/cmp$i/stderr.log"
  cmp_descs+=("wtproxy:${cmp_names[$i]}: ${cmp_bins[$i]}: $(python3 "$here/build_info.py" "${cmp_bins[$i]}")")
done

if [[ $FLOOR == 1 ]]; then
  port_floor=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$tmp/floor"
  start floor "$tmp/floor/stderr.log" "$FLOOR_BIN" "$port_floor" "$port_backend"
  wait_ready floor "$port_floor" "$tmp/floor/stderr.log"
fi
# uring_name SETUP -> the target's name: uring for the first setup, uring:SETUP for others
uring_name() { if [[ $1 == "${uring_setups[0]}" ]]; then echo uring; else echo "uring:$1"; fi; }
declare -A port_of_uring
if [[ $URING == 1 ]]; then
  for u in "${uring_setups[@]}"; do
    port_of_uring[$u]=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$tmp/uring-$u"
    # env execs the floor: the pid started is the floor's own
    start "uring_$u" "$tmp/uring-$u/stderr.log" \
      env FLOOR_URING_SETUP="$u" "$URING_BIN" "${port_of_uring[$u]}" "$port_backend"
    wait_ready "uring_$u" "${port_of_uring[$u]}" "$tmp/uring-$u/stderr.log"
  done
fi

# gate_check: proof that the gate is on in wtproxy and off in wtproxy-nogate.
# wtproxy shows the backend verified; after an edit to a .py file (the
# backend's static /__whoami now names older code) wtproxy refuses with 409
# stale-code once stale_grace has passed, while wtproxy-nogate serves; with
# the file restored wtproxy serves again.
gate_check() {
  local state py code
  state=$(wtproxy_cli ls --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
es = d.get("entries", d) if isinstance(d, dict) else d
print(" ".join(e.get("whoami", {}).get("state", "unchecked") for e in es))') ||
    die "wtproxy ls --json failed"
  [[ $state == verified ]] || die "wtproxy shows the backend's whoami state as '$state', want verified"
  # (no `| head` here: under pipefail its early exit can kill the script with SIGPIPE)
  py=$(cd "$wt" && python3 -c 'import glob; print(sorted(glob.glob("src/**/*.py", recursive=True))[0])')
  cp "$wt/$py" "$tmp/saved.py"
  echo "# edited by relay.sh's gate check" >>"$wt/$py"
  code=$(cd "$wt" && curl -sS --max-time 30 -o "$tmp/check1" -w '%{http_code}' "http://127.0.0.1:$port_wtproxy$path" 2>&1) ||
    die "wtproxy did not answer after an edit: $code"
  [[ $code == 409 ]] ||
    die "after an edit to $py, wtproxy answered $code, want 409 stale-code (is the gate off?): $(head -c 300 "$tmp/check1")"
  code=$(cd "$wt" && curl -sS --max-time 5 -o "$tmp/check1" -w '%{http_code}' "http://127.0.0.1:$port_nogate$path" 2>&1) ||
    die "wtproxy-nogate did not answer after an edit: $code"
  [[ $code == 200 ]] || die "after an edit, wtproxy-nogate answered $code, want 200 (is its gate on?)"
  cp "$tmp/saved.py" "$wt/$py"
  code=$(cd "$wt" && curl -sS --max-time 30 -o "$tmp/check1" -w '%{http_code}' "http://127.0.0.1:$port_wtproxy$path" 2>&1) ||
    die "wtproxy did not answer after the edit was undone: $code"
  [[ $code == 200 ]] || die "with $py restored, wtproxy answered $code, want 200: $(head -c 300 "$tmp/check1")"
  say "relay.sh: the gate is on: wtproxy verified the backend, refused it (409) after an edit to $py and served it again once undone; wtproxy-nogate served throughout"
}

# --- identification on: a worktree, its registration, and proof ----------------------
if [[ $IDENTIFY == 1 ]]; then
  wt=$tmp/wt
  { git init -q "$tmp/repo" &&
    git -C "$tmp/repo" -c user.name=bench -c user.email=bench@localhost commit -q --allow-empty -m init &&
    git -C "$tmp/repo" worktree add -q "$wt"; } >"$tmp/git.log" 2>&1 ||
    { cat "$tmp/git.log" >&2; die "could not make the temp git repository and worktree"; }
  wt=$(cd "$wt" && pwd -P)
  wtproxy_cli() {
    WTPROXY_CONTROL=$tmp/control.sock WTPROXY_NO_AUTOSTART=1 "$WTPROXY_BIN" "$@"
  }
  nogate_cli() {
    WTPROXY_CONTROL=$tmp/nogate/control.sock WTPROXY_NO_AUTOSTART=1 "$WTPROXY_BIN" "$@"
  }
  if [[ $GATE == 1 ]]; then
    # a realistic tree: the fingerprint reads the .py files; node_modules is
    # pruned by the default excludes (neither hashed nor watched)
    python3 "$here/gate_tree.py" "$wt" "$PY_FILES" "$NM_FILES" ||
      die "could not fill the worktree $wt"
    # the backend's /__whoami: a static answer naming the worktree and the
    # fingerprint of its code now (PROTOCOL.md §1)
    fp=$("$WTPROXY_BIN" fingerprint --json "$wt") || die "wtproxy fingerprint --json $wt failed"
    python3 "$here/gate_tree.py" --whoami "$wt" "$pid_backend" "$fp" >"$tmp/www/__whoami" ||
      die "could not write the backend's /__whoami"
    say "relay.sh: the worktree holds $PY_FILES .py files and $NM_FILES under node_modules; /__whoami: $(head -c 400 "$tmp/www/__whoami")"
  fi
  # the backend nginx serves the worktree; its pid keeps the entry alive
  out=$(cd "$wt" && wtproxy_cli register --port "$port_backend" --pid "$pid_backend" \
          --front "$port_wtproxy" --worktree "$wt" --no-autostart 2>&1) ||
    die "wtproxy register failed: $out"
  say "relay.sh: registered 127.0.0.1:$port_backend (nginx pid $pid_backend) for $wt on front :$port_wtproxy"
  ident_fronts=("wtproxy $port_wtproxy")
  if [[ $GATE == 1 ]]; then
    out=$(cd "$wt" && nogate_cli register --port "$port_backend" --pid "$pid_backend" \
            --front "$port_nogate" --worktree "$wt" --no-autostart 2>&1) ||
      die "wtproxy register (the daemon with the gate off) failed: $out"
    ident_fronts+=("wtproxy-nogate $port_nogate")
  fi
  for f in "${ident_fronts[@]}"; do
    read -r name port <<<"$f"
    # from the worktree: placed by curl's cwd, 200; from / (no worktree in the
    # chain up to this script's cwd, whose repository wtproxy does not know): 503
    code=$(cd "$wt" && curl -sS --max-time 5 -o "$tmp/check1" -w '%{http_code}' "http://127.0.0.1:$port$path" 2>&1) ||
      die "$name did not answer a caller in the worktree: $code"
    [[ $code == 200 ]] && cmp -s "$tmp/check1" "$tmp/www/body.txt" ||
      die "a caller in the worktree got $code from $name, want 200 and the body: $(head -c 300 "$tmp/check1")"
    code=$(cd / && curl -sS --max-time 5 -o "$tmp/check1" -w '%{http_code}' "http://127.0.0.1:$port$path" 2>&1) ||
      die "$name did not answer a caller outside the worktree: $code"
    [[ $code == 503 ]] ||
      die "a caller outside every worktree got $code from $name, want 503 (is identification off?): $(head -c 300 "$tmp/check1")"
  done
  say "relay.sh: identification is on: curl from $wt gets 200, from / gets 503"
  if [[ $GATE == 1 ]]; then
    gate_check
  fi
  # everything from here (the checks, wrk) runs with its cwd in the worktree
  cd "$wt"
fi

targets=(direct nginx wtproxy)
declare -A url log_of
url[direct]=http://127.0.0.1:$port_backend$path
url[nginx]=http://127.0.0.1:$port_nginx$path
url[wtproxy]=http://127.0.0.1:$port_wtproxy$path
log_of[direct]=$tmp/backend/stderr.log
log_of[nginx]=$tmp/nginx/stderr.log
log_of[wtproxy]=$wtproxy_log
if [[ $GATE == 1 ]]; then
  targets+=(wtproxy-nogate)
  url[wtproxy-nogate]=http://127.0.0.1:$port_nogate$path
  log_of[wtproxy-nogate]=$nogate_log
fi
if [[ $FLOOR == 1 ]]; then
  targets+=(floor)
  url[floor]=http://127.0.0.1:$port_floor$path
  log_of[floor]=$tmp/floor/stderr.log
fi
declare -A uring_pid
if [[ $URING == 1 ]]; then
  for u in "${uring_setups[@]}"; do
    t=$(uring_name "$u")
    targets+=("$t")
    url[$t]=http://127.0.0.1:${port_of_uring[$u]}$path
    log_of[$t]=$tmp/uring-$u/stderr.log
    uring_pid[$t]=uring_$u
  done
fi
declare -A cmp_pid
for i in "${!cmp_names[@]}"; do
  t=wtproxy:${cmp_names[$i]}
  targets+=("$t")
  url[$t]=http://127.0.0.1:${cmp_ports[$i]}$path
  log_of[$t]=$tmp/cmp$i/stderr.log
  cmp_pid[$t]=cmp$i
done
pidname() {
  case $1 in
    direct) echo backend ;; wtproxy-nogate) echo nogate ;; wtproxy:*) echo "${cmp_pid[$1]}" ;;
    uring*) echo "${uring_pid[$1]}" ;; *) echo "$1" ;;
  esac
}

# --- check every target answers 200 with the body ------------------------------------
for t in "${targets[@]}"; do
  u=${url[$t]}
  # two requests on one connection: both 200 + body, and the second reuses it
  out=$(curl -sS --max-time 5 -o "$tmp/check1" -o "$tmp/check2" \
          -w '%{http_code} %{num_connects}\n' "$u" "$u" 2>&1) ||
    die "$t ($u) did not answer: $out"
  codes=$(awk '{print $1}' <<<"$out" | tr '\n' ' ')
  [[ $codes == "200 200 " ]] || die "$t ($u) answered '$codes', want 200 twice; body: $(head -c 300 "$tmp/check1")"
  for f in "$tmp/check1" "$tmp/check2"; do
    cmp -s "$f" "$tmp/www/body.txt" ||
      die "$t ($u) answered 200 with the wrong body: $(head -c 300 "$f")"
  done
  if [[ $(awk 'NR==2{print $2}' <<<"$out") != 0 ]]; then
    warnings+=("$t did not keep the client connection open between two requests: its keep-alive row measures reconnects")
  fi
  code=$(curl -sS --max-time 5 -o "$tmp/check1" -H 'Connection: close' -w '%{http_code}' "$u" 2>&1) ||
    die "$t ($u) did not answer with Connection: close: $code"
  if [[ $code != 200 ]] || ! cmp -s "$tmp/check1" "$tmp/www/body.txt"; then die "$t ($u) with Connection: close answered $code: $(head -c 300 "$tmp/check1")"; fi
done
say "relay.sh: all ${#targets[@]} targets answer 200 with the $BODY_BYTES-byte body"

# --- wrk -------------------------------------------------------------------------
cat >"$tmp/report.lua" <<'EOF'
-- prints one machine-readable line at the end of a wrk run; latency in us
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%.0f p99_us=%.0f connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
EOF

# Other load on the servers' CPU during a run: the CPU's busy ticks (steal
# included: the host taking the CPU away) less the ticks our servers used.
cpu_ticks() {  # -> "busy total" ticks of CPU $SERVER_CPU (all CPUs if unpinned)
  local key=cpu line f
  [[ $pinned == 1 ]] && key=cpu$SERVER_CPU
  while read -r line; do
    [[ $line == "$key "* ]] || continue
    read -ra f <<<"$line"
    # user nice system idle iowait irq softirq steal
    echo "$(( f[1] + f[2] + f[3] + f[6] + f[7] + f[8] )) $(( f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7] + f[8] ))"
    return
  done </proc/stat
}
server_ticks() {  # utime + stime of the backend and the proxies
  local pid st f sum=0
  for pid in "${pids[@]}"; do
    st=$(<"/proc/$pid/stat") || continue
    st=${st##*) }
    read -ra f <<<"$st"
    sum=$(( sum + f[11] + f[12] ))
  done
  echo "$sum"
}
# own_ticks PID -> "utime stime" of one process so far (all its threads):
# the CPU of the process wrk talks to, user and kernel apart
own_ticks() {
  local st f
  st=$(<"/proc/$1/stat") || { echo "0 0"; return; }
  st=${st##*) }
  read -ra f <<<"$st"
  echo "${f[11]} ${f[12]}"
}
# sleeps PID -> the voluntary context switches of one process so far: each
# is a wait (epoll_wait) that found no event ready. An exact count, free to
# take; requests / sleeps is how many requests one wakeup handles.
sleeps() {
  local k v
  while read -r k v; do
    [[ $k == voluntary_ctxt_switches: ]] && { echo "$v"; return; }
  done <"/proc/$1/status"
  echo 0
}

clk_tck=$(getconf CLK_TCK)
results=$tmp/results.tsv
: >"$results"
# run_wrk ROUND SHAPE MODE TARGET SECONDS : appends a line to $results unless
# ROUND is 0 (a warm-up); SHAPE is THREADSxCONNECTIONS
run_wrk() {
  local round=$1 shape=$2 mode=$3 t=$4 secs=$5 out=$tmp/wrk-$1-$2-$3-$4.txt line
  local args=(-t"${shape%x*}" -c"${shape#*x}" -d"${secs}s" --timeout 2s -s "$tmp/report.lua")
  [[ $mode == close ]] && args+=(-H 'Connection: close')
  local b0 t0 s0 b1 t1 s1 other pv="pid_$(pidname "$t")" w0 w1 u0 k0 u1 k1
  read -r b0 t0 < <(cpu_ticks); s0=$(server_ticks); w0=$(sleeps "${!pv}")
  read -r u0 k0 < <(own_ticks "${!pv}")
  on_wrk_cpu wrk "${args[@]}" "${url[$t]}" >"$out" 2>&1 ||
    { cat "$out" >&2; die "wrk failed against $t"; }
  read -r b1 t1 < <(cpu_ticks); s1=$(server_ticks); w1=$(sleeps "${!pv}")
  read -r u1 k1 < <(own_ticks "${!pv}")
  other=$(( t1 > t0 ? 100 * (b1 - b0 - (s1 - s0)) / (t1 - t0) : 0 ))
  (( other < 0 )) && other=0
  alive "$(pidname "$t")" "${log_of[$t]}"
  line=$(grep '^RESULT ' "$out") || { cat "$out" >&2; die "no RESULT line in wrk's output"; }
  [[ $round == 0 ]] && return 0
  python3 - "$round" "$shape" "$mode" "$t" "$line" "$other" "$(( s1 - s0 ))" "$clk_tck" "$(( w1 - w0 ))" \
    "$(( u1 - u0 ))" "$(( k1 - k0 ))" >>"$results" <<'EOF'
import sys
rnd, shape, mode, t, line, other, ticks, hz, sleeps, own_user, own_sys = sys.argv[1:12]
kv = dict(f.split("=", 1) for f in line.split()[1:])
n = {k: float(v) for k, v in kv.items()}
rps = n["requests"] / (n["duration_us"] / 1e6) if n["duration_us"] else 0.0
errs = {k: int(n[k]) for k in ("connect", "read", "write", "status", "timeout")}
detail = ",".join(f"{k} {v}" for k, v in errs.items() if v) or "-"
# CPU time the backend and the proxies used, per request
per_req = lambda t: int(t) * 1e6 / int(hz) / n["requests"] if n["requests"] else 0.0  # noqa: E731
# the process wrk talks to alone (direct: the backend), user and kernel
print(rnd, shape, mode, t, f"{rps:.1f}", int(n["p50_us"]), int(n["p99_us"]), sum(errs.values()), detail, other,
      f"{per_req(ticks):.2f}", f"{int(sleeps) / n['requests']:.4f}" if n["requests"] else "0",
      f"{per_req(own_user):.2f}", f"{per_req(own_sys):.2f}", sep="\t")
EOF
  IFS=$'\t' read -r _ _ _ _ rps p50 p99 errs _ _ cpu _ < <(tail -n 1 "$results")
  say "$(printf '  round %d/%d -t%s -c%-4s %-10s %-14s %7.0f req/s  p50 %6d us  p99 %6d us  cpu %6.1f us/req  errors %s  other load %d%%' \
    "$round" "$ROUNDS" "${shape%x*}" "${shape#*x}" "$mode" "$t" "$rps" "$p50" "$p99" "$cpu" "$errs" "$other")"
}

modes=(keep-alive close)
# every round runs every shape, mode and target, so drift on the machine
# hits all of them alike; the run is bounded: cells x (ROUNDS x DURATION + WARMUP)
cells=$(( ${#shapes[@]} * ${#modes[@]} * ${#targets[@]} ))
total=$(( cells * (ROUNDS * DURATION + WARMUP) ))
say "relay.sh: shapes ${shapes[*]} (wrk -tTHREADS x -cCONNECTIONS), $ROUNDS rounds x ${DURATION}s x $cells cells (about $(( total / 60 ))m$(( total % 60 ))s)"
if (( WARMUP > 0 )); then
  for sh in "${shapes[@]}"; do
    for mode in "${modes[@]}"; do
      for t in "${targets[@]}"; do run_wrk 0 "$sh" "$mode" "$t" "$WARMUP"; done
    done
  done
fi
# The targets' order rotates by one each round (direct nginx wtproxy, then
# nginx wtproxy direct, ...): on a shared machine the cell after direct
# tends to find less other load than the one before it, and a fixed order
# would hand that to the same target every round.
for r in $(seq 1 "$ROUNDS"); do
  k=$(( (r - 1) % ${#targets[@]} ))
  order=("${targets[@]:k}" "${targets[@]:0:k}")
  for sh in "${shapes[@]}"; do
    for mode in "${modes[@]}"; do
      for t in "${order[@]}"; do run_wrk "$r" "$sh" "$mode" "$t" "$DURATION"; done
    done
  done
done

# identification on: every request wtproxy served went to the registered
# worktree's entry (there is no default backend), which counts them
# ls_field CLI EXPR : EXPR (python, over the entries es) from that daemon's ls --json
ls_field() {
  "$1" ls --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
es = d.get("entries", d) if isinstance(d, dict) else d
print(eval(sys.argv[1]))' "$2" || echo "?"
}
if [[ $IDENTIFY == 1 ]]; then
  served=$(ls_field wtproxy_cli 'sum(int(e.get("requests", 0)) for e in es)')
  completed=$(sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p' "$tmp"/wrk-*-wtproxy.txt |
               python3 -c 'import sys; print(sum(int(l) for l in sys.stdin))')
  R_IDENT_CHECK="the registration for the worktree served $served requests; wrk completed $completed through wtproxy"
  if [[ $GATE == 1 ]]; then
    served=$(ls_field nogate_cli 'sum(int(e.get("requests", 0)) for e in es)')
    completed=$(sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p' "$tmp"/wrk-*-wtproxy-nogate.txt |
                 python3 -c 'import sys; print(sum(int(l) for l in sys.stdin))')
    R_IDENT_CHECK+=", and $served / $completed through wtproxy-nogate"
    gate_state=$(ls_field wtproxy_cli '" ".join("%s (refused %s)" % (e.get("whoami", {}).get("state"), e.get("whoami", {}).get("refused")) for e in es)')
    export R_GATE_CHECK="after the runs wtproxy shows the backend $gate_state; the one refusal is the gate check's, before measuring (an edit to a .py file: 409 stale-code from wtproxy, 200 from wtproxy-nogate)"
  fi
  export R_IDENT_CHECK+=" (warm-ups included; wtproxy has no default backend, so each was identified as the worktree's)"
fi

# --- report ------------------------------------------------------------------------
wrk_version=$(wrk --version 2>&1 || true); wrk_version=${wrk_version%%$'\n'*}
wrk_version=$(awk '{print $1, $2}' <<<"$wrk_version")
nginx_version=$("$NGINX" -v 2>&1 || true); nginx_version=${nginx_version#*: }
cpu_model=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
if [[ $pinned == 1 ]]; then
  pin_desc="wrk on CPU $WRK_CPU; backend and the proxy under test on CPU $SERVER_CPU"
else
  pin_desc="NOT PINNED: wrk, backend and proxies share all CPUs"
fi
warn_text=$(printf '%s\n' "${warnings[@]+"${warnings[@]}"}")

kernel=$(uname -r)
ncpu=$(nproc)
export R_TARGETS="${targets[*]}" R_COMPARE=$(printf '%s\n' "${cmp_descs[@]+"${cmp_descs[@]}"}")
export R_COMMIT=$commit R_WTPROXY=$wtproxy_desc R_BUILD=$build_desc R_NGINX=$nginx_version R_WRK=$wrk_version \
  R_KERNEL=$kernel R_CPU=${cpu_model:-unknown CPU} R_NCPU=$ncpu R_PIN=$pin_desc \
  R_WARN=$warn_text R_BUSY=$busy R_PINNED=$pinned POOL IDENTIFY GATE FLOOR URING URING_SETUP PY_FILES NM_FILES SERVER_CPU SHAPES ROUNDS DURATION WARMUP BODY_BYTES
python3 "$here/relay_report.py" "$results" "$standin"
