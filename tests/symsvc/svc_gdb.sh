#!/bin/bash
# The server-side CFI unwind (fl_remote_unwind: libdwfl fed with the log's
# REGISTER and STACK lines and the objects' .eh_frame) of an -O2
# -fomit-frame-pointer crash in a qsort_r comparator recovers every frame
# gdb shows for the same crash, from the faulting function down to main.
# gdb runs the same program with the same argument (no core file needed),
# and the function names are compared after removing compiler and glibc
# decorations (.part.N, .cold, .isra.N, @GLIBC_x, __GI_ and leading "_").
. "$(dirname "$0")/svc_common.sh"
command -v gdb >/dev/null || fail "gdb is not installed (scripts/deps.sh)"

norm() { sed -E 's/@.*$//; s/\..*$//; s/^__GI_//; s/^_+//'; }

crash qsort
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" --stack server frames "$LOG" > "$WORK/server.txt" \
    || fail "svc_tool frames --stack server"
cat "$WORK/server.txt"
grep -q '^stack server ' "$WORK/server.txt" || fail "no server stack"
awk '/^F /{print $7}' "$WORK/server.txt" | norm > "$WORK/server.names"

# The same crash under gdb.  FAULTLINE_SPOOL points at a scratch dir; gdb
# stops at the SIGSEGV before Faultline's handler runs.
env "${CRASH_ENV[@]}" FAULTLINE_SPOOL="$WORK/gdb-spool" timeout 60 gdb -batch -nx \
    -iex "set debuginfod enabled off" -ex "set pagination off" -ex "set width 0" \
    -ex run -ex bt --args "$SVC_CRASH" qsort > "$WORK/gdb.txt" 2>&1
grep '^#' "$WORK/gdb.txt"
grep -q 'SIGSEGV' "$WORK/gdb.txt" || fail "gdb did not see the SIGSEGV"
# "#3  0x... in name (args) at f.c:1" or "#4  name (args) at ..." (inline)
grep -E '^#[0-9]+ ' "$WORK/gdb.txt" | sed -E 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\2/' | norm > "$WORK/gdb.names"
# Frames above the faulting function (none expected) are ignored.
first=$(grep -n '^crash_in_compare$' "$WORK/gdb.names" | head -1 | cut -d: -f1)
[ -n "$first" ] || fail "gdb shows no crash_in_compare frame"
tail -n +"$first" "$WORK/gdb.names" > "$WORK/gdb.tail"
n=$(wc -l < "$WORK/gdb.tail")
# Under ASan, qsort_r is ASan's interceptor calling the comparator itself
# (no msort frames), so the stack is shorter.
min=10
[ "${FAULTLINE_SANITIZE:-OFF}" = ON ] && min=6
[ "$n" -ge "$min" ] || fail "gdb shows only $n frames"
grep -qx main "$WORK/gdb.tail" || fail "gdb's stack does not reach main"
head -n "$n" "$WORK/server.names" > "$WORK/server.head"
echo "gdb frames:    $(tr '\n' ' ' < "$WORK/gdb.tail")"
echo "server frames: $(tr '\n' ' ' < "$WORK/server.head")"
diff "$WORK/gdb.tail" "$WORK/server.head" || fail "the server-side unwind differs from gdb's backtrace"
echo "PASS ($n frames)"
