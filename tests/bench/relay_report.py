#!/usr/bin/env python3
"""relay_report.py - relay.sh's markdown report: one table per client shape,
the ratios that matter with their goals, and a summary of every shape.

Usage (by relay.sh): relay_report.py RESULTS_TSV STANDIN(0|1)
RESULTS_TSV has one line per measured wrk run:
  round shape mode target req/s p50_us p99_us errors error_detail other_load% cpu_us_per_req
  sleeps_per_req user_us_per_req kernel_us_per_req
(the last three: of the process wrk talks to alone: its voluntary context
switches, its waits for events, and its user and kernel CPU time, per request)
The run's description comes from relay.sh's R_* and setting variables in
the environment. Python 3 standard library only.
"""
import os
import statistics as st
import sys
from collections import defaultdict

E = os.environ
med = st.median
MODES = ["keep-alive", "close"]
RPS, P50, P99, ERRS, DETAIL, CPU, OTHER, SLEEPS, USER, KERN = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10


def load(path):
    """data[shape][mode][target] = [(round, rps, p50, p99, errs, detail, cpu, other, sleeps, user, kernel)],
    others = [(other load %, where)], shapes in the order first seen."""
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    others, shapes = [], []
    for line in open(path):
        if not line.strip():
            continue
        f = line.rstrip("\n").split("\t") + ["0"] * 3
        rnd, shape, mode, t, rps, p50, p99, errs, detail, other, cpu, sleeps, user, kern = f[:14]
        if shape not in shapes:
            shapes.append(shape)
        data[shape][mode][t].append((int(rnd), float(rps), int(p50), int(p99), int(errs), detail, float(cpu), int(other),
                                        float(sleeps), float(user), float(kern)))
        others.append((int(other), f"round {rnd} {shape_name(shape)} {mode} {t}"))
    return data, others, shapes


def shape_name(shape):
    threads, conns = shape.split("x")
    return f"-t{threads} -c{conns}"


def fmt_int(x):
    return f"{x:,.0f}".replace(",", " ")


class Ratio:
    """The median of per-round ratios a/b of one figure, with their range."""

    def __init__(self, cells, a, b, i):
        ra = {r[0]: r[i] for r in cells[a]}
        rb = {r[0]: r[i] for r in cells[b]}
        self.per = [ra[k] / rb[k] for k in sorted(ra) if k in rb and rb[k]]
        self.m = med(self.per) if self.per else 0.0

    def __str__(self):
        if not self.per:
            return "n/a"
        if len(self.per) > 1:
            return f"{self.m:.2f}x [{min(self.per):.2f}-{max(self.per):.2f}]"
        return f"{self.m:.2f}x"

    def verdict(self, goal, higher_better=True):
        """met / MISSED against goal, and whether single rounds fall on both sides."""
        ok = self.m >= goal if higher_better else self.m <= goal
        v = "met" if ok else "MISSED"
        if self.per and min(self.per) < goal < max(self.per):
            v += ", but the rounds straddle it"
        return v


def header(shapes, identify, gate):
    title = " (the /__whoami gate)" if gate else " (identification on)" if identify else ""
    print("## wtproxy relay benchmark" + title)
    print()
    print(f"- work tree {E['R_COMMIT']}; wtproxy: {E['R_WTPROXY']}")
    print(f"- build measured: {E['R_BUILD']}")
    for line in E.get("R_COMPARE", "").strip().splitlines():
        print(f"- compared in every round beside it: {line}")
    print(f"- {E['R_NGINX']}, {E['R_WRK']}, kernel {E['R_KERNEL']}, {E['R_CPU']}, {E['R_NCPU']} CPUs,"
          f" {E['R_BUSY']}% busy just before the run")
    print(f"- client shapes: {', '.join('wrk ' + shape_name(s) for s in shapes)}; --timeout 2s on 127.0.0.1,"
          f" {E['ROUNDS']} interleaved rounds (each round runs every shape, mode and target; the targets' order rotates by one each round)"
          f" x {E['DURATION']} s per cell (after a {E['WARMUP']} s warm-up each); {E['R_PIN']}")
    print(f"- backend: nginx, one worker, static {E['BODY_BYTES']}-byte body; nginx proxy: one worker,"
          " access_log off (wtproxy keeps no access log), keepalive_requests 1000000 to clients and to the"
          f" backend, upstream keepalive {E['POOL']} and wtproxy --pool-size {E['POOL']} (idle backend connections kept:"
          " above every shape's connections, so neither proxy closes backend connections it needs again;"
          " wtproxy's default is 64), the same X-Forwarded-* headers")
    print("- figures are medians over rounds; ratios are medians of per-round ratios [min-max over rounds];"
          " CPU µs/req is the CPU time the backend and the proxies used on"
          f" {'CPU ' + E['SERVER_CPU'] if E['R_PINNED'] == '1' else 'all CPUs'}"
          " during the run, divided by the requests")
    if E.get("FLOOR") == "1":
        print("- floor: bench_floor_relay (tests/bench/floor_relay.c), single-threaded on edge-triggered epoll, one fixed"
              " buffer per socket, no allocation per request. Keep-alive: a TCP forwarder with no HTTP parsing and a"
              " backend connection per client, 4 syscalls per request. Connection: close: a pooling relay like nginx"
              " and wtproxy, doing the least HTTP work that lets it pool (the request's Connection line cut, the"
              " response's Content-Length read and its Connection line made `close`), 7 syscalls per request"
              " (accept4, epoll_ctl, read and write each way, close) and a share of epoll_wait")
    if E.get("URING") == "1":
        setups = E.get("URING_SETUP", "defer").split()
        others = "".join(f"; uring:{u} is the same with setup {u}" for u in setups[1:])
        print("- uring: bench_floor_uring (tests/bench/floor_uring.c), the floor's relay on io_uring (setup"
              f" {setups[0]}{others}): the same two relays, sizes and socket options, but a multishot"
              " accept, a multishot recv per socket into a ring of provided 16 KiB buffers, sends and closes queued"
              " as io_uring operations, and one io_uring_enter per batch of completions: no syscall of its own per"
              " request")
    if E.get("FLOOR") == "1" or E.get("URING") == "1":
        print("- user and kernel µs/req: the CPU time of the process wrk talks to alone (the proxy; direct: the"
              " backend), utime and stime from /proc/PID/stat over the run, per request")
    if identify:
        print("- identification on: wtproxy has no default backend; the backend is registered for a temp git worktree"
              " and wrk runs with its cwd there, so wtproxy identifies every new connection (sock_diag -> wrk's pid"
              " -> its cwd -> the worktree) before routing it; checked before measuring: curl from the worktree gets"
              " 200, from / gets 503. nginx and direct identify no one")
    if gate:
        print(f"- the /__whoami gate: the worktree holds {E['PY_FILES']} .py files in folders and {E['NM_FILES']} files"
              " under node_modules (pruned by the default excludes); the backend nginx also serves a static /__whoami"
              " naming the worktree and the fingerprint of its code (`wtproxy fingerprint --json`). wtproxy checks it"
              " before every request (the cached answer, one read of the tree's inotify fd); wtproxy-nogate is the same"
              " binary with `--whoami off`, its own control socket, the same registration; checked before measuring:"
              " an edit to a .py file gets 409 stale-code from wtproxy and 200 from wtproxy-nogate")
    print()


def table(cells_by_mode, targets, standin, flagged, shape):
    print("| mode | target | req/s | p50 µs | p99 µs | CPU µs/req | errors | other load % (median, max) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for mode in MODES:
        for t in targets:
            rs = cells_by_mode[mode][t]
            errs = sum(r[ERRS] for r in rs)
            name = "wtproxy (stand-in)" if (t == "wtproxy" and standin) else t
            e = "0"
            if errs:
                bad = [f"round {r[0]}: {r[DETAIL]}" for r in rs if r[ERRS]]
                flagged.append(f"{shape_name(shape)} {mode} {t}: " + "; ".join(bad))
                e = f"**{errs}** ⚠"
            m = lambda i: med([r[i] for r in rs])  # noqa: E731
            print(f"| {mode} | {name} | {fmt_int(m(RPS))} | {fmt_int(m(P50))} "
                  f"| {fmt_int(m(P99))} | {m(CPU):.1f} | {e} | {m(OTHER):.0f}, {max(r[OTHER] for r in rs)} |")
    print()


def batching_line(cells_by_mode, targets):
    """How many requests one wakeup of each server handles (requests per sleep)."""
    parts = []
    for mode in MODES:
        c = cells_by_mode[mode]
        per = lambda t: med([1 / r[SLEEPS] if r[SLEEPS] else float("inf") for r in c[t]])  # noqa: E731
        parts.append(f"{mode}: " + ", ".join(f"{t} {per(t):.0f}" for t in targets if c[t]))
    print("Requests per wakeup of the process wrk talks to (direct: the backend; requests / its voluntary"
          " context switches, medians; more is better batching): " + "; ".join(parts) + ".")
    print()


def goals(identify):
    """req/s goals against nginx per mode, and whether p99 is judged: issue 17's
    for the relay, issue 4's with identification on."""
    if identify:
        return {"keep-alive": 1.0, "close": 0.7}, False
    return {"keep-alive": 1.3, "close": 1.2}, True


def compare_lines(cells_by_mode, targets, builds, shape):
    """COMPARE: each other build against wtproxy (the measured build) and nginx."""
    for t in [t for t in targets if t.startswith("wtproxy:")]:
        for mode in MODES:
            c = cells_by_mode[mode]
            row = (Ratio(c, t, "wtproxy", RPS), Ratio(c, t, "wtproxy", CPU), Ratio(c, t, "nginx", RPS), Ratio(c, t, "nginx", CPU))
            print(f"{t}, {mode}: req/s {t}/wtproxy = {row[0]}, CPU/req {t}/wtproxy = {row[1]} (lower is better); "
                  f"{t}/nginx = {row[2]}, CPU/req {t}/nginx = {row[3]}")
            builds.append((shape, mode, t) + row)
    print()


def floor_reach(fn, goal, within, above):
    """Whether the floor itself reaches wtproxy's goal against nginx."""
    return within if fn.m >= goal else above


def floor_lines(cells_by_mode, identify, floors, shape):
    """FLOOR=1: the bare forwarder against nginx (can any read/write socket
    proxy reach the goal?) and wtproxy against it (how much of the floor's
    lead wtproxy gives away)."""
    rps_goal, _ = goals(identify)
    for mode in MODES:
        c = cells_by_mode[mode]
        fn, fcpu = Ratio(c, "floor", "nginx", RPS), Ratio(c, "floor", "nginx", CPU)
        wf, wfcpu = Ratio(c, "wtproxy", "floor", RPS), Ratio(c, "wtproxy", "floor", CPU)
        reach = floor_reach(fn, rps_goal[mode], "the goal is within the floor's reach",
                            "the goal is ABOVE what the floor reaches")
        print(f"floor, {mode}: floor/nginx = {fn} (wtproxy's goal {rps_goal[mode]}: {reach}), CPU/req floor/nginx = {fcpu}; "
              f"wtproxy/floor = {wf}, CPU/req wtproxy/floor = {wfcpu}, p99 floor/nginx = {Ratio(c, 'floor', 'nginx', P99)}")
        floors.append((shape, mode, fn, rps_goal[mode], fcpu, wf, wfcpu))
    print()


def floors_table(floors):
    print("### Every shape: the floor (a bare epoll forwarder) against nginx and wtproxy")
    print()
    print("| wrk | mode | req/s floor/nginx | wtproxy's goal | CPU µs/req floor/nginx | req/s wtproxy/floor | CPU µs/req wtproxy/floor |")
    print("|---|---|---:|---|---:|---:|---:|")
    for shape, mode, fn, goal, fcpu, wf, wfcpu in floors:
        reach = floor_reach(fn, goal, "within reach", "ABOVE the floor")
        print(f"| {shape_name(shape)} | {mode} | {fn} | >= {goal}: {reach} | {fcpu} | {wf} | {wfcpu} |")
    print()


def uring_lines(cells_by_mode, identify, urings, shape):
    """URING=1: the io_uring floor against nginx (does io_uring reach the goal?),
    against the epoll floor (what io_uring changes) and wtproxy against it."""
    rps_goal, _ = goals(identify)
    for mode in MODES:
        c = cells_by_mode[mode]
        un, ucpu = Ratio(c, "uring", "nginx", RPS), Ratio(c, "uring", "nginx", CPU)
        uf = (Ratio(c, "uring", "floor", RPS), Ratio(c, "uring", "floor", CPU), Ratio(c, "uring", "floor", KERN)) \
            if c["floor"] else None
        wu = Ratio(c, "wtproxy", "uring", RPS)
        reach = floor_reach(un, rps_goal[mode], "the goal is within io_uring's reach",
                            "the goal is ABOVE what the io_uring floor reaches")
        vs_floor = (f"uring/floor = {uf[0]}, CPU/req uring/floor = {uf[1]}, kernel µs/req uring/floor = {uf[2]}; "
                    if uf else "")
        print(f"uring, {mode}: uring/nginx = {un} (wtproxy's goal {rps_goal[mode]}: {reach}), CPU/req uring/nginx = {ucpu}; "
              f"{vs_floor}wtproxy/uring = {wu}, p99 uring/nginx = {Ratio(c, 'uring', 'nginx', P99)}")
        urings.append((shape, mode, un, rps_goal[mode], ucpu, uf, wu))
    print()


def urings_table(urings):
    print("### Every shape: the io_uring floor against nginx, the epoll floor and wtproxy")
    print()
    print("| wrk | mode | req/s uring/nginx | wtproxy's goal | CPU µs/req uring/nginx | req/s uring/floor"
          " | CPU µs/req uring/floor | kernel µs/req uring/floor | req/s wtproxy/uring |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for shape, mode, un, goal, ucpu, uf, wu in urings:
        reach = floor_reach(un, goal, "within reach", "ABOVE it")
        f = uf or ("n/a", "n/a", "n/a")
        print(f"| {shape_name(shape)} | {mode} | {un} | >= {goal}: {reach} | {ucpu} | {f[0]} | {f[1]} | {f[2]} | {wu} |")
    print()


def own_cpu_table(data, shapes, targets):
    """The CPU of the process wrk talks to alone, user + kernel, per request."""
    shown = [t for t in targets if t != "direct"]
    print("### Every shape: CPU per request of the proxy process alone, user + kernel µs (medians over rounds)")
    print()
    print("| wrk | mode | " + " | ".join(shown) + " |")
    print("|---|---|" + "---:|" * len(shown))
    for shape in shapes:
        for mode in MODES:
            c = data[shape][mode]
            cell = lambda t: (f"{med([r[USER] for r in c[t]]):.1f} + {med([r[KERN] for r in c[t]]):.1f}"  # noqa: E731
                              if c[t] else "n/a")
            print(f"| {shape_name(shape)} | {mode} | " + " | ".join(cell(t) for t in shown) + " |")
    print()


def builds_table(builds):
    print("### Every shape: the builds compared")
    print()
    print("| wrk | mode | build | req/s build/wtproxy | CPU µs/req build/wtproxy | req/s build/nginx | CPU µs/req build/nginx |")
    print("|---|---|---|---:|---:|---:|---:|")
    for shape, mode, t, a, b, c, d in builds:
        print(f"| {shape_name(shape)} | {mode} | {t} | {a} | {b} | {c} | {d} |")
    print()


def shape_lines(cells_by_mode, identify, gate, standin, summary, shape):
    rps_goal, judge_p99 = goals(identify)
    if gate:
        for mode in MODES:
            c = cells_by_mode[mode]
            gn = Ratio(c, "wtproxy", "wtproxy-nogate", RPS)
            target = (f"target >= 0.97: {gn.verdict(0.97)}" if mode == "keep-alive"
                      else "no target; keep-alive's is 0.97")
            print(f"gate, {mode}: wtproxy/wtproxy-nogate = {gn} ({target}), "
                  f"p50 = {Ratio(c, 'wtproxy', 'wtproxy-nogate', P50)}, "
                  f"p99 = {Ratio(c, 'wtproxy', 'wtproxy-nogate', P99)}, "
                  f"CPU/req = {Ratio(c, 'wtproxy', 'wtproxy-nogate', CPU)} (lower is better)")
        print()
    for mode in MODES:
        c = cells_by_mode[mode]
        wn, p99, cpu = Ratio(c, "wtproxy", "nginx", RPS), Ratio(c, "wtproxy", "nginx", P99), Ratio(c, "wtproxy", "nginx", CPU)
        goal = rps_goal[mode]
        v = "stand-in, not judged" if standin else wn.verdict(goal)
        pv = ("stand-in, not judged" if standin else p99.verdict(1.0, higher_better=False)) if judge_p99 else None
        p99_text = f"p99 wtproxy/nginx = {p99} (" + (f"target <= 1.0: {pv}" if pv else "lower is better") + ")"
        print(f"{mode}: wtproxy/nginx = {wn} (target >= {goal}: {v}), wtproxy/direct = {Ratio(c, 'wtproxy', 'direct', RPS)}, "
              f"{p99_text}, CPU/req wtproxy/nginx = {cpu} (lower is better); nginx/direct = {Ratio(c, 'nginx', 'direct', RPS)}")
        summary.append((shape, mode, wn, goal, v, p99, pv, cpu))
    print()


def summary_table(summary, others_by_shape):
    print("### Every shape: wtproxy against nginx")
    print()
    print("| wrk | mode | req/s wtproxy/nginx | goal | p99 wtproxy/nginx | p99 <= nginx | CPU µs/req wtproxy/nginx | other load on the servers' CPU (median, max) |")
    print("|---|---|---:|---|---:|---|---:|---|")
    for shape, mode, wn, goal, v, p99, pv, cpu in summary:
        o = others_by_shape[shape]
        print(f"| {shape_name(shape)} | {mode} | {wn} | >= {goal}: {v} | {p99} | {pv or 'not judged'} | {cpu} "
              f"| {med(o):.0f}%, {max(o)}% |")
    print()


def footer(others, flagged, identify, gate, standin):
    if standin:
        print("NOTE: the wtproxy rows are a second nginx proxy standing in for wtproxy (WTPROXY_CMD=nginx).")
    cpu = "CPU " + E["SERVER_CPU"] if E["R_PINNED"] == "1" else "the CPUs"
    worst = max(others)
    print(f"Other load on {cpu} during the runs (busy + steal, less our servers): "
          f"median {med([o[0] for o in others]):.0f}%, max {worst[0]}% ({worst[1]}).")
    if worst[0] > 10:
        print(f"WARNING: something else used {cpu} during some runs (up to {worst[0]}%): "
              "compare the ranges, believe CPU µs/req over req/s, and rerun on a quiet machine before trusting a small difference.")
    if identify and E.get("R_IDENT_CHECK"):
        print("Identification: " + E["R_IDENT_CHECK"] + ".")
    if gate and E.get("R_GATE_CHECK"):
        print("Gate: " + E["R_GATE_CHECK"] + ".")
    for w in E.get("R_WARN", "").strip().splitlines():
        print(f"WARNING: {w}")
    if flagged:
        print("⚠ runs with wrk errors (connect/read/write/timeout = socket errors, status = HTTP >= 400):")
        for f in flagged:
            print(f"- {f}")
    else:
        print("No wrk errors (socket errors or HTTP >= 400) in any run.")


def main():
    path, standin = sys.argv[1], sys.argv[2] == "1"
    data, others, shapes = load(path)
    identify, gate = E.get("IDENTIFY") == "1", E.get("GATE") == "1"
    targets = E.get("R_TARGETS", "direct nginx wtproxy").split()
    header(shapes, identify, gate)
    flagged, summary, builds, floors, urings = [], [], [], [], []
    others_by_shape = {s: [o for o, where in others if f" {shape_name(s)} " in where] for s in shapes}
    for shape in shapes:
        print(f"### wrk {shape_name(shape)}")
        print()
        table(data[shape], targets, standin, flagged, shape)
        shape_lines(data[shape], identify, gate, standin, summary, shape)
        if "floor" in targets:
            floor_lines(data[shape], identify, floors, shape)
        if "uring" in targets:
            uring_lines(data[shape], identify, urings, shape)
        batching_line(data[shape], targets)
        if any(t.startswith("wtproxy:") for t in targets):
            compare_lines(data[shape], targets, builds, shape)
    if len(shapes) > 1:
        summary_table(summary, others_by_shape)
    if floors:
        floors_table(floors)
    if urings:
        urings_table(urings)
    if floors or urings:
        own_cpu_table(data, shapes, targets)
    if builds:
        builds_table(builds)
    footer(others, flagged, identify, gate, standin)


if __name__ == "__main__":
    main()
