#!/usr/bin/env python3
"""idle_memory.py - what does an idle keep-alive connection cost a proxy in
memory? (issue 17, item 4)

N client connections (default 10,000) each make one GET through the proxy,
read the whole response and then stay open, idle. The proxy's resident
memory (VmRSS of the daemon, or of nginx's one worker) before the first
connection and once all N are idle, divided by N, is the cost of holding
one. Targets, each measured in turn against the same backend (Node's http,
a 128-byte answer):
  wtproxy NAME=PATH  `wtproxy serve --listen 127.0.0.1:P --backend ... --whoami off
                     --keepalive-timeout 300s --max-connections N+100`
  nginx              an nginx reverse proxy, one worker, upstream keepalive 64
                     (the configuration of relay.sh)
With --routed, wtproxy has no default backend: the backend is registered
(`wtproxy register`) for a temp git worktree, and the client runs in it,
so every connection is identified and routed by its caller, as in daily use.

Usage: tests/bench/idle_memory.py [--connections 10000] [--bin NAME=PATH]... [--nginx] [--routed]
Needs `ulimit -n` above the connection count (the client holds them all).
"""
import argparse
import os
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, say, wait_port  # noqa: E402








def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


REQUEST = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"


def hold(port, n, deadline_s=120):
    """Open n connections, one GET each, read each answer whole; returns the
    sockets, all idle. Raises when an answer is not 200 or time runs out."""
    sel = selectors.DefaultSelector()
    socks, pending = [], 0
    end = time.monotonic() + deadline_s
    while len(socks) < n or pending:
        while len(socks) < n and pending < 200:
            s = socket.create_connection(("127.0.0.1", port))
            s.setblocking(False)
            s.send(REQUEST)
            sel.register(s, selectors.EVENT_READ, bytearray())
            socks.append(s)
            pending += 1
        for key, _ in sel.select(1):
            buf = key.data
            chunk = key.fileobj.recv(65536)
            if not chunk:
                raise SystemExit("idle_memory.py: the proxy closed a connection before answering")
            buf += chunk
            head_end = buf.find(b"\r\n\r\n")
            if head_end < 0:
                continue
            if not buf.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"idle_memory.py: got {bytes(buf[:80])!r}")
            length = 0
            for line in bytes(buf[:head_end]).split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            if len(buf) >= head_end + 4 + length:
                sel.unregister(key.fileobj)
                pending -= 1
        if time.monotonic() > end:
            raise SystemExit(f"idle_memory.py: {len(socks)} connections, {pending} unanswered after {deadline_s} s")
    sel.close()
    return socks


NGINX_CONF = """daemon off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log warn;
events {{ worker_connections 20000; }}
worker_rlimit_nofile 30000;
http {{
    access_log off; server_tokens off;
    client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
    uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
    keepalive_timeout 300s; keepalive_requests 1000000;
    upstream backend {{ server 127.0.0.1:{backend}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://backend; proxy_http_version 1.1;
            proxy_set_header Connection ""; proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_set_header X-Forwarded-Proto http;
        }}
    }}
}}
"""

BACKEND = ("const b = Buffer.alloc(128, 'x'); require('http').createServer((q, r) => "
           "{ r.setHeader('Content-Type', 'text/plain'); r.end(b); })"
           ".listen(+process.argv[1], '127.0.0.1')")


def register(wtproxy, env, tmp, front, bport, bpid):
    """A git worktree in tmp with the backend registered for it on front;
    this process moves into it, so the daemon places its connections."""
    wt = os.path.join(tmp, "wt")
    if not os.path.isdir(wt):
        os.makedirs(wt)
        git = ["git", "-C", wt, "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        subprocess.run(git[:3] + ["init", "-q"], check=True)
        subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "bench"], check=True)
    subprocess.run([wtproxy, "register", "--port", str(bport), "--pid", str(bpid), "--front",
                    str(front), "--worktree", wt, "--no-autostart"], check=True, env=env,
                   cwd=wt, stdout=subprocess.DEVNULL)
    os.chdir(wt)


def child_pid(pid):
    """nginx's worker: the one child of the master."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        kids = f.read().split()
    return int(kids[0])


def measure(name, port, pid, n):
    time.sleep(0.3)
    before = rss_kib(pid)
    socks = hold(port, n)
    time.sleep(1.0)  # let every connection settle into idle
    after = rss_kib(pid)
    for s in socks:
        s.close()
    per = (after - before) * 1024 / n
    say(f"idle_memory.py: {name}: VmRSS {before} -> {after} KiB for {n} idle connections: {per:.0f} bytes each")
    return before, after, per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--nginx", action="store_true")
    ap.add_argument("--routed", action="store_true")
    a = ap.parse_args()
    # While the N first GETs run at once a proxy holds each client's socket
    # and a backend one: past the fd limit the last ones are never answered.
    need, hard = 2 * a.connections + 200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard < need:
        raise SystemExit(f"idle_memory.py: {a.connections} connections need an fd limit of "
                         f"{need} (a proxy holds each client's socket and, while its request "
                         f"runs, a backend one); the hard limit here is {hard}: use "
                         f"--connections {(hard - 200) // 2}, or raise it")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = tempfile.mkdtemp(prefix="idle-mem-")
    procs, rows = [], []
    try:
        bport = free_port()
        be = subprocess.Popen(["node", "-e", BACKEND, str(bport)])
        procs.append(be)
        wait_port(bport, be, "backend")
        for spec in a.bin:
            name, path = spec.split("=", 1)
            port = free_port()
            # the CLI finds the daemon's control socket under XDG_RUNTIME_DIR
            env = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(tmp, f"run-{name}"))
            os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
            route = [] if a.routed else ["--backend", f"127.0.0.1:{bport}"]
            p = subprocess.Popen([path, "serve", "--listen", f"127.0.0.1:{port}", *route,
                                  "--whoami", "off", "--keepalive-timeout", "300s",
                                  "--max-connections", str(a.connections + 100),
                                  "--state", f"{tmp}/{name}.json"],
                                 stderr=subprocess.DEVNULL, env=env)
            procs.append(p)
            wait_port(port, p, name)
            if a.routed:
                register(path, env, tmp, port, bport, be.pid)
            hold(port, 10)  # warm: the pool, the allocator's first arenas
            rows.append((name, *measure(name, port, p.pid, a.connections)))
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            os.chdir(tmp)
        if a.nginx:
            port = free_port()
            d = os.path.join(tmp, "nginx")
            os.makedirs(d)
            with open(f"{d}/nginx.conf", "w") as f:
                f.write(NGINX_CONF.format(d=d, backend=bport, port=port))
            p = subprocess.Popen(["nginx", "-c", f"{d}/nginx.conf", "-p", d])
            procs.append(p)
            wait_port(port, p, "nginx")
            hold(port, 10)
            rows.append(("nginx", *measure("nginx", port, child_pid(p.pid), a.connections)))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    how = "routed by caller" if a.routed else "default backend"
    print(f"{a.connections} idle keep-alive connections ({how}), each after one GET of a 128-byte answer\n")
    print("| proxy | VmRSS before, KiB | VmRSS with them idle, KiB | bytes per idle connection |")
    print("|---|---:|---:|---:|")
    for name, before, after, per in rows:
        print(f"| {name} | {before} | {after} | {per:.0f} |")


if __name__ == "__main__":
    main()
