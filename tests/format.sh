#!/usr/bin/env bash
# tests/format.sh - every C file of ours is as clang-format (the repo's
# .clang-format) writes it: one style for every reader and every diff,
# kept by a tool, not by review. Prints TAP, one line per folder; a file
# out of format is named with the command that fixes it. Exits 77 (skip)
# without clang-format.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1
command -v clang-format >/dev/null || { echo "1..0 # SKIP clang-format is not installed"; exit 77; }

folders=(host whoami registry proxy cli tests/unit tests/bench tests/fuzz tests/integration/fixtures)
echo "1..${#folders[@]}"
failed=0
n=0
for d in "${folders[@]}"; do
  n=$((n + 1))
  bad=()
  while IFS= read -r f; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done < <(git ls-files -- "$d/*.c" "$d/*.h" 2>/dev/null || find "$d" -maxdepth 1 -name '*.[ch]')
  if [ ${#bad[@]} -eq 0 ]; then
    echo "ok $n - $d is in format"
  else
    failed=1
    echo "not ok $n - $d: ${bad[*]} not in format; fix: clang-format -i ${bad[*]}"
  fi
done
exit $failed
