#!/usr/bin/env python3
"""ack_stall_first.py - what a new browser's first page costs through
wtproxy as a user runs it (gate and identification on): the first
connection of a Chromium the daemon has never seen must be placed, which
ack_stall.py's medians leave out (its load 0 warms up).

Per sample and binary (interleaved): a fresh git worktree, one nginx worker
serving ack_stall.py's page and a /__whoami naming the worktree, a fresh
`wtproxy serve` (gate on, no default backend) with nginx registered for the
worktree; this script (in the worktree) checks a request passes, then a new
Chromium (ack_stall_browser.mjs, cwd in the worktree) loads the page once.
Reported, medians over samples: the page's first byte and load (ms from
navigation start), and the daemon's identification worker: the slowest
lookup before the browser (this script's own first connection, which needs
a full /proc scan: it is older than the daemon) and after it.

  tests/bench/ack_stall_first.py --bin before=PATH --bin after=PATH [--samples 5]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ack_stall as A  # noqa: E402
from benchlib import say  # noqa: E402


def sample(binary):
    """One fresh daemon and browser: (htmlTtfb ms, load ms, worker max before, after, µs)."""
    tmp = tempfile.mkdtemp(prefix="ack-first-")
    procs = []
    A.CONTROLS.clear()
    try:
        www = A.make_tree(tmp)
        wt = A.make_gate_worktree(tmp)
        os.chdir(wt)
        bport, bpid, _, page = A.start_server("nginx", tmp, www, procs)
        port = A.start_gated(binary, wt, procs, tmp, "w", "nginx", (bport, bpid, www))
        control = A.CONTROLS[("nginx", "w+gate")]
        s1 = A.identify_stats(control)["worker"]
        script = os.path.join(A.HERE, "ack_stall_browser.mjs")
        out = subprocess.run(["node", script, "--timeline", "0", f"http://127.0.0.1:{port}{page}"],
                             capture_output=True, text=True, cwd=wt, timeout=120)
        if out.returncode:
            raise SystemExit(f"ack_stall_first.py: browser failed:\n{out.stderr}")
        ms, tl = json.loads(out.stdout)["first"][0]
        s2 = A.identify_stats(control)["worker"]
        return tl["htmlTtfb"], ms, s1["max_us"], s2["max_us"]
    finally:
        A.stop(procs)
        os.chdir(A.REPO)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", default=[], help="NAME=PATH of a wtproxy binary")
    ap.add_argument("--samples", type=int, default=5)
    a = ap.parse_args()
    bins = [(n, os.path.abspath(p)) for n, p in (b.split("=", 1) for b in a.bin)]
    res = {n: [] for n, _ in bins}
    for i in range(a.samples):
        for n, p in bins:
            res[n].append(sample(p))
            say(f"sample {i + 1}/{a.samples} {n} (load {os.getloadavg()[0]:.1f}): htmlTtfb, "
                f"load ms, worker max µs before/after the browser: {res[n][-1]}")
    print(f"A new Chromium's first page through a fresh gated daemon, medians of {a.samples} "
          "samples (all samples: stderr)\n")
    print("| binary | first byte ms | load ms | worker max before browser µs | after µs |")
    print("|---|---|---|---|---|")
    for n, v in res.items():
        meds = [statistics.median(x[k] for x in v) for k in range(4)]
        print(f"| {n} | " + " | ".join(f"{m:g}" for m in meds) + " |")


if __name__ == "__main__":
    main()
