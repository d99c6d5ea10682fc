#!/usr/bin/env bash
# static_thread.sh PROGRAM: a -static program linked with Faultline::client_static
# starts a thread, and the stack overflow in it is reported.
set -euo pipefail
prog=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
set +e; FAULTLINE_SPOOL=$tmp/spool "$prog" crash 2>"$tmp/err"; rc=$?; set -e
[ $rc -eq 139 ] || { echo "FAIL: exit $rc, want 139 (SIGSEGV in the thread)"; cat "$tmp/err"; exit 1; }
log=$(ls "$tmp"/spool/*.crashlog)
pid=$(awk '$1 == "PROCESS_ID" {print $2}' "$log")
tid=$(awk '$1 == "CRASH_THREAD" {print $2}' "$log")
[ -n "$tid" ] && [ "$tid" != "$pid" ] || { echo "FAIL: CRASH_THREAD $tid is not a thread of $pid"; exit 1; }
echo "ok: thread $tid of static process $pid reported"
