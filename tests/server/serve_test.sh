#!/usr/bin/env bash
# End-to-end tests of `faultline serve`: real processes on 127.0.0.1, a free
# port chosen by the server (--listen 127.0.0.1:0).
#   serve_test.sh CASE FAULTLINE FL_POST DATADIR(tests/data)
# CASE: http | ipv6 | stall | symtmp | slowlink413 (FL_REPORTER: faultline-report) | auth | dedup | ratelimit | regression | kill9 | shutdown | limits | cli |
#       workerkill | reload | poison | poisonstore | bigcrash | memory | diskfull | unreadable | trends | projects | fdlimit | dbmoved | readonly |
#       hostile | clockstep (FL_CLOCK_SHIM: the shim's path) | leaseclock | healthclock |
#       oldlock | retention | notify | logtime | hosts | queryargs | notifydigest, groupdelete, mergeload, projects (FL_TEST_PG=1: on PostgreSQL) | pgfrozen (FL_TEST_PG=1 only) | upgrade (FL_UPGRADE_FROM: a fixture of DATADIR/upgrade, its name without .sql)
set -uo pipefail
case_=$1 FL=$2 POST=$3 DATA=$4
work=$(mktemp -d /tmp/fl-serve-test.XXXXXX)
ADMIN=test-admin-token KEY=test-ingest-key
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
HPID=
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; [ -n "$HPID" ] && kill "$HPID" 2>/dev/null; rm -rf "$work"; }
# DB=(--db URL) of a throwaway PostgreSQL, stopped at exit, when
# FL_TEST_PG=1 (the *_pg cases); else DB=(): the embedded SQLite.
db_from_env() {
  DB=()
  [ -n "${FL_TEST_PG:-}" ] || return 0
  . "$(dirname "$0")/../lib/postgres.sh"
  trap 'pg_stop; cleanup' EXIT
  pg_start
  DB=(--db "$PGURL")
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/err" ] && tail -5 "$work/err" >&2; exit 1; }
ok() { echo "ok: $*"; }
# A line of /metrics matches: the page is read whole first -- `curl | grep -q`
# under pipefail fails when grep stops reading before curl has written all.
metric_has() { local m; m=$(curl -s "$(url /metrics)") && grep -q "$1" <<<"$m"; }

. "$(dirname "$0")/../lib/server.sh"

# The clock tests move the wall clock of the server's processes with
# libfaketime (Debian's faketime package), and not their monotonic clock
# (DONT_FAKE_MONOTONIC=1): what an NTP step does to a real machine.  The
# thread-safe build (libfaketimeMT): the plain one reads the clock file
# into static buffers without a lock (FAKETIME_NO_CACHE), and a server
# whose threads read the time together died of it at start, once in a CI
# run (libfaketime's own advice, wolfcw/libfaketime#151).
faketime_lib() {
  local f
  for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 \
           /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}
# clock_wrapper OUT LIBS...: a script at OUT that runs $FL with LIBS
# preloaded -- after the sanitizer runtime when $FL has one, since ASan
# insists on coming first.
clock_wrapper() {
  local out=$1 asan; shift
  asan=$(ldd "$FL" | awk '/libasan/ {print $3}')
  printf '#!/bin/sh\nLD_PRELOAD="%s" exec "%s" "$@"\n' "${asan:+$asan }$*" "$FL" >"$out"
  chmod +x "$out"
}

# stored_only N CONC OUT SEED: N reports stored in $work/d by a server
# without workers (their ids in OUT), which is then stopped: a backlog for
# the next start to process.
stored_only() {
  start "$work/d" --workers 0
  : >"$3"
  "$POST" stream "$PORT" "$KEY" "$1" "$2" "$3" "$4" >"$work/s1"
  [ "$(sort -u "$3" | wc -l)" = "$1" ] || fail "ingest: $(cat "$work/s1")"
  stop || fail "shutdown rc"
}

case $case_ in
http)
  # The MojoCrash clients' server name: its request comes with it as Host.
  start "$work/d" --keyless-ingest --allowed-host crashcatcher.mojogames.com
  # The published MojoCrash request, byte for byte (quoted boundary, CRLF).
  out=$("$POST" raw "$PORT" "$DATA/mojocrash-request.http")
  [ "$(head -1 <<<"$out")" = 200 ] || fail "MojoCrash request: $out"
  grep -q '"accepted":\[{"id":"[0-9a-f]*"' <<<"$out" || fail "no accepted id: $out"
  ok "MojoCrash example request -> 200"
  # Keyless ingest takes requests without a key; a wrong key is still 401.
  "$POST" log 98 1 keyapp 1.0 >"$work/kl.log"
  c=$(code POST / -H 'X-Faultline-Key: not-a-key' --data-binary @"$work/kl.log"); [ "$c" = 401 ] || fail "wrong key on / (keyless) -> $c"
  c=$(code POST '/?key=not-a-key' --data-binary @"$work/kl.log"); [ "$c" = 401 ] || fail "wrong ?key on / (keyless) -> $c"
  # Garbage -> 400 with the reader's line and reason.
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary 'hello world')
  [ "$c" = 400 ] || fail "garbage -> $c"
  grep -q '"line":1' "$work/body" && grep -q '"reason"' "$work/body" || fail "no line/reason: $(cat "$work/body")"
  ok "garbage -> 400 $(cat "$work/body")"
  # Truncated (no END) -> 400.
  grep -v '^END' "$DATA/mojocrash-example.crashlog" >"$work/trunc.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' --data-binary @"$work/trunc.log")
  [ "$c" = 400 ] || fail "truncated -> $c"
  grep -qi 'END' "$work/body" || fail "truncated: reason does not mention END: $(cat "$work/body")"
  ok "truncated -> 400 $(cat "$work/body")"
  # Truncated inside a multipart request -> 400 as well.
  c=$(code POST / -F "report=@$work/trunc.log")
  [ "$c" = 400 ] || fail "truncated multipart -> $c"
  # Oversized (2 MiB > the default 1 MiB) -> 413.
  head -c 2097152 /dev/zero | tr '\0' 'x' >"$work/big"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/big")
  [ "$c" = 413 ] || fail "oversized -> $c"
  ok "oversized -> 413"
  # The same sent as a reverse proxy sends it (whole_twice.py says why):
  # the server answers after the body.
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/crashes "X-Faultline-Key: $KEY" $((8 << 20)) 413 '"limit":1048576' \
    >"$work/proxy413" 2>&1 || fail "oversized, as a proxy sends it: $(cat "$work/proxy413")"
  ok "oversized, sent whole as a proxy sends it -> 413 ($(cat "$work/proxy413"))"
  # A gzip bomb: 64 MiB of zeros in ~64 KiB -> 413.
  head -c 67108864 /dev/zero | gzip -9 >"$work/bomb.gz"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Encoding: gzip' --data-binary @"$work/bomb.gz")
  [ "$c" = 413 ] || fail "gzip bomb -> $c"
  # The answer says which limit: the ratio here (64 KiB x 100 < 8 MiB).
  grep -q 'expands more than max_ratio times (--max-ratio)' "$work/body" || fail "gzip bomb: $(cat "$work/body")"
  ok "gzip bomb -> 413, the ratio named"
  # A real gzip body -> 200.
  "$POST" log 99 1 gzapp 1.0 | gzip >"$work/ok.gz"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Encoding: gzip' --data-binary @"$work/ok.gz")
  [ "$c" = 200 ] || fail "gzip body -> $c $(cat "$work/body")"
  # Several file parts in one request, any part names.
  "$POST" log 99 2 multi 1.0 >"$work/m1.log"; "$POST" log 99 3 multi 1.0 >"$work/m2.log"
  c=$(code POST / -F "a=@$work/m1.log" -F "zz=@$work/m2.log" -F "email=a@b.c")
  [ "$c" = 200 ] || fail "two parts -> $c"
  [ "$(grep -o '"id"' "$work/body" | wc -l)" = 2 ] || fail "two parts: $(cat "$work/body")"
  ok "gzip and multi-part bodies -> 200"
  # One bad part among good ones: the good ones are stored and answered,
  # the bad one is named (a 400 for the whole request would lose them).
  "$POST" log 99 5 multi 1.0 >"$work/m3.log"; "$POST" log 99 6 multi 1.0 >"$work/m4.log"
  printf 'FAULTLINE 1\nCRASHLOG_VERSION 2\nCRASH_SIGNAL eleven\nEND\n' >"$work/bad.log"
  c=$(code POST / -F "a=@$work/m3.log" -F "b=@$work/bad.log" -F "c=@$work/m4.log")
  [ "$c" = 200 ] || fail "good+bad+good parts -> $c $(cat "$work/body")"
  python3 - "$work/body" <<'PY' || fail "good+bad+good answer: $(cat "$work/body")"
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a["accepted"]) == 2, a
r = a["rejected"]
assert len(r) == 1 and r[0]["part"] == 1 and r[0]["line"] == 3 and r[0]["reason"], a
PY
  for id in $(grep -o '"id":"[^"]*"' "$work/body" | cut -d'"' -f4); do
    c=$(code GET "/api/v1/crashes/$id" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 200 ] || fail "accepted part $id not stored: $c"
  done
  c=$(code POST / -F "a=@$work/bad.log" -F "b=@$work/trunc.log")
  [ "$c" = 400 ] || fail "two bad parts -> $c"
  grep -q '"rejected":\[' "$work/body" || fail "two bad parts: $(cat "$work/body")"
  ok "a bad part among good ones: 200 for the good, the bad one named; all bad: 400"
  # A urlencoded form with the log in a field (as the MojoCrash notes first described).
  "$POST" log 99 4 urlenc 1.0 >"$work/u.log"
  c=$(code POST / --data-urlencode "report@$work/u.log" --data-urlencode 'email=a@b.c')
  [ "$c" = 200 ] || fail "urlencoded -> $c $(cat "$work/body")"
  ok "x-www-form-urlencoded -> 200"
  # The "email" field is the user's address, kept with each crash of the
  # request -- never taken for a log, even with no file part at all --, and
  # dropped (not the report) when it is no address.
  email_of() { # REQUEST_ANSWER_FILE -> the email of each accepted crash
    for id in $(grep -o '"id":"[^"]*"' "$1" | cut -d'"' -f4); do
      admin "$(url "/api/v1/crashes/$id")" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("email"))'
    done | sort -u | tr '\n' ' '
  }
  "$POST" log 99 7 mail 1.0 >"$work/e1.log"; "$POST" log 99 8 mail 1.0 >"$work/e2.log"
  c=$(code POST / -F "a=@$work/e1.log" -F "b=@$work/e2.log" -F "email=ann@example.org")
  [ "$c" = 200 ] && [ "$(email_of "$work/body")" = "ann@example.org " ] || fail "email with two parts: $c $(email_of "$work/body")"
  "$POST" log 99 9 mail 1.0 >"$work/e3.log"
  c=$(code POST / -F "report=<$work/e3.log" -F "email=bob@example.org")
  [ "$c" = 200 ] && [ "$(grep -o '"id"' "$work/body" | wc -l)" = 1 ] || fail "text fields only: $c $(cat "$work/body")"
  [ "$(email_of "$work/body")" = "bob@example.org " ] || fail "email in a form without files: $(email_of "$work/body")"
  # (A surrogate is UTF-8 in shape only: PostgreSQL would refuse it, and
  # the whole batch with it.)
  for bad in 'no-at-sign' "$(printf 'x%.0s' $(seq 300))@example.org" $'a\xed\xa0\x80@example.org'; do
    "$POST" log 99 $((10 + ${#bad} % 7)) mail 1.0 >"$work/e4.log"
    c=$(code POST / -F "a=@$work/e4.log" -F "email=$bad")
    [ "$c" = 200 ] && [ "$(email_of "$work/body")" = "None " ] || fail "bad email '${bad:0:20}': $c $(email_of "$work/body")"
  done
  ok "the email field: kept with every crash of its request, never a log, a non-address dropped"
  # A log that is not UTF-8 (a Latin-1 application name): stored, and the
  # API shows it -- fields kept UTF-8 ("Caf?"), U+FFFD in the raw text.
  printf 'FAULTLINE 1\nCRASHLOG_VERSION 2\nAPPLICATION_NAME Caf\xe9\nCRASH_ID 0c0ffee0-0000-4000-8000-0000000000e9\nCALLSTACK 4096\nEND\n' >"$work/l1.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/l1.log")
  [ "$c" = 200 ] || fail "Latin-1 log -> $c $(cat "$work/body")"
  admin "$(url /api/v1/crashes/0c0ffee0-0000-4000-8000-0000000000e9)" >"$work/l1.json"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["app"] == "Caf?" and "\ufffd" in d["raw"], d' "$work/l1.json" ||
    fail "the Latin-1 crash through the API: $(head -c 300 "$work/l1.json")"
  ok "a log that is not UTF-8: stored, and shown (app 'Caf?', U+FFFD in the raw text)"
  # 30 logs in one request (~94 KiB): enough for the HTTP thread to
  # compress them itself (one frame, kept by the store as it is); every
  # log reads back byte for byte.
  metric_has '^faultline_ingest_http_compressed_reports_total 0$' ||
    fail "small requests compressed on the HTTP thread: $(curl -s "$(url /metrics)" | grep http_compressed)"
  args=()
  for i in $(seq 30); do "$POST" log 98 "$i" bigreq 1.0 >"$work/b$i.log"; args+=(-F "f$i=@$work/b$i.log"); done
  c=$(code POST / "${args[@]}")
  [ "$c" = 200 ] || fail "30 parts -> $c $(cat "$work/body")"
  metric_has '^faultline_ingest_http_compressed_reports_total 30$' ||
    fail "30 logs not compressed on the HTTP thread: $(curl -s "$(url /metrics)" | grep http_compressed)"
  i=0
  for id in $(grep -o '"id":"[^"]*"' "$work/body" | cut -d'"' -f4); do
    i=$((i + 1))
    c=$(code GET "/api/v1/crashes/$id" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 200 ] || fail "crash $id of 30 parts: $c"
    python3 - "$work/body" "$work/b$i.log" <<'PY' || fail "crash $id: raw log differs from part $i"
import json, sys
raw = json.load(open(sys.argv[1]))["raw"]
assert raw == open(sys.argv[2]).read(), "differs"
PY
  done
  [ "$i" = 30 ] || fail "30 parts: $i ids"
  ok "30 logs in one request: compressed by the HTTP thread, each read back exactly"
  c=$(code GET /healthz); [ "$c" = 200 ] || fail "healthz $c"
  metric_has '^faultline_reports_rejected_total{reason="too_large"} 4$' || fail "metrics"
  # garbage, truncated, truncated multipart, the bad part, the two bad parts.
  metric_has '^faultline_reports_rejected_total{reason="malformed"} 6$' ||
    fail "metrics malformed: $(curl -s "$(url /metrics)" | grep malformed)"
  metric_has '^faultline_queue_depth ' || fail "metrics queue depth"
  curl -s "$(url /metrics)" | awk '/^faultline_ingest_commit_seconds_total /{f = $2 > 0} END{exit !f}' ||
    fail "commit time metric: $(curl -s "$(url /metrics)" | grep commit_seconds)"
  ok "healthz, metrics"
  # New crash ids are not looked up among those stored once the filter of
  # stored ids is loaded (right after the first report, on an empty store).
  curl -s "$(url /metrics)" | awk '/^faultline_ingest_id_filter_ready /{r = $2}
      /^faultline_ingest_id_lookups_total /{l = $2} /^faultline_reports_accepted_total /{a = $2}
      /^faultline_ingest_id_filter_bytes /{b = $2}
      END{exit !(r == 1 && b > 0 && a >= 30 && l < a / 2)}' ||
    fail "id filter: $(curl -s "$(url /metrics)" | grep -E 'id_|accepted_total')"
  ok "new crash ids are not looked up (filter of stored ids loaded)"
  # The checkpointer's passes are counted by what started them.
  curl -s "$(url /metrics)" | awk '/^faultline_sqlite_checkpoints_total\{started_by="timer"\} /{t = $2}
      /^faultline_sqlite_checkpoints_total\{started_by="wal_growth"\} /{g = ($2 != "")}
      /^faultline_sqlite_wal_restarts_deferred_total /{d = ($2 != "")}
      /^faultline_sqlite_wal_frames /{w = ($2 != "")} END{exit !(t > 0 && g && d && w)}' ||
    fail "checkpointer metrics: $(curl -s "$(url /metrics)" | grep -E 'sqlite_')"
  ok "checkpointer metrics"
  # Every metric the server exports is in docs/http-api.md's table (by its
  # name, its _sum, or its suffix after a sibling's name: `_evicted_total`).
  doc=$(dirname "$0")/../../docs/http-api.md
  names=$(curl -s "$(url /metrics)" | awk '$1 == "#" && $2 == "TYPE" {print $3}' | sort -u)
  [ "$(wc -l <<<"$names")" -ge 30 ] || fail "metrics: only $(wc -l <<<"$names") names"
  while read -r n; do
    grep -qF -e "\`$n\`" -e "\`$n{" -e "\`${n}_sum\`" -e "\`_${n#faultline_*_}\`" "$doc" ||
      fail "metric $n is not in docs/http-api.md"
  done <<<"$names"
  ok "every metric is documented"
  # Threads are named for top -H, perf and gdb.
  for t in fl-http-0 fl-writer fl-checkpoint fl-worker; do
    # Read whole (a short-lived thread, fl-idload, may be gone by the time
    # cat opens its file), then searched: grep -q in the pipe could end it early.
    comms=$(cat /proc/"$PID"/task/*/comm 2>/dev/null || true)
    grep -qx "$t" <<<"$comms" || fail "no thread named $t: $(tr '\n' ' ' <<<"$comms")"
  done
  ok "thread names"
  # The portal's Content-Security-Policy is the one docs/http-api.md quotes.
  doc_csp=$(grep -o "\`default-src [^\`]*\`" "$(dirname "$0")/../../docs/http-api.md" | tr -d '\`')
  got_csp=$(curl -s -D - -o /dev/null -H 'Accept: text/html' "$(url /)" |
    sed -n 's/^[Cc]ontent-[Ss]ecurity-[Pp]olicy: //p' | tr -d '\r')
  [ -n "$got_csp" ] && [ "$got_csp" = "$doc_csp" ] ||
    fail "the portal's CSP is '$got_csp'; docs/http-api.md says '$doc_csp'"
  ok "the portal's CSP is the documented one"
  stop || fail "shutdown rc"
  # A clean stop leaves the filter for the next start, which takes it at its
  # first report instead of reading every stored id again.
  [ -s "$work/d/faultline.db.ids" ] || fail "no snapshot of the id filter after a clean stop"
  start "$work/d"
  "$POST" log 4 1 snapapp 1.0 >"$work/s.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/s.log")
  [ "$c" = 200 ] || fail "after restart -> $c"
  metric_has '^faultline_ingest_id_filter_from_snapshot 1$' ||
    fail "filter not from the snapshot: $(curl -s "$(url /metrics)" | grep id_filter)"
  [ ! -e "$work/d/faultline.db.ids" ] || fail "the snapshot was not taken"
  ok "the id filter is kept across a clean restart"
  stop || fail "shutdown rc"
  ;;
ipv6)
  # --listen [::1]:0 (skipped where the loopback has no IPv6 address).
  grep -qi '^0*1 .* lo$' /proc/net/if_inet6 2>/dev/null || { echo "skip: no ::1 on lo"; exit 77; }
  "$FL" serve --listen '[::1]:0' --data "$work/d" >"$work/out" 2>>"$work/err" &
  PID=$!
  for _ in $(seq 100); do
    PORT=$(grep -o 'listening on http://\[::1\]:[0-9]*' "$work/out" | grep -o '[0-9]*$')
    [ -n "$PORT" ] && break
    sleep 0.1
  done
  [ -n "$PORT" ] || fail "server did not start on [::1]: $(cat "$work/out" "$work/err")"
  c=$(curl -s -g -o /dev/null -w '%{http_code}' "http://[::1]:$PORT/healthz"); [ "$c" = 200 ] || fail "healthz over IPv6 -> $c"
  "$POST" log 7 1 v6app 1.0 >"$work/v6.log"
  c=$(curl -s -g -o "$work/body" -w '%{http_code}' -H "X-Faultline-Key: $KEY" --data-binary @"$work/v6.log" "http://[::1]:$PORT/api/v1/crashes")
  [ "$c" = 200 ] || fail "ingest over IPv6 -> $c $(cat "$work/body")"
  c=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz"); [ "$c" != 200 ] || fail "[::1] also answered on 127.0.0.1"
  "$FL" serve --listen '::1:8080' --data "$work/d2" 2>"$work/e2" && fail "unbracketed IPv6 accepted"
  grep -q '\[::1\]:8080' "$work/e2" || fail "no hint for IPv6 syntax: $(cat "$work/e2")"
  ok "--listen [::1]:0: healthz and ingest over IPv6"
  stop || fail "shutdown rc"
  ;;
stall)
  # Another process holds the database's write lock for 3 s: /healthz and
  # API reads still answer, an ingest request is not answered before its
  # report is durable, and once the lock is gone it is stored and answered
  # 200 -- nothing is lost and nothing is answered early.  The idle timeout
  # is 1 s: a request waiting for its commit is not idle.  A second client
  # gives up after 1 s: its report is still stored, and the server (its
  # request freed by the writer, under ASan too) goes on.
  start "$work/d" --workers 0 --timeout 1
  "$POST" log 8 1 stallapp 1.0 >"$work/s.log"
  "$POST" log 8 2 stallapp 1.0 >"$work/s2.log"
  id2=$(awk '$1=="CRASH_ID"{print $2}' "$work/s2.log")
  [ -n "$id2" ] || fail "no CRASH_ID in the generated log"
  python3 - "$work/d/faultline.db" 3 >"$work/lock.out" 2>&1 <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
c.execute("ROLLBACK")
PY
  LPID=$!
  for _ in $(seq 50); do grep -q locked "$work/lock.out" && break; sleep 0.1; done
  grep -q locked "$work/lock.out" || fail "could not take the write lock: $(cat "$work/lock.out")"
  t0=$(date +%s%N)
  curl -s -o "$work/sbody" -w '%{http_code}' -m 20 -H "X-Faultline-Key: $KEY" \
    --data-binary @"$work/s.log" "$(url /api/v1/crashes)" >"$work/scode" &
  CPID=$!
  # The one that gives up resets its connection (SO_LINGER 0): the server
  # sees an error on it at once, while the writer still has the request.
  python3 - "$PORT" "$KEY" "$work/s2.log" >"$work/s2code" 2>&1 <<'PY' &
import socket, struct, sys, time
body = open(sys.argv[3], "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nX-Faultline-Key: " + sys.argv[2].encode() +
          b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
s.settimeout(1)
try:
    print(s.recv(100))
    sys.exit(0)  # answered while the database was locked
except socket.timeout:
    pass
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
sys.exit(1)
PY
  C2PID=$!
  sleep 0.5
  kill -0 "$CPID" 2>/dev/null || fail "ingest answered while the database was locked: $(cat "$work/scode") $(cat "$work/sbody")"
  c=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "$(url /healthz)")
  [ "$c" = 200 ] || fail "healthz during the stall -> $c"
  c=$(code GET /api/v1/groups -H "Authorization: Bearer $ADMIN" -m 2)
  [ "$c" = 200 ] || fail "API read during the stall -> $c"
  # Past the idle timeout: this request makes the server look at its
  # connections' timeouts while the first one still waits for its commit.
  sleep 1.2
  c=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "$(url /healthz)")
  [ "$c" = 200 ] || fail "healthz late in the stall -> $c"
  wait "$CPID"
  wait "$LPID"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$(cat "$work/scode")" = 200 ] || fail "ingest after the stall -> $(cat "$work/scode") $(cat "$work/sbody")"
  [ "$ms" -ge 2000 ] || fail "answered after $ms ms, before the lock was released"
  id=$(field id <"$work/sbody")
  c=$(code GET "/api/v1/crashes/$id" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 200 ] || fail "the stalled report is not stored: $c"
  wait "$C2PID" && fail "the client that gave up got an answer: $(cat "$work/s2code")"
  c=$(code GET "/api/v1/crashes/$id2" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 200 ] || fail "the report of the client that gave up is not stored: $c"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/s2.log")
  [ "$c" = 200 ] || fail "ingest after an abandoned request -> $c"
  ok "write lock held 3 s (idle timeout 1 s): healthz and reads answered, ingest answered 200 after ${ms} ms and stored; an abandoned request's report stored too"
  stop || fail "shutdown rc"
  ;;
auth)
  start "$work/d"
  "$POST" log 5 1 authapp 1.0 >"$work/a.log"
  c=$(code POST /api/v1/crashes --data-binary @"$work/a.log"); [ "$c" = 401 ] || fail "no key -> $c"
  c=$(code POST / --data-binary @"$work/a.log"); [ "$c" = 401 ] || fail "no key on / without --keyless-ingest -> $c"
  c=$(code POST /api/v1/crashes -H 'X-Faultline-Key: wrong' --data-binary @"$work/a.log"); [ "$c" = 401 ] || fail "wrong key -> $c"
  # A wrong key sent as a reverse proxy sends the request: 401 after the
  # body, the connection kept (whole_twice.py says why; before, nginx made
  # a 502 of it, and faultline-report kept its logs as if the server were
  # away, saying nothing of the key).
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/crashes "X-Faultline-Key: wrong" @"$work/a.log" 401 'wrong ingest key' \
    >"$work/proxy401" 2>&1 || fail "wrong key, as a proxy sends it: $(cat "$work/proxy401")"
  c=$(code POST /api/v1/crashes -H 'X-Faultline-Key: wrong' -H 'Expect: 100-continue' --data-binary @"$work/a.log")
  [ "$c" = 401 ] || fail "wrong key with Expect: 100-continue -> $c"
  grep -q 'missing or wrong ingest key' "$work/body" || fail "wrong key: $(cat "$work/body")"
  # The admin token given as the ingest key: still 401, and said so --
  # after the body, at once (Expect: 100-continue), in ?key= too.
  for how in "/api/v1/crashes|X-Any: 1|X-Faultline-Key: $ADMIN" \
             "/api/v1/crashes|Expect: 100-continue|X-Faultline-Key: $ADMIN" "/api/v1/crashes?key=$ADMIN|X-Any: 1|X-Any: 2"; do
    IFS='|' read -r p h1 h2 <<<"$how"
    c=$(code POST "$p" -H "$h1" -H "$h2" --data-binary @"$work/a.log")
    [ "$c" = 401 ] && grep -q '"this is the admin token, not an ingest key' "$work/body" ||
      fail "admin token as the ingest key ($how) -> $c $(cat "$work/body")"
  done
  ok "a wrong ingest key -> 401; the admin token as one -> 401 that says so"
  c=$(code POST "/api/v1/crashes?key=$KEY" --data-binary @"$work/a.log"); [ "$c" = 200 ] || fail "?key= -> $c"
  id=$(field id <"$work/body")
  "$POST" wait "$PORT" "$ADMIN" 1 20 authapp >/dev/null || fail "not processed"
  gid=$(admin "$(url /api/v1/groups)" | field id)
  [ -n "$gid" ] || fail "no group"
  # Every read/admin route: 401 without a token and with a wrong one.
  routes=("GET /api/v1/groups" "GET /api/v1/groups?app=authapp" "GET /api/v1/groups/$gid"
          "GET /api/v1/crashes/$id" "GET /api/v1/crashes/$id/contexts" "GET /api/v1/crashes/$id/source?thread=0&frame=0"
          "GET /api/v1/crashes/$id/minidump" "PATCH /api/v1/groups/$gid"
          "POST /api/v1/crashes/$id/reprocess" "DELETE /api/v1/crashes/$id" "GET /api/v1/groups/$gid/crashes"
          "POST /api/v1/groups/$gid/merge" "POST /api/v1/groups/$gid/unmerge" "DELETE /api/v1/groups/$gid"
          "GET /api/v1/symbols" "GET /api/v1/trends" "GET /api/v1/trends?app=authapp&days=7"
          "GET /api/v1/projects" "POST /api/v1/projects" "POST /api/v1/projects/p1/keys"
          "DELETE /api/v1/projects/p1/keys/k1")
  for r in "${routes[@]}"; do
    set -- $r
    c=$(code "$1" "$2" -d '{"status":"resolved"}'); [ "$c" = 401 ] || fail "$r without token -> $c"
    grep -q 'admin token required (Authorization: Bearer' "$work/body" || fail "$r without token: $(cat "$work/body")"
    c=$(code "$1" "$2" -H 'Authorization: Bearer nope' -d '{"status":"resolved"}'); [ "$c" = 401 ] || fail "$r wrong token -> $c"
    # A wrong token is said to be wrong, not missing.
    grep -q 'the bearer token given is not the admin token' "$work/body" || fail "$r wrong token: $(cat "$work/body")"
  done
  c=$(code GET /api/v1/groups -H "Authorization: Basic $ADMIN"); [ "$c" = 401 ] || fail "Basic auth -> $c"
  grep -q 'is not \\"Bearer TOKEN\\"' "$work/body" || fail "Basic auth: $(cat "$work/body")"
  ok "401 on ${#routes[@]} read/admin routes without or with a wrong token, each said"
  # A query parameter a read route does not take is refused, not ignored:
  # a misspelt filter would otherwise answer as if there were none.
  A=(-H "Authorization: Bearer $ADMIN")
  c=$(code GET "/api/v1/groups?sortt=count" "${A[@]}"); [ "$c" = 400 ] || fail "?sortt= -> $c"
  grep -q "unknown query parameter 'sortt'; this route takes project, app, version, status, q, install, sort, limit, offset" \
    "$work/body" || fail "?sortt=: $(cat "$work/body")"
  c=$(code GET "/api/v1/groups?sort=count&limit=5&app=authapp" "${A[@]}"); [ "$c" = 200 ] || fail "known arguments -> $c"
  c=$(code GET "/api/v1/groups/$gid/crashes?limt=5" "${A[@]}"); [ "$c" = 400 ] || fail "?limt= -> $c"
  grep -q "'limt'; this route takes limit, offset, install" "$work/body" || fail "?limt=: $(cat "$work/body")"
  c=$(code GET "/api/v1/crashes/$id?verbose" "${A[@]}"); [ "$c" = 400 ] || fail "crash ?verbose -> $c"
  grep -q "'verbose'; this route takes none" "$work/body" || fail "?verbose: $(cat "$work/body")"
  c=$(code GET "/api/v1/trends?dayz=3" "${A[@]}"); [ "$c" = 400 ] || fail "?dayz= -> $c"
  c=$(code GET "/api/v1/trends?days=3&app=authapp" "${A[@]}"); [ "$c" = 200 ] || fail "trends -> $c"
  c=$(code GET "/api/v1/groups?%01%ff=1" "${A[@]}"); [ "$c" = 400 ] || fail "a hostile name -> $c"
  grep -q "unknown query parameter '??'" "$work/body" || fail "a hostile name: $(cat "$work/body")"
  ok "unknown query parameters refused with the route's own list"
  # The admin routes with a body, asked with a wrong token as a reverse
  # proxy asks (the whole body at once, no Expect): 401 after the body, the
  # connection kept (whole_twice.py says why; before, they were answered
  # before the body and the connection closed under it: a 502 behind nginx).
  bodied=("PATCH /api/v1/groups/$gid" "POST /api/v1/symbolicate" "POST /symbolicate"
          "POST /api/v1/projects" "POST /api/v1/projects/p1/keys" "POST /api/v1/crashes/$id/reprocess"
          "DELETE /api/v1/crashes/$id" "DELETE /api/v1/projects/p1/keys/k1"
          "POST /api/v1/groups/$gid/merge" "POST /api/v1/groups/$gid/unmerge" "DELETE /api/v1/groups/$gid")
  for r in "${bodied[@]}"; do
    set -- $r
    python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" "$2" "Authorization: Bearer nope" 300000 401 \
      'is not the admin token' "$1" >"$work/proxy401" 2>&1 || fail "$r with a wrong token, as a proxy sends it: $(cat "$work/proxy401")"
  done
  c=$(code PATCH "/api/v1/groups/$gid" -H 'Authorization: Bearer nope' -H 'Expect: 100-continue' -d '{"status":"resolved"}')
  [ "$c" = 401 ] || fail "PATCH with a wrong token and Expect: 100-continue -> $c"
  # Bounded: a body said to be over 64 MiB is answered at once, and a
  # chunked one that grows past it has its connection closed.
  python3 - "$PORT" <<'EOF' || fail "admin refusals are not bounded"
import socket, sys
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30)
s.sendall(b"POST /api/v1/symbolicate HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % (65 << 20))
a = s.recv(4096)
assert a.startswith(b"HTTP/1.1 401"), a[:100]
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30)
s.sendall(b"POST /api/v1/symbolicate HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
chunk = b"100000\r\n" + b"x" * (1 << 20) + b"\r\n"
try:
    for i in range(256):
        s.sendall(chunk)
    s.sendall(b"0\r\n\r\n")
    a = s.recv(4096)
    assert not a.startswith(b"HTTP/1.1 401"), "256 MiB drained and answered"
except (ConnectionError, socket.timeout):
    pass
EOF
  ok "401 after the body on ${#bodied[@]} admin routes asked with a body as a proxy asks; at once with Expect: 100-continue or over 64 MiB; a chunked body closed past 64 MiB"
  # A path under /api/ that names no route: 404, with a token or without
  # (a reporter sent to a wrong URL is told so, not to bring the admin
  # token), after its body as a proxy sends it.
  for auth in "X-Faultline-Key: $KEY" "Authorization: Bearer $ADMIN" "Authorization: Bearer nope"; do
    for p in /api/v1/crashez /api/v1 /api/v2/crashes /api/v1/groups2; do
      c=$(code POST "$p" -H "$auth" --data-binary @"$work/a.log")
      [ "$c" = 404 ] && grep -q 'no such route.*POST /api/v1/crashes' "$work/body" ||
        fail "POST $p ($auth) -> $c $(cat "$work/body")"
    done
    c=$(code GET /api/v1/nothing -H "$auth"); [ "$c" = 404 ] || fail "GET /api/v1/nothing ($auth) -> $c"
  done
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/no-such-route "X-Faultline-Key: $KEY" 300000 404 \
    'no such route' POST >"$work/proxy404" 2>&1 || fail "an unknown route, as a proxy sends it: $(cat "$work/proxy404")"
  ok "404 'no such route' for paths under /api/ that name none, with a key, a token, a wrong token"
  # With the token: what is missing is named, a route or the thing asked for.
  for pe in "/api/v1/groups/nosuchgroup|no such group" "/api/v1/groups/nosuchgroup/crashes|no such group" \
            "/api/v1/crashes/nosuchcrash|no such crash" "/api/v1/crashes/nosuchcrash/minidump|no such crash" \
            "/api/v1/crashes/$id/bogus|no such route" "/api/v1/groups/$gid/bogus|no such route"; do
    c=$(code GET "${pe%%|*}" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 404 ] && grep -q "\"error\":\"[a-z :]*${pe#*|}" "$work/body" || fail "GET ${pe%%|*} -> $c $(cat "$work/body")"
  done
  ok "404 names what is missing: no such group, crash or route"
  # A route asked with a method it does not take: 405 and the methods it
  # does in Allow, with or without a token (an ingest client that used the
  # wrong method is told that, not to bring the admin token).
  wrong=("GET /api/v1/crashes|POST" "PUT /api/v1/crashes|POST" "GET /api/v1/symbolicate|POST"
         "GET /symbolicate|POST" "GET /api/v1/crashes/$id/reprocess|POST" "PUT /|GET, HEAD, POST"
         "DELETE /healthz|GET, HEAD" "DELETE /api/v1/groups|GET, HEAD"
         "PUT /api/v1/groups/$gid|GET, HEAD, PATCH, DELETE" "GET /api/v1/projects/p1/keys|POST"
         "POST /api/v1/projects/p1/keys/k1|DELETE" "DELETE /api/v1/projects|GET, HEAD, POST"
         "DELETE /api/v1/projects/p1/keys|POST" "PUT /api/v1/crashes/$id|GET, HEAD, DELETE"
         "DELETE /api/v1/crashes/$id/contexts|GET, HEAD" "POST /api/v1/crashes/$id/source|GET, HEAD"
         "DELETE /api/v1/crashes/$id/minidump|GET, HEAD" "PATCH /api/v1/groups/$gid/crashes|GET, HEAD"
         "GET /api/v1/groups/$gid/merge|POST" "PUT /api/v1/groups/$gid/unmerge|POST")
  for w in "${wrong[@]}"; do
    set -- ${w%%|*}
    for auth in "X-Faultline-Key: $KEY" "Authorization: Bearer $ADMIN"; do
      c=$(code "$1" "$2" -H "$auth" -D "$work/h405")
      [ "$c" = 405 ] || fail "$1 $2 -> $c, want 405"
      grep -qix "Allow: ${w#*|}"$'\r' "$work/h405" || fail "$1 $2: Allow: $(grep -i '^Allow' "$work/h405")"
    done
  done
  # A crash report (an ingest key, or a multipart body) POSTed to a route
  # that is not ingest: the status as ever, and the answer says where
  # crash logs go -- not "bring the admin token", not a bare 405.
  hint='not an ingest route: crash logs go to POST / or POST /api/v1/crashes'
  for pr in "/api/v1/groups|405" "/metrics|405" "/healthz|405" "/api/v1/crashes/$id|405" \
            "/api/v1/symbols|401" "/api/v1/symbolicate|401" "/api/v1/projects|401" "/nope|404"; do
    for how in "-H|X-Faultline-Key: $KEY" "-H|X-Faultline-Key: not-a-key" "-F|f=@$work/a.log"; do
      for ex in "X-Any: 1" "Expect: 100-continue"; do
        if [ "${how%%|*}" = -F ]; then
          c=$(code POST "${pr%%|*}" -H "$ex" -F "${how#*|}")
        else
          c=$(code POST "${pr%%|*}" -H "$ex" -H "${how#*|}" --data-binary @"$work/a.log")
        fi
        [ "$c" = "${pr#*|}" ] && grep -qF "$hint" "$work/body" ||
          fail "POST ${pr%%|*} (${how#*|}, $ex) -> $c $(cat "$work/body")"
        ! grep -q 'admin token required' "$work/body" || fail "POST ${pr%%|*}: asks for the admin token"
      done
    done
  done
  c=$(code POST "/api/v1/symbols?key=$KEY" --data-binary @"$work/a.log")
  [ "$c" = 401 ] && grep -qF "$hint" "$work/body" || fail "POST /api/v1/symbols?key= -> $c $(cat "$work/body")"
  # Without a key or a form, the answers are as before.
  c=$(code POST /api/v1/groups --data-binary x)
  [ "$c" = 405 ] && grep -qx '{"error":"method not allowed","allow":"GET, HEAD"}' "$work/body" ||
    fail "POST /api/v1/groups (no key) -> $c $(cat "$work/body")"
  c=$(code POST /api/v1/symbols --data-binary x)
  [ "$c" = 401 ] && grep -q '"admin token required (Authorization: Bearer ...)"' "$work/body" ||
    fail "POST /api/v1/symbols (no key) -> $c $(cat "$work/body")"
  ok "a crash report POSTed to a route that is not ingest: 401/404/405 saying where crash logs go"
  c=$(code PUT /nope); [ "$c" = 404 ] || fail "PUT /nope -> $c"
  c=$(code GET /api/v1/nope -H "Authorization: Bearer $ADMIN"); [ "$c" = 404 ] || fail "GET /api/v1/nope -> $c"
  ok "405 with Allow on ${#wrong[@]} routes asked with the wrong method"
  for r in "GET /api/v1/groups" "GET /api/v1/groups/$gid" "GET /api/v1/crashes/$id" \
           "GET /api/v1/symbols" "GET /api/v1/trends" "GET /api/v1/projects"; do
    set -- $r
    c=$(code "$1" "$2" -H "Authorization: Bearer $ADMIN"); [ "$c" = 200 ] || fail "$r with token -> $c"
  done
  c=$(code GET /api/v1/crashes/nope -H "Authorization: Bearer $ADMIN"); [ "$c" = 404 ] || fail "unknown crash -> $c"
  # The crash: raw log, group, threads with frames of the documented shape.
  admin "$(url "/api/v1/crashes/$id")" >"$work/crash.json"
  for k in '"raw":"FAULTLINE' "\"group_id\":\"$gid\"" '"threads":\[' '"function":null' '"file":null' \
           '"line":null' '"column":null' '"module":"authapp"' '"address":"0x401040"' '"inlined":false' \
           '"metadata":{' '"app":"authapp"'; do
    grep -q "$k" "$work/crash.json" || fail "crash JSON lacks $k"
  done
  admin "$(url "/api/v1/groups/$gid")" >"$work/group.json"
  for k in '"days":\[' '"sample_crashes":\[' '"frames":\[' '"count":1' '"affected":1' '"status":"open"'; do
    grep -q "$k" "$work/group.json" || fail "group JSON lacks $k"
  done
  ok "crash and group JSON"
  stop || fail "shutdown rc"
  ;;
retention)
  # DELETE /api/v1/crashes/ID, and --retention removing crashes as they age.
  for bad in 5x -1 1.5d d 99999999999d; do
    "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" --retention "$bad" >/dev/null 2>"$work/e" &&
      fail "--retention $bad started"
    grep -q -- '--retention wants N days' "$work/e" || fail "--retention $bad: $(cat "$work/e")"
  done
  start "$work/d" --retention 4s
  grep -q 'removed 4 s after' "$work/err" || fail "retention not announced: $(cat "$work/err")"
  t0=$(date +%s) ids=()
  for i in 1 2 3; do
    "$POST" log 11 "$i" retapp 1.0 >"$work/r$i.log"
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/r$i.log")
    [ "$c" = 200 ] || fail "ingest $i -> $c"
    ids+=("$(field id <"$work/body")")
  done
  "$POST" wait "$PORT" "$ADMIN" 3 20 retapp >/dev/null || fail "3 crashes not counted"
  # The crashes kept of the first crash's group (the logs differ in their
  # stacks: their groups may differ), a page of 1.
  gid=$(admin "$(url "/api/v1/crashes/${ids[0]}")" | field group_id)
  kept() { admin "$(url "/api/v1/groups/$gid/crashes?limit=1")" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["total"], len(j["crashes"]), j["limit"], (j["crashes"] or [{}])[0].get("id"))'; }
  k0=$(kept); t0_=${k0%% *}
  [ "$t0_" -ge 1 ] && [ "$(cut -d' ' -f2,3 <<<"$k0")" = "1 1" ] || fail "the group's crashes: $k0"
  c=$(code GET "/api/v1/groups/$gid/crashes?limit=0" -H "Authorization: Bearer $ADMIN"); [ "$c" = 400 ] || fail "limit=0 -> $c"
  c=$(code GET "/api/v1/groups/nope/crashes" -H "Authorization: Bearer $ADMIN"); [ "$c" = 404 ] || fail "unknown group's crashes -> $c"
  # Deleted at a request: 410 from then on, for every route that reads it.
  c=$(code DELETE "/api/v1/crashes/${ids[0]}"); [ "$c" = 401 ] || fail "DELETE without token -> $c"
  c=$(code DELETE "/api/v1/crashes/${ids[0]}" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 200 ] && grep -q '"state":"deleted"' "$work/body" || fail "DELETE -> $c $(cat "$work/body")"
  c=$(code GET "/api/v1/crashes/${ids[0]}" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 410 ] && grep -q '"error":"the crash was deleted"' "$work/body" || fail "GET deleted -> $c $(cat "$work/body")"
  grep -q 'ETC_VALUE\|"raw"' "$work/body" && fail "the deleted crash still shows its log"
  # The same 410 on each, naming the crash and when it came.
  for r in "GET contexts" "GET minidump" "GET source?thread=0&frame=0" "POST reprocess"; do
    c=$(code "${r%% *}" "/api/v1/crashes/${ids[0]}/${r#* }" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 410 ] && grep -q "\"id\":\"${ids[0]}\"" "$work/body" && grep -q '"received":"' "$work/body" ||
      fail "${r#* } of a deleted crash -> $c $(cat "$work/body")"
  done
  c=$(code DELETE "/api/v1/crashes/${ids[0]}" -H "Authorization: Bearer $ADMIN"); [ "$c" = 200 ] || fail "DELETE again -> $c"
  c=$(code DELETE /api/v1/crashes/no-such-crash -H "Authorization: Bearer $ADMIN"); [ "$c" = 404 ] || fail "DELETE unknown -> $c"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/r1.log")
  [ "$c" = 200 ] && grep -q '"duplicate":true' "$work/body" || fail "resend of a deleted crash -> $c $(cat "$work/body")"
  [ "$("$POST" sum "$PORT" "$ADMIN" retapp)" = 3 ] || fail "the group lost the deleted crash's count"
  [ "$(kept | cut -d' ' -f1)" = $((t0_ - 1)) ] || fail "the group's crashes after a DELETE: $(kept), before: $k0"
  kept | grep -q "${ids[0]}" && fail "the deleted crash is listed: $(kept)"
  metric_has '^faultline_crashes_deleted_total{reason="request"} 1$' || fail "request metric"
  ok "DELETE: 200 (twice), then 410 on GET, contexts, minidump, source and reprocess; 404 unknown; resend flagged; counts kept"
  # Retention: the two others go 4 s after they arrived (passes every 1 s).
  for _ in $(seq 100); do
    c=$(code GET "/api/v1/crashes/${ids[2]}" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 404 ] && break
    sleep 0.2
  done
  gone=$(date +%s)
  [ "$c" = 404 ] || fail "crash not removed by retention: $c"
  [ $((gone - t0)) -ge 4 ] || fail "removed $((gone - t0)) s after ingest, before its retention"
  c=$(code GET "/api/v1/crashes/${ids[1]}" -H "Authorization: Bearer $ADMIN"); [ "$c" = 404 ] || fail "the second crash stayed: $c"
  metric_has '^faultline_crashes_deleted_total{reason="retention"} 2$' || fail "retention metric: $(curl -s "$(url /metrics)" | grep deleted_total)"
  # One pass or two (a slow machine): the lines add up to the two.
  logged=$(sed -n 's/.*retention: removed \([0-9]*\) crash.* received before .*/\1/p' "$work/err" | awk '{n += $1} END {print n + 0}')
  [ "$logged" = 2 ] || fail "the log says $logged removed: $(cat "$work/err")"
  [ "$("$POST" sum "$PORT" "$ADMIN" retapp)" = 3 ] || fail "retention changed the counts"
  [ "$(kept)" = "0 0 1 None" ] || fail "the group's crashes after the retention: $(kept)"
  c=$(code GET "/api/v1/groups/$gid" -H "Authorization: Bearer $ADMIN"); [ "$c" = 200 ] || fail "group after retention -> $c"
  grep -q '"sample_crashes":\[\]' "$work/body" || fail "samples left: $(cat "$work/body")"
  # A new crash is stored and counted as ever, and goes in its turn.
  "$POST" log 11 9 retapp 1.0 >"$work/r9.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/r9.log"); [ "$c" = 200 ] || fail "new -> $c"
  id9=$(field id <"$work/body")
  wait_processed "$id9" "$work/c9"
  [ "$("$POST" sum "$PORT" "$ADMIN" retapp)" = 4 ] || fail "new crash not counted"
  ok "--retention 4s: crashes removed $((gone - t0)) s after they arrived, groups' counts kept, metric and log"
  stop || fail "shutdown rc"
  ;;
notify)
  # --notify-url: new groups and regressions POSTed as JSON to a receiver
  # that refuses (500) its first request, so that the retry shows too.
  "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" --notify-url ftp://x/SECRET >/dev/null 2>"$work/e"
  [ $? = 64 ] || fail "--notify-url ftp://: not a usage error (64)"
  grep -q 'http:// or https://' "$work/e" || fail "--notify-url ftp://: $(cat "$work/e")"
  ! grep -q SECRET "$work/e" || fail "--notify-url ftp://: the URL echoed: $(cat "$work/e")"
  [ ! -e "$work/bad" ] || fail "--notify-url ftp://: a data directory made before the refusal"
  python3 "$(dirname "$0")/../lib/webhook.py" "$work/hook.out" "$work/hook.port" first >/dev/null 2>&1 &
  HPID=$!
  for _ in $(seq 50); do [ -s "$work/hook.port" ] && break; sleep 0.1; done
  start "$work/d" --notify-url "http://127.0.0.1:$(cat "$work/hook.port")/hook"
  "$POST" log 12 1 notifyapp 1.0 >"$work/n1.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/n1.log"); [ "$c" = 200 ] || fail "ingest -> $c"
  id1=$(field id <"$work/body")
  for _ in $(seq 150); do grep -q '^200 ' "$work/hook.out" 2>/dev/null && break; sleep 0.1; done
  grep -q '^500 ' "$work/hook.out" || fail "the first try was not made: $(cat "$work/hook.out" 2>&1)"
  line=$(grep '^200 ' "$work/hook.out" | head -1)
  [ -n "$line" ] || fail "new group not delivered after a 500: $(cat "$work/hook.out" 2>&1; tail -3 "$work/err")"
  grep -q 'notify: cannot send to .*HTTP 500' "$work/err" || fail "the failure was not logged: $(cat "$work/err")"
  grep -q 'notify: .* answers again' "$work/err" || fail "the recovery was not logged"
  python3 - "$line" "$id1" <<'EOF' || fail "new_group body: $line"
import json, sys
status, ctype, body = sys.argv[1].split(" ", 2)
j = json.loads(body)
assert ctype == "application/json", ctype
assert j["event"] == "new_group" and j["crash_id"] == sys.argv[2], j
assert j["group"]["app"] == "notifyapp" and j["group"]["count"] == 1 and j["group"]["status"] == "open", j
assert j["text"].startswith("New crash group in notifyapp: ") and j["group"]["signature"] in j["text"], j
assert "days" not in j["group"] and j["time"].endswith("Z"), j
EOF
  gid=$(admin "$(url '/api/v1/groups?app=notifyapp')" | field id)
  # A second crash of the group says nothing; resolved in 1.0, a crash of
  # 1.1 makes it regress, and that is sent.
  "$POST" log 12 1 notifyapp 1.0 | sed 's/^CRASH_ID .*/CRASH_ID 11111111-2222-4333-8444-555555555555/' >"$work/n2.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/n2.log"); [ "$c" = 200 ] || fail "second -> $c"
  "$POST" wait "$PORT" "$ADMIN" 2 20 notifyapp >/dev/null || fail "second crash not counted"
  c=$(code PATCH "/api/v1/groups/$gid" -H "Authorization: Bearer $ADMIN" -d '{"status":"resolved","resolved_in":"1.0"}')
  [ "$c" = 200 ] || fail "resolve -> $c"
  "$POST" log 12 1 notifyapp 1.1 | sed 's/^CRASH_ID .*/CRASH_ID 11111111-2222-4333-8444-666666666666/' >"$work/n3.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/n3.log"); [ "$c" = 200 ] || fail "1.1 -> $c"
  for _ in $(seq 150); do grep -q '"event":"regressed"' "$work/hook.out" && break; sleep 0.1; done
  grep -q '"event":"regressed".*"crash_id":"11111111-2222-4333-8444-666666666666"' "$work/hook.out" ||
    fail "regression not delivered: $(cat "$work/hook.out")"
  grep -q 'regressed in notifyapp (resolved in 1.0, latest 1.1)' "$work/hook.out" || fail "regression text: $(grep regressed "$work/hook.out")"
  [ "$(grep -c '^200 ' "$work/hook.out")" = 2 ] || fail "sent $(grep -c '^200 ' "$work/hook.out") times, want 2 (new group, regression)"
  metric_has '^faultline_notifications_total{result="sent"} 2$' || fail "sent metric: $(curl -s "$(url /metrics)" | grep notifications)"
  metric_has '^faultline_notifications_total{result="failed"} 1$' || fail "failed metric"
  # A refusal (404: the webhook was removed) is logged and dropped, not
  # tried again.
  echo 404 >"$work/hook.out.mode"
  "$POST" log 12 2 notifyapp2 1.0 >"$work/n4.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/n4.log"); [ "$c" = 200 ] || fail "other app -> $c"
  for _ in $(seq 150); do metric_has '^faultline_notifications_total{result="dropped"} 1$' && break; sleep 0.1; done
  metric_has '^faultline_notifications_total{result="dropped"} 1$' || fail "dropped metric: $(curl -s "$(url /metrics)" | grep notifications)"
  grep -q 'notify: .* refused new_group of group .* (HTTP 404)' "$work/err" || fail "the refusal was not logged: $(tail -3 "$work/err")"
  sleep 2.5
  [ "$(grep -c '^404 ' "$work/hook.out")" = 1 ] || fail "a refused event was sent again: $(grep -c '^404 ' "$work/hook.out") times"
  # An application named with Slack's markup: escaped in "text" (no
  # channel-wide mention, no link), as it is in "group".
  echo 200 >"$work/hook.out.mode"
  "$POST" log 12 3 '<!channel> & <https://evil.example|x>' 1.0 >"$work/n5.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/n5.log"); [ "$c" = 200 ] || fail "markup app -> $c"
  for _ in $(seq 150); do grep -q 'evil.example' "$work/hook.out" && break; sleep 0.1; done
  python3 - "$(grep 'evil.example' "$work/hook.out" | head -1)" <<'EOF' || fail "Slack markup: $(grep evil "$work/hook.out")"
import json, sys
j = json.loads(sys.argv[1].split(" ", 2)[2])
assert j["group"]["app"] == "<!channel> & <https://evil.example|x>", j["group"]["app"]
assert "New crash group in &lt;!channel&gt; &amp; &lt;https://evil.example|x&gt;: " in j["text"], j["text"]
assert "<" not in j["text"] and ">" not in j["text"], j["text"]
EOF
  ok "--notify-url: new group (after a 500, retried) and regression POSTed as JSON, nothing for the second crash; a 404 dropped; Slack's markup escaped in the text"
  stop || fail "shutdown rc"
  "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" --notify-digest 3 >/dev/null 2>"$work/e" &&
    fail "--notify-digest without --notify-url started"
  grep -q 'needs --notify-url' "$work/e" || fail "--notify-digest alone: $(cat "$work/e")"
  ;;
notifydigest)
  # --notify-digest 3/3s: a few new groups go one by one; a storm (20 new
  # groups at once: a backlog processed at a start) goes as 3 one by one,
  # then one digest at the period's end -- refused once (500) and sent
  # again after its backoff.  FL_TEST_PG=1: on a throwaway PostgreSQL.
  db_from_env
  for bad in x 5/0s 5/2d 10001 5/3x; do
    "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" --notify-url http://127.0.0.1:9/ --notify-digest "$bad" >/dev/null 2>"$work/e" &&
      fail "--notify-digest $bad started"
    grep -q -- '--notify-digest wants' "$work/e" || fail "--notify-digest $bad: $(cat "$work/e")"
  done
  python3 "$(dirname "$0")/../lib/webhook.py" "$work/hook.out" "$work/hook.port" first-digest >/dev/null 2>&1 &
  HPID=$!
  for _ in $(seq 50); do [ -s "$work/hook.port" ] && break; sleep 0.1; done
  hook="http://127.0.0.1:$(cat "$work/hook.port")/hook"
  # A few: two new groups, each its own message.
  start "$work/d" "${DB[@]}" --notify-url "$hook" --notify-digest 3/3s
  for i in 0 1; do
    "$POST" log 300 $i fewapp 1.0 >"$work/f.log"
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/f.log"); [ "$c" = 200 ] || fail "ingest -> $c"
  done
  for _ in $(seq 150); do [ "$(grep -c '^200 ' "$work/hook.out" 2>/dev/null)" = 2 ] && break; sleep 0.1; done
  [ "$(grep -c '^200 application/json {"event":"new_group"' "$work/hook.out")" = 2 ] || fail "a few: $(cat "$work/hook.out")"
  stop || fail "shutdown rc"
  # A storm: 20 new groups (5 applications, 4 signatures each) stored
  # without workers, processed at the next start.
  start "$work/d" "${DB[@]}" --workers 0
  for a in 0 1 2 3 4; do
    for i in 0 1 2 3; do
      "$POST" log $((200 + a)) $i "storm$a" 1.0 >"$work/s.log"
      c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/s.log"); [ "$c" = 200 ] || fail "storm ingest -> $c"
    done
  done
  stop || fail "shutdown rc"
  : >"$work/hook.out"
  start "$work/d" "${DB[@]}" --notify-url "$hook" --notify-digest 3/3s
  cat >"$work/check.py" <<'EOF'
import json, sys
lines = [l.split(" ", 2) for l in open(sys.argv[1]).read().splitlines()]
msgs = [(int(c), json.loads(b)) for c, t, b in lines]
delivered = sum(1 if j["event"] != "digest" else j["events"] for c, j in msgs if c == 200)
if delivered < 20:
    sys.exit(3)  # not yet
assert delivered == 20, delivered
assert [j["event"] for c, j in msgs[:3]] == ["new_group"] * 3 and all(c == 200 for c, j in msgs[:3]), msgs[:3]
c, d = msgs[3]
assert c == 500 and d["event"] == "digest", msgs[3]
sent = [j for c, j in msgs[4:] if c == 200]
assert sent and sent[0]["event"] == "digest", msgs[4:]
d = sent[0]
assert d["events"] >= 2 and d["counts"] == {"new_group": d["events"], "regressed": 0}, d
assert sum(a["new_group"] for a in d["apps"]) == d["events"], d["apps"]
assert all(a["app"].startswith("storm") and a["project"] == "default" for a in d["apps"]), d["apps"]
assert [a["new_group"] for a in d["apps"]] == sorted((a["new_group"] for a in d["apps"]), reverse=True), d["apps"]
assert 1 <= len(d["groups"]) <= 5 and all(g["event"] == "new_group" and g["group"]["id"] and "frames" not in g["group"] for g in d["groups"]), d["groups"]
assert d["text"].startswith("Digest of %d crash events since " % d["events"]), d["text"]
assert ("%d new crash groups" % d["events"]) in d["text"] and "Largest: " in d["text"], d["text"]
assert d["groups"][0]["group"]["id"] in d["text"] and d["groups"][0]["group"]["signature"] in d["text"], d["text"]
ids = {json.dumps(j["group"]["id"]) for c, j in msgs[:3]}
assert not ids & {json.dumps(g["group"]["id"]) for g in d["groups"]}, "a group both alone and in the digest"
print(len(msgs), "messages,", d["events"], "events in the digest")
EOF
  for _ in $(seq 300); do python3 "$work/check.py" "$work/hook.out" >"$work/check.out" 2>&1; rc=$?; [ $rc = 3 ] || break; sleep 0.1; done
  [ $rc = 0 ] || fail "storm: $(cat "$work/check.out"; cut -c1-300 "$work/hook.out")"
  metric_has '^faultline_notifications_total{result="sent"} 20$' || fail "sent metric: $(curl -s "$(url /metrics)" | grep notif)"
  metric_has '^faultline_notification_digests_total{result="sent"} 1$' || fail "digests sent metric: $(curl -s "$(url /metrics)" | grep notif)"
  metric_has '^faultline_notification_digests_total{result="failed"} 1$' || fail "digests failed metric"
  grep -q 'notify: cannot send to .*HTTP 500' "$work/err" || fail "the failed digest was not logged: $(tail -3 "$work/err")"
  [ -z "${FL_TEST_PG:-}" ] || [ ! -e "$work/d/faultline.db" ] || fail "FL_TEST_PG: the server used SQLite"
  ok "--notify-digest 3/3s${FL_TEST_PG:+ (PostgreSQL)}: 2 new groups sent alone; a storm of 20 sent as 3 alone and a digest ($(cat "$work/check.out")), retried after a 500"
  stop || fail "shutdown rc"
  ;;
dedup)
  # Resent before the first copy is processed (no workers yet): each copy is
  # stored, and processing counts the crash once and drops the others.
  start "$work/d" --workers 0
  "$POST" log 7 1 dupapp 1.0 >"$work/a.log"
  for i in 1 2 3; do
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/a.log"); [ "$c" = 200 ] || fail "send $i -> $c"
    id=$(field id <"$work/body"); [ "${first:=$id}" = "$id" ] || fail "id changed: $first $id"
  done
  "$POST" log 7 2 dupapp 1.0 >"$work/b.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/b.log"); [ "$c" = 200 ] || fail "other -> $c"
  c=$(code GET "/api/v1/crashes/$first" -H "Authorization: Bearer $ADMIN"); [ "$c" = 200 ] || fail "pending crash by id -> $c"
  grep -q '"state":"pending"' "$work/body" || fail "not pending: $(head -c 200 "$work/body")"
  stop || fail "shutdown rc"
  start "$work/d"
  "$POST" wait "$PORT" "$ADMIN" 2 20 dupapp >/dev/null || fail "sum(dupapp) != 2"
  for _ in $(seq 50); do
    metric_has '^faultline_queue_depth 0$' && break
    sleep 0.1
  done
  metric_has '^faultline_crashes_duplicate_total 2$' ||
    fail "dropped copies: $(curl -s "$(url /metrics)" | grep duplicate)"
  # Resent after it was processed: refused at ingest, flagged, not stored.
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/a.log"); [ "$c" = 200 ] || fail "late resend -> $c"
  grep -q '"duplicate":true' "$work/body" || fail "late resend not flagged: $(cat "$work/body")"
  metric_has '^faultline_reports_duplicate_total 1$' || fail "ingest duplicates metric"
  # Written by no commit: neither a group commit nor a report written.
  metric_has '^faultline_ingest_commits_total 0$' && metric_has '^faultline_ingest_committed_reports_total 0$' ||
    fail "a resend counted as written: $(curl -s "$(url /metrics)" | grep ingest_commit)"
  sleep 1
  [ "$("$POST" sum "$PORT" "$ADMIN" dupapp)" = 2 ] || fail "count changed"
  ok "the same CRASH_ID sent 3 times before processing and once after: counted once"
  stop || fail "shutdown rc"
  ;;
ratelimit)
  start "$work/d" --rate-limit 0.2 --rate-burst 2
  "$POST" log 8 1 rl 1.0 >"$work/a.log"
  codes=
  for i in 1 2 3 4; do codes="$codes $(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/a.log" -D "$work/h$i")"; done
  [[ "$codes" == *429* ]] || fail "no 429 in$codes"
  grep -qi '^Retry-After:' "$work/h4" || fail "429 without Retry-After"
  ok "rate limit ->$codes"
  stop || fail "shutdown rc"
  # The limit counts reports, not requests: three in one request are let
  # in together, and the key then owes them (0.2/s: the next is refused).
  start "$work/d" --rate-limit 0.2 --rate-burst 2
  for i in 2 3 4; do "$POST" log 8 "$i" rl 1.0 >"$work/r$i.log"; done
  c=$(code POST / -H "X-Faultline-Key: $KEY" -F "a=@$work/r2.log" -F "b=@$work/r3.log" -F "c=@$work/r4.log")
  [ "$c" = 200 ] && [ "$(grep -o '"id"' "$work/body" | wc -l)" = 3 ] || fail "3 reports in one request -> $c $(cat "$work/body")"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/a.log")
  [ "$c" = 429 ] || fail "after 3 reports at --rate-burst 2 -> $c"
  ok "the rate limit counts a request's reports"
  # Sent as a reverse proxy sends it: 429 after the body, the connection
  # kept (whole_twice.py says why).
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/crashes "X-Faultline-Key: $KEY" @"$work/a.log" 429 'rate limit' \
    >"$work/proxy429" 2>&1 || fail "over the rate, as a proxy sends it: $(cat "$work/proxy429")"
  ok "over the rate, sent whole as a proxy sends it -> $(cat "$work/proxy429")"
  stop || fail "shutdown rc"
  ;;
trends)
  # Per application and day, across groups: crashes, versions, OSes and
  # installations, as the portal's trends show them.
  start "$work/d"
  post() { # post SEED I APP VERSION [OS_VERSION|none [CPUARCH_NAME]]
    if [ "${5:-}" = none ]; then
      "$POST" log "$1" "$2" "$3" "$4" | sed "/^PLATFORM_VERSION /d; s/^CPUARCH_NAME .*/CPUARCH_NAME ${6:-x86-64}/" >"$work/t.log"
    else
      "$POST" log "$1" "$2" "$3" "$4" | sed "s/^PLATFORM_VERSION 6.1.0/PLATFORM_VERSION ${5:-6.1.0}/" >"$work/t.log"
    fi
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/t.log"); [ "$c" = 200 ] || fail "post -> $c"
  }
  for i in $(seq 0 9); do post 21 "$i" t1 1.0; done
  for i in $(seq 10 14); do post 21 "$i" t1 2.0 5.10; done
  # t2's three crashes name their architecture three ways: `uname -m`'s,
  # Debian's and MojoCrash's spelling of x86-64 and aarch64.
  post 22 0 t2 9.9 none x86_64
  post 22 1 t2 9.9 none arm64
  post 22 2 t2 9.9 none x86-64
  # Ten versions of one crash each: eight series and "other".
  for i in $(seq 0 9); do post 23 "$i" t3 "3.$i"; done
  [ "$(wait_counts t3 "3 3 2 2")" = "3 3 2 2" ] || fail "t3 not processed"
  [ "$(wait_counts t1 "4 4 4 3")" = "4 4 4 3" ] || fail "t1 not processed"
  api "/api/v1/trends?app=t1&days=7" >"$work/t1.json" || fail "trends t1"
  api "/api/v1/trends" >"$work/all.json" || fail "trends all"
  api "/api/v1/trends?app=t3" >"$work/t3.json" || fail "trends t3"
  [ "$(wait_counts t2 "1 1 1")" = "1 1 1" ] || fail "t2 not processed"
  api "/api/v1/trends?app=t2" >"$work/t2.json" || fail "trends t2"
  for g in $(api "/api/v1/groups?app=t2" | python3 -c 'import json, sys; print(*[g["id"] for g in json.load(sys.stdin)["groups"]])'); do
    api "/api/v1/groups/$g"; echo
  done >"$work/t2-groups.json"
  python3 - "$work" <<'PY' || fail "trends: $(cat "$work/t1.json")"
import json, sys, datetime
w = sys.argv[1]
t1 = json.load(open(w + "/t1.json")); al = json.load(open(w + "/all.json")); t3 = json.load(open(w + "/t3.json"))
today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
assert t1["app"] == "t1" and len(t1["days"]) == 7 and t1["days"][-1] == today, t1["days"]
assert t1["crashes"] == [0] * 6 + [15], t1["crashes"]
assert [(v["version"], v["total"], v["counts"][-1]) for v in t1["versions"]] == [("1.0", 10, 10), ("2.0", 5, 5)], t1["versions"]
assert [(o["os"], o["total"]) for o in t1["os"]] == [("linux 6.1.0", 10), ("linux 5.10", 5)], t1["os"]
assert t1["installations"][-1] == 8, t1["installations"]   # fl_post's 8 installs
assert len(al["days"]) == 30 and al["app"] is None
assert al["crashes"][-1] == 28 and al["apps"] == ["t1", "t2", "t3"], (al["crashes"][-1], al["apps"])
assert len(t3["versions"]) == 9 and t3["versions"][-1].get("other") is True, t3["versions"]
assert t3["versions"][-1]["total"] == 2 and sum(v["total"] for v in t3["versions"]) == 10
t2 = json.load(open(w + "/t2.json"))   # no PLATFORM_VERSION: the name alone, no trailing blank
assert [(o["os"], o["total"]) for o in t2["os"]] == [("linux", 3)], t2["os"]
assert sorted((a["arch"], a["total"]) for a in t2["arch"]) == [("aarch64", 1), ("x86-64", 2)], t2["arch"]
assert [(a["arch"], a["total"]) for a in t1["arch"]] == [("x86-64", 15)], t1["arch"]
arch = {}
for line in filter(str.strip, open(w + "/t2-groups.json")):
    for a in json.loads(line)["arch"]:
        arch[a["arch"]] = arch.get(a["arch"], 0) + a["count"]
assert arch == {"x86-64": 2, "aarch64": 1}, arch
PY
  c=$(code GET "/api/v1/trends?days=400" -H "Authorization: Bearer $ADMIN"); [ "$c" = 400 ] || fail "days=400 -> $c"
  c=$(code GET "/api/v1/trends?days=x" -H "Authorization: Bearer $ADMIN"); [ "$c" = 400 ] || fail "days=x -> $c"
  c=$(code GET "/api/v1/trends?app=%ff" -H "Authorization: Bearer $ADMIN"); [ "$c" = 400 ] || fail "app=%ff -> $c"
  ok "trends: crashes, versions (8 + other), OSes, architectures (one name each) and installations per day, per app and for all"
  stop || fail "shutdown rc"
  ;;
projects)
  # Per-project ingest keys: a project's crashes are its own, grouped apart
  # from the same crash in another project; keys are added and revoked
  # while the server runs, and survive a restart.  FL_TEST_PG=1: on a
  # throwaway PostgreSQL.
  db_from_env
  start "$work/d" "${DB[@]}"
  A=(-H "Authorization: Bearer $ADMIN")
  c=$(code POST /api/v1/projects "${A[@]}" -d '{"id":"mobile"}'); [ "$c" = 201 ] || fail "create -> $c"
  k1=$(field ingest_key <"$work/body"); [ ${#k1} = 32 ] || fail "key: $(cat "$work/body")"
  c=$(code POST /api/v1/projects "${A[@]}" -d '{"id":"mobile"}'); [ "$c" = 409 ] || fail "again -> $c"
  for bad in '{"id":"default"}' '{"id":"Mobile"}' '{"id":"-x"}' '{"id":""}' '{"id":"a/b"}' '{}' 'nope' \
             "{\"id\":\"$(printf 'a%.0s' $(seq 64))\"}"; do
    c=$(code POST /api/v1/projects "${A[@]}" -d "$bad"); [ "$c" = 400 ] || fail "create $bad -> $c"
  done
  c=$(code POST /api/v1/projects/nope/keys "${A[@]}"); [ "$c" = 404 ] || fail "key for a missing project -> $c"
  c=$(code POST /api/v1/projects//keys "${A[@]}" -d '{"id":"x2"}'); [ "$c" = 404 ] || fail "empty project id in the path -> $c"
  c=$(code DELETE "/api/v1/projects/mobile/keys/%FF%00" "${A[@]}"); [ "$c" = 404 ] || fail "a key that is not hex -> $c"
  c=$(code POST /api/v1/projects/default/keys "${A[@]}"); [ "$c" = 400 ] || fail "key for default -> $c"
  # One crash in each project (same frames, other crash ids): two groups.
  "$POST" log 31 1 projapp 1.0 >"$work/m.log"
  sed 's/^CRASH_ID .*/CRASH_ID 0000001f-00000099-0000-0000-000000000099/' "$work/m.log" >"$work/d.log"
  cmp -s "$work/m.log" "$work/d.log" && fail "the copy kept its crash id"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k1" --data-binary @"$work/m.log"); [ "$c" = 200 ] || fail "mobile key -> $c"
  mid=$(field id <"$work/body")
  c=$(code POST "/api/v1/crashes?key=$KEY" --data-binary @"$work/d.log"); [ "$c" = 200 ] || fail "default key -> $c"
  [ "$(wait_counts projapp "1 1")" = "1 1" ] || fail "not two groups of one: $(api /api/v1/groups)"
  api "/api/v1/groups?project=mobile" >"$work/gm.json" || fail "groups?project=mobile"
  api "/api/v1/groups?project=default" >"$work/gd.json" || fail "groups?project=default"
  # A project that exists without groups: an empty list; one that does
  # not (a typo): 400, as a misspelt status is, not an empty list.
  c=$(code POST /api/v1/projects "${A[@]}" -d '{"id":"quiet"}'); [ "$c" = 201 ] || fail "create quiet -> $c"
  api "/api/v1/groups?project=quiet" >"$work/gn.json" || fail "groups?project=quiet"
  for pq in none mobil Mobile "" "a%20b" "$(printf 'a%.0s' $(seq 64))"; do
    c=$(code GET "/api/v1/groups?project=$pq" "${A[@]}")
    [ "$c" = 400 ] && grep -q '"no such project' "$work/body" || fail "groups?project=$pq -> $c $(cat "$work/body")"
  done
  c=$(code GET "/api/v1/groups?project=mobil" "${A[@]}")
  grep -q "no such project 'mobil' (GET /api/v1/projects lists them" "$work/body" || fail "no name: $(cat "$work/body")"
  api "/api/v1/crashes/$mid" >"$work/cm.json" || fail "crash"
  python3 - "$work" <<'PY' || fail "project groups: $(cat "$work/gm.json" "$work/gd.json")"
import json, sys
w = sys.argv[1]
gm = json.load(open(w + "/gm.json"))["groups"]; gd = json.load(open(w + "/gd.json"))["groups"]
assert [g["project"] for g in gm] == ["mobile"] and [g["project"] for g in gd] == ["default"], (gm, gd)
assert gm[0]["signature"] == gd[0]["signature"] and gm[0]["id"] != gd[0]["id"]
assert json.load(open(w + "/gn.json"))["groups"] == []
c = json.load(open(w + "/cm.json"))
assert c["project"] == "mobile" and c["group_id"] == gm[0]["id"], c.get("project")
PY
  ok "a crash per project: two groups with one signature, filtered by ?project=; an unknown project 400${FL_TEST_PG:+ (PostgreSQL)}"
  # A version-1 log has no crash id (its id is derived from its bytes):
  # the same file is a crash in each project, and a resend within one
  # project is still recognised.
  v1=$DATA/mojocrash-example.crashlog
  c=$(code POST "/api/v1/crashes?key=$KEY" --data-binary @"$v1"); [ "$c" = 200 ] || fail "v1, default -> $c"
  i1=$(field id <"$work/body")
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k1" --data-binary @"$v1"); [ "$c" = 200 ] || fail "v1, mobile -> $c"
  i2=$(field id <"$work/body")
  grep -q duplicate "$work/body" && fail "v1 in mobile taken for the default project's: $(cat "$work/body")"
  [ -n "$i1" ] && [ -n "$i2" ] && [ "$i1" != "$i2" ] || fail "v1 ids: '$i1' '$i2'"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k1" --data-binary @"$v1"); [ "$c" = 200 ] || fail "v1 again -> $c"
  grep -q '"duplicate":true' "$work/body" || fail "v1 resend in mobile not a duplicate: $(cat "$work/body")"
  ok "a version-1 log is a crash in each project, and once in each"
  # A second key, then the first revoked: the second works, the first 401.
  c=$(code POST /api/v1/projects/mobile/keys "${A[@]}"); [ "$c" = 201 ] || fail "add key -> $c"
  k2=$(field ingest_key <"$work/body"); [ -n "$k2" ] && [ "$k2" != "$k1" ] || fail "second key"
  c=$(code DELETE "/api/v1/projects/default/keys/$k1" "${A[@]}"); [ "$c" = 400 ] || fail "revoke in default -> $c"
  # The default key itself (not hex here): refused as the default's, not "no such key".
  c=$(code DELETE "/api/v1/projects/default/keys/$KEY" "${A[@]}")
  [ "$c" = 400 ] && grep -q FAULTLINE_INGEST_KEY "$work/body" || fail "revoke the default key -> $c $(cat "$work/body")"
  c=$(code DELETE "/api/v1/projects/mobile/keys/$KEY" "${A[@]}"); [ "$c" = 404 ] || fail "revoke another's key -> $c"
  c=$(code DELETE "/api/v1/projects/mobile/keys/$k1" "${A[@]}"); [ "$c" = 200 ] || fail "revoke -> $c"
  "$POST" log 31 2 projapp 1.0 >"$work/m2.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k1" --data-binary @"$work/m2.log"); [ "$c" = 401 ] || fail "revoked key -> $c"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k2" --data-binary @"$work/m2.log"); [ "$c" = 200 ] || fail "second key -> $c"
  api /api/v1/projects >"$work/p.json" || fail "list"
  python3 - "$work/p.json" "$KEY" "$k2" <<'PY' || fail "projects list: $(cat "$work/p.json")"
import json, sys
p = json.load(open(sys.argv[1]))["projects"]
assert [x["id"] for x in p] == ["default", "mobile", "quiet"], p
assert [k["key"] for k in p[0]["keys"]] == [sys.argv[2]] and [k["key"] for k in p[1]["keys"]] == [sys.argv[3]], p
assert p[1]["created"].endswith("Z")
PY
  ok "keys added and revoked at once"
  stop || fail "shutdown rc"
  start "$work/d" "${DB[@]}"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k2" --data-binary @"$work/m2.log"); [ "$c" = 200 ] || fail "after restart -> $c"
  grep -q '"duplicate":true' "$work/body" || fail "resend not a duplicate: $(cat "$work/body")"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $k1" --data-binary @"$work/m2.log"); [ "$c" = 401 ] || fail "revoked after restart -> $c"
  ok "projects and keys survive a restart"
  stop || fail "shutdown rc"
  # A key fixed by the environment that is another project's: as the admin
  # token every reporter of that project would hold it; as the default
  # key a revoke in that project would not stop it.  Refused at start.
  FAULTLINE_ADMIN_TOKEN=$k2 timeout 20 "$FL" serve --listen 127.0.0.1:0 --data "$work/d" "${DB[@]}" >/dev/null 2>"$work/e"
  rc=$?
  [ $rc = 1 ] && grep -q "the admin token is an ingest key of project mobile" "$work/e" ||
    fail "admin token = mobile's key: rc $rc $(cat "$work/e")"
  FAULTLINE_INGEST_KEY=$k2 timeout 20 "$FL" serve --listen 127.0.0.1:0 --data "$work/d" "${DB[@]}" >/dev/null 2>"$work/e"
  rc=$?
  [ $rc = 1 ] && grep -q "the ingest key is one of project mobile's" "$work/e" ||
    fail "ingest key = mobile's key: rc $rc $(cat "$work/e")"
  ok "a key of another project as the admin token or the default key: refused at start"
  [ -z "${FL_TEST_PG:-}" ] || [ ! -e "$work/d/faultline.db" ] || fail "FL_TEST_PG: the server used SQLite"
  ;;
merge)
  # POST /api/v1/groups/ID/merge: two signatures of one bug made one
  # group; later crashes of the merged signature counted there; the search
  # and the orders of GET /api/v1/groups.
  start "$work/d"
  send() { "$POST" log 11 "$1" "$2" 1.0 >"$work/m.log"
           c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/m.log")
           [ "$c" = 200 ] || fail "send $1 -> $c"; field id <"$work/body"; }
  group_of() { wait_processed "$1" "$work/c.json"; field group_id <"$work/c.json"; }
  # Crash ids 1 and 5 share a signature (i % 4); 0 has another.
  a=$(send 0 mergeapp); b=$(send 1 mergeapp); b2=$(send 5 mergeapp); o=$(send 2 otherapp)
  ga=$(group_of "$a"); gb=$(group_of "$b"); go=$(group_of "$o")
  [ "$(group_of "$b2")" = "$gb" ] && [ -n "$ga" ] && [ "$ga" != "$gb" ] || fail "groups: $ga $gb"
  merge() { code POST "/api/v1/groups/$1/merge" -H "Authorization: Bearer $ADMIN" -d "$2"; }
  c=$(merge "$ga" "{\"groups\":[\"$gb\"]}")
  [ "$c" = 200 ] && grep -q "\"id\":\"$ga\"" "$work/body" && grep -q '"count":3' "$work/body" &&
    grep -q "\"merged\":\[{\"id\":\"$gb\"" "$work/body" || fail "merge -> $c $(cat "$work/body")"
  [ "$(admin "$(url "/api/v1/groups/$gb")" | field id)" = "$ga" ] || fail "the merged id does not forward"
  admin "$(url '/api/v1/groups?app=mergeapp')" | grep -q '"total":1}' || fail "listed: $(admin "$(url '/api/v1/groups?app=mergeapp')")"
  [ "$(group_of "$b")" = "$ga" ] || fail "crash $b not moved"
  ok "merged: one group of 3 crashes, the merged id forwards"
  b3=$(send 9 mergeapp)
  [ "$(group_of "$b3")" = "$ga" ] || fail "a later crash of the merged signature: $(group_of "$b3")"
  admin "$(url "/api/v1/groups/$ga")" | grep -q '"count":4' || fail "count after: $(admin "$(url "/api/v1/groups/$ga")")"
  ok "a later crash of the merged signature is counted in the group"
  c=$(merge "$ga" "{\"groups\":[\"$go\"]}")
  [ "$c" = 409 ] && grep -q 'not the same project and application' "$work/body" || fail "other app -> $c $(cat "$work/body")"
  c=$(merge "$ga" '{"groups":["0123456789abcdef0123456789abcdef"]}')
  [ "$c" = 404 ] && grep -q 'no such group: 0123' "$work/body" || fail "unknown -> $c $(cat "$work/body")"
  c=$(merge 0123456789abcdef0123456789abcdef "{\"groups\":[\"$go\"]}"); [ "$c" = 404 ] || fail "unknown target -> $c"
  for bad in '' '{}' '{"groups":[]}' '{"groups":"x"}' '{"groups":[1]}'; do
    c=$(merge "$ga" "$bad"); [ "$c" = 400 ] || fail "body '$bad' -> $c"
  done
  c=$(code POST "/api/v1/groups/$ga/merge" -d "{\"groups\":[\"$go\"]}"); [ "$c" = 401 ] || fail "no token -> $c"
  c=$(merge "$ga" "{\"groups\":[\"$gb\",\"$ga\"]}"); [ "$c" = 200 ] || fail "merged again -> $c"
  ok "merge refusals: 409 another application, 404 unknown, 400 bad body, 401 without the token; a repeat is a no-op"
  # Merged, ga's crash list is both groups' (a merge moves no crash), with
  # ?install= too.
  admin "$(url "/api/v1/groups/$ga/crashes")" | grep -q '"total":4,' || fail "crashes of the merged group: $(admin "$(url "/api/v1/groups/$ga/crashes")")"
  inst=$(admin "$(url "/api/v1/groups/$ga/crashes")" | python3 -c 'import json, sys
print([c["installation"] for c in json.load(sys.stdin)["crashes"] if c["id"] == sys.argv[1]][0])' "$b3") ||
    fail "the installation of $b3"
  admin "$(url "/api/v1/groups/$ga/crashes?install=$inst")" | grep -q "\"id\":\"$b3\"" ||
    fail "?install=$inst: $(admin "$(url "/api/v1/groups/$ga/crashes?install=$inst")")"
  ok "the merged group's crash list: both groups' 4 crashes, and an installation's among them"
  # Unmerged: gb's crashes (b, b2 and the later b3) and counts are back at
  # once, nothing processed again.
  c=$(code POST "/api/v1/groups/$gb/unmerge" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 200 ] && grep -q "\"from\":\"$ga\"" "$work/body" && grep -q '"queued":0' "$work/body" ||
    fail "unmerge -> $c $(cat "$work/body")"
  admin "$(url "/api/v1/groups/$gb")" | grep -q "\"id\":\"$gb\".*\"count\":3" || fail "after unmerge: $(admin "$(url "/api/v1/groups/$gb")")"
  admin "$(url "/api/v1/groups/$gb/crashes")" | grep -q '"total":3,' || fail "crashes after unmerge: $(admin "$(url "/api/v1/groups/$gb/crashes")")"
  admin "$(url "/api/v1/groups/$ga")" | grep -q '"count":1,' || fail "left after unmerge: $(admin "$(url "/api/v1/groups/$ga")")"
  [ "$(group_of "$b3")" = "$gb" ] || fail "crash $b3 not moved back"
  c=$(code POST "/api/v1/groups/$gb/unmerge" -H "Authorization: Bearer $ADMIN"); [ "$c" = 409 ] || fail "unmerge again -> $c"
  c=$(code POST "/api/v1/groups/0123456789abcdef0123456789abcdef/unmerge" -H "Authorization: Bearer $ADMIN"); [ "$c" = 404 ] || fail "unmerge unknown -> $c"
  c=$(code POST "/api/v1/groups/$gb/unmerge"); [ "$c" = 401 ] || fail "unmerge without the token -> $c"
  ok "unmerged: its 3 crashes and counts back in their own group at once; 409 when not merged"
  # q: part of a signature, any case; sort.
  sig=$(admin "$(url "/api/v1/groups/$go")" | field signature)
  part=$(printf '%s' "${sig:0:8}" | tr 'a-z' 'A-Z')
  admin "$(url "/api/v1/groups?q=$part")" | grep -q "\"id\":\"$go\"" || fail "q=$part: $(admin "$(url "/api/v1/groups?q=$part")")"
  [ "$(admin "$(url '/api/v1/groups?q=no-such-frame')")" = '{"groups":[],"total":0}' ] || fail "q matched"
  for k in first_seen last_seen count; do
    admin "$(url "/api/v1/groups?sort=$k")" | python3 -c '
import json, sys
k = sys.argv[1]
g = json.load(sys.stdin)["groups"]
v = [(x[k], x["id"]) for x in g]
assert len(g) == 3, g
assert all(a[0] > b[0] or (a[0] == b[0] and a[1] < b[1]) for a, b in zip(v, v[1:])), v' "$k" ||
      fail "sort=$k: $(admin "$(url "/api/v1/groups?sort=$k")")"
  done
  c=$(code GET '/api/v1/groups?sort=bogus' -H "Authorization: Bearer $ADMIN")
  [ "$c" = 400 ] && grep -q 'count, last_seen or first_seen' "$work/body" || fail "sort=bogus -> $c"
  ok "groups found by part of their signature (any case); sort by first/last crash; a bad sort refused"
  stop || fail "shutdown rc"
  ;;
groupdelete)
  # DELETE /api/v1/groups/ID: the group, the groups merged into it and all
  # their crashes go; 410 afterwards; a resend is a duplicate; the
  # signature's next crash makes a new group under a new id.  FL_TEST_PG=1:
  # on a throwaway PostgreSQL.
  db_from_env
  start "$work/d" "${DB[@]}"
  send() { "$POST" log 11 "$1" "$2" 1.0 >"$work/g$1.log"
           c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/g$1.log")
           [ "$c" = 200 ] || fail "send $1 -> $c"; field id <"$work/body"; }
  group_of() { wait_processed "$1" "$work/c.json"; field group_id <"$work/c.json"; }
  # Crash ids 1 and 5 share a signature (i % 4); 0 has another, 2 another.
  a=$(send 1 delapp); a2=$(send 5 delapp); b=$(send 0 delapp); o=$(send 2 delapp)
  ga=$(group_of "$a"); gb=$(group_of "$b"); go=$(group_of "$o")
  [ "$(group_of "$a2")" = "$ga" ] && [ "$ga" != "$gb" ] && [ "$ga" != "$go" ] || fail "groups: $ga $gb $go"
  c=$(code POST "/api/v1/groups/$ga/merge" -H "Authorization: Bearer $ADMIN" -d "{\"groups\":[\"$gb\"]}")
  [ "$c" = 200 ] || fail "merge -> $c"
  del() { code DELETE "/api/v1/groups/$1" -H "Authorization: Bearer $ADMIN"; }
  c=$(code DELETE "/api/v1/groups/$ga"); [ "$c" = 401 ] || fail "DELETE without token -> $c"
  c=$(del "$gb")
  [ "$c" = 409 ] && grep -q "\"merged_into\":\"$ga\"" "$work/body" || fail "DELETE of a merged group -> $c $(cat "$work/body")"
  admin "$(url "/api/v1/groups/$ga")" | grep -q '"count":3' || fail "the 409 changed the group"
  c=$(del 0123456789abcdef0123456789abcdef); [ "$c" = 404 ] || fail "DELETE unknown -> $c"
  ok "DELETE of a group: 401 without the token, 409 naming the group a merged one is in, 404 unknown"
  c=$(del "$ga")
  [ "$c" = 200 ] && [ "$(cat "$work/body")" = "{\"id\":\"$ga\",\"state\":\"deleted\",\"crashes\":3}" ] ||
    fail "DELETE -> $c $(cat "$work/body")"
  c=$(code GET "/api/v1/groups/$ga" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 410 ] && grep -q '"error":"the group was deleted"' "$work/body" && grep -q '"crashes":3' "$work/body" ||
    fail "GET deleted group -> $c $(cat "$work/body")"
  c=$(code GET "/api/v1/groups/$gb" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 410 ] && grep -q "\"deleted_with\":\"$ga\"" "$work/body" || fail "GET the merged group -> $c $(cat "$work/body")"
  c=$(code GET "/api/v1/groups/$ga/crashes" -H "Authorization: Bearer $ADMIN"); [ "$c" = 410 ] || fail "its crashes -> $c"
  for id in "$a" "$a2" "$b"; do
    c=$(code GET "/api/v1/crashes/$id" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 410 ] || fail "crash $id of the deleted group -> $c"
  done
  c=$(code GET "/api/v1/crashes/$o" -H "Authorization: Bearer $ADMIN"); [ "$c" = 200 ] || fail "the other group's crash -> $c"
  admin "$(url '/api/v1/groups?app=delapp')" | grep -q "\"total\":1}" || fail "listed: $(admin "$(url '/api/v1/groups?app=delapp')")"
  c=$(del "$ga"); [ "$c" = 200 ] && grep -q '"crashes":3' "$work/body" || fail "DELETE again -> $c $(cat "$work/body")"
  metric_has '^faultline_crashes_deleted_total{reason="group"} 3$' || fail "group metric: $(curl -s "$(url /metrics)" | grep deleted_total)"
  ok "DELETE: 200 with 3 crashes (twice), then 410 for the group, the merged one, their crashes; the other group kept; metric"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/g1.log")
  [ "$c" = 200 ] && grep -q '"duplicate":true' "$work/body" || fail "resend -> $c $(cat "$work/body")"
  n=$(send 9 delapp); gn=$(group_of "$n")
  [ -n "$gn" ] && [ "$gn" != "$ga" ] || fail "the signature's next crash: group $gn"
  g=$(admin "$(url "/api/v1/groups/$gn")")
  grep -q '"count":1,' <<<"$g" && grep -q '"affected":1' <<<"$g" || fail "the new group: $g"
  ok "a resend is a duplicate; the signature's next crash: a new group ($gn) of 1${FL_TEST_PG:+ (PostgreSQL)}"
  # Deleted while reports of its signature keep coming, on one HTTP thread
  # (the delete erases on a thread of its own): every report answered 200
  # is counted once -- in the group before the delete (and erased with
  # it), or in the new group its signature makes.
  stop || fail "shutdown rc"
  start "$work/d" "${DB[@]}" --http-threads 1
  : >"$work/ok1"; : >"$work/ok2"
  "$POST" stream "$PORT" "$KEY" 2000 8 "$work/ok1" 7 >"$work/s1"
  "$POST" wait "$PORT" "$ADMIN" 2000 120 streamapp >/dev/null || fail "2000 not counted: $(cat "$work/s1")"
  gs=$(admin "$(url '/api/v1/groups?app=streamapp&limit=1')" | field id)
  "$POST" stream "$PORT" "$KEY" 1000 4 "$work/ok2" 8 >"$work/s2" & sp=$!
  c=$(del "$gs"); [ "$c" = 200 ] || fail "DELETE under ingest -> $c $(cat "$work/body")"
  n=$(grep -o '"crashes":[0-9]*' "$work/body" | cut -d: -f2)
  wait $sp
  [ "$(sort -u "$work/ok2" | wc -l)" = 1000 ] || fail "ingest during the delete: $(cat "$work/s2")"
  [ "$n" -ge 500 ] || fail "erased $n, fewer than the group's 500 before"
  "$POST" wait "$PORT" "$ADMIN" $((3000 - n)) 120 streamapp >/dev/null ||
    fail "counted after the delete of $n: $("$POST" sum "$PORT" "$ADMIN" streamapp), want $((3000 - n))"
  ok "deleted under ingest: $n crashes erased, the 1000 reports sent meanwhile each counted once (sum $((3000 - n)))"
  [ -z "${FL_TEST_PG:-}" ] || [ ! -e "$work/d/faultline.db" ] || fail "FL_TEST_PG: the server used SQLite"
  stop || fail "shutdown rc"
  ;;
mergeload)
  # A merge and an unmerge of groups of hundreds of crashes while reports
  # of their signatures keep coming from 4 threads: a merge moves no crash
  # (the merged group's list reads both groups'), so every report answered
  # 200 is counted once whenever the merge lands, the merged group's count
  # is its crash list's total, and the unmerge gives each group back its
  # own.  FL_TEST_PG=1: on a throwaway PostgreSQL.
  db_from_env
  start "$work/d" "${DB[@]}"
  : >"$work/ok1"; : >"$work/ok2"
  "$POST" stream "$PORT" "$KEY" 2000 8 "$work/ok1" 7 >"$work/s1"
  "$POST" wait "$PORT" "$ADMIN" 2000 120 streamapp >/dev/null || fail "2000 not counted: $(cat "$work/s1")"
  admin "$(url '/api/v1/groups?app=streamapp&limit=2')" >"$work/two.json"
  ga=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["groups"][0]["id"])' "$work/two.json")
  gb=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["groups"][1]["id"])' "$work/two.json")
  [ -n "$ga" ] && [ -n "$gb" ] && [ "$ga" != "$gb" ] || fail "two groups: $(cat "$work/two.json")"
  count() { admin "$(url "/api/v1/groups/$1")" | python3 -c 'import json, sys; print(json.load(sys.stdin)["count"])'; }
  total() { admin "$(url "/api/v1/groups/$1/crashes?limit=1")" | python3 -c 'import json, sys; print(json.load(sys.stdin)["total"])'; }
  na=$(count "$ga"); nb=$(count "$gb")
  "$POST" stream "$PORT" "$KEY" 1000 4 "$work/ok2" 8 >"$work/s2" & sp=$!
  sleep 0.2
  c=$(code POST "/api/v1/groups/$ga/merge" -H "Authorization: Bearer $ADMIN" -d "{\"groups\":[\"$gb\"]}")
  [ "$c" = 200 ] || fail "merge under ingest -> $c $(cat "$work/body")"
  wait $sp
  [ "$(sort -u "$work/ok2" | wc -l)" = 1000 ] || fail "ingest during the merge: $(cat "$work/s2")"
  "$POST" wait "$PORT" "$ADMIN" 3000 120 streamapp >/dev/null ||
    fail "counted after the merge: $("$POST" sum "$PORT" "$ADMIN" streamapp), want 3000"
  m=$(count "$ga"); t=$(total "$ga")
  [ "$m" -ge $((na + nb)) ] && [ "$m" = "$t" ] || fail "merged: count $m, crashes listed $t, before $na + $nb"
  [ "$(count "$gb")" = "$m" ] || fail "the merged id does not read as $ga"
  ok "merged under ingest: the 1000 reports sent meanwhile each counted once (sum 3000); $ga holds $m = its crash list's total (before: $na + $nb)"
  : >"$work/ok3"
  "$POST" stream "$PORT" "$KEY" 1000 4 "$work/ok3" 9 >"$work/s3" & sp=$!
  sleep 0.2
  c=$(code POST "/api/v1/groups/$gb/unmerge" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 200 ] && grep -q '"queued":0' "$work/body" || fail "unmerge under ingest -> $c $(cat "$work/body")"
  wait $sp
  [ "$(sort -u "$work/ok3" | wc -l)" = 1000 ] || fail "ingest during the unmerge: $(cat "$work/s3")"
  "$POST" wait "$PORT" "$ADMIN" 4000 120 streamapp >/dev/null ||
    fail "counted after the unmerge: $("$POST" sum "$PORT" "$ADMIN" streamapp), want 4000"
  a=$(count "$ga"); b=$(count "$gb")
  [ "$a" = "$(total "$ga")" ] && [ "$b" = "$(total "$gb")" ] && [ "$a" -ge "$na" ] && [ "$b" -ge "$nb" ] ||
    fail "unmerged: $ga $a (listed $(total "$ga")), $gb $b (listed $(total "$gb"))"
  [ $((a + b)) -ge "$m" ] || fail "unmerged: $a + $b < $m"
  ok "unmerged under ingest: sum 4000; $ga $a and $gb $b, each its crash list's total${FL_TEST_PG:+ (PostgreSQL)}"
  [ -z "${FL_TEST_PG:-}" ] || [ ! -e "$work/d/faultline.db" ] || fail "FL_TEST_PG: the server used SQLite"
  stop || fail "shutdown rc"
  ;;
pgfrozen)
  # PostgreSQL frozen with its sockets open (SIGSTOP on the postmaster and
  # its backends: the kernel still acknowledges, so TCP keepalives never
  # fire) stalls the server no longer than --db-timeout: a report is
  # answered 503, /healthz says why, the server works again once the
  # database does, and SIGTERM ends it while the database is frozen.
  [ -n "${FL_TEST_PG:-}" ] || { echo "SKIP: pgfrozen needs FL_TEST_PG=1"; exit 77; }
  db_from_env
  FROZEN=
  # The postmaster first: stopped, it forks no backend the list would miss.
  freeze() {
    kill -STOP "$PGPID" || fail "SIGSTOP the postmaster $PGPID"
    FROZEN="$PGPID $(pgrep -P "$PGPID" | tr '\n' ' ')"
    kill -STOP $FROZEN || fail "SIGSTOP $FROZEN"
  }
  thaw() { [ -z "$FROZEN" ] || kill -CONT $FROZEN 2>/dev/null; FROZEN=; }
  # Thawed first, or pg_stop would wait for it for good.
  trap 'thaw; pg_stop; cleanup' EXIT
  since() { python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }
  # post N: report N, answered within 30 s (curl's 000 otherwise).
  post() {
    "$POST" log 31 "$1" frozenapp 1.0 >"$work/f.log"
    code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/f.log" --max-time 30
  }
  healthz() { code GET /healthz --max-time 30; }
  start "$work/d" "${DB[@]}" --db-timeout 2
  c=$(post 1); [ "$c" = 200 ] || fail "a report before the freeze -> $c $(cat "$work/body")"
  freeze
  t0=$(date +%s.%N)
  c=$(post 2); took=$(since "$t0")
  [ "$c" = 503 ] || [ "$c" = 500 ] || fail "a report to a frozen database -> $c (000: no answer in 30 s) after $took s"
  grep -q '"error"' "$work/body" || fail "the $c says no error: $(cat "$work/body")"
  ok "a report to a frozen PostgreSQL -> $c in $took s (--db-timeout 2): $(head -c 200 "$work/body")"
  c=$(healthz)
  [ "$c" = 503 ] && grep -q 'did not answer within 2 s' "$work/body" || fail "/healthz while frozen -> $c $(cat "$work/body")"
  ok "/healthz while frozen -> 503 $(head -c 300 "$work/body")"
  # A read of the API: answered too (an HTTP thread's own connection).
  t0=$(date +%s.%N)
  c=$(code GET /api/v1/groups -H "Authorization: Bearer $ADMIN" --max-time 30); took=$(since "$t0")
  [ "$c" = 503 ] || [ "$c" = 500 ] || fail "GET /api/v1/groups while frozen -> $c (000: no answer in 30 s) after $took s"
  ok "GET /api/v1/groups while frozen -> $c in $took s: $(head -c 200 "$work/body")"
  thaw
  t0=$(date +%s.%N)
  for _ in $(seq 120); do c=$(post 3); [ "$c" = 200 ] && break; sleep 0.5; done
  [ "$c" = 200 ] || fail "a report after the thaw -> $c $(cat "$work/body")"
  id=$(field id <"$work/body")
  c=$(code GET "/api/v1/crashes/$id" -H "Authorization: Bearer $ADMIN" --max-time 30)
  [ "$c" = 200 ] || fail "the report after the thaw ($id) is not stored: $c"
  for _ in $(seq 120); do c=$(healthz); [ "$c" = 200 ] && break; sleep 0.5; done
  [ "$c" = 200 ] || fail "/healthz after the thaw -> $c $(cat "$work/body")"
  ok "thawed: a report -> 200 and stored, /healthz 200 within $(since "$t0") s"
  freeze
  sleep 1 # its workers and writer wait on the frozen database
  t0=$(date +%s.%N)
  kill -TERM "$PID"
  for _ in $(seq 600); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$PID" 2>/dev/null && fail "SIGTERM with the database frozen: still running after 60 s"
  took=$(since "$t0")
  wait "$PID"; PID=
  grep -q 'SIGTERM, shutting down' "$work/err" || fail "no shutdown line: $(tail -3 "$work/err")"
  ok "SIGTERM with PostgreSQL frozen: the server ended in $took s"
  ;;
regression)
  start "$work/d"
  send() { "$POST" log 11 "$1" regapp "$2" >"$work/r.log"
           c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/r.log"); [ "$c" = 200 ] || fail "send $2 -> $c"; }
  status() { admin "$(url "/api/v1/groups/$gid")" | field status; }
  # Crash ids 0, 4, 8 share a signature (i % 4).
  send 0 1.2
  "$POST" wait "$PORT" "$ADMIN" 1 20 regapp >/dev/null || fail "not processed"
  gid=$(admin "$(url '/api/v1/groups?app=regapp')" | field id)
  c=$(code PATCH "/api/v1/groups/$gid" -H "Authorization: Bearer $ADMIN" -d '{"status":"resolved"}')
  [ "$c" = 200 ] || fail "PATCH -> $c"
  grep -q '"resolved_in":"1.2"' "$work/body" || fail "resolved_in: $(cat "$work/body")"
  send 4 1.1
  "$POST" wait "$PORT" "$ADMIN" 2 20 regapp >/dev/null || fail "not processed"
  [ "$(status)" = resolved ] || fail "1.1 reopened the group: $(status)"
  ok "a crash from 1.1 leaves a group resolved in 1.2 resolved"
  send 8 1.3
  "$POST" wait "$PORT" "$ADMIN" 3 20 regapp >/dev/null || fail "not processed"
  [ "$(status)" = regressed ] || fail "1.3 did not reopen: $(status)"
  ok "a crash from 1.3 reopens it as regressed"
  grep -q "$gid" <<<"$(admin "$(url '/api/v1/groups?status=regressed')")" || fail "status filter"
  # A status that is none of the three is refused, not answered "no groups".
  c=$(code GET '/api/v1/groups?status=bogus' -H "Authorization: Bearer $ADMIN")
  [ "$c" = 400 ] && grep -q 'open, resolved, regressed or ignored' "$work/body" || fail "status=bogus -> $c $(cat "$work/body")"
  grep -q "$gid" <<<"$(admin "$(url '/api/v1/groups?version=1.1')")" || fail "version filter"
  [ "$(admin "$(url '/api/v1/groups?version=9.9')")" = '{"groups":[],"total":0}' ] || fail "version filter (none)"
  # Explicit resolved_in, and 1.10 > 1.9 (numeric, not textual).
  c=$(code PATCH "/api/v1/groups/$gid" -H "Authorization: Bearer $ADMIN" -d '{"status":"resolved","resolved_in":"1.9"}')
  [ "$c" = 200 ] || fail "PATCH resolved_in -> $c"
  send 12 1.10
  "$POST" wait "$PORT" "$ADMIN" 4 20 regapp >/dev/null || fail "not processed"
  [ "$(status)" = regressed ] || fail "1.10 did not reopen a group resolved in 1.9"
  ok "1.10 > 1.9"
  # Ignored: a crash of a newer version leaves it ignored; resolved_in goes
  # with "resolved" only.
  c=$(code PATCH "/api/v1/groups/$gid" -H "Authorization: Bearer $ADMIN" -d '{"status":"ignored","resolved_in":"2.0"}')
  [ "$c" = 400 ] || fail "ignored with resolved_in -> $c"
  c=$(code PATCH "/api/v1/groups/$gid" -H "Authorization: Bearer $ADMIN" -d '{"status":"ignored"}')
  [ "$c" = 200 ] && grep -q '"status":"ignored"' "$work/body" && grep -q '"resolved_in":null' "$work/body" || fail "PATCH ignored -> $c $(cat "$work/body")"
  send 16 2.0
  "$POST" wait "$PORT" "$ADMIN" 5 20 regapp >/dev/null || fail "not processed"
  [ "$(status)" = ignored ] || fail "2.0 changed an ignored group: $(status)"
  grep -q "$gid" <<<"$(admin "$(url '/api/v1/groups?status=ignored')")" || fail "status=ignored filter"
  ok "an ignored group stays ignored whatever the version"
  stop || fail "shutdown rc"
  ;;
slowlink413)
  # faultline-report (FL_REPORTER) with a log over --max-body, through a
  # link of ~100 KB/s (a relay here): the server answers 413 before the
  # body to a client that waits for it (Expect: 100-continue), else only
  # once the body is whole -- which on a slow link takes longer than
  # --request-timeout, and the request was cut, the log kept and sent
  # again on every run.  The reporter asks first for a large body.
  [ -n "${FL_REPORTER:-}" ] || exit 77
  start "$work/d" --workers 0 --request-timeout 3
  python3 - "$PORT" "$work/relay.port" >"$work/relay.err" 2>&1 <<'PY' &
import os, socket, sys, threading, time
up = int(sys.argv[1])
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(8)
open(sys.argv[2] + ".tmp", "w").write(str(ls.getsockname()[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
def pump(a, b, slow):
    try:
        while True:
            d = a.recv(10000 if slow else 65536)
            if not d:
                break
            b.sendall(d)
            if slow:
                time.sleep(0.1)  # ~100 KB/s towards the server
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
while True:
    c, _ = ls.accept()
    s = socket.create_connection(("127.0.0.1", up))
    threading.Thread(target=pump, args=(c, s, True), daemon=True).start()
    threading.Thread(target=pump, args=(s, c, False), daemon=True).start()
PY
  rpid=$!
  for _ in $(seq 50); do [ -s "$work/relay.port" ] && break; sleep 0.1; done
  [ -s "$work/relay.port" ] || fail "the relay did not start: $(cat "$work/relay.err")"
  mkdir "$work/spool"
  # 2 MiB of base64 (~1.5 MiB gzipped): over the 1 MiB --max-body.
  { "$POST" log 5 1 slow 1.0 | grep -v '^END$'
    head -c 1572864 /dev/urandom | base64 -w 76 | awk '{print "ETC_KEY pad" NR; print "ETC_VALUE " $0}'
    echo END; } >"$work/spool/big.crashlog"
  "$POST" log 5 2 slow 1.0 >"$work/spool/small.crashlog"
  t0=$(date +%s)
  timeout 120 "$FL_REPORTER" --spool "$work/spool" --url "http://127.0.0.1:$(cat "$work/relay.port")/api/v1/crashes" \
    --key "$KEY" --yes --timeout 60 >"$work/rep.out" 2>&1; rc=$?
  kill "$rpid" 2>/dev/null
  [ $rc = 0 ] && grep -q 'big.crashlog: too large for the server (HTTP 413)' "$work/rep.out" &&
    grep -q 'small.crashlog: delivered' "$work/rep.out" ||
    fail "a log over --max-body on a slow link: rc $rc $(cat "$work/rep.out")"
  ok "a log over --max-body on a slow link: 413 in $(($(date +%s) - t0)) s, deleted; the next delivered"
  stop || fail "shutdown rc"
  ;;
symtmp)
  # An upload cut by a server killed with it left its part in
  # DIR/symbols/tmp/ for good (up to --max-symbol-file each).  The watcher
  # removes a part that did not change between two sweeps, 2 x --timeout
  # + 60 s apart (70 s here), and leaves an upload still arriving alone.
  # (--timeout 5: curl's --limit-rate sends in bursts up to ~2 s apart.)
  start "$work/d" --workers 0 --timeout 5
  sz=$(stat -c %s "$FL")
  curl -s -o /dev/null --limit-rate 50K -H "Authorization: Bearer $ADMIN" \
    --data-binary @"$FL" "$(url /api/v1/symbols)" &
  cpid=$!
  # (Up to 30 s: under a loaded machine and ASan, curl's start and the
  # server's first read of the body can take seconds.)
  for _ in $(seq 300); do ls "$work/d/symbols/tmp/" | grep -q '^upload\.' && break; sleep 0.1; done
  part=$(ls "$work/d/symbols/tmp/" | grep '^upload\.') || fail "no upload in tmp/"
  kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=
  wait $cpid
  [ -f "$work/d/symbols/tmp/$part" ] || fail "the killed server's part is not in tmp/"
  start "$work/d" --workers 0 --timeout 5
  # An upload that goes on through both sweeps: ~120 s at a steady rate,
  # well past the second sweep (~70 s) even when a loaded machine delays it.
  rate=$((sz / 120 + 1))
  curl -s -o "$work/up" -w '%{http_code}' --limit-rate "$rate" -H "Authorization: Bearer $ADMIN" \
    -H 'X-Faultline-Name: slow' --data-binary @"$FL" "$(url /api/v1/symbols)" >"$work/upcode" &
  cpid=$!
  for _ in $(seq 1100); do [ -f "$work/d/symbols/tmp/$part" ] || break; sleep 0.1; done
  [ -f "$work/d/symbols/tmp/$part" ] && fail "the killed server's part still in tmp/ after 110 s"
  kill -0 $cpid 2>/dev/null || fail "the slow upload ended before the sweep: $(cat "$work/upcode")"
  grep -q "symbols: removed tmp/$part ([0-9]* bytes): an upload that ended with its server" "$work/err" ||
    fail "no log line for the removed part: $(tail -3 "$work/err")"
  ok "the part a killed server left in tmp/ is removed, and logged"
  wait $cpid
  [ "$(cat "$work/upcode")" = 201 ] || fail "the slow upload: $(cat "$work/upcode") $(cat "$work/up")"
  [ -z "$(ls "$work/d/symbols/tmp/")" ] || fail "tmp/ not empty: $(ls "$work/d/symbols/tmp/")"
  ok "an upload arriving for ~120 s, through the sweeps, is stored (201)"
  stop || fail "shutdown rc"
  ;;
kill9)
  N=2000
  start "$work/d" --workers 2
  : >"$work/ok1"
  # About 2 s for the whole stream (16 clients, 15 ms apart each), killed
  # after 400 answers: well inside it even on a slow machine.
  FL_POST_DELAY_US=15000 "$POST" stream "$PORT" "$KEY" $N 16 "$work/ok1" 42 >"$work/s1" &
  spid=$!
  for _ in $(seq 300); do [ "$(wc -l <"$work/ok1")" -ge 400 ] && break; sleep 0.05; done
  kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=
  wait $spid
  n1=$(sort -u "$work/ok1" | wc -l)
  echo "before kill -9: $(cat "$work/s1"), $n1 distinct ids answered 200"
  [ "$n1" -gt 0 ] && [ "$n1" -lt $N ] || fail "the kill did not land mid-stream ($n1)"
  start "$work/d" --workers 2
  "$POST" check "$PORT" "$ADMIN" "$work/ok1" || fail "a report answered 200 was lost"
  ok "every one of the $n1 reports answered 200 before kill -9 is stored"
  # The reporter's retry: send everything again; known ids are not recounted.
  : >"$work/ok2"
  "$POST" stream "$PORT" "$KEY" $N 16 "$work/ok2" 42 >"$work/s2"
  total=$(sort -u "$work/ok1" "$work/ok2" | wc -l)
  [ "$total" = $N ] || fail "after resend $total distinct ids answered 200, want $N"
  "$POST" wait "$PORT" "$ADMIN" $N 60 streamapp >"$work/sum" || fail "sum of counts $(cat "$work/sum") != $N"
  sleep 1.5
  s=$("$POST" sum "$PORT" "$ADMIN" streamapp); [ "$s" = $N ] || fail "sum moved to $s"
  metric_has '^faultline_queue_depth 0$' || fail "queue not empty"
  ok "sum of group counts == $N distinct ids answered 200, each counted once"
  stop || fail "shutdown rc"
  ;;
reload)
  # SIGHUP reads the skip and prefix lists again: the same stack groups
  # apart once its program's frames are skipped (the signature is then
  # its one libc frame, left out before under the program's).  A list
  # that cannot be read leaves the rules in use, and the server running.
  start "$work/d" --workers 1
  "$POST" log 77 1 hupapp 1.0 >"$work/a.log"
  post_as() {
    sed "s/^CRASH_ID .*/CRASH_ID 11111111-0000-4000-8000-00000000000$1/" "$work/a.log" >"$work/x.log"
    local c
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' \
        --data-binary @"$work/x.log")
    [ "$c" = 200 ] || fail "post $1 -> $c $(cat "$work/body")"
  }
  hup_says() {
    kill -HUP "$PID"
    for _ in $(seq 50); do grep -q "$1" "$work/err" && return 0; sleep 0.1; done
    fail "SIGHUP: no '$1' in: $(tail -3 "$work/err")"
  }
  post_as 1; post_as 2
  got=$(wait_counts hupapp 2); [ "$got" = 2 ] || fail "before: $got"
  mv "$work/d/skip.txt" "$work/skip.txt" && mkdir "$work/d/skip.txt"
  hup_says 'SIGHUP: cannot read .*skip.txt.*Is a directory.*the grouping rules in use stay'
  post_as 3
  got=$(wait_counts hupapp 3); [ "$got" = 3 ] || fail "after a failed reload: $got"
  rmdir "$work/d/skip.txt"
  # A deleted list is not silently the built-in one.
  hup_says 'SIGHUP: cannot read .*skip.txt.*No such file.*the grouping rules in use stay'
  mv "$work/skip.txt" "$work/d/skip.txt"
  echo 'module:hupapp' >>"$work/d/skip.txt"
  hup_says 'SIGHUP: grouping rules read again from'
  post_as 4
  got=$(wait_counts hupapp "3 1"); [ "$got" = "3 1" ] || fail "after the reload: $got"
  kill -0 "$PID" || fail "the server stopped"
  ok "SIGHUP: a bad list kept the rules (3 in one group); the new list split the next one off"
  stop || fail "shutdown rc"
  # A list named on the command line must be there: not made by the server.
  timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/d" --skip-list "$work/nosuch.txt" \
    >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 1 ] && grep -q 'cannot read the skip/prefix lists.*No such file' "$work/e" ||
    fail "--skip-list missing: rc $rc $(cat "$work/e")"
  [ ! -e "$work/nosuch.txt" ] || fail "the server made the missing list"
  ok "a missing --skip-list: $(cat "$work/e")"
  ;;
poison)
  # A report whose processing stops the server (FAULTLINE_TEST_CRASH_ON
  # makes the worker abort on that crash id).  Restarted each time, as a
  # supervisor would, the server stops three times -- once in a batch,
  # twice with the report watched alone -- then marks it failed, says so,
  # and counts every other report; it does not die on it forever.
  N=10
  stored_only $N 4 "$work/ok" 21
  bad=$("$POST" log 21 3 | sed -n 's/^CRASH_ID //p')
  grep -qx "$bad" "$work/ok" || fail "no such crash id: $bad"
  ulimit -c 0
  export FAULTLINE_TEST_CRASH_ON=$bad
  stops=0
  for round in 1 2 3 4 5 6; do
    # Not start(): the worker may stop the server before it says its port.
    : >"$work/out"
    "$FL" serve --listen 127.0.0.1:0 --data "$work/d" --workers 1 >"$work/out" 2>>"$work/err" &
    PID=$!
    for _ in $(seq 100); do
      kill -0 "$PID" 2>/dev/null || break
      PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/out" | grep -o '[0-9]*$')
      [ -n "$PORT" ] && [ "$("$POST" sum "$PORT" "$ADMIN" streamapp 2>/dev/null)" = $((N - 1)) ] && break
      sleep 0.1
    done
    kill -0 "$PID" 2>/dev/null && break
    wait "$PID" 2>/dev/null; PID=
    stops=$((stops + 1))
  done
  unset FAULTLINE_TEST_CRASH_ON
  [ -n "$PID" ] || fail "the server kept stopping ($stops times)"
  [ "$stops" = 3 ] || fail "$stops stops, want 3"
  "$POST" wait "$PORT" "$ADMIN" $((N - 1)) 20 streamapp >"$work/sum" ||
    fail "sum $(cat "$work/sum") != $((N - 1))"
  grep -q "crash $bad: the server stopped 2 times while processing it; marked failed" "$work/err" ||
    fail "log: $(grep -i crash "$work/err" | tail -3)"
  api "/api/v1/crashes/$bad" >"$work/bad.json" || fail "GET crash $bad"
  grep -q '"state":"failed"' "$work/bad.json" && grep -q '"raw":"FAULTLINE ' "$work/bad.json" ||
    fail "crash $bad (failed, its log kept): $(head -c 300 "$work/bad.json")"
  grep -vx "$bad" "$work/ok" >"$work/good"
  "$POST" check "$PORT" "$ADMIN" "$work/good" || fail "a report answered 200 is missing"
  metric_has '^faultline_queue_depth 0$' || fail "queue not empty"
  ok "stopped $stops times, then $bad failed and the other $((N - 1)) counted"
  # Once the cause is gone (here: the hook), an operator has it processed
  # again, and it is counted.
  stop || fail "shutdown rc"
  start "$work/d" --workers 1
  c=$(code POST "/api/v1/crashes/$bad/reprocess"); [ "$c" = 401 ] || fail "reprocess without token -> $c"
  c=$(code POST /api/v1/crashes/no-such-crash/reprocess -H "Authorization: Bearer $ADMIN")
  [ "$c" = 404 ] || fail "reprocess of an unknown crash -> $c"
  c=$(code POST "/api/v1/crashes/$bad/reprocess" -H "Authorization: Bearer $ADMIN")
  [ "$c" = 202 ] && grep -q '"state":"queued"' "$work/body" || fail "reprocess -> $c $(cat "$work/body")"
  "$POST" wait "$PORT" "$ADMIN" $N 20 streamapp >"$work/sum" || fail "after reprocess: sum $(cat "$work/sum") != $N"
  grep -q '"state":"processed"' <<<"$(api "/api/v1/crashes/$bad")" || fail "reprocessed crash not processed"
  # A processed crash goes through again too, and is not counted twice.
  c=$(code POST "/api/v1/crashes/$bad/reprocess" -H "Authorization: Bearer $ADMIN"); [ "$c" = 202 ] || fail "again -> $c"
  for _ in $(seq 50); do metric_has '^faultline_queue_depth 0$' && break; sleep 0.1; done
  metric_has '^faultline_queue_depth 0$' || fail "the second reprocess stayed queued"
  s=$("$POST" sum "$PORT" "$ADMIN" streamapp); [ "$s" = $N ] || fail "reprocessed twice: sum $s != $N"
  ok "POST /api/v1/crashes/ID/reprocess: the failed crash counted, a second time not counted again"
  stop || fail "shutdown rc"
  ;;
poisonstore)
  # A store that refuses to record processed crashes for a while -- here a
  # trigger that fails every new group, as a database restarting or a full
  # disk fails commits -- never gets a good report marked failed as one
  # that stopped the server.  Each time the worker gives up on a report
  # (half its lease gone), it is alive to say that the start ended; before,
  # the report's fourth claim found two starts that "never ended" and
  # failed it for good.
  N=4
  stored_only $N 2 "$work/ok" 23
  python3 - "$work/d/faultline.db" <<'PY' || fail "cannot add the trigger"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("CREATE TRIGGER refuse BEFORE INSERT ON groups BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
db.commit()
PY
  start "$work/d" --workers 1 --lease 2
  # Until the tasks were claimed five times (three of them watched), or
  # 40 s.
  python3 - "$work/d/faultline.db" <<'PY' || fail "the tasks were not claimed again and again: $(grep "marked failed" "$work/err" | head -1)"
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=10)
for _ in range(400):
    a = db.execute("SELECT min(attempts) FROM tasks").fetchone()[0]
    if a is None:
        sys.exit("the tasks were done while the store refused every group")
    if a >= 5:
        break
    time.sleep(0.1)
else:
    sys.exit("attempts: %s" % (a,))
PY
  [ "$("$POST" sum "$PORT" "$ADMIN" streamapp)" = 0 ] || fail "counted while the store refused them"
  grep -q 'refused by the test' "$work/err" || fail "the store's refusal is not in the log"
  python3 - "$work/d/faultline.db" <<'PY' || fail "cannot drop the trigger"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("DROP TRIGGER refuse")
db.commit()
PY
  "$POST" wait "$PORT" "$ADMIN" $N 20 streamapp >"$work/sum" ||
    fail "not processed once the store took them: sum $(cat "$work/sum") of $N"
  ! grep -q 'marked failed' "$work/err" || fail "log: $(grep 'marked failed' "$work/err")"
  metric_has '^faultline_crashes_failed_total 0$' || fail "metric: crashes failed"
  "$POST" check "$PORT" "$ADMIN" "$work/ok" || fail "a report answered 200 is missing"
  ok "a store refusing for 5 claims: the $N reports processed once it took them, none failed"
  stop || fail "shutdown rc"
  ;;
bigcrash)
  # A genuine log of a large program: 5,000 modules, 256 threads of 64
  # frames (1.1 MB; 300 KB gzipped).  Accepted, processed, answered whole;
  # and what processing it and answering it took (~50 MB each) goes back
  # to the system instead of staying resident in the worker's and the HTTP
  # thread's heaps (+105 MB of anonymous memory before).  Not under ASan:
  # its allocator is not glibc's.
  ldd "$FL" | grep libasan >/dev/null && { echo "skipped under ASan"; exit 77; }
  python3 - "$work/big.log" <<'PY'
import random, sys
random.seed(5)
mods = [(0x7f0000000000 + i * 0x200000, 0x100000) for i in range(5000)]
pick = lambda: (lambda b, s: b + random.randrange(s))(*random.choice(mods))
L = ["FAULTLINE 0.1.0", "CRASHLOG_VERSION 2", "APPLICATION_NAME bigapp",
     "APPLICATION_VERSION 1.0", "PLATFORM_NAME linux", "CPUARCH_NAME x86-64",
     "CRASH_SIGNAL 11", "CRASH_ID 0b1c2d3e-0000-4000-8000-00000000b16c",
     "INSTALL_ID 0b1c2d3e-0000-4000-8000-000000000001"]
for i, (b, s) in enumerate(mods):
    L += ["OBJECT libm%05d.so/%d/%d/%d" % (i, b, s, b), "OBJECT_BUILD_ID %040x" % random.getrandbits(160),
          "OBJECT_PATH /opt/bigapp/lib/plugins/libm%05d.so" % i]
L += ["CALLSTACK %d" % pick() for _ in range(256)]
for t in range(256):
    L.append("THREAD %d worker-%d" % (1000 + t, t))
    L += ["THREAD_FRAME 0x%x" % pick() for _ in range(64)]
open(sys.argv[1], "w").write("\n".join(L + ["END", ""]))
PY
  start "$work/d"
  anon() { awk '/^RssAnon:/{print $2}' "/proc/$PID/status"; }
  sleep 0.5
  before=$(anon)
  gzip -c "$work/big.log" >"$work/big.gz"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Encoding: gzip' --data-binary @"$work/big.gz")
  [ "$c" = 200 ] || fail "a 5,000-module log -> $c $(cat "$work/body")"
  for _ in $(seq 100); do
    admin -o "$work/crash.json" "$(url /api/v1/crashes/0b1c2d3e-0000-4000-8000-00000000b16c)"
    grep -q '"state":"processed"' "$work/crash.json" && break
    sleep 0.1
  done
  grep -q '"state":"processed"' "$work/crash.json" || fail "the 5,000-module log was not processed"
  n=$(grep -o '"tid":' "$work/crash.json" | wc -l)
  [ "$n" -ge 256 ] || fail "$n threads in the processed crash, expected 256"
  for _ in $(seq 50); do now=$(anon); [ "$now" -le $((before + 32768)) ] && break; sleep 0.1; done
  [ "$now" -le $((before + 32768)) ] || fail "anonymous RSS ${before} kB before a 5,000-module crash, ${now} kB after processing and answering it"
  ok "a 5,000-module, 256-thread log processed and answered ($(wc -c <"$work/crash.json") bytes); anonymous RSS ${before} kB before, ${now} kB after"
  stop || fail "shutdown rc"
  ;;
memory)
  # --max-memory: the report data all requests hold at once is bounded.
  # Three ~600 KB reports uploaded slowly at the same time (6 s each, so
  # that they overlap on a loaded machine too) under a 1 MB
  # budget: those that would pass it are answered 503 + Retry-After (their
  # clients resend) while the others are stored; the budget is let go when
  # they end, and the same report then goes through.
  # (--max-body and --max-decoded within the budget: one largest request
  # must fit it, else the start is refused.)
  start "$work/d" --workers 0 --max-memory 1000000 --max-body 700000 --max-decoded 300000
  for i in 1 2 3; do
    "$POST" log 55 $i memapp 1.0 | python3 -c 'import sys
t = sys.stdin.read(); pad = "".join("ETC_KEY pad_%d\nETC_VALUE %s\n" % (k, "x" * 1000) for k in range(590))
sys.stdout.write(t.replace("\nEND\n", "\n" + pad + "END\n"))' >"$work/big$i.log"
  done
  [ "$(wc -c <"$work/big1.log")" -gt 600000 ] || fail "big log: $(wc -c <"$work/big1.log") bytes"
  for i in 1 2 3; do
    curl -s -o "$work/b$i" -D "$work/h$i" -w '%{http_code}' --limit-rate 100k \
      -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' --data-binary @"$work/big$i.log" \
      "$(url /api/v1/crashes)" >"$work/c$i" &
    pids="${pids:-} $!"
  done
  wait $pids
  codes="$(cat "$work/c1") $(cat "$work/c2") $(cat "$work/c3")"
  n200=$(grep -o 200 <<<"$codes" | wc -l); n503=$(grep -o 503 <<<"$codes" | wc -l)
  [ "$n200" -ge 1 ] && [ "$n503" -ge 1 ] && [ $((n200 + n503)) = 3 ] || fail "codes: $codes"
  for i in 1 2 3; do
    [ "$(cat "$work/c$i")" = 503 ] || continue
    grep -q '"max_memory":1000000' "$work/b$i" || fail "503 body: $(cat "$work/b$i")"
    grep -qi '^Retry-After: 1' "$work/h$i" || fail "503 without Retry-After: $(cat "$work/h$i")"
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' \
        --data-binary @"$work/big$i.log")
    [ "$c" = 200 ] || fail "resend of big$i alone -> $c $(cat "$work/body")"
  done
  # (A request lets go of its data just after its answer is sent.)
  for _ in $(seq 50); do metric_has '^faultline_ingest_held_bytes 0$' && break; sleep 0.1; done
  metric_has '^faultline_ingest_held_bytes 0$' || fail "held bytes not back to 0"
  metric_has '^faultline_reports_accepted_total 3$' || fail "not all 3 accepted in the end"
  ok "3 x 600 KB under a 1 MB budget: $codes, then each resend 200"
  stop || fail "shutdown rc"
  ;;
diskfull)
  # The store refuses writes -- here a file size limit, which SQLite meets
  # like a full disk.  Reports are answered 503 (never 200 unless stored),
  # /healthz and /metrics say why, the log says so once (not per request),
  # and once writes work again so does everything: each report answered
  # 200 is stored and counted once, the backlog is processed at once.
  command -v prlimit >/dev/null || { echo "SKIP: prlimit missing"; exit 77; }
  N=3000
  # Keys that cannot be written: the start fails, says why, and leaves no
  # empty key file behind (which the next start would have to replace).
  # The disk fills for the key alone: the file it is first written to (its
  # name has the server's pid, the shell's that execs it) is /dev/full.  A
  # file size limit would stop the database first, which is opened before
  # the keys are written (a refused start writes none).
  mkdir -p "$work/k"
  env -u FAULTLINE_ADMIN_TOKEN -u FAULTLINE_INGEST_KEY sh -c \
    'ln -s /dev/full "$1/admin_token.tmp.$$" && exec "$2" serve --listen 127.0.0.1:0 --data "$1"' \
    sh "$work/k" "$FL" >"$work/kerr" 2>&1 && fail "started without writable keys"
  grep -q 'cannot write .*/admin_token: No space left on device' "$work/kerr" ||
    fail "key error: $(cat "$work/kerr")"
  [ ! -e "$work/k/admin_token" ] && [ ! -e "$work/k/ingest_key" ] &&
    [ -z "$(ls "$work/k" | grep '^admin_token\.tmp')" ] ||
    fail "a key file was left behind: $(ls -la "$work/k")"
  ok "keys not writable: $(cat "$work/kerr")"
  printf '#!/bin/sh\nulimit -S -f 1024\nexec "%s" "$@"\n' "$FL" >"$work/limited"
  chmod +x "$work/limited"
  real=$FL; FL=$work/limited
  start "$work/d" --workers 2
  FL=$real
  # The room left on the data directory's disk, to alert on before it is 0.
  python3 - "$(curl -s "$(url /metrics)")" "$(df -B1 --output=avail "$work/d" | tail -1)" <<'PY' ||
import re, sys
m = dict(re.findall(r"^(faultline_data_\w+) (\d+)$", sys.argv[1], re.M))
free, size, df = int(m["faultline_data_free_bytes"]), int(m["faultline_data_size_bytes"]), int(sys.argv[2])
assert 0 < free <= size, m
assert abs(free - df) < max(df // 10, 64 << 20), (free, df)
PY
    fail "faultline_data_free_bytes: $(curl -s "$(url /metrics)" | grep faultline_data_)"
  : >"$work/ok1"
  "$POST" stream "$PORT" "$KEY" $N 8 "$work/ok1" 5 >"$work/s1"
  n1=$(sort -u "$work/ok1" | wc -l)
  echo "under the limit: $(cat "$work/s1")"
  [ "$n1" -gt 0 ] && [ "$n1" -lt $N ] || fail "the limit did not bite: $(cat "$work/s1")"
  # Near the limit a small commit may still fit now and then (a checkpoint
  # starts the WAL over), and healthz shows the last one.  So from here no
  # write fits at all: 4 KiB, less than a page; one more new report (seed
  # 6: an id not stored yet, which a resend would be) fails.
  prlimit --pid "$PID" --fsize=4096: || fail "prlimit"
  "$POST" stream "$PORT" "$KEY" 1 1 "$work/ok_none" 6 >/dev/null
  [ ! -s "$work/ok_none" ] || fail "a report was stored past a 4 KiB limit"
  c=$(code GET /healthz)
  [ "$c" = 503 ] || fail "healthz while failing -> $c $(cat "$work/body")"
  grep -q '"status":"degraded"' "$work/body" && grep -q '"ingest":{"error":"[^"]' "$work/body" ||
    fail "healthz body: $(cat "$work/body")"
  ok "healthz -> 503 $(cat "$work/body")"
  metric_has '^faultline_storage_failing{path="ingest"} 1$' || fail "metric: ingest not failing"
  metric_has '^faultline_storage_failures_total{path="ingest"} [1-9]' || fail "metric: no failures"
  metric_has '^faultline_reports_rejected_total{reason="unavailable"} [1-9]' ||
    fail "metric: no 503s counted"
  # A line per change (two a second at most), not per refused request: the
  # store may take a small commit now and then near the limit.
  m=$(curl -s "$(url /metrics)")
  nf=$(sed -n 's/^faultline_storage_failures_total{path="ingest"} //p' <<<"$m")
  nl=$(grep -c 'storage:' "$work/err")
  grep -q 'storage: ingest failed: ' "$work/err" || fail "log: $(grep storage "$work/err")"
  [ "$nf" -ge 100 ] && [ "$nl" -le 20 ] || fail "log: $nl lines for $nf failures"
  ok "the log says so ($nl lines for $nf failures): $(grep -m1 'storage: ingest' "$work/err")"
  prlimit --pid "$PID" --fsize=unlimited: || fail "prlimit"
  # With no report coming (a balancer that believes /healthz sends none),
  # the server finds out by itself that writes work again.
  for _ in $(seq 50); do c=$(code GET /healthz); [ "$c" = 200 ] && break; sleep 0.1; done
  [ "$c" = 200 ] || fail "healthz still $c 5 s after the limit was lifted, no report sent"
  ok "healthz back to 200 with no report sent"
  # The reporters resend what was refused (the same ids).
  : >"$work/ok2"
  "$POST" stream "$PORT" "$KEY" $N 8 "$work/ok2" 5 >"$work/s2"
  total=$(sort -u "$work/ok1" "$work/ok2" | wc -l)
  [ "$total" = $N ] || fail "after the limit: $total of $N answered 200 ($(cat "$work/s2"))"
  c=$(code GET /healthz)
  [ "$c" = 200 ] || fail "healthz after -> $c $(cat "$work/body")"
  metric_has '^faultline_storage_failing{path="ingest"} 0$' || fail "metric: still failing"
  for _ in $(seq 50); do grep -q 'storage: ingest works again' "$work/err" && break; sleep 0.2; done
  grep -q 'storage: ingest works again (after [0-9]* failure' "$work/err" ||
    fail "no recovery line: $(grep storage "$work/err")"
  "$POST" wait "$PORT" "$ADMIN" $N 25 streamapp >"$work/sum" ||
    fail "processing did not catch up: sum $(cat "$work/sum") != $N"
  sort -u "$work/ok1" "$work/ok2" >"$work/all"
  "$POST" check "$PORT" "$ADMIN" "$work/all" || fail "a report answered 200 is missing"
  ok "writes work again: all $N stored and counted once"
  stop || fail "shutdown rc"
  ;;
unreadable)
  # The store cannot be read for a while: another connection puts a view
  # that fails when read in place of the raw logs' table (as a broken disk
  # would fail reads).  The workers say so (/healthz, log), try again and
  # fail no crash; once the table is back, every report is counted.
  sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$work/d/faultline.db" "$1"; }
  N=200
  stored_only $N 8 "$work/ok1" 9
  sql "ALTER TABLE raw_chunks RENAME TO raw_chunks_away;
       CREATE VIEW raw_chunks AS SELECT id, data FROM raw_chunks_away
       WHERE abs(-9223372036854775807 - 1) IS NOT NULL;" || fail "hide the table"
  start "$work/d" --workers 2
  for _ in $(seq 50); do c=$(code GET /healthz); [ "$c" = 503 ] && break; sleep 0.1; done
  [ "$c" = 503 ] && grep -q '"processing":{"error":"integer overflow"' "$work/body" ||
    fail "healthz while unreadable -> $c $(cat "$work/body")"
  ok "healthz -> 503 $(cat "$work/body")"
  grep -q 'storage: processing failed: integer overflow; the crashes stay queued' "$work/err" ||
    fail "log: $(grep storage "$work/err")"
  metric_has '^faultline_crashes_failed_total 0$' || fail "crashes were failed"
  # A read that fails for a reason that will not pass by itself: 500 to
  # the client, without the database's words, and those in the log --
  # one line a second however many requests fail.
  id=$(head -1 "$work/ok1")
  for _ in 1 2 3 4 5; do
    c=$(code GET "/api/v1/crashes/$id" -H "Authorization: Bearer $ADMIN")
    [ "$c" = 500 ] && grep -qx '{"error":"store error"}' "$work/body" ||
      fail "GET a crash whose log cannot be read -> $c $(cat "$work/body")"
  done
  [ "$(unstamped "$work/err" | grep -c '^faultline serve: http: a request answered 500, the store.s error: .*integer overflow')" = 1 ] ||
    fail "the 500s' log lines: $(grep 'answered 500' "$work/err")"
  ok "a crash whose log cannot be read -> 500, the store's error logged once"
  sleep 1
  sql "DROP VIEW raw_chunks; ALTER TABLE raw_chunks_away RENAME TO raw_chunks;" ||
    fail "put the table back"
  "$POST" wait "$PORT" "$ADMIN" $N 25 streamapp >"$work/sum" ||
    fail "sum of counts $(cat "$work/sum") != $N"
  metric_has '^faultline_crashes_failed_total 0$' || fail "crashes were failed"
  c=$(code GET /healthz)
  [ "$c" = 200 ] || fail "healthz after -> $c $(cat "$work/body")"
  "$POST" check "$PORT" "$ADMIN" "$work/ok1" || fail "a report answered 200 is missing"
  ok "store back: all $N processed, none failed"
  stop || fail "shutdown rc"
  ;;
shutdown)
  # SIGTERM in the middle of a stream: everything answered 200 is stored.
  start "$work/d"
  : >"$work/ok1"
  FL_POST_DELAY_US=15000 "$POST" stream "$PORT" "$KEY" 600 16 "$work/ok1" 77 >/dev/null &
  spid=$!
  for _ in $(seq 300); do [ "$(wc -l <"$work/ok1")" -ge 100 ] && break; sleep 0.05; done
  stop || fail "SIGTERM exit status"
  wait $spid
  start "$work/d"
  "$POST" check "$PORT" "$ADMIN" "$work/ok1" || fail "lost on SIGTERM"
  n=$(sort -u "$work/ok1" | wc -l)
  ok "graceful shutdown kept the $n reports answered 200"
  stop || fail "shutdown rc"
  # SIGTERM into a stream with no pause between requests, several times: a
  # request completing during the loops' last passes was once left
  # waiting for a writer already gone, and leaked (LeakSanitizer failed
  # the exit in ~1 of 7 such stops).
  : >"$work/refusals"
  for i in 1 2 3 4 5 6 7 8; do
    start "$work/d"
    "$POST" stream "$PORT" "$KEY" 100000 16 "$work/ok2" $((100 + i)) >/dev/null 2>>"$work/refusals" &
    spid=$!
    sleep "0.$((3 + i % 5))"
    stop || fail "SIGTERM into a busy stream, stop $i: exit status"
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  done
  # 16 clients never fill the writer's queue (16,384): a refusal while
  # stopping says so, not "queue full".
  ! grep '^503 ' "$work/refusals" | grep -v 'the server is stopping' | grep -q . ||
    fail "a refusal while stopping: $(grep '^503 ' "$work/refusals" | grep -v stopping | head -2)"
  ok "8 stops in the middle of a busy stream, clean exits ($(grep -c '^503 ' "$work/refusals") refusals, each 'the server is stopping')"
  ;;
slowloris)
  # A client that is never idle long enough for --timeout but never
  # finishes its request: headers a line a second, or a report's body ten
  # bytes a second.  --request-timeout closes both; a report sent at once
  # still gets its 200, and a symbol upload trickling past the deadline is
  # not cut (it may rightly take minutes).
  start "$work/d" --workers 0 --timeout 2 --request-timeout 3
  python3 - "$PORT" "$KEY" "$ADMIN" <<'PY' >"$work/slow.out" || fail "slow clients: $(cat "$work/slow.out")"
import socket, sys, time
port, key = int(sys.argv[1]), sys.argv[2]

def trickle(first, pieces, gap, limit):
    """Send first, then each piece gap seconds apart; return the seconds
    after which the server closed the connection, or None if it did not
    within limit."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(gap)
    s.sendall(first)
    t0 = time.monotonic()
    for p in pieces:
        if time.monotonic() - t0 > limit:
            return None
        try:
            if s.recv(4096) == b"":
                return time.monotonic() - t0
        except socket.timeout:
            pass
        except OSError:
            return time.monotonic() - t0
        try:
            s.sendall(p)
        except OSError:
            return time.monotonic() - t0
    return None

hdr = trickle(b"POST /api/v1/crashes HTTP/1.1\r\n",
              [b"X-Slow-%d: x\r\n" % i for i in range(60)], 1.0, 30)
print("headers a line a second: closed after", hdr)
body = trickle(b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nX-Faultline-Key: " + key.encode()
               + b"\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n",
               [b"x" * 10] * 60, 1.0, 30)
print("a body ten bytes a second: closed after", body)
# A body no route reads (an unknown path, a method the path does not
# take): held to the same deadline, not drained for good.
other = trickle(b"POST /no-such-path HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n",
                [b"x" * 10] * 60, 1.0, 30)
print("a body to no route ten bytes a second: closed after", other)
# A symbol upload at the same pace for 5 s (past the 3 s deadline), then
# finished: answered (400: it is no ELF file), not cut.
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"POST /api/v1/symbols HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + sys.argv[3].encode()
          + b"\r\nContent-Length: 60\r\n\r\n")
for i in range(5):
    time.sleep(1)
    s.sendall(b"y" * 10)
s.sendall(b"y" * 10)
s.settimeout(10)
answer = s.recv(4096)
print("a symbol upload over 6 s:", answer.split(b"\r\n")[0].decode(errors="replace"))
ok = hdr is not None and body is not None and other is not None and answer.startswith(b"HTTP/1.1 ")
sys.exit(0 if ok else 1)
PY
  ok "$(tr '\n' ';' <"$work/slow.out")"
  # Into a file: grep -q leaving early would fail curl's write (pipefail).
  curl -s "$(url /metrics)" >"$work/metrics"
  grep -Eq '^faultline_reports_rejected_total\{reason="too_slow"\} [2-9]' "$work/metrics" ||
    fail "too_slow not counted: $(grep too_slow "$work/metrics")"
  "$POST" log 3 1 slow 1.0 >"$work/a.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/a.log"); [ "$c" = 200 ] || fail "a report -> $c"
  ok "a report sent at once -> 200; the slow ones counted as too_slow"
  # A body nobody reads is drained up to 64 MiB, then the connection is
  # closed; a shorter one is answered after it (405 for a method the path
  # does not take, as a proxy sends it).
  got=$(head -c 100000000 /dev/zero | curl -s -o /dev/null -w '%{size_upload}' -X POST --data-binary @- "$(url /no-such-path)")
  [ "$got" -lt 100000000 ] || fail "a 100 MB body to no route was drained whole"
  python3 "$(dirname "$0")/../lib/whole_twice.py" "$PORT" /api/v1/crashes "X-Any: 1" 300000 405 \
    'method not allowed' PUT >"$work/put405" 2>&1 || fail "PUT with a body, as a proxy sends it: $(cat "$work/put405")"
  ok "a body to no route: cut at 64 MiB; 405 after the body"
  stop || fail "shutdown rc"
  ;;
framing)
  # Requests a front and this server could read differently (request
  # smuggling): a Content-Length beside chunked, two Content-Lengths, a
  # Transfer-Encoding other than chunked, a bare CR in a header.  Each is
  # a 400 and the connection is closed: the admin request hidden in the
  # first one's body was run (200) before.  A %00 in the path matches no
  # route (it cut the path short: /healthz%00x was /healthz).  JSON
  # answers are not to be sniffed.
  start "$work/d" --workers 0
  python3 - "$PORT" "$KEY" "$ADMIN" <<'PY' >"$work/framing.out" || fail "framing: $(cat "$work/framing.out")"
import socket, sys
port, key, admin = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode()
hidden = b"GET /api/v1/groups HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + admin + b"\r\n\r\n"

def exchange(raw):
    """Send raw, read until the server closes (or 5 s): the answers."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    s.sendall(raw)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return got, True
            got += b
    except socket.timeout:
        return got, False
    except ConnectionResetError:
        return got, True

cases = {
    "CL+TE": b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nX-Faultline-Key: " + key
             + b"\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden,
    "two CL": b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nX-Faultline-Key: " + key
              + b"\r\nContent-Length: 4\r\nContent-Length: %d\r\n\r\nxxxx" % (4 + len(hidden)) + hidden,
    "TE gzip": b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nX-Faultline-Key: " + key
               + b"\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + hidden,
    "bare CR": b"GET /healthz HTTP/1.1\r\nHost: localhost\rX-Forged: 1\r\n\r\n" + hidden,
}
bad = 0
for name, raw in cases.items():
    got, closed = exchange(raw)
    answers = got.count(b"HTTP/1.1 ")
    first = got.split(b"\r\n")[0].decode(errors="replace")
    print("%s: %s, %d answer(s), closed %s" % (name, first, answers, closed))
    if not first.startswith("HTTP/1.1 400") or answers != 1 or not closed or b'"groups"' in got:
        bad += 1
got, _ = exchange(b"GET /healthz%00x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
print("%00:", got.split(b"\r\n")[0].decode(errors="replace"))
bad += not got.startswith(b"HTTP/1.1 404")
sys.exit(1 if bad else 0)
PY
  ok "$(tr '\n' ';' <"$work/framing.out")"
  curl -s -D "$work/hdrs" -o /dev/null "$(url /healthz)"
  grep -qi '^X-Content-Type-Options: nosniff' "$work/hdrs" || fail "no nosniff on JSON: $(cat "$work/hdrs")"
  c=$(code GET /healthz); [ "$c" = 200 ] || fail "healthz after -> $c"
  ok "JSON answers carry nosniff; the server still answers"
  stop || fail "shutdown rc"
  ;;
clientlimit)
  # One client address may hold --max-client-connections per HTTP thread;
  # one more is closed at once, and another address is still served (it
  # held thousands and nobody else got an answer).
  start "$work/d" --workers 0 --http-threads 1 --max-client-connections 4
  python3 - "$PORT" <<'PY' >"$work/limit.out" || fail "client limit: $(cat "$work/limit.out")"
import socket, subprocess, sys, time
port = int(sys.argv[1])
socks = []
for i in range(7):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\n")  # never finished
    socks.append(s)
time.sleep(1)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
print("7 connections from 127.0.0.1: %d closed by the server" % closed)
other = subprocess.run(["curl", "-s", "-m", "5", "--interface", "127.0.0.2", "-o", "/dev/null",
                        "-w", "%{http_code}", "http://127.0.0.1:%d/healthz" % port],
                       capture_output=True, text=True).stdout
print("127.0.0.2 meanwhile:", other)
for s in socks:
    s.close()
sys.exit(0 if closed == 3 and other == "200" else 1)
PY
  ok "$(tr '\n' ';' <"$work/limit.out")"
  c=$(code GET /healthz); [ "$c" = 200 ] || fail "after the connections closed -> $c"
  stop || fail "shutdown rc"
  ;;
hosts)
  # DNS rebinding: a page whose name was made to resolve to this server
  # reads, through its visitor's browser, whatever needs no credentials.
  # A server on loopback answers only to the loopback names and its own
  # address unless told more (--allowed-host); another Host is 421 before
  # any route runs: /metrics, /healthz, /buildid/, the portal, ingest.
  start "$work/d" --workers 0
  for h in "localhost:$PORT" localhost "127.0.0.1:$PORT" "127.0.0.2" "app.localhost:$PORT" "[::1]:$PORT" "LocalHost."; do
    c=$(code GET /metrics -H "Host: $h"); [ "$c" = 200 ] || fail "Host $h -> $c $(cat "$work/body")"
  done
  ok "loopback names and the listen address -> 200"
  for p in /metrics /healthz /buildid/0123456789abcdef0123456789abcdef01234567/debuginfo /portal.js / /api/v1/groups; do
    c=$(code GET "$p" -H 'Host: evil.example' -H 'Accept: text/html' -H "Authorization: Bearer $ADMIN")
    [ "$c" = 421 ] || fail "$p for Host evil.example -> $c"
    grep -q "\"error\":\"misdirected request: Host 'evil.example' is not a name of this server" "$work/body" ||
      fail "$p for Host evil.example: $(cat "$work/body")"
  done
  for h in "evil.example:$PORT" localhost.evil.example 127.0.0.1.evil.example "127.0.0.1:$PORT@evil.example" x; do
    c=$(code GET /metrics -H "Host: $h"); [ "$c" = 421 ] || fail "Host $h -> $c"
  done
  # A report to the wrong name: 421 after its body, nothing stored.
  "$POST" log 98 1 hostapp 1.0 >"$work/h.log"
  c=$(code POST /api/v1/crashes -H 'Host: evil.example' -H "X-Faultline-Key: $KEY" --data-binary @"$work/h.log")
  [ "$c" = 421 ] || fail "report for Host evil.example -> $c $(cat "$work/body")"
  metric_has '^faultline_reports_accepted_total 0$' || fail "a report for Host evil.example was accepted"
  grep -q "http: a request for Host 'evil.example' answered 421: not a name of this server (--allowed-host)" "$work/err" ||
    fail "no log line: $(tail -3 "$work/err")"
  ok "another Host -> 421 on every route, the portal's included, and said in the log"
  # Without Host: HTTP/1.0 is answered (no browser sends one), HTTP/1.1
  # is a 400 (RFC 9112), as is a second Host.
  python3 - "$PORT" <<'PY' >"$work/nohost.out" || fail "without a Host: $(cat "$work/nohost.out")"
import socket, sys
port = int(sys.argv[1])
def first(raw):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    s.sendall(raw)
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    return got.split(b"\r\n")[0].decode(), got
a, _ = first(b"GET /healthz HTTP/1.0\r\n\r\n")
b, bb = first(b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
c, cb = first(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
print("HTTP/1.0 without Host: %s; HTTP/1.1 without: %s; two: %s" % (a, b, c))
sys.exit(0 if a.endswith(" 200 OK") and b.endswith(" 400 Bad Request") and b"no Host header" in bb
         and c.endswith(" 400 Bad Request") and b"more than one Host" in cb else 1)
PY
  ok "$(cat "$work/nohost.out")"
  stop || fail "shutdown rc"

  # The names given (any port, *.name the names under it) as well.
  start "$work/d2" --workers 0 --allowed-host crash.example.com --allowed-host '*.corp.example,ops.example'
  for h in crash.example.com "crash.example.com:443" CRASH.Example.COM. a.corp.example "b.a.corp.example:8080" ops.example "localhost:$PORT" "127.0.0.1:$PORT"; do
    c=$(code GET /metrics -H "Host: $h"); [ "$c" = 200 ] || fail "--allowed-host: Host $h -> $c $(cat "$work/body")"
  done
  for h in evil.example corp.example xcorp.example crash.example.com.evil.example; do
    c=$(code GET /metrics -H "Host: $h"); [ "$c" = 421 ] || fail "--allowed-host: Host $h -> $c"
  done
  c=$(code GET / -H 'Host: evil.example' -H 'Accept: text/html'); [ "$c" = 421 ] || fail "--allowed-host: the portal for evil.example -> $c"
  c=$(code GET / -H 'Host: crash.example.com' -H 'Accept: text/html'); [ "$c" = 200 ] || fail "--allowed-host: the portal -> $c"
  ok "--allowed-host: its names (any port, *.corp.example) and loopback -> 200, others 421"
  stop || fail "shutdown rc"
  start "$work/d3" --workers 0 --allowed-host '*'
  c=$(code GET /metrics -H 'Host: evil.example'); [ "$c" = 200 ] || fail "--allowed-host '*': evil.example -> $c"
  ok "--allowed-host '*': any Host"
  stop || fail "shutdown rc"
  # A name with a port, or none: said at once.
  for bad in crash.example.com:8080 'a b' ''; do
    "$FL" serve --listen 127.0.0.1:0 --data "$work/d4" --allowed-host "$bad" >/dev/null 2>"$work/usage"
    [ $? = 64 ] && grep -q 'allowed-host' "$work/usage" || fail "--allowed-host '$bad': $(cat "$work/usage")"
  done
  grep -q "give the name without a port" <("$FL" serve --allowed-host crash.example.com:8080 2>&1) ||
    fail "--allowed-host NAME:PORT not explained"
  ok "--allowed-host with a port or no name: a usage error"
  ;;
queryargs)
  # Hundreds of query parameters overflowed libmicrohttpd's memory for the
  # connection (--max-header), and it closed the connection without an
  # answer.  More than 64 are answered 414 (no route takes more than
  # nine), on any route, and the connection after it is served as usual.
  start "$work/d" --workers 0
  python3 - "$PORT" "$ADMIN" <<'PY' >"$work/args.out" || fail "query parameters: $(cat "$work/args.out")"
import socket, sys
port, admin = int(sys.argv[1]), sys.argv[2]
def ask(path, extra=""):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(30)
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s\r\n" % (path, extra)).encode())
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except ConnectionResetError:
        pass
    return got.split(b"\r\n")[0].decode(errors="replace") or "(closed, no answer)", got
def q(n):
    return "&".join("a%d=1" % i for i in range(n))
bad = 0
for path, want in (("/healthz?" + q(64), "200"), ("/healthz?" + q(65), "414"),
                   ("/healthz?" + q(400), "414"), ("/metrics?" + q(2000), "414"),
                   ("/api/v1/groups?" + q(400), "414")):
    first, got = ask(path, "Authorization: Bearer %s\r\n" % admin)
    print("%s with %d parameters: %s" % (path.split("?")[0], path.count("&") + 1, first))
    bad += not first.startswith("HTTP/1.1 " + want)
    bad += want == "414" and b'"error":"too many query parameters: at most 64"' not in got
first, _ = ask("/api/v1/groups?limit=5", "Authorization: Bearer %s\r\n" % admin)
print("then /api/v1/groups?limit=5:", first)
bad += not first.startswith("HTTP/1.1 200")
sys.exit(1 if bad else 0)
PY
  ok "$(tr '\n' ';' <"$work/args.out")"
  # A report with too many of them: 414 after its body, nothing stored.
  "$POST" log 98 1 argsapp 1.0 >"$work/a.log"
  c=$(code POST "/api/v1/crashes?key=$KEY&$(python3 -c 'print("&".join("x%d" % i for i in range(300)))')" --data-binary @"$work/a.log")
  [ "$c" = 414 ] || fail "report with 301 parameters -> $c $(cat "$work/body")"
  c=$(code POST "/api/v1/crashes?key=$KEY" --data-binary @"$work/a.log")
  [ "$c" = 200 ] || fail "the report then -> $c $(cat "$work/body")"
  ok "a report with 301 parameters -> 414; with its key alone -> 200"
  stop || fail "shutdown rc"
  # The least memory a connection may have holds fewer: 16 with 4 KiB
  # (40 closed the connection).
  start "$work/d2" --workers 0 --max-header 4096
  for n in 16:200 17:414 40:414 64:414; do
    c=$(code GET "/healthz?$(python3 -c "print('&'.join('a%d=1' % i for i in range(${n%:*})))")")
    [ "$c" = "${n#*:}" ] || fail "--max-header 4096: ${n%:*} parameters -> $c"
  done
  grep -q '"error":"too many query parameters: at most 16"' "$work/body" || fail "--max-header 4096: $(cat "$work/body")"
  ok "--max-header 4096: 16 parameters -> 200, 17, 40 and 64 -> 414"
  stop || fail "shutdown rc"
  ;;
fdlimit)
  # The server runs out of file descriptors (a low `ulimit -n`, many
  # clients at once): libmicrohttpd stops accepting while it is at the
  # limit, and must take connections again once clients have gone.  It
  # once put its listening socket back only at its next pass, which an
  # idle loop never made: the server stayed deaf for good.
  command -v prlimit >/dev/null || { echo "SKIP: prlimit missing"; exit 77; }
  start "$work/d" --workers 1 --http-threads 1
  prlimit --pid "$PID" --nofile=64:64 || fail "prlimit"
  # 120 idle connections: more than the descriptors left.
  python3 - "$PORT" 120 <<'PY' || fail "could not hold the connections"
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
time.sleep(2)  # the server accepts what it can and meets the limit
for s in held:
    s.close()
PY
  for _ in $(seq 50); do grep -q 'http: .*accept.*Too many open files' "$work/err" && break; sleep 0.1; done
  grep -q 'http: .*accept.*Too many open files' "$work/err" ||
    fail "the limit was not reached: $(tail -3 "$work/err")"
  # The clients are gone: the server must answer again (curl's own
  # timeout only bounds a hang; an answer comes at once).
  c=$(curl -s -m 20 -o "$work/body" -w '%{http_code}' "$(url /healthz)")
  [ "$c" = 200 ] || fail "after running out of descriptors: /healthz -> $c"
  : >"$work/ok1"
  "$POST" stream "$PORT" "$KEY" 200 4 "$work/ok1" 31 >"$work/s1"
  [ "$(sort -u "$work/ok1" | wc -l)" = 200 ] || fail "ingest after the limit: $(cat "$work/s1")"
  "$POST" wait "$PORT" "$ADMIN" 200 25 streamapp >"$work/sum" || fail "sum $(cat "$work/sum") != 200"
  ok "out of descriptors, then clients gone: answers again, 200 reports counted"
  stop || fail "shutdown rc"
  ;;
dbmoved)
  # The data directory is moved away (or removed) under a running server.
  # SQLite keeps writing to the files it has open, so a report would be
  # answered 200 and be gone with the directory.  The server refuses such
  # commits (503 + Retry-After, /healthz says why), and takes reports
  # again once the database is back where it was.
  N=50
  start "$work/d" --workers 1
  : >"$work/ok1"
  "$POST" stream "$PORT" "$KEY" $N 2 "$work/ok1" 51 >"$work/s1"
  [ "$(sort -u "$work/ok1" | wc -l)" = $N ] || fail "before: $(cat "$work/s1")"
  mv "$work/d" "$work/away" || fail "mv"
  "$POST" log 52 1 movedapp 1.0 >"$work/m.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/m.log" -D "$work/h")
  [ "$c" = 503 ] && grep -qi '^Retry-After: ' "$work/h" ||
    fail "a report while the database is away -> $c $(cat "$work/body")"
  c=$(code GET /healthz)
  [ "$c" = 503 ] && grep -q 'removed or replaced' "$work/body" || fail "healthz -> $c $(cat "$work/body")"
  ok "database moved away: report -> 503, healthz $(cat "$work/body")"
  mv "$work/away" "$work/d" || fail "mv back"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/m.log")
  [ "$c" = 200 ] || fail "a report once the database is back -> $c $(cat "$work/body")"
  "$POST" wait "$PORT" "$ADMIN" $N 25 streamapp >"$work/sum" || fail "sum $(cat "$work/sum") != $N"
  "$POST" wait "$PORT" "$ADMIN" 1 25 movedapp >"$work/sum" || fail "movedapp: $(cat "$work/sum")"
  "$POST" check "$PORT" "$ADMIN" "$work/ok1" || fail "a report answered 200 is missing"
  ok "database back: the report is taken, all $N + 1 counted"
  rm -rf "$work/d"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/m.log" -D "$work/h")
  "$POST" log 53 1 movedapp 1.0 >"$work/m2.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/m2.log")
  [ "$c" = 503 ] || fail "a report after the data directory was removed -> $c $(cat "$work/body")"
  ok "data directory removed: report -> 503"
  stop || fail "shutdown rc"
  ;;
readonly)
  # A data directory on a read-only file system (a remount after errors,
  # a mistaken mount option): the start fails with the reason, not with a
  # wrong one ("in use by another server").
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root for a read-only bind mount"; exit 77; }
  start "$work/d" --workers 0
  stop || fail "shutdown rc"
  mkdir "$work/ro"
  mount --bind "$work/d" "$work/ro" || { echo "SKIP: cannot bind-mount"; exit 77; }
  trap 'umount "$work/ro"; cleanup' EXIT
  mount -o remount,bind,ro "$work/ro" || fail "remount read-only"
  for role in all api; do
    timeout 20 "$FL" serve --listen 127.0.0.1:0 --data "$work/ro" --role $role >"$work/out" 2>"$work/e"
    rc=$?
    [ $rc != 0 ] && [ $rc != 124 ] || fail "role $role started on a read-only directory (rc $rc)"
    unstamped "$work/e" | grep -qx "faultline serve: --data $work/ro: not writable (Read-only file system)" &&
      ! grep -q 'in use by another' "$work/e" ||
      fail "role $role: $(cat "$work/e")"
    ok "role $role, read-only data directory: $(cat "$work/e")"
  done
  ;;
limits)
  # Header block cap, slow clients, and 503 when the backlog is full.
  start "$work/d" --workers 0 --timeout 1 --max-header 8192 --max-backlog 3
  big=$(head -c 20000 /dev/zero | tr '\0' 'a')
  c=$(code GET /healthz -H "X-Big: $big")
  [ "$c" -ge 400 ] 2>/dev/null || [ "$c" = 000 ] || fail "20 KB header -> $c"
  ok "a 20 KB header block is refused ($c)"
  # libmicrohttpd's message for each such request: a line a second at
  # most, named as the server's, the rest counted -- not a line per
  # request any client can send without a key.
  # A line a second: as many lines as the seconds the requests took (101
  # requests take several on a loaded machine), plus the ends.
  n0=$(wc -l <"$work/err") t0=$(date +%s)
  for _ in $(seq 100); do code GET /healthz -H "X-Big: $big" >/dev/null; done
  sleep 1.1
  code GET /healthz -H "X-Big: $big" >/dev/null
  for _ in $(seq 20); do grep -q 'more messages since the last line' "$work/err" && break; sleep 0.1; done
  n=$(($(wc -l <"$work/err") - n0)) secs=$(($(date +%s) - t0))
  [ "$n" -le $((secs + 2)) ] && [ "$n" -lt 50 ] &&
    unstamped "$work/err" | grep -q '^faultline serve: http: .*431.*more messages since the last line' ||
    fail "101 refused header blocks in $secs s: $n log lines: $(tail -3 "$work/err")"
  ok "101 refused header blocks in $secs s: $n log lines"
  # A client that sends half a request line and waits is disconnected.
  exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\n' >&3
  t0=$(date +%s)
  timeout 10 cat <&3 >/dev/null
  t1=$(date +%s)
  exec 3<&-
  [ $((t1 - t0)) -le 5 ] || fail "slow client kept for $((t1 - t0)) s"
  ok "a slow client is disconnected after the timeout"
  for i in 1 2 3 4; do "$POST" log 3 $i lim 1.0 >"$work/$i.log"; done
  for i in 1 2 3; do
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/$i.log"); [ "$c" = 200 ] || fail "report $i -> $c"
  done
  # --max-backlog 3: three crashes wait, so /healthz says ingest is
  # refused, and the next report is.
  c=$(code GET /healthz) hz=$(cat "$work/body")
  [ "$c" = 503 ] && [ "$hz" = '{"status":"degraded","backlog":{"depth":3,"max":3,"error":"processing backlog full"}}' ] ||
    fail "/healthz with the backlog full: $c $hz"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/4.log" -D "$work/h")
  [ "$c" = 503 ] || fail "backlog full -> $c"
  grep -qi '^Retry-After:' "$work/h" || fail "503 without Retry-After"
  ok "backlog full -> 503 + Retry-After, /healthz 503 $hz"
  stop || fail "shutdown rc"
  # An API server whose workers run in another process: its count of the
  # backlog is not lowered by them, so /healthz reads the queue again and
  # turns 200 once they have caught up -- as ingest takes reports again.
  start "$work/d" --role api --max-backlog 3
  c=$(code GET /healthz); [ "$c" = 503 ] || fail "/healthz of an API server started on a full backlog: $c $(cat "$work/body")"
  "$FL" serve --role worker --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  for _ in $(seq 100); do c=$(code GET /healthz); [ "$c" = 200 ] && break; sleep 0.2; done
  [ "$c" = 200 ] && grep -qx '{"status":"ok"}' "$work/body" || fail "/healthz once the worker processed the backlog: $c $(cat "$work/body")"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/4.log"); [ "$c" = 200 ] || fail "report 4 after the backlog drained -> $c"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  ok "/healthz 200 again once a worker process caught up"
  stop || fail "shutdown rc"
  ;;
cli)
  # Into a file, not a pipe: grep -q leaves at the first match, and the
  # rest of the text would meet a closed pipe (SIGPIPE, under pipefail).
  "$FL" serve --help >"$work/help" && grep -q -- '--workers' "$work/help" || fail "serve --help"
  # PostgreSQL alone (its own queue table) or with RabbitMQ; RabbitMQ never
  # without it (tests/scaleout runs both for real).  Port 1: refused at once.
  # (--listen ...:0: the address is checked first, and 8080 may be taken
  # by a `make run` on this machine.)
  # Nothing answers there: the server waits for PostgreSQL, says so, and
  # stops cleanly on SIGTERM (tests/scaleout/outage.sh: it then runs once
  # the database is up).
  waits_for_pg() { # waits_for_pg LABEL COMMAND...
    "${@:2}" >/dev/null 2>"$work/e" &
    local p=$!
    for _ in $(seq 100); do grep -q 'waiting for PostgreSQL' "$work/e" && break; sleep 0.1; done
    kill -TERM "$p"; wait "$p"; local rc=$?
    [ $rc = 0 ] && grep -q 'cannot connect to PostgreSQL: .*Connection refused.*; waiting for PostgreSQL' "$work/e" &&
      grep -q 'stopped while waiting for PostgreSQL' "$work/e" || fail "$1: rc $rc $(cat "$work/e")"
  }
  waits_for_pg --db "$FL" serve --listen 127.0.0.1:0 --data "$work/d" --db postgres://nobody@127.0.0.1:1/x
  "$FL" serve --data "$work/d" --queue amqp://localhost >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 64 ] && grep -q 'needs --db postgres://' "$work/e" || fail "amqp: rc $rc $(cat "$work/e")"
  "$FL" serve --data "$work/d" --queue amqps://localhost >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 64 ] && grep -q 'needs --db postgres://' "$work/e" || fail "amqps: rc $rc $(cat "$work/e")"
  "$FL" serve --data "$work/d" --queue redis://u:secret@localhost >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 64 ] && grep -q 'redis://\.\.\.: unknown queue' "$work/e" && ! grep -q secret "$work/e" ||
    fail "redis: rc $rc $(cat "$work/e")"
  # A malformed AMQP URL is a mistake of the command: exit 64 before the
  # store is waited for or anything is made, the password not echoed.
  for u in 'amqp://u:s3cret@h:notaport/%2f' 'amqp://u:s3cret@h:70000/%2f' 'amqp://u:s3cret@h:0/%2f' \
           'amqp://u:s3cret@h/' 'amqp://u:s3cret@h/%2f?heartbeat=x'; do
    timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/amqpurl" --db postgres://nobody@127.0.0.1:1/x \
      --queue "$u" >/dev/null 2>"$work/e"; rc=$?
    [ $rc = 64 ] && grep -q -- '^faultline serve: --queue' "$work/e" && ! grep -q s3cret "$work/e" ||
      fail "--queue $u: rc $rc $(cat "$work/e")"
  done
  [ ! -e "$work/amqpurl" ] || fail "a malformed --queue made its data directory"
  ok "malformed AMQP URLs: exit 64 ($(cat "$work/e"))"
  waits_for_pg FAULTLINE_DB env FAULTLINE_DB=postgres://nobody@127.0.0.1:1/x \
    "$FL" serve --listen 127.0.0.1:0 --data "$work/d"
  # A URL of another scheme (a typo) is not taken for a SQLite file's path.
  for u in mysql://u:secret@h/x postgress://u:secret@h/x; do
    "$FL" serve --data "$work/d" --db "$u" >/dev/null 2>"$work/e"; rc=$?
    [ $rc = 64 ] && grep -q "${u%%://*}://\.\.\.: unknown database" "$work/e" && ! grep -q secret "$work/e" ||
      fail "--db $u: rc $rc $(cat "$work/e")"
  done
  # A worker on a database nobody made: said (FAULTLINE_DB forgotten).
  mkdir -p "$work/lonely"
  "$FL" serve --role worker --workers 1 --data "$work/lonely" >/dev/null 2>"$work/e" &
  lp=$!
  for _ in $(seq 100); do grep -q 'new, empty SQLite database' "$work/e" && break; sleep 0.1; done
  kill -TERM "$lp"; wait "$lp"
  grep -q 'warning: --role worker on a new, empty SQLite database .*FAULTLINE_DB' "$work/e" ||
    fail "no warning for a worker on a new database: $(cat "$work/e")"
  "$FL" serve --bogus >/dev/null 2>&1; rc=$?; [ $rc = 64 ] || fail "unknown option: rc $rc"
  for l in 0 86401; do
    "$FL" serve --lease "$l" >/dev/null 2>"$work/e"; rc=$?
    [ $rc = 64 ] && grep -q -- "--lease: '$l' is out of range: 1..86400 seconds" "$work/e" || fail "--lease $l: rc $rc $(cat "$work/e")"
  done
  # Values that would start a server that cannot work are refused.
  for o in "--db sqlite:" "--db :memory:" "--max-header 10" "--max-header 99999999999" \
           "--max-backlog 0" "--http-threads 0" "--top-frames 0" "--rate-burst 0" \
           "--max-pending 0" "--timeout 0" "--max-body 0"; do
    "$FL" serve --listen 127.0.0.1:0 --data "$work/range" $o >/dev/null 2>"$work/e"; rc=$?
    [ $rc = 64 ] && grep -q -- "${o%% *}" "$work/e" || fail "$o: rc $rc $(cat "$work/e")"
  done
  [ ! -e "$work/range" ] || fail "a refused start made its data directory"
  "$FL" serve --listen foo >/dev/null 2>&1; rc=$?; [ $rc = 64 ] || fail "--listen foo: rc $rc"
  "$FL" serve --listen >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 64 ] && grep -q -- '--listen needs a value' "$work/e" || fail "--listen without a value: rc $rc $(cat "$work/e")"
  # A data directory whose database is not one: refused, with SQLite's reason.
  mkdir -p "$work/bad" && head -c 65536 /dev/urandom >"$work/bad/faultline.db"
  timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 1 ] && grep -q "$work/bad/faultline.db is not an SQLite database" "$work/e" ||
    fail "garbage database: rc $rc $(cat "$work/e")"
  [ "$(ls "$work/bad")" = faultline.db ] || fail "garbage database: files made beside it: $(ls "$work/bad")"
  # A damaged one (SQLite's header, garbage after): refused with SQLite's reason.
  { printf 'SQLite format 3\0'; head -c 65536 /dev/urandom; } >"$work/bad/faultline.db"
  timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 1 ] && grep -q "cannot open the database $work/bad/faultline.db" "$work/e" ||
    fail "damaged database: rc $rc $(cat "$work/e")"
  # --data naming a file.
  timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/bad/faultline.db" >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 1 ] && grep -q "not a directory" "$work/e" || fail "--data FILE: rc $rc $(cat "$work/e")"
  # Keys that clients could not send as set (cut short, trimmed), or one
  # key for both: refused at start, saying why, before anything is made.
  long=$(head -c 200 /dev/zero | tr '\0' a)
  for bad in "FAULTLINE_ADMIN_TOKEN=$long" "FAULTLINE_INGEST_KEY=two words" \
             "FAULTLINE_INGEST_KEY=$ADMIN"; do
    env "$bad" timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/badkey" >/dev/null 2>"$work/e"; rc=$?
    [ $rc = 1 ] && grep -q 'not usable as a key\|are the same' "$work/e" ||
      fail "key ${bad:0:40}: rc $rc $(cat "$work/e")"
    [ ! -e "$work/badkey/faultline.db" ] || fail "key ${bad:0:40}: a database was made"
  done
  ok "unusable keys refused: $(cat "$work/e")"
  # The reporter's command in the start-up line: the path of the one
  # beside the server, its name when PATH finds that one, and its name
  # when there is none beside it.
  mkdir -p "$work/bin" && cp "$FL" "$work/bin/faultline" || fail "copy $FL"
  reporter_line() { # reporter_line [env...]: the command the copy prints
    env "$@" timeout 10 "$work/bin/faultline" serve --listen 127.0.0.1:0 --data "$work/rl" --workers 0 \
      >"$work/rl.out" 2>&1 &
    local p=$!
    for _ in $(seq 100); do grep -q 'send crash logs with' "$work/rl.out" && break; sleep 0.1; done
    kill "$p" 2>/dev/null; wait "$p" 2>/dev/null
    grep -o 'send crash logs with  [^ ]*' "$work/rl.out" | cut -d' ' -f6
  }
  [ "$(reporter_line)" = faultline-report ] || fail "none beside: $(cat "$work/rl.out")"
  printf '#!/bin/sh\n' >"$work/bin/faultline-report" && chmod +x "$work/bin/faultline-report"
  [ "$(reporter_line)" = "$work/bin/faultline-report" ] || fail "one beside: $(cat "$work/rl.out")"
  [ "$(reporter_line PATH="$work/bin:$PATH")" = faultline-report ] || fail "one beside on PATH: $(cat "$work/rl.out")"
  ok "the start-up line names the reporter beside the server by its path, by its name on PATH"
  # Generated keys are printed, kept in the data dir and reused.
  unset FAULTLINE_ADMIN_TOKEN FAULTLINE_INGEST_KEY
  start "$work/k"
  tok=$(grep -o 'admin token: [0-9a-f]*' "$work/out" | cut -d' ' -f3)
  key=$(grep -o 'ingest key:  [0-9a-f]*' "$work/out" | cut -d' ' -f4)
  [ ${#tok} = 32 ] && [ ${#key} = 32 ] || fail "keys not printed: $(cat "$work/out")"
  # The reporter named as a command that works: in the build tree, where
  # make run leaves it, its path (no PATH finds it there).
  rep=$(realpath -e "$(dirname "$FL")/../reporter/faultline-report" 2>/dev/null) || rep=faultline-report
  unstamped "$work/out" | grep -qxF "faultline: send crash logs with  $rep --url http://127.0.0.1:$PORT/api/v1/crashes --key $key" ||
    fail "no reporter line ($rep): $(cat "$work/out")"
  [ "$(stat -c %a "$work/k/admin_token")" = 600 ] || fail "admin_token mode"
  [ "$(cat "$work/k/admin_token")" = "$tok" ] && [ "$(cat "$work/k/ingest_key")" = "$key" ] ||
    fail "the key files do not hold the keys printed"
  c=$(code GET /api/v1/groups -H "Authorization: Bearer $tok"); [ "$c" = 200 ] || fail "generated token -> $c"
  stop || fail "shutdown rc"
  start "$work/k"
  grep -q "admin token: $tok" "$work/out" || fail "token changed on restart"
  # A second server on the same data directory is refused.
  "$FL" serve --listen 127.0.0.1:0 --data "$work/k" >/dev/null 2>"$work/e2" && fail "second server started"
  grep -q 'in use' "$work/e2" || fail "second server: $(cat "$work/e2")"
  # And one with a data directory of its own naming the same database.
  timeout 10 "$FL" serve --listen 127.0.0.1:0 --data "$work/k3" --db "sqlite:$work/k/faultline.db" \
    >/dev/null 2>"$work/e2" && fail "second server on the same --db started"
  grep -q "$work/k/faultline.db is in use" "$work/e2" || fail "second server, same --db: $(cat "$work/e2")"
  # Refused, it wrote no keys into its data directory: none that a server
  # answers to.
  [ ! -e "$work/k3/admin_token" ] && [ ! -e "$work/k3/ingest_key" ] ||
    fail "a refused start wrote keys: $(ls -A "$work/k3")"
  # So is a second server on the same port, with a data directory of its
  # own: the loops' SO_REUSEPORT sockets must not let it take a share of
  # the connections.
  timeout 10 "$FL" serve --listen "127.0.0.1:$PORT" --data "$work/k2" >/dev/null 2>"$work/e2"
  rc=$?; [ $rc != 0 ] && [ $rc != 124 ] || fail "second server on port $PORT: not refused (rc $rc)"
  grep -q 'in use' "$work/e2" || fail "second server on the port: $(cat "$work/e2")"
  grep -q 'give another --listen ADDR:PORT' "$work/e2" || fail "port in use: no way out said: $(cat "$work/e2")"
  # ... before it made a data directory, keys or a database.
  [ ! -e "$work/k2" ] || fail "a server refused the port made its data directory: $(ls -A "$work/k2")"
  ok "a second server on the same data directory or port is refused"
  # The kernel spreads connections over the HTTP threads (one listening
  # socket each): 16 connections, each thread gets some (all on one:
  # p = 2^-15).
  for fd in $(seq 20 35); do eval "exec $fd<>/dev/tcp/127.0.0.1/$PORT"; done
  m=
  for _ in $(seq 50); do
    m=$(curl -s "$(url /metrics)")
    n0=$(sed -n 's/^faultline_http_connections{thread="0"} //p' <<<"$m")
    n1=$(sed -n 's/^faultline_http_connections{thread="1"} //p' <<<"$m")
    [ "$((n0 + n1))" -ge 17 ] && break
    sleep 0.1
  done
  for fd in $(seq 20 35); do eval "exec $fd<&-"; done
  [ "${n0:-0}" -ge 1 ] && [ "${n1:-0}" -ge 1 ] && [ "$((n0 + n1))" -ge 17 ] ||
    fail "connections by thread: '$n0' '$n1'"
  ok "connections spread over the HTTP threads ($n0 + $n1)"
  stop || fail "shutdown rc"
  export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
  # Split roles: an API process and a worker process on one data directory.
  start "$work/r" --role api
  "$POST" log 4 1 roles 1.0 >"$work/a.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/a.log"); [ "$c" = 200 ] || fail "api role -> $c"
  "$FL" serve --role worker --data "$work/r" >/dev/null 2>>"$work/err" &
  wpid=$!
  "$POST" wait "$PORT" "$ADMIN" 1 20 roles >/dev/null || fail "the worker process did not process it"
  # A worker has no keys (it serves no API): one with a data directory of
  # its own on the API server's database, none in its environment, makes
  # and writes none -- and processes, and answers /healthz.
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  "$POST" log 4 2 roles 1.0 >"$work/b.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/b.log"); [ "$c" = 200 ] || fail "api role -> $c"
  env -u FAULTLINE_ADMIN_TOKEN -u FAULTLINE_INGEST_KEY "$FL" serve --role worker --listen 127.0.0.1:0 \
    --data "$work/rw" --db "sqlite:$work/r/faultline.db" >"$work/wout" 2>>"$work/err" &
  wpid=$!
  "$POST" wait "$PORT" "$ADMIN" 2 20 roles >/dev/null || fail "the worker on its own data directory did not process it"
  wport=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/wout" | grep -o '[0-9]*$')
  c=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$wport/healthz")
  [ "$c" = 200 ] || fail "a worker without keys: /healthz -> $c"
  [ ! -e "$work/rw/admin_token" ] && [ ! -e "$work/rw/ingest_key" ] ||
    fail "a worker wrote keys: $(ls -A "$work/rw")"
  # A --role all server, which forgets every lease at its start, is not
  # started beside a worker process; a second worker is.
  timeout 20 "$FL" serve --listen 127.0.0.1:0 --data "$work/r" >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 1 ] && grep -q "in use by another server (a --role all server, or --role worker processes" "$work/e" ||
    fail "--role all beside a worker: rc $rc $(cat "$work/e")"
  "$FL" serve --role worker --data "$work/r" >/dev/null 2>>"$work/err" &
  w2=$!
  sleep 1
  kill -0 $w2 || fail "a second worker process was refused: $(tail -2 "$work/err")"
  kill -TERM $w2; wait $w2 || fail "second worker exit status"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  stop || fail "shutdown rc"
  # Nor a worker beside a --role all server.
  start "$work/r"
  timeout 20 "$FL" serve --role worker --data "$work/r" >/dev/null 2>"$work/e"; rc=$?
  [ $rc = 1 ] && grep -q "is served by a --role all server" "$work/e" ||
    fail "a worker beside --role all: rc $rc $(cat "$work/e")"
  stop || fail "shutdown rc"
  ok "keys, lock, --role api + --role worker (no --role all beside a worker, nor the reverse)"
  ;;
clockstep)
  # The wall clock stepped back two hours (NTP after a suspend or a
  # migration, a clock corrected by hand) while the server idles.  Every
  # periodic wait used to end at a wall-clock deadline, which the step put
  # two hours further away: a worker process (--role worker, which polls
  # the queue every 500 ms, no commit of another process waking it)
  # processed nothing for two hours, and the watched directory, the
  # checkpoints and the writer's probe waited as long.  The shim makes a
  # step of libfaketime's clock reach a wait in progress, as a real step
  # does (tests/server/clockstep_shim.c says why libfaketime alone does not).
  ft=$(faketime_lib) || { echo "SKIP: libfaketime (Debian's faketime) is not installed"; exit 77; }
  [ -f "${FL_CLOCK_SHIM:-}" ] || fail "FL_CLOCK_SHIM: no such file: ${FL_CLOCK_SHIM:-}"
  export FAKETIME_TIMESTAMP_FILE=$work/clock FAKETIME_NO_CACHE=1 DONT_FAKE_MONOTONIC=1
  echo +0 >"$work/clock"
  clock_wrapper "$work/fl-clock" "$FL_CLOCK_SHIM" "$ft"
  FL_REAL=$FL FL=$work/fl-clock
  start "$work/d" --role api
  "$FL" serve --role worker --workers 1 --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  "$POST" log 31 1 clockapp 1.0 >"$work/c1.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/c1.log"); [ "$c" = 200 ] || fail "report 1 -> $c"
  "$POST" wait "$PORT" "$ADMIN" 1 20 clockapp >"$work/sum" || fail "report 1 not processed: $(cat "$work/sum")"
  sleep 1 # both processes idle, in their waits
  echo -2h >"$work/clock"
  "$POST" log 31 2 clockapp 1.0 >"$work/c2.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/c2.log"); [ "$c" = 200 ] || fail "report 2 -> $c"
  mkdir -p "$work/d/symbols/incoming"
  echo 'not a debug file' >"$work/d/symbols/incoming/notelf"
  t0=$(date +%s)
  "$POST" wait "$PORT" "$ADMIN" 2 10 clockapp >"$work/sum" ||
    fail "the worker processed nothing for 10 s after the wall clock went back 2 h (sum $(cat "$work/sum"))"
  for _ in $(seq 50); do [ -f "$work/d/symbols/failed/notelf" ] && break; sleep 0.2; done
  [ -f "$work/d/symbols/failed/notelf" ] ||
    fail "the watched directory was not looked at for 10 s after the wall clock went back 2 h"
  ok "wall clock 2 h back: the worker processed the next report within $(($(date +%s) - t0)) s, the watched directory was polled"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  stop || fail "shutdown rc"
  FL=$FL_REAL
  ;;
leaseclock)
  # A worker died holding a lease, and the wall clock was stepped back two
  # hours before the next worker started.  Leases were wall-clock times, so
  # its tasks stayed leased for the two hours too (and a step forward
  # expired the leases of live workers, whose tasks a second worker then
  # took).  They are monotonic seconds now, of the boot noted in the
  # database: the next worker takes the tasks once --lease has passed.
  ft=$(faketime_lib) || { echo "SKIP: libfaketime (Debian's faketime) is not installed"; exit 77; }
  # Under ASan the worker that libfaketime runs aborted at start, in the
  # store's open, about once in 20 runs (as libfaketime hangs the
  # reporter's ASan build: reporter_test.sh): the clock logic is the
  # plain build's to test.
  ldd "$FL" | grep libasan >/dev/null && { echo "SKIP: libfaketime aborts an ASan build now and then"; exit 77; }
  N=10
  start "$work/d" --role api
  : >"$work/ok"
  "$POST" stream "$PORT" "$KEY" $N 4 "$work/ok" 21 >/dev/null
  [ "$(sort -u "$work/ok" | wc -l)" = $N ] || fail "ingest: $(wc -l <"$work/ok") of $N"
  bad=$("$POST" log 21 3 | sed -n 's/^CRASH_ID //p')
  grep -qx "$bad" "$work/ok" || fail "no such crash id: $bad"
  ulimit -c 0
  FAULTLINE_TEST_CRASH_ON=$bad "$FL" serve --role worker --workers 1 --lease 2 --data "$work/d" \
    >/dev/null 2>>"$work/err"
  [ $? -ge 128 ] || fail "the worker did not die on $bad"
  [ "$("$POST" sum "$PORT" "$ADMIN" streamapp)" = 0 ] || fail "counted before the worker died"
  clock_wrapper "$work/fl-back" "$ft"
  FAKETIME=-2h DONT_FAKE_MONOTONIC=1 "$work/fl-back" serve --role worker --workers 1 --lease 2 \
    --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  "$POST" wait "$PORT" "$ADMIN" $N 15 streamapp >"$work/sum" ||
    fail "the dead worker's tasks stayed leased with the clock 2 h back: sum $(cat "$work/sum") of $N"
  ok "wall clock 2 h back: the dead worker's leased tasks taken again after --lease"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  # Leases noted in another boot (their workers ended with it), and a
  # wall-clock lease of an older server, are forgotten by a worker's first
  # claim rather than waited for.
  "$POST" stream "$PORT" "$KEY" $N 4 "$work/ok2" 22 >/dev/null
  python3 - "$work/d/faultline.db" <<'PY' || fail "cannot lease the tasks by hand"
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=10)
ids = [r[0] for r in db.execute("SELECT id FROM tasks ORDER BY id")]
assert len(ids) >= 2, ids
mono = int(time.clock_gettime(time.CLOCK_MONOTONIC))
db.execute("UPDATE tasks SET lease_until=? WHERE id=?", (mono + 3600, ids[0]))
db.execute("UPDATE tasks SET lease_until=? WHERE id=?", (int(time.time()) + 3600, ids[1]))
db.execute("UPDATE queue_clock SET boot='another boot'")
db.commit()
PY
  "$FL" serve --role worker --workers 1 --lease 2 --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  "$POST" wait "$PORT" "$ADMIN" $((2 * N)) 10 streamapp >"$work/sum" ||
    fail "leases of another boot were waited for: sum $(cat "$work/sum") of $((2 * N))"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  python3 - "$work/d/faultline.db" <<'PY' || fail "cannot lease a task by hand"
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("INSERT INTO tasks(crash_id, n, lease_until) VALUES('no-such-crash', 1, ?)", (int(time.time()) + 3600,))
db.commit()
PY
  "$FL" serve --role worker --workers 1 --lease 2 --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  for _ in $(seq 50); do metric_has '^faultline_queue_depth 0$' && break; sleep 0.2; done
  metric_has '^faultline_queue_depth 0$' || fail "a wall-clock lease of an older server was waited for"
  ok "leases of another boot, and an older server's wall-clock lease, forgotten at the first claim"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  stop || fail "shutdown rc"
  ;;
healthclock)
  # How long something lasted, in the log, was a difference of wall-clock
  # times: with the clock stepped back two hours meanwhile, a store that
  # failed for seconds "works again (after 1 failure over -7199 s)", and a
  # server waiting for PostgreSQL said "-7170 s so far" -- or rather said
  # nothing more for two hours, its line being due every 30 s by that clock.
  ft=$(faketime_lib) || { echo "SKIP: libfaketime (Debian's faketime) is not installed"; exit 77; }
  command -v prlimit >/dev/null || { echo "SKIP: prlimit missing"; exit 77; }
  export FAKETIME_TIMESTAMP_FILE=$work/clock FAKETIME_NO_CACHE=1 DONT_FAKE_MONOTONIC=1
  echo +0 >"$work/clock"
  clock_wrapper "$work/fl-clock" "$ft"
  FL_REAL=$FL FL=$work/fl-clock
  start "$work/d" --workers 0
  prlimit --pid "$PID" --fsize=4096: || fail "prlimit"
  "$POST" stream "$PORT" "$KEY" 1 1 "$work/ok_none" 6 >/dev/null
  [ ! -s "$work/ok_none" ] || fail "a report was stored past a 4 KiB limit"
  grep -q 'storage: ingest failed' "$work/err" || fail "no failure logged: $(tail -3 "$work/err")"
  echo -2h >"$work/clock"
  prlimit --pid "$PID" --fsize=unlimited || fail "prlimit"
  "$POST" stream "$PORT" "$KEY" 1 1 "$work/ok1" 7 >/dev/null
  [ -s "$work/ok1" ] || fail "not stored once the limit was lifted"
  for _ in $(seq 50); do grep -q 'storage: ingest works again' "$work/err" && break; sleep 0.1; done
  line=$(grep 'storage: ingest works again' "$work/err")
  over=$(sed -n 's/.* over \(-\?[0-9]*\) s)$/\1/p' <<<"$line")
  [ -n "$over" ] && [ "$over" -ge 0 ] && [ "$over" -lt 60 ] ||
    fail "the failure's length with the clock stepped back 2 h: $line"
  ok "store failing across a step of 2 h back: $line"
  stop || fail "shutdown rc"
  # A PostgreSQL that is not up yet: the server says so every 30 s.
  echo +0 >"$work/clock"
  pgport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$FL" serve --listen 127.0.0.1:0 --data "$work/w" --db "postgres://nobody@127.0.0.1:$pgport/none" \
    >/dev/null 2>"$work/werr" &
  PID=$!
  for _ in $(seq 50); do grep -q 'waiting for PostgreSQL' "$work/werr" && break; sleep 0.1; done
  grep -q 'waiting for PostgreSQL (0 s so far' "$work/werr" || fail "no waiting line: $(cat "$work/werr")"
  echo -2h >"$work/clock"
  for _ in $(seq 400); do [ "$(grep -c 'waiting for PostgreSQL' "$work/werr")" -ge 2 ] && break; sleep 0.1; done
  line=$(grep 'waiting for PostgreSQL' "$work/werr" | sed -n 2p)
  sofar=$(sed -n 's/.*waiting for PostgreSQL (\(-\?[0-9]*\) s so far.*/\1/p' <<<"$line")
  [ -n "$sofar" ] && [ "$sofar" -ge 29 ] && [ "$sofar" -le 40 ] ||
    fail "waiting for PostgreSQL across a step of 2 h back, 40 s on: ${line:-no second line}"
  ok "waiting for PostgreSQL across a step of 2 h back: ${line##*; }"
  kill -TERM "$PID"; wait "$PID"; PID=
  FL=$FL_REAL
  ;;
workerkill)
  # A worker process killed -9 in the middle of its batches: its leased
  # tasks are claimed again by another worker after the lease expires, and
  # nothing is lost or counted twice.
  N=5000
  start "$work/d" --role api
  : >"$work/ok"
  "$POST" stream "$PORT" "$KEY" $N 16 "$work/ok" 9 >/dev/null
  [ "$(sort -u "$work/ok" | wc -l)" = $N ] || fail "ingest: $(wc -l <"$work/ok") of $N"
  "$FL" serve --role worker --workers 1 --lease 2 --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  for _ in $(seq 400); do s=$("$POST" sum "$PORT" "$ADMIN" streamapp); [ "$s" -ge 300 ] && break; sleep 0.02; done
  kill -9 $wpid; wait $wpid 2>/dev/null
  s=$("$POST" sum "$PORT" "$ADMIN" streamapp)
  echo "worker killed with $s of $N counted"
  [ "$s" -gt 0 ] && [ "$s" -lt $N ] || fail "the kill did not land mid-processing ($s)"
  "$FL" serve --role worker --workers 2 --lease 2 --data "$work/d" >/dev/null 2>>"$work/err" &
  wpid=$!
  "$POST" wait "$PORT" "$ADMIN" $N 60 streamapp >"$work/sum" || fail "sum $(cat "$work/sum") != $N"
  sleep 3 # past a lease: a late redelivery would show now
  [ "$("$POST" sum "$PORT" "$ADMIN" streamapp)" = $N ] || fail "counted twice"
  metric_has '^faultline_queue_depth 0$' || fail "queue not empty"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  ok "worker killed mid-batch: every crash counted exactly once after re-lease"
  stop || fail "shutdown rc"
  ;;
gone)
  # Clients that send part of a request and close: libmicrohttpd (0.9.75)
  # misses the end of a connection whose last bytes came with it, and kept
  # 93 of 100 such connections open (CLOSE-WAIT) until --timeout.  The
  # loops' twice-a-second look lets each go; a client that only shut its
  # side down after a whole request still gets its answer.
  start "$work/d" --workers 0 --timeout 600
  python3 - "$PORT" "$KEY" "$DATA/mojocrash-example.crashlog" <<'PY' >"$work/gone.out" || fail "gone: $(cat "$work/gone.out")"
import socket, sys, time, urllib.request
port, key, log = int(sys.argv[1]), sys.argv[2].encode(), open(sys.argv[3], "rb").read()

def conns():
    m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port).read().decode()
    return sum(int(l.split()[-1]) for l in m.splitlines()
               if l.startswith("faultline_http_connections{")) - 1  # this one

for i in range(100):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" if i % 2 else
              b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nMOJO")
    s.close()
# Let go within a minute -- not the ten of --timeout.
left = conns()
for _ in range(120):
    if left == 0:
        break
    time.sleep(0.5)
    left = conns()
print("100 connections cut by their clients; open after:", left)

def half(req):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(60)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d

a = half(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
b = half(b"POST /api/v1/crashes HTTP/1.1\r\nHost: localhost\r\nX-Faultline-Key: " + key +
         b"\r\nContent-Length: %d\r\n\r\n" % len(log) + log)
print("half-closed after a whole request:", a.split(b"\r\n")[0].decode(), "/",
      b.split(b"\r\n")[0].decode())
sys.exit(0 if left == 0 and a.startswith(b"HTTP/1.1 200 ") and
         b.startswith(b"HTTP/1.1 200 ") and b'"accepted"' in b else 1)
PY
  ok "$(tr '\n' ';' <"$work/gone.out")"
  stop || fail "shutdown rc"
  ;;
hostile)
  # A log's lists are as long as its sender makes them, and the ingest key
  # is public.  180,000 OBJECTs and as many frames (8 MiB, ~820 KB gzip)
  # kept a worker busy for 38 s -- each frame looked for its object among
  # all of them --, so a report every few seconds stopped processing for
  # everyone (this one, with 160,000, took 30 s).  The worker now keeps the first 1024 objects and frames
  # (metadata.omitted says what it left out) and takes well under a second.
  start "$work/d" --workers 1
  python3 - "$work/quad.log" <<'PY'
import random, sys
random.seed(1)
n = 160000
L = ["FAULTLINE 1", "CRASHLOG_VERSION 2", "APPLICATION_NAME quad", "APPLICATION_VERSION 1.0",
     "CRASH_ID 0badc0de-0000-4000-8000-000000000001", "CRASH_SIGNAL 11"]
L += ["OBJECT o/%d/1" % (i * 16) for i in range(n)]
L += ["CALLSTACK %d" % (0x7f0000000000 + random.randrange(256) * 7) for _ in range(n)]
for t in range(300):  # more threads, and longer ones, than a log keeps
    L += ["THREAD %d" % (t + 1), "THREAD_FRAME 4096"] + ["THREAD_FRAME 8192"] * 150
L += ["TRACE %d 1 event %d" % (i, i) for i in range(3000)]
L.append("END")
open(sys.argv[1], "w").write("\n".join(L) + "\n")
PY
  gzip -9 "$work/quad.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Encoding: gzip' --data-binary @"$work/quad.log.gz")
  [ "$c" = 200 ] || fail "hostile log -> $c $(cat "$work/body")"
  t0=$SECONDS
  while [ $((SECONDS - t0)) -lt 15 ]; do
    admin "$(url /api/v1/crashes/0badc0de-0000-4000-8000-000000000001)" >"$work/c.json"
    grep -q '"state":"processed"' "$work/c.json" && break
    sleep 0.1
  done
  grep -q '"state":"processed"' "$work/c.json" || fail "not processed within 15 s"
  python3 - "$work/c.json" <<'PY' || fail "the capped crash: $(head -c 300 "$work/c.json")"
import json, sys
d = json.load(open(sys.argv[1]))
om = d["metadata"]["omitted"]
n = 160000
assert om == {"objects": n - 1024, "frames": n - 1024 + 256 * (151 - 128),
              "threads": 300 - 256, "trace": 3000 - 2048}, om
assert len(d["metadata"]["objects"]) == 1024
assert len(d["threads"]) == 257 and len(d["threads"][0]["frames"]) == 1024
assert all(len(t["frames"]) == 128 for t in d["threads"][1:])
assert len(d["trace"]) == 2048 and d["trace"][-1]["text"] == "event 2999"
PY
  ok "160,000 objects and frames: processed in $((SECONDS - t0)) s, the lists capped"
  # OBJECT_PATH names a file of the server the worker may read (a build id
  # must match): it must not even open anything but a regular file.  A
  # FIFO shows an open -- it lets the writer blocked on its other end go
  # on (so would a device that acts on open, a watchdog say).
  mkfifo "$work/fifo"
  ( exec 3>"$work/fifo"; : >"$work/fifo-opened" ) &
  writer=$!
  cat >"$work/fifo.log" <<EOF
FAULTLINE 1
CRASHLOG_VERSION 2
APPLICATION_NAME fifo
APPLICATION_VERSION 1.0
CRASH_ID 0badc0de-0000-4000-8000-000000000002
CRASH_SIGNAL 11
OBJECT fifo/4194304/65536/0
OBJECT_BUILD_ID 0123456789abcdef0123456789abcdef01234567
OBJECT_PATH $work/fifo
REGISTER rip 0x400100
REGISTER rsp 0x7ffc00000000
STACK 0x7ffc00000000 0000400000000000
CALLSTACK 4194560
CALLSTACK 4194600
END
EOF
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/fifo.log")
  [ "$c" = 200 ] || fail "fifo log -> $c $(cat "$work/body")"
  wait_processed 0badc0de-0000-4000-8000-000000000002 "$work/c.json"
  sleep 0.2
  opened=no; [ -e "$work/fifo-opened" ] && opened=yes
  kill -9 "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
  [ $opened = no ] || fail "the worker opened the FIFO an OBJECT_PATH named"
  ok "an OBJECT_PATH naming a FIFO: processed, the FIFO never opened"
  # A path the client cut at its start (OBJECT_PATH_CUT: longer than it
  # keeps) is shown as cut and never taken for a file, even one with the
  # right build id there; the objects a log left out are counted.  The
  # same log without the cut then resolves from that file, which shows
  # the path would have been used.
  bid=$(readelf -n "$POST" | sed -n 's/.*Build ID: *//p')
  mainaddr=$(nm "$POST" | awk '$3 == "main" {print $1}')
  [ -n "$bid" ] && [ -n "$mainaddr" ] || fail "no build id or main in $POST"
  cutlog() { # cutlog ID [CUT_LINES]
    printf 'FAULTLINE 1\nCRASHLOG_VERSION 2\nAPPLICATION_NAME cutpath\nAPPLICATION_VERSION 1.0\n'
    printf 'CRASH_ID %s\nCRASH_SIGNAL 11\n' "$1"
    printf 'OBJECT fl_post/%d/16777216/%d\nOBJECT_BUILD_ID %s\nOBJECT_PATH %s\n' \
      $((0x555500000000)) $((0x555500000000)) "$bid" "$POST"
    printf '%b' "${2:-}"
    printf 'CALLSTACK %d\nEND\n' $((0x555500000000 + 0x$mainaddr))
  }
  cutlog 0badc0de-0000-4000-8000-000000000003 'OBJECT_PATH_CUT 1200\nOBJECTS_OMITTED 40\nVFORK_PARENT 77\n' >"$work/cut.log"
  cutlog 0badc0de-0000-4000-8000-000000000004 >"$work/whole.log"
  for f in cut whole; do
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/$f.log")
    [ "$c" = 200 ] || fail "$f log -> $c $(cat "$work/body")"
    wait_processed 0badc0de-0000-4000-8000-00000000000$([ $f = cut ] && echo 3 || echo 4) "$work/$f.json"
  done
  python3 - "$work/cut.json" "$work/whole.json" <<'PY' || fail "cut path: $(head -c 600 "$work/cut.json")"
import json, sys
cut, whole = (json.load(open(f)) for f in sys.argv[1:])
m = cut["metadata"]
assert m["objects_omitted"] == 40, m.get("objects_omitted")
assert m["objects"][0]["path_cut"] == 1200, m["objects"][0]
assert "objects_omitted" not in whole["metadata"], whole["metadata"]
assert m["vfork_parent"] == 77 and "vfork_parent" not in whole["metadata"], m.get("vfork_parent")
assert "path_cut" not in whole["metadata"]["objects"][0], whole["metadata"]["objects"][0]
f = cut["threads"][0]["frames"][0]
assert f["module"] == "fl_post" and not f.get("function"), f
f = whole["threads"][0]["frames"][0]
assert f["function"] == "main", f
PY
  ok "OBJECT_PATH_CUT: shown as path_cut, the path not used for symbols; OBJECTS_OMITTED: objects_omitted; VFORK_PARENT: vfork_parent"
  stop || fail "shutdown rc"
  ;;
upgrade)
  # Today's server on a data directory an older version wrote: FL_UPGRADE_FROM
  # names a fixture of tests/data/upgrade (an SQL dump; see its README): 8
  # crashes processed in 6 groups, the largest streamapp group resolved, two
  # of the crashes from an old libfaultline (symbolicated, when that version
  # took uploads, from the debug file it lists), and 4 reports queued and
  # never processed (fl_post seed 2), plus a resend of a processed crash.
  from=${FL_UPGRADE_FROM:?FL_UPGRADE_FROM names a fixture of tests/data/upgrade}
  wpid=
  trap '[ -n "$wpid" ] && kill -9 $wpid 2>/dev/null; cleanup' EXIT
  [ -f "$DATA/upgrade/$from.sql" ] || fail "no fixture $DATA/upgrade/$from.sql"
  # load: a fresh copy of the old database in $work/d, in WAL mode as the
  # old server left it, its tasks leased by the old server's wall clock (as
  # a server killed -9 leaves them).  Prints the groups and the old-client
  # crashes it holds.
  load() {
    rm -rf "$work/d" && mkdir "$work/d"
    python3 - "$DATA/upgrade/$from.sql" "$work/d/faultline.db" <<'PY'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[2])
db.executescript(open(sys.argv[1]).read())
db.execute("PRAGMA journal_mode=WAL")
db.execute("UPDATE tasks SET lease_until=?", (int(time.time()) + 3600,))
db.commit()
merged = [c[1] for c in db.execute("PRAGMA table_info(groups)")].count("merged_into")
for r in db.execute("SELECT id, count, status, coalesce(resolved_in, '-') FROM groups%s ORDER BY id"
                    % (" WHERE merged_into IS NULL" if merged else "")):
    print("group", *r)
# A merge of generation 4 or before moved the merged group's crashes into
# the other (crashes.sig_group names where they came from); one of
# generation 5 moved none.
moved_col = [c[1] for c in db.execute("PRAGMA table_info(crashes)")].count("sig_group")
for r in db.execute("SELECT id, merged_into FROM groups WHERE merged_into IS NOT NULL" if merged else "SELECT 1 WHERE 0"):
    moved = db.execute("SELECT count(*) FROM crashes WHERE sig_group=?", (r[0],)).fetchone()[0] if moved_col else 0
    print("merged", *r, moved)
for r in db.execute("SELECT id FROM crashes WHERE app='symsrv' ORDER BY id"):
    print("client", r[0])
symbols = db.execute("SELECT count(*) FROM sqlite_master WHERE name='symbols'").fetchone()[0]
print("symbols", symbols)
PY
  }
  # The API and the worker process start at once, as a service manager
  # starts them after the upgrade: both must come up (each used to find a
  # column missing and add it, and the second stopped on "duplicate column
  # name" -- 19 starts in 20).  Five tries on fresh copies.
  for try in 1 2 3 4 5; do
    load >"$work/before" || fail "cannot load the fixture $from"
    "$FL" serve --role worker --workers 2 --listen 127.0.0.1:0 --data "$work/d" >"$work/wout" \
      2>>"$work/err" &
    wpid=$!
    start "$work/d" --role api
    for _ in $(seq 100); do grep -q 'listening on' "$work/wout" && break; sleep 0.1; done
    grep -q 'listening on' "$work/wout" && kill -0 $wpid 2>/dev/null ||
      fail "try $try: the worker process did not start beside the API process"
    [ $try = 5 ] && break
    kill -TERM $wpid; wait $wpid || fail "worker exit status"
    stop || fail "shutdown rc"
  done
  ok "$from: API and worker processes started together on it, five times"
  "$POST" wait "$PORT" "$ADMIN" 12 20 >"$work/sum" ||
    fail "the queued reports were not processed: sum $(cat "$work/sum") of 8 + 4"
  for i in 0 1 2 3; do
    id=$("$POST" log 2 $i | sed -n 's/^CRASH_ID //p')
    api "/api/v1/crashes/$id" >"$work/c.json" || fail "queued crash $id: not found"
    grep -q '"state":"processed"' "$work/c.json" || fail "queued crash $id: $(cat "$work/c.json")"
  done
  ok "$from: the 4 queued reports processed (wall-clock leases of the old server forgotten), the resend not counted"
  api /api/v1/groups >"$work/groups.json" || fail "groups"
  python3 - "$work/before" "$work/groups.json" <<'PY' || fail "groups changed: $(cat "$work/groups.json")"
import json, sys
now = {g["id"]: g for g in json.load(open(sys.argv[2]))["groups"]}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] != "group":
        continue
    g = now.get(f[1])
    assert g, "group %s is gone" % f[1]
    assert g["count"] >= int(f[2]), (f, g)
    assert g["status"] == f[3] and (g["resolved_in"] or "-") == f[4], (f, g)
PY
  grep -q '"status":"resolved"' "$work/groups.json" || fail "no resolved group"
  ok "$from: every group kept with its count, status and resolved-in version"
  # A merge the old version made: the merged id forwards, the group's crash
  # list is its count.  Where the merge moved the crashes (generation 4 or
  # before), an unmerge has them processed again, which moves them back
  # (202); where it moved none, the unmerge is done at once (200).
  while read -r _ m into moved; do
    [ "$(api "/api/v1/groups/$m" | field id)" = "$into" ] || fail "merged $m does not read as $into"
    n=$(api "/api/v1/groups/$into" | python3 -c 'import json, sys; print(json.load(sys.stdin)["count"])')
    api "/api/v1/groups/$into/crashes" | grep -q "\"total\":$n," || fail "the crashes of $into: not $n: $(api "/api/v1/groups/$into/crashes")"
    c=$(code POST "/api/v1/groups/$m/unmerge" -H "Authorization: Bearer $ADMIN")
    if [ "$moved" -gt 0 ]; then
      [ "$c" = 202 ] && grep -q '"queued":[1-9]' "$work/body" || fail "unmerge of an old merge -> $c $(cat "$work/body")"
    else
      [ "$c" = 200 ] && grep -q '"queued":0' "$work/body" || fail "unmerge of a merge that moved nothing -> $c $(cat "$work/body")"
    fi
    q=$(grep -o '"queued":[0-9]*' "$work/body" | cut -d: -f2)
    for _ in $(seq 100); do metric_has '^faultline_queue_depth 0$' && break; sleep 0.1; done
    count() { api "/api/v1/groups/$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["count"])'; }
    total() { api "/api/v1/groups/$1/crashes" | python3 -c 'import json, sys; print(json.load(sys.stdin)["total"])'; }
    a=$(count "$m"); b=$(count "$into")
    [ "$(api "/api/v1/groups/$m" | field id)" = "$m" ] && [ "$a" = "$(total "$m")" ] && [ "$b" = "$(total "$into")" ] &&
      [ $((a + b)) = "$n" ] && [ "$a" -ge "$q" ] ||
      fail "after the unmerge: $m $a (listed $(total "$m")), $into $b (listed $(total "$into")), $n before, $q queued"
    ok "$from: an old merge ($m into $into, $moved crashes moved) reads the same; unmerged, its $q moved crashes processed again and back"
  done < <(grep '^merged ' "$work/before")
  with_symbols=$(awk '$1 == "symbols" {print $2}' "$work/before")
  for id in $(awk '$1 == "client" {print $2}' "$work/before"); do
    api "/api/v1/crashes/$id" >"$work/c.json" || fail "old client crash $id: not found"
    grep -q '"state":"processed"' "$work/c.json" || fail "old client crash $id: $(cat "$work/c.json")"
    if [ "$with_symbols" = 1 ]; then
      grep -q '"function":"symsrv_' "$work/c.json" || fail "old client crash $id: frames lost their names"
    fi
  done
  if [ "$with_symbols" = 1 ]; then
    api /api/v1/symbols | grep -q '"name":"crash.debug"' || fail "the upload is not listed"
  fi
  ok "$from: the old client's crashes and their frames, the uploads listed"
  "$POST" log 3 0 >"$work/new.log"
  c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" --data-binary @"$work/new.log")
  [ "$c" = 200 ] || fail "a new report -> $c $(cat "$work/body")"
  "$POST" wait "$PORT" "$ADMIN" 13 20 >"$work/sum" || fail "the new report: sum $(cat "$work/sum")"
  api "/api/v1/trends?app=streamapp" >/dev/null || fail "trends"
  # Architectures are counted from the upgrade on: the new report's group
  # has its x86-64, the old crashes none.
  id=$(sed -n 's/^CRASH_ID //p' "$work/new.log")
  wait_processed "$id" "$work/c.json"
  g=$(field group_id <"$work/c.json")
  api "/api/v1/groups/$g" | python3 -c '
import json, sys
g = json.load(sys.stdin)
a = {x["arch"]: x["count"] for x in g["arch"]}
assert a.get("x86-64", 0) >= 1 and sum(a.values()) <= g["count"], (a, g["count"])' ||
    fail "the new report's group: architectures $(api "/api/v1/groups/$g" | grep -o '"arch":\[[^]]*\]')"
  kill -TERM $wpid; wait $wpid || fail "worker exit status"
  stop || fail "shutdown rc"
  # And once more as one --role all server: nothing counted twice.
  start "$work/d"
  sleep 1
  [ "$("$POST" sum "$PORT" "$ADMIN")" = 13 ] || fail "after a restart: sum $("$POST" sum "$PORT" "$ADMIN")"
  metric_has '^faultline_queue_depth 0$' || fail "tasks left in the queue"
  ok "$from: a new report counted; a restart counts nothing again"
  stop || fail "shutdown rc"
  ;;
oldlock)
  # Versions before faultline.db.lock held DIR/serve.lock, and an old --role
  # all server ran beside a new one on the same database: crashes counted
  # but left unprocessed, one signature split over two groups.  Where
  # DIR/serve.lock exists, a --role all server holds it too.  A python
  # process stands for the old server (it took the same flock(2) lock).
  start "$work/d" --workers 0
  stop || fail "shutdown rc"
  [ -e "$work/d/serve.lock" ] && fail "serve.lock made in a directory no older version served"
  : >"$work/d/serve.lock"
  python3 -c 'import fcntl, sys, time
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)' "$work/d/serve.lock" >"$work/holder" &
  holder=$!
  for _ in $(seq 50); do grep -q locked "$work/holder" && break; sleep 0.1; done
  "$FL" serve --listen 127.0.0.1:0 --data "$work/d" >"$work/out" 2>"$work/e" &
  p=$!
  for _ in $(seq 50); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
  if kill -0 $p 2>/dev/null; then
    kill -9 $p; kill $holder
    fail "a server started beside an older one holding DIR/serve.lock"
  fi
  wait $p && fail "exit status 0"
  grep -q 'in use by a server of an older version' "$work/e" || fail "message: $(cat "$work/e")"
  ok "an older server holding serve.lock: $(cat "$work/e")"
  kill $holder; wait $holder 2>/dev/null
  start "$work/d"
  python3 -c 'import fcntl, sys
fcntl.flock(open(sys.argv[1]), fcntl.LOCK_EX | fcntl.LOCK_NB)' "$work/d/serve.lock" 2>/dev/null &&
    fail "a running server does not hold serve.lock"
  ok "a running server holds serve.lock, so an older one is refused"
  stop || fail "shutdown rc"
  ;;
logtime)
  # serve --log-time: every line of the log (stderr) and of the banner
  # (stdout) starts with its UTC time (always; auto, the default, unless
  # the stream is the systemd journal's, which JOURNAL_STREAM names as
  # DEVICE:INODE); none with never; usage errors never.
  # stamped FILE WHAT: each line of FILE starts with a stamp, whose time
  # lies between $t0 and $t1 (seconds): UTC whatever TZ the server had.
  stamped() {
    local line t
    [ -s "$1" ] || fail "$2: nothing in $1"
    while IFS= read -r line; do
      grep -Eq "^${STAMP}faultline( serve)?: " <<<"$line" || fail "$2: not stamped: $line"
      t=$(date -u -d "${line%%Z *}Z" +%s) || fail "$2: not a time: $line"
      [ "$t" -ge "$t0" ] && [ "$t" -le "$t1" ] || fail "$2: $line: $t not in $t0..$t1"
    done <"$1"
  }
  plain() { # FILE WHAT: no line starts with a stamp
    [ -s "$1" ] || fail "$2: nothing in $1"
    grep -Ev '^faultline( serve)?: ' "$1" && fail "$2: a line not plain"
    return 0
  }
  unset JOURNAL_STREAM
  # always, with a clock zone far from UTC; and a runtime line (SIGHUP).
  t0=$(date +%s)
  : >"$work/err"
  TZ=Asia/Tokyo start "$work/d" --log-time always
  kill -HUP "$PID"
  for _ in $(seq 50); do grep -q 'grouping rules read again' "$work/err" && break; sleep 0.1; done
  stop || fail "shutdown rc"
  t1=$(($(date +%s) + 1))
  grep -q 'grouping rules read again' "$work/err" || fail "no SIGHUP line: $(cat "$work/err")"
  grep -q 'shutting down' "$work/err" || fail "no shutdown line: $(cat "$work/err")"
  stamped "$work/out" "always, stdout"
  stamped "$work/err" "always, stderr"
  ok "always: $(head -1 "$work/out" | cut -c1-60)... / $(grep -m1 SIGHUP "$work/err")"
  # The default (auto) outside systemd: stamped as well.
  t0=$(date +%s)
  : >"$work/err"
  start "$work/d"
  stop || fail "shutdown rc"
  t1=$(($(date +%s) + 1))
  stamped "$work/out" "auto, stdout"
  stamped "$work/err" "auto, stderr"
  ok "auto without JOURNAL_STREAM: stamped"
  # never: plain lines.
  : >"$work/err"
  start "$work/d" --log-time never
  stop || fail "shutdown rc"
  plain "$work/out" "never, stdout"
  plain "$work/err" "never, stderr"
  ok "never: $(head -1 "$work/err")"
  # auto with stderr in the journal (JOURNAL_STREAM names the file stderr
  # is appended to): stderr plain, stdout (another file) still stamped.
  # Naming another file, or garbage, changes nothing.
  : >"$work/err"
  t0=$(date +%s)
  JOURNAL_STREAM=$(stat -c '%d:%i' "$work/err") start "$work/d"
  stop || fail "shutdown rc"
  t1=$(($(date +%s) + 1))
  plain "$work/err" "auto, stderr in the journal"
  stamped "$work/out" "auto, stdout beside the journal"
  ok "auto, JOURNAL_STREAM=stderr's: stderr plain, stdout stamped"
  for js in "$(stat -c '%d:%i' "$work/out")" "$(stat -c '%d' "$work/err"):x" "banana"; do
    : >"$work/err"
    t0=$(date +%s)
    JOURNAL_STREAM=$js start "$work/d"
    stop || fail "shutdown rc"
    t1=$(($(date +%s) + 1))
    stamped "$work/err" "auto, JOURNAL_STREAM=$js, stderr"
  done
  # and --log-time never under the journal, always under it.
  : >"$work/err"
  t0=$(date +%s)
  JOURNAL_STREAM=$(stat -c '%d:%i' "$work/err") start "$work/d" --log-time always
  stop || fail "shutdown rc"
  t1=$(($(date +%s) + 1))
  stamped "$work/err" "always, stderr in the journal"
  ok "JOURNAL_STREAM naming stdout's file, a bad value: stderr stamped; always wins"
  # A start-up failure is a log line too; a usage error is not.
  "$FL" serve --listen 127.0.0.1:0 --data "$work/d/faultline.db" --log-time always >/dev/null 2>"$work/e"
  [ $? = 1 ] && grep -Eq "^${STAMP}faultline serve: --data .*: not a directory" "$work/e" ||
    fail "start-up failure: $(cat "$work/e")"
  "$FL" serve --log-time sometimes >/dev/null 2>"$work/e"
  [ $? = 64 ] && [ "$(cat "$work/e")" = "faultline serve: --log-time wants auto, always or never; see faultline serve --help" ] ||
    fail "--log-time sometimes: $(cat "$work/e")"
  "$FL" serve --log-time always --frob >/dev/null 2>"$work/e"
  [ $? = 64 ] && [ "$(cat "$work/e")" = "faultline serve: unknown option '--frob'; see faultline serve --help" ] ||
    fail "usage error after --log-time always: $(cat "$work/e")"
  ok "start-up failure stamped, usage errors plain"
  ;;
*) fail "unknown case $case_" ;;
esac
echo "PASS: $case_"
