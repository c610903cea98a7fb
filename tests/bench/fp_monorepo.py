#!/usr/bin/env python3
"""fp_monorepo.py - what a fingerprint of one app in a big monorepo costs.

  fp_monorepo.py [--rounds N] BIN...

Builds, in a temp folder, the tree of a user's npm-workspaces monorepo:
vendor/ of 30,000 small .js/.json files (1,000 packages of 3 folders),
node_modules/ of 33,000 (pruned by the default excludes), apps/web with 4
files and apps/api with 4. Then, for each wtproxy binary BIN (say main's
build and a branch's):

- `BIN fingerprint TREE --json --include 'apps/web/**'`: N rounds, the
  binaries interleaved (their order reversed every other round), median
  and range of wall and CPU ms;
- the inotify watches a `BIN serve` holds for a server of TREE whose
  /__whoami fingerprints `apps/web/**` (the Python middleware of this
  checkout), after one request through it: counted in /proc/PID/fdinfo.

Each daemon gets its own XDG_RUNTIME_DIR, HOME and state file, and is
stopped by its pid with its `wtproxy run`.
"""
import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHONPATH = os.path.join(HERE, "..", "..", "whoami", "python")
INCLUDE = "apps/web/**"
APP = f"""
import sys
from wsgiref.simple_server import make_server, WSGIRequestHandler
from wtproxy_whoami.wsgi import WhoamiWSGIMiddleware

class Quiet(WSGIRequestHandler):
    def log_message(self, *a):
        pass

def app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'web\\n']

make_server('127.0.0.1', int(sys.argv[1]), WhoamiWSGIMiddleware(app, include=[{INCLUDE!r}]),
            handler_class=Quiet).serve_forever()
"""


def write(root, rel, text="x\n"):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def fill(root):
    for top, packages in (("vendor", 1000), ("node_modules", 1100)):
        for i in range(packages):
            for sub in ("", "lib/", "dist/"):
                for j in range(10):
                    ext = "json" if j == 0 else "js"
                    write(root, f"{top}/pkg{i}/{sub}f{j}.{ext}", f"module.exports = {i * 31 + j};\n")
    for rel in ("index.html", "vite.config.js", "src/main.js", "src/App.js"):
        write(root, f"apps/web/{rel}")
    for rel in ("server.js", "routes/a.js", "routes/b.js", "package.json"):
        write(root, f"apps/api/{rel}")
    write(root, "package.json", '{"workspaces": ["apps/*"]}\n')
    subprocess.run(["git", "init", "-q", root], check=True)


def timed(argv):
    """(wall ms, CPU ms) of one run of argv."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = (time.perf_counter() - t0) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3
    return wall, cpu


def bench_cli(bins, root, rounds):
    got = {b: ([], []) for b in bins}
    for r in range(rounds):
        for b in bins if r % 2 == 0 else bins[::-1]:
            wall, cpu = timed([b, "fingerprint", root, "--json", "--include", INCLUDE])
            got[b][0].append(wall)
            got[b][1].append(cpu)
    for b, (wall, cpu) in got.items():
        print(f"{b}: fingerprint wall median {statistics.median(wall):.1f} ms "
              f"({min(wall):.1f}-{max(wall):.1f}), CPU median {statistics.median(cpu):.1f} ms")


def inotify_watches(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                n += sum(line.startswith("inotify wd:") for line in f)
        except OSError:
            pass
    return n


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_200(url, root, seconds=20):
    """Whether url answered 200 to a curl run in root (the daemon routes a
    caller by its worktree: this script's is another)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
                             cwd=root, capture_output=True, text=True).stdout
        if got == "200":
            return True
        time.sleep(0.3)
    return False


def count_daemon_watches(b, root, app):
    tmp = tempfile.mkdtemp(prefix="fp-monorepo-d.")
    env = dict(os.environ, XDG_RUNTIME_DIR=f"{tmp}/run", HOME=f"{tmp}/home", PYTHONPATH=PYTHONPATH)
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    os.makedirs(env["HOME"])
    port = free_port()
    log = open(f"{tmp}/log", "w")
    serve = subprocess.Popen([b, "serve", "--listen", f"127.0.0.1:{port}", "--state",
                              f"{tmp}/state.json"], env=env, stdout=log, stderr=log)
    run = None
    try:
        time.sleep(1)
        run = subprocess.Popen([b, "run", "--front", str(port), "--", sys.executable, app,
                                "{port}"], cwd=root, env=env, stdout=log, stderr=log)
        ok = wait_200(f"http://127.0.0.1:{port}/", root)
        print(f"{b}: the daemon holds {inotify_watches(serve.pid)} inotify watches"
              f"{'' if ok else ' (no 200 through the proxy: see the log)'}")
    finally:
        for p in (run, serve):
            if p:
                p.terminate()
                p.wait(10)
        log.close()
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("bins", nargs="+")
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="fp-monorepo.")
    try:
        root = os.path.join(base, "mono")
        fill(root)
        app = os.path.join(base, "app.py")
        with open(app, "w") as f:
            f.write(APP)
        bench_cli(a.bins, root, a.rounds)
        for b in a.bins:
            count_daemon_watches(b, root, app)
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
