#!/usr/bin/env bash
# tests/layers.sh - the layers of ARCHITECTURE.md, checked: a file may
# include the headers of its own folder and of the folders below it, never
# one above. Prints TAP, one line per folder; exits 1 on any violation,
# naming the file, the header and the rule it breaks.
#
#   host/      facts about this machine        may include: host
#   whoami/    the /__whoami contract and gate may include: host whoami
#   registry/  registrations, stores, control  may include: host registry
#   proxy/     the daemon and its relay        may include: host whoami registry proxy
#   cli/       the command table               may include: anything
#
# host/ also stays free of libevent: it is used from worker threads and
# from the command line, where there is no loop.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1

declare -A allowed=(
  [host]="host"
  [whoami]="host whoami"
  [registry]="host registry"
  [proxy]="host whoami registry proxy"
  [cli]="host whoami registry proxy cli"
)
folders=(host whoami registry proxy cli)

# The folder that owns header h: the one layer folder holding a file of
# that name (build outputs: dash_page.h is generated into proxy/,
# topics_text.h into cli/, wtp_install_paths.h into whoami/,
# wtp_build_id.h into host/).
owner_of() {
  local h=$1 f
  for f in "${folders[@]}"; do
    [ -f "$f/$h" ] && { echo "$f"; return; }
  done
  case $h in dash_page.h) echo proxy ;; topics_text.h) echo cli ;; wtp_install_paths.h) echo whoami ;;
    wtp_build_id.h) echo host ;; *) echo "?" ;; esac
}

n=0 bad=0
for folder in "${folders[@]}"; do
  [ -d "$folder" ] || continue
  n=$((n + 1))
  problems=()
  while IFS=: read -r file _ line; do
    h=$(sed -n 's/^#include "\([^"]*\)".*/\1/p' <<<"$line")
    [ -n "$h" ] || continue
    owner=$(owner_of "$(basename "$h")")
    case " ${allowed[$folder]} " in
      *" $owner "*) ;;
      *) problems+=("$file includes $h (of $owner/): $folder/ may include only ${allowed[$folder]}") ;;
    esac
  done < <(grep -n '^#include "' "$folder"/*.c "$folder"/*.h 2>/dev/null)
  if [ "$folder" = host ]; then
    while IFS= read -r hit; do
      problems+=("$hit: host/ uses no event loop")
    done < <(grep -ln '^#include <event2/' host/*.c host/*.h 2>/dev/null)
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    echo "ok $n - $folder/ includes only ${allowed[$folder]}"
  else
    bad=1
    echo "not ok $n - $folder/ includes a layer above it"
    printf '#   %s\n' "${problems[@]}"
  fi
done
echo "1..$n"
exit $bad
