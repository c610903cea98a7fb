#!/usr/bin/env bash
# ack_stall_syscalls.sh - what the immediate ACK costs in syscalls: strace -c
# on a running `wtproxy serve` while one client makes N keep-alive GETs,
# for each binary, against a backend that sends a response in one write
# (Node's http, res.end) and one that sends head and body apart
# (python3 -m http.server --protocol HTTP/1.1).
#
# Usage: tests/bench/ack_stall_syscalls.sh NAME=WTPROXY_BIN...   (N=200)
# CLOSE=1: each request on a new connection with Connection: close (what
# relay.sh's close mode costs the proxy per request: accept, relay, close).
# Prints a markdown table: syscalls per request, by call, per binary.
set -euo pipefail
N=${N:-200}
CLOSE=${CLOSE:-0}
[ $# -gt 0 ] || { echo "usage: $0 NAME=WTPROXY_BIN..." >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return; sleep 0.1; done; echo "nothing listens on $1" >&2; exit 1; }

mkdir -p "$tmp/www"
printf '{"ok": true, "items": [1, 2, 3]}' >"$tmp/www/api.json"
p_node=$(port); p_py=$(port)
node -e 'const fs=require("fs"); const b=fs.readFileSync(process.argv[1]);
  require("http").createServer((q,r)=>{r.setHeader("Content-Type","application/json"); r.end(b);}).listen(+process.argv[2],"127.0.0.1")' \
  "$tmp/www/api.json" "$p_node" & pids+=($!)
(cd "$tmp/www" && exec /usr/bin/python3 -m http.server --protocol HTTP/1.1 --bind 127.0.0.1 "$p_py" >/dev/null 2>&1) & pids+=($!)
wait_port "$p_node"; wait_port "$p_py"

get_n() { # port path: N keep-alive GETs on one connection (CLOSE=1: each on its own)
  python3 - "$1" "$2" "$N" "$CLOSE" <<'EOF'
import http.client, sys
close = sys.argv[4] == "1"
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for _ in range(int(sys.argv[3])):
    if close:
        c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
    c.request("GET", sys.argv[2], headers={"Connection": "close"} if close else {})
    r = c.getresponse(); r.read()
    assert r.status == 200 and r.will_close == close
    if close:
        c.close()
EOF
}

echo "| binary | backend | syscalls/request | by call (per request) |"
echo "|---|---|---|---|"
for spec in "$@"; do
  name=${spec%%=*} bin=${spec#*=}
  for be in node:$p_node:/ python-http.server:$p_py:/api.json; do
    IFS=: read -r bname bport bpath <<<"$be"
    lp=$(port)
    "$bin" serve --listen 127.0.0.1:"$lp" --backend 127.0.0.1:"$bport" --whoami off \
      --control "$tmp/$name-$lp.sock" --state "$tmp/$name-$lp.json" 2>/dev/null & wp=$!
    pids+=($wp)
    wait_port "$lp"
    get_n "$lp" "$bpath" # warm: the pooled backend connection
    strace -c -f -p "$wp" -o "$tmp/strace" 2>/dev/null & sp=$!
    sleep 0.5
    get_n "$lp" "$bpath"
    kill -INT "$sp"; wait "$sp" || true
    kill "$wp"; wait "$wp" 2>/dev/null || true
    python3 - "$tmp/strace" "$N" "$name" "$bname" <<'EOF'
import sys
n = int(sys.argv[2]); total = 0; calls = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        c = int(f[3]); total += c; calls.append((c, f[-1]))
calls.sort(reverse=True)
print(f"| {sys.argv[3]} | {sys.argv[4]} | {total / n:.2f} | " +
      ", ".join(f"{name} {c / n:.2f}" for c, name in calls if c / n >= 0.01) + " |")
EOF
  done
done
