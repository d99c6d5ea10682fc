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

# Without debuginfod the stripped library cannot be explained.
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache0" frames "$LOG" > "$WORK/plain.txt" || fail "svc_tool (no debuginfod)"
if grep -Eq '^F 0 .* solib_faulting_store [^ ]*svc_solib\.c' "$WORK/plain.txt"; then
    fail "the stripped library was symbolicated without debuginfod (is it really stripped?)"
fi

# What debuginfod serves: the .debug file (from the build) and a copy of
# the stripped library as its executable.
mkdir -p "$WORK/exe"
cp "$SVC_SOLIB" "$WORK/exe/"

# Start debuginfod on a free port.
PORT=
for attempt in 1 2 3 4 5 6 7 8; do
    p=$((20000 + (RANDOM * 7 + attempt * 131) % 40000))
    ss -ltnH "sport = :$p" 2>/dev/null | grep -q . && continue
    debuginfod -v -p "$p" -d "$WORK/debuginfod.sqlite" -F "$SVC_SOLIB_DEBUG_DIR" "$WORK/exe" > "$WORK/debuginfod.log" 2>&1 &
    DPID=$!
    SVC_CLEANUP+=("kill $DPID 2>/dev/null; wait $DPID 2>/dev/null")
    for i in $(seq 1 100); do
        kill -0 "$DPID" 2>/dev/null || break
        if curl -sf "http://127.0.0.1:$p/metrics" > "$WORK/metrics" 2>/dev/null &&
           grep -Eq '^found_debuginfo_total\{source="files"\} [1-9]' "$WORK/metrics" &&
           grep -Eq '^found_executable_total\{source="files"\} [1-9]' "$WORK/metrics" &&
           grep -Eq '^thread_work_pending\{role="scan"\} 0' "$WORK/metrics"; then
            PORT=$p
            break 2
        fi
        sleep 0.1
    done
    kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null
done
[ -n "$PORT" ] || { cat "$WORK/debuginfod.log"; fail "debuginfod did not start and scan"; }
echo "debuginfod on 127.0.0.1:$PORT (pid $DPID) has scanned $SVC_SOLIB_DEBUG_DIR"

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

# A missing build id: one request for three lookups.
MISSING=0123456789abcdef0123456789abcdef01234567
"$SVC_TOOL" --debug-root "$WORK/none" locate "$MISSING" "$MISSING" "$MISSING" > "$WORK/locate.txt" || fail "svc_tool locate"
cat "$WORK/locate.txt"
grep -q "^miss $MISSING" "$WORK/locate.txt" || fail "the missing build id was found?"
grep -Eq '^stats lookups=3 debuginfod_queries=1 debuginfod_misses=1 miss_cache_hits=2$' "$WORK/locate.txt" \
    || fail "the miss cache did not avoid the repeated queries"
sleep 0.5
n=$(grep -c "/buildid/$MISSING/debuginfo" "$WORK/debuginfod.log")
[ "$n" = 1 ] || fail "debuginfod saw $n requests for the missing build id (want 1)"
echo "PASS"
