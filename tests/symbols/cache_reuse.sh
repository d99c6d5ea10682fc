#!/usr/bin/env bash
# cache_reuse.sh FAULTLINE PROGRAM
# The symcache is built once: the first `faultline symbolicate` writes
# CACHE/<buildid>.symcache, the second reuses it (same inode and mtime)
# and prints the same answer; `symbols add` on a cached file does not
# rebuild; a damaged cache file is replaced; a stripped copy of the
# program (same build id, other symbol table) gets its own cache file.
set -euo pipefail
fl=$1 prog=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$work/cache
fail() { echo "FAIL: $*" >&2; exit 1; }

id=$(readelf -n "$prog" | awk '/Build ID/ {print $3}')
[ -n "$id" ] || fail "no build id in $prog"
file=$cache/$id.symcache
addrs="0x1100 0x1200 0x1300"

"$fl" symbolicate --obj "$prog" --cache "$cache" $addrs >"$work/out1"
[ -f "$file" ] || fail "cache file $file not created"
before=$(stat -c '%i %Y.%y' "$file")
sleep 1.1   # so that a rewrite would show in the mtime
"$fl" symbolicate --obj "$prog" --cache "$cache" $addrs >"$work/out2"
after=$(stat -c '%i %Y.%y' "$file")
[ "$before" = "$after" ] || fail "second run rebuilt the symcache ($before -> $after)"
cmp -s "$work/out1" "$work/out2" || fail "second run printed something else"
[ "$(grep -c '' "$work/out1")" -ge 9 ] || fail "too little output"

"$fl" symbols add "$prog" --cache "$cache" | grep -q "already cached" || fail "symbols add rebuilt"
[ "$(stat -c '%i %Y.%y' "$file")" = "$before" ] || fail "symbols add touched the cache file"

# Damaged cache file: rebuilt, answer unchanged.
head -c 300 "$file" >"$work/x" && cat "$work/x" >"$file"
"$fl" symbolicate --obj "$prog" --cache "$cache" $addrs >"$work/out3"
cmp -s "$work/out1" "$work/out3" || fail "answer changed after cache damage"
[ "$(stat -c %s "$file")" -gt 300 ] || fail "damaged cache file not replaced"

# Same build id, different symbol table: a second cache file.
strip -o "$work/stripped" "$prog"
"$fl" symbolicate --obj "$work/stripped" --cache "$cache" $addrs >/dev/null
n=$(ls "$cache" | grep -c "^$id.*symcache$")
[ "$n" -eq 2 ] || fail "expected 2 cache files for $id, found $n"

# An address list from stdin gives the same as arguments.
printf '%s\n' $addrs | "$fl" symbolicate --obj "$prog" --cache "$cache" >"$work/out4"
cmp -s "$work/out1" "$work/out4" || fail "stdin and argv answers differ"
echo "cache reuse: ok"
