#!/usr/bin/env bash
# aarch64.sh FAULTLINE: the calling context on aarch64.  ctx_app, its
# library and the client library are cross-compiled with Debian's
# aarch64-linux-gnu gcc (the client without -finstrument-functions, the
# program and library with it), at -O0 and -O2, and run under qemu-user;
# `faultline decode` on this x86-64 machine must turn every value, and the
# crash log's, into exactly the stack the program's structure says.
set -u
FL=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SYSROOT=/usr/aarch64-linux-gnu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
names() { sed -n 's/^ *#[0-9]* \([^ ]*\) .*/\1/p' | sed 's/\..*//' | tr '\n' ' ' | sed 's/ $//'; }
CC=aarch64-linux-gnu-gcc
run() { qemu-aarch64 -L "$SYSROOT" "$@"; }

# The client library's objects, once.
mkdir -p "$work/client"
for f in "$SRC"/src/client/*.c "$SRC"/src/common/tracefmt.c "$SRC"/src/common/crashlog_write.c; do
    case $f in */preload.c) continue ;; esac
    $CC -std=gnu11 -O2 -fvisibility=hidden -fPIC -Wall -Wextra -Werror -I"$SRC/include" \
        -I"$SRC/src/client" -I"$SRC/src/common" -c "$f" -o "$work/client/$(basename "$f" .c).o" ||
        { echo "FAIL: cross-compiling $f"; exit 1; }
done

for opt in O0 O2; do
    d=$work/$opt
    mkdir -p "$d"
    $CC -$opt -shared -fPIC -finstrument-functions "$SRC/tests/context/ctx_lib.c" -o "$d/libctxlib.so" &&
        $CC -$opt -finstrument-functions -I"$SRC/include" "$SRC/tests/context/ctx_app.c" \
            "$work"/client/*.o -o "$d/ctx_app" -L"$d" -lctxlib -lpthread -ldl -rdynamic \
            -Wl,-rpath,'$ORIGIN' || { bad "$opt: cross-compiling ctx_app"; continue; }
    FAULTLINE_SPOOL=$d/spool run "$d/ctx_app" >"$d/run" 2>&1 || bad "$opt: ctx_app exited $?"
    n=$(grep -c '^CTX ' "$d/run")
    [ "$n" -ge 10 ] && ok || bad "$opt: $n reports"
    while read -r _ label value expect; do
        got=$("$FL" decode --context "$value" --obj "$d/ctx_app" --obj "$d/libctxlib.so" 2>&1 | names)
        [ "$got" = "$expect" ] && ok || bad "$opt: $label: 0x$value decoded to '$got', expected '$expect'"
    done < <(grep '^CTX ' "$d/run")
    # A crash under qemu: the log's context, decoded from the paths it names.
    FAULTLINE_SPOOL=$d/spool run "$d/ctx_app" crash >"$d/crash.out" 2>&1
    log=$(ls "$d"/spool/*.crashlog 2>/dev/null | head -1)
    if [ -z "$log" ]; then
        bad "$opt: no crash log"
        continue
    fi
    want=$(sed -n 's/^CRASH_EXPECT //p' "$d/crash.out")
    got=$("$FL" decode --obj "$d/ctx_app" --obj "$d/libctxlib.so" "$log" 2>&1 |
        sed -n '/^crashed thread/,/^thread /p' | names)
    [ "$got" = "$want" ] && ok || bad "$opt: the crash decoded to '$got', expected '$want'"
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
