#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and builds consumers.
set -euo pipefail
build=$1; src=$2; flavour=${3:-plain}
# A sanitizer build installs instrumented libraries: consumers must be
# built with the same runtime, and our handler must see the signals.
san=
if [ "$flavour" = asan ]; then
  san="-fsanitize=address,undefined"
  export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/faultline.h include/mojocrash.h lib/libfaultline.a lib/libfaultline.so \
         lib/libfaultline-preload.so lib/pkgconfig/faultline.pc \
         lib/cmake/Faultline/FaultlineConfig.cmake bin/faultline; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
# Exactly the public API is exported (and the -finstrument-functions hooks).
bad=$(nm -D --defined-only "$prefix/lib/libfaultline.so" | awk '{print $3}' |
      grep -v -E '^(faultline_|MOJOCRASH_|pthread_create$|pthread_sigmask$|sigprocmask$|thrd_create$|timer_create$|timer_delete$|mq_notify$|mq_close$|dlclose$|__cyg_profile_func_(enter|exit)$)' || true)
[ -z "$bad" ] || { echo "FAIL: unexpected exports: $bad"; exit 1; }

# pkg-config, shared library.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc $san -o "$tmp/consumer_pc" "$src/consumer.c" $(pkg-config --cflags --libs faultline) -Wl,-rpath,"$prefix/lib"
# find_package(Faultline): shared and static targets.
mkdir -p "$tmp/cm"; cp "$src/consumer.c" "$tmp/cm/"; cp "$src/CMakeLists.consumer.txt" "$tmp/cm/CMakeLists.txt"
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$san" \
      -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build "$tmp/cm/b" >/dev/null

for exe in "$tmp/consumer_pc" "$tmp/cm/b/consumer_cmake" "$tmp/cm/b/consumer_cmake_static"; do
  spool=$tmp/spool-$(basename "$exe")
  FAULTLINE_SPOOL=$spool "$exe" >/dev/null
  set +e; FAULTLINE_SPOOL=$spool "$exe" crash 2>/dev/null; rc=$?; set -e
  [ $rc -eq 139 ] || { echo "FAIL: $exe crash exit $rc, want 139 (SIGSEGV)"; exit 1; }
  n=$(ls "$spool"/*.crashlog 2>/dev/null | wc -l)
  [ "$n" -eq 1 ] || { echo "FAIL: $exe: $n crash logs"; exit 1; }
  grep -q '^APPLICATION_NAME consumer$' "$spool"/*.crashlog || { echo "FAIL: app name"; exit 1; }
  tail -n 3 "$spool"/*.crashlog | grep -q '^END$' || { echo "FAIL: no END"; exit 1; }
done
# The flight recorder from C++ (overloads instead of _Generic), and the
# header alone under old standards, where the macro is left out.
c++ $san -std=c++11 -Wall -Wextra -Werror -o "$tmp/consumer_trace" "$src/consumer_trace.cpp" \
    $(pkg-config --cflags --libs faultline) -Wl,-rpath,"$prefix/lib"
FAULTLINE_SPOOL=$tmp/spool-trace "$tmp/consumer_trace" "$tmp/trace.ids" >"$tmp/trace.out" || { echo "FAIL: consumer_trace"; cat "$tmp/trace.out"; exit 1; }
# The installed `faultline decode` makes the same text from the trace-ID dump.
"$prefix/bin/faultline" decode --obj "$tmp/consumer_trace" "$tmp/trace.ids" >"$tmp/trace.decoded" ||
  { echo "FAIL: faultline decode exited $?"; exit 1; }
cmp -s "$tmp/trace.out" "$tmp/trace.decoded" || { echo "FAIL: decode differs"; diff "$tmp/trace.out" "$tmp/trace.decoded"; exit 1; }
for want in ' inline 1$' ' template 2.5$' ' template 3$' ' method hello 5$' \
            ' types -7 18446744073709551615 (nil) x$' '^BREADCRUMB [0-9]* cpp done$'; do
  grep -q -- "$want" "$tmp/trace.out" || { echo "FAIL: no line like '$want'"; cat "$tmp/trace.out"; exit 1; }
done
# The same built with FAULTLINE_TRACE_APART (formats in .debug_faultline_trace,
# sites in COMDAT groups): decoded with its file, the same text but for the
# times and thread ids; stripped, no format left in the program.
c++ $san -std=c++11 -O2 -DFAULTLINE_TRACE_APART -Wall -Wextra -Werror -o "$tmp/consumer_apart" \
    "$src/consumer_trace.cpp" $(pkg-config --cflags --libs faultline) -Wl,-rpath,"$prefix/lib"
FAULTLINE_SPOOL=$tmp/spool-apart "$tmp/consumer_apart" "$tmp/apart.ids" >"$tmp/apart.out" ||
  { echo "FAIL: consumer_apart"; cat "$tmp/apart.out"; exit 1; }
grep -q '^TRACE_ID ' "$tmp/apart.out" || { echo "FAIL: consumer_apart wrote no TRACE_ID line"; exit 1; }
"$prefix/bin/faultline" decode --obj "$tmp/consumer_apart" "$tmp/apart.ids" >"$tmp/apart.decoded" ||
  { echo "FAIL: faultline decode of the apart build exited $?"; exit 1; }
untimed() { sed -E 's/^TRACE [0-9]+ [0-9]+ /TRACE /; s/^BREADCRUMB [0-9]+ /BREADCRUMB /' "$1"; }
cmp -s <(untimed "$tmp/trace.out") <(untimed "$tmp/apart.decoded") ||
  { echo "FAIL: the apart build decodes otherwise"; diff <(untimed "$tmp/trace.out") <(untimed "$tmp/apart.decoded"); exit 1; }
strip -o "$tmp/consumer_apart.stripped" "$tmp/consumer_apart"
if grep -q 'method %s' "$tmp/consumer_apart.stripped"; then echo "FAIL: a format in the stripped apart build"; exit 1; fi
# The calling context from C++ code built with -finstrument-functions, and
# the installed `faultline decode --context` (capstone) back to its stack.
c++ $san -std=c++11 -O1 -finstrument-functions -Wall -Wextra -Werror -o "$tmp/consumer_context" \
    "$src/consumer_context.cpp" $(pkg-config --cflags --libs faultline) -Wl,-rpath,"$prefix/lib"
ctx=$(FAULTLINE_SPOOL=$tmp/spool-ctx "$tmp/consumer_context") || { echo "FAIL: consumer_context"; exit 1; }
"$prefix/bin/faultline" decode --context "$ctx" --obj "$tmp/consumer_context" >"$tmp/ctx.out" ||
  { echo "FAIL: faultline decode --context exited $?"; cat "$tmp/ctx.out"; exit 1; }
got=$(sed -n 's/^ *#[0-9]* \(.*\) (consumer_context+.*/\1/p' "$tmp/ctx.out" | tr '\n' '|')
[ "$got" = "int twice<int>(int)|Widget::run(int)|main|" ] ||
  { echo "FAIL: context decoded to '$got'"; cat "$tmp/ctx.out"; exit 1; }
# An unmodified program under the installed preload library with
# FAULTLINE_URL: the installed faultline-report starts after the crash
# (found beside the library), says what it did in SPOOL/reporter.log (not
# on the program's stderr) and, with no one to ask, keeps the log; with
# FAULTLINE_REPORT_YES=1 it sends (here: to a closed port, so it keeps the
# log for a retry).
# Plain build only: an instrumented library cannot be preloaded into sh.
if [ "$flavour" = plain ]; then
  set +e
  # (Preloaded by a relative path, by a program that leaves that directory.)
  (cd "$prefix" && FAULTLINE_SPOOL=$tmp/spool-pre FAULTLINE_URL=http://127.0.0.1:9/api/v1/crashes \
    LD_PRELOAD=./lib/libfaultline-preload.so exec sh -c 'cd /; kill -SEGV $$' </dev/null 2>"$tmp/pre.err")
  rc=$?; set -e
  [ $rc -eq 139 ] || { echo "FAIL: preloaded sh exit $rc, want 139"; exit 1; }
  for _ in $(seq 100); do grep -q 'kept for later' "$tmp/spool-pre/reporter.log" 2>/dev/null && break; sleep 0.1; done
  grep -q 'faultline-report.*no one at a terminal to ask' "$tmp/spool-pre/reporter.log" ||
    { echo "FAIL: FAULTLINE_URL did not start the installed reporter"; cat "$tmp/pre.err"; exit 1; }
  ! grep -q 'faultline-report' "$tmp/pre.err" || { echo "FAIL: the reporter wrote on the program's stderr"; exit 1; }
  [ "$(ls "$tmp"/spool-pre/*.crashlog | wc -l)" -eq 1 ] || { echo "FAIL: preload: the log is not kept"; exit 1; }
  set +e
  FAULTLINE_SPOOL=$tmp/spool-yes FAULTLINE_URL=http://127.0.0.1:9/api/v1/crashes FAULTLINE_REPORT_YES=1 \
    LD_PRELOAD=$prefix/lib/libfaultline-preload.so sh -c 'kill -SEGV $$' </dev/null 2>/dev/null
  set -e
  for _ in $(seq 100); do ls "$tmp"/spool-yes/*.retry >/dev/null 2>&1 && break; sleep 0.1; done
  ls "$tmp"/spool-yes/*.crashlog.retry >/dev/null 2>&1 ||
    { echo "FAIL: FAULTLINE_REPORT_YES=1: no attempt to send"; cat "$tmp/spool-yes/reporter.log"; exit 1; }
  # The reporter inherits LD_PRELOAD but installs no catcher in itself
  # (installing creates the spool directory; a sh under it does).
  set +e
  FAULTLINE_SPOOL=$tmp/spool-rep LD_PRELOAD=$prefix/lib/libfaultline-preload.so \
    "$prefix/bin/faultline-report" --bogus-option >/dev/null 2>&1
  FAULTLINE_SPOOL=$tmp/spool-sh LD_PRELOAD=$prefix/lib/libfaultline-preload.so sh -c true
  set -e
  [ ! -e "$tmp/spool-rep" ] && [ -d "$tmp/spool-sh" ] ||
    { echo "FAIL: the preloaded reporter installed the catcher"; exit 1; }
  # An empty FAULTLINE_REPORTER: no reporter at all, even with FAULTLINE_URL.
  set +e
  FAULTLINE_SPOOL=$tmp/spool-off FAULTLINE_URL=http://127.0.0.1:9/ FAULTLINE_REPORTER= \
    LD_PRELOAD=$prefix/lib/libfaultline-preload.so sh -c 'kill -SEGV $$' </dev/null 2>"$tmp/off.err"
  set -e
  sleep 1
  [ ! -e "$tmp/spool-off/reporter.log" ] || { echo "FAIL: FAULTLINE_REPORTER= still started one"; exit 1; }
  [ "$(ls "$tmp"/spool-off/*.crashlog | wc -l)" -eq 1 ] || { echo "FAIL: FAULTLINE_REPORTER=: no log"; exit 1; }
fi
printf '#include <faultline.h>\nint main(void) { return 0; }\n' >"$tmp/h.c"
cc -std=c89 -pedantic-errors -Wall -Werror -fsyntax-only -I"$prefix/include" "$tmp/h.c" ||
  { echo "FAIL: faultline.h in C89"; exit 1; }
c++ -std=c++98 -pedantic-errors -Wall -Werror -fsyntax-only -I"$prefix/include" -x c++ "$tmp/h.c" ||
  { echo "FAIL: faultline.h in C++98"; exit 1; }
echo "install_consumer: ok"
