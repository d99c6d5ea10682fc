#!/usr/bin/env bash
# Runs every bench/<area>/run.sh with the build directory as argument.
set -uo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rc=0
for s in "$here"/*/run.sh; do
  [ -f "$s" ] || continue
  echo "=== $(basename "$(dirname "$s")")"
  bash "$s" "$build" || rc=1
done
exit $rc
