#!/usr/bin/env bash
# `faultline dump PID`: the flight recorder of a running process.
# trace_decode_app (DECODE_WAIT) traces, writes its own text dump, then
# waits like a hung process; the command must print that text byte for
# byte, leave the process running, and refuse, without sending anything,
# a process that does not catch the signal (its default action would kill
# it).  Also: another signal, --ids, --keep, the trigger off, the signal
# from anyone else, an application's own handler, a shell that catches the
# signal, a stopped process, and a program run with the preload library.
# With PRELOAD, an unmodified program run with libfaultline-preload.so.
# usage: dump.sh FAULTLINE TRACE_DECODE_APP TRACELIB [PRELOAD]
set -u
FL=$1 APP=$2 LIB=$3 PRELOAD=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-dump.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL [dump]: $*" >&2; exit 1; }
pass=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0

# run NAME [VAR=VALUE...]: starts the app waiting, with its spool in
# $work/NAME; sets P.
run() {
    local name=$1
    shift
    mkdir -p "$work/$name"
    env DECODE_WAIT=1 "$@" FAULTLINE_SPOOL="$work/$name/spool" \
        "$APP" "$work/$name/ids" "$work/$name/text" "$LIB" >"$work/$name/out" 2>&1 &
    P=$!
    pids+=("$P")
    for _ in $(seq 100); do
        grep -q READY "$work/$name/out" 2>/dev/null && return 0
        kill -0 "$P" 2>/dev/null || fail "$name: the app exited: $(cat "$work/$name/out")"
        sleep 0.05
    done
    fail "$name: the app did not get ready"
}

# The default signal: the decoded dump is the app's own text dump.
run a
"$FL" dump "$P" >"$work/a/dumped" 2>"$work/a/err" || fail "dump exited $?: $(cat "$work/a/err")"
cmp -s "$work/a/text" "$work/a/dumped" ||
    { diff "$work/a/text" "$work/a/dumped" | head; fail "the dump differs from the app's text dump"; }
grep -q '^TRACE .*step 49 of 50' "$work/a/dumped" || fail "no trace event in the dump"
grep -q 'from the library 8' "$work/a/dumped" || fail "no event of the dlopen()ed library in the dump"
ok "faultline dump PID prints the process's flight recorder, byte for byte its text dump"
kill -0 "$P" 2>/dev/null || fail "the process did not survive the dump"
[ -z "$(ls "$work/a/spool" | grep -e tracedump -e '\.part$')" ] || fail "dump files left: $(ls "$work/a/spool")"
ok "the process goes on running; no file is left in its spool"
# Again, kept, and the raw trace-ID form.
"$FL" dump --keep --ids "$P" >"$work/a/ids2" 2>"$work/a/err" || fail "dump --ids: $(cat "$work/a/err")"
head -1 "$work/a/ids2" | grep -q '^FAULTLINE_TRACE_DUMP 1' || fail "--ids printed $(head -2 "$work/a/ids2")"
kept=$(sed -n 's/^faultline dump: the dump is //p' "$work/a/err")
[ -f "$kept" ] && cmp -s "$kept" "$work/a/ids2" || fail "--keep: '$kept' is not the dump printed"
# What decoding the fetched dump has to say is said by `faultline dump`,
# not "faultline decode": a library the process loaded, deleted since,
# leaves its events undecoded.
cp "$LIB" "$work/gone.so"
lib_saved=$LIB LIB=$work/gone.so pa=$P
run gone
LIB=$lib_saved
rm "$work/gone.so"
"$FL" dump "$P" >/dev/null 2>"$work/gone/err"
rc=$? P=$pa
[ $rc = 1 ] && grep -q '^faultline dump: .* events not decoded: the files they came from are gone' \
    "$work/gone/err" && ! grep -q '^faultline decode:' "$work/gone/err" ||
    fail "a library gone: rc $rc: $(cat "$work/gone/err")"
# The dump is kept, for faultline decode --obj.
gone=$(sed -n 's/^faultline dump: the dump is //p' "$work/gone/err")
[ -f "$gone" ] && head -1 "$gone" | grep -q '^FAULTLINE_TRACE_DUMP 1' || fail "a library gone: no dump kept: $(cat "$work/gone/err")"
"$FL" decode --obj "$LIB" "$gone" >"$work/gone/decoded" 2>"$work/gone/err2" ||
    fail "decoding the kept dump with --obj: $(cat "$work/gone/err2")"
ok "what the decoding says is said by faultline dump; the dump is kept for decode --obj"
# --spool naming another directory than the one the process writes into:
# said, nothing sent (the dump would be waited for there in vain).
mkdir -p "$work/elsewhere"
"$FL" dump --spool "$work/elsewhere" "$P" >/dev/null 2>"$work/err"
[ $? = 2 ] && grep -q "writes its dumps into .*$work/a/spool" "$work/err" ||
    fail "--spool elsewhere: $(cat "$work/err")"
[ -z "$(ls "$work/a/spool" | grep -e tracedump -e '\.part$' | grep -v "$(basename "$kept")")" ] ||
    fail "--spool elsewhere: a dump was written: $(ls "$work/a/spool")"
ok "--spool naming another directory: refused, nothing sent"
# Another user's process (as root: run as nobody): what cannot be read is
# said to be so, not "does not run libfaultline".
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && runuser -u nobody -- "$FL" --version >/dev/null 2>&1; then
    runuser -u nobody -- "$FL" dump --spool "$work/a/spool" "$P" >/dev/null 2>"$work/err"
    [ $? = 2 ] && grep -q 'memory map cannot be read' "$work/err" || fail "as another user: $(cat "$work/err")"
    ok "another user's process: its memory map cannot be read, said"
fi
case $(basename "$kept") in trace-[0-9]*.tracedump) ;; *) fail "dump file named $kept" ;; esac
ok "a second dump; --ids prints it, --keep keeps it in the spool"

# A process that exits right after it wrote its dump (its pause() ends
# with the signal): the dump is found all the same -- not through
# /proc/PID/root, gone with the process -- printed, and removed.
pa=$P
run x DECODE_WAIT=once
"$FL" dump "$P" >"$work/x/dumped" 2>"$work/x/err" || fail "a process that exits: $(cat "$work/x/err")"
cmp -s "$work/x/text" "$work/x/dumped" || fail "a process that exits: the dump differs"
[ -z "$(ls "$work/x/spool" | grep -e tracedump -e '\.part$')" ] ||
    fail "a process that exits: left in its spool: $(ls "$work/x/spool")"
ok "a process that exits right after its dump: printed, and not left behind"
P=$pa

# The signal from anyone else (kill, not the command's sigqueue) is
# ignored: no file, and the process lives on.
kill -s RTMAX-4 "$P"
sleep 0.3
kill -0 "$P" 2>/dev/null || fail "a plain kill of the trace signal killed the process"
[ -z "$(ls "$work/a/spool" | grep -v "$(basename "$kept")" | grep -e tracedump -e '\.part$')" ] ||
    fail "a plain kill made a dump: $(ls "$work/a/spool")"
ok "the signal sent by anyone else is ignored"

# Another signal, chosen by the environment (the command reads it there).
run b FAULTLINE_TRACE_SIGNAL=50
"$FL" dump "$P" >"$work/b/dumped" 2>"$work/b/err" || fail "signal 50: $(cat "$work/b/err")"
cmp -s "$work/b/text" "$work/b/dumped" || fail "signal 50: the dump differs"
ok "FAULTLINE_TRACE_SIGNAL=50"

# Not a real-time signal: the library does not take it (SIGUSR2 keeps its
# meaning), and the command reads the variable as the library did: none.
run u FAULTLINE_TRACE_SIGNAL=12
[ $(( 0x$(sed -n 's/^SigCgt:\s*//p' /proc/$P/status) >> 11 & 1 )) = 0 ] ||
    fail "FAULTLINE_TRACE_SIGNAL=12 made the library catch SIGUSR2"
"$FL" dump "$P" >/dev/null 2>"$work/u/err"
[ $? = 2 ] && grep -q 'turned off (FAULTLINE_TRACE_SIGNAL=12)' "$work/u/err" || fail "signal 12: $(cat "$work/u/err")"
# Past the last signal: none either (it was once cut down to 64 and taken).
run v FAULTLINE_TRACE_SIGNAL=100
[ $(( 0x$(sed -n 's/^SigCgt:\s*//p' /proc/$P/status) >> 63 & 1 )) = 0 ] ||
    fail "FAULTLINE_TRACE_SIGNAL=100 made the library catch signal 64"
"$FL" dump "$P" >/dev/null 2>"$work/v/err"
[ $? = 2 ] && grep -q 'turned off' "$work/v/err" || fail "signal 100: $(cat "$work/v/err")"
# Not a number (a name as the docs spell the default): the library keeps
# its default, and the command finds it there without --signal.
run w FAULTLINE_TRACE_SIGNAL=SIGRTMAX-5
"$FL" dump "$P" >"$work/w/dumped" 2>"$work/w/err" || fail "SIGRTMAX-5: $(cat "$work/w/err")"
cmp -s "$work/w/text" "$work/w/dumped" || fail "SIGRTMAX-5: the dump differs"
ok "a signal that is not real-time is not taken; a value that is no number is the default, for both"

# The application's own handler, set before install, is left alone: the
# command sends, the application's handler runs, no dump comes.
run o DECODE_OWN_SIGNAL=60
"$FL" dump --timeout 1 "$P" >/dev/null 2>"$work/o/err"
[ $? = 2 ] && grep -q 'wrote no dump' "$work/o/err" || fail "own handler: $(cat "$work/o/err")"
grep -q 'OWN HANDLER' "$work/o/out" || fail "the application's own handler did not run"
kill -0 "$P" 2>/dev/null || fail "the process with its own handler died"
ok "an application's own handler for the signal is never replaced"

# Turned off: the command says so and sends nothing.
run c FAULTLINE_TRACE_SIGNAL=0
"$FL" dump "$P" >/dev/null 2>"$work/c/err"
[ $? = 2 ] && grep -q 'turned off' "$work/c/err" || fail "trigger off: $(cat "$work/c/err")"
# Told the wrong signal by hand: it is not caught, so it is not sent.
"$FL" dump --signal 50 "$P" >/dev/null 2>"$work/c/err"
[ $? = 2 ] && grep -q 'does not catch signal 50' "$work/c/err" || fail "--signal 50: $(cat "$work/c/err")"
kill -0 "$P" 2>/dev/null || fail "the process with the trigger off was killed"
ok "the trigger off, or a signal not caught: refused, and nothing sent"

# A process without libfaultline: refused, and still alive -- also when
# it catches the signal itself (as systemd does SIGRTMIN+26 = SIGRTMAX-4).
# Its spool is $work, as if it ran libfaultline: else, once the user's
# default spool exists, --force below stops at the spool check instead.
FAULTLINE_SPOOL=$work sleep 300 &
S=$!
pids+=("$S")
"$FL" dump --spool "$work" "$S" >/dev/null 2>"$work/err"
[ $? = 2 ] && grep -q 'does not run libfaultline' "$work/err" || fail "a process without libfaultline: $(cat "$work/err")"
kill -0 "$S" 2>/dev/null || fail "faultline dump killed a process without libfaultline"
bash -c 'trap "echo TRAPPED" RTMAX-4; while :; do sleep 0.1; done' >"$work/trap.out" 2>&1 &
T=$!
pids+=("$T")
for _ in $(seq 100); do
    [ $(( 0x$(sed -n 's/^SigCgt:\s*//p' /proc/$T/status) >> 59 & 1 )) = 1 ] && break
    sleep 0.05
done
"$FL" dump --spool "$work" "$T" >/dev/null 2>"$work/err"
[ $? = 2 ] && grep -q 'does not run libfaultline' "$work/err" || fail "a shell catching the signal: $(cat "$work/err")"
sleep 0.3
! grep -q TRAPPED "$work/trap.out" || fail "the shell was sent the signal"
# --force skips only that check; a signal nobody catches is never sent.
"$FL" dump --force --spool "$work" "$S" >/dev/null 2>"$work/err"
[ $? = 2 ] && grep -q 'does not catch signal' "$work/err" || fail "--force on sleep: $(cat "$work/err")"
kill -0 "$S" 2>/dev/null || fail "--force killed a process that does not catch the signal"
ok "a process without libfaultline, catching the signal or not: refused, nothing sent"

# A stopped process is not sent anything (it would dump only once
# continued).
run s
kill -STOP "$P"
sleep 0.1
"$FL" dump "$P" >/dev/null 2>"$work/s/err"
[ $? = 2 ] && grep -q 'stopped' "$work/s/err" || fail "a stopped process: $(cat "$work/s/err")"
kill -CONT "$P"
ok "a stopped process: refused"

# An unmodified program with the preload library: it has a (quiet)
# recorder to dump, and goes on running.
if [ -n "$PRELOAD" ]; then
    mkdir -p "$work/p"
    FAULTLINE_SPOOL=$work/p LD_PRELOAD=$PRELOAD sleep 300 &
    S=$!
    pids+=("$S")
    for _ in $(seq 100); do
        grep -q "$(basename "$PRELOAD")" /proc/$S/maps 2>/dev/null && [ -d "$work/p" ] && break
        sleep 0.05
    done
    for _ in $(seq 100); do  # the constructor installs the trigger
        [ $(( 0x$(sed -n 's/^SigCgt:\s*//p' /proc/$S/status) >> 59 & 1 )) = 1 ] && break
        sleep 0.05
    done
    "$FL" dump --ids "$S" >"$work/p.out" 2>"$work/err" || fail "a preloaded program: $(cat "$work/err")"
    head -1 "$work/p.out" | grep -q '^FAULTLINE_TRACE_DUMP 1' || fail "the preloaded program's dump: $(head -3 "$work/p.out")"
    grep -q '^END$' "$work/p.out" || fail "the preloaded program's dump has no END"
    kill -0 "$S" 2>/dev/null || fail "the preloaded program did not survive the dump"
    ok "an unmodified program run with libfaultline-preload.so"
fi

# Errors a user can make.
"$FL" dump 0 >/dev/null 2>"$work/err"; [ $? = 2 ] && grep -q 'not a process id' "$work/err" || fail "pid 0"
"$FL" dump 999999999 >/dev/null 2>"$work/err"; [ $? = 2 ] || fail "a pid that does not exist"
"$FL" dump --timeout 0 1 >/dev/null 2>"$work/err"; [ $? = 2 ] || fail "--timeout 0 accepted"
"$FL" dump --signal 0 $$ >/dev/null 2>"$work/err"; [ $? = 2 ] && grep -q 'not a real-time signal' "$work/err" ||
  fail "--signal 0: $(cat "$work/err")"
"$FL" dump >/dev/null 2>&1; [ $? = 2 ] || fail "no pid accepted"
ok "bad arguments: exit 2"
echo "$pass passed"
