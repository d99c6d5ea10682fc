#!/usr/bin/env bash
# decode_debuginfod.sh FAULTLINE APP LIB: with neither --obj nor the files
# at the paths the dump names, `faultline decode` asks a real debuginfod
# (DEBUGINFOD_URLS) for the executables by build id, and the text is the
# app's own text dump.
set -u
FL=$1 APP=$2 LIB=$3
work=$(mktemp -d)
cleanup() {
  debuginfod_stop
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL [decode_debuginfod]: $*" >&2; [ -f "$work/debuginfod.log" ] && tail -5 "$work/debuginfod.log" >&2; exit 1; }
. "$(dirname "$0")/../lib/debuginfod.sh"
export FAULTLINE_SPOOL=$work/spool ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0

"$APP" "$work/ids" "$work/text" "$LIB" || fail "the app exited $?"
sed 's#^MODULE \([0-9]*\) \([0-9a-f-]*\) .*#MODULE \1 \2 /nonexistent#' "$work/ids" >"$work/ids.nopath"
mkdir -p "$work/exe"
cp "$APP" "$LIB" "$work/exe/"

debuginfod_start "$work/exe" 2 0

export DEBUGINFOD_URLS="http://127.0.0.1:$DPORT" DEBUGINFOD_CACHE_PATH="$work/cache"
"$FL" decode "$work/ids.nopath" >"$work/out" 2>"$work/err" || fail "decode exited $?: $(cat "$work/err")"
cmp -s "$work/text" "$work/out" || { diff "$work/text" "$work/out" | head; fail "decode through debuginfod differs"; }
app_id=$(awk '$1 == "MODULE" && $2 == 0 {print $3}' "$work/ids")
grep -q "/buildid/$app_id/executable" "$work/debuginfod.log" || fail "debuginfod was not asked for $app_id"
echo "ok [decode_debuginfod]: decoded with the files debuginfod served"
