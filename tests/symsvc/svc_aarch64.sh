#!/bin/bash
# The server-side unwind of aarch64 crashes, on an x86-64 server: libdwfl
# unwinds for the architecture of the log's modules, whatever the host's.
# svc_crash is cross-compiled (-O2 -fomit-frame-pointer, and again with
# pac-ret pointer authentication, whose signed return addresses the server
# must strip) and run under qemu-user.  The aarch64 libc and ld.so are the
# sysroot's, given to the server as uploads (ROOT/<build id>/executable),
# as debuginfod or `symbols add` would give them.
. "$(dirname "$0")/svc_common.sh"
: "${SVC_CRASH_A64_O2:?}" "${SVC_CRASH_A64_PAC:?}" "${SVC_A64_SYSROOT:?}"
CRASH_ENV=()  # the cross build has no sanitizers

UP="$WORK/uploads"
for f in "$SVC_A64_SYSROOT/lib/libc.so.6" "$SVC_A64_SYSROOT/lib/ld-linux-aarch64.so.1"; do
    id=$(readelf -n "$f" | awk '/Build ID/{print $3}')
    [ -n "$id" ] || fail "no build id in $f"
    mkdir -p "$UP/$id" && cp "$f" "$UP/$id/executable" || fail "cannot upload $f"
done

# frames STACK OUT [svc_tool options]: svc_tool's frames of $LOG.
frames() {
    local stack=$1 out=$2
    shift 2
    "$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" "$@" --stack "$stack" frames "$LOG" > "$out" \
        || fail "svc_tool frames --stack $stack $* failed: $(cat "$out")"
}
pcs() { awk '/^F /{print $3}' "$1"; }

for v in O2 PAC; do
    var=SVC_CRASH_A64_$v
    prog=${!var}

    # Through functions without unwind tables: only the server gets through.
    crash nocfi "$prog"
    grep -q '^CPUARCH_NAME aarch64$' "$LOG" || fail "$v: not an aarch64 log"
    frames server "$WORK/nocfi.txt" --upload "$UP"
    frames client "$WORK/nocfi-client.txt" --upload "$UP"
    cat "$WORK/nocfi.txt"
    grep -qx 'pick server' "$WORK/nocfi.txt" || fail "$v nocfi: the server's stack is not kept"
    want="crash_in_compare nocfi_inner nocfi_middle svc_nocfi_outer run_nocfi main "
    got=$(names "$WORK/nocfi.txt" | head -6 | tr '\n' ' ')
    [ "$got" = "$want" ] || fail "$v nocfi: server stack '$got', expected '$want'"
    names "$WORK/nocfi-client.txt" | grep -qx nocfi_middle \
        && fail "$v nocfi: the client's walk got through: this case tests nothing"
    # Without libc's file the walk below main falls back to the frame
    # pointers, whose first step must not repeat the frame (x30).
    frames server "$WORK/nocfi-nolibc.txt"
    diff <(pcs "$WORK/nocfi.txt") <(pcs "$WORK/nocfi-nolibc.txt") \
        || fail "$v nocfi: without libc's file the stack differs"

    # Through libc (qsort_r calling back) and out of abort(): with the
    # modules' files the server's walk is the client's, frame for frame.
    for mode in qsort abort; do
        crash "$mode" "$prog"
        frames server "$WORK/$mode.txt" --upload "$UP"
        frames client "$WORK/$mode-client.txt" --upload "$UP"
        n=$(pcs "$WORK/$mode.txt" | wc -l)
        [ "$n" -ge 7 ] || fail "$v $mode: the server's walk has only $n frames: $(cat "$WORK/$mode.txt")"
        diff <(pcs "$WORK/$mode-client.txt") <(pcs "$WORK/$mode.txt") \
            || fail "$v $mode: the server's stack differs from the client's"
        names "$WORK/$mode.txt" | grep -qx main || fail "$v $mode: no main in the server's stack"
    done
done
echo "PASS"
