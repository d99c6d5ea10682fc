#!/bin/bash
# `faultline core`: a crash log from the core dump of a program without
# libfaultline.  The core is real: gdb runs core_victim (main ->
# core_outer -> core_middle -> core_inner, a NULL store, while a second
# thread waits in core_sleeper_wait), stops at the SIGSEGV and writes the
# core with gcore at the fault, printing rip and rsp first.
#   convert  the log, through the shared reader: signal, code, address,
#            registers as gdb printed them, the crashing thread's frames
#            symbolicated in order down to main, the other thread's,
#            raw stack from rsp, objects with readelf's build ids, the
#            spool's installation id, CRASH_SOURCE core, atomic naming;
#            a core whose program moved away, converted with --obj (the
#            stacks of the file in place)
#   errors   garbage, a truncated core, an executable, no threads, another
#            architecture: exit 1, a message naming the file, no log left
#   e2e      the converted log and the same crash caught by the preloaded
#            libfaultline, submitted to a real `faultline serve`: one group
#   from_stdin  --from-kernel without the kernel: gdb holds the process at
#            its fault while the core goes in on stdin, as the kernel's
#            pipe does: executable and thread names from /proc, %t as the
#            time; a core over --max-core-mb, garbage, nothing: exit 1,
#            nothing left; a process running libfaultline: skipped
#   aarch64  an aarch64 core (qemu-user's, of the same program built
#            static for aarch64; skipped without aarch64-linux-gnu-gcc and
#            qemu-aarch64): the aarch64 registers, the frames down to main,
#            the other thread's; qemu's core lacks the program's pages, so
#            --exe names it
#   hostile  a core whose names are traps: the dynamic linker's list names
#            a FIFO for a library, and NT_FILE names the library, unlinked,
#            as "lib.so (deleted)", another FIFO.  Opening either would
#            wait forever (libdwfl's own module search did); the log comes
#            at once, the library named and with its build id; a program
#            named by blanks only gets the application name "unknown"
#   noheaders  a core without the ELF headers of the files (coredump_filter
#            0x3, as qemu-user's and some systems' cores are): the program,
#            libc and the dynamic linker are still objects with their build
#            ids, reported from NT_FILE, and the stack goes down to main
#   kernel   the real thing: core_pattern set to `|faultline core
#            --from-kernel ...` (saved and restored; RUN_SERIAL; skipped
#            where it is not writable), the program crashes by itself; and
#            again in a pid namespace of its own (thread names by the
#            namespace's ids), and in a chroot (its files looked up in its
#            root: the program's path there is nothing here)
# Environment (from CMake): FAULTLINE VICTIM CHECK PRELOAD.
set -u
CASE=${1:?case}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-core.XXXXXX")
PID=
cleanup() {
    [ -n "${KEEP:-}" ] && return # KEEP=1: leave $WORK for a look
    [ -n "${KEEP:-}" ] && return
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL [core_$CASE]: $*" >&2
    for f in "$WORK"/*.err "$WORK/err" "$WORK/gdb.txt"; do
        [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}
command -v gdb >/dev/null || fail "gdb is not installed (scripts/deps.sh installs it)"
unset DEBUGINFOD_URLS FAULTLINE_URL FAULTLINE_REPORTER
export ASAN_OPTIONS=detect_leaks=0

# fl_core ARGS: faultline core, with leak checks in the ASan build.
fl_core() { ASAN_OPTIONS=detect_leaks=1 "$FAULTLINE" core "$@"; }

# make_core [FILTER]: $WORK/core and GDB_RIP / GDB_RSP at the fault.
# FILTER: the program's coredump_filter (inherited from this subshell),
# which gcore honours.
make_core() {
    (cd "$WORK" && { [ -z "${1:-}" ] || echo "$1" >/proc/self/coredump_filter; } && timeout 120 gdb -batch -nx -iex "set debuginfod enabled off" \
        -ex "set pagination off" -ex run -ex "info registers rip rsp" \
        -ex "gcore $WORK/core" --args "$VICTIM" ${VICTIM_ARGS:-}) >"$WORK/gdb.txt" 2>&1
    grep -q 'SIGSEGV' "$WORK/gdb.txt" || fail "gdb did not see the SIGSEGV"
    [ -s "$WORK/core" ] || fail "gdb wrote no core"
    GDB_RIP=$(awk '$1 == "rip" {print $2}' "$WORK/gdb.txt")
    GDB_RSP=$(awk '$1 == "rsp" {print $2}' "$WORK/gdb.txt")
    [ -n "$GDB_RIP" ] && [ -n "$GDB_RSP" ] || fail "no rip/rsp in gdb's output"
}

# name_of OBJ ADDR: the function faultline symbolicate gives ADDR in OBJ.
name_of() { "$FAULTLINE" symbolicate --obj "$1" "$2" | head -1; }

# names_of FIELD [CHECK_OUT [PATH]]: the function names of the victim's frames of the
# crashing thread (FIELD frame) or of the other thread (tframe), in
# order; frames in other objects print as "-".  Return addresses (all but
# the crashing thread's first frame) are looked up at pc - 1.
names_of() {
    local field=$1 bias first=1 pc
    local out=${2:-$WORK/check.out} obj=${3:-$VICTIM}
    bias=$(awk -v exe="$obj" '$1 == "object" && $5 == exe {print $3}' "$out")
    [ -n "$bias" ] || fail "no object with the victim's path"
    for pc in $(awk -v f="$field" '$1 == f {print $2}' "$out"); do
        local a=$((pc - bias))
        [ "$field" = tframe ] || [ $first = 0 ] && a=$((a - 1))
        first=0
        # Outside the victim's first 64 KiB: another object's frame.
        if [ $a -lt 0 ] || [ $a -gt 65536 ]; then echo -; continue; fi
        name_of "$VICTIM" "$(printf '0x%x' $a)"
    done
}

build_id_of() { readelf -n "$1" | awk '/Build ID:/ {print $3; exit}'; }

# stack_holds LOG TEXT: whether the log's STACK lines hold TEXT.
stack_holds() {
    python3 -c 'import sys
d = b"".join(bytes.fromhex(l.split()[2]) for l in open(sys.argv[1]) if l.startswith("STACK "))
sys.exit(0 if sys.argv[2].encode() in d else 1)' "$1" "$2"
}

case $CASE in
convert)
    # An argument (the lowest of the strings above the main thread's
    # frames, so within the 32 KiB copied): never in the log.
    SECRET=core-arg-secret-$$
    VICTIM_ARGS=$SECRET make_core
    SPOOL=$WORK/spool
    fl_core "$WORK/core" --spool "$SPOOL" --app coreapp --app-version 1.2 \
        >"$WORK/core.path" 2>"$WORK/core.err" || fail "faultline core exit $?"
    LOG=$(cat "$WORK/core.path")
    [ -f "$LOG" ] || fail "printed '$LOG', not a file"
    case $LOG in "$SPOOL"/*.crashlog) ;; *) fail "log $LOG not in the spool as *.crashlog" ;; esac
    [ "$(ls -A "$SPOOL" | grep -v -e '\.crashlog$' -e '^installation-id$')" = "" ] ||
        fail "left in the spool: $(ls -A "$SPOOL")"
    "$CHECK" "$LOG" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    cat "$WORK/check.out" | grep -v -e '^tframe' -e '^frame' | head -40
    has() { grep -qxF "$1" "$WORK/check.out" || fail "the log lacks '$1'"; }
    has "signal 11 SIGSEGV"
    has "code 1"        # SEGV_MAPERR
    has "address 0x0"
    has "app coreapp"
    has "version 1.2"
    has "arch x86-64"
    has "exe $VICTIM"
    has "other CRASH_SOURCE core"
    has "reg rip $GDB_RIP"
    has "reg rsp $GDB_RSP"
    id=$(awk '$1 == "crash_id" {print $2}' "$WORK/check.out")
    [ "$LOG" = "$SPOOL/$id.crashlog" ] || fail "log named $LOG, crash id $id"
    echo "$id" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' ||
        fail "crash id $id is not a version-4 UUID"
    has "install_id $(head -c 36 "$SPOOL/installation-id")"
    # The crashing thread is gdb's "Thread 1", the process itself.
    pid=$(awk '$1 == "pid" {print $2}' "$WORK/check.out")
    has "crash_thread $pid"
    # The crashing thread: the fault, then the chain down to main.
    [ "$(awk '$1 == "frame" {print $2; exit}' "$WORK/check.out")" = "$GDB_RIP" ] ||
        fail "the first frame is not the faulting pc $GDB_RIP"
    names_of frame >"$WORK/names"
    echo "crashing thread: $(tr '\n' ' ' <"$WORK/names")"
    [ "$(grep -v '^-$' "$WORK/names" | head -4 | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "frames before main in other objects"
    # Past main: the C library's start-up, as libfaultline's log has it.
    [ "$(grep -c '^frame ' "$WORK/check.out")" -ge 6 ] || fail "the stack ends at main"
    # The other thread, blocked in pause() under core_sleeper_wait.
    [ "$(grep -c '^thread ' "$WORK/check.out")" = 1 ] || fail "not exactly one other thread"
    names_of tframe >"$WORK/tnames"
    echo "other thread: $(tr '\n' ' ' <"$WORK/tnames")"
    [ "$(grep -v '^-$' "$WORK/tnames" | head -2 | tr '\n' ' ')" = "core_sleeper_wait core_sleeper " ] ||
        fail "other thread's frames: $(tr '\n' ' ' <"$WORK/tnames")"
    [ "$(head -1 "$WORK/tnames")" = - ] || fail "the other thread's top frame is not in libc (pause)"
    # Raw stack from below rsp (the red zone), 32 KiB or up to the top.
    read -r _ lo bytes < <(grep '^stack ' "$WORK/check.out") || fail "no STACK lines"
    [ $((lo)) -le $((GDB_RSP)) ] && [ $((GDB_RSP - lo)) -le 192 ] || fail "stack starts at $lo, rsp $GDB_RSP"
    # The main thread's stack top is near: at least a KiB of it, at most 32.
    [ "$bytes" -ge 1024 ] && [ "$bytes" -le 32768 ] || fail "$bytes bytes of stack"
    # It ends below the program's arguments and environment.
    ! stack_holds "$LOG" "$SECRET" || fail "the log's STACK holds the program's argument"
    ! stack_holds "$LOG" "PATH=" || fail "the log's STACK holds the program's environment"
    # Objects: the victim and libc with the build ids readelf reads.
    for f in "$VICTIM" $(awk '$1 == "object" && $2 == "libc.so.6" {print $5}' "$WORK/check.out"); do
        want=$(build_id_of "$f")
        [ -n "$want" ] || fail "readelf shows no build id in $f"
        awk -v p="$f" '$1 == "object" && $5 == p {print $4}' "$WORK/check.out" | grep -qx "$want" ||
            fail "object $f: build id not $want"
    done
    grep -q '^object libc.so.6 ' "$WORK/check.out" || fail "no libc object"
    # Their sizes as the client writes them: to the end of the last
    # segment in the file, not of the page the core's memory ends on.
    for f in "$VICTIM" $(awk '$1 == "object" && $2 == "libc.so.6" {print $5}' "$WORK/check.out"); do
        want=$(readelf -lW "$f" | awk '$1 == "LOAD" {print $3, $6}' |
            while read -r v m; do echo $((v + m)); done | sort -n | tail -1)
        got=$(grep "^OBJECT $(basename "$f")/" "$LOG" | head -1 | cut -d/ -f3)
        [ "$got" = "$want" ] || fail "object $f: size $got, its segments end at $want"
    done
    # A second conversion: the same installation id, a new crash id.
    fl_core "$WORK/core" --spool "$SPOOL" >"$WORK/core2.path" 2>>"$WORK/core.err" || fail "second run"
    [ "$(ls "$SPOOL"/*.crashlog | wc -l)" = 2 ] || fail "two conversions, not two logs"
    "$CHECK" "$(cat "$WORK/core2.path")" >"$WORK/check2.out" || fail "second log rejected"
    grep -qxF "install_id $(head -c 36 "$SPOOL/installation-id")" "$WORK/check2.out" || fail "install id changed"
    grep -qx "app $(basename "$VICTIM")" "$WORK/check2.out" || fail "default app name is not the executable's"
    # -o FILE and standard output: the same log but for the crash id.
    fl_core "$WORK/core" -o "$WORK/o.crashlog" >/dev/null || fail "-o FILE"
    fl_core "$WORK/core" -o - >"$WORK/stdout.crashlog" || fail "-o -"
    diff <(grep -v -e '^CRASH_ID' -e '^CRASH_TIME' "$WORK/o.crashlog") \
        <(grep -v -e '^CRASH_ID' -e '^CRASH_TIME' "$WORK/stdout.crashlog") >/dev/null ||
        fail "-o FILE and -o - differ"
    # A core from another machine: the program is not where the core
    # names it.  Without it the stacks lose its CFI; given by --obj, they
    # are those of the file in place, and its path stays the core's.
    cp "$VICTIM" "$WORK/moved" || fail "copying the program"
    VICTIM_ARGS= VICTIM=$WORK/moved make_core
    fl_core "$WORK/core" -o "$WORK/inplace.crashlog" >/dev/null || fail "the moved program's core"
    mv "$WORK/moved" "$WORK/elsewhere"
    fl_core "$WORK/core" -o "$WORK/gone.crashlog" >/dev/null || fail "the core without its program"
    fl_core "$WORK/core" --obj "$WORK/elsewhere" -o "$WORK/obj.crashlog" >/dev/null 2>"$WORK/obj.err" ||
        fail "--obj: exit $?"
    [ -s "$WORK/obj.err" ] && fail "--obj: said $(cat "$WORK/obj.err")"
    stacks() { grep -e '^CALLSTACK' -e '^THREAD_FRAME' "$1"; }
    diff <(stacks "$WORK/obj.crashlog") <(stacks "$WORK/inplace.crashlog") >/dev/null ||
        fail "--obj: not the stacks the file in place gives"
    [ "$(stacks "$WORK/gone.crashlog" | wc -l)" -lt "$(stacks "$WORK/inplace.crashlog" | wc -l)" ] ||
        fail "the stacks are as long without the program's file: the test shows nothing"
    grep -q "^OBJECT_PATH $WORK/moved$" "$WORK/obj.crashlog" || fail "--obj: the program's path is not the core's"
    # The directory it is in, with its separate debug file beside it.
    mkdir -p "$WORK/build/sub" && mv "$WORK/elsewhere" "$WORK/build/sub/" &&
        objcopy --only-keep-debug "$WORK/build/sub/elsewhere" "$WORK/build/elsewhere.debug" ||
        fail "making the build directory"
    fl_core "$WORK/core" --obj "$WORK/build" -o "$WORK/objdir.crashlog" >/dev/null 2>"$WORK/obj.err" ||
        fail "--obj DIR: exit $?"
    diff <(stacks "$WORK/objdir.crashlog") <(stacks "$WORK/inplace.crashlog") >/dev/null ||
        fail "--obj DIR: not the stacks the file in place gives"
    mv "$WORK/build/sub/elsewhere" "$WORK/elsewhere"
    # An --obj of no module: said, and the log written; a missing or
    # non-ELF one: exit 1 before anything is written; with --from-kernel:
    # a usage error.
    fl_core "$WORK/core" --obj "$WORK/elsewhere" --obj "$WORK/o.crashlog" -o "$WORK/bad.crashlog" \
        >/dev/null 2>"$WORK/obj.err"
    [ $? = 1 ] && grep -qx "faultline core: --obj $WORK/o.crashlog: not an ELF file" "$WORK/obj.err" ||
        fail "--obj of a log: $(cat "$WORK/obj.err")"
    fl_core "$WORK/core" --obj "$WORK/none" -o "$WORK/bad.crashlog" >/dev/null 2>"$WORK/obj.err"
    [ $? = 1 ] && grep -qx "faultline core: --obj $WORK/none: No such file or directory" "$WORK/obj.err" ||
        fail "--obj of a missing file: $(cat "$WORK/obj.err")"
    [ -e "$WORK/bad.crashlog" ] && fail "a log was written beside a bad --obj"
    fl_core "$WORK/core" --obj "$WORK/elsewhere" --obj /bin/true -o "$WORK/obj2.crashlog" >/dev/null \
        2>"$WORK/obj.err" || fail "--obj /bin/true: exit $?"
    grep -q "warning: --obj /bin/true (build id $(build_id_of /bin/true)) was not used" "$WORK/obj.err" ||
        fail "--obj /bin/true: $(cat "$WORK/obj.err")"
    fl_core --from-kernel --spool "$WORK/k" --obj "$WORK/elsewhere" 1 1 11 0 x >/dev/null 2>"$WORK/obj.err"
    [ $? = 64 ] && grep -q 'not with --from-kernel' "$WORK/obj.err" || fail "--obj with --from-kernel: $(cat "$WORK/obj.err")"
    ;;
errors)
    SPOOL=$WORK/spool
    mkdir -p "$SPOOL"
    head -c 65536 /dev/urandom >"$WORK/garbage"
    printf '\177ELF' >"$WORK/elfish"
    make_core
    size=$(stat -c %s "$WORK/core")
    head -c $((size / 2)) "$WORK/core" >"$WORK/truncated"
    # The same core with another machine (EM_RISCV, 243) in e_machine.
    cp "$WORK/core" "$WORK/riscv"
    printf '\363\000' | dd of="$WORK/riscv" bs=1 seek=18 conv=notrunc 2>/dev/null
    : >"$WORK/empty"
    # The same core with its NT_PRSTATUS notes (the threads) made another type.
    python3 - "$WORK/core" "$WORK/nothreads" <<'PY' || fail "cannot make the thread-less core"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
phoff, = struct.unpack_from("<Q", b, 0x20)
phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
n = 0
for i in range(phnum):
    p = phoff + i * phentsize
    ptype, = struct.unpack_from("<I", b, p)
    if ptype != 4:  # PT_NOTE
        continue
    off, = struct.unpack_from("<Q", b, p + 8)
    size, = struct.unpack_from("<Q", b, p + 32)
    o = off
    while o + 12 <= off + size:
        namesz, descsz, ntype = struct.unpack_from("<III", b, o)
        if ntype == 1 and b[o + 12:o + 16] == b"CORE":  # NT_PRSTATUS
            struct.pack_into("<I", b, o + 8, 0x7fff)
            n += 1
        o += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
assert n == 2, n
open(sys.argv[2], "wb").write(b)
PY
    check_err() { # FILE WANT: exit 1, WANT in the message, nothing written
        fl_core "$WORK/$1" --spool "$SPOOL" >"$WORK/core.path" 2>"$WORK/err"
        local rc=$?
        [ $rc = 1 ] || fail "$1: exit $rc, want 1"
        grep -q "$WORK/$1: $2" "$WORK/err" || fail "$1: message '$(cat "$WORK/err")', want '$2'"
        [ ! -s "$WORK/core.path" ] || fail "$1: printed a log path"
        [ "$(ls -A "$SPOOL" | grep -v '^installation-id$')" = "" ] || fail "$1: left $(ls -A "$SPOOL")"
        fl_core "$WORK/$1" -o "$WORK/o.log" 2>/dev/null && fail "$1: -o succeeded"
        [ "$(ls "$WORK" | grep '^o\.log')" = "" ] || fail "$1: -o left $(ls "$WORK" | grep '^o\.log')"
        echo "ok: $1 -> $(cat "$WORK/err")"
    }
    check_err garbage "not an ELF core file"
    check_err elfish "not an ELF core file"
    check_err empty "not an ELF core file"
    check_err truncated "truncated core file"
    check_err riscv "core of an architecture this build cannot read"
    check_err nothreads "no threads in the core"
    cp "$VICTIM" "$WORK/program"
    check_err program "not an ELF core file"
    check_err nonexistent "cannot read the file"
    fl_core >/dev/null 2>&1; [ $? = 64 ] || fail "no argument: not exit 64"
    fl_core a b >/dev/null 2>&1; [ $? = 64 ] || fail "two cores: not exit 64"
    fl_core "$WORK/core" --spool "$SPOOL" -o x >/dev/null 2>&1
    [ $? = 64 ] || fail "--spool with -o: not exit 64"
    ;;
e2e)
    make_core
    fl_core "$WORK/core" --spool "$WORK/spool" --app coreapp --app-version 1.0 \
        >"$WORK/core.path" 2>"$WORK/core.err" || fail "faultline core exit $?"
    # The same crash caught by libfaultline, preloaded into the same program.
    # In the ASan build the preload library needs the ASan runtime first.
    pre=$PRELOAD
    if [ "${FAULTLINE_SANITIZE:-OFF}" = ON ]; then
        pre="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $PRELOAD"
        export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:verify_asan_link_order=0
    fi
    LD_PRELOAD=$pre FAULTLINE_SPOOL=$WORK/lfspool FAULTLINE_APP=coreapp FAULTLINE_VERSION=1.0 \
        "$VICTIM" 2>"$WORK/victim.err"
    rc=$?
    [ $rc = 139 ] || fail "preloaded victim exit $rc, want 139 (SIGSEGV)"
    LF=$(ls "$WORK"/lfspool/*.crashlog 2>/dev/null | head -1)
    [ -n "$LF" ] || fail "libfaultline wrote no log"
    FL=$FAULTLINE work=$WORK ADMIN=core-admin-$$ KEY=core-key-$$
    . "$(dirname "$0")/../lib/server.sh"
    export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
    start "$WORK/data"
    "$FAULTLINE" submit "$(cat "$WORK/core.path")" --server "$(url /api/v1/crashes)" --key "$KEY" \
        >"$WORK/submit.out" 2>"$WORK/submit.err" || fail "submit of the converted log"
    got=$(wait_counts coreapp 1)
    [ "$got" = 1 ] || fail "converted log: group counts '$got', want '1'"
    "$FAULTLINE" submit "$LF" --server "$(url /api/v1/crashes)" --key "$KEY" \
        >>"$WORK/submit.out" 2>>"$WORK/submit.err" || fail "submit of libfaultline's log"
    got=$(wait_counts coreapp 2)
    [ "$got" = 2 ] || fail "both logs: group counts '$got', want '2' (one group)"
    api "/api/v1/groups?app=coreapp" >"$WORK/groups.json" || fail "groups"
    python3 - "$WORK/groups.json" <<'PY' || fail "the group"
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
assert len(g) == 1, g
sig = g[0]["signature"]
print("signature:", sig)
# Symbolicated, from the crashing function down.
assert sig.index("core_inner") < sig.index("core_middle") < sig.index("core_outer"), sig
PY
    # The converted crash says where it came from.
    id=$(basename "$(cat "$WORK/core.path")" .crashlog)
    wait_processed "$id" "$WORK/crash.json"
    python3 - "$WORK/crash.json" <<'PY' || fail "CRASH_SOURCE in the API"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["metadata"]["other"].get("CRASH_SOURCE") == "core", c["metadata"]["other"]
PY
    ;;
from_stdin)
    SPOOL=$WORK/spool
    # gdb stops the program at its fault and writes its core; then, with
    # the process still there as the kernel keeps it, the core goes to
    # --from-kernel on stdin.  In gdb's shell, $PPID is gdb: its child is
    # the program.
    (cd "$WORK" && timeout 120 gdb -batch -nx -iex "set debuginfod enabled off" \
        -ex "set pagination off" -ex run -ex "gcore $WORK/core" \
        -ex "shell pid=\$(pgrep -P \$PPID -x core_victim); echo \$pid >$WORK/pid; t=\$((\$(date +%s) + 100)); echo \$t >$WORK/t; $FAULTLINE core --from-kernel --spool $SPOOL --app-version 3 \$pid \$pid 11 \$t core victim <$WORK/core >$WORK/core.path 2>$WORK/core.err; echo \$? >$WORK/rc" \
        --args "$VICTIM") >"$WORK/gdb.txt" 2>&1
    [ "$(cat "$WORK/rc" 2>/dev/null)" = 0 ] || fail "faultline core --from-kernel exit $(cat "$WORK/rc" 2>/dev/null)"
    pid=$(cat "$WORK/pid")
    LOG=$(cat "$WORK/core.path")
    case $LOG in "$SPOOL"/*.crashlog) ;; *) fail "log '$LOG' not in the spool" ;; esac
    [ "$(ls -A "$SPOOL" | grep -v -e '\.crashlog$' -e '^installation-id$')" = "" ] ||
        fail "left in the spool: $(ls -A "$SPOOL")"
    "$CHECK" "$LOG" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    has() { grep -qxF "$1" "$WORK/check.out" || fail "the log lacks '$1'"; }
    has "exe $VICTIM"            # /proc/PID/exe
    has "app $(basename "$VICTIM")"
    has "version 3"
    has "time $(cat "$WORK/t")"  # %t
    # The process started a second or so before now, and %t says the
    # crash is 100 s after now: it ran ~100 s (from /proc/PID/stat).
    up=$(awk '$1 == "uptime" {print $2}' "$WORK/check.out")
    [ -n "$up" ] && [ "$up" -ge 99 ] && [ "$up" -le 130 ] || fail "uptime '$up', want about 100"
    has "pid $pid"
    has "thread_name core_victim"
    grep -q '^thread [0-9]* sleeper$' "$WORK/check.out" || fail "the other thread's name is not 'sleeper'"
    has "signal 11 SIGSEGV"
    names_of frame >"$WORK/names"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    # Refused: a core over the bound, garbage, nothing; nothing left behind.
    kernel_err() { # WANT INPUT [options...]
        local want=$1 input=$2
        shift 2
        fl_core --from-kernel --spool "$SPOOL" "$@" $$ $$ 11 1700000000 bash <"$input" \
            >"$WORK/out2" 2>"$WORK/err"
        local rc=$?
        [ $rc = 1 ] || fail "--from-kernel ($want): exit $rc, want 1"
        grep -q "$want" "$WORK/err" || fail "--from-kernel: '$(cat "$WORK/err")', want '$want'"
        [ "$(ls -A "$SPOOL" | grep -v -e '^installation-id$' | grep -vxF "$(basename "$LOG")")" = "" ] ||
            fail "--from-kernel ($want) left $(ls -A "$SPOOL")"
        echo "ok: $(cat "$WORK/err")"
    }
    kernel_err "larger than 1 MiB" "$WORK/core" --max-core-mb 1
    head -c 65536 /dev/urandom >"$WORK/garbage"
    kernel_err "process $$'s core: not an ELF core file" "$WORK/garbage"
    kernel_err "no core on standard input" /dev/null
    # Started by the kernel, stderr is closed: the reason goes to the
    # kernel's log (where /dev/kmsg can be written and dmesg read).
    if [ -w /dev/kmsg ] && dmesg >/dev/null 2>&1; then
        tag="process $$'s core: not an ELF core file"
        fl_core --from-kernel --spool "$SPOOL" $$ $$ 11 1700000000 bash <"$WORK/garbage" >/dev/null 2>&-
        dmesg | tail -n 50 | grep -qF "faultline core: $tag" || fail "not in the kernel's log: $tag"
        echo "ok: in the kernel's log: $tag"
    else
        echo "skipped: /dev/kmsg or dmesg not usable here"
    fi
    # A process that runs libfaultline logged its crash itself: skipped.
    pre=$PRELOAD
    if [ "${FAULTLINE_SANITIZE:-OFF}" = ON ]; then
        pre="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $PRELOAD"
        export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
    fi
    LD_PRELOAD=$pre FAULTLINE_SPOOL=$WORK/lfspool sleep 60 &
    spid=$!
    for _ in $(seq 50); do grep -q libfaultline "/proc/$spid/maps" 2>/dev/null && break; sleep 0.1; done
    fl_core --from-kernel --spool "$SPOOL" $spid $spid 11 1700000000 sleep <"$WORK/core" \
        >"$WORK/out2" 2>"$WORK/err"
    rc=$?
    kill $spid; wait $spid 2>/dev/null
    [ $rc = 0 ] || fail "libfaultline process: exit $rc, want 0"
    grep -q "runs libfaultline" "$WORK/err" || fail "libfaultline process: '$(cat "$WORK/err")'"
    [ "$(ls "$SPOOL"/*.crashlog | wc -l)" = 1 ] || fail "a log for a process running libfaultline"
    # The same for a program linked with the static library: no
    # libfaultline*.so in its maps, faultline_install in its program.
    FAULTLINE_SPOOL=$WORK/lfspool "$LFSLEEP" >"$WORK/lf.out" &
    spid=$!
    for _ in $(seq 50); do grep -q installed "$WORK/lf.out" 2>/dev/null && break; sleep 0.1; done
    grep -q libfaultline "/proc/$spid/maps" && fail "core_lfsleep maps a libfaultline*.so"
    fl_core --from-kernel --spool "$SPOOL" $spid $spid 11 1700000000 core_lfsleep <"$WORK/core" \
        >"$WORK/out2" 2>"$WORK/err"
    rc=$?
    kill $spid; wait $spid 2>/dev/null
    [ $rc = 0 ] && grep -q "runs libfaultline" "$WORK/err" ||
        fail "static libfaultline process: exit $rc, '$(cat "$WORK/err")'"
    [ "$(ls "$SPOOL"/*.crashlog | wc -l)" = 1 ] || fail "a log for a process running the static libfaultline"
    # Usage.
    fl_core --from-kernel $$ 1 2 3 x </dev/null >/dev/null 2>&1
    [ $? = 64 ] || fail "--from-kernel without --spool: not 64"
    fl_core --from-kernel --spool "$SPOOL" $$ 1 2 </dev/null >/dev/null 2>&1
    [ $? = 64 ] || fail "--from-kernel with 3 operands: not 64"
    ;;
hostile)
    H=$WORK/h
    mkdir -p "$H"
    LIBM=$(ldconfig -p | awk '$1 == "libm.so.6" && /x86-64/ {print $NF; exit}')
    [ -f "$LIBM" ] || fail "no libm.so.6 for x86-64 in ldconfig -p"
    cp "$LIBM" "$H/lib.so" && mkfifo "$H/fifo" "$H/lib.so (deleted)" || fail "setting up $H"
    CORE_VICTIM_HOSTILE=$H make_core
    [ -e "$H/lib.so" ] && fail "the program did not unlink $H/lib.so"
    strings "$WORK/core" | grep -qxF "$H/lib.so (deleted)" || fail "NT_FILE does not name the FIFO"
    ASAN_OPTIONS=detect_leaks=1 timeout 60 "$FAULTLINE" core "$WORK/core" -o "$WORK/h.crashlog" \
        >/dev/null 2>"$WORK/core.err"
    rc=$?
    [ $rc = 124 ] && fail "faultline core waited a minute: it opened a FIFO the core names"
    [ $rc = 0 ] || fail "faultline core exit $rc"
    "$CHECK" "$WORK/h.crashlog" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    grep -E '^(object|frame)' "$WORK/check.out"
    # The library, by the name it was loaded as, with the build id of the
    # file it was a copy of (from the core's memory: the file is gone).
    awk -v p="$H/lib.so" '$1 == "object" && $5 == p {print $4}' "$WORK/check.out" |
        grep -qx "$(build_id_of "$LIBM")" || fail "no object $H/lib.so with libm's build id"
    names_of frame >"$WORK/names"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    # A program named by blanks only: the reader would trim its name to
    # nothing and refuse the log for want of an APPLICATION_NAME.
    cp "$VICTIM" "$H/  " || fail "copying the program"
    VICTIM="$H/  " make_core
    fl_core "$WORK/core" -o "$WORK/b.crashlog" >/dev/null 2>"$WORK/core.err" || fail "blank name: exit $?"
    "$CHECK" "$WORK/b.crashlog" >"$WORK/b.out" 2>"$WORK/check.err" || fail "the reader rejects the blank-named log"
    grep -qx "app unknown" "$WORK/b.out" || fail "blank name: $(grep '^app' "$WORK/b.out")"
    ;;
noheaders)
    make_core 0x3
    "$FAULTLINE" core "$WORK/core" -o "$WORK/n.crashlog" >/dev/null 2>"$WORK/core.err" ||
        fail "faultline core exit $?"
    "$CHECK" "$WORK/n.crashlog" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    grep -E '^(object|frame)' "$WORK/check.out"
    loads=$(readelf -lW "$WORK/core" | awk '$1 == "LOAD" {print $3}')
    for n in "$(basename "$VICTIM")" libc.so.6 ld-linux-x86-64.so.2; do
        line=$(awk -v n="$n" '$1 == "object" && $2 == n' "$WORK/check.out")
        [ -n "$line" ] || fail "no object $n"
        read -r _ _ at id path <<<"$line"
        # The case under test: the core holds no page where the file starts.
        echo "$loads" | grep -qi "^0x0*${at#0x}\$" && fail "gcore dumped $n's first page: not the case tested"
        [ "$id" = "$(build_id_of "$path")" ] || fail "object $n: build id $id, readelf says $(build_id_of "$path")"
    done
    names_of frame >"$WORK/names"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    ;;
aarch64)
    command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null || {
        echo "SKIP: no aarch64-linux-gnu-gcc or qemu-aarch64"
        exit 77
    }
    SRC=$(cd "$(dirname "$0")/../.." && pwd)
    A64=$WORK/victim_a64
    aarch64-linux-gnu-gcc -O2 -g -static -pthread "$SRC/tests/core/core_victim.c" -o "$A64" ||
        fail "cross-compiling the program"
    # qemu-user writes the guest's core (qemu_NAME_DATE-PID.core) itself.
    (cd "$WORK" && ulimit -c unlimited && exec qemu-aarch64 "$A64") 2>/dev/null
    rc=$?
    [ $rc = 139 ] || fail "the aarch64 program's exit status $rc, want 139"
    CORE=$(ls "$WORK"/qemu_*.core 2>/dev/null | head -1)
    [ -n "$CORE" ] || fail "qemu wrote no core"
    fl_core "$CORE" --exe "$A64" -o "$WORK/a64.crashlog" >/dev/null 2>"$WORK/core.err" ||
        fail "faultline core exit $?"
    "$CHECK" "$WORK/a64.crashlog" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    has() { grep -qxF "$1" "$WORK/check.out" || fail "the log lacks '$1'"; }
    has "arch aarch64"
    has "signal 11 SIGSEGV"
    has "exe $A64"
    # The client's names, in its order: x0..x30, sp, pc.
    [ "$(awk '$1 == "reg" {printf "%s ", $2}' "$WORK/check.out")" = \
      "x0 x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 x15 x16 x17 x18 x19 x20 x21 x22 x23 x24 x25 x26 x27 x28 x29 x30 sp pc " ] ||
        fail "registers: $(awk '$1 == "reg" {printf "%s ", $2}' "$WORK/check.out")"
    pc=$(awk '$1 == "reg" && $2 == "pc" {print $3}' "$WORK/check.out")
    [ "$(awk '$1 == "frame" {print $2; exit}' "$WORK/check.out")" = "$pc" ] || fail "the first frame is not pc $pc"
    [ "$(name_of "$A64" "$pc")" = core_inner ] || fail "pc $pc is not in core_inner"
    # A static ET_EXEC: bias 0, frames are file addresses.
    names=
    first=1
    for f in $(awk '$1 == "frame" {print $2}' "$WORK/check.out" | head -4); do
        a=$((f)); [ $first = 1 ] || a=$((a - 1)); first=0
        names="$names$(name_of "$A64" "$(printf '0x%x' $a)") "
    done
    [ "$names" = "core_inner core_middle core_outer main " ] || fail "frames: $names"
    tnames=
    for f in $(awk '$1 == "tframe" {print $2}' "$WORK/check.out" | sed -n 2,3p); do
        tnames="$tnames$(name_of "$A64" "$(printf '0x%x' $((f - 1)))") "
    done
    [ "$tnames" = "core_sleeper_wait core_sleeper " ] || fail "other thread: $tnames"
    grep -q "^object victim_a64 0x0 [0-9a-f]* $A64\$" "$WORK/check.out" || fail "no object for the program"
    ;;
kernel)
    PAT=/proc/sys/kernel/core_pattern
    old=$(cat "$PAT")
    # Writable for real (root, and /proc/sys not read-only): write back
    # what is there.
    if [ ! -w "$PAT" ] || ! printf '%s\n' "$old" >"$PAT" 2>/dev/null; then
        echo "SKIP: $PAT is not writable here (needs root outside a read-only /proc/sys)"
        exit 77
    fi
    LIM=/proc/sys/kernel/core_pipe_limit
    oldlim=$(cat "$LIM")
    restore() { printf '%s\n' "$old" >"$PAT"; printf '%s\n' "$oldlim" >"$LIM"; }
    trap 'restore; cleanup' EXIT
    # Non-zero: the kernel reaps a crashed process only once its
    # core_pattern program has exited, so the log is there when `wait`
    # returns.
    printf '4\n' >"$LIM" || fail "cannot set $LIM"
    SPOOL=$WORK/k
    mkdir -p "$SPOOL"
    line="|$FAULTLINE core --from-kernel --spool $SPOOL %P %i %s %t %e"
    # The kernel keeps 127 bytes of the pattern.
    [ ${#line} -lt 128 ] || fail "core_pattern line of ${#line} bytes (the kernel keeps 127): $line"
    printf '%s\n' "$line" >"$PAT" || fail "cannot set $PAT"
    # A piped core_pattern gets the core even under ulimit -c 0.
    ulimit -c 0
    "$VICTIM" &
    vpid=$!
    wait $vpid
    rc=$?
    # The same crash under the preloaded libfaultline: its own log only.
    pre=$PRELOAD
    if [ "${FAULTLINE_SANITIZE:-OFF}" = ON ]; then
        pre="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $PRELOAD"
        export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:verify_asan_link_order=0
    fi
    LD_PRELOAD=$pre FAULTLINE_SPOOL=$WORK/lfspool "$VICTIM" 2>/dev/null &
    lpid=$!
    wait $lpid
    lrc=$?
    # The program in a pid namespace of its own, as in a container: the
    # core has the namespace's thread ids, /proc here others.  (sh stays
    # its pid 1, the program is 2.)
    ns=
    if unshare --pid --fork true 2>/dev/null; then
        ns=1
        unshare --pid --fork sh -c "\"$VICTIM\"; exit 0"
    fi
    # And in a root of its own (a chroot; a container's is one): the core
    # names its files as the program saw them, and /cv/core_victim and
    # /cvlib/libc.so.6 are nothing here.  The program and its libraries
    # are copied in, the dynamic linker where the program names it.
    R=$WORK/root
    mkdir -p "$R/cv" "$R/cvlib" && cp "$VICTIM" "$R/cv/core_victim" || fail "making $R"
    for lib in $(ldd "$VICTIM" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
        cp "$lib" "$R/cvlib/" || fail "copying $lib into $R"
    done
    interp=$(readelf -lW "$VICTIM" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
    mkdir -p "$R$(dirname "$interp")" && cp "$interp" "$R$interp" || fail "copying $interp into $R"
    LD_LIBRARY_PATH=/cvlib chroot "$R" /cv/core_victim
    restore
    [ $rc = 139 ] || fail "the program's exit status $rc, want 139 (SIGSEGV, core dumped)"
    [ $lrc = 139 ] || fail "the preloaded program's exit status $lrc, want 139"
    # Other processes that crashed meanwhile may have logs there too.
    LOG=$(grep -lx "PROCESS_ID $vpid" "$SPOOL"/*.crashlog 2>/dev/null | head -1)
    [ -n "$LOG" ] || fail "no log of process $vpid in the spool: $(ls -A "$SPOOL")"
    "$CHECK" "$LOG" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    cat "$WORK/check.out" | grep -v -e '^tframe' -e '^frame' -e '^reg' | head -30
    has() { grep -qxF "$1" "$WORK/check.out" || fail "the log lacks '$1'"; }
    has "signal 11 SIGSEGV"
    has "exe $VICTIM"
    has "other CRASH_SOURCE core"
    has "crash_thread $vpid"
    # It ran a tenth of a second (the kernel's %t and /proc/PID/stat).
    up=$(awk '$1 == "uptime" {print $2}' "$WORK/check.out")
    [ -n "$up" ] && [ "$up" -le 60 ] || fail "uptime '$up', want 0 to 60 s"
    grep -q '^thread [0-9]* sleeper$' "$WORK/check.out" || fail "the other thread's name is not 'sleeper'"
    names_of frame >"$WORK/names"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    if [ -n "$ns" ]; then
        nslog=
        for f in "$SPOOL"/*.crashlog; do
            "$CHECK" "$f" >"$WORK/ns.out" 2>/dev/null || continue
            grep -qxF "exe $VICTIM" "$WORK/ns.out" && grep -qx "pid 2" "$WORK/ns.out" && nslog=$f && break
        done
        [ -n "$nslog" ] || fail "no log of the program as process 2 of its pid namespace"
        grep -q '^thread [0-9]* sleeper$' "$WORK/ns.out" ||
            fail "in a pid namespace, the other thread's name is lost: $(grep '^thread ' "$WORK/ns.out")"
    else
        echo "note: no pid namespaces here (unshare --pid fails): that part not run"
    fi
    crlog=
    for f in "$SPOOL"/*.crashlog; do
        "$CHECK" "$f" >"$WORK/cr.out" 2>/dev/null || continue
        grep -qxF "exe /cv/core_victim" "$WORK/cr.out" && crlog=$f && break
    done
    [ -n "$crlog" ] || fail "no log of the program in the chroot, named /cv/core_victim"
    # Unwound with the CFI of the files in its root.
    names_of frame "$WORK/cr.out" /cv/core_victim >"$WORK/names"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "core_inner core_middle core_outer main " ] ||
        fail "in a chroot, the crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    grep -q '^object libc.so.6 0x[0-9a-f]* [0-9a-f]* /cvlib/libc.so.6$' "$WORK/cr.out" ||
        fail "in a chroot, no libc object as /cvlib/libc.so.6"
    # The other thread waits in libc: unwound out of it with libc's CFI.
    names_of tframe "$WORK/cr.out" /cv/core_victim >"$WORK/tnames"
    [ "$(head -3 "$WORK/tnames" | tr '\n' ' ')" = "- core_sleeper_wait core_sleeper " ] ||
        fail "in a chroot, the other thread's frames: $(tr '\n' ' ' <"$WORK/tnames")"
    ls "$WORK"/lfspool/*.crashlog >/dev/null 2>&1 || fail "libfaultline wrote no log"
    for f in "$SPOOL"/*.crashlog; do
        grep -qx "PROCESS_ID $lpid" "$f" && fail "a core log of the process that ran libfaultline"
    done
    [ "$(ls -A "$SPOOL" | grep '^\.core-')" = "" ] || fail "cores left in the spool: $(ls -A "$SPOOL")"
    ;;
*) fail "unknown case" ;;
esac
echo "PASS core_$CASE"
