# Sourced by the svc_*.sh tests.  Gives a scratch directory (removed on
# exit), a way to crash svc_crash and find its log, and fail().
set -u
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
WORK=$(mktemp -d "${TMPDIR:-/tmp}/symsvc.XXXXXX")
SVC_CLEANUP=()
cleanup() {
    for c in "${SVC_CLEANUP[@]}"; do eval "$c"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The environment of the crashing program: under ASan the faults must
# reach Faultline (ASan would catch them first).  svc_tool keeps the
# default ASan options, leak checking included.
CRASH_ENV=()
if [ "${FAULTLINE_SANITIZE:-OFF}" = ON ]; then
    CRASH_ENV=("ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1"
               "UBSAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0")
fi

# crash MODE [PROGRAM]: runs svc_crash (or PROGRAM) MODE with a fresh
# spool; sets LOG to its log.
crash() {
    local prog="${2:-$SVC_CRASH}"
    local spool
    spool=$(mktemp -d "$WORK/spool-$1.XXXXXX")
    { (ulimit -c 0; exec env "${CRASH_ENV[@]}" FAULTLINE_SPOOL="$spool" "$prog" "$1"); } 2>/dev/null \
        && fail "$prog $1 did not crash"
    LOG=$(ls "$spool"/*.crashlog 2>/dev/null | head -1)
    [ -n "$LOG" ] || fail "$prog $1 left no crash log in $spool"
}

# names FILE: the function names of svc_tool's F lines, one per line,
# without compiler suffixes (.constprop.0, .part.1).
names() { awk '/^F /{print $7}' "$1" | sed -E 's/\..*$//'; }
