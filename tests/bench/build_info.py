#!/usr/bin/env python3
"""build_info.py - which build a wtproxy binary is, in one line, so that a
benchmark's figures always say what they measured.

Usage: tests/bench/build_info.py WTPROXY_BIN

A binary inside a meson build directory (build/proxy/wtproxy): the build
directory, its buildtype, optimization, debug, b_ndebug, b_lto and
b_sanitize (meson-info/intro-buildoptions.json), and the compiler with the
flags that shape the code, taken from the real command that compiled a
proxy/ source (compile_commands.json). Any other binary (an installed one):
the compiler and flags it records in its debug info (DW_AT_producer), when
it has any. Python 3 standard library only.
"""
import json
import os
import shlex
import subprocess
import sys

OPTIONS = ("buildtype", "optimization", "debug", "b_ndebug", "b_lto", "b_sanitize")


def meson_dir(binary):
    """The meson build directory holding binary, or None."""
    d = os.path.dirname(os.path.realpath(binary))
    while d != "/":
        if os.path.isfile(os.path.join(d, "meson-info", "intro-buildoptions.json")):
            return d
        d = os.path.dirname(d)
    return None


def code_flags(argv):
    """The flags of a compile command that change the code: -O, -g, -f, -m,
    -std, NDEBUG and _FORTIFY_SOURCE (not include paths or outputs)."""
    keep = ("-O", "-g", "-f", "-m", "-std", "-DNDEBUG", "-D_FORTIFY_SOURCE", "-U_FORTIFY_SOURCE")
    return [a for a in argv[1:] if a.startswith(keep) and not a.startswith(("-fdiagnostics",))]


def compiler_version(cc):
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return cc
    return out.splitlines()[0] if out else cc


def from_meson(bdir):
    opts = {o["name"]: o["value"] for o in
            json.load(open(os.path.join(bdir, "meson-info", "intro-buildoptions.json")))}
    parts = [f"{k}={str(opts.get(k, '?')).lower()}" for k in OPTIONS]
    line = f"meson build {bdir}: " + ", ".join(parts)
    try:
        cmds = json.load(open(os.path.join(bdir, "compile_commands.json")))
    except OSError:
        return line + "; no compile_commands.json"
    proxy = [c for c in cmds if "/proxy/" in "/" + c["file"] and c["file"].endswith(".c")]
    if not proxy:
        return line
    argv = shlex.split(proxy[0]["command"])
    return line + f"; {compiler_version(argv[0])}: {' '.join(code_flags(argv))}"


def from_dwarf(binary):
    try:
        out = subprocess.run(["readelf", "--debug-dump=info", "--dwarf-depth=1", binary],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if "DW_AT_producer" in line:
            return f"not a meson build directory; compiled by: {line.split(':', 1)[-1].strip()}"
    return "not a meson build directory, and no debug info: build options unknown"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: build_info.py WTPROXY_BIN")
    bdir = meson_dir(sys.argv[1])
    print(from_meson(bdir) if bdir else from_dwarf(sys.argv[1]))


if __name__ == "__main__":
    main()
