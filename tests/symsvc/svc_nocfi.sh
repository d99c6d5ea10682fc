#!/bin/bash
# Functions built without unwind tables (svc_nocfi.c: their CFI is in
# .debug_frame, which is not loaded) between the crashing function and
# main.  The client's walk, which reads .eh_frame in memory, cannot get
# through them; the server's (libdwfl reading the program's file) does,
# and its stack is the one kept.
. "$(dirname "$0")/svc_common.sh"

crash nocfi
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" --stack server frames "$LOG" > "$WORK/server.txt" \
    || fail "svc_tool frames --stack server"
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" --stack client frames "$LOG" > "$WORK/client.txt" \
    || fail "svc_tool frames --stack client"
cat "$WORK/server.txt"
grep -qx 'pick server' "$WORK/server.txt" || fail "the server's stack is not the one kept"
want="crash_in_compare nocfi_inner nocfi_middle svc_nocfi_outer run_nocfi main "
got=$(names "$WORK/server.txt" | head -6 | tr '\n' ' ')
[ "$got" = "$want" ] || fail "server stack: '$got', expected '$want'"
# The case is only a test of the server if the client could not do it.
names "$WORK/client.txt" | grep -qx nocfi_middle \
    && fail "the client's walk passed the functions without CFI: this case tests nothing"
echo "PASS"
