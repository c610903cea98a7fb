#!/usr/bin/env python3
"""ack_stall.py - do dev servers that write a response's head and body in
separate sends stall on keep-alive connections, directly and through
wtproxy, before and after a change?

The stall: the receiver delays its ACK of the head (Linux delayed ACK, once
the connection looks interactive), the server's Nagle holds the body until
that ACK comes, and each request waits about 40 ms. wtproxy is the receiver
on its backend side, so it can acknowledge at once (TCP_QUICKACK).

Servers (each on 127.0.0.1, a port the kernel picks):
  django   /usr/bin/python3 manage.py runserver --noreload: a tiny project in
           a temp dir, a JSON view at /api/ and 30 small CSS files served by
           django.contrib.staticfiles at /static/ (DEBUG=True), /page/ links them
  pyhttp   /usr/bin/python3 -m http.server --protocol HTTP/1.1 (keep-alive;
           its default HTTP/1.0 closes each connection): the same files
  node     Node's http.createServer, res.end(body)
  vite     tests/node_modules vite, serving the same files
  nginx    one nginx worker serving the same files: the fastest server of the
           page on this machine, the floor the browser column is read against
Targets: direct, and `wtproxy serve --listen 127.0.0.1:P --backend
127.0.0.1:B --whoami off` for each binary given (--bin NAME=PATH); with
--gate, for Django and nginx also NAME+gate: wtproxy as a user runs it
(gate and identification on; Django started by `wtproxy run` in a git
worktree that has the /__whoami middleware, nginx registered for it with a
/__whoami file; this script and the browser run in that worktree).

Measures, in interleaved rounds (server by server, each round visits every
target in turn), medians over rounds:
  json     N keep-alive GETs of the JSON view on one new connection: ms/request
  static   the 30 CSS files over one new keep-alive connection: total ms
  browser  (--browser) real Chromium through Playwright loading /page/ from
           every target of every server, interleaved load by load: load
           time, ms, fresh context each load; beside it the median over
           loads of load i / nginx direct's load i (the same moment's floor)
  timeline (--timeline) the same loads' Resource Timing: connections, time
           to the HTML, the style sheets' first fetch and last byte, waits,
           time with nothing in flight (ack_stall_browser.mjs)

Usage:
  tests/bench/ack_stall.py --bin before=/path/wtproxy --bin after=build/proxy/wtproxy
      [--rounds 7] [--requests 30] [--servers django,pyhttp,node,vite,nginx] [--browser]
      [--gate] [--timeline] [--timeline-json FILE]
The report (markdown) goes to stdout, progress to stderr.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_tree  # noqa: E402
from ack_stall_report import ms, report  # noqa: E402
from benchlib import control_line, free_port, git_repo, git_worktree, say, wait_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NODE_MODULES = os.path.join(REPO, "tests", "node_modules")
NFILES = 30
PY = "/usr/bin/python3"
# (server, target) -> control socket of each +gate daemon, for its stats
CONTROLS = {}
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
DJANGO_SETTINGS = """
SECRET_KEY = "bench"
DEBUG = True
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "urls"
INSTALLED_APPS = ["django.contrib.staticfiles"]
MIDDLEWARE = MIDDLEWARE_LIST
STATIC_URL = "/static/"
STATICFILES_DIRS = [__import__("os").path.join(__import__("os").path.dirname(__file__), "www", "static")]
DATABASES = {}
USE_TZ = True
"""

DJANGO_URLS = """
from django.http import HttpResponse, JsonResponse
from django.urls import path

def api(request):
    return JsonResponse({"ok": True, "items": list(range(20))})

PAGE = open(__import__("os").path.join(__import__("os").path.dirname(__file__), "www", "page", "index.html")).read()

def page(request):
    return HttpResponse(PAGE)

urlpatterns = [path("api/", api), path("page/", page)]
"""

NODE_SERVER = """
const http = require('http');
const fs = require('fs');
const path = require('path');
const root = process.argv[2];
http.createServer((req, res) => {
  let p = req.url.split('?')[0];
  if (p.endsWith('/')) p += 'index.html';
  fs.readFile(path.join(root, p), (err, data) => {
    if (err) { res.statusCode = 404; res.end('not found'); return; }
    res.setHeader('Content-Type', p.endsWith('.css') ? 'text/css' : p.endsWith('.html') ? 'text/html' : 'application/json');
    res.end(data);
  });
}).listen(Number(process.argv[3]), '127.0.0.1');
"""


def make_tree(tmp, middleware=("django.middleware.common.CommonMiddleware",)):
    """A Django project and a www/ tree every server serves alike:
    /api/ (JSON), /static/s00.css .. s29.css, /page/ (links the 30)."""
    www = os.path.join(tmp, "www")
    os.makedirs(os.path.join(www, "static"))
    os.makedirs(os.path.join(www, "api"))
    os.makedirs(os.path.join(www, "page"))
    for i in range(NFILES):
        with open(os.path.join(www, "static", f"s{i:02d}.css"), "w") as f:
            f.write(f".c{i} {{ color: #{i:02d}{i:02d}{i:02d}; margin: {i}px; }}\n" * 8)
    with open(os.path.join(www, "api", "index.html"), "w") as f:
        json.dump({"ok": True, "items": list(range(20))}, f)
    links = "".join(f'<link rel="stylesheet" href="/static/s{i:02d}.css">\n' for i in range(NFILES))
    with open(os.path.join(www, "page", "index.html"), "w") as f:
        f.write(f"<!doctype html><html><head>{links}</head><body>30 files</body></html>\n")
    with open(os.path.join(tmp, "settings.py"), "w") as f:
        f.write(DJANGO_SETTINGS.replace("MIDDLEWARE_LIST", repr(list(middleware))))
    with open(os.path.join(tmp, "urls.py"), "w") as f:
        f.write(DJANGO_URLS)
    with open(os.path.join(tmp, "manage.py"), "w") as f:
        f.write("import os, sys\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings')\n"
                "from django.core.management import execute_from_command_line\n"
                "execute_from_command_line(sys.argv)\n")
    with open(os.path.join(tmp, "node-server.js"), "w") as f:
        f.write(NODE_SERVER)
    return www


def write_nginx(d, port, www):
    """d/nginx.conf: one foreground nginx worker (no master) serving www on
    127.0.0.1:port with its defaults (sendfile, tcp_nodelay, keep-alive),
    every log and temp file under d. The fastest server of the page here."""
    os.makedirs(d)
    conf = os.path.join(d, "nginx.conf")
    temps = "".join(f"    {k}_temp_path {d}/{k};\n"
                    for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(conf, "w") as f:
        f.write(f"daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n"
                f"error_log {d}/error.log warn;\nevents {{ worker_connections 1024; }}\n"
                f"http {{\n    access_log off;\n{temps}"
                "    types { text/html html; text/css css; }\n    sendfile on;\n"
                f"    server {{ listen 127.0.0.1:{port}; root {www};\n"
                "        location = /__whoami { default_type application/json; } }\n}\n")
    return conf


def start_server(name, tmp, www, procs):
    """Start one dev server; returns (port, json path, static prefix)."""
    port = free_port()
    null = subprocess.DEVNULL
    if name == "django":
        cmd = [PY, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
        p = subprocess.Popen(cmd, cwd=tmp, stdout=null, stderr=null)
        api, page = "/api/", "/page/"
    elif name == "pyhttp":
        cmd = [PY, "-m", "http.server", "--protocol", "HTTP/1.1", "--bind", "127.0.0.1", str(port)]
        p = subprocess.Popen(cmd, cwd=www, stdout=null, stderr=null)
        api, page = "/api/index.html", "/page/"
    elif name == "node":
        p = subprocess.Popen(["node", os.path.join(tmp, "node-server.js"), www, str(port)],
                             stdout=null, stderr=null)
        api, page = "/api/index.html", "/page/"
    elif name == "nginx":
        conf = write_nginx(os.path.join(tmp, "nginx"), port, www)
        d = os.path.dirname(conf)
        p = subprocess.Popen([NGINX, "-p", d + "/", "-c", conf, "-e", os.path.join(d, "error.log")],
                             stdout=null, stderr=null)
        api, page = "/api/index.html", "/page/"
    elif name == "vite":
        vite = os.path.join(NODE_MODULES, ".bin", "vite")
        cmd = [vite, "--host", "127.0.0.1", "--port", str(port), "--strictPort", "--logLevel", "error"]
        p = subprocess.Popen(cmd, cwd=www, stdout=null, stderr=null)
        api, page = "/api/index.html", "/page/"
    else:
        raise SystemExit(f"ack_stall.py: unknown server {name}")
    procs.append(p)
    wait_port(port, p, name)
    return port, p.pid, api, page


def start_proxy(binary, backend_port, procs, tmp, name):
    port = free_port()
    own = tempfile.mkdtemp(dir=tmp, prefix=f"wtproxy-{name}-")
    cmd = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--backend",
           f"127.0.0.1:{backend_port}", "--whoami", "off",
           "--control", os.path.join(own, "control.sock"), "--state", os.path.join(own, "reg.json")]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    wait_port(port, p, f"wtproxy ({binary})")
    return port


def get_all(port, paths):
    """GET each path in turn on one new keep-alive connection; per-request
    seconds. Fails on anything but 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    times = []
    try:
        for p in paths:
            t0 = time.perf_counter()
            conn.request("GET", p, headers={"Host": "localhost"})
            r = conn.getresponse()
            body = r.read()
            times.append(time.perf_counter() - t0)
            if r.status != 200 or not body:
                raise SystemExit(f"ack_stall.py: GET {p} on port {port}: {r.status}")
            if r.will_close:
                raise SystemExit(f"ack_stall.py: GET {p} on port {port} closed the connection")
    finally:
        conn.close()
    return times


def make_gate_worktree(tmp):
    """A git worktree holding the same Django project with the /__whoami
    middleware first, as a user who adopted wtproxy has it; its path."""
    repo, wt = os.path.join(tmp, "gate-repo"), os.path.join(tmp, "gate-wt")
    git_repo(repo)
    git_worktree(repo, wt)
    make_tree(wt, ("wtproxy_whoami.django.WhoamiMiddleware",
                   "django.middleware.common.CommonMiddleware"))
    return os.path.realpath(wt)


def start_gated(binary, wt, procs, tmp, name, server, backend):
    """wtproxy as a user runs it: a daemon with the gate on and no default
    backend; for django, Django started by `wtproxy run` in worktree wt; for
    nginx, the direct nginx (backend: its port, pid and www) registered for
    wt with a /__whoami file naming wt. Callers are placed by
    identification: this process and the browser run in wt. Returns the
    daemon's port once a request through it answers 200."""
    port = free_port()
    own = tempfile.mkdtemp(dir=tmp, prefix=f"wtproxy-{name}-")
    env = dict(os.environ, WTPROXY_CONTROL=os.path.join(own, "control.sock"),
               WTPROXY_NO_AUTOSTART="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.path.join(REPO, "whoami", "python"))
    env.pop("WTPROXY_CONFIG", None)
    d = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--control",
                          env["WTPROXY_CONTROL"], "--state", os.path.join(own, "reg.json")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(d)
    wait_port(port, d, f"wtproxy ({binary})")
    CONTROLS[(server, f"{name}+gate")] = env["WTPROXY_CONTROL"]
    log = os.path.join(own, "run.log")
    if server == "django":
        with open(log, "w") as f:
            run = subprocess.Popen([binary, "run", "--front", str(port), "--", PY, "manage.py",
                                    "runserver", "--noreload", "127.0.0.1:{port}"],
                                   cwd=wt, env=env, stdout=f, stderr=f)
        procs.insert(0, run)  # stopped first: it unregisters from the daemon on its way out
        path = "/api/"
    else:
        bport, bpid, www = backend
        fp = subprocess.run([binary, "fingerprint", "--json", wt], check=True,
                            capture_output=True, text=True).stdout
        with open(os.path.join(www, "__whoami"), "w") as f:
            f.write(gate_tree.whoami(wt, bpid, fp))
        subprocess.run([binary, "register", "--port", str(bport), "--pid", str(bpid), "--front",
                        str(port), "--worktree", wt, "--no-autostart"], env=env, check=True)
        run, path = d, "/api/index.html"
    end = time.monotonic() + 60
    while True:
        try:
            get_all(port, [path])
            return port
        except (SystemExit, OSError) as e:
            if run.poll() is not None or time.monotonic() > end:
                with open(log, "a+") as f:
                    f.seek(0)
                    raise SystemExit(f"ack_stall.py: {name}+gate not ready ({e}):\n{f.read()}")
            time.sleep(0.2)


def browser_loads(urls, loads, timeline):
    """Chromium through Playwright: load times of each url, interleaved
    (load i of every url in turn), and with timeline their summaries."""
    script = os.path.join(HERE, "ack_stall_browser.mjs")
    out = subprocess.run(["node", script, *(["--timeline"] if timeline else []), str(loads), *urls],
                         capture_output=True, text=True, timeout=1200, cwd=os.getcwd())
    if out.returncode != 0:
        raise SystemExit(f"ack_stall.py: browser run failed:\n{out.stderr}")
    res = json.loads(out.stdout)
    if not timeline:
        return res, [None] * len(urls), [None] * len(urls)
    return res["times"], res["timelines"], res["first"]


def identify_stats(control):
    """The daemon's identification timings (the stats control op)."""
    return control_line(control, {"op": "stats"}, 10)["identify"]


def stop(procs):
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
    procs.clear()


def measure_server(server, tmp, www, bins, wt, a, procs):
    """Start server and its targets, measure json and static in a.rounds
    interleaved rounds; returns (row, [(target, browser url)])."""
    statics = [f"/static/s{i:02d}.css" for i in range(NFILES)]
    bport, bpid, api, page = start_server(server, tmp, www, procs)
    targets = [("direct", bport)] + [(n, start_proxy(p, bport, procs, tmp, n)) for n, p in bins]
    if wt and server in ("django", "nginx"):
        targets += [(f"{n}+gate", start_gated(p, wt, procs, tmp, n, server, (bport, bpid, www)))
                    for n, p in bins]
    res = {t: {"json": [], "static": []} for t, _ in targets}
    for t, port in targets:  # warm-up: imports, pools, page caches
        get_all(port, [api] * 3 + statics)
    for r in range(a.rounds):
        for t, port in targets:
            res[t]["json"].append(statistics.median(get_all(port, [api] * a.requests)))
            res[t]["static"].append(sum(get_all(port, statics)))
        say(f"{server} round {r + 1}/{a.rounds}: " + ", ".join(
            f"{t} {ms(res[t]['json'][-1])} ms/req, 30 files {ms(res[t]['static'][-1])} ms"
            for t, _ in targets))
    row = {"server": server, "targets": {}}
    for t, _ in targets:
        row["targets"][t] = {k: statistics.median(v) for k, v in res[t].items()}
    return row, [(t, f"http://127.0.0.1:{port}{page}") for t, port in targets]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", default=[], help="NAME=PATH of a wtproxy binary")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--servers", default="django,pyhttp,node,vite,nginx")
    ap.add_argument("--browser", action="store_true")
    ap.add_argument("--loads", type=int, default=9)
    ap.add_argument("--gate", action="store_true",
                    help="also NAME+gate: Django by `wtproxy run`, gate and identification on")
    ap.add_argument("--timeline", action="store_true", help="browser: Resource Timing summary")
    ap.add_argument("--timeline-json", help="write every load's timeline to this file")
    a = ap.parse_args()
    a.browser = a.browser or a.timeline
    bins = [(n, os.path.abspath(p)) for n, p in (b.split("=", 1) for b in a.bin)]
    tmp = tempfile.mkdtemp(prefix="ack-stall-")
    procs, rows, urls = [], [], []
    try:
        www = make_tree(tmp)
        wt = make_gate_worktree(tmp) if a.gate else None
        if wt:
            os.chdir(wt)  # identification places this process (and the browser) in wt
        for server in a.servers.split(","):
            row, u = measure_server(server, tmp, www, bins, wt, a, procs)
            rows.append(row)
            urls += [(row, t, url) for t, url in u]
        if a.browser:  # every server's targets in one interleaved run
            times, tls, first = browser_loads([u for _, _, u in urls], a.loads, a.timeline)
            for (row, t, _), v, tl, f in zip(urls, times, tls, first):
                row["targets"][t].update(browser=v, timeline=tl, first=f)
                say(f"browser {row['server']} {t}: {v}")
            for (server, t), control in CONTROLS.items():
                row = next(r for r in rows if r["server"] == server)
                row["targets"][t]["identify"] = identify_stats(control)
            if a.timeline_json:
                with open(a.timeline_json, "w") as f:
                    keep = ("browser", "timeline", "first", "identify")
                    json.dump([dict(server=r["server"], target=t,
                                    **{k: r["targets"][t].get(k) for k in keep})
                               for r, t, _ in urls], f)
    finally:
        stop(procs)
        os.chdir(REPO)
        shutil.rmtree(tmp, ignore_errors=True)
    report(rows, a)


if __name__ == "__main__":
    main()
