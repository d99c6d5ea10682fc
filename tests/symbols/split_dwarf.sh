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
#    those of the first check;
#  - symbols add --server sends the .dwo files (found as libdw finds them)
#    before the program, and names in a warning one found nowhere;
#  - symbols add of a .dwo file names its DWO id.
# With -fdebug-types-section (a C++ SOURCE, g++/clang++) the .dwo holds
# type units too, checked to be there: gcc's DWARF 5 puts each in a
# .debug_info.dwo section of its own before the compile unit's (read
# merged), clang's write a .debug_line.dwo for them whose files are not
# those the compile unit's DW_AT_call_file names (the skeleton's are).
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
case " $* " in *" -fdebug-types-section "*)
  # (Into a file: grep -q would end readelf early, failing the pipe.)
  readelf -SW --debug-dump=info "$dwo" >dwo.txt 2>/dev/null
  grep -q '\.debug_types\.dwo\|DW_UT_split_type' dwo.txt || fail "-fdebug-types-section wrote no type unit into $dwo"
  ;;
esac
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
if [ "$CC" = gcc ] || [ "$CC" = g++ ]; then
  llvm-symbolizer --obj=split --inlines <addrs >llvm_split
  cmp -s llvm_split with || fail "not llvm-symbolizer's answers on the split program: $(diff llvm_split with | head)"
fi
ok "with the .dwo: $(wc -l <addrs) addresses answered as llvm-symbolizer answers on the whole program"

mv "$dwo" hidden.dwo
llvm-symbolizer --obj=split --inlines <addrs >ref_nodwo
"$FL" symbolicate --cache c2 --obj split <addrs >without 2>without.err || fail "symbolicate without"
cmp -s ref_nodwo without || fail "without the .dwo: $(diff ref_nodwo without | head -20)"
cmp -s ref without && fail "without the .dwo, the same answers as with it: was it read?"
grep -q "warning: split: the .dwo files of 1 of its 1 split-DWARF units are not found.*: their functions and inlined frames are missing (their lines are read)$" without.err \
  || fail "no warning: $(cat without.err)"
ok "without the .dwo: llvm-symbolizer's answers, and a warning"

mv hidden.dwo "$dwo"
"$FL" symbolicate --cache c2 --obj split <addrs >again 2>again.err || fail "symbolicate again"
cmp -s ref again || fail "the cached symcache was not rebuilt: $(diff ref again | head)"
[ -s again.err ] && fail "stderr: $(cat again.err)"
ok "the .dwo back: the cached symcache is rebuilt"
# An upload sends the .dwo files too, found as libdw finds them, before
# the program (port 9 on loopback: refused, nothing is sent anywhere; the
# first file tried names what goes first).
"$FL" symbols add split --server http://127.0.0.1:9 --token t --timeout 5 --retries 0 >up.out 2>&1 \
  && fail "an upload to a closed port succeeded"
grep -q "symbols add: $(realpath "$dwo"): upload to http://127.0.0.1:9/api/v1/symbols failed" up.out \
  || fail "symbols add --server did not send the .dwo first: $(cat up.out)"
grep -q "2 files not uploaded" up.out || fail "symbols add --server: not the .dwo and the program: $(cat up.out)"
grep -q warning up.out && fail "a warning with the .dwo at hand: $(cat up.out)"
id=$(readelf --debug-dump=info split 2>/dev/null | grep -m1 -o 'DWO ID: *0x[0-9a-f]*\|GNU_dwo_id *: 0x[0-9a-f]*' | grep -o '0x[0-9a-f]*')
[ -n "$id" ] || fail "no DWO id in the skeleton"
id=$(printf %016x "$id")
mv "$dwo" hidden.dwo
"$FL" symbols add split --server http://127.0.0.1:9 --token t --timeout 5 --retries 0 >up2.out 2>&1
grep -q "warning: split: the .dwo files of 1 of its 1 split-DWARF units are not found .*so not uploaded.*(DWO id $id)" up2.out \
  || fail "symbols add --server without the .dwo: no warning: $(cat up2.out)"
grep -q "1 file not uploaded" up2.out || fail "without the .dwo: $(cat up2.out)"
ok "symbols add --server sends the .dwo file before the program; one found nowhere is named in a warning"
# The .dwo file itself: recognised by its DWO id; locally there is nothing
# to cache (the program's symcache reads it where it is named).
"$FL" symbols add --cache c3 hidden.dwo >dwo.out 2>&1 || fail "symbols add of the .dwo: $(cat dwo.out)"
grep -q "^$id hidden.dwo: a split DWARF object (.dwo, DWO id $id)" dwo.out || fail "symbols add of the .dwo: $(cat dwo.out)"
head -c 400 hidden.dwo >cut.dwo
"$FL" symbols add --cache c3 cut.dwo >cut.out 2>&1 && fail "a truncated .dwo was taken: $(cat cut.out)"
grep -q "cut.dwo: .*truncated" cut.out || fail "a truncated .dwo: $(cat cut.out)"
ok "symbols add of a .dwo file: its DWO id; a truncated one refused"
echo PASS
