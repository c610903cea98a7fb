#!/usr/bin/env python3
"""scripts/build_id.py SOURCE_ROOT VERSION - which build this is, for
`wtproxy --version`, the daemon's ping and dashboard and MCP: VERSION, then
the git commit of SOURCE_ROOT ("0.1.0+2dde6eb1c0de"), then ".dirty." and a
hash of the uncommitted changes when tracked files differ from it, so that
two builds of different sources never say the same. meson's vcs_tag runs it
at every build (host/meson.build) and keeps its fallback,
the plain VERSION, when it fails: a tarball or a Debian package build has no
.git of its own, and a git repository around SOURCE_ROOT (a tarball unpacked
in a home folder under git) is not this source's, so it is never asked."""
import hashlib
import os
import subprocess
import sys


def git(root, *args):
    return subprocess.run(['git', '-C', root, *args], check=True, capture_output=True).stdout


def main():
    root, version = sys.argv[1], sys.argv[2]
    if not os.path.exists(os.path.join(root, '.git')):
        sys.exit(f'{root} is no git checkout: the build is {version}')
    build = f'{version}+{git(root, "rev-parse", "--short=12", "HEAD").decode().strip()}'
    changes = git(root, 'diff', '--binary', 'HEAD')
    if changes:
        build += '.dirty.' + hashlib.sha256(changes).hexdigest()[:6]
    print(build)


if __name__ == '__main__':
    main()
