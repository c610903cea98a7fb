#!/usr/bin/env python3
"""gate_tree.py - the worktree and the static /__whoami of the gate benchmarks.

  gate_tree.py WORKTREE PY_FILES NM_FILES
      fill WORKTREE with a realistic tree: PY_FILES .py files spread over
      app folders (what the default include patterns fingerprint) and
      NM_FILES files under node_modules (what the default excludes prune),
      plus a few files no pattern selects.
  gate_tree.py --whoami WORKTREE PID FINGERPRINT_JSON
      print the /__whoami answer (whoami/PROTOCOL.md section 1) of a server
      with pid PID serving WORKTREE whose code has FINGERPRINT_JSON (the
      output of `wtproxy fingerprint --json WORKTREE`).

Used by relay.sh (GATE=1) and gate_latency.py.
"""
import datetime
import json
import os
import sys


def fill(root, py_files, nm_files):
    apps = max(1, py_files // 20)
    for i in range(py_files):
        d = os.path.join(root, "src", f"app{i % apps}", "views" if i % 2 else "models")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"mod{i}.py"), "w") as f:
            f.write(f'"""module {i}"""\n\n' + "".join(
                f"def f{j}(x):\n    return x * {j} + {i}\n\n" for j in range(30)))
    for i in range(nm_files):
        d = os.path.join(root, "node_modules", f"pkg{i // 50}", "lib")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.js"), "w") as f:
            f.write(f"module.exports = {i};\n" * 20)
    os.makedirs(os.path.join(root, "docs"), exist_ok=True)
    for name in ("README.md", "docs/notes.md", "package.json"):
        with open(os.path.join(root, name), "w") as f:
            f.write("not fingerprinted\n")


def started_at(pid):
    """RFC 3339 UTC start time of pid, from /proc (boot time + start ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[19])  # field 22, starttime; fields[0] is field 3
    with open("/proc/stat") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    t = btime + ticks / os.sysconf("SC_CLK_TCK")
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def whoami(root, pid, fp_json):
    return json.dumps({"wtproxy_whoami": 1, "checkout": os.path.realpath(root), "pid": int(pid),
                       "started_at": started_at(pid), "fingerprint": json.loads(fp_json)})


def main(argv):
    if len(argv) == 5 and argv[1] == "--whoami":
        print(whoami(argv[2], argv[3], argv[4]))
        return 0
    if len(argv) == 4:
        fill(argv[1], int(argv[2]), int(argv[3]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
