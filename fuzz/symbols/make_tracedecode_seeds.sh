#!/usr/bin/env bash
# make_tracedecode_seeds.sh BUILD [--objects]: remakes fuzz_tracedecode's
# seeds gen_* in fuzz/corpus/tracedecode with the real writer
# (faultline_trace_dump, through BUILD/tests/trace/trace_seed_gen), tracing
# from the committed objects tracedecode_obj.so and tracedecode_apart.so
# (tracedecode_obj.c; the second with its formats kept apart), which the
# fuzz target decodes with.  --objects rebuilds those two first: their
# build ids change, so every gen_* seed must be remade with them.
set -euo pipefail
build=$(cd "${1:?usage: make_tracedecode_seeds.sh BUILD [--objects]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
corpus=$src/fuzz/corpus/tracedecode
gen=$build/tests/trace/trace_seed_gen
obj=$here/tracedecode_obj.so apart=$here/tracedecode_apart.so
if [ "${2:-}" = --objects ]; then
  # gcc: clang's integrated assembler takes one string literal only in a
  # FAULTLINE_TRACE_APART format.  A relative source path, for __FILE__.
  cd "$src"
  cc="gcc -std=gnu11 -O2 -fPIC -shared -Wall -Wextra -Werror -Iinclude"
  $cc -s fuzz/symbols/tracedecode_obj.c -o "$obj"
  # Not stripped: strip would take .debug_faultline_trace with the rest.
  $cc -g0 -DFAULTLINE_TRACE_APART fuzz/symbols/tracedecode_obj.c -o "$apart"
  # The dictionary's entries for their build ids.
  for v in obj apart; do
    id=$(readelf -n "$here/tracedecode_$v.so" | awk '/Build ID/ {print $3}')
    sed -i "s/^build_id_$v=.*/build_id_$v=\" $id \"/" "$here/fuzz_tracedecode.dict"
  done
fi
"$gen" all "$corpus/gen_all" "$obj" "$apart"
"$gen" max "$corpus/gen_max" "$obj"
"$gen" noinstall "$corpus/gen_noinstall" "$obj"
"$gen" cutpath "$corpus/gen_cutpath" "$obj"
"$gen" dlclose "$corpus/gen_dlclose" "$apart"
# Cut short, as a dump whose writer died is: inside the largest record's
# second TRACE_BYTES line (its strings), and after its TRACE_ID line
# (whole lines, no END).
n=$(grep -b -m 2 '^TRACE_BYTES' "$corpus/gen_max" | tail -n 1 | cut -d: -f1)
head -c $((n + 300)) "$corpus/gen_max" >"$corpus/gen_max_cut_bytes"
sed -n '1,/^TRACE_ID/p' "$corpus/gen_max" >"$corpus/gen_max_no_bytes"
# Carriage returns before the line ends: the decoder takes them off.
sed 's/$/\r/' "$corpus/gen_dlclose" >"$corpus/gen_dlclose_crlf"
ls -l "$corpus"/gen_*
