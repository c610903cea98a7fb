"""ack_stall_report.py - the markdown report of ack_stall.py: the
json/static/browser table per server and target, and the browser's table
against nginx direct with the Resource Timing summary (--timeline)."""
import statistics

NFILES = 30


def ms(x):
    return f"{x * 1000:.2f}" if x < 0.1 else f"{x * 1000:.0f}"


def report(rows, a):
    names = list(dict.fromkeys(n for r in rows for n in r["targets"]))
    print(f"{a.rounds} interleaved rounds, medians; json: {a.requests} keep-alive GETs on one "
          f"connection, median ms per request; static: {NFILES} CSS files over one keep-alive "
          "connection, total ms" + ("; browser: Chromium load of a page with the 30 files, median "
                                     f"of {a.loads} loads, ms" if a.browser else "") + "\n")
    kinds = ["json", "static"] + (["browser"] if a.browser else [])
    print("| server | measure | " + " | ".join(names) + " | " +
          " | ".join(f"{n}/direct" for n in names[1:]) + " |")
    print("|---" * (2 + 2 * len(names) - 1) + "|")
    for row in rows:
        tg = row["targets"]
        for k in kinds:
            vals = [tg[n][k] if n in tg else None for n in names]
            vals = [statistics.median(v) / 1000 if k == "browser" and v else v for v in vals]
            print(f"| {row['server']} | {k} | " + " | ".join(ms(v) if v else "" for v in vals) +
                  " | " + " | ".join(f"{v / vals[0]:.2f}x" if v else "" for v in vals[1:]) + " |")
    if a.browser:
        report_browser(rows, a)


def report_browser(rows, a):
    """Each browser target against nginx direct, load by load (the loads
    are interleaved, so load i of each target ran at nearly the same time);
    with --timeline, the medians of each load's timeline and the first
    (warm-up) load alone; and each +gate daemon's identification times."""
    refs = [(f"vs {r['server']}", r["targets"]["direct"]["browser"]) for r in rows
            if r["server"] in ("nginx", "django")]
    print(f"\nbrowser, medians of {a.loads} loads (ms from navigation start)"
          + ("; vs X: median over loads of load i / X direct's load i" if refs else "") + "\n")
    keys = ["conns", "newConns", "htmlTtfb", "htmlEnd", "cssFirst", "cssLastEnd", "load",
            "waitMed", "waitMax", "queueMax", "connectMax", "chain", "idle"] if a.timeline else []
    print("| server | target | load ms | " + "".join(f"{n} | " for n, _ in refs) +
          ("".join(f"{k} | " for k in keys) +
           ("first load: ms, htmlTtfb |" if keys else "")).rstrip())
    print("|---" * (3 + len(refs) + len(keys) + bool(keys)) + "|")
    for row in rows:
        for t, v in row["targets"].items():
            cells = [row["server"], t, f"{statistics.median(v['browser']):.0f}"]
            for _, ref in refs:
                cells.append(f"{statistics.median(x / y for x, y in zip(v['browser'], ref)):.2f}x")
            for k in keys:
                cells.append(f"{statistics.median(x[k] for x in v['timeline']):g}")
            if keys:
                cells.append(f"{v['first'][0]:.0f}, {v['first'][1]['htmlTtfb']:g}")
            print("| " + " | ".join(cells) + " |")
    for row in rows:
        for t, v in row["targets"].items():
            if "identify" in v:
                i = v["identify"]
                print(f"\n{row['server']} {t}: identification of every connection (this script's "
                      f"and the browser's): {i['all']['count']} lookups, "
                      f"p50 {i['all']['p50_us']} µs, "
                      f"p99 {i['all']['p99_us']} µs, max {i['all']['max_us']} µs; on the worker: "
                      f"{i['worker']['count']} (p50 {i['worker']['p50_us']} µs, max "
                      f"{i['worker']['max_us']} µs), {i['proc_scans']} full /proc scans")
