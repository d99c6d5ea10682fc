#!/bin/bash
# `faultline minidump`: a crash log from a real Breakpad minidump.  There is
# no Breakpad in Debian: the npm package minidump@0.26.0 carries Breakpad's
# Linux client source and prebuilt x86-64 tools (minidump_dump,
# minidump_stackwalk).  It is fetched once into $MD_CACHE (npm pack), and
# md_victim.cc is built there with Breakpad's ExceptionHandler from those
# sources (g++; once per build tree).  md_victim crashes (main -> md_outer
# -> md_middle -> md_inner, a NULL store, while a thread "sleeper" waits in
# md_sleeper_wait) and Breakpad writes a real minidump.  Nothing of
# Breakpad's is compiled into Faultline: it only makes the test's inputs.
#   convert  the log, through the shared reader: signal, code, address,
#            crashing thread id and registers as minidump_dump prints them,
#            frames symbolicated down to main, the other thread's, the raw
#            stack, objects with readelf's build ids; the module list, the
#            crashing thread and the top frame as minidump_stackwalk (the
#            peer) reads them; the spool's installation id, atomic naming,
#            -o FILE and -o -, --no-unwind; the dump with its files out of
#            reach (frame pointers, the pc first, no bias), then given by
#            --obj (the stacks and biases of the files in place)
#   serve    the dump posted as Crashpad and Breakpad post it
#            (upload_file_minidump, prod, ver, guid) to a real `faultline
#            serve`: one crash whose id is the dump's hash, the worker's
#            unwind and symbolication down to main, a resend counted once,
#            a gzip'd body with the fields in the query, a cut dump refused
#            alone and named beside a good log
#   errors   garbage, empty, truncated, a stream RVA past the end, an
#            unknown CPU, another OS: exit 1, a message naming the file,
#            nothing left in the spool or beside -o FILE; usage: exit 64
# There is no aarch64 case: Breakpad's dumper ptraces the crashed
# process's threads, which qemu-user does not emulate, so md_victim built
# for aarch64 writes no dump under qemu-aarch64.  md_synth.c checks the
# ARM64 contexts on dumps made byte by byte instead.
# Environment (from CMake): FAULTLINE CHECK MD_CACHE.
set -u
CASE=${1:?case}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-md.XXXXXX")
cleanup() {
    # A server the case started (tests/lib/server.sh's PID) ends with it.
    [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [ -n "${KEEP:-}" ] && return # KEEP=1: leave $WORK for a look
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL [minidump_$CASE]: $*" >&2
    for f in "$WORK"/*.err "$WORK/err"; do
        [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}
skip() {
    echo "SKIP [minidump_$CASE]: $*" >&2
    exit 77
}
unset DEBUGINFOD_URLS FAULTLINE_URL FAULTLINE_REPORTER
export ASAN_OPTIONS=detect_leaks=0
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${MD_CACHE:?MD_CACHE}
PKG=$CACHE/package
BP=$PKG/deps/breakpad/src
TOOLS=$PKG/bin/linux-x64

# fl_md ARGS: faultline minidump, with leak checks in the ASan build.
fl_md() { ASAN_OPTIONS=detect_leaks=1 "$FAULTLINE" minidump "$@"; }

# The package, once: npm pack into the cache.  The lock is held until the
# case ends, so that cases run in parallel fetch and build only once.
fetch() {
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    if [ ! -x "$TOOLS/minidump_dump" ]; then
        command -v npm >/dev/null || skip "npm is not installed (scripts/deps.sh installs nodejs/npm)"
        (cd "$CACHE" && timeout 180 npm pack --silent minidump@0.26.0) >"$WORK/npm.err" 2>&1 ||
            skip "the npm registry is unreachable: $(tail -n 3 "$WORK/npm.err" | tr '\n' ' ')"
        tar -xzf "$CACHE/minidump-0.26.0.tgz" -C "$CACHE" || fail "cannot unpack minidump-0.26.0.tgz"
        chmod +x "$TOOLS"/* 2>/dev/null
    fi
    [ -x "$TOOLS/minidump_dump" ] && [ -d "$BP/client/linux/handler" ] ||
        fail "the npm package has no Breakpad sources or tools"
}

# Breakpad's Linux ExceptionHandler: the client library's files
# (breakpad's Makefile.am, src_client_linux_libbreakpad_client_a_SOURCES,
# less the parts the handler does not call).
BP_SRCS="client/linux/crash_generation/crash_generation_client.cc
client/linux/dump_writer_common/thread_info.cc
client/linux/dump_writer_common/ucontext_reader.cc
client/linux/handler/exception_handler.cc
client/linux/handler/minidump_descriptor.cc
client/linux/log/log.cc
client/linux/microdump_writer/microdump_writer.cc
client/linux/minidump_writer/linux_dumper.cc
client/linux/minidump_writer/linux_ptrace_dumper.cc
client/linux/minidump_writer/minidump_writer.cc
client/linux/minidump_writer/pe_file.cc
client/minidump_file_writer.cc
common/convert_UTF.cc
common/string_conversion.cc
common/linux/elfutils.cc
common/linux/file_id.cc
common/linux/guid_creator.cc
common/linux/linux_libc_support.cc
common/linux/memory_mapped_file.cc
common/linux/safe_readlink.cc
common/linux/breakpad_getcontext.S"

# build_victim NAME CXX: $CACHE/NAME, md_victim.cc with Breakpad, once.
build_victim() {
    local name=$1 cxx=$2 out=$CACHE/$1 objs=$CACHE/obj-$1
    if [ ! -x "$out" ] || [ "$HERE/md_victim.cc" -nt "$out" ]; then
        mkdir -p "$objs"
        # Two compilers at a time: the machine is shared.
        echo "$BP_SRCS" | xargs -P 2 -I{} sh -c \
            "o=$objs/\$(echo {} | tr / _).o; [ -s \$o ] || $cxx -c -O1 -g -w -I$BP -I$PKG/deps -o \$o $BP/{}" \
            >"$WORK/build.err" 2>&1 || fail "building Breakpad's client with $cxx"
        $cxx -O2 -g -fno-omit-frame-pointer -I"$BP" -I"$PKG/deps" -o "$out.tmp" "$HERE/md_victim.cc" \
            "$objs"/*.o -lpthread >>"$WORK/build.err" 2>&1 || fail "linking md_victim with $cxx"
        mv "$out.tmp" "$out"
    fi
}

# make_dump: $WORK/dump.dmp from a real crash of $VICTIM.
make_dump() {
    mkdir -p "$WORK/dumps"
    "$@" "$WORK/dumps" ${MD_ARGS:-} >"$WORK/victim.out" 2>"$WORK/victim.err"
    local rc=$?
    [ $rc = 139 ] || fail "md_victim exit $rc, want 139 (SIGSEGV)"
    local d
    d=$(head -1 "$WORK/victim.out")
    [ -s "$d" ] || fail "Breakpad wrote no minidump ('$d')"
    mv "$d" "$WORK/dump.dmp"
}

# name_of OBJ ADDR: the function faultline symbolicate gives ADDR in OBJ.
name_of() { "$FAULTLINE" symbolicate --obj "$1" "$2" | head -1; }

# names_of FIELD: the function names of the victim's frames of the crashing
# thread (frame) or of the other thread (tframe), in order; frames in other
# objects print as "-".  Return addresses are looked up at pc - 1.
names_of() {
    local field=$1 bias first=1 pc
    bias=$(awk -v exe="$VICTIM" '$1 == "object" && $5 == exe {print $3}' "$WORK/check.out")
    case $bias in 0x*) ;; *) fail "no object with the victim's path and a bias ('$bias')" ;; esac
    for pc in $(awk -v f="$field" '$1 == f {print $2}' "$WORK/check.out"); do
        local a=$((pc - bias))
        [ "$field" = tframe ] || [ $first = 0 ] && a=$((a - 1))
        first=0
        if [ $a -lt 0 ] || [ $a -gt 1048576 ]; then echo -; continue; fi
        name_of "$VICTIM" "$(printf '0x%x' $a)"
    done
}

build_id_of() { readelf -n "$1" | awk '/Build ID:/ {print $3; exit}'; }

# md_exception: the exception stream's lines and its context's, as KEY VALUE.
md_exception() {
    "$TOOLS/minidump_dump" "$WORK/dump.dmp" 2>/dev/null |
        awk '/^MDException/ {on = 1} on && /^$/ {n++} on && n < 2 && NF == 3 && $2 == "=" {print $1, $3}'
}

case $CASE in
convert)
    fetch
    build_victim md_victim g++
    VICTIM=$CACHE/md_victim
    # An argument: in the dump (Breakpad copies the main thread's stack to
    # its top), never in the log made of it.
    SECRET=md-arg-secret-$$
    MD_ARGS=$SECRET make_dump "$VICTIM"
    grep -qaF "$SECRET" "$WORK/dump.dmp" || fail "the dump does not hold the victim's argument"
    SPOOL=$WORK/spool
    fl_md "$WORK/dump.dmp" --spool "$SPOOL" --app mdapp --app-version 1.2 \
        >"$WORK/md.path" 2>"$WORK/md.err" || fail "faultline minidump exit $?"
    LOG=$(cat "$WORK/md.path")
    [ -f "$LOG" ] || fail "printed '$LOG', not a file"
    case $LOG in "$SPOOL"/*.crashlog) ;; *) fail "log $LOG not in the spool as *.crashlog" ;; esac
    [ "$(ls -A "$SPOOL" | grep -v -e '\.crashlog$' -e '^installation-id$')" = "" ] ||
        fail "left in the spool: $(ls -A "$SPOOL")"
    "$CHECK" "$LOG" >"$WORK/check.out" 2>"$WORK/check.err" || fail "the reader rejects the log"
    grep -v -e '^tframe' -e '^frame' -e '^reg' "$WORK/check.out" | head -30
    has() { grep -qxF "$1" "$WORK/check.out" || fail "the log lacks '$1'"; }
    has "signal 11 SIGSEGV"
    has "code 1" # SEGV_MAPERR
    has "address 0x0"
    has "app mdapp"
    has "version 1.2"
    has "arch x86-64"
    has "exe $VICTIM"
    has "other CRASH_SOURCE minidump"
    has "install_id $(head -c 36 "$SPOOL/installation-id")"
    id=$(awk '$1 == "crash_id" {print $2}' "$WORK/check.out")
    [ "$LOG" = "$SPOOL/$id.crashlog" ] || fail "log named $LOG, crash id $id"
    python3 -c 'import sys
d = b"".join(bytes.fromhex(l.split()[2]) for l in open(sys.argv[1]) if l.startswith("STACK "))
assert len(d) > 0, "no STACK"
sys.exit(1 if sys.argv[2].encode() in d or b"PATH=" in d else 0)' "$LOG" "$SECRET" ||
        fail "the log's STACK holds the program's arguments or environment"

    # The exception stream as minidump_dump (Breakpad's own reader) prints it.
    md_exception >"$WORK/exc"
    [ -s "$WORK/exc" ] || fail "minidump_dump printed no exception stream"
    val() { awk -v k="$1" '$1 == k {print $2; exit}' "$WORK/exc"; }
    has "crash_thread $(($(val thread_id)))"
    has "signal $(($(val exception_record.exception_code))) SIGSEGV"
    has "code $(($(val exception_record.exception_flags)))"
    has "address $(val exception_record.exception_address)"
    # The process: Breakpad's /proc/PID/status stream; the crash is in main's thread.
    has "pid $(($(val thread_id)))"
    has "thread_name $(basename "$VICTIM")"
    for r in rax rdx rcx rbx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip; do
        want=$(val "$r")
        [ -n "$want" ] || fail "minidump_dump printed no $r"
        has "reg $r $want"
    done
    [ "$(grep -c '^reg ' "$WORK/check.out")" = 17 ] || fail "not the client's 17 registers"
    RIP=$(val rip) RSP=$(val rsp)

    # The peer's view: minidump_stackwalk's machine-readable output.
    "$TOOLS/minidump_stackwalk" -m "$WORK/dump.dmp" >"$WORK/sw.out" 2>/dev/null ||
        fail "minidump_stackwalk failed"
    # Crash|reason|address|thread index: the crashing thread is the first
    # in the dump's list, whose id minidump_dump prints first.
    idx=$(awk -F'|' '$1 == "Crash" {print $4}' "$WORK/sw.out")
    tid0=$("$TOOLS/minidump_dump" "$WORK/dump.dmp" 2>/dev/null | awk '$1 == "thread_id" {print $3}' | sed -n "$((idx + 1))p")
    has "crash_thread $((tid0))"
    # Module|name|version|debug file|debug id|base|max|main: the same
    # objects at the same places, the main one first.
    awk -F'|' '$1 == "Module" {print $2, $6}' "$WORK/sw.out" |
        while read -r n b; do echo "$n $((b))"; done | sort >"$WORK/sw.mods"
    "$FAULTLINE" minidump "$WORK/dump.dmp" -o - 2>/dev/null |
        awk '$1 == "OBJECT" {n = split($2, f, "/"); print f[1], f[2]}' | sort >"$WORK/fl.mods"
    [ -s "$WORK/sw.mods" ] || fail "minidump_stackwalk listed no modules"
    diff "$WORK/sw.mods" "$WORK/fl.mods" >"$WORK/mods.err" || fail "modules differ from minidump_stackwalk's"
    main=$(awk -F'|' '$1 == "Module" && $8 == 1 {print $2}' "$WORK/sw.out")
    [ "$(awk '$1 == "object" {print $2; exit}' "$WORK/check.out")" = "$main" ] ||
        fail "the first object is not the peer's main module $main"
    # Frame 0 of the crashing thread: its pc, the peer's too.
    top=$(awk -F'|' -v t="$idx" '$1 == t && $2 == 0 {print $7}' "$WORK/sw.out")
    mainbase=$(awk -F'|' '$1 == "Module" && $8 == 1 {print $6}' "$WORK/sw.out")
    [ "$(awk '$1 == "frame" {print $2; exit}' "$WORK/check.out")" = "$RIP" ] ||
        fail "the first frame is not the exception's rip $RIP"
    [ $((mainbase + top)) = $((RIP)) ] || fail "the peer's top frame $mainbase+$top is not rip $RIP"

    # The crashing thread: the fault, then the chain down to main.
    names_of frame >"$WORK/names"
    echo "crashing thread: $(tr '\n' ' ' <"$WORK/names")"
    [ "$(head -4 "$WORK/names" | tr '\n' ' ')" = "md_inner md_middle md_outer main " ] ||
        fail "crashing thread's frames: $(tr '\n' ' ' <"$WORK/names")"
    [ "$(grep -c '^frame ' "$WORK/check.out")" -ge 6 ] || fail "the stack ends at main"
    # The other thread, blocked in pause() under md_sleeper_wait.
    [ "$(grep -c '^thread ' "$WORK/check.out")" = 1 ] || fail "not exactly one other thread"
    names_of tframe >"$WORK/tnames"
    echo "other thread: $(tr '\n' ' ' <"$WORK/tnames")"
    [ "$(grep -v '^-$' "$WORK/tnames" | head -2 | tr '\n' ' ')" = "md_sleeper_wait md_sleeper " ] ||
        fail "other thread's frames: $(tr '\n' ' ' <"$WORK/tnames")"
    [ "$(head -1 "$WORK/tnames")" = - ] || fail "the other thread's top frame is not in libc (pause)"

    # Raw stack: from below rsp (the red zone, clipped to Breakpad's
    # range, which starts at rsp's page), 32 KiB or the range's end.
    read -r _ lo bytes < <(grep '^stack ' "$WORK/check.out") || fail "no STACK lines"
    want_lo=$(((RSP - 128) & ~63))
    [ $want_lo -lt $((RSP & ~4095)) ] && want_lo=$((RSP & ~4095))
    [ $((lo)) = $want_lo ] || fail "stack starts at $lo, want $(printf 0x%x $want_lo) (rsp $RSP)"
    [ "$bytes" -ge 1024 ] && [ "$bytes" -le 32768 ] || fail "$bytes bytes of stack"
    # The bytes at rsp: the return address into md_middle (md_inner has no frame of its own).
    w=$(grep '^STACK ' "$LOG" | awk -v a="$(printf '0x%x' $((RSP & ~63)))" '$2 == a {print substr($3, 1 + 2 * ('$((RSP & 63))'), 16)}')
    ret=$(echo "$w" | sed 's/\(..\)/\1 /g' | awk '{for (i = NF; i > 0; i--) printf "%s", $i}')
    [ "$((16#$ret))" = "$(awk '$1 == "frame" {n++} n == 2 {print $2; exit}' "$WORK/check.out" | xargs printf '%d')" ] ||
        fail "the word at rsp ($ret) is not the second frame"

    # Objects: the victim and libc with the build ids readelf reads.
    for f in "$VICTIM" $(awk '$1 == "object" && $2 == "libc.so.6" {print $5}' "$WORK/check.out"); do
        want=$(build_id_of "$f")
        [ -n "$want" ] || fail "readelf shows no build id in $f"
        awk -v p="$f" '$1 == "object" && $5 == p {print $4}' "$WORK/check.out" | grep -qx "$want" ||
            fail "object $f: build id not $want"
    done
    grep -q '^object libc.so.6 0x' "$WORK/check.out" || fail "no libc object with its bias"

    # A second conversion: the same installation id, a new crash id.
    fl_md "$WORK/dump.dmp" --spool "$SPOOL" >"$WORK/md2.path" 2>>"$WORK/md.err" || fail "second run"
    [ "$(ls "$SPOOL"/*.crashlog | wc -l)" = 2 ] || fail "two conversions, not two logs"
    # The spool's bound, as libfaultline keeps it (FAULTLINE_SPOOL_MAX): the
    # oldest logs beyond it go after the new one is in, and nothing else.
    P=$WORK/bounded
    mkdir -p "$P"
    for i in 1 2 3; do
        echo x >"$P/old-$i.crashlog"
        touch -d "2020-01-0$i" "$P/old-$i.crashlog"
    done
    echo x >"$P/notes.txt"
    touch -d 2019-01-01 "$P/notes.txt"
    FAULTLINE_SPOOL_MAX=2 fl_md "$WORK/dump.dmp" --spool "$P" >"$WORK/p.path" 2>"$WORK/p.err" ||
        fail "bounded spool: $(cat "$WORK/p.err")"
    [ -f "$(cat "$WORK/p.path")" ] && [ ! -e "$P/old-1.crashlog" ] && [ ! -e "$P/old-2.crashlog" ] &&
        [ -e "$P/old-3.crashlog" ] && [ -e "$P/notes.txt" ] ||
        fail "FAULTLINE_SPOOL_MAX=2: $(ls "$P")"
    grep -q "deleted the 2 oldest crash logs of $P: it holds at most FAULTLINE_SPOOL_MAX" \
        "$WORK/p.err" || fail "bounded spool, the message: $(cat "$WORK/p.err")"
    FAULTLINE_SPOOL_MAX=0 fl_md "$WORK/dump.dmp" --spool "$P" >/dev/null 2>"$WORK/p.err" ||
        fail "unbounded spool"
    [ "$(ls "$P"/*.crashlog | wc -l)" = 3 ] && [ ! -s "$WORK/p.err" ] ||
        fail "FAULTLINE_SPOOL_MAX=0 deleted: $(ls "$P") $(cat "$WORK/p.err")"
    # Far over the bound: 8 go in a run, the oldest.
    rm -f "$P"/*.crashlog
    for i in $(seq 10 29); do
        echo x >"$P/many-$i.crashlog"
        touch -d "2021-01-01 00:00:$i" "$P/many-$i.crashlog"
    done
    FAULTLINE_SPOOL_MAX=2 fl_md "$WORK/dump.dmp" --spool "$P" >/dev/null 2>"$WORK/p.err" ||
        fail "far over the bound"
    for i in $(seq 10 29); do
        if [ "$i" -lt 18 ]; then
            [ ! -e "$P/many-$i.crashlog" ] || fail "far over the bound: many-$i (among the 8 oldest) kept"
        else
            [ -e "$P/many-$i.crashlog" ] || fail "far over the bound: many-$i deleted"
        fi
    done
    grep -q "deleted the 8 oldest crash logs" "$WORK/p.err" || fail "far over the bound: $(cat "$WORK/p.err")"
    "$CHECK" "$(cat "$WORK/md2.path")" >"$WORK/check2.out" || fail "second log rejected"
    grep -qxF "install_id $(head -c 36 "$SPOOL/installation-id")" "$WORK/check2.out" || fail "install id changed"
    grep -qx "app $(basename "$VICTIM")" "$WORK/check2.out" || fail "default app name is not the executable's"
    # -o FILE and standard output: the same log but for the crash id.
    fl_md "$WORK/dump.dmp" -o "$WORK/o.crashlog" >"$WORK/o.path" || fail "-o FILE"
    [ "$(cat "$WORK/o.path")" = "$WORK/o.crashlog" ] || fail "-o FILE printed $(cat "$WORK/o.path")"
    fl_md "$WORK/dump.dmp" -o - >"$WORK/stdout.crashlog" || fail "-o -"
    diff <(grep -v -e '^CRASH_ID' "$WORK/o.crashlog") <(grep -v -e '^CRASH_ID' "$WORK/stdout.crashlog") \
        >/dev/null || fail "-o FILE and -o - differ"
    grep -q '^INSTALL_ID' "$WORK/o.crashlog" && fail "-o FILE wrote an installation id"
    # The dump's own time, not the file's.
    touch -d '2001-01-01' "$WORK/dump.dmp"
    stamp=$("$TOOLS/minidump_dump" "$WORK/dump.dmp" 2>/dev/null | awk '$1 == "time_date_stamp" {print $3; exit}')
    fl_md "$WORK/dump.dmp" -o - | grep -qx "CRASH_TIME $((stamp))" || fail "CRASH_TIME is not the dump's $stamp"
    # --no-unwind: every thread keeps its pc, the registers and stack stay.
    fl_md "$WORK/dump.dmp" --no-unwind -o "$WORK/nu.crashlog" >/dev/null || fail "--no-unwind"
    [ "$(grep -c '^CALLSTACK' "$WORK/nu.crashlog")" = 1 ] || fail "--no-unwind: not one frame"
    [ "$(grep -c '^THREAD_FRAME' "$WORK/nu.crashlog")" = 1 ] || fail "--no-unwind: other thread not one frame"
    [ "$(grep '^CALLSTACK' "$WORK/nu.crashlog" | awk '{print $2}')" = "$((RIP))" ] || fail "--no-unwind: pc"
    diff <(grep -e '^STACK' -e '^REGISTER' "$WORK/nu.crashlog") <(grep -e '^STACK' -e '^REGISTER' "$WORK/o.crashlog") \
        >/dev/null || fail "--no-unwind: other registers or stack"
    # Without the files (every path the dump names made one that is not
    # here): no bias, the pc first, and frame pointers lead on to main.
    python3 - "$WORK/dump.dmp" "$WORK/nofiles.dmp" <<'PY' || fail "cannot make the file-less dump"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n, rva = struct.unpack_from("<II", b, 8)
for i in range(n):
    t, size, srva = struct.unpack_from("<III", b, rva + 12 * i)
    if t != 4:  # the ModuleList: each name's '/' made '\\'
        continue
    count, = struct.unpack_from("<I", b, srva)
    for m in range(count):
        name, = struct.unpack_from("<I", b, srva + 4 + 108 * m + 20)
        length, = struct.unpack_from("<I", b, name)
        for k in range(name + 4, name + 4 + length, 2):
            if b[k:k + 2] == b"/\x00":
                b[k] = ord("\\")
open(sys.argv[2], "wb").write(b)
PY
    fl_md "$WORK/nofiles.dmp" -o "$WORK/nofiles.crashlog" >/dev/null || fail "the file-less dump"
    grep -q '^OBJECT_PATH' "$WORK/nofiles.crashlog" && fail "the file-less dump still names paths"
    grep '^OBJECT ' "$WORK/nofiles.crashlog" | head -1 | grep -q '/.*/.*/' && fail "the program has a bias without its file"
    [ "$(grep '^CALLSTACK' "$WORK/nofiles.crashlog" | head -1 | awk '{print $2}')" = "$((RIP))" ] ||
        fail "the file-less dump's first frame is not rip"
    [ "$(grep -c '^CALLSTACK' "$WORK/nofiles.crashlog")" -ge 3 ] || fail "no frame-pointer unwind without files"
    # The file-less dump with the files given by --obj (a dump from another
    # machine, unwound with the developer's build): the stacks of the files
    # in place, and the program's and libc's biases.
    LIBC=$(awk '$1 == "object" && $2 == "libc.so.6" {print $5}' "$WORK/check.out")
    fl_md "$WORK/nofiles.dmp" --obj "$VICTIM" --obj "$LIBC" -o "$WORK/obj.crashlog" >/dev/null \
        2>"$WORK/obj.err" || fail "--obj: exit $?"
    [ -s "$WORK/obj.err" ] && fail "--obj: said $(cat "$WORK/obj.err")"
    diff <(grep -e '^CALLSTACK' -e '^THREAD_FRAME' "$WORK/obj.crashlog") \
        <(grep -e '^CALLSTACK' -e '^THREAD_FRAME' "$WORK/o.crashlog") >/dev/null ||
        fail "--obj: not the stacks the files in place give"
    [ "$(grep -c '^THREAD_FRAME' "$WORK/obj.crashlog")" -gt "$(grep -c '^THREAD_FRAME' "$WORK/nofiles.crashlog")" ] ||
        fail "--obj: the other thread unwound no further than without the files"
    for f in md_victim libc.so.6; do
        grep "^OBJECT .*$f/" "$WORK/obj.crashlog" | grep -q '/.*/.*/' || fail "--obj: $f has no bias"
    done
    # An --obj of no module the stacks reach: said, and the log written.
    fl_md "$WORK/nofiles.dmp" --obj "$VICTIM" --obj /bin/true -o "$WORK/obj2.crashlog" >/dev/null \
        2>"$WORK/obj.err" || fail "--obj /bin/true: exit $?"
    grep -q "warning: --obj /bin/true (build id $(build_id_of /bin/true)) was not used" "$WORK/obj.err" ||
        fail "--obj /bin/true: $(cat "$WORK/obj.err")"
    [ -s "$WORK/obj2.crashlog" ] || fail "--obj /bin/true: no log"
    # A build directory: every ELF file with code under it, the others
    # (a separate debug file, a text file, a subdirectory's) passed over.
    mkdir -p "$WORK/objdir/lib/deeper" || fail "making the directory"
    cp "$VICTIM" "$WORK/objdir/" && cp "$LIBC" "$WORK/objdir/lib/deeper/" &&
        objcopy --only-keep-debug "$VICTIM" "$WORK/objdir/md_victim.debug" &&
        echo text >"$WORK/objdir/README" || fail "filling the directory"
    fl_md "$WORK/nofiles.dmp" --obj "$WORK/objdir" -o "$WORK/objdir.crashlog" >/dev/null \
        2>"$WORK/obj.err" || fail "--obj DIR: exit $?"
    [ -s "$WORK/obj.err" ] && fail "--obj DIR: said $(cat "$WORK/obj.err")"
    diff <(grep -e '^CALLSTACK' -e '^THREAD_FRAME' "$WORK/objdir.crashlog") \
        <(grep -e '^CALLSTACK' -e '^THREAD_FRAME' "$WORK/o.crashlog") >/dev/null ||
        fail "--obj DIR: not the stacks the files in place give"
    fl_md "$WORK/nofiles.dmp" --obj "$WORK/objdir/md_victim.debug" -o - >/dev/null 2>"$WORK/obj.err"
    [ $? = 1 ] && grep -q "md_victim.debug: no code in it (a separate debug file" "$WORK/obj.err" ||
        fail "--obj of a debug file: $(cat "$WORK/obj.err")"
    mkdir -p "$WORK/emptydir"
    fl_md "$WORK/nofiles.dmp" --obj "$WORK/emptydir" -o - >/dev/null 2>"$WORK/obj.err"
    [ $? = 1 ] && grep -q "emptydir: no ELF file with a build id and code under it (0 files looked at)" "$WORK/obj.err" ||
        fail "--obj of an empty directory: $(cat "$WORK/obj.err")"
    # A file that is not there, or not ELF: exit 1, nothing written;
    # with --no-unwind: a usage error.
    fl_md "$WORK/nofiles.dmp" --obj "$WORK/none" -o "$WORK/obj3.crashlog" >/dev/null 2>"$WORK/obj.err"
    [ $? = 1 ] && grep -q "^faultline minidump: --obj $WORK/none: No such file or directory$" "$WORK/obj.err" ||
        fail "--obj of a missing file: $(cat "$WORK/obj.err")"
    fl_md "$WORK/nofiles.dmp" --obj "$WORK/dump.dmp" -o "$WORK/obj3.crashlog" >/dev/null 2>"$WORK/obj.err"
    [ $? = 1 ] && grep -q "^faultline minidump: --obj $WORK/dump.dmp: not an ELF file$" "$WORK/obj.err" ||
        fail "--obj of a minidump: $(cat "$WORK/obj.err")"
    [ -e "$WORK/obj3.crashlog" ] && fail "a log was written beside a bad --obj"
    fl_md "$WORK/nofiles.dmp" --obj "$VICTIM" --no-unwind -o - >/dev/null 2>"$WORK/obj.err"
    [ $? = 64 ] && grep -q 'no use with --no-unwind' "$WORK/obj.err" ||
        fail "--obj with --no-unwind: $(cat "$WORK/obj.err")"
    ;;
serve)
    # The dump as Crashpad's and Breakpad's senders post it, to a real
    # `faultline serve`: converted at ingest, unwound and symbolicated by
    # the worker with the files the server has (here the victim's own,
    # where the dump names it), counted once however often it comes.
    fetch
    build_victim md_victim g++
    VICTIM=$CACHE/md_victim
    make_dump "$VICTIM"
    ls -l "$WORK/dump.dmp"
    FL=$FAULTLINE work=$WORK ADMIN=md-admin-$$ KEY=md-key-$$
    . "$HERE/../lib/server.sh"
    export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
    start "$WORK/data" --max-body 8388608
    GUID=0123456789abcdef0123456789abcdef
    post_dump() { # post_dump FILE PROD VER [curl args...]
        local f=$1 p=$2 v=$3
        shift 3
        code POST "/?key=$KEY" -F "upload_file_minidump=@$f;filename=dump.dmp;type=application/octet-stream" \
            -F "prod=$p" -F "ver=$v" -F "guid=$GUID" -F "ptype=browser" "$@"
    }
    # With annotations beside prod, ver and guid (Crashpad's uploader sends
    # each as a field), one of them trying to add lines to the log.
    st=$(post_dump "$WORK/dump.dmp" mdapp 2.0 -F "channel=beta" \
        --form-string $'note=line1\nEND\nCRASH_SIGNAL 9')
    [ "$st" = 200 ] || fail "the upload: $st $(cat "$WORK/body")"
    id=$(field id <"$WORK/body")
    echo "$id" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' ||
        fail "crash id '$id' is not shaped as a UUID"
    # The id is the dump's hash: the same bytes sent again are the same crash.
    want=$(sha256sum "$WORK/dump.dmp" | cut -c1-32 | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)/\1-\2-\3-\4-/')
    [ "$id" = "$want" ] || fail "crash id $id, the dump's hash is $want"
    got=$(wait_counts mdapp 1)
    [ "$got" = 1 ] || fail "group counts '$got', want 1"
    wait_processed "$id" "$WORK/crash.json"
    python3 - "$WORK/crash.json" "$GUID" "$(stat -c %s "$WORK/dump.dmp")" <<'PY' || fail "the crash as the API shows it"
import json, sys
c = json.load(open(sys.argv[1]))
m = c["metadata"]
assert m["other"].get("CRASH_SOURCE") == "minidump", m["other"]
# The form's fields: prod, ver, guid.
assert (m["app"], m["app_version"], m["install_id"]) == ("mdapp", "2.0", sys.argv[2]), m
assert c["stack_source"] == "server", c["stack_source"]
# The other fields, as the log's context; a value's line break stays in it.
etc = m["etc"]
assert etc.get("ptype") == "browser" and etc.get("channel") == "beta", etc
assert "line1" in etc["note"] and "CRASH_SIGNAL 9" in etc["note"], etc
assert m["signal"] == 11 and "prod" not in etc and "guid" not in etc, (m["signal"], etc)
# The dump is kept, and the crash says how large it is.
assert c["minidump_bytes"] == int(sys.argv[3]), c.get("minidump_bytes")
t = c["threads"][0]
assert t["crashed"], t
names = [f.get("function") for f in t["frames"]]
print("crashing thread:", names[:8])
# Unwound by the server from the pc, registers and raw stack, and symbolicated.
want = ["md_inner", "md_middle", "md_outer", "main"]
got = [n for n in names if n in want]
assert got[:4] == want, names
# The other thread: the log has its pc only (ingest does not unwind); the
# worker unwinds it from the kept dump, down through the victim's frames.
o = [t for t in c["threads"] if not t["crashed"]]
assert len(o) == 1, o  # the sleeper (Breakpad writes no thread names)
onames = [f.get("function") for f in o[0]["frames"]]
print("other thread:", onames[:8])
assert o[0].get("stack_source") == "server", o[0]
got = [n for n in onames if n and n.startswith("md_sleeper")]
assert got[:2] == ["md_sleeper_wait", "md_sleeper"], onames
assert len(onames) >= 4, onames  # pause (libc), the two, libc's thread start
PY
    # The dump itself is kept: given back byte for byte, to the admin only.
    hdr=$(curl -s -D - -o "$WORK/got.dmp" -H "Authorization: Bearer $ADMIN" \
        "$(url "/api/v1/crashes/$id/minidump")" | tr -d '\r')
    echo "$hdr" | grep -q '^HTTP/1.1 200' || fail "GET minidump: $hdr"
    cmp -s "$WORK/got.dmp" "$WORK/dump.dmp" || fail "the minidump given back is not the one sent"
    echo "$hdr" | grep -qi '^Content-Type: application/octet-stream$' || fail "its type: $hdr"
    echo "$hdr" | grep -qi "^Content-Disposition: attachment; filename=\"$id.dmp\"$" ||
        fail "its name: $hdr"
    st=$(code GET "/api/v1/crashes/$id/minidump")
    [ "$st" = 401 ] || fail "the minidump without the token: $st, want 401"
    # Sent again (a sender that retries): a duplicate, counted once.
    st=$(post_dump "$WORK/dump.dmp" mdapp 2.0)
    [ "$st" = 200 ] || fail "the resend: $st $(cat "$WORK/body")"
    grep -q '"duplicate":true' "$WORK/body" || fail "the resend is not a duplicate: $(cat "$WORK/body")"
    got=$(wait_counts mdapp 1)
    [ "$got" = 1 ] || fail "after the resend the group counts '$got', want 1"
    # gzip'd, as Crashpad sends it; the body alone, with the fields in the
    # query: another crash (another dump), of another product.
    mv "$WORK/dump.dmp" "$WORK/first.dmp"
    make_dump "$VICTIM"
    cmp -s "$WORK/dump.dmp" "$WORK/first.dmp" && fail "two crashes made the same dump"
    gzip -c "$WORK/dump.dmp" >"$WORK/dump.dmp.gz"
    st=$(code POST "/api/v1/crashes?prod=mdraw&ver=3" -H "X-Faultline-Key: $KEY" \
        -H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' \
        --data-binary @"$WORK/dump.dmp.gz")
    [ "$st" = 200 ] || fail "the gzip'd body: $st $(cat "$WORK/body")"
    id2=$(field id <"$WORK/body")
    got=$(wait_counts mdraw 1)
    [ "$got" = 1 ] || fail "the body alone: group counts '$got', want 1"
    st=$(code GET "/api/v1/crashes/$id2/minidump" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 200 ] && cmp -s "$WORK/body" "$WORK/dump.dmp" ||
        fail "the gzip'd dump given back: $st"
    # Deleted at a user's request: the dump goes with the crash.
    st=$(code DELETE "/api/v1/crashes/$id2" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 200 ] || fail "DELETE of the second crash: $st $(cat "$WORK/body")"
    st=$(code GET "/api/v1/crashes/$id2/minidump" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 410 ] || fail "the minidump of a deleted crash: $st, want 410 $(cat "$WORK/body")"
    n=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"SELECT count(*) FROM minidumps").fetchone()[0])' "$WORK/data/faultline.db")
    [ "$n" = 1 ] || fail "$n minidumps stored after the delete, want 1 (the first)"
    # A damaged dump beside a good log: the log is stored, the dump named
    # under "rejected"; alone, a 400 with the reader's reason.
    head -c 4096 "$WORK/dump.dmp" >"$WORK/cut.dmp"
    st=$(post_dump "$WORK/cut.dmp" mdapp 2.0)
    [ "$st" = 400 ] || fail "a cut dump: $st, want 400"
    grep -q '"error":"malformed minidump"' "$WORK/body" || fail "a cut dump: $(cat "$WORK/body")"
    grep -q '"reason":"the minidump: ' "$WORK/body" || fail "no reason naming the dump: $(cat "$WORK/body")"
    "$FAULTLINE" minidump "$WORK/dump.dmp" --no-unwind --app mdother -o "$WORK/good.crashlog" >/dev/null ||
        fail "converting for the mixed request"
    st=$(code POST "/?key=$KEY" -F "a=@$WORK/good.crashlog" -F "b=@$WORK/cut.dmp")
    [ "$st" = 200 ] || fail "a good log and a cut dump: $st $(cat "$WORK/body")"
    grep -q '"rejected":\[{"error":"malformed minidump","part":1' "$WORK/body" ||
        fail "the cut dump is not named as rejected: $(cat "$WORK/body")"
    # A crash that came as a log has no minidump; an unknown id neither.
    id3=$(field id <"$WORK/body")
    wait_processed "$id3" "$WORK/crash3.json"
    grep -q '"minidump_bytes"' "$WORK/crash3.json" && fail "a crash sent as a log says it has a minidump"
    st=$(code GET "/api/v1/crashes/$id3/minidump" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 404 ] && grep -q 'no minidump is kept' "$WORK/body" ||
        fail "the minidump of a crash sent as a log: $st $(cat "$WORK/body")"
    st=$(code GET "/api/v1/crashes/no-such-crash/minidump" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 404 ] || fail "the minidump of an unknown crash: $st"
    stop || fail "server exit status"
    # --no-keep-minidumps: a dump becomes its log and nothing more; the
    # dumps kept before stay.
    start "$WORK/data" --max-body 8388608 --no-keep-minidumps
    mv "$WORK/dump.dmp" "$WORK/second.dmp"
    make_dump "$VICTIM"
    st=$(post_dump "$WORK/dump.dmp" mdnokeep 1.0)
    [ "$st" = 200 ] || fail "--no-keep-minidumps: the upload: $st $(cat "$WORK/body")"
    id4=$(field id <"$WORK/body")
    wait_processed "$id4" "$WORK/crash4.json"
    grep -q '"CRASH_SOURCE":"minidump"' "$WORK/crash4.json" ||
        fail "--no-keep-minidumps: not processed as a minidump: $(head -c 300 "$WORK/crash4.json")"
    grep -q '"minidump_bytes"' "$WORK/crash4.json" &&
        fail "--no-keep-minidumps: the crash says it has a minidump"
    # No dump to unwind the other thread from: it keeps the pc it has.
    python3 - "$WORK/crash4.json" <<'PY' || fail "--no-keep-minidumps: the other thread"
import json, sys
o = [t for t in json.load(open(sys.argv[1]))["threads"] if not t["crashed"]]
assert len(o) == 1 and len(o[0]["frames"]) == 1 and "stack_source" not in o[0], o
PY
    st=$(code GET "/api/v1/crashes/$id4/minidump" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 404 ] && grep -q 'no minidump is kept.*--no-keep-minidumps' "$WORK/body" ||
        fail "--no-keep-minidumps: GET minidump: $st $(cat "$WORK/body")"
    n=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
"SELECT count(*) FROM minidumps").fetchone()[0])' "$WORK/data/faultline.db")
    [ "$n" = 1 ] || fail "--no-keep-minidumps: $n minidumps stored, want 1 (the first, kept before)"
    st=$(code GET "/api/v1/crashes/$id/minidump" -H "Authorization: Bearer $ADMIN")
    [ "$st" = 200 ] && cmp -s "$WORK/body" "$WORK/first.dmp" ||
        fail "--no-keep-minidumps: the dump kept before: $st"
    stop || fail "server exit status"
    ;;
errors)
    fetch
    build_victim md_victim g++
    VICTIM=$CACHE/md_victim
    make_dump "$VICTIM"
    SPOOL=$WORK/spool
    mkdir -p "$SPOOL"
    head -c 65536 /dev/urandom >"$WORK/garbage"
    : >"$WORK/empty"
    size=$(stat -c %s "$WORK/dump.dmp")
    head -c $((size / 2)) "$WORK/dump.dmp" >"$WORK/truncated"
    head -c 40 "$WORK/dump.dmp" >"$WORK/header"
    python3 - "$WORK" <<'PY' || fail "cannot make the altered dumps"
import struct, sys
w = sys.argv[1]
b = bytes(open(w + "/dump.dmp", "rb").read())
n, rva = struct.unpack_from("<II", b, 8)
streams = {}
for i in range(n):
    t, size, srva = struct.unpack_from("<III", b, rva + 12 * i)
    streams.setdefault(t, (i, size, srva))
def patch(name, off, fmt, v):
    x = bytearray(b)
    struct.pack_into(fmt, x, off, v)
    open(w + "/" + name, "wb").write(x)
# The ThreadList stream's RVA past the end of the file.
i, size, srva = streams[3]
patch("pastend", rva + 12 * i + 8, "<I", len(b) - 8)
# SystemInfo: processor architecture 5 (ARM, 32-bit), platform 2 (Windows NT).
i, size, srva = streams[7]
patch("othercpu", srva, "<H", 5)
patch("otheros", srva + 20, "<I", 2)
# A module name's RVA past the end.
i, size, srva = streams[4]
patch("badname", srva + 4 + 20, "<I", 0xfffffff0)
# A thread's context size past the end.
i, size, srva = streams[3]
patch("badcontext", srva + 4 + 40, "<I", 0x7fffffff)
PY
    check_err() { # FILE WANT: exit 1, WANT in the message, nothing written
        fl_md "$WORK/$1" --spool "$SPOOL" >"$WORK/md.path" 2>"$WORK/err"
        local rc=$?
        [ $rc = 1 ] || fail "$1: exit $rc, want 1"
        grep -qF "$WORK/$1: $2" "$WORK/err" || fail "$1: message '$(cat "$WORK/err")', want '$2'"
        [ ! -s "$WORK/md.path" ] || fail "$1: printed a log path"
        [ "$(ls -A "$SPOOL" | grep -v '^installation-id$')" = "" ] || fail "$1: left $(ls -A "$SPOOL")"
        fl_md "$WORK/$1" -o "$WORK/o.log" 2>/dev/null && fail "$1: -o succeeded"
        [ "$(ls "$WORK" | grep '^o\.log')" = "" ] || fail "$1: -o left $(ls "$WORK" | grep '^o\.log')"
        echo "ok: $1 -> $(cat "$WORK/err")"
    }
    check_err garbage "not a minidump"
    check_err empty "not a minidump"
    check_err header "truncated or malformed minidump (the stream directory"
    check_err truncated "truncated or malformed minidump"
    check_err pastend "truncated or malformed minidump (stream"
    check_err othercpu "minidump of an architecture this build cannot read (processor architecture 5"
    check_err otheros "not a minidump of a Linux program"
    check_err badname "truncated or malformed minidump (module 0's name"
    check_err badcontext "truncated or malformed minidump (thread"
    check_err nonexistent "cannot read the file"
    mkfifo "$WORK/fifo"
    check_err fifo "cannot read the file (not a regular file)"
    fl_md >/dev/null 2>&1; [ $? = 64 ] || fail "no argument: not exit 64"
    fl_md a b >/dev/null 2>&1; [ $? = 64 ] || fail "two dumps: not exit 64"
    fl_md "$WORK/dump.dmp" --spool "$SPOOL" -o x >/dev/null 2>&1
    [ $? = 64 ] || fail "--spool with -o: not exit 64"
    fl_md --bogus >/dev/null 2>&1; [ $? = 64 ] || fail "unknown option: not exit 64"
    fl_md --help | grep -q '^usage: faultline minidump FILE' || fail "--help"
    # The default spool: $FAULTLINE_SPOOL.
    FAULTLINE_SPOOL=$WORK/envspool fl_md "$WORK/dump.dmp" >"$WORK/md.path" || fail "default spool"
    case $(cat "$WORK/md.path") in "$WORK/envspool/"*.crashlog) ;; *) fail "not in \$FAULTLINE_SPOOL" ;; esac
    ;;
*) fail "unknown case $CASE" ;;
esac
exit 0
