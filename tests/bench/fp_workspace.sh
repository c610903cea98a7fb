#!/usr/bin/env bash
# fp_workspace.sh - what the Node middleware's fingerprint costs a server
# in a workspace member of a monorepo, at the middleware's start, before
# (OLD: the whole checkout) and after (NEW: its member, the members it
# depends on and the top's files) the scoping of whoami/node/workspace.mjs.
#
#   tests/bench/fp_workspace.sh [ROUNDS] [OLD_COMMIT]
#
# Builds, in a temp folder, an npm-workspaces monorepo: apps/api (depends
# on packages/utils), apps/web (200 files), packages/utils, and vendor/ of
# 30,000 small .js files. For OLD_COMMIT's whoami/node (default 898ed31,
# the last without the scoping) and this checkout's, ROUNDS rounds
# (default 7), interleaved (their order reversed every other round): a
# `node` that imports index.mjs and calls whoamiAnswer() from apps/api, as
# the API's `app.use(whoami())` does at its start. Prints each one's files
# fingerprinted and the median and range of the whole process's wall ms
# (node's own start, about 40 ms, included in both).
set -euo pipefail
rounds=${1:-7}
old=${2:-898ed31}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old" "$tmp/new"
git -C "$here" archive "$old" whoami/node | tar -x -C "$tmp/old"
cp -r "$here/whoami" "$tmp/new/"
mono=$tmp/mono
mkdir -p "$mono/apps/api" "$mono/apps/web" "$mono/packages/utils"
git -C "$mono" init -q
echo '{"name":"mono","private":true,"workspaces":["apps/*","packages/*"]}' > "$mono/package.json"
echo '{"name":"@m/api","dependencies":{"@m/utils":"*"}}' > "$mono/apps/api/package.json"
echo 'export const api = 1;' > "$mono/apps/api/server.js"
echo '{"name":"@m/web"}' > "$mono/apps/web/package.json"
echo '{"name":"@m/utils"}' > "$mono/packages/utils/package.json"
echo 'export const u = 1;' > "$mono/packages/utils/index.js"
for i in $(seq 1 200); do echo "export const w = $i;" > "$mono/apps/web/m$i.js"; done
for i in $(seq 1 300); do
  mkdir -p "$mono/vendor/d$i"
  for j in $(seq 1 100); do echo "export const x = $j;" > "$mono/vendor/d$i/f$j.js"; done
done

# One start of the middleware from apps/api: "files ms".
start() {
  local s e files
  s=$(date +%s%N)
  files=$(cd "$mono/apps/api" && node -e "import('$tmp/$1/whoami/node/index.mjs').then((m) => console.log(m.whoamiAnswer().answer.fingerprint.files))")
  e=$(date +%s%N)
  echo "$files $(((e - s) / 1000000))"
}

declare -A ms files
for r in $(seq 1 "$rounds"); do
  order="old new"; [ $((r % 2)) -eq 0 ] && order="new old"
  for v in $order; do
    read -r f m < <(start "$v")
    files[$v]=$f; ms[$v]="${ms[$v]:-} $m"
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)] " (" a[1] "-" a[NR] ")"}'; }
echo "rounds: $rounds, interleaved; node $(node --version)"
for v in old new; do
  echo "$v ($([ $v = old ] && echo "$old" || echo this checkout)): ${files[$v]} files, $(echo "${ms[$v]}" | median) ms"
done
