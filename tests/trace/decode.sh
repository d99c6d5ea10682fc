#!/usr/bin/env bash
# decode.sh FAULTLINE APP LIB: `faultline decode` turns the app's trace-ID
# dump into exactly the text the app's own text dump has -- with the files
# given, found at their paths, or stripped -- and says so when it cannot.
set -u
FL=$1 APP=$2 LIB=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL [decode]: $*" >&2; exit 1; }
export FAULTLINE_SPOOL=$work/spool
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
unset DEBUGINFOD_URLS # decode_debuginfod.sh tests that path

"$APP" "$work/ids" "$work/text" "$LIB" || fail "the app exited $?"
head -1 "$work/ids" | grep -qx 'FAULTLINE_TRACE_DUMP 1' || fail "no dump header"
grep -q '^TRACE_ID ' "$work/ids" || fail "no TRACE_ID lines"
# Hard-coded strings are in the dump by address ("@MOD:ADDR"), not copied.
grep -q '^TRACE_ID .* @0:0x[0-9a-f]*' "$work/ids" || fail "no hard-coded string kept by address"
grep -q ' long \[a hard-coded string longer than 256 bytes: \.*\] 9$' "$work/text" ||
  fail "the long hard-coded string: $(grep ' long ' "$work/text")"
if grep -q 'never shown' "$work/text"; then fail "a kept string past 256 bytes"; fi
grep -q ' long format \.* end 10$' "$work/text" || fail "a format longer than 512 bytes was cut"
[ "$(grep -c '^TRACE_BYTES ' "$work/ids")" -ge 3 ] || fail "the long strings should span TRACE_BYTES lines"
if grep -q 'step 1 of 50' "$work/ids"; then fail "the dump holds formatted text"; fi
grep -q ' step 1 of 50, -1 feedfacf \[ok      \] 0.143 1e+10 -3.333333e-01$' "$work/text" ||
  fail "the text dump lacks a line it should have"

# 1. The files given.
"$FL" decode --obj "$APP" --obj "$LIB" "$work/ids" >"$work/out1" 2>"$work/err1" ||
  fail "decode --obj exited $?: $(cat "$work/err1")"
cmp -s "$work/text" "$work/out1" || { diff "$work/text" "$work/out1" | head; fail "decode --obj differs from the text dump"; }
# 2. Found at the paths the dump names (same build ids), from stdin.
"$FL" decode <"$work/ids" >"$work/out2" 2>"$work/err2" || fail "decode by path exited $?"
cmp -s "$work/text" "$work/out2" || fail "decode by path differs"
# 3. Stripped copies (another path: --obj matches by build id).
cp "$APP" "$work/app.stripped" && strip --strip-all "$work/app.stripped"
cp "$LIB" "$work/lib.stripped" && strip --strip-all "$work/lib.stripped"
sed 's#^MODULE \([0-9]*\) \([0-9a-f-]*\) .*#MODULE \1 \2 /nonexistent#' "$work/ids" >"$work/ids.nopath"
"$FL" decode --obj "$work/app.stripped" --obj "$work/lib.stripped" "$work/ids.nopath" \
  >"$work/out3" 2>"$work/err3" || fail "decode of stripped files exited $?: $(cat "$work/err3")"
cmp -s "$work/text" "$work/out3" || fail "decode with stripped files differs"
# 4. No file for the library: its events say so, the rest decode, exit 1.
"$FL" decode --obj "$work/app.stripped" "$work/ids.nopath" >"$work/out4" 2>"$work/err4"
rc=$?; [ $rc = 1 ] || fail "decode without the library exited $rc, want 1"
[ "$(grep -c '<trace site unreadable: no file for its module>$' "$work/out4")" = 2 ] ||
  fail "want 2 undecoded library events"
grep -q '2 of .* events not decoded' "$work/err4" || fail "no count on stderr: $(cat "$work/err4")"
[ "$(grep -vc 'unreadable' "$work/out4")" = "$(($(wc -l <"$work/text") - 2))" ] || fail "other lines lost"
# 5. Not a dump, or cut short: exit 2 with a reason.
"$FL" decode "$work/text" >/dev/null 2>"$work/err5"; rc=$?
# decode takes a crash log too, and says it is neither.
[ $rc = 2 ] && grep -q 'text: neither a crash log ("FAULTLINE <version>" or "MOJOCRASH <version>" first, after blank and # lines) nor a trace-ID dump' "$work/err5" ||
  fail "a text dump: exit $rc, $(cat "$work/err5")"
# Nothing on standard input is named as such, not as "-".
"$FL" decode </dev/null >/dev/null 2>"$work/err5b"; rc=$?
[ $rc = 2 ] && [ "$(cat "$work/err5b")" = "faultline decode: standard input is empty" ] ||
  fail "empty standard input: exit $rc, $(cat "$work/err5b")"
head -n 20 "$work/ids" >"$work/cut"
"$FL" decode --obj "$APP" --obj "$LIB" "$work/cut" >/dev/null 2>"$work/err6"; rc=$?
[ $rc = 2 ] && grep -q 'cut short' "$work/err6" || fail "a cut dump: exit $rc, $(cat "$work/err6")"
# Cut inside a TRACE_BYTES line, where it still parses and where it no
# longer does (an odd number of hex digits): "cut short", not "bad line".
n=$(grep -n '^TRACE_BYTES ' "$work/ids" | head -1 | cut -d: -f1)
for c in 16 15; do
  { head -n $((n - 1)) "$work/ids"; sed -n "${n}p" "$work/ids" | head -c $c; } >"$work/cut2"
  "$FL" decode --obj "$APP" --obj "$LIB" "$work/cut2" >/dev/null 2>"$work/err6b"; rc=$?
  [ $rc = 2 ] && grep -q "cut2:$n: cut short (the dump ends inside this line)" "$work/err6b" ||
    fail "a dump cut inside a line after $c bytes: exit $rc, $(cat "$work/err6b")"
done
# Cut inside a key ("TRACE_BY"): the events before it come out as they
# are, the one whose bytes were cut off and the piece of key do not.
for c in 8 3; do
  { head -n $((n - 1)) "$work/ids"; sed -n "${n}p" "$work/ids" | head -c $c; } >"$work/cut3"
  "$FL" decode --obj "$APP" --obj "$LIB" "$work/cut3" >"$work/out6c" 2>"$work/err6c"; rc=$?
  [ $rc = 2 ] && grep -q "cut3:$n: cut short" "$work/err6c" || fail "cut in a key: exit $rc, $(cat "$work/err6c")"
  cmp -s -n "$(wc -c <"$work/out6c")" "$work/out6c" "$work/text" ||
    fail "cut in a key after $c bytes: not the text's beginning: $(tail -2 "$work/out6c")"
done
# An --obj of another build is of no use, and said so (the rest decodes).
cp "$LIB" "$work/other.so" && objcopy --remove-section .note.gnu.build-id "$work/other.so" &&
  objcopy --add-section .note.gnu.build-id=<(printf '\004\000\000\000\024\000\000\000\003\000\000\000GNU\000%s' \
    "$(head -c 20 /dev/zero | tr '\0' 'x')") --set-section-flags .note.gnu.build-id=alloc,readonly \
    "$work/other.so" 2>/dev/null
oid=$(readelf -n "$work/other.so" 2>/dev/null | awk '/Build ID/ {print $3}')
[ -n "$oid" ] || fail "could not give the copy another build id"
"$FL" decode --obj "$APP" --obj "$LIB" --obj "$work/other.so" "$work/ids" >"$work/out7" 2>"$work/err7" ||
  fail "decode with an extra --obj exited $?: $(cat "$work/err7")"
cmp -s "$work/text" "$work/out7" || fail "an extra --obj changed the output"
grep -q "warning: --obj $work/other.so: its build id $oid is none of the dump's modules" "$work/err7" ||
  fail "no warning for an --obj of another build: $(cat "$work/err7")"
if grep -q warning "$work/err1"; then fail "a warning with the right files: $(cat "$work/err1")"; fi
# A directory (a build tree): the stripped copies found under it, the
# other build's file and a text file beside them passed over silently.
mkdir -p "$work/tree/lib" && cp "$work/app.stripped" "$work/tree/" &&
  cp "$work/lib.stripped" "$work/other.so" "$work/tree/lib/" && echo text >"$work/tree/README" ||
  fail "making the tree"
"$FL" decode --obj "$work/tree" "$work/ids.nopath" >"$work/out7d" 2>"$work/err7d" ||
  fail "decode --obj DIR exited $?: $(cat "$work/err7d")"
cmp -s "$work/text" "$work/out7d" || fail "decode --obj DIR differs"
[ -s "$work/err7d" ] && fail "decode --obj DIR said: $(cat "$work/err7d")"
mkdir -p "$work/notree" && echo text >"$work/notree/README"
"$FL" decode --obj "$work/notree" "$work/ids.nopath" >/dev/null 2>"$work/err7d"; rc=$?
[ $rc = 2 ] && grep -q "^faultline decode: --obj $work/notree: no ELF file with a build id under it (1 files looked at)$" \
  "$work/err7d" || fail "decode --obj of a directory without ELF files: $rc $(cat "$work/err7d")"
"$FL" decode --context 1 --obj "$work/tree" >/dev/null 2>"$work/err7d"; rc=$?
[ $rc = 2 ] && grep -q -- "--context wants the files themselves" "$work/err7d" ||
  fail "decode --context with a directory: $rc $(cat "$work/err7d")"
# An empty recorder: nothing decoded, and stderr says there was nothing.
grep -v '^TRACE_' "$work/ids" >"$work/ids.empty"
"$FL" decode --obj "$APP" --obj "$LIB" "$work/ids.empty" >"$work/out8" 2>"$work/err8"; rc=$?
[ $rc = 0 ] && grep -q 'no trace events in the dump' "$work/err8" ||
  fail "an empty dump: exit $rc, $(cat "$work/err8")"
if grep -q 'no trace events' "$work/err1"; then fail "a full dump said it was empty"; fi
# 6. Dumped before faultline_install(): no module table, so no event can be
# decoded, and the lines say why.
DECODE_NO_INSTALL=1 "$APP" "$work/ids0" "$work/text0" "$LIB" || fail "the app without install exited $?"
if grep -q '^MODULE ' "$work/ids0"; then fail "MODULE lines without install"; fi
"$FL" decode --obj "$APP" --obj "$LIB" "$work/ids0" >"$work/out7" 2>/dev/null; rc=$?
[ $rc = 1 ] || fail "decode of a dump made before install exited $rc, want 1"
[ "$(grep -c 'dumped before faultline_install' "$work/out7")" = "$(grep -c '^TRACE ' "$work/text0")" ] ||
  fail "every event should say it was dumped before install"
# 7. A library whose path is longer than the library keeps (1,023 bytes):
# its MODULE line has the path's end, and MODULE_PATH_CUT how many bytes
# of its start are missing (as OBJECT_PATH_CUT in a crash log).  decode
# does not print the marker, and finds the file by --obj.
deep=$work
for c in a b c d e f; do deep=$deep/$(head -c 200 /dev/zero | tr '\0' $c); done
mkdir -p "$deep" && cp "$LIB" "$deep/" || fail "no deep directory"
dlib=$deep/$(basename "$LIB")
"$APP" "$work/ids9" "$work/text9" "$dlib" || fail "the app with a deep library exited $?"
mline=$(grep -n "^MODULE [0-9]* [0-9a-f]* .*/$(basename "$LIB")\$" "$work/ids9" | head -1)
[ -n "$mline" ] || fail "no MODULE line for the deep library"
n=${mline%%:*} mpath=${mline#*:MODULE * * }
cutn=$(sed -n "$((n + 1))s/^MODULE_PATH_CUT //p" "$work/ids9")
[ -n "$cutn" ] && [ "${#mpath}" -le 1023 ] && [ $((cutn + ${#mpath})) = ${#dlib} ] &&
  [ "${dlib:$cutn}" = "$mpath" ] ||
  fail "deep library: MODULE path $mpath (${#mpath} bytes), MODULE_PATH_CUT '$cutn'; the path is ${#dlib} bytes"
[ "$(grep -c '^MODULE_PATH_CUT ' "$work/ids9")" = 1 ] || fail "MODULE_PATH_CUT on other modules too"
"$FL" decode --obj "$APP" --obj "$dlib" "$work/ids9" >"$work/out9" 2>"$work/err9" ||
  fail "decode of the deep library's dump exited $?: $(cat "$work/err9")"
cmp -s "$work/text9" "$work/out9" || { diff "$work/text9" "$work/out9" | head; fail "decode with a cut path differs"; }
# The marker is obeyed: a path it qualifies is not opened, even when the
# file there is the module's (the dump of case 2, with a marker added).
n=$(grep -n "^MODULE [0-9]* [0-9a-f]* $LIB\$" "$work/ids" | cut -d: -f1)
[ -n "$n" ] || fail "no MODULE line for $LIB"
sed "${n}a MODULE_PATH_CUT 1200" "$work/ids" >"$work/ids.cut"
"$FL" decode --obj "$APP" "$work/ids.cut" >"$work/out10" 2>"$work/err10"; rc=$?
[ $rc = 1 ] && [ "$(grep -c '<trace site unreadable: no file for its module>$' "$work/out10")" = 2 ] ||
  fail "a cut path was used: exit $rc, $(cat "$work/err10")"
"$FL" decode --obj "$APP" --obj "$LIB" "$work/ids.cut" >"$work/out10" 2>"$work/err10" &&
  cmp -s "$work/text" "$work/out10" || fail "decode --obj with a cut path: $(cat "$work/err10")"
for bad in "MODULE_PATH_CUT x" "MODULE_PATH_CUT -1"; do
  sed "${n}a $bad" "$work/ids" >"$work/ids.bad"
  "$FL" decode --obj "$APP" --obj "$LIB" "$work/ids.bad" >/dev/null 2>"$work/err11"; rc=$?
  [ $rc = 2 ] && grep -q "ids.bad:$((n + 1)): bad MODULE_PATH_CUT line" "$work/err11" ||
    fail "'$bad': exit $rc, $(cat "$work/err11")"
done
{ head -1 "$work/ids"; echo "MODULE_PATH_CUT 5"; tail -n +2 "$work/ids"; } >"$work/ids.bad"
"$FL" decode --obj "$APP" --obj "$LIB" "$work/ids.bad" >/dev/null 2>"$work/err11"; rc=$?
[ $rc = 2 ] && grep -q "ids.bad:2: bad MODULE_PATH_CUT line" "$work/err11" ||
  fail "MODULE_PATH_CUT before any MODULE: exit $rc, $(cat "$work/err11")"
echo "ok [decode]: $(grep -c '^TRACE ' "$work/text") events decoded from IDs"
