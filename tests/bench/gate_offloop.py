#!/usr/bin/env python3
"""gate_offloop.py - does fingerprinting a big worktree stall everybody else?

  tests/bench/gate_offloop.py --build A=/path/before/wtproxy --build B=/path/after/wtproxy \
      [--rounds 5] [--big-files 30000] [--edits 200]

Two worktrees of one temp repository: SMALL (40 .py files, gate_tree.py) and
BIG (--big-files .py files, 10 per folder, gate_tree.py's module text), each
served by its own nginx (one worker, a static body and a static /__whoami
naming its worktree and the fingerprint of its code, as gate_latency.py).
Per round, a new daemon of one build (rounds interleaved A B A B ...), with
--stale-grace 1s, both servers registered; then:

  - a keep-alive client of SMALL (its own process: no GIL shared with the
    driver) sends a request through the gate every 2 ms and times each;
  - the driver sends BIG's first request (its tree fingerprinted for the
    first time): it must pass (200);
  - the driver edits --edits of BIG's files, then sends a request: it must
    be refused 409 stale-code once stale_grace has passed (the server's
    /__whoami still reports the old code);
  - the client stops; BIG's files are restored for the next round.

Reported per build: the SMALL client's worst and p99 latency over the
window from BIG's first request to the end (median over rounds), BIG's
first request and refusal times. The report (markdown) goes to stdout,
progress to stderr. Bounded: every socket has a timeout and the whole run
an alarm (--deadline seconds).
"""
import argparse
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_tree  # noqa: E402
from benchlib import (die, free_port, git_repo, git_worktree, say, stop_procs,  # noqa: E402
                      wait_listening, write_static_nginx)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
BODY = b"wtproxy gate bench body\n" * 5
PACE_S = 0.002








def read_response(s, buf):
    """One response from s (Content-Length framed, or to the end when
    Connection: close). Returns (status, refused reason, rest of buf)."""
    while b"\r\n\r\n" not in buf:
        b = s.recv(65536)
        if not b:
            raise ConnectionError("closed before a response head")
        buf += b
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    fields = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        fields[k.strip().lower()] = v.strip()
    n = int(fields.get(b"content-length", b"-1"))
    while n >= 0 and len(buf) < n or n < 0 and fields.get(b"connection") == b"close":
        b = s.recv(65536)
        if not b:
            break
        buf += b
    n = len(buf) if n < 0 else n
    return status, fields.get(b"x-wtproxy-refused", b"").decode(), buf[n:]


def request(port, worktree):
    """One request to worktree's server on a new connection: (status, reason, seconds)."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(f"GET /body.txt HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Wtproxy-Worktree: "
              f"{worktree}\r\nConnection: close\r\n\r\n".encode())
    st, why, _ = read_response(s, b"")
    s.close()
    return st, why, time.monotonic() - t0


def client(port, worktree, out):
    """The SMALL client: one keep-alive connection, a request every PACE_S,
    until stdin closes. Writes [[start, seconds, status], ...] to out."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = (f"GET /body.txt HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Wtproxy-Worktree: "
           f"{worktree}\r\n\r\n").encode()
    buf, res = b"", []
    while not select.select([sys.stdin], [], [], 0)[0]:
        t0 = time.monotonic()
        s.sendall(req)
        st, _, buf = read_response(s, buf)
        res.append([t0, time.monotonic() - t0, st])
        time.sleep(PACE_S)
    with open(out, "w") as f:
        json.dump(res, f)


def fill_big(root, files):
    """files .py files, 10 per folder, 100 folders per package."""
    for i in range(files):
        d = os.path.join(root, "src", f"pkg{i // 1000}", f"mod{i // 10}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{i}.py"), "w") as f:
            f.write(f'"""module {i}"""\n\n' + "".join(
                f"def f{j}(x):\n    return x * {j} + {i}\n\n" for j in range(30)))


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="wtproxy-offloop.")
        self.procs = []

    def cleanup(self):
        stop_procs(self.procs, 5)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spawn(self, argv, log, **kw):
        p = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd="/", **kw)
        self.procs.append(p)
        return p

    def backend(self, name, wt, wtproxy):
        d = os.path.join(self.tmp, name)
        www = os.path.join(d, "www")
        os.makedirs(www)
        with open(os.path.join(www, "body.txt"), "wb") as f:
            f.write(BODY)
        port = free_port()
        write_static_nginx(d, port, www)
        log = os.path.join(d, "stderr.log")
        p = self.spawn([NGINX, "-p", d + "/", "-c", os.path.join(d, "nginx.conf"),
                        "-e", os.path.join(d, "error.log")], log, stdin=subprocess.DEVNULL)
        wait_listening(p, port, log, 10)
        fp = subprocess.run([wtproxy, "fingerprint", "--json", wt], check=True,
                            capture_output=True, text=True).stdout
        with open(os.path.join(www, "__whoami"), "w") as f:
            f.write(gate_tree.whoami(wt, p.pid, fp))
        return port, p.pid

    def setup(self):
        t, a = self.tmp, self.args
        repo = os.path.join(t, "repo")
        git_repo(repo)
        self.wt = {}
        for name, files in (("small", 40), ("big", a.big_files)):
            wt = os.path.join(t, name)
            self.wt[name] = git_worktree(repo, wt)
            if name == "big":
                fill_big(self.wt[name], files)
            else:
                gate_tree.fill(self.wt[name], files, 0)
        some = next(iter(a.builds.values()))
        self.be = {name: self.backend(name, wt, some) for name, wt in self.wt.items()}
        pys = sorted(os.path.join(dp, n) for dp, _, ns in os.walk(self.wt["big"])
                     for n in ns if n.endswith(".py"))
        folders = len({os.path.dirname(p) for p in pys})
        say(f"big: {len(pys)} .py files in {folders} folders")
        self.folders = folders
        step = max(1, len(pys) // a.edits)
        self.edit = [(p, open(p, "rb").read()) for p in pys[::step][:a.edits]]

    def daemon(self, wtproxy, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        port = free_port()
        env = dict(os.environ, WTPROXY_CONTROL=os.path.join(d, "control.sock"),
                   WTPROXY_NO_AUTOSTART="1")
        env.pop("WTPROXY_CONFIG", None)
        log = os.path.join(d, "stderr.log")
        p = self.spawn([wtproxy, "serve", "--listen", f"127.0.0.1:{port}", "--control",
                        env["WTPROXY_CONTROL"], "--state", os.path.join(d, "registry.json"),
                        "--stale-grace", f"{self.args.stale_grace_ms}ms"], log,
                       stdin=subprocess.DEVNULL, env=env)
        wait_listening(p, port, log, 10)
        for wt_name, (bport, pid) in self.be.items():
            r = subprocess.run([wtproxy, "register", "--port", str(bport), "--pid", str(pid),
                                "--front", str(port), "--worktree", self.wt[wt_name],
                                "--no-autostart"], env=env, capture_output=True, text=True)
            if r.returncode:
                die(f"wtproxy register {wt_name} failed: {r.stderr}")
        return p, port

    def round(self, label, wtproxy, i):
        p, port = self.daemon(wtproxy, f"{label}-{i}")
        st, why, _ = request(port, self.wt["small"])
        if st != 200:
            die(f"{label}: the small worktree's first request got {st} {why}")
        out = os.path.join(self.tmp, f"client-{label}-{i}.json")
        c = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client", str(port),
                              self.wt["small"], out], stdin=subprocess.PIPE)
        time.sleep(0.5)
        t_big = time.monotonic()
        first = request(port, self.wt["big"])
        t_big_done = time.monotonic()
        time.sleep(0.3)
        t_edit = time.monotonic()
        for path, data in self.edit:
            with open(path, "ab") as f:
                f.write(b"# edited\n")
        refusal = request(port, self.wt["big"])
        time.sleep(0.5)
        c.stdin.close()
        c.wait(timeout=30)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
        self.procs.remove(p)
        for path, data in self.edit:
            with open(path, "wb") as f:
                f.write(data)
        with open(out) as f:
            lat = [(t0, s, st) for t0, s, st in json.load(f) if t0 >= t_big]
        bad = [st for _, _, st in lat if st != 200]
        worst_at = max(lat, key=lambda x: x[1])[0]
        phase = ("first fingerprint" if worst_at < t_big_done else
                 "between" if worst_at < t_edit else "after the edit")
        secs = sorted(s for _, s, _ in lat)
        r = {"worst": secs[-1], "p99": secs[min(len(secs) - 1, int(0.99 * len(secs)))],
             "p50": statistics.median(secs), "n": len(secs), "bad": len(bad),
             "first": first, "refusal": refusal, "phase": phase,
             "worst_at": worst_at - t_big}
        say(f"{label} round {i + 1}: small worst {r['worst'] * 1000:.1f} ms ({phase}, "
            f"+{r['worst_at']:.2f} s), p99 "
            f"{r['p99'] * 1000:.1f} ms over {r['n']}; big first {first[0]} in "
            f"{first[2] * 1000:.0f} ms; after the edit {refusal[0]} {refusal[1]} in "
            f"{refusal[2] * 1000:.0f} ms")
        return r


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--client":
        client(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", required=True,
                    help="LABEL=/path/to/wtproxy, twice: rounds alternate between them")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--big-files", type=int, default=30000)
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--stale-grace-ms", type=int, default=1000)
    ap.add_argument("--deadline", type=int, default=900)
    a = ap.parse_args()
    a.builds = dict(b.split("=", 1) for b in a.build)
    a.builds = {k: os.path.abspath(v) for k, v in a.builds.items()}
    signal.alarm(a.deadline)
    b = Bench(a)
    res = {k: [] for k in a.builds}
    try:
        b.setup()
        for i in range(a.rounds):
            for label, wtproxy in a.builds.items():
                res[label].append(b.round(label, wtproxy, i))
    finally:
        b.cleanup()
    report(a, b, res)
    ok = all(r["first"][0] == 200 and r["refusal"][:2] == (409, "stale-code") and not r["bad"]
             for rs in res.values() for r in rs)
    return 0 if ok else 1


def report(a, b, res):
    ms = lambda v: f"{v * 1000:.1f}"  # noqa: E731
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    print(f"- builds: " + ", ".join(f"{k} = `{v}`" for k, v in a.builds.items()))
    print(f"- big worktree: {a.big_files} .py files in {b.folders} folders; {a.edits} edited; "
          f"small: 40 .py files; --stale-grace {a.stale_grace_ms}ms; nginx backends with a "
          f"static /__whoami; the small client on one keep-alive connection, a request every "
          f"{PACE_S * 1000:.0f} ms")
    print(f"- machine: {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}")
    print(f"- `{' '.join(['tests/bench/gate_offloop.py'] + sys.argv[1:])}`")
    print()
    print("| build | small: worst ms | small: p99 ms | small: p50 ms | small requests | "
          "big: first request ms | big: edit to 409 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, rs in res.items():
        print(f"| {k} | {ms(med(rs, 'worst'))} | {ms(med(rs, 'p99'))} | {ms(med(rs, 'p50'))} "
              f"| {int(med(rs, 'n'))} | {ms(statistics.median(r['first'][2] for r in rs))} "
              f"| {ms(statistics.median(r['refusal'][2] for r in rs))} |")
    print()
    print("Per round (small worst / p99 ms; big first status, after-edit status):")
    print()
    for k, rs in res.items():
        print(f"- {k}: " + "; ".join(
            f"{ms(r['worst'])} / {ms(r['p99'])}, {r['first'][0]}, {r['refusal'][0]} "
            f"{r['refusal'][1]}" + (f", {r['bad']} small non-200" if r["bad"] else "")
            for r in rs))


if __name__ == "__main__":
    sys.exit(main())
