#!/usr/bin/env bash
# .dwp packages of split DWARF: the .dwo files of a program's units packed
# into PROG.dwp (binutils' dwp, llvm-dwp), read beside the program.
#   dwp.sh FAULTLINE SOURCE.c COMPILER PACKER [FLAGS...]
# Builds SOURCE and a second unit split, packs their .dwo files into
# split.dwp and removes them, builds the same whole for the reference, then
# checks every .text address of the split program:
#  - with the package: the answers of llvm-symbolizer on the whole program,
#    no warning; the same with the package's sections compressed (zlib,
#    SHF_COMPRESSED and GNU's .zdebug_);
#  - the package beside the debug file (.gnu_debuglink) instead: the same;
#  - without it: a warning naming the 2 units; the package back: the cached
#    symcache is rebuilt;
#  - a package whose index puts a unit's part outside its section, or
#    whose index is cut short: no crash, the units count as not found;
#  - symbols add of the package names its DWO ids, of a damaged one says
#    what is wrong.
# A C++ SOURCE (g++/clang++) gets a second unit using the types of its
# header; with -fdebug-types-section the package then holds type units
# (.debug_tu_index), the two units' shared ones once.
set -uo pipefail
FL=$(realpath "$1") SRC=$(realpath "$2") CC=$3 PACK=$4
shift 4
work=$(mktemp -d /tmp/fl-dwp-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
for t in "$CC" "$PACK" llvm-symbolizer objcopy readelf; do
  command -v "$t" >/dev/null || fail "$t is not installed"
done
cp "$SRC" "$(dirname "$SRC")"/*.h "$work/"
cd "$work" || fail "cd"
src=$(basename "$SRC")
# The second unit on one line: llvm-dwp 14 loops for ever on gcc's DWARF 5
# .dwo of the same function written over several lines (and binutils'
# dwp cannot pack DWARF 5 at all), so the packer runs under a timeout.
case $src in
  *.cpp) extra=extra.cpp
    cat >extra.cpp <<'EOF'
#include "types.h"
int extra_unit(int v) { shapes::Shape s(v); shapes::Counter c; return shapes::measure(s, shapes::detail::Box<long>{v}, c) + c.bump("y") + s.area(); }
EOF
    ;;
  *) extra=extra.c
    cat >extra.c <<'EOF'
static inline int sq(int x) { return x * x; }
int extra_unit(int v) { int s = 0; for (int i = 0; i < v; i++) s += sq(i) ^ v; return s; }
EOF
    ;;
esac
for u in "$src" $extra; do
  "$CC" -O2 -gsplit-dwarf "$@" -c "$u" -o "split-${u%.*}.o" || fail "compile split $u"
  "$CC" -O2 "$@" -c "$u" -o "whole-${u%.*}.o" || fail "compile whole $u"
done
"$CC" split-*.o -o split -Wl,--build-id || fail "link split"
"$CC" whole-*.o -o whole -Wl,--build-id || fail "link whole"
cmp -s <(objdump -d --no-show-raw-insn split | tail -n +4) <(objdump -d --no-show-raw-insn whole | tail -n +4) \
  || fail "the split and whole builds differ in code: no reference"
[ "$(ls ./*.dwo | wc -l)" = 2 ] || fail "not two .dwo files"
timeout 120 "$PACK" -e split -o split.dwp || fail "$PACK"
readelf -SW split.dwp | grep -q '\.debug_cu_index' || fail "no .debug_cu_index in the package"
case " $* " in *" -fdebug-types-section "*)
  readelf -SW split.dwp >dwp.txt
  grep -q '\.debug_tu_index' dwp.txt || fail "no type units (.debug_tu_index) in the package" ;;
esac
rm -f ./*.dwo

read -r lo size < <(readelf -SW split | awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')
awk -v lo=$((16#$lo)) -v n=$((16#$size)) 'BEGIN { for (i = 0; i < n; i++) printf "0x%x\n", lo + i }' >addrs
llvm-symbolizer --obj=whole --inlines <addrs >ref || fail "llvm-symbolizer"
# (llvm-symbolizer reads split.dwp itself: the reference without it is
# taken with the package away.)
mv split.dwp hidden.dwp
llvm-symbolizer --obj=split --inlines <addrs >ref_nodwo || fail "llvm-symbolizer"
mv hidden.dwp split.dwp
cmp -s ref ref_nodwo && fail "the split program without its .dwo files answers as the whole one: no test"

"$FL" symbolicate --cache c1 --obj split <addrs >with 2>with.err || fail "symbolicate"
cmp -s ref with || fail "with the package: $(diff ref with | head -20)"
[ -s with.err ] && fail "stderr with the package: $(cat with.err)"
ls -A c1 | grep -q '\.dwo\.[0-9a-f]\{16\}$' && fail "a view directory was left: $(ls -A c1)"
ok "with split.dwp ($PACK): $(wc -l <addrs) addresses answered as llvm-symbolizer answers on the whole program"

cp split.dwp orig.dwp
for z in zlib-gabi zlib-gnu; do
  objcopy --compress-debug-sections=$z orig.dwp split.dwp || fail "objcopy $z"
  readelf -SW split.dwp | grep -q ' C \|\.zdebug_' || fail "objcopy $z compressed nothing"
  "$FL" symbolicate --cache "c-$z" --obj split <addrs >z 2>z.err || fail "symbolicate $z"
  cmp -s ref z || fail "with the package compressed ($z): $(diff ref z | head -20)"
  [ -s z.err ] && fail "stderr with the package compressed ($z): $(cat z.err)"
done
cp orig.dwp split.dwp
ok "the package compressed (zlib-gabi, zlib-gnu): the same answers"

mv split.dwp hidden.dwp
"$FL" symbolicate --cache c2 --obj split <addrs >without 2>without.err || fail "symbolicate without"
cmp -s ref_nodwo without || fail "without the package: $(diff ref_nodwo without | head -20)"
grep -q "warning: split: the .dwo files of 2 of its 2 split-DWARF units are not found" without.err \
  || fail "no warning: $(cat without.err)"
mv hidden.dwp split.dwp
"$FL" symbolicate --cache c2 --obj split <addrs >again 2>again.err || fail "symbolicate again"
cmp -s ref again || fail "the cached symcache was not rebuilt: $(diff ref again | head)"
[ -s again.err ] && fail "stderr: $(cat again.err)"
ok "without the package: a warning; the package back: the cached symcache is rebuilt"

# The package beside the debug file (.gnu_debuglink), not the program:
# read there too (gdb's and llvm's other place, DEBUGFILE.dwp).
cp split linked
objcopy --only-keep-debug split linked.debug || fail "objcopy --only-keep-debug"
objcopy --add-gnu-debuglink=linked.debug linked || fail "objcopy --add-gnu-debuglink"
cp split.dwp linked.debug.dwp
"$FL" symbolicate --cache c7 --obj linked <addrs >linked.out 2>linked.err || fail "symbolicate linked"
cmp -s ref linked.out || fail "with the package beside the debug file: $(diff ref linked.out | head -20)"
[ -s linked.err ] && fail "stderr with the package beside the debug file: $(cat linked.err)"
ok "the package beside the debug file (DEBUGFILE.dwp): the same answers"

"$FL" symbols add --cache c3 split.dwp >add.out 2>&1 || fail "symbols add of the package: $(cat add.out)"
ids=$(readelf --debug-dump=info split 2>/dev/null | grep -o 'DWO ID: *0x[0-9a-f]*\|GNU_dwo_id *: 0x[0-9a-f]*' | grep -o '0x[0-9a-f]*')
[ "$(wc -w <<<"$ids")" = 2 ] || fail "not two DWO ids in the skeletons: $ids"
for id in $ids; do
  grep -q "^split.dwp: a .dwp package of split DWARF (2 units, DWO ids .*$(printf %016x "$id")" add.out \
    || fail "symbols add of the package does not name $id: $(cat add.out)"
done
ok "symbols add of the package names its 2 DWO ids"

# A hostile index: the first unit's first part made 2 GiB long, then the
# index cut short.  The package is not used (no crash), and says why.
le32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($2 & 255)) $(($2 >> 8 & 255)) $(($2 >> 16 & 255)) $(($2 >> 24 & 255)))" \
  | dd of="$1" bs=1 seek="$3" conv=notrunc status=none; }
rd32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
ix=$((16#$(readelf -SW split.dwp | awk '{ for (i = 1; i < NF; i++) if ($i == ".debug_cu_index") { print $(i + 3); exit } }')))
ixsize=$((16#$(readelf -SW split.dwp | awk '{ for (i = 1; i < NF; i++) if ($i == ".debug_cu_index") { print $(i + 4); exit } }')))
ncols=$(rd32 split.dwp $((ix + 4))) nunits=$(rd32 split.dwp $((ix + 8))) nslots=$(rd32 split.dwp $((ix + 12)))
sizes=$((ix + 16 + nslots * 12 + ncols * 4 + nunits * ncols * 4))
[ $((sizes + nunits * ncols * 4)) -le $((ix + ixsize)) ] || fail "index layout misread"
cp orig.dwp split.dwp
le32 split.dwp $((1 << 31)) $sizes
"$FL" symbolicate --cache c4 --obj split <addrs >bad 2>bad.err || fail "symbolicate with a hostile index: $(cat bad.err)"
cmp -s ref_nodwo bad || fail "a hostile index: $(diff ref_nodwo bad | head -20)"
grep -q "the .dwo files of 2 of its 2 split-DWARF units are not found" bad.err || fail "a hostile index: $(cat bad.err)"
"$FL" symbols add --cache c3 split.dwp >bad.out 2>&1 && fail "a hostile index was taken: $(cat bad.out)"
grep -q "split.dwp: not a usable .dwp package: the unit index puts unit [0-9a-f]*'s part of .* outside its" bad.out \
  || fail "a hostile index: $(cat bad.out)"
cp orig.dwp split.dwp
le32 split.dwp $((nslots * 4)) $((ix + 12)) # more slots than the index holds
"$FL" symbolicate --cache c5 --obj split <addrs >bad2 2>bad2.err || fail "symbolicate with a cut index: $(cat bad2.err)"
cmp -s ref_nodwo bad2 || fail "a cut index: $(diff ref_nodwo bad2 | head -20)"
"$FL" symbols add --cache c3 split.dwp >bad2.out 2>&1 && fail "a cut index was taken: $(cat bad2.out)"
grep -q "split.dwp: not a usable .dwp package: the unit index is truncated" bad2.out || fail "a cut index: $(cat bad2.out)"
head -c 1000 orig.dwp >split.dwp
"$FL" symbolicate --cache c6 --obj split <addrs >cut 2>cut.err || fail "symbolicate with a truncated package: $(cat cut.err)"
cmp -s ref_nodwo cut || fail "a truncated package: $(diff ref_nodwo cut | head -20)"
ok "a hostile or truncated index: the units count as not found, and symbols add says why"
echo PASS
