#!/usr/bin/env bash
# libsize.sh LIB MAX: the text of LIB, stripped, is at most MAX bytes.
set -euo pipefail
lib=$1 max=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cp "$lib" "$tmp"
strip --strip-all "$tmp"
text=$(size "$tmp" | awk 'NR == 2 {print $1}')
[ -n "$text" ] || { echo "FAIL: no size for $lib"; exit 1; }
if [ "$text" -gt "$max" ]; then
  echo "FAIL: $(basename "$lib") has $text bytes of text, budget $max"
  exit 1
fi
echo "ok: $(basename "$lib") text $text bytes (budget $max)"
