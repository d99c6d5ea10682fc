#!/usr/bin/env bash
# apart.sh FAULTLINE APP APART_APP LIB: FAULTLINE_TRACE_APART keeps the
# formats out of the program's memory, in .debug_faultline_trace, which
# strip moves into the debug file; yet the events read as they would
# without it: `faultline decode` makes the same text from the trace-ID
# dump and from the crash log (TRACE_ID lines) with the debug file, and
# a real server formats the crash's events once the debug file is
# uploaded (the backfill), saying until then that it is missing.
set -u
FL=$1 APP=$2 APART=$3 LIB=$4
work=$(mktemp -d)
cleanup() {
  [ -n "${PID:-}" ] && kill -9 "$PID" 2>/dev/null
  debuginfod_stop
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL [trace apart]: $*" >&2; exit 1; }
. "$(dirname "$0")/../lib/debuginfod.sh"
# decode and the server under LeakSanitizer too; the apps (which leave
# their dlopen()ed library) without, and the crashing one with its own
# SIGSEGV handling left to libfaultline.
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0
APP_ASAN=detect_leaks=0:verify_asan_link_order=0
CRASH_ASAN=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1:verify_asan_link_order=0
unset DEBUGINFOD_URLS
command -v objcopy >/dev/null && command -v curl >/dev/null || exit 77

# The formats are in the section, not in any loaded part of the file.
readelf -SW "$APART" | grep -q '\.debug_faultline_trace .*PROGBITS' || fail "no .debug_faultline_trace"
readelf -SW "$APART" | grep '\.debug_faultline_trace' | grep -q ' A ' && fail "the section is allocated"
objcopy --only-keep-debug "$APART" "$work/app.debug" || fail "objcopy --only-keep-debug"
objcopy --strip-all "$APART" "$work/app" || fail "strip"
cp "$APP" "$work/app.plain" && strip --strip-all "$work/app.plain"
grep -q 'strings %s|%s' "$work/app.plain" || fail "the check is wrong: a plain build holds its formats"
if grep -q 'strings %s|%s' "$work/app"; then fail "the stripped apart build holds a format"; fi
grep -q 'strings %s|%s' "$work/app.debug" || fail "the debug file lacks the formats"

# Both builds trace the same events; the apart one crashes after its dumps.
ASAN_OPTIONS=$APP_ASAN FAULTLINE_SPOOL=$work/spool0 "$APP" "$work/ids0" "$work/text0" "$LIB" || fail "the plain app exited $?"
(ASAN_OPTIONS=$CRASH_ASAN UBSAN_OPTIONS=handle_segv=0:handle_sigbus=0 \
  FAULTLINE_SPOOL=$work/spool DECODE_CRASH=1 exec "$work/app" "$work/ids" "$work/text" "$LIB") 2>/dev/null
rc=$?; [ $rc -ge 128 ] || fail "the apart app did not crash (exit $rc)"
log=$(ls "$work"/spool/*.crashlog 2>/dev/null | head -1)
[ -n "$log" ] || fail "no crash log"
# The app's events are TRACE_ID lines (the library's, built plainly, TRACE).
[ "$(grep -c '^TRACE_ID ' "$log")" -ge 100 ] || fail "the crash log has $(grep -c '^TRACE_ID ' "$log") TRACE_ID lines"
grep -q '^TRACE [0-9]* [0-9]* from the library 8$' "$log" || fail "the library's events"
if grep -q 'step 1 of 50' "$log" "$work/ids" "$work/text"; then fail "formatted text without the debug file"; fi
grep -q '^TRACE_BYTES 6f6b00$' "$log" || fail "the hard-coded \"ok\" is not copied into the log"

# Without their times and threads (another run), the lines of the plain
# build, except the pointer's (another address).
norm() { grep -E '^(TRACE|BREADCRUMB|STATE_KEY|STATE_VALUE) ' "$1" | grep -v ' ptr 0x' |
  sed -E 's/^TRACE [0-9]+ [0-9]+ /TRACE /; s/^BREADCRUMB [0-9]+ /BREADCRUMB /'; }
norm "$work/text0" >"$work/want"
[ "$(grep -c '^TRACE ' "$work/want")" -ge 100 ] || fail "the plain app's text dump is short"

# 1. decode: the trace-ID dump, with the debug file.
"$FL" decode --obj "$work/app.debug" "$work/ids" >"$work/d1" 2>"$work/e1" || fail "decode dump: exit $?: $(cat "$work/e1")"
norm "$work/d1" >"$work/n1"
cmp -s "$work/want" "$work/n1" || { diff "$work/want" "$work/n1" | head; fail "decode of the dump differs from the plain build"; }
# 2. decode: the crash log, with the debug file: the same TRACE lines.
"$FL" decode --obj "$work/app.debug" "$log" >"$work/d2" 2>"$work/e2" || fail "decode log: exit $?: $(cat "$work/e2")"
grep '^TRACE ' "$work/d1" >"$work/t1"; grep '^TRACE ' "$work/d2" >"$work/t2"
cmp -s "$work/t1" "$work/t2" || { diff "$work/t1" "$work/t2" | head; fail "the crash log decodes otherwise than the dump"; }
# A build tree holding the debug file (--obj DIR) does as well.
mkdir -p "$work/tree/sub" && cp "$work/app.debug" "$work/tree/sub/" && cp "$LIB" "$work/tree/"
"$FL" decode --obj "$work/tree" "$log" 2>"$work/e2d" | grep '^TRACE ' | cmp -s - "$work/t2" ||
  fail "decode with --obj DIR differs: $(cat "$work/e2d")"
# The program the log names links to its debug file (.gnu_debuglink),
# which sits beside it: found without --obj.
mkdir -p "$work/linked" && cp "$work/app.debug" "$work/linked/"
objcopy --add-gnu-debuglink="$work/linked/app.debug" "$work/app" "$work/linked/app" || fail "debuglink"
sed "s#^OBJECT_PATH $work/app\$#OBJECT_PATH $work/linked/app#" "$log" >"$work/linked.crashlog"
grep -qx "OBJECT_PATH $work/linked/app" "$work/linked.crashlog" || fail "the log names no linked program"
"$FL" decode "$work/linked.crashlog" 2>"$work/e2l" | grep '^TRACE ' | cmp -s - "$work/t2" ||
  fail "decode through .gnu_debuglink differs: $(cat "$work/e2l")"
# The debug file with its sections compressed (objcopy, as distributions ship them).
objcopy --compress-debug-sections=zlib "$work/app.debug" "$work/app.z.debug" || fail "compress"
readelf -SW "$work/app.z.debug" | grep '\.debug_faultline_trace' | grep -q ' C ' || fail "not compressed"
"$FL" decode --obj "$work/app.z.debug" "$log" 2>"$work/e2z" | grep '^TRACE ' | cmp -s - "$work/t2" ||
  fail "decode with a compressed debug file differs: $(cat "$work/e2z")"
# 3. Without the debug file: each event says so, exit 1.
"$FL" decode "$log" >"$work/d3" 2>"$work/e3"; rc=$?
[ $rc = 1 ] || fail "decode without the debug file: exit $rc"
[ "$(grep -c '<trace format kept apart: no debug file of its object (give it with --obj)>$' "$work/d3")" = \
  "$(grep -c '^TRACE_ID ' "$log")" ] || fail "undecoded events: $(head -3 "$work/d3")"
# 4. A bad section is refused, not read past.
cp "$work/app.debug" "$work/bad.debug"
objcopy --update-section .debug_faultline_trace=<(printf '\001\002\003') "$work/bad.debug" 2>/dev/null ||
  fail "objcopy --update-section"
"$FL" decode --obj "$work/bad.debug" "$log" >"$work/d4" 2>"$work/e4"; rc=$?
[ $rc = 1 ] || fail "a bad section: exit $rc"
grep -q "^faultline decode: warning: $work/bad.debug: .debug_faultline_trace: entry 1 (byte 0) is cut short; its formats not used$" \
  "$work/e4" || fail "a bad section is not said: $(cat "$work/e4")"

# 5. A real server: formats missing until the debug file comes.
ADMIN=apart-admin-$$ KEY=apart-key-$$
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
. "$(dirname "$0")/../lib/server.sh"
start "$work/data"
"$FL" submit "$log" --server "$(url /)" --key "$KEY" >"$work/sub" 2>&1 || fail "submit: $(cat "$work/sub")"
id=$(grep '^CRASH_ID ' "$log" | cut -d' ' -f2)
wait_processed "$id" "$work/c1"
python3 - "$work/c1" <<'PYEOF' || fail "before the upload: $(head -c 600 "$work/c1")"
import json, sys
tr = json.load(open(sys.argv[1]))["trace"]
apart = [e for e in tr if "format" in e]
assert len(apart) >= 100, len(apart)
assert all(e["format"] == "missing" and e["text"].startswith("<trace format kept apart: no debug file of ")
           for e in apart), apart[0]
assert any(e["text"] == "from the library 8" for e in tr)
PYEOF
"$FL" symbols add "$work/app.debug" --server "$(url /)" >"$work/up" 2>&1 || fail "upload: $(cat "$work/up")"
# The backfill: the crash processed again, its events formatted.
ok=
for _ in $(seq 150); do
  admin "$(url "/api/v1/crashes/$id")" >"$work/c2"
  grep -q '"format":"debug file"' "$work/c2" && grep -q '"state":"processed"' "$work/c2" && { ok=1; break; }
  sleep 0.2
done
[ -n "$ok" ] || fail "not formatted after the upload: $(head -c 600 "$work/c2")"
python3 - "$work/c2" "$work/t2" <<'PYEOF' || fail "after the upload"
import json, sys
tr = json.load(open(sys.argv[1]))["trace"]
want = [l.rstrip("\n").split(" ", 3)[3] for l in open(sys.argv[2])]
got = [e["text"] for e in tr]
assert got == want, [(a, b) for a, b in zip(got, want) if a != b][:3] or (len(got), len(want))
assert all(e["format"] == "debug file" for e in tr if "format" in e)
PYEOF
# More crashes of the program: their formats from the section the server
# read before and kept, not from the debug file again.  (A move of the
# store's symbols version after the upload, which the workers may see
# between two crashes, makes them read it once more: at most one extra
# read is allowed over three crashes.)
metric() { curl -s -H "Authorization: Bearer $ADMIN" "$(url /metrics)" |
  awk -v m="faultline_trace_formats_$1_total" '$1 == m {print $2}'; }
for n in 2 3 4; do
  (ASAN_OPTIONS=$CRASH_ASAN UBSAN_OPTIONS=handle_segv=0:handle_sigbus=0 \
    FAULTLINE_SPOOL=$work/spool$n DECODE_CRASH=1 exec "$work/app" "$work/ids$n" "$work/text$n" "$LIB") 2>/dev/null
  logn=$(ls "$work"/spool$n/*.crashlog 2>/dev/null | head -1)
  [ -n "$logn" ] || fail "no crash log $n"
  "$FL" submit "$logn" --server "$(url /)" --key "$KEY" >"$work/sub" 2>&1 || fail "submit: $(cat "$work/sub")"
  wait_processed "$(grep '^CRASH_ID ' "$logn" | cut -d' ' -f2)" "$work/c4"
  grep -q '"format":"missing"' "$work/c4" && fail "crash $n lacks formats"
  grep -q '"format":"debug file"' "$work/c4" || fail "crash $n was not formatted"
  eval "read$n=\$(metric read) shared$n=\$(metric shared)"
done
[ -n "$read4" ] && [ "$read4" -le 2 ] && [ "$shared4" -ge 2 ] ||
  fail "crashes after the first read the section again: read $read2, $read3, $read4; shared $shared2, $shared3, $shared4"
stop || fail "server exit status"

# A damaged section uploaded: the events say so, and the metric counts it.
start "$work/data3"
"$FL" symbols add "$work/bad.debug" --server "$(url /)" >"$work/up" 2>&1 || fail "upload bad: $(cat "$work/up")"
"$FL" submit "$log" --server "$(url /)" --key "$KEY" >"$work/sub" 2>&1 || fail "submit 3: $(cat "$work/sub")"
wait_processed "$id" "$work/c5"
grep -q '<trace format kept apart: the formats in the debug file of app (build id [0-9a-f]*) are damaged>' \
  "$work/c5" || fail "a damaged section is not said: $(head -c 600 "$work/c5")"
[ "$(metric damaged)" -ge 1 ] || fail "faultline_trace_formats_damaged_total: $(metric damaged)"
stop || fail "server 3 exit status"

# 6. The debug file from a real debuginfod: decode and a server find the
# formats there, by build id (the log names the stripped program).
mkdir -p "$work/served" && cp "$work/app" "$work/app.debug" "$work/served/"
debuginfod_start "$work/served" 1 1
export DEBUGINFOD_URLS="http://127.0.0.1:$DPORT" DEBUGINFOD_CACHE_PATH=$work/dcache
"$FL" decode "$log" >"$work/d6" 2>"$work/e6" || fail "decode through debuginfod: exit $?: $(cat "$work/e6")"
grep '^TRACE ' "$work/d6" | cmp -s - "$work/t2" || fail "decode through debuginfod differs"
app_id=$(readelf -n "$work/app" | awk '/Build ID/ {print $3}')
grep -q "/buildid/$app_id/debuginfo" "$work/debuginfod.log" || fail "debuginfod was not asked for $app_id's debug file"
start "$work/data2"
"$FL" submit "$log" --server "$(url /)" --key "$KEY" >"$work/sub" 2>&1 || fail "submit 2: $(cat "$work/sub")"
wait_processed "$id" "$work/c3"
python3 - "$work/c3" "$work/t2" <<'PYEOF' || fail "formats from debuginfod: $(head -c 600 "$work/c3")"
import json, sys
tr = json.load(open(sys.argv[1]))["trace"]
want = [l.rstrip("\n").split(" ", 3)[3] for l in open(sys.argv[2])]
assert [e["text"] for e in tr] == want
PYEOF
stop || fail "server 2 exit status"
echo "ok: formats kept apart, decoded and formatted by the server"
