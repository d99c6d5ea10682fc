#!/bin/bash
# A crash inside a stripped shared library whose debug file only a real
# debuginfod has: fl_symlocate asks it (DEBUGINFOD_URLS), the frames get
# their static functions and source lines, and debuginfod's own log shows
# the /buildid/<id>/debuginfo request.  Also: a build id debuginfod does
# not have is asked for once, not once per lookup (the miss cache).
. "$(dirname "$0")/svc_common.sh"
command -v debuginfod >/dev/null || fail "debuginfod is not installed (scripts/deps.sh)"
command -v curl >/dev/null || fail "curl is not installed"
[ -f "$SVC_SOLIB_DEBUG_DIR/svc_solib.debug" ] || fail "no $SVC_SOLIB_DEBUG_DIR/svc_solib.debug"

crash solib
ID=$(awk '/^OBJECT libsvc_solib\.so\//{f=1; next} f && /^OBJECT_BUILD_ID /{print $2; exit} /^OBJECT /{f=0}' "$LOG")
[ -n "$ID" ] || fail "the log has no build id for libsvc_solib.so"
echo "libsvc_solib.so build id: $ID"

# Without debuginfod the stripped library cannot be explained: only its
# exported function is named, from its .dynsym, without a source line;
# the static functions it calls stay module+offset.
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache0" frames "$LOG" > "$WORK/plain.txt" || fail "svc_tool (no debuginfod)"
cat "$WORK/plain.txt"
if grep -Eq '^F [0-9]+ .* (solib_faulting_store|solib_recurse)' "$WORK/plain.txt"; then
    fail "the stripped library's static functions were named without debuginfod (is it really stripped?)"
fi
grep -Eq '^F [0-9]+ 0x[0-9a-f]+ libsvc_solib\.so object object svc_solib_entry( |$)' "$WORK/plain.txt" \
    || fail "the exported svc_solib_entry was not named from the library's .dynsym"
grep -Eq '^F [0-9]+ .* svc_solib_entry [^ ]*svc_solib\.c' "$WORK/plain.txt" \
    && fail "svc_solib_entry has a source line without the debug file"

# What debuginfod serves: the .debug file (from the build) and a copy of
# the stripped library as its executable.
mkdir -p "$WORK/exe"
cp "$SVC_SOLIB" "$WORK/exe/"

# start_debuginfod NAME DIR...: a debuginfod on a free port serving the
# debug files and executables under DIR...; sets PORT, log $WORK/NAME.log.
start_debuginfod() {
    local name=$1 p i attempt pid
    shift
    PORT=
    for attempt in 1 2 3 4 5 6 7 8; do
        p=$((20000 + (RANDOM * 7 + attempt * 131) % 40000))
        ss -ltnH "sport = :$p" 2>/dev/null | grep -q . && continue
        # No upstream: a debuginfod given DEBUGINFOD_URLS asks those servers too.
        env -u DEBUGINFOD_URLS debuginfod -v -p "$p" -d "$WORK/$name.sqlite" -F "$@" > "$WORK/$name.log" 2>&1 &
        pid=$!
        SVC_CLEANUP+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null")
        for i in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            if curl -sf "http://127.0.0.1:$p/metrics" > "$WORK/metrics" 2>/dev/null &&
               grep -Eq '^found_executable_total\{source="files"\} [1-9]' "$WORK/metrics" &&
               grep -Eq '^thread_work_pending\{role="scan"\} 0' "$WORK/metrics"; then
                PORT=$p
                echo "debuginfod $name on 127.0.0.1:$PORT (pid $pid) has scanned $*"
                return 0
            fi
            sleep 0.1
        done
        kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    done
    cat "$WORK/$name.log"
    fail "debuginfod $name did not start and scan"
}

start_debuginfod debuginfod "$SVC_SOLIB_DEBUG_DIR" "$WORK/exe"
curl -sf "http://127.0.0.1:$PORT/metrics" | grep -Eq '^found_debuginfo_total\{source="files"\} [1-9]' \
    || fail "debuginfod did not find the debug file in $SVC_SOLIB_DEBUG_DIR"

export DEBUGINFOD_URLS="http://127.0.0.1:$PORT" DEBUGINFOD_CACHE_PATH="$WORK/debuginfod-cache"
"$SVC_TOOL" --cache "$WORK/cache" frames "$LOG" > "$WORK/frames.txt" || fail "svc_tool frames"
cat "$WORK/frames.txt"
grep -Eq '^F 0 0x[0-9a-f]+ libsvc_solib\.so system debuginfod solib_faulting_store [^ ]*svc_solib\.c:[1-9]' "$WORK/frames.txt" \
    || fail "frame 0 is not solib_faulting_store from the debuginfod tier"
[ "$(grep -Ec '^F [0-9]+ .* libsvc_solib\.so system debuginfod solib_recurse [^ ]*svc_solib\.c:[1-9]' "$WORK/frames.txt")" -ge 2 ] \
    || fail "the solib_recurse frames are missing"
grep -Eq '^F [0-9]+ .* svc_solib_entry [^ ]*svc_solib\.c:[1-9]' "$WORK/frames.txt" || fail "svc_solib_entry is missing"
grep -Eq '^F [0-9]+ .* main [^ ]*svc_crash\.c:[1-9]' "$WORK/frames.txt" || fail "main is missing"

# debuginfod's log shows the request.
for i in $(seq 1 50); do
    grep -q "/buildid/$ID/debuginfo" "$WORK/debuginfod.log" && break
    sleep 0.1
done
grep "/buildid/$ID/debuginfo" "$WORK/debuginfod.log" || fail "debuginfod's log does not show /buildid/$ID/debuginfo"

# The server-side unwind on a machine where the library is not at its
# OBJECT_PATH: the loadable file (for .eh_frame) comes from debuginfod's
# /buildid/<id>/executable.
sed -E 's#^OBJECT_PATH .*/libsvc_solib\.so$#OBJECT_PATH /nonexistent/libsvc_solib.so#' "$LOG" > "$WORK/moved.crashlog"
grep -q '^OBJECT_PATH /nonexistent/libsvc_solib.so$' "$WORK/moved.crashlog" || fail "could not rewrite OBJECT_PATH"
"$SVC_TOOL" --cache "$WORK/cache" --stack server frames "$WORK/moved.crashlog" > "$WORK/moved.txt" || fail "svc_tool --stack server"
cat "$WORK/moved.txt"
[ "$(grep -Ec '^F [0-9]+ .* libsvc_solib\.so system debuginfod solib_recurse ' "$WORK/moved.txt")" -ge 4 ] \
    || fail "the server-side unwind did not walk the library's frames"
grep -Eq '^F [0-9]+ .* main [^ ]*svc_crash\.c:[1-9]' "$WORK/moved.txt" || fail "the server-side unwind did not reach main"
for i in $(seq 1 50); do
    grep -q "/buildid/$ID/executable" "$WORK/debuginfod.log" && break
    sleep 0.1
done
grep "/buildid/$ID/executable" "$WORK/debuginfod.log" || fail "debuginfod's log does not show /buildid/$ID/executable"

# A missing build id: one request for its debug file and one for its
# executable (the exports) for three lookups.
MISSING=0123456789abcdef0123456789abcdef01234567
"$SVC_TOOL" --debug-root "$WORK/none" locate "$MISSING" "$MISSING" "$MISSING" > "$WORK/locate.txt" || fail "svc_tool locate"
cat "$WORK/locate.txt"
grep -q "^miss $MISSING" "$WORK/locate.txt" || fail "the missing build id was found?"
grep -Eq '^stats lookups=3 debuginfod_queries=2 debuginfod_misses=2 miss_cache_hits=4$' "$WORK/locate.txt" \
    || fail "the miss cache did not avoid the repeated queries"
sleep 0.5
for kind in debuginfo executable; do
    n=$(grep -c "/buildid/$MISSING/$kind" "$WORK/debuginfod.log")
    [ "$n" = 1 ] || fail "debuginfod saw $n $kind requests for the missing build id (want 1)"
done
# A debuginfod with only the stripped library, on a machine without it:
# the executable's exports name the exported function (system tier).
start_debuginfod exeonly "$WORK/exe"
DEBUGINFOD_URLS="http://127.0.0.1:$PORT" DEBUGINFOD_CACHE_PATH="$WORK/exeonly-cache" \
    "$SVC_TOOL" --cache "$WORK/cache-exe" frames "$WORK/moved.crashlog" > "$WORK/exeonly.txt" \
    || fail "svc_tool frames (executable-only debuginfod)"
cat "$WORK/exeonly.txt"
grep -Eq '^F [0-9]+ 0x[0-9a-f]+ libsvc_solib\.so system debuginfod svc_solib_entry( |$)' "$WORK/exeonly.txt" \
    || fail "the exported function was not named from debuginfod's executable"
grep -Eq '^F [0-9]+ .* (solib_faulting_store|solib_recurse)' "$WORK/exeonly.txt" \
    && fail "static functions named without a debug file"
for i in $(seq 1 50); do
    grep -q "/buildid/$ID/executable" "$WORK/exeonly.log" && break
    sleep 0.1
done
grep -q "/buildid/$ID/executable" "$WORK/exeonly.log" || fail "no /buildid/$ID/executable request"
echo "PASS"
