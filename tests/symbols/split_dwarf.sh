#!/usr/bin/env bash
# Split DWARF (-gsplit-dwarf): the DIEs are in a .dwo file next to the
# object, found from the skeleton unit's DW_AT_dwo_name and DW_AT_comp_dir.
#   split_dwarf.sh FAULTLINE SOURCE.c COMPILER [FLAGS...]
# Builds SOURCE split (and, for the reference, also whole), then checks
# every .text address of the split program:
#  - with its .dwo: the answers of llvm-symbolizer on the whole program
#    (for gcc also on the split one: LLVM 14 reads gcc's .dwo files, but
#    drops clang's inlined frames and prints line 0 for them);
#  - without its .dwo: exactly llvm-symbolizer's answers (lines, no
#    functions from the .dwo), and a warning naming the count;
#  - the .dwo back: the cached symcache is rebuilt, the answers are again
#    those of the first check.
set -uo pipefail
FL=$(realpath "$1") SRC=$(realpath "$2") CC=$3
shift 3
work=$(mktemp -d /tmp/fl-split-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
command -v "$CC" >/dev/null || fail "$CC is not installed"
command -v llvm-symbolizer >/dev/null || fail "llvm-symbolizer is not installed"
cp "$SRC" "$(dirname "$SRC")"/*.h "$work/"
cd "$work" || fail "cd"
src=$(basename "$SRC")
"$CC" -O2 -gsplit-dwarf "$@" -c "$src" -o split.o || fail "compile split"
"$CC" split.o -o split -Wl,--build-id || fail "link split"
"$CC" -O2 "$@" -c "$src" -o whole.o || fail "compile whole"
"$CC" whole.o -o whole -Wl,--build-id || fail "link whole"
ls ./*.dwo >/dev/null 2>&1 || fail "no .dwo file was written"
dwo=$(ls ./*.dwo | head -1)
info=$(readelf --debug-dump=info split 2>/dev/null)
grep -q 'DW_UT_skeleton\|GNU_dwo_name' <<<"$info" || fail "no skeleton unit"
cmp -s <(objdump -d --no-show-raw-insn split | tail -n +4) <(objdump -d --no-show-raw-insn whole | tail -n +4) \
  || fail "the split and whole builds differ in code: no reference"

read -r lo size < <(readelf -SW split | awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')
awk -v lo=$((16#$lo)) -v n=$((16#$size)) 'BEGIN { for (i = 0; i < n; i++) printf "0x%x\n", lo + i }' >addrs
llvm-symbolizer --obj=whole --inlines <addrs >ref || fail "llvm-symbolizer"

"$FL" symbolicate --cache c1 --obj split <addrs >with 2>with.err || fail "symbolicate"
cmp -s ref with || fail "with the .dwo: $(diff ref with | head -20)"
[ -s with.err ] && fail "stderr with the .dwo: $(cat with.err)"
if [ "$CC" = gcc ]; then
  llvm-symbolizer --obj=split --inlines <addrs >llvm_split
  cmp -s llvm_split with || fail "not llvm-symbolizer's answers on the split program: $(diff llvm_split with | head)"
fi
ok "with the .dwo: $(wc -l <addrs) addresses answered as llvm-symbolizer answers on the whole program"

mv "$dwo" hidden.dwo
llvm-symbolizer --obj=split --inlines <addrs >ref_nodwo
"$FL" symbolicate --cache c2 --obj split <addrs >without 2>without.err || fail "symbolicate without"
cmp -s ref_nodwo without || fail "without the .dwo: $(diff ref_nodwo without | head -20)"
cmp -s ref without && fail "without the .dwo, the same answers as with it: was it read?"
grep -q "warning: split: the .dwo files of 1 of its 1 split-DWARF units are not found" without.err \
  || fail "no warning: $(cat without.err)"
ok "without the .dwo: llvm-symbolizer's answers, and a warning"

mv hidden.dwo "$dwo"
"$FL" symbolicate --cache c2 --obj split <addrs >again 2>again.err || fail "symbolicate again"
cmp -s ref again || fail "the cached symcache was not rebuilt: $(diff ref again | head)"
[ -s again.err ] && fail "stderr: $(cat again.err)"
ok "the .dwo back: the cached symcache is rebuilt"
# An upload: the server gets the file, not its .dwo files; say so before
# sending (port 9 on loopback: refused, nothing is sent anywhere).
"$FL" symbols add split --server http://127.0.0.1:9 --token t --timeout 5 >up.out 2>&1 \
  && fail "an upload to a closed port succeeded"
grep -q "warning: split: 1 of its units are split DWARF (-gsplit-dwarf): the server reads the file uploaded, not their .dwo files" up.out \
  || fail "symbols add --server: no warning: $(cat up.out)"
ok "symbols add --server warns that the .dwo files stay behind"
echo PASS
