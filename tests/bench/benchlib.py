"""benchlib.py - what the Python benchmarks of tests/bench share: messages
on stderr named for the script, a free loopback port, waiting for a
process to listen, stopping them, a git repository with linked worktrees, one line to a
daemon's control socket, and the static nginx backend the gate benchmarks
put behind wtproxy (a body file and a fixed /__whoami answer)."""

import json
import os
import signal
import socket
import subprocess
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


def stop_procs(procs, grace):
    """SIGTERM every process of procs still running, then wait for each,
    SIGKILL after grace seconds."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_listening(proc, port, log, timeout):
    """Return once 127.0.0.1:port accepts; die showing the end of log (the
    process's output) when proc ends first, or after timeout seconds."""
    for _ in range(round(timeout / 0.02)):
        if proc.poll() is not None:
            die(f"{log}: exited with {proc.returncode}: {open(log).read()[-600:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    die(f"nothing listening on 127.0.0.1:{port} after {timeout:g} s ({log})")


def git_repo(repo):
    """Make a git repository at repo with one empty commit, to add
    worktrees to."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run(["git", "init", "-q", repo], check=True)
    subprocess.run(git + ["-C", repo, "commit", "-q", "--allow-empty", "-m", "init"], check=True)


def git_worktree(repo, wt):
    """Add the linked worktree wt to repo; returns its real path (what the
    daemon names it by)."""
    subprocess.run(["git", "-C", repo, "worktree", "add", "-q", wt], check=True,
                   stderr=subprocess.DEVNULL)
    return os.path.realpath(wt)


def control_line(path, req, timeout):
    """Send req (a dict) as one line to the control socket at path; returns
    the reply line, parsed. timeout bounds each send and receive."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


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
