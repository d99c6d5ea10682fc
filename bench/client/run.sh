#!/usr/bin/env bash
# bench/client/run.sh BUILD_DIR - what the crash catcher costs.
#   1. time from fault to process end, with and without Faultline
#      (FAULTLINE_FSYNC=0 and =1, and with a full flight recorder), median
#      and p99 of CRASHES crashes;
#   2. size of the stripped libfaultline.so;
#   3. faultline_install() with 50 extra dlopen()ed libraries.
# Prints tables; the published peers' figures are quoted for comparison.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
crashes=${CRASHES:-200}
runs=${INSTALL_RUNS:-31}
bin=$build/bench/client/crashbench
lib=$build/src/client/libfaultline.so
if [ ! -x "$bin" ] || [ ! -f "$lib" ]; then
  cmake --build "$build" --target crashbench faultline_shared faultline_preload >/dev/null
fi
tmp=$(mktemp -d /tmp/fl-bench-client-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/spool" "$tmp/libs"

fstype=$(findmnt -n -o FSTYPE -T "$tmp" 2>/dev/null || stat -f -c %T "$tmp")
echo "== client: fault to process end (spool on $fstype, $tmp)"
"$bin" crash "$crashes" "$tmp/spool"
if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
  shm=$(mktemp -d /dev/shm/fl-bench-client-XXXXXX)
  echo "== client: fault to process end (spool on tmpfs, $shm)"
  "$bin" crash "$crashes" "$shm" || true
  rm -rf "$shm"
fi
echo "  published: MojoCrash ~190 us, sentry-native in-process ~520 us (2-vCPU VM);"
echo "  goal: <= 150 us added, median, FAULTLINE_FSYNC=0"
echo

echo "== client: size of the stripped library"
printf "  %-32s %10s %10s %10s\n" library text data bss
for f in "$lib" "$build/src/client/libfaultline-preload.so"; do
  [ -f "$f" ] || continue
  cp "$(readlink -f "$f")" "$tmp/s.so"
  strip --strip-all "$tmp/s.so"
  size "$tmp/s.so" | awk -v n="$(basename "$f")" 'NR==2 {printf "  %-32s %10d %10d %10d\n", n, $1, $2, $3}'
done
echo "  goal: text <= 65536 bytes"
echo

echo "== client: faultline_install() cost"
cc=${CC:-cc}
for i in $(seq -w 1 50); do
  printf 'int fl_bench_fn_%s(int x) { return x * %d + 1; }\nint fl_bench_data_%s = %d;\n' \
    "$i" "$((10#$i))" "$i" "$((10#$i))" > "$tmp/libs/l$i.c"
  "$cc" -shared -fPIC -O1 -Wl,--build-id -o "$tmp/libs/libflbench$i.so" "$tmp/libs/l$i.c"
done
"$bin" install "$runs" "$tmp/libs" "$tmp/spool"
echo "  goal: <= 1000 us with 50 libraries"
