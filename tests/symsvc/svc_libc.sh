#!/bin/bash
# Crashes inside libc (abort(), strlen(NULL)) are named with source files
# from Debian's libc6-dbg debug file, found by build id under
# /usr/lib/debug/.build-id (fl_symlocate) and read through a symcache.
. "$(dirname "$0")/svc_common.sh"

[ -d /usr/lib/debug/.build-id ] || fail "libc6-dbg is not installed (scripts/deps.sh)"

crash abort
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" frames "$LOG" > "$WORK/abort.txt" || fail "svc_tool frames (abort)"
cat "$WORK/abort.txt"
# libc's abort frame, from the system tier, with its source file.
grep -Eq '^F [0-9]+ 0x[0-9a-f]+ libc\.so\.6 system debug-dir (__GI_)?abort [^ ]*stdlib/abort\.c:[1-9]' "$WORK/abort.txt" \
    || fail "abort() in libc is not named with stdlib/abort.c"
grep -Eq '^F [0-9]+ 0x[0-9a-f]+ libc\.so\.6 system debug-dir [^ ]*(raise|gsignal) [^ ]*raise\.c:[1-9]' "$WORK/abort.txt" \
    || fail "raise() in libc is not named with raise.c"
grep -Eq '^F 0 0x[0-9a-f]+ libc\.so\.6 system debug-dir [^ ]*pthread_kill[^ ]* [^ ]*pthread_kill\.c:[1-9]' "$WORK/abort.txt" \
    || fail "frame 0 (pthread_kill) is not named with pthread_kill.c"
grep -Eq '^F [0-9]+ 0x[0-9a-f]+ svc_crash [a-z]+ [a-z-]+ crash_abort [^ ]*svc_crash\.c:[1-9]' "$WORK/abort.txt" \
    || fail "the caller crash_abort is missing"

crash strlen
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" frames "$LOG" > "$WORK/strlen.txt" || fail "svc_tool frames (strlen)"
cat "$WORK/strlen.txt"
# The faulting pc itself is in libc's strlen, written in assembly (.S).
grep -Eq '^F 0 0x[0-9a-f]+ libc\.so\.6 system debug-dir [^ ]*strlen[^ ]* [^ ]*strlen[^ ]*\.S:[1-9]' "$WORK/strlen.txt" \
    || fail "frame 0 is not libc's strlen with its .S source"
grep -Eq '^F [0-9]+ 0x[0-9a-f]+ svc_crash [a-z]+ [a-z-]+ crash_strlen [^ ]*svc_crash\.c:[1-9]' "$WORK/strlen.txt" \
    || fail "the caller crash_strlen is missing"
echo "PASS"
