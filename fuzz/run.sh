#!/usr/bin/env bash
# make fuzz: run every libFuzzer binary in the fuzz build for N seconds on
# a copy of its seed corpus, with its dictionary fuzz/<area>/<target>.dict
# when it has one.
set -euo pipefail
build=$1; secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
rc=0
for bin in $(find "$build/fuzz" -maxdepth 2 -type f -executable -name 'fuzz_*'); do
  name=$(basename "$bin")
  seeds="$here/corpus/${name#fuzz_}"
  work=$(mktemp -d); [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  dict=$(find "$here" -name "$name.dict" | head -n 1)
  echo "=== $name for ${secs}s"
  "$bin" -max_total_time="$secs" -max_len=262144 ${dict:+-dict="$dict"} "$work" 2>&1 | tail -n 3 || rc=1
  rm -rf "$work"
done
exit $rc
