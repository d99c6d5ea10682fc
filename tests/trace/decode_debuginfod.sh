#!/usr/bin/env bash
# decode_debuginfod.sh FAULTLINE APP LIB: with neither --obj nor the files
# at the paths the dump names, `faultline decode` asks a real debuginfod
# (DEBUGINFOD_URLS) for the executables by build id, and the text is the
# app's own text dump.
set -u
FL=$1 APP=$2 LIB=$3
work=$(mktemp -d)
DPID=
cleanup() {
  [ -n "$DPID" ] && { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL [decode_debuginfod]: $*" >&2; [ -f "$work/debuginfod.log" ] && tail -5 "$work/debuginfod.log" >&2; exit 1; }
command -v debuginfod >/dev/null || fail "debuginfod is not installed (scripts/deps.sh)"
export FAULTLINE_SPOOL=$work/spool ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0

"$APP" "$work/ids" "$work/text" "$LIB" || fail "the app exited $?"
sed 's#^MODULE \([0-9]*\) \([0-9a-f-]*\) .*#MODULE \1 \2 /nonexistent#' "$work/ids" >"$work/ids.nopath"
mkdir -p "$work/exe"
cp "$APP" "$LIB" "$work/exe/"

for attempt in 1 2 3 4 5 6 7 8; do
  p=$((20000 + (RANDOM * 7 + attempt * 131) % 40000))
  ss -ltnH "sport = :$p" 2>/dev/null | grep -q . && continue
  debuginfod -v -p "$p" -d "$work/debuginfod.sqlite" -F "$work/exe" >"$work/debuginfod.log" 2>&1 &
  DPID=$!
  for _ in $(seq 1 150); do
    kill -0 "$DPID" 2>/dev/null || break
    if curl -sf "http://127.0.0.1:$p/metrics" >"$work/metrics" 2>/dev/null &&
       grep -Eq '^found_executable_total\{source="files"\} [2-9]' "$work/metrics" &&
       grep -Eq '^thread_work_pending\{role="scan"\} 0' "$work/metrics"; then
      PORT=$p
      break 2
    fi
    sleep 0.1
  done
  kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=
done
[ -n "${PORT:-}" ] || fail "debuginfod did not start and scan"

export DEBUGINFOD_URLS="http://127.0.0.1:$PORT" DEBUGINFOD_CACHE_PATH="$work/cache"
"$FL" decode "$work/ids.nopath" >"$work/out" 2>"$work/err" || fail "decode exited $?: $(cat "$work/err")"
cmp -s "$work/text" "$work/out" || { diff "$work/text" "$work/out" | head; fail "decode through debuginfod differs"; }
app_id=$(awk '$1 == "MODULE" && $2 == 0 {print $3}' "$work/ids")
grep -q "/buildid/$app_id/executable" "$work/debuginfod.log" || fail "debuginfod was not asked for $app_id"
echo "ok [decode_debuginfod]: decoded with the files debuginfod served"
