#!/usr/bin/env bash
# tests/versions.sh ROOT VERSION WTPROXY - the version has one source, the
# project's in meson.build (meson passes it as VERSION, and compiles it
# into the binary); every other place that states it must say the same:
# the npm package, the Python package, the Debian package, `wtproxy
# --version` (its version, before the "+" and the commit of its build).
# Prints TAP, one line per place; exits 1 on a difference,
# naming the file to edit.
set -uo pipefail
root=$1 version=$2 bin=$3
py=/usr/bin/python3
[ -x "$py" ] || py=python3

n=0 bad=0
check() { # check NAME FIX FOUND
  n=$((n + 1))
  if [ "$3" = "$version" ]; then
    echo "ok $n - $1 says $version"
  else
    bad=1
    echo "not ok $n - $1 says \"$3\", meson.build says $version: $2"
  fi
}

check "the npm package" "edit whoami/node/package.json to say $version" \
  "$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
    "$root/whoami/node/package.json" 2>&1)"
check "the Python package" "edit whoami/python/pyproject.toml to say $version" \
  "$("$py" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
    "$root/whoami/python/pyproject.toml" 2>&1)"
# The newest entry's version, less a Debian revision (none while the
# package is native).
check "the Debian package" "add a debian/changelog entry for $version (dch -v $version)" \
  "$(sed -n '1s/^wtproxy (\([^)-]*\)\(-[^)]*\)\{0,1\}).*/\1/p' "$root/debian/changelog")"
check "wtproxy --version" "rebuild it (meson compile)" "$("$bin" --version 2>&1 | sed -n 's/^wtproxy \([^+]*\).*/\1/p')"
echo "1..$n"
exit $bad
