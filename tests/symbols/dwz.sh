#!/usr/bin/env bash
# DWARF that dwz -m moved into a shared file (.gnu_debugaltlink): with the
# file where the link names it, `faultline symbolicate` on the dwz'd debug
# file answers every .text address exactly as llvm-symbolizer does on the
# original program; without it, names are missing, a warning says which
# file is, and the cached symcache is rebuilt once the file is there.
#   dwz.sh FAULTLINE PROGRAM
set -uo pipefail
FL=$1 PROG=$2
work=$(mktemp -d /tmp/fl-dwz-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
command -v dwz >/dev/null || fail "dwz is not installed (scripts/deps.sh installs it)"
command -v llvm-symbolizer >/dev/null || fail "llvm-symbolizer is not installed"

mkdir -p "$work/dbg" "$work/other" "$work/alt"
objcopy --only-keep-debug "$PROG" "$work/dbg/a.debug" || fail "objcopy"
cp "$work/dbg/a.debug" "$work/other/b.debug"
dwz -m "$work/alt/common.dwz" -M ../alt/common.dwz "$work/dbg/a.debug" "$work/other/b.debug" \
  || fail "dwz -m"
n=$(readelf --debug-dump=info "$work/dbg/a.debug" 2>/dev/null | grep -c '<alt 0x')
[ "$n" -gt 0 ] || fail "dwz moved nothing into the shared file"
ALT=$(readelf -n "$work/alt/common.dwz" 2>/dev/null | awk '/Build ID/ {print $3}')
[ -n "$ALT" ] || fail "no build id in the dwz file"
ok "$n references into the dwz file $ALT"

# Every address of .text.
read -r lo size < <(readelf -SW "$PROG" | awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')
[ -n "$lo" ] || fail "no .text in $PROG"
awk -v lo=$((16#$lo)) -v n=$((16#$size)) 'BEGIN { for (i = 0; i < n; i++) printf "0x%x\n", lo + i }' \
  >"$work/addrs"
llvm-symbolizer --obj="$PROG" --inlines <"$work/addrs" >"$work/ref" || fail "llvm-symbolizer"
grep -q . "$work/ref" || fail "no reference output"

"$FL" symbolicate --cache "$work/c1" --obj "$work/dbg/a.debug" <"$work/addrs" >"$work/with" 2>"$work/with.err" \
  || fail "symbolicate with the dwz file"
cmp -s "$work/ref" "$work/with" || fail "with the dwz file: $(diff "$work/ref" "$work/with" | head -20)"
[ -s "$work/with.err" ] && fail "stderr with the dwz file: $(cat "$work/with.err")"
ok "with the dwz file: $(wc -l <"$work/addrs") addresses as llvm-symbolizer answers on the original"

mv "$work/alt/common.dwz" "$work/common.dwz"
"$FL" symbolicate --cache "$work/c2" --obj "$work/dbg/a.debug" <"$work/addrs" >"$work/without" 2>"$work/without.err" \
  || fail "symbolicate without the dwz file"
cmp -s "$work/ref" "$work/without" && fail "without the dwz file, the same answers: was it used?"
grep -q "warning: $work/dbg/a.debug: its DWARF links to a dwz file (build id $ALT) that is not found" "$work/without.err" \
  || fail "no warning: $(cat "$work/without.err")"
ok "without it: $(diff "$work/ref" "$work/without" | grep -c '^>') lines differ, and a warning"
"$FL" symbols add --cache "$work/c3" "$work/dbg/a.debug" >"$work/add.out" 2>&1 || fail "symbols add: $(cat "$work/add.out")"
grep -q "warning: .*$ALT" "$work/add.out" || fail "symbols add: no warning: $(cat "$work/add.out")"

# The file comes back: the cached symcache (built without it) is rebuilt.
mv "$work/common.dwz" "$work/alt/common.dwz"
"$FL" symbolicate --cache "$work/c2" --obj "$work/dbg/a.debug" <"$work/addrs" >"$work/again" 2>"$work/again.err" \
  || fail "symbolicate again"
cmp -s "$work/ref" "$work/again" || fail "the cached symcache was not rebuilt: $(diff "$work/ref" "$work/again" | head)"
[ -s "$work/again.err" ] && fail "stderr: $(cat "$work/again.err")"
ok "the cached symcache is rebuilt once the dwz file is there"

echo PASS
