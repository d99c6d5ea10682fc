#!/usr/bin/env bash
# Scale-out end to end:  run.sh FAULTLINE FL_POST E2E_CRASHER [amqp|pg]
#
# Two API servers and two worker processes share one PostgreSQL and, with
# amqp (the default), one RabbitMQ, all real and on loopback; with pg the
# queue is the store's own table (--db postgres://... alone).  Shows that
#   - reports posted to either API server are processed by either worker
#     and counted once, resends through the other server included;
#   - both API servers answer the same groups;
#   - a worker killed -9 in the middle of its work loses nothing and
#     counts nothing twice (the broker gives its unacked tasks back; the
#     table's lease expires);
#   - an API server killed -9 in the middle of a stream: every report it
#     answered 200 is stored and counted once;
#   - amqp: with the broker away, reports are still accepted (stored), and
#     their tasks are published once it is back (the sweep), so none is
#     lost; pg: after the database restarted, every server reconnects and
#     reports flow again;
#   - a debug file uploaded to an API server reaches a worker with another
#     data directory (another machine) through the store.
set -uo pipefail
FL=$1 POST=$2 CRASHER=$3 QUEUE=${4:-amqp}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/fl-scaleout.XXXXXX)
chmod 755 "$work" # PostgreSQL runs as postgres and keeps its cluster here
ADMIN=test-admin-token KEY=test-ingest-key
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
PIDS=()
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
  exit 1
}
ok() { echo "ok: $*"; }
cleanup() {
  # Only ours: a bare `wait` would also wait for the broker's processes.
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  type rmq_stop_all >/dev/null 2>&1 && rmq_stop_all
  type pg_stop >/dev/null 2>&1 && pg_stop
  rm -rf "$work"
}
trap cleanup EXIT

. "$here/../lib/postgres.sh"
. "$here/../lib/rabbitmq.sh"
t0=$SECONDS
pg_start
if [ "$QUEUE" = amqp ]; then
  rmq_start
  echo "PostgreSQL at $PGURL, RabbitMQ at ${AMQP_URL%%@*}@... ($((SECONDS - t0)) s to start both)"
  ENGINES=(--db "$PGURL" --queue "$AMQP_URL")
  QNAME=amqp
else
  echo "PostgreSQL at $PGURL, the queue in it ($((SECONDS - t0)) s to start)"
  ENGINES=(--db "$PGURL")
  QNAME=postgres
fi

# serve NAME ARGS...: a server in the background; its pid in $PID_<NAME>,
# its port (API roles) in $PORT_<NAME>.
serve() {
  local name=$1 p=; shift
  # Emptied here, not by the background job's redirection: a restarted
  # server's wait below must not read the port its predecessor printed
  # before the job has forked (seen under CI load).
  : >"$work/$name.out"
  "$FL" serve --listen 127.0.0.1:0 --data "$work/$name" "${ENGINES[@]}" "$@" \
    >"$work/$name.out" 2>>"$work/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  printf -v "PID_$name" %s "$pid"
  for _ in $(seq 150); do
    if grep -q 'worker running\|listening on' "$work/$name.out" 2>/dev/null; then
      p=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/$name.out" | grep -o '[0-9]*$')
      printf -v "PORT_$name" %s "$p"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || fail "$name exited at start: $(cat "$work/$name.err")"
    sleep 0.1
  done
  fail "$name did not start"
}
# counted_once PORT OK_FILE TOTAL WHAT: the app's count reaches TOTAL,
# stays there (nothing counted twice), and every id in OK_FILE (answered
# 200) is stored.
counted_once() {
  "$POST" wait "$1" "$ADMIN" "$3" 120 streamapp >"$work/sum" || fail "$4: $(cat "$work/sum") of $3"
  sleep 2
  [ "$("$POST" sum "$1" "$ADMIN" streamapp)" = "$3" ] || fail "$4: counted twice"
  "$POST" check "$1" "$ADMIN" "$2" >/dev/null || fail "$4: a report answered 200 is missing"
}
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
groups_json() {
  curl -fsS -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$1/api/v1/groups?limit=200"
}

serve a --role api
serve b --role api
grep -q "store postgres, queue $QNAME" "$work/a.out" || fail "engines not named: $(cat "$work/a.out")"
serve w1 --role worker --workers 2
serve w2 --role worker --workers 2

# 1. 2,000 reports through each API server; the first 500 of a's sent again
# through b: 4,000 distinct crashes.
N=2000
: >"$work/ok_a"; : >"$work/ok_b"; : >"$work/ok_dup"
"$POST" stream "$PORT_a" "$KEY" $N 8 "$work/ok_a" 11 >/dev/null &
spid=$!
"$POST" stream "$PORT_b" "$KEY" $N 8 "$work/ok_b" 12 >/dev/null
wait $spid
"$POST" stream "$PORT_b" "$KEY" 500 4 "$work/ok_dup" 11 >/dev/null
# A report may be answered 503 (a transaction that met a concurrent one
# is refused, and a client sends it again): what counts is that every
# report answered 200 is counted once, and nothing else.  Nearly all are.
T=$(sort -u "$work/ok_a" "$work/ok_b" "$work/ok_dup" | wc -l)
[ "$T" -ge $((2 * N * 99 / 100)) ] || fail "ingest: only $T of $((2 * N)) answered 200"
[ "$(wc -l <"$work/ok_dup")" -ge 495 ] || fail "resends not accepted"
"$POST" wait "$PORT_a" "$ADMIN" "$T" 120 streamapp >"$work/sum" ||
  fail "processed: $(cat "$work/sum") of $T"
"$POST" check "$PORT_b" "$ADMIN" "$work/ok_a" >/dev/null || fail "a's reports not all found through b"
groups_json "$PORT_a" >"$work/ga.json" && groups_json "$PORT_b" >"$work/gb.json" || fail "groups"
cmp -s "$work/ga.json" "$work/gb.json" || fail "the two API servers answer different groups"
ok "$T crashes through two API servers, 500 resent through the other: each counted once"

[ "$(metric "$PORT_a" faultline_queue_depth)" = 0 ] || fail "backlog left: $(metric "$PORT_a" faultline_queue_depth)"
# Competing consumers: both worker processes took a share, and their
# shares add up to the crashes (plus the resends each dropped).
p1= p2=
for w in w1 w2; do
  pid=PID_$w; kill -TERM "${!pid}"; wait "${!pid}" || fail "$w exit status"
done
p1=$(grep -o 'processing [0-9]* crashes' "$work/w1.err" | grep -o '[0-9]*')
p2=$(grep -o 'processing [0-9]* crashes' "$work/w2.err" | grep -o '[0-9]*')
d1=$(grep -o '[0-9]* second copies' "$work/w1.err" | grep -o '^[0-9]*')
d2=$(grep -o '[0-9]* second copies' "$work/w2.err" | grep -o '^[0-9]*')
echo "worker 1 processed $p1 (dropped $d1), worker 2 $p2 (dropped $d2)"
[ "${p1:-0}" -gt 0 ] && [ "${p2:-0}" -gt 0 ] || fail "one worker did all the work"
[ $((p1 + p2)) = "$T" ] || fail "workers processed $((p1 + p2)) of $T"
ok "two worker processes shared the queue"

# 2. A worker killed -9 mid-work: the broker gives its unacked tasks to
# the next worker, or their lease in the table expires (5 s here, not the
# default 60).  A backlog first, then a worker killed while it works on it.
: >"$work/ok_c"
"$POST" stream "$PORT_a" "$KEY" $N 8 "$work/ok_c" 13 >/dev/null
serve w1 --role worker --workers 2 --lease 5
base=$T
for _ in $(seq 600); do
  s=$("$POST" sum "$PORT_a" "$ADMIN" streamapp); [ "$s" -ge $((base + 200)) ] && break; sleep 0.02
done
kill -9 "$PID_w1"; wait "$PID_w1" 2>/dev/null
s=$("$POST" sum "$PORT_a" "$ADMIN" streamapp)
echo "worker killed with $((s - base)) of $N new crashes counted"
[ "$s" -lt $((base + N)) ] || fail "the kill did not land mid-processing ($s)"
serve w3 --role worker --workers 2
C=$(sort -u "$work/ok_c" | wc -l)
[ "$C" -ge $((N * 99 / 100)) ] || fail "ingest: only $C of $N answered 200"
counted_once "$PORT_b" "$work/ok_c" $((base + C)) "after the kill"
ok "a worker killed -9 mid-work: its tasks went to a new worker, each counted once"

# 3. An API server killed -9 in the middle of a stream: each report it
# answered 200 is stored and counted once.
: >"$work/ok_k"
"$POST" stream "$PORT_b" "$KEY" 3000 16 "$work/ok_k" 14 >"$work/stream_k" &
spid=$!
for _ in $(seq 500); do [ "$(wc -l <"$work/ok_k")" -ge 600 ] && break; sleep 0.01; done
kill -9 "$PID_b"; wait "$PID_b" 2>/dev/null
wait $spid
k=$(sort -u "$work/ok_k" | wc -l)
echo "API server b killed after $k reports answered 200"
[ "$k" -gt 0 ] && [ "$k" -lt 3000 ] || fail "the kill did not land mid-stream ($k)"
base=$((base + C))
# What b committed but never published is the sweep's: run a's with a
# short wait so the test need not sit out the default 30 s.
kill -TERM "$PID_a"; wait "$PID_a"
serve a --role api --republish-after 2
d=
for _ in $(seq 300); do
  d=$(metric "$PORT_a" faultline_queue_depth); [ "$d" = 0 ] && break; sleep 0.2
done
[ "$d" = 0 ] || fail "backlog after the API kill: ${d:-no answer from a on port $PORT_a}"
"$POST" check "$PORT_a" "$ADMIN" "$work/ok_k" >"$work/check" || fail "answered 200 but missing: $(cat "$work/check")"
total=$("$POST" sum "$PORT_a" "$ADMIN" streamapp)
# Every report answered 200 is counted; b may have stored a few more
# whose answers the kill cut off.
[ "$total" -ge $((base + k)) ] && [ "$total" -le $((base + 3000)) ] || fail "count $total"
ok "API server killed -9 mid-stream: all $k reports it answered 200 stored and counted once"
base=$total

# 4. amqp: the broker away: reports are still accepted (they are stored),
# their tasks published by the sweep once it is back.  pg: the database
# restarted: each server's connections fail once, then reconnect (and the
# waiting workers LISTEN again), and reports flow as before.
if [ "$QUEUE" = amqp ]; then
  rmq_stop
  : >"$work/ok_p"
  "$POST" stream "$PORT_a" "$KEY" 300 4 "$work/ok_p" 15 >/dev/null
  P=$(sort -u "$work/ok_p" | wc -l)
  [ "$P" -ge 297 ] || fail "broker away: $P of 300 accepted"
  [ "$(metric "$PORT_a" faultline_queue_publish_failed_total)" -gt 0 ] || fail "no failed publish counted"
  [ "$(metric "$PORT_a" faultline_queue_depth)" = "$P" ] || fail "backlog while away: $(metric "$PORT_a" faultline_queue_depth)"
  rmq_start
  "$POST" wait "$PORT_a" "$ADMIN" $((base + P)) 120 streamapp >"$work/sum" ||
    fail "broker back: $(cat "$work/sum") of $((base + P))"
  [ "$(metric "$PORT_a" faultline_queue_republished_total)" -ge "$P" ] || fail "not republished by the sweep"
  ok "broker away: $P reports accepted and stored, published by the sweep when it came back, counted once"
else
  pg_restart
  : >"$work/ok_p"
  # Each server's old connections are found dead by their next statement,
  # which runs again on a new connection.
  "$POST" stream "$PORT_a" "$KEY" 300 4 "$work/ok_p" 15 >/dev/null
  P=$(sort -u "$work/ok_p" | wc -l)
  [ "$P" -ge 297 ] || fail "after the restart: $P of 300 accepted"
  counted_once "$PORT_a" "$work/ok_p" $((base + P)) "after the restart"
  ok "PostgreSQL restarted: $P reports accepted and processed after it, counted once"
fi

# 5. Debug files through the store: a real crash, its program uploaded to
# API server a (data in $work/a), processed by worker w3 (data in
# $work/w3), which has never seen the file: the program's own path is gone
# too, so nothing but the store can give w3 the symbols.
export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:verify_asan_link_order=0
mkdir -p "$work/bin" "$work/upload"
cp "$CRASHER" "$work/bin/crasher"
FAULTLINE_SPOOL=$work/spool E2E_VERSION=2.0 "$work/bin/crasher" null 2>/dev/null
[ $? = 139 ] || fail "crasher did not crash"
mv "$work/bin/crasher" "$work/upload/crasher"
"$FL" symbols add "$work/upload/crasher" --server "http://127.0.0.1:$PORT_a" >"$work/sym.out" 2>&1 ||
  fail "symbols add: $(cat "$work/sym.out")"
"$FL" submit "$work"/spool/*.crashlog --server "http://127.0.0.1:$PORT_a/api/v1/crashes" \
  --key "$KEY" >"$work/submit.out" 2>&1 || fail "submit: $(cat "$work/submit.out")"
got=
for _ in $(seq 150); do
  got=$(curl -fsS -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT_a/api/v1/groups?app=e2eapp" |
    python3 -c '
import json, sys
g = json.load(sys.stdin)["groups"]
print(" ".join(x.get("signature") or "" for x in g))' 2>/dev/null)
  [ -n "$got" ] && break
  sleep 0.2
done
grep -q parse_record <<<"$got" || fail "frames of the uploaded program not symbolized by w3: '$got'"
ls "$work"/w3/symbols/processed/*/executable >/dev/null 2>&1 || fail "w3 did not fetch the file"
ok "a debug file uploaded to API server a symbolized the crash on worker w3 (signature $got)"

for p in "$PID_a" "$PID_w3"; do kill -TERM "$p"; wait "$p" || fail "exit status of $p"; done
PIDS=()
echo "PASS: scaleout"
