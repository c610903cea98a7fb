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
Targets: direct, and `wtproxy serve --listen 127.0.0.1:P --backend
127.0.0.1:B --whoami off` for each binary given (--bin NAME=PATH).

Measures, in interleaved rounds (server by server, each round visits every
target in turn), medians over rounds:
  json     N keep-alive GETs of the JSON view on one new connection: ms/request
  static   the 30 CSS files over one new keep-alive connection: total ms
  browser  (--browser) real Chromium through Playwright loading /page/
           (Django only): load time, ms, fresh context each load

Usage:
  tests/bench/ack_stall.py --bin before=/path/wtproxy --bin after=build/proxy/wtproxy
      [--rounds 7] [--requests 30] [--servers django,pyhttp,node,vite] [--browser]
The report (markdown) goes to stdout, progress to stderr.
"""
import argparse
import http.client
import json
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
from benchlib import free_port, say, wait_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NODE_MODULES = os.path.join(REPO, "tests", "node_modules")
NFILES = 30
PY = "/usr/bin/python3"








DJANGO_SETTINGS = """
SECRET_KEY = "bench"
DEBUG = True
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "urls"
INSTALLED_APPS = ["django.contrib.staticfiles"]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
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


def make_tree(tmp):
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
        f.write(DJANGO_SETTINGS)
    with open(os.path.join(tmp, "urls.py"), "w") as f:
        f.write(DJANGO_URLS)
    with open(os.path.join(tmp, "manage.py"), "w") as f:
        f.write("import os, sys\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings')\n"
                "from django.core.management import execute_from_command_line\n"
                "execute_from_command_line(sys.argv)\n")
    with open(os.path.join(tmp, "node-server.js"), "w") as f:
        f.write(NODE_SERVER)
    return www


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
    elif name == "vite":
        vite = os.path.join(NODE_MODULES, ".bin", "vite")
        cmd = [vite, "--host", "127.0.0.1", "--port", str(port), "--strictPort", "--logLevel", "error"]
        p = subprocess.Popen(cmd, cwd=www, stdout=null, stderr=null)
        api, page = "/api/index.html", "/page/"
    else:
        raise SystemExit(f"ack_stall.py: unknown server {name}")
    procs.append(p)
    wait_port(port, p, name)
    return port, api, page


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


def browser_loads(urls, loads):
    """Chromium through Playwright: load time of each url, interleaved."""
    script = os.path.join(HERE, "ack_stall_browser.mjs")
    out = subprocess.run(["node", script, str(loads), *urls], capture_output=True, text=True,
                         timeout=600, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"ack_stall.py: browser run failed:\n{out.stderr}")
    return json.loads(out.stdout)


def ms(x):
    return f"{x * 1000:.2f}" if x < 0.1 else f"{x * 1000:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", default=[], help="NAME=PATH of a wtproxy binary")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--servers", default="django,pyhttp,node,vite")
    ap.add_argument("--browser", action="store_true")
    ap.add_argument("--loads", type=int, default=9)
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    tmp = tempfile.mkdtemp(prefix="ack-stall-")
    procs = []
    rows = []
    try:
        www = make_tree(tmp)
        statics = [f"/static/s{i:02d}.css" for i in range(NFILES)]
        for server in a.servers.split(","):
            bport, api, page = start_server(server, tmp, www, procs)
            targets = [("direct", bport)] + [(n, start_proxy(p, bport, procs, tmp, n)) for n, p in bins]
            res = {t: {"json": [], "static": []} for t, _ in targets}
            for t, port in targets:  # warm-up: imports, pools, page caches
                get_all(port, [api] * 3 + statics)
            for r in range(a.rounds):
                for t, port in targets:
                    res[t]["json"].append(statistics.median(get_all(port, [api] * a.requests)))
                    res[t]["static"].append(sum(get_all(port, statics)))
                say(f"ack_stall.py: {server} round {r + 1}/{a.rounds}: " + ", ".join(
                    f"{t} {ms(res[t]['json'][-1])} ms/req, 30 files {ms(res[t]['static'][-1])} ms"
                    for t, _ in targets))
            row = {"server": server, "targets": {}}
            for t, _ in targets:
                row["targets"][t] = {k: statistics.median(v) for k, v in res[t].items()}
            if a.browser:
                urls = [f"http://127.0.0.1:{port}{page}" for _, port in targets]
                loads = browser_loads(urls, a.loads)
                for (t, _), v in zip(targets, loads):
                    row["targets"][t]["browser"] = statistics.median(v) / 1000
                    say(f"ack_stall.py: browser {t}: {v}")
            rows.append(row)
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
            procs.clear()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    report(rows, a)


def report(rows, a):
    names = list(rows[0]["targets"]) if rows else []
    print(f"{a.rounds} interleaved rounds, medians; json: {a.requests} keep-alive GETs on one "
          f"connection, median ms per request; static: {NFILES} CSS files over one keep-alive "
          "connection, total ms" + ("; browser: Chromium load of a page with the 30 files, median "
                                     f"of {a.loads} loads, ms" if a.browser else "") + "\n")
    kinds = ["json", "static"] + (["browser"] if a.browser else [])
    print("| server | measure | " + " | ".join(names) + " | " +
          " | ".join(f"{n}/direct" for n in names[1:]) + " |")
    print("|---" * (2 + 2 * len(names) - 1) + "|")
    for row in rows:
        for k in kinds:
            vals = [row["targets"][n].get(k) for n in names]
            if vals[0] is None:
                continue
            print(f"| {row['server']} | {k} | " + " | ".join(ms(v) for v in vals) + " | " +
                  " | ".join(f"{v / vals[0]:.2f}x" for v in vals[1:]) + " |")


if __name__ == "__main__":
    main()
