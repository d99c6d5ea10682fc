#!/usr/bin/env bash
# The symbolication server end to end: a real `faultline serve` on a free
# port of 127.0.0.1, a stripped -O2 client that crashes, its debug file
# uploaded over HTTP or dropped into the watched directory.
#   symserver_test.sh CASE FAULTLINE SYMSRV_CRASH SYMSRV_CRASH.debug [SYMSRV_CRASH_SPLIT INLINE_HEAVY.c]
# CASE: upload | past_end | libc | heap | backfill | symtab | dwz | dwz_debuginfod | dwz_debuginfod_late | watch | watch_empty | storefail | debuginfod | symbolicate | roles |
#       debuginfod_budget | watch_clock | dwo | dwo_symbolicate | dwo_types | dwo_stale | dwo_pg | dwp | dwp_pg |
#       dwp_storefail | dwp_parallel | source | source_pg | debuginfod_adverse
set -uo pipefail
case_=$1 FL=$2 CRASH=$3 DEBUG=$4 SPLIT=${5:-} IHSRC=${6:-}
work=$(mktemp -d /tmp/fl-symserver-test.XXXXXX)
ADMIN=test-admin-token KEY=test-ingest-key
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
# No network: system symbols come from /usr/lib/debug only.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/err" ] && tail -5 "$work/err" >&2; exit 1; }
ok() { echo "ok: $*"; }

CRASH_ENV=()
if [ "${FAULTLINE_SANITIZE:-OFF}" = ON ]; then
  CRASH_ENV=("ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1"
             "UBSAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0")
fi

. "$(dirname "$0")/../lib/server.sh"

# crash MODE: run the client, set LOG to its crash log.
NCRASH=0
crash() {
  NCRASH=$((NCRASH + 1))
  local spool="$work/spool-$1-$NCRASH"
  mkdir -p "$spool"
  { (ulimit -c 0; exec env "${CRASH_ENV[@]}" FAULTLINE_SPOOL="$spool" "$CRASH" "$1"); } 2>/dev/null \
    && fail "symsrv_crash $1 did not crash"
  LOG=$(ls "$spool"/*.crashlog 2>/dev/null | head -1)
  [ -n "$LOG" ] || fail "symsrv_crash $1 left no crash log"
}
# submit: post $LOG, set CID to its crash id, wait until it is processed.
submit() {
  local c
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' --data-binary @"$LOG")
  [ "$c" = 200 ] || fail "submit -> $c $(cat "$work/body")"
  CID=$(field id <"$work/body")
  for _ in $(seq 200); do
    admin "$(url "/api/v1/crashes/$CID")" >"$work/crash.json"
    grep -q '"state":"processed"' "$work/crash.json" && { GID=$(field group_id <"$work/crash.json"); return 0; }
    sleep 0.1
  done
  fail "crash $CID not processed"
}
# paused_write WHAT [NAME [FIRST]]: $DEBUG written into the watched
# directory as NAME (default slow.debug) in two parts, 2.5 s apart: its
# first FIRST bytes (default 50000; 0: an empty file, as cp makes first),
# then the rest into the same file.  The partial file must stay there, and
# the whole one must be taken.  WHAT prefixes the failure messages.
paused_write() {
  local inc="$work/d/symbols/incoming" n=${2:-slow.debug} first=${3:-50000}
  head -c "$first" "$DEBUG" >"$inc/$n"
  sleep 2.5 # two polls and more
  [ -f "$inc/$n" ] && [ ! -e "$work/d/symbols/failed/$n" ] ||
    fail "$1a file still being written was taken: $(cat "$work/d/symbols/failed/$n.error" 2>/dev/null)"
  tail -c +$((first + 1)) "$DEBUG" >>"$inc/$n"
  # Until it is taken either way: the symlink processed/NAME comes after
  # the store recorded the file, a while after it left incoming/.
  for _ in $(seq 100); do
    [ -L "$work/d/symbols/processed/$n" ] || [ -e "$work/d/symbols/failed/$n" ] && break
    sleep 0.1
  done
  [ ! -e "$inc/$n" ] && [ ! -e "$work/d/symbols/failed/$n" ] && [ -e "$work/d/symbols/processed/$n" ] ||
    fail "$1the file written in two parts: $(ls "$inc" "$work/d/symbols/failed" "$work/d/symbols/processed")"
  cmp -s "$DEBUG" "$work/d/symbols/processed/$n" || fail "$1processed/$n differs"
}
# The build id of the debug file (what the server must answer).
BID=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$DEBUG") | cut -d' ' -f3)
[ -n "$BID" ] || fail "no build id in $DEBUG"
# A frame of symsrv_fault with file and line, as compact JSON shows it.
FAULT_RE='"function":"symsrv_fault","file":"[^"]*symsrv_crash\.c","line":[0-9]+'

# moved OLD WHAT: after an upload, with nobody asking, crash $CID leaves
# group OLD; its new group ($new, in g1.json) names symsrv_fault with file
# and line, OLD is gone (404), and the new one is the only group, of
# count 1 (counts moved exactly).
moved() {
  local old=$1 what=$2 c
  for _ in $(seq 200); do
    new=$(admin "$(url "/api/v1/crashes/$CID")" | field group_id)
    [ "$new" != "$old" ] && break
    sleep 0.1
  done
  [ "$new" != "$old" ] || fail "$what: the crash was not re-processed into another group"
  admin "$(url "/api/v1/groups/$new")" >"$work/g1.json"
  grep -Eq "$FAULT_RE" "$work/g1.json" || fail "$what: no symsrv_fault with its file and line: $(head -c 1500 "$work/g1.json")"
  c=$(code GET "/api/v1/groups/$old" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 404 ] || fail "$what: the emptied group is still there ($c): $(cat "$work/body")"
  admin "$(url /api/v1/groups)" >"$work/all.json"
  [ "$(grep -o '"count":[0-9]*' "$work/all.json")" = '"count":1' ] || fail "$what: counts: $(cat "$work/all.json")"
}

# split_app: $SPLIT (built -gsplit-dwarf) copied to $work/bin/app, where
# its .dwo is found nowhere; sets ABID (its build id), DWO (the .dwo in the
# build tree, where the program names it), DWOID (its DWO id).
split_app() {
  mkdir -p "$work/bin"
  cp "$SPLIT" "$work/bin/app"
  ABID=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$SPLIT") | cut -d' ' -f3)
  local name
  name=$(readelf --debug-dump=info "$SPLIT" 2>/dev/null | sed -n 's/.*DW_AT_\(GNU_\)\{0,1\}dwo_name.*): //p' | head -1)
  DWO="$(dirname "$SPLIT")/$name"
  [ -f "$DWO" ] || fail "no .dwo at $DWO (named $name)"
  DWOID=$(readelf --debug-dump=info "$DWO" 2>/dev/null | grep -m1 -o 'DWO ID: *0x[0-9a-f]*\|GNU_dwo_id *: 0x[0-9a-f]*' | grep -o '0x[0-9a-f]*')
  [ -n "$DWOID" ] || fail "no DWO id in $DWO"
  DWOID=$(printf %016x "$DWOID")
}
# damaged_dwo OUT: a copy of $DWO whose split unit header says DWARF 127.
damaged_dwo() {
  python3 - "$DWO" "$1" <<'PY' || fail "damaged_dwo"
import subprocess, sys
b = bytearray(open(sys.argv[1], "rb").read())
for l in subprocess.check_output(["readelf", "-SW", sys.argv[1]]).decode().splitlines():
    if ".debug_info.dwo" in l:
        b[int(l.split("]")[1].split()[3], 16) + 4] = 0x7f
        break
else:
    sys.exit(1)
open(sys.argv[2], "wb").write(b)
PY
}
# past_end IN OUT SECTION: a copy of the ELF64 file IN whose SECTION's
# header says it ends 4096 bytes past the end of the file (its sh_size).
past_end() {
  python3 - "$@" <<'PY' || fail "past_end $*"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
shoff, = struct.unpack_from("<Q", b, 0x28)
esz, num, strndx = struct.unpack_from("<HHH", b, 0x3a)
names, = struct.unpack_from("<Q", b, shoff + strndx * esz + 0x18)
for i in range(num):
    h = shoff + i * esz
    n, = struct.unpack_from("<I", b, h)
    if b[names + n:b.index(0, names + n)].decode() == sys.argv[3]:
        off, = struct.unpack_from("<Q", b, h + 0x18)
        struct.pack_into("<Q", b, h + 0x20, len(b) - off + 4096)
        break
else:
    sys.exit(1)
open(sys.argv[2], "wb").write(b)
PY
}
STORE_SIG='"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"'

# answers_as_whole: the split build $b/split (its debug files uploaded)
# answers every .text address through /api/v1/symbolicate as the whole
# build $b/whole does, once $b is moved away and the server restarted with
# no symcache; sets out to what was compared.  $cc names the build.
answers_as_whole() {
  sid=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$b/split") | cut -d' ' -f3)
  wid=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$b/whole") | cut -d' ' -f3)
  read -r lo size < <(readelf -SW "$b/split" | awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')
  mv "$b" "$b.moved"
  # The server may have built the symcache from the files still in
  # place (the upload thread builds one as it comes): a new start with
  # no symcache builds it from the uploads alone.
  stop || fail "$cc: shutdown rc"
  rm -rf "$work/d/symcache"
  start "$work/d"
  out=$(python3 - "$PORT" "$ADMIN" "$sid" "$wid" "$((16#$lo))" "$((16#$size))" <<'PY'
import json, sys, urllib.request
port, token, sid, wid, lo, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
def ask(bid):
  body = json.dumps({"build_id": bid, "addresses": [hex(a) for a in range(lo, lo + n)]}).encode()
  r = urllib.request.Request("http://127.0.0.1:%s/api/v1/symbolicate" % port, body,
                             {"Authorization": "Bearer " + token})
  return json.load(urllib.request.urlopen(r))["results"]
split, whole = ask(sid), ask(wid)
bad = [(s, w) for s, w in zip(split, whole) if s != w]
inl = sum(any(f["inlined"] for f in s["frames"]) for s in split)
if bad or len(split) != n or not inl:
  print("FAIL %d of %d differ, %d inlined; first: %s" % (len(bad), n, inl, bad[:1]))
else:
  print("%d addresses, %d with inlined frames" % (n, inl))
PY
)
  case $out in FAIL*) fail "$cc: $out" ;; esac
}

case $case_ in
upload)
  # One open symcache at a time: the app and libc evict each other.
  start "$work/d" --symcache-lru 1
  # Garbage -> 400 with the reason; no token -> 401.
  head -c 4096 /dev/urandom >"$work/garbage"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$work/garbage")
  [ "$c" = 400 ] || fail "garbage upload -> $c"
  grep -q '"reason"' "$work/body" || fail "garbage: no reason: $(cat "$work/body")"
  ok "garbage -> 400 $(cat "$work/body")"
  # The stripped binary: ELF with the right build id, but nothing to name frames with.
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$CRASH")
  [ "$c" = 400 ] || fail "stripped binary upload -> $c"
  grep -q 'no debug information' "$work/body" || fail "stripped: $(cat "$work/body")"
  ok "stripped binary -> 400 $(cat "$work/body")"
  c=$(code POST /api/v1/symbols --data-binary @"$DEBUG"); [ "$c" = 401 ] || fail "upload without token -> $c"
  # A wrong token sent as a reverse proxy sends the upload: 401 after the
  # body, the connection kept (whole_twice.py says why: `symbols add` took
  # nginx's 502 for a server away and retried).
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/symbols "Authorization: Bearer nope" @"$DEBUG" 401 'admin token required' \
    >"$work/proxy401" 2>&1 || fail "upload with a wrong token, as a proxy sends it: $(cat "$work/proxy401")"
  c=$(code POST /api/v1/symbols -H 'Expect: 100-continue' --data-binary @"$DEBUG"); [ "$c" = 401 ] || fail "upload without token, Expect -> $c"
  # The real client: faultline symbols add FILE --server URL.
  "$FL" symbols add "$DEBUG" --server "$(url '')" >"$work/add.out" 2>&1 || fail "symbols add: $(cat "$work/add.out")"
  grep -q "$BID" "$work/add.out" || fail "symbols add output lacks $BID: $(cat "$work/add.out")"
  grep -q 'another build id' "$work/add.out" && fail "server answered another build id"
  ok "faultline symbols add --server -> $(tail -1 "$work/add.out")"
  # Its symcache is built by the API process's background thread, before
  # any crash asks for it: that build is counted like a worker's (only
  # worker builds were, and the metric stayed 0 here).  Nothing else has
  # been built yet, so the count is exactly 1.
  for _ in $(seq 200); do
    curl -s "$(url /metrics)" >"$work/metrics"
    grep -q '^faultline_symcache_built_total 0$' "$work/metrics" || break
    sleep 0.1
  done
  grep -q '^faultline_symcache_built_total 1$' "$work/metrics" \
    || fail "the upload's background build is not counted: $(grep symcache "$work/metrics")"
  [ -f "$work/d/symcache/$BID.symcache" ] || fail "counted, but no symcache: $(ls "$work/d/symcache")"
  ok "the upload's background build counted: $(grep '^faultline_symcache_built_total' "$work/metrics")"
  admin "$(url /api/v1/symbols)" >"$work/syms.json"
  grep -q "\"build_id\":\"$BID\",\"name\":\"symsrv_crash.debug\",\"size\":$(stat -c %s "$DEBUG"),\"status\":\"ok\"" "$work/syms.json" \
    || fail "GET /api/v1/symbols: $(cat "$work/syms.json")"
  grep -q '"status":"failed","error":"' "$work/syms.json" || fail "the garbage upload is not listed as failed"
  ok "GET /api/v1/symbols lists the file and the failure"
  # A less complete copy of the same build id (its DWARF stripped, the
  # symbol table kept) sent after it does not take its place: 201 with a
  # note, the stored file unchanged.  It did, and every frame lost its
  # file and line once the symcache was built again.
  objcopy --strip-debug "$DEBUG" "$work/symtab-only.debug"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$work/symtab-only.debug")
  [ "$c" = 201 ] || fail "a symbol-table-only copy -> $c $(cat "$work/body")"
  grep -q '"note":"the file stored before for this build id was kept: it is more complete (DWARF) than this one (symbols only)"' \
    "$work/body" || fail "no note: $(cat "$work/body")"
  cmp -s "$DEBUG" "$work/d/symbols/processed/$BID/debuginfo" \
    || fail "the debug file was replaced by a less complete one: $(ls -l "$work/d/symbols/processed/$BID")"
  ok "a less complete copy of the build id leaves the stored file: $(cat "$work/body")"
  # The crash, after its symbols: function, file and line in the group.
  crash deep
  submit
  admin "$(url "/api/v1/groups/$GID")" >"$work/group.json"
  grep -Eq "$FAULT_RE" "$work/group.json" || fail "group frames lack symsrv_fault with file/line: $(head -c 1500 "$work/group.json")"
  grep -q '"function":"symsrv_store","file":"[^"]*symsrv_crash.c","line":[0-9]*,"column":[0-9]*,"module":"symsrv_crash","address":"0x[0-9a-f]*","offset":"0x[0-9a-f]*","inlined":true' "$work/group.json" \
    || fail "no inlined symsrv_store frame: $(head -c 1500 "$work/group.json")"
  grep -Eq '"function":"symsrv_middle","file":"[^"]*symsrv_crash\.c"' "$work/group.json" || fail "no symsrv_middle frame"
  grep -Eq '"function":"symsrv_outer"' "$work/group.json" || fail "no symsrv_outer frame"
  grep -q '"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"' "$work/group.json" \
    || fail "signature: $(grep -o '"signature":"[^"]*"' "$work/group.json")"
  grep -Eq "$FAULT_RE" "$work/crash.json" || fail "crash frames lack symsrv_fault"
  grep -q '"symbols":{"status":"[a-z]*","modules":\[' "$work/crash.json" || fail "no symbol status"
  grep -q "{\"module\":\"symsrv_crash\",\"build_id\":\"$BID\",\"symbols\":true}" "$work/crash.json" || fail "symsrv_crash not marked as symbolicated"
  ok "group $GID: $(grep -o '"signature":"[^"]*"' "$work/group.json")"
  ok "frame: $(grep -Eo "$FAULT_RE" "$work/group.json" | head -1)"
  grep -q '"stack_source":"client"' "$work/crash.json" || fail "a complete client stack should be kept"
  # A client whose unwinder stopped after one frame: the server unwinds
  # the crashing thread itself from REGISTER + STACK and the modules' CFI.
  first=$(grep -m1 '^CALLSTACK' "$LOG")
  awk -v f="$first" '/^CALLSTACK/ { if ($0 != f) next } /^CRASH_ID/ { print $0 "-0000"; next } { print }' "$LOG" >"$work/short.crashlog"
  [ "$(grep -c '^CALLSTACK' "$work/short.crashlog")" = 1 ] || fail "could not shorten the stack"
  LOG=$work/short.crashlog
  submit
  grep -q '"stack_source":"server"' "$work/crash.json" || fail "the server's unwind was not used: $(grep -o '"stack_source":"[a-z]*"' "$work/crash.json")"
  grep -Eq '"function":"symsrv_outer","file":"[^"]*symsrv_crash\.c"' "$work/crash.json" || fail "server stack lacks symsrv_outer"
  [ "$GID" = "$(grep -o '"id":"[^"]*"' "$work/group.json" | head -1 | cut -d'"' -f4)" ] || fail "the re-unwound crash went to another group ($GID)"
  ok "one-frame CALLSTACK -> stack_source server, same group as the full stack"
  curl -s "$(url /metrics)" >"$work/metrics"
  grep -Eq '^faultline_symcache_evicted_total [1-9]' "$work/metrics" || fail "no LRU eviction: $(grep symcache "$work/metrics")"
  grep -Eq '^faultline_symbol_lookups_total [1-9]' "$work/metrics" || fail "no lookups counted"
  ok "metrics: $(grep -E '^faultline_sym' "$work/metrics" | tr '\n' ' ')"
  stop || fail "shutdown rc"
  # Size cap: a server with a 1000-byte cap answers 413.
  start "$work/d2" --max-symbol-file 1000
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$DEBUG")
  [ "$c" = 413 ] || fail "oversized upload -> $c"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'Transfer-Encoding: chunked' --data-binary @"$DEBUG")
  [ "$c" = 413 ] || fail "oversized chunked upload -> $c"
  [ -z "$(ls -A "$work/d2/symbols/tmp")" ] || fail "temporary files left: $(ls "$work/d2/symbols/tmp")"
  ok "upload over the cap -> 413 (with and without Content-Length), nothing left behind"
  # Sent as a reverse proxy sends it (whole_twice.py says why): the server
  # reads the body, then answers (`symbols add` took the 502 nginx made
  # of an answer before it for a server away, and tried again).
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/symbols "Authorization: Bearer $ADMIN" @"$DEBUG" 413 '"limit":1000' \
    >"$work/proxy413" 2>&1 || fail "oversized upload, as a proxy sends it: $(cat "$work/proxy413")"
  ok "oversized upload, sent whole as a proxy sends it -> 413 ($(cat "$work/proxy413"))"
  # `symbols add`: a 413 fails that file for good (exit 1, no retry), with
  # the limit and the option to raise.  A file under 1 MiB goes at once
  # (read and dropped by the server, then answered).
  "$FL" symbols add "$DEBUG" --server "$(url '')" >"$work/add413.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] || fail "symbols add of a file over the cap -> exit $rc: $(cat "$work/add413.out")"
  grep -q 'trying again' "$work/add413.out" && fail "symbols add tried a 413 again: $(cat "$work/add413.out")"
  grep -q "too large for the server (HTTP 413): $(stat -c %s "$DEBUG") bytes, over the 1000 bytes its --max-symbol-file allows" "$work/add413.out" ||
    fail "symbols add's 413 message: $(cat "$work/add413.out")"
  ok "symbols add, file over the cap -> exit 1: $(cat "$work/add413.out")"
  # A file over 1 MiB waits for the go-ahead (Expect: 100-continue) and is
  # answered before it is sent.  Through a relay that notes what the
  # client sent.
  head -c 2097152 /dev/urandom >"$work/pad"
  objcopy --add-section .pad="$work/pad" "$DEBUG" "$work/big.debug" || fail "objcopy --add-section"
  python3 - "$PORT" >"$work/relay.port" 2>"$work/relay.err" <<'PY' &
import socket, sys, threading
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(1)
print(lst.getsockname()[1], flush=True)
lst.settimeout(60)
c, _ = lst.accept()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.settimeout(60)
s.settimeout(60)
def back():
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    c.shutdown(socket.SHUT_WR)
t = threading.Thread(target=back)
t.start()
head = b""
try:
    while True:
        d = c.recv(65536)
        if not d:
            break
        if b"\r\n\r\n" not in head:
            head += d
        s.sendall(d)
except OSError:
    pass
t.join()
sys.stderr.write(head.split(b"\r\n\r\n")[0].decode("latin-1") + "\n")
PY
  relay=$!
  for _ in $(seq 100); do [ -s "$work/relay.port" ] && break; sleep 0.1; done
  "$FL" symbols add "$work/big.debug" --server "http://127.0.0.1:$(cat "$work/relay.port")" --retries 0 >"$work/addbig.out" 2>&1
  rc=$?
  wait "$relay"
  grep -qi '^Expect: 100-continue' "$work/relay.err" || fail "no Expect: 100-continue for a 2 MiB file: $(cat "$work/relay.err")"
  [ "$rc" = 1 ] && grep -q "big.debug: too large for the server (HTTP 413): .* --max-symbol-file" "$work/addbig.out" ||
    fail "symbols add of a 2 MiB file over the cap -> exit $rc: $(cat "$work/addbig.out")"
  ok "symbols add, 2 MiB file over the cap: sent with Expect: 100-continue -> exit 1"
  stop || fail "shutdown rc"
  ;;
libc)
  start "$work/d"
  crash abort
  submit
  # abort and raise are inside libc: named, with glibc's source files
  # (libc6-dbg under /usr/lib/debug).
  grep -Eq '"function":"(__GI_)?abort","file":"[^"]*abort\.c","line":[0-9]+' "$work/crash.json" \
    || fail "no libc abort frame with abort.c: $(head -c 2000 "$work/crash.json")"
  grep -Eq '"module":"libc\.so\.6"' "$work/crash.json" || fail "no libc module"
  grep -Eq '"symbols":{"status":"partial"' "$work/crash.json" || fail "the app's own symbols are missing: status should be partial"
  # Stripped: only the functions it exports (the client library's
  # interposers) have names, from its .dynsym.
  grep -q "{\"module\":\"symsrv_crash\",\"build_id\":\"$BID\",\"symbols\":true,\"exports_only\":true}" "$work/crash.json" || fail "symsrv_crash should have its exports only"
  ok "libc frame: $(grep -Eo '"function":"(__GI_)?abort","file":"[^"]*","line":[0-9]+' "$work/crash.json" | head -1)"
  stop || fail "shutdown rc"
  ;;
heap)
  # A symcache build allocates several times its debug file and frees it
  # again; the server hands that memory back (malloc_trim) instead of
  # keeping it resident for good (~14 MB kept after libc's 4 MB debug
  # file, ~220 MB after a 300 MB one).  Not under ASan: its allocator is
  # not glibc's.
  [ "${FAULTLINE_SANITIZE:-OFF}" = ON ] && { ok "skipped under ASan"; exit 0; }
  id=$(readelf -n /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null | grep -o 'Build ID: [0-9a-f]*' | cut -d' ' -f3)
  dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -n "$id" ] && [ -f "$dbg" ] || fail "no libc debug file (libc6-dbg) at $dbg"
  start "$work/d"
  anon() { awk '/^RssAnon:/{print $2}' "/proc/$PID/status"; }
  sleep 0.5
  before=$(anon)
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: libc.debug' --data-binary @"$dbg")
  [ "$c" = 201 ] || fail "upload -> $c $(cat "$work/body")"
  for _ in $(seq 100); do [ -f "$work/d/symcache/$id.symcache" ] && break; sleep 0.1; done
  [ -f "$work/d/symcache/$id.symcache" ] || fail "libc's symcache was not built"
  for _ in $(seq 50); do now=$(anon); [ "$now" -le $((before + 6144)) ] && break; sleep 0.1; done
  [ "$now" -le $((before + 6144)) ] || fail "anonymous RSS ${before} kB before building libc's symcache, ${now} kB after"
  ok "anonymous RSS ${before} kB before building libc's symcache, ${now} kB after"
  stop || fail "shutdown rc"
  ;;
backfill)
  start "$work/d"
  crash deep
  submit
  old=$GID
  admin "$(url "/api/v1/groups/$old")" >"$work/g0.json"
  grep -q '"signature":"symsrv_crash+0x' "$work/g0.json" || fail "before symbols: $(grep -o '"signature":"[^"]*"' "$work/g0.json")"
  ok "before the symbols: $(grep -o '"signature":"[^"]*"' "$work/g0.json")"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: symsrv_crash.debug' --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "upload -> $c $(cat "$work/body")"
  grep -q "\"build_id\":\"$BID\"" "$work/body" || fail "upload answered $(cat "$work/body")"
  # Nobody asks: the crash is re-processed and regrouped.
  moved "$old" "after the upload"
  ok "after the upload: $(grep -o '"signature":"[^"]*"' "$work/g1.json"), one group, count 1"
  # A second crash of the same kind now joins that group directly.
  crash deep
  submit
  [ "$GID" = "$new" ] || fail "second crash went to $GID"
  admin "$(url "/api/v1/groups/$new")" >"$work/g2.json"
  grep -q '"count":2' "$work/g2.json" || fail "count after the second crash: $(head -c 300 "$work/g2.json")"
  ok "a later crash joins it (count 2)"
  stop || fail "shutdown rc"
  ;;
past_end)
  # A debug file whose .debug_info section header says it goes on past
  # the end of the file passed the check and was stored as ok (a
  # symbol-table-only symcache, or a failed build, came of it later).  A
  # section the check relies on that lies past the end makes the file
  # unusable: 400 with the section named, listed as failed, nothing
  # stored; a .symtab so, the same; `symbols add` refuses it before
  # sending.  The good file is then taken.
  past_end "$DEBUG" "$work/info.debug" .debug_info
  objcopy --strip-debug "$DEBUG" "$work/symtab.debug" || fail "objcopy --strip-debug"
  past_end "$work/symtab.debug" "$work/symtab-past.debug" .symtab
  start "$work/d"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: info.debug' --data-binary @"$work/info.debug")
  [ "$c" = 400 ] || fail ".debug_info past the end -> $c $(cat "$work/body")"
  grep -q '"reason":"not a usable ELF file: damaged or truncated: its section .debug_info (bytes [0-9]* to [0-9]*) lies past the end of the file ([0-9]* bytes)"' "$work/body" ||
    fail "reason: $(cat "$work/body")"
  ok ".debug_info past the end -> 400 $(cat "$work/body")"
  [ ! -e "$work/d/symbols/processed/$BID" ] || fail "stored all the same: $(ls -R "$work/d/symbols/processed")"
  api /api/v1/symbols >"$work/syms.json"
  grep -q "\"build_id\":null,\"name\":\"info.debug\",\"size\":[0-9]*,\"status\":\"failed\",\"error\":\"not a usable ELF file: damaged or truncated: its section .debug_info" "$work/syms.json" ||
    fail "not listed as failed: $(cat "$work/syms.json")"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$work/symtab-past.debug")
  [ "$c" = 400 ] && grep -q 'its section .symtab (bytes' "$work/body" || fail ".symtab past the end -> $c $(cat "$work/body")"
  ok ".symtab past the end -> 400"
  "$FL" symbols add "$work/info.debug" --server "$(url '')" >"$work/add.out" 2>&1 && fail "symbols add took it: $(cat "$work/add.out")"
  grep -q 'its section .debug_info (bytes' "$work/add.out" || fail "symbols add: $(cat "$work/add.out")"
  ok "symbols add refuses it: $(cat "$work/add.out")"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "the good file after it -> $c $(cat "$work/body")"
  cmp -s "$DEBUG" "$work/d/symbols/processed/$BID/debuginfo" || fail "the good file not stored"
  ok "the good file is taken"
  stop || fail "shutdown rc"
  ;;
watch)
  start "$work/d"
  crash deep
  submit
  old=$GID
  inc="$work/d/symbols/incoming"
  [ -d "$inc" ] || fail "no $inc"
  head -c 3000 /dev/urandom >"$work/junk.debug"
  cp "$work/junk.debug" "$inc/junk.debug"
  cp "$DEBUG" "$inc/app.debug"
  # incoming/ empties when the watcher moves a file to its place under
  # processed/; processed/app.debug (a link) and failed/'s .error file
  # follow once the store has recorded them: wait for all three.
  for _ in $(seq 100); do
    [ -z "$(ls -A "$inc")" ] && [ -e "$work/d/symbols/processed/app.debug" ] &&
      [ -s "$work/d/symbols/failed/junk.debug.error" ] && break
    sleep 0.1
  done
  [ -z "$(ls -A "$inc")" ] || fail "incoming/ not emptied: $(ls "$inc")"
  [ -f "$work/d/symbols/failed/junk.debug" ] || fail "junk not in failed/"
  [ -s "$work/d/symbols/failed/junk.debug.error" ] || fail "no error file next to it"
  [ -e "$work/d/symbols/processed/app.debug" ] || fail "app.debug not in processed/"
  cmp -s "$DEBUG" "$work/d/symbols/processed/app.debug" || fail "processed/app.debug differs"
  ok "incoming/ -> processed/app.debug and failed/junk.debug ($(cat "$work/d/symbols/failed/junk.debug.error"))"
  admin "$(url /api/v1/symbols)" >"$work/syms.json"
  grep -q '"name":"junk.debug","size":3000,"status":"failed","error":"[^"]' "$work/syms.json" || fail "failure not listed: $(cat "$work/syms.json")"
  grep -q "\"build_id\":\"$BID\",\"name\":\"app.debug\",\"size\":[0-9]*,\"status\":\"ok\"" "$work/syms.json" || fail "app.debug not listed"
  ok "GET /api/v1/symbols shows both"
  # The watched file backfills too.
  for _ in $(seq 200); do
    new=$(admin "$(url "/api/v1/crashes/$CID")" | field group_id)
    [ "$new" != "$old" ] && break
    sleep 0.1
  done
  admin "$(url "/api/v1/groups/$new")" >"$work/g1.json"
  grep -Eq "$FAULT_RE" "$work/g1.json" || fail "no regroup after the watched file"
  ok "crash regrouped with symbols from the watched directory"
  # A writer that pauses for more than a poll: the half-written file looks
  # truncated, and is looked at again rather than failed for good.
  paused_write ""
  ok "a file written with a pause is taken once complete"
  stop || fail "shutdown rc"
  ;;
watch_empty)
  # cp makes its copy empty, then writes into it: a file empty for a poll
  # or two was taken at once as unusable (not ELF) and failed for good.
  # An empty file is left in incoming/ (for a minute); written into, it
  # is taken like any file.
  start "$work/d"
  paused_write "empty: " late.debug 0
  ok "an empty file stays in incoming/ for two polls; written into, it is taken"
  stop || fail "shutdown rc"
  ;;
watch_clock)
  # The same paused writer with the server's wall clock 2 h ahead of the
  # file's (an NTP step after the file was made): the file's mtime looked
  # two hours old, so the half-written file was failed for good at once.
  # How long a file stayed unchanged is measured on the monotonic clock.
  ft=
  # The thread-safe build first (serve_test.sh's faketime_lib says why).
  for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
           /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
    [ -f "$f" ] && ft=$f
  done
  [ -n "$ft" ] || { echo "SKIP: libfaketime (Debian's faketime) is not installed"; exit 77; }
  # The shim (tests/server/clockstep_shim.c) keeps libfaketime 0.9.10 from
  # ending every wait on a monotonic condition variable at once, which
  # made the watcher poll without pause.  NO_FAKE_STAT: a step does not
  # move the times the file system keeps (libfaketime shifts them too).
  [ -f "${FL_CLOCK_SHIM:-}" ] || fail "FL_CLOCK_SHIM: no such file: ${FL_CLOCK_SHIM:-}"
  asan=$(ldd "$FL" | awk '/libasan/ {print $3}')
  printf '#!/bin/sh\nLD_PRELOAD="%s" FAKETIME=+2h DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 exec "%s" "$@"\n' \
    "${asan:+$asan }$FL_CLOCK_SHIM $ft" "$FL" >"$work/fl-ahead"
  chmod +x "$work/fl-ahead"
  real=$FL FL=$work/fl-ahead
  start "$work/d"
  FL=$real
  paused_write "clock 2 h ahead: "
  ok "server's clock 2 h ahead: a file written with a pause is taken once complete"
  stop || fail "shutdown rc"
  ;;
storefail)
  # The store cannot record a debug file for a while (a full disk, a
  # database locked for longer than a transaction waits; here a trigger
  # refuses the symbols row).  An upload is answered 503 + Retry-After,
  # not 500, and a watched file stays in incoming/ -- it was once moved
  # to processed/ unrecorded, and the crashes that lacked it were never
  # re-processed.  Once the store takes writes, both go through.
  sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$work/d/faultline.db" "$1"; }
  start "$work/d"
  crash deep
  submit
  old=$GID
  sql "CREATE TRIGGER refuse BEFORE INSERT ON symbols
       BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;" || fail "trigger"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: up.debug' \
        --data-binary @"$DEBUG" -D "$work/h")
  [ "$c" = 503 ] && grep -qi '^Retry-After: ' "$work/h" ||
    fail "upload while the store refuses -> $c $(cat "$work/body")"
  grep -q 'database or disk is full' "$work/body" || fail "no reason: $(cat "$work/body")"
  ok "upload while the store refuses -> 503 + Retry-After $(cat "$work/body")"
  inc="$work/d/symbols/incoming"
  cp "$DEBUG" "$inc/app.debug"
  for _ in $(seq 100); do grep -q 'symbols: cannot record' "$work/err" && break; sleep 0.1; done
  grep -q 'symbols: cannot record incoming/app.debug: database or disk is full' "$work/err" ||
    fail "log: $(tail -3 "$work/err")"
  [ -f "$inc/app.debug" ] || fail "the watched file left incoming/ unrecorded: $(ls -R "$work/d/symbols")"
  ok "watched file kept in incoming/: $(grep -m1 'symbols: cannot record' "$work/err")"
  # The uploader tries again as Retry-After says, and tells a build script
  # that the failure is temporary (75), not that the file is bad (1).
  "$FL" symbols add "$DEBUG" --server "$(url '')" --retries 1 >"$work/add.out" 2>"$work/add.err"
  rc=$?
  [ $rc = 75 ] || fail "symbols add while the store refuses: exit $rc, want 75: $(cat "$work/add.err")"
  grep -q 'HTTP 503.*; trying again in 5 s (try 2 of 2)' "$work/add.err" &&
    grep -q 'the server is unavailable; 1 file not uploaded' "$work/add.err" ||
    fail "symbols add's retry: $(cat "$work/add.err")"
  ok "symbols add while the store refuses: tried twice, 5 s apart (Retry-After), exit 75"
  "$FL" symbols add "$DEBUG" --server "$(url '')" >"$work/add2.out" 2>"$work/add2.err" &
  add=$!
  for _ in $(seq 100); do grep -q 'trying again' "$work/add2.err" && break; sleep 0.1; done
  sql "DROP TRIGGER refuse;" || fail "drop trigger"
  wait $add; rc=$?
  [ $rc = 0 ] && grep -q "^$BID .*: uploaded (HTTP 201" "$work/add2.out" ||
    fail "symbols add across the refusal: exit $rc: $(cat "$work/add2.out" "$work/add2.err")"
  ok "symbols add started while the store refused: uploaded on its retry ($(grep -c 'trying again' "$work/add2.err") wait)"
  for _ in $(seq 100); do [ -e "$inc/app.debug" ] || break; sleep 0.1; done
  [ ! -e "$inc/app.debug" ] || fail "incoming/app.debug not taken once the store works"
  admin "$(url /api/v1/symbols)" >"$work/syms.json"
  grep -q "\"build_id\":\"$BID\",\"name\":\"app.debug\",\"size\":[0-9]*,\"status\":\"ok\"" "$work/syms.json" ||
    fail "app.debug not listed: $(cat "$work/syms.json")"
  moved "$old" "the watched file, once recorded"
  ok "once the store works: recorded, and the crash re-processed ($(grep -o '"signature":"[^"]*"' "$work/g1.json"))"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: up.debug' --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "upload again -> $c $(cat "$work/body")"
  ok "the upload sent again -> 201"
  # No room for the upload (a 64 KiB file system under symbols/tmp/):
  # 507 with Retry-After, a temporary failure to the uploader.
  if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k tmpfs "$work/d/symbols/tmp" 2>/dev/null; then
    c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$DEBUG" -D "$work/h")
    "$FL" symbols add "$DEBUG" --server "$(url '')" --retries 0 >"$work/add4.out" 2>"$work/add4.err"
    rc=$?
    for _ in $(seq 20); do left=$(ls "$work/d/symbols/tmp" | wc -l); [ "$left" = 0 ] && break; sleep 0.1; done
    umount "$work/d/symbols/tmp"
    [ "$c" = 507 ] && grep -qi '^Retry-After: 30' "$work/h" ||
      fail "upload to a full disk -> $c $(cat "$work/body") $(cat "$work/h")"
    [ $rc = 75 ] && grep -q 'HTTP 507' "$work/add4.err" ||
      fail "symbols add to a full disk: exit $rc: $(cat "$work/add4.err")"
    [ "$left" = 0 ] || fail "$left partial uploads left in symbols/tmp"
    ok "upload to a full disk -> 507 + Retry-After: 30; symbols add exits 75; nothing left in tmp/"
  else
    echo "skip: the full-disk upload needs root to mount a tmpfs"
  fi
  stop || fail "shutdown rc"
  # No server at all: the same, after 2 s.
  "$FL" symbols add "$DEBUG" "$DEBUG" --server "$(url '')" --retries 1 >"$work/add3.out" 2>"$work/add3.err"
  rc=$?
  [ $rc = 75 ] && grep -q 'trying again in 2 s (try 2 of 2)' "$work/add3.err" &&
    grep -q 'the server is unavailable; 2 files not uploaded' "$work/add3.err" ||
    fail "symbols add, server stopped: exit $rc: $(cat "$work/add3.err")"
  ok "symbols add with the server stopped: one retry after 2 s, exit 75, 2 files not uploaded"
  ;;
debuginfod)
  start "$work/d"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "upload -> $c"
  c=$(code GET "/buildid/$BID/debuginfo"); [ "$c" = 200 ] || fail "GET debuginfo -> $c"
  cmp -s "$work/body" "$DEBUG" || fail "curl: debuginfo differs"
  c=$(code GET "/buildid/$BID/executable"); [ "$c" = 404 ] || fail "executable of a debug-only upload -> $c"
  c=$(code GET "/buildid/0123456789abcdef/debuginfo"); [ "$c" = 404 ] || fail "unknown build id -> $c"
  c=$(code GET "/buildid/../../etc/passwd/debuginfo"); [ "$c" = 404 ] || fail "path traversal -> $c"
  # The real client.
  got=$(DEBUGINFOD_URLS="$(url '')" DEBUGINFOD_CACHE_PATH="$work/dcache" debuginfod-find debuginfo "$BID" 2>"$work/dfind.err") \
    || fail "debuginfod-find: $(cat "$work/dfind.err")"
  cmp -s "$got" "$DEBUG" || fail "debuginfod-find's file differs from the upload"
  DEBUGINFOD_URLS="$(url '')" DEBUGINFOD_CACHE_PATH="$work/dcache" debuginfod-find executable "$BID" >/dev/null 2>&1 \
    && fail "debuginfod-find executable found a debug-only upload"
  ok "debuginfod-find debuginfo $BID -> byte-identical ($(stat -c %s "$got") bytes); executable -> not found"
  stop || fail "shutdown rc"
  ;;
symbolicate)
  start "$work/d"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "upload -> $c"
  addr=$(nm "$DEBUG" | awk '$3 == "symsrv_middle" {print $1}' | sed 's/^0*//')
  [ -n "$addr" ] || fail "no symsrv_middle in nm"
  c=$(code POST /api/v1/symbolicate -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
      -d "{\"build_id\":\"$BID\",\"addresses\":[\"0x$addr\",\"0x1\"]}")
  [ "$c" = 200 ] || fail "symbolicate -> $c $(cat "$work/body")"
  grep -Eq '"function":"symsrv_middle","file":"[^"]*symsrv_crash\.c","line":[0-9]+' "$work/body" || fail "JSON: $(cat "$work/body")"
  ok "JSON: $(head -c 300 "$work/body")"
  c=$(code POST /api/v1/symbolicate -H "Authorization: Bearer $ADMIN" -d '{"build_id":"abcd","addresses":["0x10"]}')
  [ "$c" = 404 ] || fail "unknown build id -> $c"
  # Only "0xHEX", decimal digits or integers: strtoull alone would take
  # " -5" as 2^64-5 (named _end), a blank or a sign before the digits, and
  # a second 0x after the first ("0x0x10" was 0x10).
  for a in '" -5"' '"  12"' '"+7"' '"0x-1"' '"-0x1"' '""' '-1' '"0x"' '"1 "' "\"0x0x$addr\"" \
           "\"0X0x$addr\"" "\"0x0X$addr\"" '"0x1g"' '"12a"' '"0x10000000000000000"' \
           '"18446744073709551616"'; do
    c=$(code POST /api/v1/symbolicate -H "Authorization: Bearer $ADMIN" -d "{\"build_id\":\"$BID\",\"addresses\":[$a]}")
    [ "$c" = 400 ] || fail "address $a -> $c $(head -c 300 "$work/body")"
  done
  c=$(code POST /api/v1/symbolicate -H "Authorization: Bearer $ADMIN" -d "{\"build_id\":\"$BID\",\"addresses\":[\"0X$addr\",$((16#$addr)),\"$((16#$addr))\"]}")
  [ "$c" = 200 ] || fail "0X/integer/decimal -> $c"
  [ "$(grep -o '"function":"symsrv_middle"' "$work/body" | wc -l)" = 3 ] || fail "0X/integer/decimal: $(cat "$work/body")"
  ok "addresses with a blank or a sign -> 400; 0X, integer and decimal string name the same function"
  c=$(code POST /api/v1/symbolicate -H "Authorization: Bearer $ADMIN" -d '{"addresses":3}')
  [ "$c" = 400 ] || fail "bad JSON -> $c"
  c=$(code POST /api/v1/symbolicate -d "{\"build_id\":\"$BID\",\"addresses\":[]}")
  [ "$c" = 401 ] || fail "no token -> $c"
  # XML: the crash log in CDATA comes back annotated.
  crash deep
  { printf '<?xml version="1.0"?>\n<symbolicationRequest version="1">\n<crashReport><![CDATA['
    cat "$LOG"; printf ']]></crashReport>\n</symbolicationRequest>\n'; } >"$work/req.xml"
  c=$(code POST /symbolicate -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/xml' --data-binary @"$work/req.xml")
  [ "$c" = 200 ] || fail "XML -> $c $(head -c 500 "$work/body")"
  grep -q '^<symbolicationResponse version="1" candidates="[1-9]' "$work/body" || fail "no response: $(head -c 300 "$work/body")"
  grep -Eq '^#   -> symsrv_fault at [^ ]*symsrv_crash\.c:[0-9]+(:[0-9]+)? in symsrv_crash\+0x[0-9a-f]+$' "$work/body" \
    || fail "symsrv_fault not annotated: $(grep -A6 '^CALLSTACK' "$work/body" | head -20)"
  ok "XML: $(grep -m1 -E '^#   -> symsrv_fault' "$work/body")"
  # XXE through the endpoint: refused at the DOCTYPE, nothing read.
  printf '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n<symbolicationRequest version="1"><crashReport>&e;</crashReport></symbolicationRequest>\n' >"$work/xxe.xml"
  c=$(code POST /symbolicate -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/xml' --data-binary @"$work/xxe.xml")
  [ "$c" = 400 ] || fail "XXE -> $c"
  grep -q '<error code="doctype">' "$work/body" || fail "XXE: $(cat "$work/body")"
  grep -q 'root:' "$work/body" && fail "/etc/passwd leaked"
  printf '<symbolicationRequest>\n<crashReport>\n</oops>\n' >"$work/bad.xml"
  c=$(code POST /symbolicate -H "Authorization: Bearer $ADMIN" --data-binary @"$work/bad.xml")
  [ "$c" = 400 ] || fail "malformed XML -> $c"
  grep -q '<error code="malformed">' "$work/body" || fail "malformed: $(cat "$work/body")"
  ok "XXE -> 400 doctype, malformed -> 400"
  stop || fail "shutdown rc"
  ;;
symtab)
  # Names first, DWARF later: a symbol-table-only file of the build id
  # (what `strip --strip-debug` leaves) names the frames but gives no
  # inlined frame; the DWARF uploaded after it must re-process the crash
  # and move it to the group later crashes of the bug go to.
  start "$work/d"
  objcopy --strip-debug "$DEBUG" "$work/symtab-only.debug" || fail "objcopy --strip-debug"
  crash deep
  submit
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: symtab-only' \
      --data-binary @"$work/symtab-only.debug")
  [ "$c" = 201 ] || fail "symtab-only upload -> $c $(cat "$work/body")"
  NAMES='"signature":"symsrv_fault | symsrv_middle | symsrv_outer | main"'
  FULL='"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"'
  for _ in $(seq 200); do
    GID=$(admin "$(url "/api/v1/crashes/$CID")" | field group_id)
    grep -q "$NAMES" <<<"$(admin "$(url "/api/v1/groups/$GID")")" && break
    sleep 0.1
  done
  admin "$(url "/api/v1/groups/$GID")" >"$work/g0.json"
  grep -q "$NAMES" "$work/g0.json" || fail "with the symbol table: $(grep -o '"signature":"[^"]*"' "$work/g0.json")"
  old=$GID
  ok "symbol table only: $(grep -o '"signature":"[^"]*"' "$work/g0.json")"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: symsrv_crash.debug' \
      --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "DWARF upload -> $c $(cat "$work/body")"
  moved "$old" "the DWARF after a symbol table only"
  grep -q "$FULL" "$work/g1.json" || fail "after the DWARF: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  ok "after the DWARF: $(grep -o '"signature":"[^"]*"' "$work/g1.json"), one group, count 1"
  # A later crash of the same bug joins that group.
  crash deep
  submit
  [ "$GID" = "$new" ] || fail "a later crash went to $GID, not $new"
  ok "a later crash joins it"
  stop || fail "shutdown rc"
  ;;
dwz)
  # dwz -m moves what several debug files share into one file they link
  # to (.gnu_debugaltlink); here symsrv_store's name and inline abstract
  # went there.  Without that file the inlined frame has no name and the
  # crash is partial, waiting for it; the file, uploaded later (found
  # next to the debug file by `symbols add`), re-processes the crash.
  command -v dwz >/dev/null || fail "dwz is not installed (scripts/deps.sh installs it)"
  mkdir -p "$work/dbg" "$work/alt" "$work/other"
  cp "$DEBUG" "$work/dbg/d1.debug"; cp "$DEBUG" "$work/other/d2.debug"
  # The link names the file relative to the debug file: ../alt/common.dwz.
  dwz -m "$work/hidden.dwz" -M ../alt/common.dwz "$work/dbg/d1.debug" "$work/other/d2.debug" \
    || fail "dwz -m"
  readelf -S "$work/dbg/d1.debug" | grep -q gnu_debugaltlink || fail "dwz left no .gnu_debugaltlink"
  ALT=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$work/hidden.dwz" 2>/dev/null) | cut -d' ' -f3)
  [ -n "$ALT" ] || fail "no build id in the dwz file"
  start "$work/d"
  "$FL" symbols add "$work/dbg/d1.debug" --server "$(url '')" >"$work/add.out" 2>&1 \
    || fail "symbols add: $(cat "$work/add.out")"
  grep -q "warning: .*d1.debug: its DWARF links to a dwz file (build id $ALT) that is not found" "$work/add.out" \
    || fail "no warning about the missing dwz file: $(cat "$work/add.out")"
  grep -c "$BID" "$work/add.out" | grep -qx 1 || fail "upload of d1.debug: $(cat "$work/add.out")"
  ok "symbols add without the dwz file: $(grep -o 'warning: [^:]*' "$work/add.out")"
  crash deep
  submit
  grep -q '"symbols":{"status":"partial"' "$work/crash.json" || fail "status: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q "\"build_id\":\"$BID\",\"symbols\":true,\"dwz_missing\":\"$ALT\"" "$work/crash.json" \
    || fail "no dwz_missing: $(grep -o '"modules":\[[^]]*]' "$work/crash.json")"
  grep -Eq "$FAULT_RE" "$work/crash.json" || fail "symsrv_fault is named from the debug file itself"
  grep -q '"function":"symsrv_store"' "$work/crash.json" && fail "symsrv_store named without the dwz file"
  old=$GID
  ok "without the dwz file: partial, dwz_missing $ALT, $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  # The file where the link names it: symbols add uploads it with d1.debug.
  mv "$work/hidden.dwz" "$work/alt/common.dwz"
  "$FL" symbols add "$work/dbg/d1.debug" --server "$(url '')" >"$work/add2.out" 2>&1 \
    || fail "symbols add with the dwz file: $(cat "$work/add2.out")"
  grep -q "$ALT" "$work/add2.out" || fail "the dwz file was not uploaded: $(cat "$work/add2.out")"
  grep -q warning "$work/add2.out" && fail "a warning with the dwz file at hand: $(cat "$work/add2.out")"
  ok "symbols add uploaded the dwz file too: $(grep "$ALT" "$work/add2.out")"
  moved "$old" "the dwz file after its debug file"
  grep -q '"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"' "$work/g1.json" \
    || fail "after the dwz file: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  admin "$(url "/api/v1/crashes/$CID")" >"$work/crash.json"
  grep -q '"symbols":{"status":"complete"' "$work/crash.json" || fail "status after: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q dwz_missing "$work/crash.json" && fail "dwz_missing after the upload"
  ok "after the dwz file: $(grep -o '"signature":"[^"]*"' "$work/g1.json"), complete, one group, count 1"
  stop || fail "shutdown rc"
  ;;
dwz_debuginfod)
  # Nothing uploaded: a real debuginfod serves the dwz'd debug file and
  # its dwz file, and the server asks it for both.
  command -v dwz >/dev/null || fail "dwz is not installed (scripts/deps.sh installs it)"
  . "$(dirname "$0")/../lib/debuginfod.sh"
  trap 'debuginfod_stop; cleanup' EXIT
  mkdir -p "$work/dsrv" "$work/other"
  cp "$DEBUG" "$work/dsrv/d1.debug"; cp "$DEBUG" "$work/other/d2.debug"
  dwz -m "$work/dsrv/common.dwz" -M /nonexistent/faultline-test/common.dwz \
    "$work/dsrv/d1.debug" "$work/other/d2.debug" || fail "dwz -m"
  ALT=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$work/dsrv/common.dwz" 2>/dev/null) | cut -d' ' -f3)
  debuginfod_start "$work/dsrv" 0 2
  export DEBUGINFOD_URLS="http://127.0.0.1:$DPORT" DEBUGINFOD_CACHE_PATH="$work/dicache"
  start "$work/d"
  crash deep
  submit
  grep -q '"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"' "$work/crash.json" \
    || fail "signature: $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  grep -q '"symbols":{"status":"complete"' "$work/crash.json" || fail "status: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q dwz_missing "$work/crash.json" && fail "dwz_missing with debuginfod serving the file"
  grep -q "/buildid/$ALT/debuginfo" "$work/debuginfod.log" || fail "debuginfod was not asked for the dwz file $ALT"
  ok "debuginfod served the debug file and its dwz file $ALT: $(grep -o '"signature":"[^"]*"' "$work/crash.json"), complete"
  stop || fail "shutdown rc"
  ;;
dwz_debuginfod_late)
  # The debug file comes from debuginfod at once, its dwz file only later
  # (published after the first crash).  The first crash is partial, with
  # dwz_missing; once the server's memory of the miss is over
  # (--debuginfod-miss 3), a later crash asks again (the open symcache
  # that lacked the file is looked up again), gets it, and the crash
  # processed without it is re-queued (the dwz file's own backfill).
  # Before, the symcache stayed open as it was, nothing asked again, and
  # a dwz file that did come from debuginfod re-queued nothing.
  command -v dwz >/dev/null || fail "dwz is not installed (scripts/deps.sh installs it)"
  mkdir -p "$work/dsrv" "$work/other"
  cp "$DEBUG" "$work/dsrv/d1.debug"; cp "$DEBUG" "$work/other/d2.debug"
  dwz -m "$work/dsrv/common.dwz" -M /nonexistent/faultline-test/common.dwz \
    "$work/dsrv/d1.debug" "$work/other/d2.debug" || fail "dwz -m"
  ALT=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$work/dsrv/common.dwz" 2>/dev/null) | cut -d' ' -f3)
  [ -n "$ALT" ] || fail "no build id in the dwz file"
  echo right >"$work/mode"; echo 404 >"$work/altmode"
  python3 "$(dirname "$0")/fake_debuginfod.py" "$work/dport" "$work/dreq.log" "$work/mode" \
    "$BID" "$work/dsrv/d1.debug" /bin/true "$ALT" "$work/dsrv/common.dwz" "$work/altmode" 2>"$work/fake.err" &
  FPID=$!
  trap 'kill $FPID 2>/dev/null; cleanup' EXIT
  for _ in $(seq 100); do [ -s "$work/dport" ] && break; sleep 0.1; done
  [ -s "$work/dport" ] || fail "the stand-in debuginfod did not start: $(cat "$work/fake.err")"
  export DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$work/dport")"
  start "$work/d" --debuginfod-miss 3
  crash deep
  submit
  first=$CID old=$GID
  grep -q '"symbols":{"status":"partial"' "$work/crash.json" || fail "status: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q "\"build_id\":\"$BID\",\"symbols\":true,\"dwz_missing\":\"$ALT\"" "$work/crash.json" \
    || fail "no dwz_missing: $(grep -o '"modules":\[[^]]*]' "$work/crash.json")"
  grep -q "GET /buildid/$ALT/debuginfo" "$work/dreq.log" || fail "the dwz file was not asked for: $(cat "$work/dreq.log")"
  ok "the dwz file missing: partial, dwz_missing $ALT"
  echo right >"$work/altmode"
  sleep 4 # past --debuginfod-miss
  crash deep
  submit
  [ "$(grep -c "GET /buildid/$ALT/debuginfo" "$work/dreq.log")" -ge 2 ] ||
    fail "the dwz file was not asked for again: $(cat "$work/dreq.log")"
  grep -q '"symbols":{"status":"complete"' "$work/crash.json" ||
    fail "a later crash: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q '"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"' "$work/crash.json" \
    || fail "a later crash: $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  ok "a later crash asked again: complete"
  # The backfill: the first crash joins the later one's group.
  for _ in $(seq 300); do
    [ "$(admin "$(url "/api/v1/crashes/$first")" | field group_id)" = "$GID" ] && break
    sleep 0.1
  done
  admin "$(url "/api/v1/crashes/$first")" >"$work/crash.json"
  [ "$(field group_id <"$work/crash.json")" = "$GID" ] ||
    fail "the crash that lacked the dwz file was not re-processed: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  c=$(code GET "/api/v1/groups/$old" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 404 ] || fail "the emptied group is still there ($c): $(cat "$work/body")"
  grep -q '"symbols":{"status":"complete"' "$work/crash.json" || fail "status after: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q "symbols: $ALT came from debuginfod: 1 crash(es) that lacked it re-queued" "$work/err" ||
    fail "no log line for the dwz file's backfill: $(tail -5 "$work/err")"
  ok "the crash that lacked the dwz file was re-processed: complete, one group"
  stop || fail "shutdown rc"
  ;;
debuginfod_adverse)
  # A debuginfod that does not answer, then answers with the wrong file,
  # then with the right one (a stand-in: a real debuginfod cannot be made
  # to misbehave).  No answer is an outage, not a miss: one request, then
  # none for a minute whatever the build id (libdebuginfod's own retries
  # made each query three timeouts, and every crash paid them again).  A
  # wrong answer is refused and leaves libdebuginfod's cache (it was
  # served from there for good).  The right one, fetched for a later
  # crash, re-queues the crashes that lacked it (the backfill).
  cp /bin/true "$work/wrong"  # an ELF file of another build id
  echo hang >"$work/mode"
  python3 "$(dirname "$0")/fake_debuginfod.py" "$work/dport" "$work/dreq.log" "$work/mode" \
    "$BID" "$DEBUG" "$work/wrong" 2>"$work/fake.err" &
  FPID=$!
  trap 'kill $FPID 2>/dev/null; cleanup' EXIT
  for _ in $(seq 100); do [ -s "$work/dport" ] && break; sleep 0.1; done
  [ -s "$work/dport" ] || fail "the stand-in debuginfod did not start: $(cat "$work/fake.err")"
  export DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$work/dport")" DEBUGINFOD_TIMEOUT=2
  touch "$work/dreq.log"
  # The request for $BID and every one after it.
  requests_since_bid() { sed -n "\|GET /buildid/$BID/|,\$p" "$work/dreq.log" | wc -l; }
  start "$work/d" --workers 1
  ids=()
  for n in 1 2 3; do crash deep; submit; ids+=("$CID"); done
  first=$GID
  grep -q '"symbols":{"status":"partial"' "$work/crash.json" || fail "hang: status: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  # Other build ids (the vdso's executable...) may be asked for before,
  # and get their 404; after the request that got no answer, none.
  asked=$(grep -c "GET /buildid/$BID/" "$work/dreq.log")
  after=$(requests_since_bid)
  [ "$asked" = 1 ] && [ "$after" = 1 ] ||
    fail "a debuginfod that does not answer was asked $asked times for 3 crashes, and $((after - 1)) requests followed: $(cat "$work/dreq.log")"
  grep -q 'symbols: debuginfod: no server answered (Timer expired)' "$work/err" || fail "no log line for the outage: $(tail -5 "$work/err")"
  # Other build ids are not asked for either during the pause.
  python3 - "$work/other.log" <<'PY'
import sys
L = ["FAULTLINE 1", "CRASHLOG_VERSION 2", "APPLICATION_NAME other", "APPLICATION_VERSION 1.0",
     "CRASH_ID 0badc0de-0000-4000-8000-0000000000c1", "CRASH_SIGNAL 11"]
for i in range(3):
    base = 0x10000000 + i * 0x100000
    L += ["OBJECT lib%d.so/%d/65536/%d" % (i, base, base), "OBJECT_BUILD_ID %040x" % (0xc0ffee + i)]
L += ["CALLSTACK %d" % (0x10000000 + i * 0x100000 + 0x100) for i in range(3)] + ["END"]
open(sys.argv[1], "w").write("\n".join(L) + "\n")
PY
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/other.log")
  [ "$c" = 200 ] || fail "submit other -> $c $(cat "$work/body")"
  wait_processed 0badc0de-0000-4000-8000-0000000000c1 "$work/other.json"
  [ "$(requests_since_bid)" = 1 ] || fail "asked during the pause: $(cat "$work/dreq.log")"
  api /metrics >"$work/metrics"
  grep -q '^faultline_debuginfod_failures_total{reason="unreachable"} 1$' "$work/metrics" &&
    grep -Eq '^faultline_debuginfod_skipped_total\{reason="outage"\} [1-9]' "$work/metrics" ||
    fail "metrics: $(grep debuginfod "$work/metrics")"
  ok "no answer: 1 request for 3 crashes, then a pause; logged and counted"
  stop || fail "shutdown rc"

  echo wrong >"$work/mode"
  start "$work/d" --workers 1
  crash deep; submit; ids+=("$CID")
  grep -q "GET /buildid/$BID/debuginfo" "$work/dreq.log" || fail "wrong: not asked"
  grep -q "symbols: debuginfod: the debuginfo answered for build id $BID was refused (the file has another build id)" "$work/err" ||
    fail "no log line for the refused answer: $(tail -5 "$work/err")"
  [ -e "$work/d/debuginfod-cache/$BID/debuginfo" ] && fail "the refused answer stays in libdebuginfod's cache"
  api /metrics | grep -q '^faultline_debuginfod_failures_total{reason="refused"} 1$' || fail "refused not counted"
  [ "$(field group_id <"$work/crash.json")" = "$first" ] || fail "the wrong file changed the group"
  ok "a wrong answer: refused, logged, removed from the cache"
  stop || fail "shutdown rc"

  echo right >"$work/mode"
  : >"$work/dreq.log"
  start "$work/d" --workers 1
  crash deep; submit; ids+=("$CID")
  grep -q "GET /buildid/$BID/debuginfo" "$work/dreq.log" || fail "right: the build id was not asked for again (the refused file was served from the cache?)"
  grep -q '"signature":"symsrv_store | symsrv_fault | symsrv_middle | symsrv_outer | main"' "$work/crash.json" ||
    fail "right: $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  last=$GID
  # The backfill: the four crashes processed without it join the group.
  for _ in $(seq 200); do
    [ "$(api "/api/v1/groups/$last" | grep -o '"count":[0-9]*' | head -1)" = '"count":5' ] && break
    sleep 0.1
  done
  [ "$(api "/api/v1/groups/$last" | grep -o '"count":[0-9]*' | head -1)" = '"count":5' ] ||
    fail "backfill: $(api "/api/v1/groups/$last" | head -c 300)"
  for id in "${ids[@]}"; do
    [ "$(api "/api/v1/crashes/$id" | field group_id)" = "$last" ] || fail "crash $id was not re-processed"
  done
  grep -q "symbols: $BID came from debuginfod: 4 crash(es) that lacked it re-queued" "$work/err" ||
    fail "no log line for the backfill: $(tail -5 "$work/err")"
  ok "the right answer: fetched, and the 4 crashes that lacked it re-processed into its group"
  stop || fail "shutdown rc"
  ;;
debuginfod_budget)
  # A log names 40 modules with build ids no debuginfod server has (the
  # ingest key is public: anyone can send one).  Each id was one request
  # -- each up to the timeout -- so one small report kept a worker for
  # minutes and sent a flood to the debuginfod server.  A crash may now
  # make requests until 8 found nothing (or 30 s went by in them).
  . "$(dirname "$0")/../lib/debuginfod.sh"
  trap 'debuginfod_stop; cleanup' EXIT
  mkdir -p "$work/dsrv"
  cp "$DEBUG" "$work/dsrv/"  # a file of another build id: it has scanned
  debuginfod_start "$work/dsrv" 0 1
  export DEBUGINFOD_URLS="http://127.0.0.1:$DPORT" DEBUGINFOD_CACHE_PATH="$work/dicache"
  start "$work/d"
  python3 - "$work/many" <<'PY'
import random, sys
for n in (1, 2):
    random.seed(n)
    L = ["FAULTLINE 1", "CRASHLOG_VERSION 2", "APPLICATION_NAME many", "APPLICATION_VERSION 1.0",
         "CRASH_ID 0badc0de-0000-4000-8000-0000000000b%d" % n, "CRASH_SIGNAL 11"]
    for i in range(40):
        base = 0x10000000 + i * 0x100000
        L += ["OBJECT lib%d.so/%d/65536/%d" % (i, base, base),
              "OBJECT_BUILD_ID %040x" % random.getrandbits(160)]
    L += ["CALLSTACK %d" % (0x10000000 + i * 0x100000 + 0x100) for i in range(40)]
    L.append("END")
    open(sys.argv[1] + "%d.log" % n, "w").write("\n".join(L) + "\n")
PY
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/many1.log")
  [ "$c" = 200 ] || fail "submit -> $c $(cat "$work/body")"
  wait_processed 0badc0de-0000-4000-8000-0000000000b1 "$work/crash.json" 300
  asked=$(grep -c 'GET /buildid/' "$work/debuginfod.log" || true)
  [ "$asked" -ge 1 ] && [ "$asked" -le 8 ] ||
    fail "debuginfod was asked $asked times for one crash, want 1..8"
  ok "40 unknown build ids in one crash: $asked debuginfod requests, then no more"
  # The next crash has a budget of its own (40 other build ids).
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/many2.log")
  [ "$c" = 200 ] || fail "submit 2 -> $c"
  wait_processed 0badc0de-0000-4000-8000-0000000000b2 "$work/crash.json" 300
  asked2=$(grep -c 'GET /buildid/' "$work/debuginfod.log" || true)
  [ "$asked2" -gt "$asked" ] && [ "$asked2" -le $((asked + 8)) ] ||
    fail "after the second crash debuginfod was asked $asked2 times in all, want $((asked + 1))..$((asked + 8))"
  ok "the next crash: $((asked2 - asked)) requests of its own"
  stop || fail "shutdown rc"
  ;;
roles)
  # API and workers in two processes on one data directory: the upload
  # reaches the worker process through the store (backfill tasks, symbols
  # version), not through memory.
  start "$work/d" --role api
  "$FL" serve --data "$work/d" --role worker --workers 2 >"$work/wout" 2>>"$work/err" &
  WPID=$!
  trap 'kill -9 $WPID 2>/dev/null; cleanup' EXIT
  crash deep
  submit
  old=$GID
  grep -q '"signature":"symsrv_crash+0x' "$work/crash.json" || fail "before symbols: $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$DEBUG")
  [ "$c" = 201 ] || fail "upload -> $c"
  for _ in $(seq 200); do
    admin "$(url "/api/v1/crashes/$CID")" >"$work/crash.json"
    new=$(field group_id <"$work/crash.json")
    [ "$new" != "$old" ] && break
    sleep 0.1
  done
  grep -Eq "$FAULT_RE" "$work/crash.json" || fail "worker process did not backfill: $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  ok "--role api + --role worker: backfilled in the worker process ($(grep -o '"signature":"[^"]*"' "$work/crash.json"))"
  kill -TERM $WPID; wait $WPID || fail "worker shutdown rc"
  stop || fail "shutdown rc"
  ;;
dwp)
  # The same program's .dwo packed into a .dwp package (llvm-dwp; binutils'
  # dwp cannot pack gcc's DWARF 5).  Uploaded after the crash, the package
  # is kept under the DWO id it holds and re-processes the crash as the
  # .dwo itself does; symbols add --server sends PROG.dwp before PROG when
  # the .dwo is not found but the package is; a package with a damaged
  # index is refused (400) with the reason.
  split_app
  CRASH=$work/bin/app
  command -v llvm-dwp >/dev/null || fail "llvm-dwp is not installed"
  timeout 60 llvm-dwp "$DWO" -o "$work/app.dwp" || fail "llvm-dwp"
  start "$work/d"
  "$FL" symbols add "$work/bin/app" --server "$(url '')" >"$work/add.out" 2>&1 \
    || fail "symbols add: $(cat "$work/add.out")"
  crash deep
  submit
  grep -q '"symbols":{"status":"partial"' "$work/crash.json" || fail "status: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  old=$GID
  python3 - "$work/app.dwp" "$work/bad.dwp" <<'PY' || fail "damaged package"
import subprocess, sys
b = bytearray(open(sys.argv[1], "rb").read())
for l in subprocess.check_output(["readelf", "-SW", sys.argv[1]]).decode().splitlines():
    if ".debug_cu_index" in l:
        b[int(l.split("]")[1].split()[3], 16)] = 3
        break
else:
    sys.exit(1)
open(sys.argv[2], "wb").write(b)
PY
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: bad.dwp' --data-binary @"$work/bad.dwp")
  [ "$c" = 400 ] || fail "a damaged package -> $c $(cat "$work/body")"
  grep -q '"reason":"not a usable .dwp package: unit index version 3 is not read' "$work/body" || fail "damaged: $(cat "$work/body")"
  ok "a package with a damaged index: 400 $(grep -o '"reason":"[^"]*"' "$work/body")"
  "$FL" symbols add "$work/app.dwp" --server "$(url '')" >"$work/add2.out" 2>&1 \
    || fail "symbols add of the package: $(cat "$work/add2.out")"
  grep -q "^$DWOID $work/app.dwp: uploaded (HTTP 201" "$work/add2.out" || fail "upload of the package: $(cat "$work/add2.out")"
  moved "$old" "the package after its program"
  grep -q "$STORE_SIG" "$work/g1.json" || fail "after the package: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  admin "$(url "/api/v1/crashes/$CID")" >"$work/crash.json"
  grep -q '"symbols":{"status":"complete"' "$work/crash.json" || fail "status after: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q dwo_missing "$work/crash.json" && fail "dwo_missing after the upload"
  grep -q '"function":"symsrv_store","file":"[^"]*symsrv_crash\.c","line":[0-9]*,"column":[0-9]*,[^}]*"inlined":true' "$work/crash.json" \
    || fail "no inlined symsrv_store frame: $(grep -o '"frames":\[[^]]*' "$work/crash.json" | head -c 800)"
  api /api/v1/symbols >"$work/list.json"
  grep -q "\"build_id\":null,\"dwo_id\":\"$DWOID\",\"name\":\"app.dwp\",\"size\":[0-9]*,\"status\":\"ok\",\"error\":null,\"kind\":\"dwp\"" "$work/list.json" \
    || fail "listing: $(cat "$work/list.json")"
  [ -f "$work/d/symbols/processed/dwo-$DWOID/dwo" ] || fail "not stored by DWO id: $(ls "$work/d/symbols/processed")"
  ok "the package after its program: $(grep -o '"signature":"[^"]*"' "$work/g1.json"), complete, inlined frame, listed as kind dwp"
  # Beside the program, the package goes up before it.
  mv "$work/app.dwp" "$work/bin/app.dwp"
  "$FL" symbols add "$work/bin/app" --server "$(url '')" >"$work/add3.out" 2>&1 \
    || fail "symbols add with the package beside: $(cat "$work/add3.out")"
  grep -q warning "$work/add3.out" && fail "a warning with the package at hand: $(cat "$work/add3.out")"
  [ "$(grep -n "uploaded (HTTP 20" "$work/add3.out" | head -1 | grep -c "$work/bin/app.dwp")" = 1 ] \
    || fail "the package was not sent first: $(cat "$work/add3.out")"
  ok "symbols add --server sends PROG.dwp before PROG"
  stop || fail "shutdown rc"
  ;;
dwp_parallel)
  # The same .dwp package uploaded 8 times at once (a CI matrix whose jobs
  # each send it): each upload links the package under its DWO id through
  # a temporary name, and rename() of two names of one file does nothing,
  # so one upload's link made after another's left processed/dwo-<id>/
  # dwo.tmp behind (or a link() found another's and answered 500).  Every
  # upload is 201, nothing *.tmp* stays, each dwo-<id>/dwo is the package,
  # and the crash is symbolized with it.
  split_app
  CRASH=$work/bin/app
  command -v llvm-dwp >/dev/null || fail "llvm-dwp is not installed"
  # With 24 more units (one store transaction each), the uploads overlap
  # for sure: one links the package another has just replaced.
  mkdir -p "$work/units"
  for i in $(seq 24); do
    echo "int unit$i(int x) { return x * $i + 1; }" >"$work/units/u$i.c"
    (cd "$work/units" && cc -c -g -O2 -gsplit-dwarf "u$i.c") || fail "cc u$i.c"
  done
  timeout 60 llvm-dwp "$DWO" "$work"/units/u*.dwo -o "$work/app.dwp" || fail "llvm-dwp"
  start "$work/d" --http-threads 8
  "$FL" symbols add "$work/bin/app" --server "$(url '')" >"$work/add.out" 2>&1 \
    || fail "symbols add: $(cat "$work/add.out")"
  crash deep
  submit
  old=$GID
  pids=()
  for i in $(seq 8); do
    curl -s -o "$work/par$i.body" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
      -H 'X-Faultline-Name: app.dwp' --data-binary @"$work/app.dwp" "$(url /api/v1/symbols)" >"$work/par$i.code" &
    pids+=($!)
  done
  wait "${pids[@]}" # not a bare wait: the server is a child too
  for i in $(seq 8); do
    [ "$(cat "$work/par$i.code")" = 201 ] || fail "parallel upload $i -> $(cat "$work/par$i.code") $(cat "$work/par$i.body")"
  done
  left=$(find "$work/d/symbols/processed" -name '*.tmp*'; find "$work/d/symbols/tmp" -type f)
  [ -z "$left" ] || fail "temporary links left: $left"
  for f in "$work/d/symbols/processed"/dwo-*/dwo; do
    cmp -s "$f" "$work/app.dwp" || fail "$f is not the package: $(ls -l "$f")"
  done
  ok "8 parallel uploads of the package: all 201, no temporary link left, every dwo-<id>/dwo the package"
  moved "$old" "after the parallel uploads"
  grep -q "$STORE_SIG" "$work/g1.json" || fail "after the package: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  ok "the crash symbolized with the package: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  stop || fail "shutdown rc"
  ;;
dwp_storefail)
  # A .dwp package dropped into the watched directory while the store
  # cannot record it (a trigger refuses the symbols row, as in storefail)
  # stays in incoming/ and is tried again every second, as any watched
  # file -- it was once moved to processed/ unrecorded for good.  Once the
  # store takes writes it is recorded under its DWO id (kind dwp).
  sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$work/d/faultline.db" "$1"; }
  split_app
  command -v llvm-dwp >/dev/null || fail "llvm-dwp is not installed"
  timeout 60 llvm-dwp "$DWO" -o "$work/app.dwp" || fail "llvm-dwp"
  start "$work/d"
  sql "CREATE TRIGGER refuse BEFORE INSERT ON symbols
       BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;" || fail "trigger"
  inc="$work/d/symbols/incoming"
  cp "$work/app.dwp" "$inc/app.dwp"
  for _ in $(seq 100); do grep -q 'symbols: cannot record' "$work/err" && break; sleep 0.1; done
  grep -q 'symbols: cannot record incoming/app.dwp: database or disk is full' "$work/err" ||
    fail "log: $(tail -3 "$work/err")"
  sleep 2.5 # two more polls: it must still be there, not taken unrecorded
  [ -f "$inc/app.dwp" ] || fail "the watched package left incoming/ unrecorded: $(ls -R "$work/d/symbols")"
  cmp -s "$inc/app.dwp" "$work/app.dwp" || fail "the watched package changed"
  ok "watched package kept in incoming/: $(grep -m1 'symbols: cannot record' "$work/err")"
  sql "DROP TRIGGER refuse;" || fail "drop trigger"
  for _ in $(seq 100); do [ -e "$inc/app.dwp" ] || break; sleep 0.1; done
  [ ! -e "$inc/app.dwp" ] || fail "incoming/app.dwp not taken once the store works"
  admin "$(url /api/v1/symbols)" >"$work/syms.json"
  grep -q "\"build_id\":null,\"dwo_id\":\"$DWOID\",\"name\":\"app.dwp\",\"size\":[0-9]*,\"status\":\"ok\",\"error\":null,\"kind\":\"dwp\"" "$work/syms.json" ||
    fail "app.dwp not listed: $(cat "$work/syms.json")"
  [ -f "$work/d/symbols/processed/dwo-$DWOID/dwo" ] || fail "not stored by DWO id: $(ls "$work/d/symbols/processed")"
  grep -q 'symbols: recording debug files works again' "$work/err" || fail "no line saying it works again"
  ok "once the store works: recorded by DWO id $DWOID, kind dwp"
  stop || fail "shutdown rc"
  ;;
dwo)
  # A program built with -gsplit-dwarf, copied away from its build tree:
  # its unit's functions and inlined calls are in a .dwo file the server
  # does not have.  The crash is partial and waits for that file by DWO
  # id; a damaged .dwo is refused and changes nothing; the good one,
  # uploaded after the program, re-processes the crash, whose frames then
  # name the inlined function as the whole-DWARF build's do.
  split_app
  CRASH=$work/bin/app
  start "$work/d"
  "$FL" symbols add "$work/bin/app" --server "$(url '')" >"$work/add.out" 2>&1 \
    || fail "symbols add: $(cat "$work/add.out")"
  grep -q "warning: .*app: the .dwo files of 1 of its 1 split-DWARF units are not found.*(DWO id $DWOID)" "$work/add.out" \
    || fail "no warning about the .dwo found nowhere: $(cat "$work/add.out")"
  crash deep
  submit
  grep -q '"symbols":{"status":"partial"' "$work/crash.json" || fail "status: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q "\"build_id\":\"$ABID\",\"symbols\":true,\"dwo_missing\":\[\"$DWOID\"\]" "$work/crash.json" \
    || fail "no dwo_missing: $(grep -o '"modules":\[[^]]*]' "$work/crash.json")"
  grep -Eq "$FAULT_RE" "$work/crash.json" || fail "symsrv_fault has no file and line from the skeleton's line table"
  grep -q '"function":"symsrv_store"' "$work/crash.json" && fail "symsrv_store named without the .dwo"
  old=$GID
  ok "without the .dwo: partial, dwo_missing $DWOID, $(grep -o '"signature":"[^"]*"' "$work/crash.json")"
  damaged_dwo "$work/bad.dwo"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: bad.dwo' --data-binary @"$work/bad.dwo")
  [ "$c" = 400 ] || fail "a damaged .dwo -> $c $(cat "$work/body")"
  grep -q '"reason":"not a usable split DWARF object (.dwo): damaged split DWARF' "$work/body" || fail "damaged: $(cat "$work/body")"
  api /api/v1/symbols | grep -q '"build_id":null,"name":"bad.dwo","size":[0-9]*,"status":"failed","error":"not a usable split DWARF object' \
    || fail "the failure is not listed: $(api /api/v1/symbols)"
  sleep 1
  [ "$(admin "$(url "/api/v1/crashes/$CID")" | field group_id)" = "$old" ] || fail "the damaged .dwo moved the crash"
  ok "a damaged .dwo: 400 $(grep -o '"reason":"[^"]*"' "$work/body" | head -c 120), listed as failed, the crash stays"
  # The .dwo alone, by its path: keyed by DWO id.
  cp "$DWO" "$work/app.dwo"
  "$FL" symbols add "$work/app.dwo" --server "$(url '')" >"$work/add2.out" 2>&1 \
    || fail "symbols add of the .dwo: $(cat "$work/add2.out")"
  grep -q "^$DWOID $work/app.dwo: uploaded (HTTP 201" "$work/add2.out" || fail "upload of the .dwo: $(cat "$work/add2.out")"
  moved "$old" "the .dwo after its program"
  grep -q "$STORE_SIG" "$work/g1.json" || fail "after the .dwo: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  admin "$(url "/api/v1/crashes/$CID")" >"$work/crash.json"
  grep -q '"symbols":{"status":"complete"' "$work/crash.json" || fail "status after: $(grep -o '"symbols":{[^]]*]' "$work/crash.json")"
  grep -q dwo_missing "$work/crash.json" && fail "dwo_missing after the upload"
  grep -q '"function":"symsrv_store","file":"[^"]*symsrv_crash\.c","line":[0-9]*,"column":[0-9]*,[^}]*"inlined":true' "$work/crash.json" \
    || fail "no inlined symsrv_store frame: $(grep -o '"frames":\[[^]]*' "$work/crash.json" | head -c 800)"
  ok "the .dwo after its program: $(grep -o '"signature":"[^"]*"' "$work/g1.json"), complete, inlined frame, one group"
  api /api/v1/symbols >"$work/list.json"
  grep -q "\"build_id\":null,\"dwo_id\":\"$DWOID\",\"name\":\"app.dwo\",\"size\":[0-9]*,\"status\":\"ok\",\"error\":null,\"kind\":\"dwo\"" "$work/list.json" \
    || fail "listing: $(cat "$work/list.json")"
  [ -f "$work/d/symbols/processed/dwo-$DWOID/dwo" ] || fail "not stored by DWO id: $(ls "$work/d/symbols/processed")"
  # The watched directory takes a .dwo file too.
  cp "$DWO" "$work/d/symbols/incoming/again.dwo"
  for _ in $(seq 50); do [ -L "$work/d/symbols/processed/again.dwo" ] && break; sleep 0.1; done
  [ "$(readlink "$work/d/symbols/processed/again.dwo")" = "dwo-$DWOID/dwo" ] || fail "watched .dwo: $(ls -l "$work/d/symbols/processed" "$work/d/symbols/failed")"
  ok "listed as kind dwo by DWO id; the watched directory takes a .dwo"
  # The answer to a .dwo upload: dwo_id in place of the contract's
  # build_id (docs/http-api.md), with the size.
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: raw.dwo' --data-binary @"$DWO")
  [ "$c" = 201 ] || fail "a .dwo by curl -> $c $(cat "$work/body")"
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit(a != {"dwo_id": sys.argv[2], "size": int(sys.argv[3])})' \
    "$work/body" "$DWOID" "$(stat -c %s "$DWO")" || fail "the .dwo's answer: $(cat "$work/body")"
  ok "a .dwo's answer: $(cat "$work/body")"
  # The program's symcache was rebuilt once the .dwo came, in a private
  # directory gone since.
  ls -d "$work"/d/symcache/*.dwo.* 2>/dev/null && fail "a private .dwo view was left in symcache/"
  stop || fail "shutdown rc"
  ;;
dwo_symbolicate)
  # Every .text address of the test program built with -gsplit-dwarf,
  # its .dwo files uploaded by `symbols add` and then moved away from
  # their build paths: POST /api/v1/symbolicate answers as for the same
  # program built with whole DWARF (gcc and clang, DWARF 5 and 4; the
  # .dwo named relative to the build directory, by an absolute path
  # (-o /abs/split.o), and through "../" from DW_AT_comp_dir; and three
  # units whose .dwo files have one relative name under three
  # DW_AT_comp_dirs, which the linker stores as one string).
  start "$work/d"
  n=0
  for cc in "gcc -gdwarf-5" "gcc -gdwarf-4" "clang -gdwarf-5" "clang -gdwarf-4" "abs gcc -gdwarf-5" \
            "up gcc -gdwarf-4" "abs clang -gdwarf-5" "shared gcc -gdwarf-5" "shared gcc -gdwarf-4" \
            "shared clang -gdwarf-5" "shared clang -gdwarf-4"; do
    set -- $cc
    how=rel
    case $1 in abs | up | shared) how=$1; shift ;; esac
    command -v "$1" >/dev/null || fail "$1 is not installed"
    b="$work/b$n" n=$((n + 1))
    mkdir -p "$b/sub" "$b/a" "$b/b"
    cp "$IHSRC" "$(dirname "$IHSRC")"/*.h "$b/"
    # Two more sources, each built from its own directory (make -C a,
    # make -C b) to an object of the same name as the main one's.
    for d in a b; do
      printf '#include "../inline_heavy.h"\nstatic inline unsigned %s_step(unsigned x) { return mix2(x, %s) | 1; }\nunsigned %s_util(unsigned n)\n{\n    unsigned s = 0;\n    for (unsigned i = 0; i < n; i++)\n        s += %s_step(i ^ n) * (i + 1);\n    return s;\n}\n' \
        $d "0x$d$d" $d $d >"$b/$d/util.c"
    done
    # And one with whole DWARF in both builds, whose inlined functions'
    # names the linker may keep as tails of "split.dwo" (clang's are in
    # .debug_str): the view must not change them.
    printf 'static inline __attribute__((always_inline)) unsigned dwo(unsigned x) { return x * 3 + 1; }\nstatic inline __attribute__((always_inline)) unsigned o(unsigned x) { return dwo(x) ^ 5; }\nunsigned tail_util(unsigned n)\n{\n    unsigned s = 0;\n    for (unsigned i = 0; i < n; i++)\n        s += o(i + n);\n    return s;\n}\n' >"$b/tail.c"
    for o in split whole; do # compiled alike, but for -gsplit-dwarf
      g=; [ $o = split ] && g=-gsplit-dwarf
      more=
      case $how in
        rel) ( cd "$b" && "$@" -O2 $g -c inline_heavy.c -o $o.o ) ;;
        abs) ( cd "$b/sub" && "$@" -O2 $g -c "$b/inline_heavy.c" -o "$b/$o.o" ) ;;
        up) ( cd "$b/sub" && "$@" -O2 $g -c ../inline_heavy.c -o ../$o.o ) ;;
        shared) more="a/$o.o b/$o.o tail.o"
          ( cd "$b" && "$@" -O2 -c tail.c -o tail.o && "$@" -O2 $g -c inline_heavy.c -o $o.o && cd a && "$@" -O2 $g -c util.c -o $o.o &&
            cd ../b && "$@" -O2 $g -c util.c -o $o.o ) ;;
      esac && ( cd "$b" && "$1" $o.o $more -o $o -Wl,--build-id ) || fail "$cc: build $o"
    done
    name=$(readelf --debug-dump=info "$b/split.o" 2>/dev/null | sed -n 's/.*DW_AT_\(GNU_\)\{0,1\}dwo_name.*): //p' | head -1)
    case $how:$name in rel:split.dwo | abs:/*/split.dwo | up:../split.dwo | shared:split.dwo) ;; *) fail "$cc ($how): dwo name $name" ;; esac
    if [ $how = shared ]; then
      # The case itself: three units name split.dwo, one string holds it.
      names=$(readelf --debug-dump=info,no-follow-links "$b/split" 2>/dev/null | grep -c 'DW_AT_\(GNU_\)\{0,1\}dwo_name.*: split\.dwo$')
      strs=$(readelf -p .debug_str "$b/split" 2>/dev/null | grep -c '[] ]split\.dwo$')
      [ "$names" = 3 ] && [ "$strs" = 1 ] || fail "$cc: $names units named split.dwo, $strs strings"
    fi
    cc="$cc ($how: $name)"
    cmp -s <(objdump -d --no-show-raw-insn "$b/split" | tail -n +4) <(objdump -d --no-show-raw-insn "$b/whole" | tail -n +4) \
      || fail "$cc: the split and whole builds differ in code"
    "$FL" symbols add "$b/split" "$b/whole" --server "$(url '')" >"$work/add.out" 2>&1 || fail "$cc: symbols add: $(cat "$work/add.out")"
    want=1; [ $how = shared ] && want=3
    [ "$(grep -c '\.dwo: uploaded' "$work/add.out")" = $want ] || fail "$cc: not $want .dwo uploaded: $(cat "$work/add.out")"
    answers_as_whole
    ok "$cc: $out answered as for the whole-DWARF build"
  done
  stop || fail "shutdown rc"
  ;;
dwo_types)
  # Split DWARF with type units (-fdebug-types-section), a C++ program:
  # gcc's DWARF 5 .dwo holds a .debug_info.dwo section per type unit
  # before the compile unit's, clang's a .debug_line.dwo for its type
  # units.  The .dwo files (or the program's .dwp package) uploaded by
  # `symbols add` and moved away: every .text address answers through
  # POST /api/v1/symbolicate as for the whole-DWARF build, and a .dwo
  # POSTed by curl is taken by its DWO id.
  tsrc="$(dirname "$IHSRC")/types.cpp"
  start "$work/d"
  n=0
  for cc in "dwo g++ -gdwarf-5" "dwo clang++ -gdwarf-5" "dwo clang++ -gdwarf-4" "dwp g++ -gdwarf-5" \
            "dwp clang++ -gdwarf-4"; do
    set -- $cc
    how=$1
    shift
    command -v "$1" >/dev/null || fail "$1 is not installed"
    b="$work/t$n" n=$((n + 1))
    mkdir -p "$b"
    cp "$tsrc" "$(dirname "$tsrc")/types.h" "$b/"
    ( cd "$b" && "$@" -O2 -fdebug-types-section -gsplit-dwarf -c types.cpp -o split.o &&
      "$1" split.o -o split -Wl,--build-id &&
      "$@" -O2 -fdebug-types-section -c types.cpp -o whole.o && "$1" whole.o -o whole -Wl,--build-id ) \
      || fail "$cc: build"
    readelf -SW --debug-dump=info "$b/split.dwo" >"$work/dwo.txt" 2>/dev/null
    grep -q '\.debug_types\.dwo\|DW_UT_split_type' "$work/dwo.txt" || fail "$cc: no type unit in split.dwo"
    cmp -s <(objdump -d --no-show-raw-insn "$b/split" | tail -n +4) <(objdump -d --no-show-raw-insn "$b/whole" | tail -n +4) \
      || fail "$cc: the split and whole builds differ in code"
    if [ "$how" = dwp ]; then
      ( cd "$b" && timeout 60 llvm-dwp -e split -o split.dwp && rm split.dwo ) || fail "$cc: llvm-dwp"
    else
      # The .dwo alone by curl first: its DWO id is the skeleton's.
      id=$(readelf --debug-dump=info "$b/split" 2>/dev/null | grep -m1 -o 'DWO ID: *0x[0-9a-f]*\|GNU_dwo_id *: 0x[0-9a-f]*' | grep -o '0x[0-9a-f]*')
      id=$(printf %016x "$id")
      c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: t.dwo' --data-binary @"$b/split.dwo")
      [ "$c" = 201 ] && grep -q "\"dwo_id\":\"$id\"" "$work/body" || fail "$cc: the .dwo by curl -> $c $(cat "$work/body")"
    fi
    "$FL" symbols add "$b/split" "$b/whole" --server "$(url '')" >"$work/add.out" 2>&1 || fail "$cc: symbols add: $(cat "$work/add.out")"
    grep -q "split\.$how: uploaded" "$work/add.out" || fail "$cc: the $how not uploaded: $(cat "$work/add.out")"
    grep -q warning "$work/add.out" && fail "$cc: $(cat "$work/add.out")"
    answers_as_whole
    ok "$cc (type units): $out answered as for the whole-DWARF build"
  done
  stop || fail "shutdown rc"
  ;;
dwo_stale)
  # A split-DWARF build's private directory left in symcache/ by a build
  # killed midway goes at the next start; one a live build holds (its
  # lock on DIR/symcache/.dwo.lock: here a process holding the whole
  # range) stays until that process is gone; one named like it but not
  # one stays for good.
  sc="$work/d/symcache"
  mkdir -p "$sc/$BID.symcache.dwo.0123456789abcdef" "$sc/app.symcache.dwo.Ab3xYz" "$sc/mine.symcache.dwo.Qw3rTy"
  cp "$DEBUG" "$sc/$BID.symcache.dwo.0123456789abcdef/d"
  ln -s "$DEBUG" "$sc/$BID.symcache.dwo.0123456789abcdef/0"
  echo notes >"$sc/mine.symcache.dwo.Qw3rTy/notes"
  # And the unfinished file of a symcache whose build was killed before
  # its rename: held too (its key's byte of DIR/symcache/.lock).
  echo partial >"$sc/$BID.symcache.tmp.Ab12Cd"
  : >"$work/holder.out"
  python3 -c '
import fcntl, os, sys, time
fds = [os.open(p, os.O_RDWR | os.O_CREAT, 0o644) for p in sys.argv[1:]]
for fd in fds:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0x40000000, 0, 0)
print("held", flush=True)
time.sleep(600)' "$sc/.dwo.lock" "$sc/.lock" >"$work/holder.out" &
  HOLDER=$!
  trap 'kill -9 $HOLDER 2>/dev/null; cleanup' EXIT
  for _ in $(seq 100); do grep -q held "$work/holder.out" && break; sleep 0.1; done
  grep -q held "$work/holder.out" || fail "the lock holder did not start"
  start "$work/d"
  stop || fail "shutdown rc"
  [ -d "$sc/$BID.symcache.dwo.0123456789abcdef" ] && [ -d "$sc/app.symcache.dwo.Ab3xYz" ] \
    || fail "a directory in use was removed: $(ls -a "$sc")"
  [ -f "$sc/$BID.symcache.tmp.Ab12Cd" ] || fail "an unfinished symcache in use was removed"
  grep -q "killed symcache build" "$work/err" && fail "removed while held: $(cat "$work/err")"
  ok "held by a live process: kept"
  kill -9 "$HOLDER"; wait "$HOLDER" 2>/dev/null
  start "$work/d"
  for d in "$BID.symcache.dwo.0123456789abcdef" app.symcache.dwo.Ab3xYz; do
    [ -e "$sc/$d" ] && fail "$d stayed: $(ls -a "$sc")"
  done
  [ -f "$sc/mine.symcache.dwo.Qw3rTy/notes" ] || fail "a directory not a build's was removed"
  [ -f "$DEBUG" ] || fail "the file the view linked to went"
  grep -q "faultline serve: removed 2 directories a killed symcache build left in $sc" "$work/err" \
    || fail "no line about it: $(cat "$work/err")"
  [ -e "$sc/$BID.symcache.tmp.Ab12Cd" ] && fail "the unfinished symcache stayed"
  grep -q "faultline serve: removed 1 unfinished symcache a killed build left in $sc" "$work/err" \
    || fail "no line about the unfinished symcache: $(cat "$work/err")"
  ok "after the holder was killed -9: the next start removed both (and said so), kept the other"
  stop || fail "shutdown rc"
  ;;
dwo_pg | dwp_pg)
  # PostgreSQL, two machines: an API server and a worker with data
  # directories of their own.  The program, then its .dwo, uploaded to the
  # API server reach the worker through the database (the .dwo by its
  # DWO id), which re-processes the crash that lacked it.  dwp_pg: the
  # .dwo packed into a .dwp package (llvm-dwp), which reaches the worker
  # the same way.
  . "$(dirname "$0")/../lib/postgres.sh"
  trap 'kill -9 ${WPID:-} 2>/dev/null; pg_stop; cleanup' EXIT
  pg_start
  split_app
  CRASH=$work/bin/app
  start "$work/a" --db "$PGURL" --role api
  "$FL" serve --data "$work/w" --db "$PGURL" --role worker --workers 1 >"$work/wout" 2>>"$work/err" &
  WPID=$!
  "$FL" symbols add "$work/bin/app" --server "$(url '')" >"$work/add.out" 2>&1 \
    || fail "symbols add: $(cat "$work/add.out")"
  crash deep
  submit
  grep -q "\"dwo_missing\":\[\"$DWOID\"\]" "$work/crash.json" || fail "no dwo_missing: $(grep -o '"modules":\[[^]]*]' "$work/crash.json")"
  old=$GID
  ok "without the .dwo (worker on PostgreSQL): dwo_missing $DWOID"
  up=$work/app.dwo
  if [ "$case_" = dwp_pg ]; then
    up=$work/app.dwp
    timeout 60 llvm-dwp "$DWO" -o "$up" || fail "llvm-dwp"
  else
    cp "$DWO" "$up"
  fi
  "$FL" symbols add "$up" --server "$(url '')" >"$work/add2.out" 2>&1 \
    || fail "symbols add of $up: $(cat "$work/add2.out")"
  moved "$old" "the .dwo through the database"
  grep -q "$STORE_SIG" "$work/g1.json" || fail "after the .dwo: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  [ -f "$work/w/symbols/processed/dwo-$DWOID/dwo" ] || fail "the worker did not fetch the .dwo: $(ls "$work/w/symbols/processed" 2>&1)"
  cmp -s "$work/w/symbols/processed/dwo-$DWOID/dwo" "$up" || fail "the fetched file differs from $up"
  ok "the worker fetched the .dwo from PostgreSQL by DWO id: $(grep -o '"signature":"[^"]*"' "$work/g1.json")"
  kill -TERM "$WPID"; wait "$WPID" || fail "worker shutdown rc"
  WPID=
  stop || fail "shutdown rc"
  ;;
source | source_pg)
  # GET /api/v1/crashes/ID/source: the lines around a frame, from a real
  # debuginfod serving a program built -g here and its sources, by the
  # module's build id and the DWARF's path.  Hostile bytes in the source
  # (markup, U+202E, bytes that are not UTF-8) come back as JSON text;
  # a file debuginfod lacks, a frame out of range, no token, no debuginfod
  # say so.  source_pg: the crash in PostgreSQL.
  . "$(dirname "$0")/../lib/debuginfod.sh"
  trap 'debuginfod_stop; cleanup' EXIT
  DB=()
  if [ "$case_" = source_pg ]; then
    . "$(dirname "$0")/../lib/postgres.sh"
    trap 'debuginfod_stop; pg_stop; cleanup' EXIT
    pg_start
    DB=(--db "$PGURL")
  fi
  mkdir -p "$work/src" "$work/bin"
  # Line 9 is the faulting store; lines 4-6 are hostile, in its window.
  printf '%s\n' '/* hostile.c: the program of the source test */' '#include <stddef.h>' \
    'int hostile_sink;' '/* <script>alert("x")</script> & <b>b</b> */' \
    "/* direction: $(printf '\xe2\x80\xae')gnp.exe */" "/* not UTF-8: $(printf '\xff\xfe\xc3')( */" \
    'void hostile_crash(int *p)' '{' '    *p = 1;' '}' 'void other_fn(int *p);' \
    'int main(void)' '{' '    other_fn(NULL);' '    return hostile_sink;' '}' >"$work/src/hostile.c"
  printf '%s\n' 'void hostile_crash(int *p);' 'void other_fn(int *p)' '{' '    hostile_crash(p);' '}' \
    >"$work/src/other.c"
  (cd "$work/src" && cc -g -O0 -Wl,--build-id -o "$work/bin/hostile" hostile.c other.c) || fail "cc"
  rm "$work/src/other.c" # debuginfod has no source for other_fn's frame
  HBID=$(grep -o 'Build ID: [0-9a-f]*' < <(readelf -n "$work/bin/hostile") | cut -d' ' -f3)
  # The faulting store's address (line 9) and a return address in other_fn.
  pc=$(objdump --dwarf=decodedline "$work/bin/hostile" 2>/dev/null |
       awk '$1 == "hostile.c" && $2 == 9 { print $3; exit }')
  ret=$(nm "$work/bin/hostile" | awk '$3 == "other_fn" { print $1 }')
  [ -n "$pc" ] && [ -n "$ret" ] || fail "no address for line 9 ($pc) or other_fn ($ret)"
  base=$((0x10000000))
  printf '%s\n' 'FAULTLINE 1' 'CRASHLOG_VERSION 2' 'APPLICATION_NAME hostile' 'APPLICATION_VERSION 1.0' \
    'CRASH_ID 50c0de00-0000-4000-8000-000000000001' 'CRASH_SIGNAL 11' \
    "OBJECT hostile/$base/1048576/$base" "OBJECT_BUILD_ID $HBID" 'OBJECT_PATH /nonexistent/hostile' \
    "CALLSTACK $((base + pc))" "CALLSTACK $((base + 0x$ret + 5))" 'END' >"$work/hostile.log"
  debuginfod_start "$work/bin" 1 1
  export DEBUGINFOD_URLS="http://127.0.0.1:$DPORT" DEBUGINFOD_CACHE_PATH="$work/dicache"
  start "$work/d" "${DB[@]}"
  LOG=$work/hostile.log
  submit
  grep -q "\"file\":\"$work/src/hostile.c\",\"line\":9" "$work/crash.json" ||
    fail "frame 0 not at hostile.c:9 through debuginfod: $(grep -o '"frames":.*' "$work/crash.json" | head -c 600)"
  src() { code GET "/api/v1/crashes/$CID/source?$1" -H "Authorization: Bearer $ADMIN"; }
  # lines_are FIRST LAST SOURCE: the answer's lines are the file's, as
  # JSON text (U+FFFD for each byte that is not UTF-8), around line 9.
  lines_are() {
    python3 - "$work/body" "$work/src/hostile.c" "$1" "$2" "$3" <<'PY' || fail "source answer: $(cat "$work/body")"
import json, sys
a = json.load(open(sys.argv[1], encoding="utf-8"))
want = open(sys.argv[2], "rb").read().decode("utf-8", "replace").split("\n")
first, last = int(sys.argv[3]), int(sys.argv[4])
assert a["line"] == 9 and a["first"] == first and a["source"] == sys.argv[5], a
assert a["lines"] == want[first - 1:last], (a["lines"], want[first - 1:last])
assert a["path"].endswith("/src/hostile.c") and a["build_id"] == a["build_id"].lower(), a
assert a["function"] == "hostile_crash" and a["thread"] == 0 and a["frame"] == 0, a
PY
  }
  c=$(src 'thread=0&frame=0'); [ "$c" = 200 ] || fail "source -> $c $(cat "$work/body")"
  lines_are 4 14 debuginfod
  grep -q '<script>alert' "$work/body" && grep -q $'\xe2\x80\xae' "$work/body" && grep -q $'\xef\xbf\xbd\xef\xbf\xbd' "$work/body" ||
    fail "hostile lines not kept as text: $(cat "$work/body")"
  grep -q "/buildid/$HBID/source$work/src/hostile.c" "$work/debuginfod.log" || fail "debuginfod not asked for the source"
  # libdebuginfod's cache (DATA/debuginfod-cache) keeps the debug file,
  # not a second copy of the source.
  [ -f "$work/d/debuginfod-cache/$HBID/debuginfo" ] || fail "no debuginfo in $work/d/debuginfod-cache/$HBID"
  ! ls "$work/d/debuginfod-cache/$HBID" | grep -q source || fail "the source kept in libdebuginfod's cache too: $(ls "$work/d/debuginfod-cache/$HBID")"
  [ "$(ls "$work/d/source-cache" | wc -l)" = 1 ] || fail "source-cache: $(ls "$work/d/source-cache")"
  c=$(src 'thread=0&frame=0&context=1'); [ "$c" = 200 ] || fail "context=1 -> $c"
  lines_are 8 10 cache
  ok "frame 0: lines 4-14 of hostile.c from debuginfod, equal to the file's (markup, U+202E, bad bytes as JSON text); then from the cache"
  # The same crash's other frame: debuginfod has no other.c.
  c=$(src 'thread=0&frame=1'); [ "$c" = 404 ] || fail "a source debuginfod lacks -> $c $(cat "$work/body")"
  grep -q '"error":"debuginfod has no source for [^"]*/src/other.c' "$work/body" || fail "no reason: $(cat "$work/body")"
  for q in 'thread=0&frame=7' 'thread=3&frame=0' 'thread=0' 'thread=x&frame=0' 'thread=0&frame=0&context=51'; do
    c=$(src "$q"); [ "$c" = 400 ] || fail "$q -> $c $(cat "$work/body")"
    grep -q '"error"' "$work/body" || fail "$q: no error"
  done
  c=$(code GET "/api/v1/crashes/$CID/source?thread=0&frame=0"); [ "$c" = 401 ] || fail "no token -> $c"
  c=$(code GET "/api/v1/crashes/no-such-crash/source?thread=0&frame=0" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 404 ] || fail "unknown crash -> $c"
  ok "no other.c at debuginfod -> 404 with why; frame/thread out of range, bad numbers -> 400; no token -> 401"
  # Cached: the answer stays when debuginfod has gone.
  debuginfod_stop
  c=$(src 'thread=0&frame=0'); [ "$c" = 200 ] || fail "cached source -> $c $(cat "$work/body")"
  lines_are 4 14 cache
  stop || fail "shutdown rc"
  # No debuginfod at all: the frame has its file and line (the program
  # uploaded), and the answer says why there are no lines.
  unset DEBUGINFOD_URLS
  start "$work/d2" "${DB[@]}"
  c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$work/bin/hostile")
  [ "$c" = 201 ] || fail "upload -> $c $(cat "$work/body")"
  if [ "$case_" = source_pg ]; then
    # The same database: the crash is there, processed already.
    CID=50c0de00-0000-4000-8000-000000000001
  else
    submit
  fi
  c=$(src 'thread=0&frame=0'); [ "$c" = 404 ] || fail "no debuginfod -> $c $(cat "$work/body")"
  grep -q '"error":"no debuginfod configured' "$work/body" || fail "no debuginfod: $(cat "$work/body")"
  ok "no debuginfod -> 404 $(cat "$work/body")"
  stop || fail "shutdown rc"
  ;;
*) fail "unknown case $case_" ;;
esac
echo PASS
