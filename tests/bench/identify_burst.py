#!/usr/bin/env python3
"""identify_burst.py - does a burst of new callers queue, and does a slow
identification ever become a wrong answer? (issue 17, item 5)

Each burst of each round starts a fresh daemon (no default backend,
`--whoami off`; burst B's figures are not mixed with A's) with one backend, a static nginx, registered for a temp git worktree, on a
machine topped up to --procs processes (idle `sleep`s this script starts
and kills), so that a scan of /proc costs what it costs on a busy
developer machine. Every client runs in the worktree, so every connection
must be identified by its caller before it is routed. Two bursts:

  A  50 processes (curl), each making its first request, started 20 ms
     apart: a test runner starting its workers.
  B  one process opening 1,500 keep-alive connections at once (wrk -c1500,
     3 s): a load test, or a browser and its workers.

Per burst: the answers that were not 200 ("unplaced": before, a caller
whose identification took over 2 s was routed as if it had no worktree and
got 503 no-backend), the daemon's CPU time, the time to first byte seen by
burst A's clients (curl's time_starttransfer; the same burst straight to
nginx is the baseline), burst B's request latency as wrk reports it (every
request: each connection's first, identified, and the keep-alive ones
after it), and, from the daemon's own `stats` control op (builds that have
it), the p50/p99 of identification (from the parsed head's lookup to its
answer: on the loop, or through the worker and back) and the /proc scans.
Binaries are interleaved round by round; medians over rounds are printed.

--where outside runs the clients from a plain folder in no worktree (a
browser or curl started from $HOME or /tmp): every caller is then walked
up its ancestors and not placed, and every answer is the refusal 503 (the
"not-200" columns then count what was not that 503); --where both
interleaves the two places within each round. Run the script from a folder
in no registered worktree (cd /tmp), since the walk goes on to the
clients' ancestors.

Usage: tests/bench/identify_burst.py [--rounds 10] [--procs 2000] [--where inside|outside|both]
       --bin NAME=PATH [--bin ...]
Needs nginx, curl and wrk; raise `ulimit -n` above 4,000 (the script tries).
"""
import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import control_line, die, free_port, say, wait_port, write_static_nginx  # noqa: E402

BURST_A = 50
A_SPACING = 0.020
B_CONNS = 1500
B_SECONDS = 3


def nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(n, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def count_procs():
    return sum(1 for d in os.listdir("/proc") if d.isdigit())


def top_up(procs):
    """Start idle sleeps until /proc holds procs processes (at most 3,000)."""
    fillers = []
    for _ in range(min(max(0, procs - count_procs()), 3000)):
        fillers.append(subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL))
    return fillers


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def control(runtime, req):
    """One control request to the daemon whose XDG_RUNTIME_DIR is runtime."""
    # 30 s: a daemon closing 1,500 connections on a loaded machine
    return control_line(os.path.join(runtime, "wtproxy", "control.sock"), req, 30)


def burst_a(cwd, port):
    """50 curls, 20 ms apart: their statuses and times to first byte (ms)."""
    procs = []
    for _ in range(BURST_A):
        procs.append(subprocess.Popen(
            ["curl", "-s", "-o", "/dev/null", "-m", "60", "-w", "%{http_code} %{time_starttransfer}",
             f"http://127.0.0.1:{port}/index.txt"], cwd=cwd, stdout=subprocess.PIPE, text=True))
        time.sleep(A_SPACING)
    out = [p.communicate()[0].split() for p in procs]
    return [o[0] if o else "000" for o in out], [float(o[1]) * 1000 for o in out if len(o) > 1]


def wrk_ms(text):
    """wrk's "1.23ms" / "456.00us" / "1.02s" in ms."""
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    return float("nan")


def burst_b(cwd, port):
    """wrk -c1500 from cwd: (requests, answers that were not 2xx/3xx, socket
    errors, wrk's request latency p50 and p99 in ms: what a caller waits
    for, the first request of each connection and the keep-alive ones after
    it)."""
    r = subprocess.run(["wrk", "-t2", f"-c{B_CONNS}", f"-d{B_SECONDS}s", "--timeout", "30s",
                        "--latency", f"http://127.0.0.1:{port}/index.txt"], cwd=cwd,
                       capture_output=True, text=True, preexec_fn=lambda: nofile(8192))
    reqs = non2xx = errors = 0
    lat = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("50%", "99%"):
            lat[parts[0]] = wrk_ms(parts[1])
        if "requests in" in line:
            reqs = int(parts[0])
        if line.strip().startswith("Non-2xx or 3xx responses:"):
            non2xx = int(parts[-1])
        if line.strip().startswith("Socket errors:"):
            errors = sum(int(x.strip(",")) for x in parts[3::2])
    return reqs, non2xx, errors, lat.get("50%", float("nan")), lat.get("99%", float("nan"))


def make_worktree(tmp):
    wt = os.path.join(tmp, "wt")
    os.makedirs(wt)
    git = ["git", "-C", wt, "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "bench"], check=True)
    return wt


def one_burst(name, binary, tmp, wt, bport, bpid, burst):
    """burst(wt, port) through a fresh daemon of binary: (its result, the
    daemon's CPU ms during it, the daemon's stats after it). Each burst has
    its own daemon, so that its identification figures are its own."""
    runtime = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, XDG_STATE_HOME=os.path.join(runtime, "st"))
    port = free_port()
    d = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--whoami", "off"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: nofile(16384))
    try:
        wait_port(port, d, name)
        subprocess.run([binary, "register", "--port", str(bport), "--pid", str(bpid), "--front",
                        str(port), "--worktree", wt], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        t0 = cpu_ticks(d.pid)
        out = burst(wt, port)
        t1 = cpu_ticks(d.pid)
        stats = control(runtime, {"op": "stats"})
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(10)
    return out, (t1 - t0) * 1000 / os.sysconf("SC_CLK_TCK"), stats


def round_of(name, binary, tmp, wt, bport, bpid, cwd):
    """One round of both bursts through binary, the clients in cwd; a dict
    of figures. A caller outside wt is refused: its right answer is 503."""
    (codes, ttfb), a_cpu, stats_a = one_burst(name, binary, tmp, wt, bport, bpid,
                                              lambda _, port: burst_a(cwd, port))
    (reqs, non2xx, errors, b_p50, b_p99), b_cpu, stats_b = one_burst(
        name, binary, tmp, wt, bport, bpid, lambda _, port: burst_b(cwd, port))
    want = "200" if cwd == wt else "503"
    bad = errors + (non2xx if cwd == wt else reqs - non2xx)
    passes = lambda s: s.get("identify", {}).get("worker_passes")  # noqa: E731
    ident = lambda s: s.get("identify", {}).get("all") if s.get("ok") else None  # noqa: E731
    worker = lambda s: s.get("identify", {}).get("worker", {}).get("count", 0)  # noqa: E731
    return {"a_worker": worker(stats_a), "b_worker": worker(stats_b),
            "a_bad": sum(c != want for c in codes), "a_ttfb": ttfb, "a_cpu_ms": a_cpu,
            "a_ident": ident(stats_a), "a_scans": stats_a.get("identify", {}).get("proc_scans"),
            "b_reqs": reqs, "b_bad": bad, "b_lat50": b_p50, "b_lat99": b_p99, "b_cpu_ms": b_cpu,
            "b_ident": ident(stats_b), "procs": count_procs(),
            "a_passes": passes(stats_a), "b_passes": passes(stats_b)}


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--procs", type=int, default=2000)
    ap.add_argument("--bin", action="append", default=[], help="NAME=PATH of a wtproxy")
    ap.add_argument("--where", choices=("inside", "outside", "both"), default="inside",
                    help="where the clients run: in the registered worktree, or in no worktree")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    if not bins or any(len(b) != 2 or not os.access(b[1], os.X_OK) for b in bins):
        die("give --bin NAME=PATH (an executable wtproxy) at least once")
    for tool in ("nginx", "curl", "wrk"):
        if not shutil.which(tool):
            die(f"{tool} is not installed (apt-get install {tool})")
    nofile(16384)
    tmp = tempfile.mkdtemp(prefix="identify-burst-")
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    with open(os.path.join(www, "index.txt"), "w") as f:
        f.write("x" * 128)
    bport = free_port()
    conf = write_static_nginx(tmp, bport, www)
    with open(conf) as f:
        text = f.read().replace("worker_connections 1024", "worker_connections 4096")
    with open(conf, "w") as f:
        f.write(text)
    nginx = subprocess.Popen(["nginx", "-c", conf, "-p", tmp], stderr=subprocess.DEVNULL)
    fillers = []
    try:
        wait_port(bport, nginx, "nginx")
        wt = make_worktree(tmp)
        out = os.path.join(tmp, "outside")
        os.makedirs(out)
        places = {"inside": [("", wt)], "outside": [("", out)],
                  "both": [(" inside", wt), (" outside", out)]}[a.where]
        fillers = top_up(a.procs)
        say(f"{count_procs()} processes on the machine; {a.rounds} rounds, interleaved")
        direct = []
        res = {name + where: [] for name, _ in bins for where, _ in places}
        for r in range(a.rounds):
            direct += burst_a(wt, bport)[1]
            for name, path in bins:
                for where, cwd in places:
                    res[name + where].append(round_of(name, path, tmp, wt, bport, nginx.pid, cwd))
        report(res, direct, a)
    finally:
        for p in fillers:
            p.kill()
        for p in fillers:
            p.wait()
        nginx.send_signal(signal.SIGTERM)
        nginx.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def report(res, direct, a):
    procs = [r["procs"] for rows in res.values() for r in rows]
    print(f"# identify_burst.py: {a.rounds} rounds, {min(procs)}-{max(procs)} processes on the "
          f"machine, load average {os.getloadavg()[0]:.1f}; medians over rounds")
    print(f"burst A (50 processes, first request each): time to first byte straight to nginx "
          f"p50 {pct(direct, 50):.2f} ms, p99 {pct(direct, 99):.2f} ms")
    print("| build | A not-200 (all rounds) | A TTFB p50 / p99 ms | A ident p50 / p99 us "
          "| A on worker (all rounds) | A /proc scans | A daemon CPU ms | B requests "
          "| B not-2xx (all rounds) | B ident p50 / p99 us | B on worker (all rounds) "
          "| B request p50 / p99 ms (wrk) | B daemon CPU ms | A / B worker passes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, rows in res.items():
        ttfb = [x for r in rows for x in r["a_ttfb"]]
        med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731

        def ident(k, p):
            v = [r[k][p] for r in rows if r[k]]
            return f"{statistics.median(v):.0f}" if v else "-"
        scans = [r["a_scans"] for r in rows if r["a_scans"] is not None]

        def passes(k):
            v = [r[k] for r in rows if r[k] is not None]
            return f"{statistics.median(v):.0f}" if v else "-"
        print(f"| {name} | {sum(r['a_bad'] for r in rows)} | {pct(ttfb, 50):.2f} / "
              f"{pct(ttfb, 99):.2f} | {ident('a_ident', 'p50_us')} / {ident('a_ident', 'p99_us')}"
              f" | {sum(r['a_worker'] for r in rows)} | "
              f"{statistics.median(scans) if scans else '-'} | {med('a_cpu_ms'):.0f} | "
              f"{med('b_reqs'):.0f} | {sum(r['b_bad'] for r in rows)} | "
              f"{ident('b_ident', 'p50_us')} / {ident('b_ident', 'p99_us')} | "
              f"{sum(r['b_worker'] for r in rows)} | "
              f"{med('b_lat50'):.2f} / {med('b_lat99'):.2f} | {med('b_cpu_ms'):.0f} | "
              f"{passes('a_passes')} / {passes('b_passes')} |")


if __name__ == "__main__":
    main()
