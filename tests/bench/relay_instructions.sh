#!/usr/bin/env bash
# relay_instructions.sh - user-space instructions per relayed request, by
# binary: a count that other load on the machine does not move, for telling
# apart two builds whose req/s differ by less than the noise. Each binary
# runs under valgrind --tool=callgrind twice, relaying 1 and N keep-alive
# GETs (one connection, Node backend, 128-byte answer); the difference of
# the two totals over N-1 is the cost of one request. CLOSE=1: every request
# on a new connection with Connection: close (accept, relay, close: what
# wrk -H 'Connection: close' costs per request). Syscalls per request:
# ack_stall_syscalls.sh.
# Usage: tests/bench/relay_instructions.sh NAME=WTPROXY_BIN...   (N=3000 CLOSE=0)
set -euo pipefail
N=${N:-3000}
CLOSE=${CLOSE:-0}
d=$(mktemp -d)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
bp=$(port)
node -e 'const b=Buffer.alloc(128,"x"); require("http").createServer((q,r)=>{r.end(b)}).listen(+process.argv[1],"127.0.0.1")' $bp & np=$!
sleep 0.5
get() { python3 - "$1" "$2" "$CLOSE" <<'PY'
import http.client, sys
close = sys.argv[3] == "1"
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    if close:
        c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
        c.request("GET", "/", headers={"Connection": "close"})
    else:
        c.request("GET", "/")
    r = c.getresponse(); r.read(); assert r.status == 200
    if close:
        c.close()
PY
}
for spec in "$@"; do
  name=${spec%%=*} bin=${spec#*=}
  for n in 1 $N; do
    lp=$(port)
    valgrind --tool=callgrind --callgrind-out-file=$d/cg.$name.$n $bin serve --listen 127.0.0.1:$lp --backend 127.0.0.1:$bp --whoami off --control $d/$name$n.sock --state $d/$name$n.json 2>/dev/null & wp=$!
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$lp) 2>/dev/null && break; sleep 0.2; done
    get $lp $n
    kill $wp; wait $wp 2>/dev/null || true
  done
  a=$(awk '/^summary:/ {print $2}' $d/cg.$name.1); b=$(awk '/^summary:/ {print $2}' $d/cg.$name.$N)
  echo "$name: $(( (b - a) / (N - 1) )) user instructions per request$([[ $CLOSE == 1 ]] && echo ', Connection: close')"
done
kill $np; rm -rf $d
