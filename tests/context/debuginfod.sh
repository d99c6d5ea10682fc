#!/usr/bin/env bash
# debuginfod.sh FAULTLINE CTX_APP CTX_LIB: `faultline decode CRASHLOG` with
# none of the program's files at hand -- the log's paths lead nowhere and
# no --obj is given -- asks a real debuginfod for the stripped program and
# library (executable) and their separate debug files (debuginfo, for the
# symbols), and decodes every thread's context into its stack.  Also: the
# stripped files alone cannot name static functions; given their debug
# files with --obj, they can.
set -u
FL=$1 APP=$2 LIB=$3
work=$(mktemp -d)
cleanup() {
    debuginfod_stop
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL [context_debuginfod]: $*" >&2; [ -f "$work/debuginfod.log" ] && tail -5 "$work/debuginfod.log" >&2; exit 1; }
. "$(dirname "$0")/../lib/debuginfod.sh"
names() { sed -n 's/^ *#[0-9]* \([^ ]*\) .*/\1/p' | sed 's/\..*//' | tr '\n' ' ' | sed 's/ $//'; }

# Stripped copies and their debug files, as a distribution ships them.
mkdir -p "$work/srv"
for f in "$APP" "$LIB"; do
    b=$(basename "$f")
    objcopy --only-keep-debug "$f" "$work/srv/$b.debug" || fail "objcopy $b"
    strip -o "$work/srv/$b" "$f" || fail "strip $b"
done
sapp=$work/srv/$(basename "$APP") slib=$work/srv/$(basename "$LIB")

export FAULTLINE_SPOOL=$work/spool
ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1:verify_asan_link_order=0 \
    "$APP" crash >"$work/crash.out" 2>&1
log=$(ls "$work"/spool/*.crashlog 2>/dev/null | head -1)
[ -n "$log" ] || fail "no crash log"
want=$(sed -n 's/^CRASH_EXPECT //p' "$work/crash.out")
ctx=$(sed -n 's/^CRASH_CONTEXT //p' "$log")

# The stripped files alone: no names for the static functions.
"$FL" decode --context "$ctx" --obj "$sapp" --obj "$slib" >"$work/o" 2>&1 &&
    fail "decoded with stripped files alone: $(cat "$work/o")"
# With their debug files given too.
got=$("$FL" decode --context "$ctx" --obj "$sapp" --obj "$slib" --obj "$sapp.debug" \
    --obj "$slib.debug" 2>&1 | names)
[ "$got" = "$want" ] || fail "stripped + debug files: '$got', expected '$want'"

# Through debuginfod: the log's paths lead nowhere.
sed 's#^OBJECT_PATH .*/\([^/]*\)$#OBJECT_PATH /nonexistent/\1#' "$log" >"$work/moved.crashlog"
grep -q '^OBJECT_PATH /nonexistent/' "$work/moved.crashlog" || fail "no OBJECT_PATH to move"
debuginfod_start "$work/srv" 2 2
export DEBUGINFOD_URLS="http://127.0.0.1:$DPORT" DEBUGINFOD_CACHE_PATH="$work/cache"
"$FL" decode "$work/moved.crashlog" >"$work/out" 2>"$work/err" || fail "decode exited $?: $(cat "$work/err")"
got=$(sed -n '/^crashed thread/,/^thread /p' "$work/out" | names)
[ "$got" = "$want" ] || fail "through debuginfod: '$got', expected '$want'; $(cat "$work/out")"
want_t=$(sed -n 's/^THREAD_EXPECT //p' "$work/crash.out")
got_t=$(sed -n '/^thread /,/^trace context/p' "$work/out" | names)
[ "$got_t" = "$want_t" ] || fail "parked thread through debuginfod: '$got_t', expected '$want_t'"
app_id=$(readelf -n "$APP" | awk '/Build ID/ {print $3}')
grep -q "/buildid/$app_id/executable" "$work/debuginfod.log" || fail "debuginfod was not asked for the program"
grep -q "/buildid/$app_id/debuginfo" "$work/debuginfod.log" || fail "debuginfod was not asked for its symbols"
echo "ok [context_debuginfod]: stripped files with their debug files, by --obj and through debuginfod"
