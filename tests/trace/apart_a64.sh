#!/usr/bin/env bash
# apart_a64.sh FAULTLINE APP A64_APART QEMU SYSROOT STRIP: the
# FAULTLINE_TRACE_APART build on aarch64 (under qemu-user) keeps its
# formats in .debug_faultline_trace, out of the stripped program, and its
# crash log's TRACE_ID events decode, with the aarch64 file, to the very
# text the plain x86-64 build writes (but times, threads and a pointer).
set -u
FL=$1 APP=$2 A64=$3 QEMU=$4 SYSROOT=$5 STRIP=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL [trace apart aarch64]: $*" >&2; exit 1; }
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0

"$STRIP" -o "$work/a64.stripped" "$A64" || fail "strip"
if grep -q 'strings %s|%s' "$work/a64.stripped"; then fail "a format in the stripped program"; fi
grep -q 'strings %s|%s' "$A64" || fail "the unstripped program lacks the section's formats"

FAULTLINE_SPOOL=$work/spool0 "$APP" "$work/ids0" "$work/text0" || fail "the plain app exited $?"
(FAULTLINE_SPOOL=$work/spool DECODE_CRASH=1 exec "$QEMU" -L "$SYSROOT" "$work/a64.stripped" \
  "$work/ids" "$work/text") 2>/dev/null
rc=$?; [ $rc -ge 128 ] || fail "the aarch64 app did not crash (exit $rc)"
log=$(ls "$work"/spool/*.crashlog 2>/dev/null | head -1)
[ -n "$log" ] || fail "no crash log"
grep -qx 'CPUARCH_NAME aarch64' "$log" || fail "not an aarch64 log"
[ "$(grep -c '^TRACE_ID ' "$log")" -ge 100 ] || fail "too few TRACE_ID lines"

norm() { grep '^TRACE ' "$1" | grep -v ' ptr 0x' | sed -E 's/^TRACE [0-9]+ [0-9]+ /TRACE /'; }
"$FL" decode --obj "$A64" "$log" >"$work/d" 2>"$work/e" || fail "decode: exit $?: $(cat "$work/e")"
norm "$work/text0" >"$work/want"
norm "$work/d" >"$work/got"
[ "$(wc -l <"$work/want")" -ge 100 ] || fail "the plain app's text is short"
cmp -s "$work/want" "$work/got" || { diff "$work/want" "$work/got" | head; fail "the aarch64 log decodes otherwise"; }
# The trace-ID dump too (the site's descriptor read from the aarch64 file).
"$FL" decode --obj "$A64" "$work/ids" >"$work/d2" 2>"$work/e2" || fail "decode dump: exit $?: $(cat "$work/e2")"
norm "$work/d2" | cmp -s - "$work/want" || fail "the aarch64 dump decodes otherwise"
echo "ok: formats kept apart on aarch64"
