#!/usr/bin/env bash
# The compressed calling context end to end: ctx_app (built with
# -finstrument-functions, linked to libfaultline) reports faultline_context()
# in stacks its structure fixes; `faultline decode --context` must turn each
# value back into exactly that stack from the files alone.  Then a crash:
# the log's CRASH_CONTEXT and THREAD_CONTEXT, decoded from the paths the log
# names.  And the errors a user can make.
# usage: run.sh FAULTLINE CTX_APP CTX_LIB [CTX_PLUGIN [CTX_PLUGIN2]]
set -u
FL=$1 APP=$2 LIB=$3 PLUGIN=${4:-} PLUGIN2=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# Function names as decode prints them, GCC's clone suffixes (.part.0,
# .constprop.0, .isra.0) dropped.
names() { sed -n 's/^ *#[0-9]* \([^ ]*\) .*/\1/p' | sed 's/\..*//' | tr '\n' ' ' | sed 's/ $//'; }

export FAULTLINE_SPOOL=$tmp/spool
# Under ASan the crash must reach Faultline's handler, not ASan's; decode
# keeps ASan's leak check.
app() {
    ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1:verify_asan_link_order=0 \
        "$APP" "$@"
}
app "$tmp" >"$tmp/run1" || bad "ctx_app exited $?"
app >"$tmp/run2" || bad "ctx_app (second run) exited $?"
n=$(grep -c '^CTX ' "$tmp/run1")
[ "$n" -ge 10 ] && ok || bad "expected at least 10 reports, got $n"

# The same build gives the same value for the same stack in every run
# (the program is position-independent: its load address differs).
if cmp -s <(grep '^CTX ' "$tmp/run1") <(grep '^CTX ' "$tmp/run2"); then ok; else
    bad "values differ between two runs"; diff "$tmp/run1" "$tmp/run2"
fi

# Every call returned: back to main's value.
read -r _ before after < <(grep '^BACK ' "$tmp/run1")
[ -n "$before" ] && [ "$before" = "$after" ] && ok || bad "main's context $before, after the calls $after"

# Order matters: x>y and y>x differ.
xy=$(awk '$2=="xy"{print $3}' "$tmp/run1") yx=$(awk '$2=="yx"{print $3}' "$tmp/run1")
[ -n "$xy" ] && [ "$xy" != "$yx" ] && ok || bad "order_x>order_y and order_y>order_x gave $xy and $yx"

# Each value back into its stack, exactly one.
while read -r _ label value expect; do
    out=$("$FL" decode --context "$value" --obj "$APP" --obj "$LIB" 2>&1)
    rc=$?
    got=$(printf '%s\n' "$out" | names)
    stacks=$(printf '%s\n' "$out" | grep -c '^  stack ')
    if [ $rc -eq 0 ] && [ "$got" = "$expect" ] && [ "$stacks" -eq 1 ]; then ok; else
        bad "$label: 0x$value decoded to '$got' ($stacks stacks, exit $rc), expected '$expect'"
        printf '%s\n' "$out"
    fi
done < <(grep '^CTX ' "$tmp/run1")

# A trace event recorded in leaf_a carries leaf_a's context: the text dump
# has TRACE_CONTEXT after its TRACE line, and `faultline decode` of the
# trace-ID dump gives the same text, byte for byte.
a_leaf=$(awk '$2=="a_leaf"{print $3}' "$tmp/run1")
got=$(grep -A1 ' in leaf_a 1$' "$tmp/trace.txt" | sed -n 's/^TRACE_CONTEXT 0x//p')
[ -n "$a_leaf" ] && [ "$got" = "$a_leaf" ] && ok ||
    { bad "trace event's context '$got', leaf_a's '$a_leaf'"; cat "$tmp/trace.txt"; }
"$FL" decode --obj "$APP" --obj "$LIB" "$tmp/trace.ids" >"$tmp/trace.decoded" 2>&1 &&
    cmp -s "$tmp/trace.txt" "$tmp/trace.decoded" && ok ||
    { bad "decoded trace-ID dump differs from the text dump"; diff "$tmp/trace.txt" "$tmp/trace.decoded"; }

# Each of the two searches alone finds every stack too: deepening from the
# entry points, and meeting in the middle (unfolding from the top).
for how in deepening mitm; do
    while read -r _ label value expect; do
        got=$(FAULTLINE_DECODE_SEARCH=$how "$FL" decode --context "$value" --obj "$APP" --obj "$LIB" 2>&1 | names)
        [ "$got" = "$expect" ] && ok || bad "$how: $label: 0x$value decoded to '$got', expected '$expect'"
    done < <(grep '^CTX ' "$tmp/run1")
done

# All values at once, in one run of decode.
args=()
for v in $(awk '/^CTX /{print $3}' "$tmp/run1"); do args+=(--context "$v"); done
out=$("$FL" decode "${args[@]}" --obj "$APP" --obj "$LIB" 2>&1)
[ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^  stack 1:')" -eq "$n" ] && ok ||
    bad "decoding all $n values at once"

# A plugin: opened with dlopen(), its function reached only through the
# pointer dlsym() returned -- no code takes its address.  Found by both
# searches; and not without the plugin's file.
if [ -n "$PLUGIN" ]; then
    CTX_PLUGIN=$PLUGIN app >"$tmp/run3" || bad "ctx_app with the plugin exited $?"
    read -r _ label value expect < <(grep '^CTX plugin ' "$tmp/run3")
    for how in "" deepening mitm; do
        out=$(FAULTLINE_DECODE_SEARCH=$how "$FL" decode --context "${value:-0}" --obj "$APP" --obj "$LIB" --obj "$PLUGIN" 2>&1)
        rc=$?
        got=$(printf '%s\n' "$out" | names)
        [ $rc -eq 0 ] && [ -n "$expect" ] && [ "$got" = "$expect" ] &&
            [ "$(printf '%s\n' "$out" | grep -c '^  stack ')" -eq 1 ] && ok ||
            { bad "plugin${how:+ ($how)}: 0x$value decoded to '$got' (exit $rc), expected '$expect'"; printf '%s\n' "$out"; }
    done
    out=$("$FL" decode --context "${value:-0}" --obj "$APP" --obj "$LIB" --max-paths 100000 2>&1)
    ! printf '%s\n' "$out" | grep -q plugin_run && ok || bad "plugin stack found without the plugin: $out"
fi

# A plugin dlclose()d and a second one (the same code, another build id)
# opened where it was, in the same thread: the second one's functions
# must get their own ids, not the first one's from the thread's cache of
# modules.  Its report, and a crash inside it, decode to the right stack.
if [ -n "$PLUGIN2" ]; then
    CTX_PLUGIN=$PLUGIN CTX_PLUGIN2=$PLUGIN2 app reload >"$tmp/run4" || bad "ctx_app reload exited $?"
    # Mapped elsewhere, the cache could not have held the wrong entry:
    # the case would prove nothing.
    grep -qx 'REUSED 1' "$tmp/run4" && ok ||
        bad "the second plugin was not mapped where the first one was: $(grep REUSED "$tmp/run4")"
    read -r _ label value expect < <(grep '^CTX plugin2 ' "$tmp/run4")
    out=$("$FL" decode --context "${value:-0}" --obj "$APP" --obj "$LIB" --obj "$PLUGIN2" 2>&1)
    rc=$?
    got=$(printf '%s\n' "$out" | names)
    [ $rc -eq 0 ] && [ -n "$expect" ] && [ "$got" = "$expect" ] && ok ||
        { bad "reloaded plugin: 0x$value decoded to '$got' (exit $rc), expected '$expect'"; printf '%s\n' "$out"; }
    rm -rf "$tmp/spool"
    CTX_PLUGIN=$PLUGIN CTX_PLUGIN2=$PLUGIN2 app reload crash >"$tmp/run5" 2>&1
    [ $? -ne 0 ] && ok || bad "ctx_app reload crash exited 0"
    log=$(ls "$tmp"/spool/*.crashlog 2>/dev/null | head -1)
    want=$(sed -n 's/^CRASH_EXPECT //p' "$tmp/run5")
    if [ -z "$log" ]; then
        bad "reloaded plugin: no crash log"; cat "$tmp/run5"
    else
        out=$("$FL" decode "$log" 2>&1)
        rc=$?
        crashed=$(printf '%s\n' "$out" | sed -n '/^crashed thread/,/^thread /p' | names)
        [ $rc -eq 0 ] && [ -n "$want" ] && [ "$crashed" = "$want" ] && ok ||
            { bad "crash in the reloaded plugin decoded to '$crashed' (exit $rc), expected '$want'"; printf '%s\n' "$out"; }
    fi
fi

# ---- the crash log ----
rm -rf "$tmp/spool"
app crash >"$tmp/crash.out" 2>&1
rc=$?
[ $rc -ne 0 ] && ok || bad "ctx_app crash exited 0"
log=$(ls "$tmp"/spool/*.crashlog 2>/dev/null | head -1)
if [ -z "$log" ]; then
    bad "no crash log"
else
    grep -q '^CRASH_CONTEXT 0x' "$log" && ok || bad "no CRASH_CONTEXT in the log"
    grep -q '^THREAD_CONTEXT 0x' "$log" && ok || bad "no THREAD_CONTEXT in the log"
    out=$("$FL" decode "$log" 2>&1)
    rc=$?
    crashed=$(printf '%s\n' "$out" | sed -n '/^crashed thread/,/^thread /p' | names)
    other=$(printf '%s\n' "$out" | sed -n '/^thread /,/^trace context/p' | names)
    want_c=$(sed -n 's/^CRASH_EXPECT //p' "$tmp/crash.out")
    want_t=$(sed -n 's/^THREAD_EXPECT //p' "$tmp/crash.out")
    [ $rc -eq 0 ] && [ "$crashed" = "$want_c" ] && ok ||
        { bad "crashed thread decoded to '$crashed' (exit $rc), expected '$want_c'"; printf '%s\n' "$out"; }
    [ "$other" = "$want_t" ] && ok || bad "parked thread decoded to '$other', expected '$want_t'"
    # The event traced just before the crash: the crash's own context.
    tctx=$(grep -A1 ' about to crash$' "$log" | sed -n 's/^TRACE_CONTEXT //p')
    [ -n "$tctx" ] && [ "$tctx" = "$(sed -n 's/^CRASH_CONTEXT //p' "$log")" ] && ok ||
        bad "the last trace event's context '$tctx' is not the crash's"
    printf '%s\n' "$out" | grep -q "^trace context $tctx: 1 event" && ok ||
        { bad "decode of the crash log lists no trace context $tctx"; printf '%s\n' "$out"; }
    # The vdso (no file) is never looked for on a debuginfod server.
    vdso_id=$(grep -A1 '^OBJECT linux-vdso' "$log" | sed -n 's/^OBJECT_BUILD_ID //p')
    DEBUGINFOD_URLS=http://127.0.0.1:9 DEBUGINFOD_VERBOSE=1 "$FL" decode "$log" >/dev/null 2>"$tmp/dv"
    [ -n "$vdso_id" ] && ! grep -q "$vdso_id" "$tmp/dv" && ok ||
        bad "decode asked debuginfod for the vdso ($vdso_id): $(grep -m2 "$vdso_id" "$tmp/dv")"
    # A log without calling contexts: nothing to decode, said, exit 0.
    grep -v 'CONTEXT' "$log" >"$tmp/noctx.crashlog"
    "$FL" decode "$tmp/noctx.crashlog" >"$tmp/o" 2>&1
    [ $? -eq 0 ] && grep -q 'nothing to decode' "$tmp/o" && ok || bad "a log without contexts: $(cat "$tmp/o")"
    # On standard input, the same.
    "$FL" decode <"$log" >"$tmp/stdin.out" 2>&1
    [ $? -eq 0 ] && [ "$(sed -n '/^crashed thread/,/^thread /p' "$tmp/stdin.out" | names)" = "$want_c" ] &&
        ok || bad "crash log on stdin: $(head -3 "$tmp/stdin.out")"
    # One that does not parse: the reader's reason, not "not a trace-ID dump".
    sed 's/^CRASH_CONTEXT .*/CRASH_CONTEXT zzzz/' "$log" >"$tmp/bad.crashlog"
    "$FL" decode "$tmp/bad.crashlog" >"$tmp/o" 2>&1
    [ $? -eq 2 ] && grep -q "not a valid crash log: line [0-9]*: CRASH_CONTEXT: 'zzzz' is not a number" "$tmp/o" &&
        ok || bad "a bad crash log: $(cat "$tmp/o")"
    # The program and its library gone from where the log says they were:
    # said so, not "no function in the files given" (none were given).
    sed "s|^OBJECT_PATH $(dirname "$APP")/|OBJECT_PATH $tmp/gone/|" "$log" >"$tmp/gone.crashlog"
    DEBUGINFOD_URLS= "$FL" decode "$tmp/gone.crashlog" >"$tmp/o" 2>&1
    [ $? -eq 2 ] && grep -q "is the program itself missing\|none of the crash log's objects was found" "$tmp/o" &&
        ok || bad "program missing: $(cat "$tmp/o")"
    "$FL" decode "$tmp" >"$tmp/o" 2>&1
    [ $? -eq 2 ] && grep -q 'is a directory' "$tmp/o" && ok || bad "a directory: $(cat "$tmp/o")"
    # The same with the files given (the log's paths are then not needed).
    out=$("$FL" decode --obj "$APP" --obj "$LIB" "$log" 2>&1)
    [ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | sed -n '/^crashed thread/,/^thread /p' | names)" = "$want_c" ] &&
        ok || bad "crash log with --obj: $out"
fi

# ---- what a user can get wrong ----
"$FL" decode --context 123456789abcdef --obj "$APP" --obj "$LIB" >"$tmp/o" 2>&1
[ $? -eq 1 ] && grep -q 'no stack found' "$tmp/o" && ok || bad "an unknown value: $(cat "$tmp/o")"
"$FL" decode --context 0 --obj "$APP" >"$tmp/o" 2>&1
[ $? -eq 0 ] && grep -q 'empty' "$tmp/o" && ok || bad "value 0: $(cat "$tmp/o")"
"$FL" decode --context 1234 >"$tmp/o" 2>&1
[ $? -eq 2 ] && grep -q -- '--obj' "$tmp/o" && ok || bad "no --obj: $(cat "$tmp/o")"
"$FL" decode --context xyz --obj "$APP" >"$tmp/o" 2>&1
[ $? -eq 2 ] && grep -q 'not a hex value' "$tmp/o" && ok || bad "a bad value: $(cat "$tmp/o")"
"$FL" decode --context 1234 --obj "$FL" >"$tmp/o" 2>&1
[ $? -eq 2 ] && grep -q 'finstrument-functions' "$tmp/o" && ok || bad "an uninstrumented file: $(cat "$tmp/o")"
printf 'not an ELF file\n' >"$tmp/junk"
"$FL" decode --context 1234 --obj "$tmp/junk" >"$tmp/o" 2>&1
[ $? -eq 2 ] && grep -q 'not an ELF file' "$tmp/o" && ok || bad "a non-ELF --obj: $(cat "$tmp/o")"
deep=$(awk '$2=="recurse3"{print $3}' "$tmp/run1")
"$FL" decode --context "$deep" --max-paths 3 --obj "$APP" --obj "$LIB" >"$tmp/o" 2>&1
[ $? -eq 1 ] && grep -q 'raise --max-paths' "$tmp/o" && ok || bad "a budget too small: $(cat "$tmp/o")"
"$FL" decode --context "$deep" --max-depth 3 --obj "$APP" --obj "$LIB" >"$tmp/o" 2>&1
[ $? -eq 1 ] && grep -q 'all up to 3 deep' "$tmp/o" && ok || bad "a depth too small: $(cat "$tmp/o")"
"$FL" decode --context 1 --max-depth 0 --obj "$APP" >"$tmp/o" 2>&1
[ $? -eq 2 ] && ok || bad "--max-depth 0 accepted"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
