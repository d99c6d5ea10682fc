#!/usr/bin/env bash
# static_thread.sh PROGRAM [OLD]: a -static program linked with Faultline::client_static
# starts a thread, and the stack overflow in it is reported, with both
# threads' stacks unwound in full: a -static link has no .eh_frame_hdr, so
# the library finds .eh_frame from the program's section headers.
set -euo pipefail
prog=$1 old=${2:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
set +e; FAULTLINE_SPOOL=$tmp/spool "$prog" crash 2>"$tmp/err"; rc=$?; set -e
[ $rc -eq 139 ] || { echo "FAIL: exit $rc, want 139 (SIGSEGV in the thread)"; cat "$tmp/err"; exit 1; }
log=$(ls "$tmp"/spool/*.crashlog)
pid=$(awk '$1 == "PROCESS_ID" {print $2}' "$log")
tid=$(awk '$1 == "CRASH_THREAD" {print $2}' "$log")
[ -n "$tid" ] && [ "$tid" != "$pid" ] || { echo "FAIL: CRASH_THREAD $tid is not a thread of $pid"; exit 1; }
echo "ok: thread $tid of static process $pid reported"

# The crashing thread: the recursion, frame after frame, down from the
# fault (the walk stops at its frame limit, far below worker()).
awk '$1 == "CALLSTACK" {printf "0x%x\n", $2}' "$log" >"$tmp/crash.pcs"
n=$(wc -l <"$tmp/crash.pcs")
addr2line -f -e "$prog" <"$tmp/crash.pcs" | awk 'NR % 2' >"$tmp/crash.fns"
r=$(grep -c '^recurse$' "$tmp/crash.fns" || true)
[ "$n" -ge 100 ] && [ "$r" -ge 99 ] ||
    { echo "FAIL: the crashing thread has $n frames, $r in recurse (want >= 100, all but one)"; cat "$tmp/crash.fns" | head; exit 1; }
echo "ok: the crashing thread unwound through $r frames of recurse"

# The main thread, waiting in pthread_join: through libc's frames to main
# and on to _start.
awk '$1 == "THREAD_FRAME" {print $2}' "$log" >"$tmp/main.pcs"
addr2line -f -e "$prog" <"$tmp/main.pcs" | awk 'NR % 2' >"$tmp/main.fns"
grep -qx main "$tmp/main.fns" && grep -qx _start "$tmp/main.fns" ||
    { echo "FAIL: the main thread's stack does not reach main and _start:"; cat "$tmp/main.fns"; exit 1; }
echo "ok: the main thread's stack: $(tr '\n' ' ' <"$tmp/main.fns")"

# A stack overflow on a SIGEV_THREAD timer's thread, which the C library
# starts itself.
rm -rf "$tmp/spool"
set +e; FAULTLINE_SPOOL=$tmp/spool "$prog" timer 2>"$tmp/err"; rc=$?; set -e
[ $rc -eq 139 ] || { echo "FAIL: timer: exit $rc, want 139 (SIGSEGV in the timer's thread)"; cat "$tmp/err"; exit 1; }
[ "$(ls "$tmp"/spool/*.crashlog | wc -l)" = 1 ] || { echo "FAIL: timer: no crash log"; exit 1; }
echo "ok: a stack overflow on a timer's thread reported"

# And on a message queue notification's thread, started by the C library
# too.
rm -rf "$tmp/spool"
set +e; FAULTLINE_SPOOL=$tmp/spool "$prog" mq 2>"$tmp/err"; rc=$?; set -e
[ $rc -eq 139 ] || { echo "FAIL: mq: exit $rc, want 139 (SIGSEGV in the notification's thread)"; cat "$tmp/err"; exit 1; }
[ "$(ls "$tmp"/spool/*.crashlog | wc -l)" = 1 ] || { echo "FAIL: mq: no crash log"; exit 1; }
echo "ok: a stack overflow on a message queue notification's thread reported"

# OLD: the same program linked without -u,__mq_notify (the option came
# with the mq_notify wrapper): a notification by signal still works, one
# by thread fails with ENOSYS (docs/client.md).
if [ -n "$old" ]; then
  "$old" mq_signal || { echo "FAIL: mq_signal without -u,__mq_notify: exit $?"; exit 1; }
  set +e; "$old" mq 2>"$tmp/err"; rc=$?; set -e
  [ $rc -eq 1 ] && grep -q "Function not implemented" "$tmp/err" ||
    { echo "FAIL: mq without -u,__mq_notify: exit $rc, $(cat "$tmp/err")"; exit 1; }
  echo "ok: without -u,__mq_notify: a notification by signal works, by thread ENOSYS"
fi

# mq_close() is Faultline's too (it frees a registration's slot) and
# needs no -u option: it falls back to close().
for p in "$prog" ${old:+"$old"}; do
  "$p" mq_close || { echo "FAIL: mq_close in $(basename "$p"): exit $?"; exit 1; }
done
echo "ok: mq_close in a static program closes the queue"

# dlclose() is Faultline's too (the calling context's caches): in a
# static program it reaches the C library's own, which glibc's static
# dlopen() links in, with no -u option: the library is unloaded.
out=$("$prog" dlclose libm.so.6) || { echo "FAIL: dlclose: exit $?"; exit 1; }
[ "$out" = "unloaded 1 rc 0" ] || { echo "FAIL: dlclose in a static program: $out"; exit 1; }
echo "ok: dlclose in a static program unloads the library"
