"""benchlib.py - what the Python benchmarks of tests/bench share: messages
on stderr named for the script, a free loopback port, waiting for a
process to listen, and the static nginx backend the gate benchmarks put
behind wtproxy (a body file and a fixed /__whoami answer)."""

import os
import socket
import sys
import time

PROG = os.path.basename(sys.argv[0])


def say(*a):
    print(f"{PROG}:", *a, file=sys.stderr, flush=True)


def die(msg):
    say("FAIL:", msg)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=20.0):
    """Return once 127.0.0.1:port accepts; exit naming what when proc ends
    first or timeout seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"{PROG}: {what} exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{PROG}: {what} did not listen on {port} in {timeout} s")


def write_static_nginx(d, port, www):
    """Write d/nginx.conf: one foreground nginx worker serving www on
    127.0.0.1:port, /__whoami as JSON, every temp file and log under d.
    Returns the config's path."""
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    types {{ text/plain txt; }}
    default_type text/plain;
    server {{
        listen 127.0.0.1:{port};
        root {www};
        location / {{ }}
        location = /__whoami {{ default_type application/json; }}
    }}
}}
""")
    return conf
