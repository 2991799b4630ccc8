#!/bin/sh
# Fails when libepprof's folders include each other in a cycle
# (docs/ARCHITECTURE.md: data flows one way). Prints the folder graph, and
# tsort's report of the loop when there is one.
set -eu
src=${1:?usage: folder_cycles.sh SRC_DIR}
edges=$(for dir in "$src"/*/; do
  from=$(basename "$dir")
  for to in $(grep -rhoE '#include "[a-z_]+/' "$dir" | sed -E 's/#include "([a-z_]+)\//\1/' | sort -u); do
    if [ "$to" != "$from" ] && [ -d "$src/$to" ]; then echo "$from $to"; fi
  done
done)
echo "$edges"
if ! printf '%s\n' "$edges" | tsort >/dev/null; then
  echo "folder_cycles: the folders of $src include each other in a cycle (tsort names it above)" >&2
  exit 1
fi
echo "folder_cycles: no cycles"
