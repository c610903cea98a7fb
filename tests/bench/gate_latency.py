#!/usr/bin/env python3
"""gate_latency.py - how fast the /__whoami gate sees an edit, and what its
first (cold) request to a backend costs.

  tests/bench/gate_latency.py --wtproxy build/proxy/wtproxy [--samples 200] [--cold 20]

One nginx backend (one worker, a static body and a static /__whoami naming
a temp git worktree with a realistic tree, see gate_tree.py) and wtproxy
daemons in front of it, with identification on (no default backend; the
backend is registered for the worktree; this script's cwd is in it).

1. Edit to refusal: two daemons with --stale-grace 0, one watching the
   worktree with inotify, one with --whoami-inotify off (a stat scan per
   request). Per sample and daemon, interleaved:
     baseline   a request with nothing changed (200), timed;
     edit       write() a changed .py file, then at once a request: the time
                from write() returning to the whole refusal arriving; it
                must be 409 with X-Wtproxy-Refused: stale-code (a 200 here
                would be a request answered by the stale backend);
     restore    the file's old content back, then a request: 200 again
                (the gate re-reads /__whoami, since the disk changed), timed.
2. Cold: per sample a new daemon, gate on or --whoami off (interleaved); its
   first request (identification cold, and with the gate on the /__whoami
   fetch, the fingerprint of the tree and its inotify watches) and its
   second (warm) request are timed.
Every request is a new connection (Connection: close) from this process.
The report (markdown) goes to stdout, progress to stderr.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_tree  # noqa: E402
from benchlib import (die, free_port, git_repo, git_worktree, say, stop_procs,  # noqa: E402
                      wait_listening, write_static_nginx)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
PATH = "/body.txt"
BODY = b"wtproxy gate bench body\n" * 5








def busy_percent(secs=1.0):
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = snap()
    time.sleep(secs)
    t1, i1 = snap()
    return round(100 * (1 - (i1 - i0) / max(1, t1 - t0)))


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="wtproxy-gate-lat.")
        self.procs = []
        cpus = sorted(os.sched_getaffinity(0))
        self.pin = args.pin and len(cpus) >= 2 and 0 in cpus and 1 in cpus
        if self.pin:
            os.sched_setaffinity(0, {0})  # the client; servers go on CPU 1

    def cleanup(self):
        stop_procs(self.procs, 3)
        if self.args.keep_tmp:
            say("kept", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def spawn(self, argv, log):
        if self.pin:
            argv = ["taskset", "-c", "1"] + argv
        p = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, cwd="/")
        self.procs.append(p)
        return p

    # --- the backend and the worktree ---
    def setup(self):
        t = self.tmp
        repo, wt = os.path.join(t, "repo"), os.path.join(t, "wt")
        git_repo(repo)
        self.wt = git_worktree(repo, wt)
        gate_tree.fill(self.wt, self.args.py_files, self.args.nm_files)
        www = os.path.join(t, "www")
        os.makedirs(www)
        with open(os.path.join(www, "body.txt"), "wb") as f:
            f.write(BODY)
        self.port_backend = free_port()
        d = os.path.join(t, "backend")
        write_static_nginx(d, self.port_backend, www)
        log = os.path.join(d, "stderr.log")
        nginx = self.spawn([NGINX, "-p", d + "/", "-c", os.path.join(d, "nginx.conf"),
                            "-e", os.path.join(d, "error.log")], log)
        wait_listening(nginx, self.port_backend, log, 4)
        fp = subprocess.run([self.args.wtproxy, "fingerprint", "--json", self.wt], check=True,
                            capture_output=True, text=True).stdout
        with open(os.path.join(www, "__whoami"), "w") as f:
            f.write(gate_tree.whoami(self.wt, nginx.pid, fp))
        self.nginx_pid = nginx.pid
        pys = sorted(os.path.join(dp, n) for dp, _, ns in os.walk(os.path.join(self.wt, "src"))
                     for n in ns if n.endswith(".py"))
        self.py = pys[len(pys) // 2]  # the file every edit changes
        with open(self.py, "rb") as f:
            self.py_orig = f.read()
        os.chdir(self.wt)  # every request of ours is identified as the worktree's

    # --- daemons ---
    def daemon(self, name, flags):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        port = free_port()
        env = dict(os.environ, WTPROXY_CONTROL=os.path.join(d, "control.sock"),
                   WTPROXY_NO_AUTOSTART="1")
        env.pop("WTPROXY_CONFIG", None)
        log = os.path.join(d, "stderr.log")
        p = self.spawn([self.args.wtproxy, "serve", "--listen", f"127.0.0.1:{port}",
                        "--control", env["WTPROXY_CONTROL"], "--state",
                        os.path.join(d, "registry.json")] + flags, log)
        wait_listening(p, port, log, 4)
        r = subprocess.run([self.args.wtproxy, "register", "--port", str(self.port_backend),
                            "--pid", str(self.nginx_pid), "--front", str(port), "--worktree",
                            self.wt, "--no-autostart"], env=env, capture_output=True, text=True)
        if r.returncode:
            die(f"wtproxy register on {name} failed: {r.stderr}")
        return p, port

    def stop(self, p):
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=5)
        self.procs.remove(p)


def request(port):
    """One request on a new connection: (status, refused reason, ns until the whole answer)."""
    t0 = time.perf_counter_ns()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET " + PATH.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode()
              + b"\r\nConnection: close\r\nAccept: text/plain\r\n\r\n")
    chunks = []
    while True:
        b = s.recv(65536)
        if not b:
            break
        chunks.append(b)
    t1 = time.perf_counter_ns()
    s.close()
    resp = b"".join(chunks)
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    reason = ""
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"x-wtproxy-refused":
            reason = v.strip().decode()
    if status == 200 and body != BODY:
        status = -200  # a 200 with the wrong body
    return status, reason, t1 - t0


def write_file(path, data):
    """write() the data into path; returns perf_counter_ns after write() returned."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, data)
    t = time.perf_counter_ns()
    os.close(fd)
    return t


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def us(ns):
    return f"{ns / 1000:,.0f}".replace(",", " ")


def edits(b, daemons, n):
    res = {name: {"base": [], "refuse": [], "refuse_req": [], "restore": [], "bad": []}
           for name in daemons}
    for i in range(n):
        for name, port in daemons.items():
            r = res[name]
            st, why, ns = request(port)
            if st != 200:
                die(f"{name}: with nothing changed a request got {st} {why}")
            r["base"].append(ns)
            t_write = write_file(b.py, b.py_orig + f"# edit {i}\n".encode())
            t_send = time.perf_counter_ns()
            st, why, ns = request(port)
            t_end = t_send + ns
            if st == 409 and why == "stale-code":
                r["refuse"].append(t_end - t_write)
                r["refuse_req"].append(ns)
            else:
                r["bad"].append(f"sample {i}: {st} {why}")
            write_file(b.py, b.py_orig)
            st, why, ns = request(port)
            if st != 200:
                die(f"{name}: with the edit undone a request got {st} {why}")
            r["restore"].append(ns)
        if (i + 1) % 50 == 0:
            say(f"edit samples {i + 1}/{n}")
    return res


def cold(b, n):
    res = {k: {"first": [], "second": []} for k in ("gate on", "gate off")}
    for i in range(n):
        for k, flags in (("gate on", ["--whoami", "on"]), ("gate off", ["--whoami", "off"])):
            p, port = b.daemon(f"cold-{k.replace(' ', '-')}-{i}", flags)
            for slot in ("first", "second"):
                st, why, ns = request(port)
                if st != 200:
                    die(f"cold {k}: the {slot} request got {st} {why}")
                res[k][slot].append(ns)
            b.stop(p)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wtproxy", required=True, help="the wtproxy binary (a release build)")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--cold", type=int, default=20)
    ap.add_argument("--py-files", type=int, default=200)
    ap.add_argument("--nm-files", type=int, default=3000)
    ap.add_argument("--no-pin", dest="pin", action="store_false")
    ap.add_argument("--keep-tmp", action="store_true")
    a = ap.parse_args()
    a.wtproxy = os.path.abspath(a.wtproxy)
    busy0 = busy_percent()
    b = Bench(a)
    try:
        b.setup()
        say(f"worktree {b.wt}: {a.py_files} .py files, {a.nm_files} under node_modules; editing {b.py}")
        daemons = {}
        for name, flags in (("inotify", ["--stale-grace", "0"]),
                            ("stat scans", ["--stale-grace", "0", "--whoami-inotify", "off"])):
            daemons[name] = b.daemon(name.replace(" ", "-"), flags)[1]
        for name, port in daemons.items():
            for _ in range(3):
                st, why, _ = request(port)
                if st != 200:
                    die(f"{name}: the first requests got {st} {why}")
        t0 = time.time()
        er = edits(b, daemons, a.samples)
        cr = cold(b, a.cold)
        secs = time.time() - t0
        busy1 = busy_percent()
    finally:
        b.cleanup()
    report(a, er, cr, busy0, busy1, secs, b)
    return 1 if any(r["bad"] for r in er.values()) else 0


def report(a, er, cr, busy0, busy1, secs, b):
    p = lambda v: f"{us(statistics.median(v))} | {us(q(v, 90))} | {us(q(v, 99))}"  # noqa: E731
    print("## The /__whoami gate: from an edit to the refusal, and the cold request")
    print()
    print(f"- wtproxy: {a.wtproxy}; backend nginx (one worker) with a static /__whoami; a temp worktree with"
          f" {a.py_files} .py files and {a.nm_files} files under node_modules (pruned); identification on;"
          f" every request a new connection (Connection: close) from one Python client"
          f" ({'client on CPU 0, servers on CPU 1' if b.pin else 'not pinned'})")
    print(f"- machine: {os.cpu_count()} CPUs, {busy0}% busy before, {busy1}% after; {secs:.0f} s")
    print(f"- `{' '.join(['tests/bench/gate_latency.py'] + sys.argv[1:])}`")
    print()
    print(f"### Edit to refusal ({a.samples} samples per daemon, --stale-grace 0, interleaved)")
    print()
    print("| daemon | case | p50 µs | p90 µs | p99 µs | refused |")
    print("|---|---|---:|---:|---:|---:|")
    for name, r in er.items():
        n = len(r["refuse"]) + len(r["bad"])
        print(f"| {name} | baseline: nothing changed, 200 | {p(r['base'])} | |")
        if r["refuse"]:
            print(f"| {name} | write() returned -> refusal arrived | {p(r['refuse'])} "
                  f"| {len(r['refuse'])}/{n} |")
            print(f"| {name} | of which the request | {p(r['refuse_req'])} | |")
        print(f"| {name} | edit undone: first request, 200 | {p(r['restore'])} | |")
    print()
    for name, r in er.items():
        n = len(r["refuse"]) + len(r["bad"])
        if r["bad"]:
            print(f"⚠ {name}: {len(r['bad'])}/{n} requests right after an edit were NOT refused: "
                  + "; ".join(r["bad"][:10]))
        else:
            print(f"{name}: {n}/{n} requests sent right after an edit were refused (409 stale-code);"
                  " none was answered by the stale backend.")
        print(f"{name}: refusal - baseline = {us(statistics.median(r['refuse']) - statistics.median(r['base']))} µs"
              " (p50s)" if r["refuse"] else "")
    print()
    print(f"### Cold request ({a.cold} new daemons per case, interleaved)")
    print()
    print("| daemon | request | p50 µs | p90 µs | p99 µs |")
    print("|---|---|---:|---:|---:|")
    for k, r in cr.items():
        print(f"| {k} | first (cold) | {p(r['first'])} |")
        print(f"| {k} | second (warm) | {p(r['second'])} |")
    m = {k: {s: statistics.median(v) for s, v in r.items()} for k, r in cr.items()}
    print()
    print(f"The gate's cold cost (first request, gate on - gate off, p50s): "
          f"{us(m['gate on']['first'] - m['gate off']['first'])} µs; warm: "
          f"{us(m['gate on']['second'] - m['gate off']['second'])} µs.")


if __name__ == "__main__":
    sys.exit(main())
