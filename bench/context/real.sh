#!/usr/bin/env bash
# bench/context/real.sh BUILD_DIR - `faultline decode --context` against a
# real program: ctxreal (the project's symcache builder and reader built
# with -finstrument-functions, see ctxreal.c) samples its calling context
# with a profiling timer while it builds a symcache of libc's debug file
# (libc6-dbg) and looks addresses up in it; then every distinct sampled
# value is decoded, one `faultline decode` run per value (its wall time:
# reading and disassembling the program, then the search), and the
# results are tabulated.  A measurement: no thresholds, exit 0 unless
# something could not run.  When libc6-dbg's debug file is missing it says
# so and exits 0.
#
# Environment: REAL_ROUNDS (builds, default 20), REAL_LOOKUPS (per
# lookup pass, default 5000), REAL_MAX_PATHS (decode's --max-paths,
# default 20000000), REAL_TIME_CAP (seconds of decoding after which the
# values left are counted as not tried, default 150).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin=$build/bench/context/ctxreal
fl=$build/src/cli/faultline
[ -x "$bin" ] || cmake --build "$build" --target ctxreal >/dev/null
[ -x "$fl" ] || cmake --build "$build" --target faultline >/dev/null
rounds=${REAL_ROUNDS:-20}
nlook=${REAL_LOOKUPS:-5000}
maxp=${REAL_MAX_PATHS:-20000000}
cap=${REAL_TIME_CAP:-150}

libc=$(ldd "$bin" | awk '$1 == "libc.so.6" {print $3}')
libc=${libc:-/lib/x86_64-linux-gnu/libc.so.6}
id=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ {print $3}')
D=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
if [ -z "$id" ] || [ ! -f "$D" ]; then
    echo "context/real: libc's debug file ${D} missing (apt-get install libc6-dbg): skipped"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

TMPDIR=$work "$bin" "$D" "$rounds" "$nlook" >"$work/samples" 2>"$work/ctxreal.err" ||
    { cat "$work/ctxreal.err" >&2; exit 1; }
read -r _ taken kept zero distinct <"$work/samples"

# The graph's size: function symbols in ctxreal, and the instrumented
# functions decode finds among them (bench/context/ctxgraph).
nfuncs=$(readelf -sW "$bin" | awk '$4 == "FUNC" && $3 > 0 && $7 != "UND"' | wc -l)
graph=$build/bench/context/ctxgraph
[ -x "$graph" ] || cmake --build "$build" --target ctxgraph >/dev/null
ninstr=$("$graph" "$bin")

# Reading and disassembling the program alone: the value 0 is "empty"
# without a search.
t0=$EPOCHREALTIME
"$fl" decode --context 0 --obj "$bin" >/dev/null
t1=$EPOCHREALTIME
load_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) * 1000}')

start=$SECONDS
: >"$work/results"
i=0
while read -r tag v count; do
    [ "$tag" = CTX ] || continue
    i=$((i + 1))
    if ((SECONDS - start > cap)); then
        echo "$v $count untried 0 0 0" >>"$work/results"
        continue
    fi
    t0=$EPOCHREALTIME
    "$fl" decode --context "$v" --obj "$bin" --max-paths "$maxp" >"$work/out.$i" 2>&1 || true
    t1=$EPOCHREALTIME
    ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) * 1000}')
    stacks=$(grep -c '^  stack ' "$work/out.$i" || true)
    depth=$(awk '/^  stack 2:/ {exit} /^    #/ {n++} END {print n + 0}' "$work/out.$i")
    if grep -q 'no stack found in the first' "$work/out.$i"; then
        what=budget
    elif grep -q 'no stack found' "$work/out.$i"; then
        what=none
    elif [ "$stacks" -eq 1 ] && ! grep -q 'search stopped' "$work/out.$i"; then
        what=one
    elif [ "$stacks" -eq 1 ]; then
        what=oneplus # found, but the budget ran out in that weight's pass
    elif [ "$stacks" -ge 2 ]; then
        what=more
    else
        what=error
    fi
    echo "$v $count $what $ms $depth $i" >>"$work/results"
done <"$work/samples"

# median / max of a column over the rows a condition selects.
medmax() { # COLUMN CONDITION
    awk -v c="$1" "$2"' {print $c}' "$work/results" | sort -g |
        awk '{a[NR] = $1} END {if (!NR) print "- -"; else printf "%s %s\n", a[int((NR + 1) / 2)], a[NR]}'
}
count() { awk "$1"' {n++} END {print n + 0}' "$work/results"; }
weight() { awk "$1"' {n += $2} END {print n + 0}' "$work/results"; }
read -r tmed tmax < <(medmax 4 '$3 != "untried"')
read -r dmed dmax < <(medmax 5 '$3 == "one" || $3 == "oneplus" || $3 == "more"')
total_s=$(awk '{t += $4} END {printf "%.1f", t / 1000}' "$work/results")

echo "decode --context against a real program: ctxreal, $rounds symcache builds of libc's"
echo "debug file and 3 x $rounds x $nlook lookups, sampled by SIGPROF; one decode run"
echo "per distinct value, --max-paths $maxp"
row() { printf '  %-52s %s\n' "$1" "$2"; }
row "samples (nonzero / taken)" "$((kept - zero)) / $taken"
row "distinct contexts" "$distinct"
row "decoded to exactly one stack (samples)" "$(count '$3 == "one"') ($(weight '$3 == "one"'))"
row "one stack, then the budget ran out (samples)" "$(count '$3 == "oneplus"') ($(weight '$3 == "oneplus"'))"
row "decoded to more than one stack (samples)" "$(count '$3 == "more"') ($(weight '$3 == "more"'))"
row "not found within the budget (samples)" "$(count '$3 == "budget"') ($(weight '$3 == "budget"'))"
row "not found, every path tried (samples)" "$(count '$3 == "none"') ($(weight '$3 == "none"'))"
row "decode errors (samples)" "$(count '$3 == "error"') ($(weight '$3 == "error"'))"
row "not tried: over ${cap} s of decoding (samples)" "$(count '$3 == "untried"') ($(weight '$3 == "untried"'))"
row "decode time per value, median / max (ms)" "$tmed / $tmax"
row "  of which reading the program (--context 0, ms)" "$load_ms"
row "  all values, one after the other (s)" "$total_s"
row "decoded stack depth, median / max" "$dmed / $dmax"
row "functions in ctxreal (FUNC symbols)" "$nfuncs"
row "instrumented functions in decode's graph" "$ninstr"

echo "deepest decoded stacks:"
awk '$3 == "one" || $3 == "oneplus" || $3 == "more" {print $5, $6, $1, $2}' "$work/results" | sort -k1,1nr -k2,2n | head -3 |
    while read -r depth k v n; do
        echo "  0x$v ($n samples, depth $depth):"
        awk '/^  stack 2:/ {exit} /^    #/ {print "   ", $0}' "$work/out.$k"
    done
if grep -qE ' (budget|none|error) ' "$work/results"; then
    echo "not decoded (the 20 most sampled):"
    awk '$3 == "budget" || $3 == "none" || $3 == "error" {print "  0x" $1, $2, "samples,", $3, $4, "ms"}' \
        "$work/results" | head -20
fi
