#!/usr/bin/env bash
# bench/symbols/run.sh BUILD_DIR
# faultline symbolicate against llvm-symbolizer, addr2line and eu-addr2line
# on N (default 200000) random addresses inside libc's functions, using
# libc6-dbg's debug file; symcache build time, peak RSS and size against
# llvm-gsymutil --convert, for libc's debug file and, with BENCH_SYM_BIG=FILE,
# for FILE too (a large program: bench/symbols/bigprog.sh makes one).
# Medians of RUNS (default 3) runs, wall clock.
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
N=${BENCH_SYM_N:-200000}
RUNS=${BENCH_SYM_RUNS:-3}
fl=$build/src/cli/faultline
sb=$build/bench/symbols/symbench
[ -x "$fl" ] && [ -x "$sb" ] || { echo "symbols bench: build faultline and symbench first" >&2; exit 1; }
id=$(readelf -n /lib/x86_64-linux-gnu/libc.so.6 | awk '/Build ID/ {print $3}')
D=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ -f "$D" ] || { echo "symbols bench: $D missing (apt-get install libc6-dbg)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sb" gen "$D" "$N" 1 >"$work/addrs"
first=$(head -1 "$work/addrs")

now() { date +%s%N; }
# median_s CMD...: median wall seconds of RUNS runs (stdin from $IN).
median_s() {
    local ts=() t0 t1
    for ((r = 0; r < RUNS; r++)); do
        t0=$(now); "$@" <"$IN" >/dev/null 2>&1; t1=$(now)
        ts+=($(( t1 - t0 )))
    done
    printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.4f", a[int((NR+1)/2)]/1e9}'
}

cache=$work/cache
"$fl" symbols add "$D" --cache "$cache" >/dev/null   # warm: symcache exists

declare -A start thr
tools=(faultline llvm-symbolizer addr2line eu-addr2line)
run_tool() {
    case $1 in
    faultline) "$fl" symbolicate --obj "$D" --cache "$cache" ;;
    llvm-symbolizer) llvm-symbolizer --obj="$D" --inlines ;;
    addr2line) addr2line -i -f -e "$D" ;;
    eu-addr2line) eu-addr2line -i -f -e "$D" ;;
    esac
}
echo "$first" >"$work/one"
for t in "${tools[@]}"; do
    command -v "${t%% *}" >/dev/null 2>&1 || [ "$t" = faultline ] || { start[$t]=NA; thr[$t]=NA; continue; }
    IN=$work/one start[$t]=$(median_s run_tool "$t")
    IN=$work/addrs total=$(median_s run_tool "$t")
    thr[$t]=$(awk -v T="$total" -v S="${start[$t]}" -v n="$N" 'BEGIN {printf "%.3f", (T - S) * 1e6 / n}')
done

echo "symbolication: $N random addresses in libc's functions ($D), median of $RUNS runs"
printf '%-16s %14s %14s %16s\n' tool "start-up (ms)" "µs/address" "faultline is ×"
for t in "${tools[@]}"; do
    ratio=$(awk -v a="${thr[$t]}" -v b="${thr[faultline]}" 'BEGIN { if (a == "NA" || b <= 0) print "-"; else printf "%.1f", a / b }')
    st=$(awk -v s="${start[$t]}" 'BEGIN { if (s == "NA") print "NA"; else printf "%.1f", s * 1000 }')
    printf '%-16s %14s %14s %16s\n' "$t" "$st" "${thr[$t]}" "$ratio"
done

lib_ns=$("$sb" lookup "$cache"/"$id".symcache "$work/addrs")
memo_ns=$("$sb" lookup "$cache"/"$id".symcache "$work/addrs" memo)
first_us=$("$sb" first "$cache"/"$id".symcache "$first" 101)
echo "in-process lookup (no output): $lib_ns ns/address; memoized, as symbolicate does for a batch: $memo_ns ns/address"
echo "first address of a build id (open + validate + lookup, in process, warm page cache): $first_us µs"

# Symcache build against llvm-gsymutil: time and peak RSS (symbench run:
# the child's ru_maxrss), medians of RUNS runs each.
# convert NAME CMD...: prints "seconds MB" (medians).
convert() {
    local ts=() ms=() out
    for ((r = 0; r < RUNS; r++)); do
        out=$("$sb" run "$@") || return 1
        ts+=("${out% *}")
        ms+=("${out#* }")
    done
    med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    echo "$(med "${ts[@]}") $(awk -v k="$(med "${ms[@]}")" 'BEGIN {printf "%.1f", k / 1024}')"
}
gs=$(command -v llvm-gsymutil || ls /usr/lib/llvm-*/bin/llvm-gsymutil 2>/dev/null | head -1)
convert_table() { # convert_table FILE LABEL
    local f=$1 fl_r fl_sz gs_r gs_sz
    echo
    echo "debug info converter on $2 ($(stat -c %s "$f" | awk '{printf "%.1f", $1 / 1048576}') MB), median of $RUNS runs"
    printf '%-36s %10s %14s %12s\n' "converter" "time (s)" "peak RSS (MB)" "size (KB)"
    rm -rf "$work/c2"
    fl_r=$(convert "$fl" symbols add "$f" --cache "$work/c2" --force) || { echo "faultline symbols add failed on $f"; return; }
    fl_sz=$(stat -c %s "$work"/c2/*.symcache)
    printf '%-36s %10s %14s %12s\n' "faultline symcache (+cols, inlines)" "${fl_r% *}" "${fl_r#* }" "$((fl_sz / 1024))"
    if [ -n "$gs" ]; then
        gs_r=$(convert "$gs" --convert "$f" --out-file "$work/out.gsym") || { echo "llvm-gsymutil failed on $f"; return; }
        gs_sz=$(stat -c %s "$work/out.gsym")
        printf '%-36s %10s %14s %12s\n' "llvm-gsymutil --convert (gsym)" "${gs_r% *}" "${gs_r#* }" "$((gs_sz / 1024))"
        awk -v a="${fl_r% *}" -v b="${gs_r% *}" -v m="${fl_r#* }" -v n="${gs_r#* }" -v c="$fl_sz" -v d="$gs_sz" \
            'BEGIN {printf "ratio faultline/gsymutil: time %.2f, peak RSS %.2f, size %.2f\n", a / b, m / n, c / d}'
    else
        echo "llvm-gsymutil not found: no gsym comparison"
    fi
}
convert_table "$D" "libc's debug file"
[ -n "${BENCH_SYM_BIG:-}" ] && convert_table "$BENCH_SYM_BIG" "$(basename "$BENCH_SYM_BIG")"
exit 0
