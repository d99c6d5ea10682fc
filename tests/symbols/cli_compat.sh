#!/usr/bin/env bash
# cli_compat.sh FAULTLINE PROGRAM
# Input handling of `faultline symbolicate` against llvm-symbolizer, byte
# for byte: radix prefixes, junk lines (echoed), blank lines, leading
# blanks, trailing tokens, "CODE " prefix, CRLF, overflow, long lines,
# addresses as arguments, and a file that cannot be opened.
set -euo pipefail
fl=$1 prog=$2
sym=${LLVM_SYMBOLIZER:-llvm-symbolizer}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; diff "$work/a" "$work/b" | head -20 >&2; exit 1; }

long=$(printf 'x%.0s' $(seq 1 1500))
printf '%s\n' 0x1100 zzz '' 0x 0X11a0 010 08 0b11 0o17 '1 2' '  0x1150 foo' \
  'CODE 0x1160' 0x1ffffffffffffffff 18446744073709551615 4400 "$long" "0x1100 $long" \
  '	0x1100' 0x11G >"$work/in"
printf '0x1100\r\n0x1180\r\n0x1190' >>"$work/in"   # CRLF and no final newline

"$sym" --obj="$prog" --inlines <"$work/in" >"$work/a" 2>/dev/null
"$fl" symbolicate --obj "$prog" --cache "$work/c" <"$work/in" >"$work/b"
cmp -s "$work/a" "$work/b" || fail "stdin input handling differs"

"$sym" --obj="$prog" --inlines 0x1100 zzz 4400 0x11a0 >"$work/a" 2>/dev/null
"$fl" symbolicate --obj "$prog" --cache "$work/c" 0x1100 zzz 4400 0x11a0 >"$work/b"
cmp -s "$work/a" "$work/b" || fail "argument input differs"

"$sym" --obj="$work/nonexistent" --inlines 0x1100 junk >"$work/a" 2>/dev/null
"$fl" symbolicate --obj "$work/nonexistent" --cache "$work/c" 0x1100 junk >"$work/b" 2>"$work/err"
cmp -s "$work/a" "$work/b" || fail "missing object output differs"
[ -s "$work/err" ] || fail "no error message for a missing object"
# Options anywhere, as llvm-symbolizer takes them, and -eFILE.
"$sym" --inlines 0x1100 0x11a0 --obj="$prog" >"$work/a" 2>/dev/null
"$fl" symbolicate 0x1100 --cache "$work/c" 0x11a0 -e"$prog" >"$work/b"
cmp -s "$work/a" "$work/b" || fail "options after the addresses differ"

# Files that cannot be symbolicated are said to be so on stderr, answered
# "??", and leave no symcache behind: a relocatable object and a file cut
# short (its section headers past its end).
cc=$(command -v gcc || command -v cc)
printf 'int f(int x) { return x + 1; }\n' >"$work/o.c"
"$cc" -O2 -g -c "$work/o.c" -o "$work/o.o"
head -c 5000 "$prog" >"$work/cut"
for f in o.o cut; do
    want=$([ $f = o.o ] && echo "relocatable object" || echo "truncated")
    "$fl" symbolicate --obj "$work/$f" --cache "$work/c2" 0x10 >"$work/b" 2>"$work/err"
    grep -q "$want" "$work/err" || { echo "FAIL: $f: stderr '$(cat "$work/err")'" >&2; exit 1; }
    grep -qx '??' "$work/b" || { echo "FAIL: $f: not answered ??" >&2; exit 1; }
    "$fl" symbols add "$work/$f" --cache "$work/c2" 2>"$work/err" && { echo "FAIL: symbols add $f succeeded" >&2; exit 1; }
    grep -q "$want" "$work/err" || { echo "FAIL: symbols add $f: '$(cat "$work/err")'" >&2; exit 1; }
done
[ -z "$(ls -A "$work/c2" 2>/dev/null)" ] || { echo "FAIL: a symcache was kept: $(ls "$work/c2")" >&2; exit 1; }

# An output that cannot be written is said to be so (a closed pipe is not).
if "$fl" symbolicate --obj "$prog" --cache "$work/c" 0x1100 >/dev/full 2>"$work/err"; then
    echo "FAIL: writing to /dev/full exited 0" >&2; exit 1
fi
grep -q 'No space left' "$work/err" || { echo "FAIL: /dev/full: '$(cat "$work/err")'" >&2; exit 1; }
echo "cli compat: ok"
