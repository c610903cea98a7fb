#!/usr/bin/env bash
# gate_callgrind.sh - instructions per request through wtproxy with the
# /__whoami gate on and off, counted by valgrind's callgrind: unlike req/s
# or CPU time these counts do not move when other load shares the machine.
#
# Usage: tests/bench/gate_callgrind.sh WTPROXY_BIN [REQUESTS]   (default 5000)
#
# The setup of relay.sh GATE=1 (a temp worktree with gate_tree.py's tree,
# an nginx backend with a static /__whoami, identification on), then per
# mode (gate on, --whoami off): wtproxy under callgrind, 200 warm-up
# requests, counters zeroed, REQUESTS requests one after another on one
# keep-alive connection (cwd in the worktree), counters dumped. Prints
# instructions per request per mode, and the functions that differ.
# CLOSE=1: every request on a new connection with Connection: close
# (identification and the gate per request).
# Set KEEP_TMP=1 to keep the callgrind.out files (callgrind_annotate them).
set -euo pipefail
BIN=${1:?usage: gate_callgrind.sh WTPROXY_BIN [REQUESTS]}
N=${2:-5000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $BIN == /* ]] || BIN=$PWD/$BIN
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
for t in valgrind callgrind_control callgrind_annotate git curl python3; do
  command -v "$t" >/dev/null || { echo "gate_callgrind.sh: $t not found (apt-get install -y valgrind git curl python3)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wtproxy-gate-cg.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [[ ${KEEP_TMP:-0} == 1 ]] && echo "gate_callgrind.sh: kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on :$1" >&2; exit 1; }

git init -q "$tmp/repo"
git -C "$tmp/repo" -c user.name=bench -c user.email=bench@localhost commit -q --allow-empty -m init
git -C "$tmp/repo" worktree add -q "$tmp/wt" 2>/dev/null
wt=$(cd "$tmp/wt" && pwd -P)
python3 "$here/gate_tree.py" "$wt" 200 3000
mkdir -p "$tmp/www" "$tmp/backend/tmp"
printf 'wtproxy gate bench body\n' >"$tmp/www/body.txt"
pb=$(port)
cat >"$tmp/backend/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1;
pid $tmp/backend/nginx.pid; error_log $tmp/backend/error.log warn;
events { worker_connections 1024; }
http {
  access_log off; client_body_temp_path $tmp/backend/tmp/b; proxy_temp_path $tmp/backend/tmp/p;
  fastcgi_temp_path $tmp/backend/tmp/f; uwsgi_temp_path $tmp/backend/tmp/u; scgi_temp_path $tmp/backend/tmp/s;
  types { text/plain txt; } default_type text/plain; keepalive_requests 1000000;
  server { listen 127.0.0.1:$pb; root $tmp/www; location / { }
           location = /__whoami { default_type application/json; } }
}
EOF
"$NGINX" -p "$tmp/backend/" -c "$tmp/backend/nginx.conf" -e "$tmp/backend/error.log" >/dev/null 2>&1 &
pids+=("$!"); npid=$!
wait_port "$pb"
python3 "$here/gate_tree.py" --whoami "$wt" "$npid" "$("$BIN" fingerprint --json "$wt")" >"$tmp/www/__whoami"

CLOSE=${CLOSE:-0}
# requests HOST:PORT N: N GETs on one keep-alive connection (CLOSE=1: each on
# its own, with Connection: close); prints how many got 200
requests() {
  python3 - "$1" "$2" "$CLOSE" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
n, ok, close = int(sys.argv[2]), 0, sys.argv[3] == "1"
s = None
req = f"GET /body.txt HTTP/1.1\r\nHost: {sys.argv[1]}\r\n{'Connection: close' if close else 'X-Keep: 1'}\r\n\r\n".encode()
buf = b""
for _ in range(n):
    if close or s is None:
        if s:
            s.close()
        s, buf = socket.create_connection((host, int(port))), b""
    s.sendall(req)
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, _, buf = buf.partition(b"\r\n\r\n")
    length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
    while len(buf) < length:
        buf += s.recv(65536)
    buf = buf[length:]
    ok += head.startswith(b"HTTP/1.1 200")
print(ok)
PY
}

cd "$wt"
declare -A ir
for mode in on off; do
  p=$(port)
  out=$tmp/callgrind.out.$mode
  valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" serve --listen "127.0.0.1:$p" \
    --whoami "$mode" --control "$tmp/$mode.sock" --state "$tmp/$mode.json" >"$tmp/$mode.log" 2>&1 &
  pids+=("$!"); vpid=$!
  wait_port "$p"
  WTPROXY_CONTROL=$tmp/$mode.sock WTPROXY_NO_AUTOSTART=1 "$BIN" register --port "$pb" --pid "$npid" \
    --front "$p" --worktree "$wt" --no-autostart >/dev/null
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/body.txt")
  [[ $code == 200 ]] || { echo "gate $mode: got $code" >&2; exit 1; }
  # warm-up on the same kind of connection, then count only the measured requests
  requests "127.0.0.1:$p" 200 >/dev/null
  callgrind_control -z "$vpid" >/dev/null
  got=$(requests "127.0.0.1:$p" "$N")
  [[ $got == "$N" ]] || { echo "gate $mode: $got of $N requests got 200" >&2; exit 1; }
  callgrind_control -d "$vpid" >/dev/null
  sleep 0.5
  f=$(ls -t "$out"* | head -n 1)
  total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1; exit}')
  ir[$mode]=$total
  cp "$f" "$tmp/measured.$mode"
  echo "gate $mode: $total instructions for $N requests = $(( total / N )) per request" >&2
  kill -TERM "$vpid"; wait "$vpid" 2>/dev/null || true
done
echo "| gate | instructions/request (wtproxy, user space; $([[ $CLOSE == 1 ]] && echo 'Connection: close' || echo 'keep-alive')) |"
echo "|---|---:|"
echo "| on | $(( ir[on] / N )) |"
echo "| off (--whoami off) | $(( ir[off] / N )) |"
echo "| on - off | $(( (ir[on] - ir[off]) / N )) |"
echo
echo "Top functions with the gate on (inclusive instructions over $N requests):"
echo '```'
callgrind_annotate --inclusive=yes "$tmp/measured.on" 2>/dev/null | grep -E 'whoami|tree_|patterns|printf|malloc|free|read' | head -n 25 || true
echo '```'
