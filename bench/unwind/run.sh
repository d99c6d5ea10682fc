#!/usr/bin/env bash
# bench/unwind/run.sh BUILD_DIR - median cost of one unwind of a 10-deep
# stack: fl_unwind (crash path) vs glibc backtrace() in the same run, and,
# when valgrind is installed, callgrind's instruction count per fl_unwind.
set -euo pipefail
build=${1:-build}
bin="$build/bench/unwind/bench_unwind"
[ -x "$bin" ] || { echo "unwind: $bin not built" >&2; exit 1; }
"$bin" 300
if command -v valgrind >/dev/null; then
  out=$(mktemp -d)
  valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect=fl_unwind \
    "$bin" --callgrind 1000 >/dev/null 2>&1 || true
  ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out/cg" 2>/dev/null | head -1)
  if [ -n "$ir" ] && [ "$ir" -gt 0 ]; then
    printf '%-30s %s instructions per unwind (callgrind, 1000 unwinds)\n' "fl_unwind" "$((ir / 1000))"
  fi
  rm -rf "$out"
fi
