#!/usr/bin/env bash
# bench/context/run.sh BUILD_DIR - a log point's calling context:
# faultline_context() in an -finstrument-functions build against glibc
# backtrace() in a plain one, both against a plain build that logs no
# context, side by side; then `faultline decode --context` of one value;
# then, when valgrind is installed, callgrind's instructions per call of
# each variant (counts, not times: the same on a busy machine); then, with
# libc6-dbg installed, real.sh: decode against a real program's samples.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin=$build/bench/context/ctxbench
fl=$build/src/cli/faultline
[ -x "$bin" ] || cmake --build "$build" --target ctxbench >/dev/null
[ -x "$fl" ] || cmake --build "$build" --target faultline >/dev/null
"$bin" "${TREES:-4000}" "${ROUNDS:-7}" "$fl"
if command -v valgrind >/dev/null; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  line="  instructions per call (callgrind):"
  for v in plain hooks ctx bt; do
    trees=16; [ $v = bt ] && trees=2 # backtrace(): some 36,000 instructions a log point
    calls=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg.$v" --toggle-collect="walk_$v" \
      "$bin" --calls $v $trees 2>/dev/null) || continue
    ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out/cg.$v" | head -1)
    [ -n "$ir" ] && line+=$(awk -v v=$v -v ir="$ir" -v c="$calls" 'BEGIN { printf " %s %.1f", v, ir / c }')
  done
  echo "$line"
fi
# Then decode against a real program (real.sh), when libc6-dbg's debug
# file, the program's input, is installed.
id=$(readelf -n /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null | awk '/Build ID/ {print $3}')
if [ -n "$id" ] && [ -f "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ]; then
  bash "$(dirname "$0")/real.sh" "$build"
else
  echo "context/real: skipped: no debug file for libc.so.6 (apt-get install libc6-dbg)"
fi
