#!/usr/bin/env bash
# `faultline symbols add DIR`: a build tree, as a CI step uploads it.
# Every ELF file under the directory with a GNU build id and DWARF or a
# symbol table is taken, in the order of their paths; what `add` would
# refuse is passed over (a fully stripped copy, an object file without a
# build id, a text file, a symbolic link).  Locally (--cache): their
# symcaches; with --server, to a real `faultline serve`: both listed by
# GET /api/v1/symbols.  A directory without one such file: exit 1, named,
# while the other arguments are still added.
#   add_dir.sh FAULTLINE
set -uo pipefail
FL=$1
command -v gcc >/dev/null && command -v curl >/dev/null || exit 77
work=$(mktemp -d /tmp/fl-adddir.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL [symbols_add_dir]: $*" >&2; [ -s "$work/err" ] && tail -n 20 "$work/err" >&2; exit 1; }
export ASAN_OPTIONS=detect_leaks=1

T=$work/tree
mkdir -p "$T/sub/deeper" || fail "mkdir"
printf 'int a(int x) { return x * 3; }\nint main(int c, char **v) { (void)v; return a(c); }\n' >"$work/a.c"
printf 'int b(int x) { return x + 7; }\nint main(int c, char **v) { (void)v; return b(c); }\n' >"$work/b.c"
gcc -g -O1 -Wl,--build-id -o "$T/a" "$work/a.c" &&
    gcc -g -O1 -Wl,--build-id -o "$T/sub/deeper/b" "$work/b.c" &&
    strip -s -o "$T/a.stripped" "$T/a" &&
    gcc -c -g -o "$T/sub/b.o" "$work/b.c" || fail "building the tree"
echo "not ELF" >"$T/README"
ln -s a "$T/link"
ida=$(readelf -n "$T/a" | awk '/Build ID:/ {print $3}')
idb=$(readelf -n "$T/sub/deeper/b" | awk '/Build ID:/ {print $3}')
[ -n "$ida" ] && [ -n "$idb" ] && [ "$ida" != "$idb" ] || fail "build ids '$ida' '$idb'"

# Locally: the two files, in path order, and nothing else.
"$FL" symbols add "$T" --cache "$work/cache" >"$work/out" 2>"$work/err" || fail "add DIR: exit $?"
[ "$(awk '{print $1, $2}' "$work/out" | tr '\n' ' ')" = "$ida $T/a: $idb $T/sub/deeper/b: " ] ||
    fail "add DIR printed: $(cat "$work/out")"
grep -qx "faultline symbols add: $T: 2 files with a build id and symbols" "$work/err" ||
    fail "add DIR said: $(cat "$work/err")"
[ "$(ls "$work/cache" | sort | tr '\n' ' ')" = "$(printf '%s.symcache\n' "$ida" "$idb" | sort | tr '\n' ' ')" ] ||
    fail "the cache holds: $(ls "$work/cache")"
# A program beside its debug file and a symbol-table-only copy (one build
# id thrice): the most complete alone is taken, DWARF with code first,
# then DWARF alone; the others are counted as passed over.
D=$work/twins
mkdir -p "$D/x" && cp "$T/a" "$D/x/z-prog" && objcopy --only-keep-debug "$T/a" "$D/a.debug" &&
    strip --strip-debug -o "$D/m.symtab" "$T/a" || fail "building the twins"
"$FL" symbols add "$D" --cache "$work/cache3" >"$work/out" 2>"$work/err" || fail "add twins: exit $?"
[ "$(awk '{print $1, $2}' "$work/out")" = "$ida $D/x/z-prog:" ] || fail "twins: $(cat "$work/out")"
grep -qx "faultline symbols add: $D: 1 file with a build id and symbols (2 more with the same build id as one of them passed over)" \
    "$work/err" || fail "twins said: $(cat "$work/err")"
rm "$D/x/z-prog"
"$FL" symbols add "$D" --cache "$work/cache4" >"$work/out" 2>"$work/err" || fail "add twins 2: exit $?"
[ "$(awk '{print $1, $2}' "$work/out")" = "$ida $D/a.debug:" ] || fail "twins without the program: $(cat "$work/out")"
# A file given by name is still checked as before: a stripped one refused.
"$FL" symbols add "$T/a.stripped" --cache "$work/cache" >/dev/null 2>"$work/err" &&
    fail "a stripped file given by name was taken"
# A directory without one file to take: named, exit 1; the rest is added.
mkdir -p "$work/empty" && echo x >"$work/empty/f"
"$FL" symbols add "$work/empty" "$T/a" --cache "$work/cache2" >"$work/out" 2>"$work/err"
[ $? = 1 ] || fail "an empty directory: exit not 1"
grep -qx "faultline symbols add: $work/empty: no ELF file with a build id and DWARF or a symbol table under it (1 files looked at)" \
    "$work/err" || fail "an empty directory: $(cat "$work/err")"
[ -f "$work/cache2/$ida.symcache" ] || fail "the file beside the empty directory was not added"

# A CMake build tree: the compiler probes CMake builds and keeps under
# CMakeFiles/<version>/ and its try_compile() scratch directories
# (CMakeTmp, CMakeScratch) are passed over; a target's own directory,
# CMakeFiles/<target>.dir/, and the program are walked and taken.  A probe
# directory given by name is still walked.
C=$work/cmaketree
P=$C/CMakeFiles/3.25.1
mkdir -p "$P/CompilerIdC" "$C/CMakeFiles/CMakeTmp" "$C/CMakeFiles/CMakeScratch/TryCompile-x1" \
    "$C/CMakeFiles/app.dir" "$C/CMakeFiles/7.dir" "$C/sub/CMakeFiles/3.31.0-rc2" || fail "mkdir cmake tree"
probe() { printf 'int main(void) { return %d; }\n' "$2" >"$work/p$2.c" &&
    gcc -g -Wl,--build-id -o "$1" "$work/p$2.c"; }
probe "$P/CompilerIdC/a.out" 1 && probe "$P/CMakeDetermineCompilerABI_C.bin" 2 &&
    probe "$C/CMakeFiles/CMakeTmp/cmTC_1" 3 && probe "$C/CMakeFiles/CMakeScratch/TryCompile-x1/cmTC_2" 4 &&
    probe "$C/sub/CMakeFiles/3.31.0-rc2/a.out" 5 && probe "$C/CMakeFiles/app.dir/helper" 6 &&
    probe "$C/CMakeFiles/7.dir/seven" 7 &&
    cp "$T/a" "$C/app" || fail "building the cmake tree"
"$FL" symbols add "$C" --cache "$work/cache5" >"$work/out" 2>"$work/err" || fail "add cmake tree: exit $?"
[ "$(awk '{print $2}' "$work/out" | tr '\n' ' ')" = "$C/CMakeFiles/7.dir/seven: $C/CMakeFiles/app.dir/helper: $C/app: " ] ||
    fail "cmake tree: $(cat "$work/out")"
grep -qx "faultline symbols add: $C: 3 files with a build id and symbols" "$work/err" ||
    fail "cmake tree said: $(cat "$work/err")"
"$FL" symbols add "$P" --cache "$work/cache5" >"$work/out" 2>"$work/err" || fail "add a probe dir: exit $?"
grep -c ': ' "$work/out" | grep -qx 2 || fail "a probe directory given by name: $(cat "$work/out")"

# Uploaded to a real server: both build ids listed.
ADMIN=adddir-admin-$$ KEY=adddir-key-$$
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
. "$(dirname "$0")/../lib/server.sh"
start "$work/data"
"$FL" symbols add "$T" --server "$(url /)" >"$work/out" 2>"$work/err" || fail "upload DIR: exit $?"
grep -c ': uploaded' "$work/out" | grep -qx 2 || fail "upload DIR printed: $(cat "$work/out")"
api /api/v1/symbols >"$work/list" || fail "GET /api/v1/symbols"
for id in "$ida" "$idb"; do
    grep -q "\"$id\"" "$work/list" || fail "the server does not list $id: $(head -c 400 "$work/list")"
done
# The CMake tree uploads its three files, not the probes.
"$FL" symbols add "$C" --server "$(url /)" >"$work/out" 2>"$work/err" || fail "upload cmake tree: exit $?"
[ "$(grep -c ': uploaded' "$work/out")" = 3 ] && ! grep -q 'CMakeFiles/3\|CMakeTmp\|CMakeScratch' "$work/out" ||
    fail "upload cmake tree printed: $(cat "$work/out")"
# At a terminal (a pty from script(1)) the progress line shows each
# percentage once: libcurl reports a block twice, and the wait for the
# answer over and over, and each report was drawn.
if command -v script >/dev/null; then
    script -qec "'$FL' symbols add '$FL' --server '$(url /)'" /dev/null >"$work/tty" 2>&1 ||
        fail "upload at a terminal: exit $? $(tail -c 300 "$work/tty")"
    tr '\r' '\n' <"$work/tty" | grep -o '^\[1/1\] .* *[0-9]*%' | grep -o '[0-9]*%$' >"$work/pcts"
    [ -s "$work/pcts" ] || fail "no progress at a terminal: $(tail -c 300 "$work/tty" | cat -v)"
    [ -z "$(sort "$work/pcts" | uniq -d)" ] ||
        fail "a percentage drawn twice: $(sort "$work/pcts" | uniq -cd | head -3 | tr '\n' ' ')"
fi
stop || fail "server exit status"
echo "ok: symbols add DIR, locally and uploaded; CMake's compiler probes passed over"
