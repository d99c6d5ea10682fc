#!/usr/bin/env bash
# An API server and a broker that is away or does not answer:
#   broker_late.sh FAULTLINE FL_POST SYMSRV_CRASH SYMSRV_CRASH.debug
#
#   1. An API server started while RabbitMQ is not up yet listens at once
#      (it does not wait for the broker, as a worker does): it answers
#      reports 200, and /healthz 200 "degraded" naming the queue (not 503:
#      it keeps reports).  Once the broker runs on that port, /healthz
#      turns "ok", and a worker processes every
#      report it answered, each counted once.  A wrong password is still a
#      refusal that ends the start.
#   2. A broker that stops answering with its sockets open (SIGSTOP):
#      reports are still answered 200 at once -- the answer waits for the
#      commit in PostgreSQL, never for the broker (its confirm or
#      handshake timeouts held the writer for 10-15 s at a time), and so
#      is a reprocess (its HTTP thread published itself, and waited 5 s
#      for a handshake) -- and /healthz says the queue is failing.  After
#      SIGCONT all are processed, each counted once.  So is the upload of
#      a debug file for a crash processed without it (its backfill's
#      tasks were published on the HTTP thread, 5 s for the handshake);
#      after SIGCONT the crash is processed again, symbolized.
#   3. The queue deleted (rabbitmqctl delete_queue) with no worker
#      running to declare it again: the broker drops what is published to
#      it -- and confirms it, so its reports were marked published and
#      waited for a rescue that comes only once the broker is empty.
#      Published mandatory, such a task comes back: its reports are
#      published again by the sweep while other tasks wait, and all are
#      processed, each counted once.
set -uo pipefail
FL=$1 POST=$2 SYMCRASH=$3 SYMDEBUG=$4
# No network: the worker finds the debug file nowhere but in the store.
unset DEBUGINFOD_URLS
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/cluster.sh"
cluster_init fl-brokerlate
. "$here/../lib/postgres.sh"
. "$here/../lib/rabbitmq.sh"
STOPPED=
# A stopped broker first gets going again, or rmq_stop (rabbitmqctl)
# would wait on it.
cleanup() {
  [ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null
  cluster_cleanup
}
trap cleanup EXIT

pg_start
RMQ_PORT=$(rmq_free_port) || fail "no free port for RabbitMQ"
URL="amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f"
healthz() { curl -s -o "$work/healthz" -w '%{http_code}' "http://127.0.0.1:$1/healthz"; }
# submit PORT I OUT: post generated log I (seed 31) with curl, at most 30 s;
# appends "CODE SECONDS" to OUT.
submit() {
  "$POST" log 31 "$2" >"$work/log"
  curl -s -o /dev/null -m 30 -w '%{http_code} %{time_total}\n' -H "X-Faultline-Key: $KEY" \
    -H 'Content-Type: text/plain' --data-binary @"$work/log" \
    "http://127.0.0.1:$1/api/v1/crashes" >>"$3"
}
ids() { # ids FROM TO: the crash ids of generated logs FROM..TO (seed 31)
  for i in $(seq "$1" "$2"); do "$POST" log 31 "$i" | awk '$1 == "CRASH_ID" {print $2}'; done
}

# 1. The broker not up yet.
serve a --role api --db "$PGURL" --queue "$URL" --republish-after 2
grep -q "connection refused; serving without RabbitMQ until it answers" "$work/a.err" ||
  fail "no log line about serving without the broker: $(cat "$work/a.err")"
h=$(healthz "$PORT_a")
[ "$h" = 200 ] && grep -q '"status":"degraded"' "$work/healthz" && grep -q '"queue":{"error":"cannot connect to amqp://127.0.0.1:'"$RMQ_PORT"': connection refused"' "$work/healthz" ||
  fail "/healthz with the broker not up yet: $h $(cat "$work/healthz")"
: >"$work/t1"
for i in $(seq 1 20); do submit "$PORT_a" "$i" "$work/t1"; done
[ "$(grep -c '^200 ' "$work/t1")" = 20 ] || fail "reports with the broker not up yet: $(sort "$work/t1" | uniq -c)"
ok "an API server started without its broker listens: 20 reports answered 200, /healthz 200 degraded, naming the queue"
rmq_start
[ "$AMQP_URL" = "$URL" ] || fail "the broker is not where the server looks: $AMQP_URL"
for _ in $(seq 300); do h=$(healthz "$PORT_a"); [ "$h" = 200 ] && grep -q '"status":"ok"' "$work/healthz" && break; sleep 0.2; done
[ "$h" = 200 ] && grep -q '"status":"ok"' "$work/healthz" || fail "/healthz 60 s after the broker started: $h $(cat "$work/healthz")"
# A refusal is no broker not up yet: an API server with a wrong password
# still ends its start, saying why.
timeout 60 "$FL" serve --listen 127.0.0.1:0 --data "$work/bad" --role api --db "$PGURL" \
  --queue "amqp://guest:wr0ng@127.0.0.1:$RMQ_PORT/%2f" >/dev/null 2>"$work/bad.log"
rc=$?
[ "$rc" = 1 ] && grep -q 'ACCESS_REFUSED' "$work/bad.log" && ! grep -q 'serving without' "$work/bad.log" ||
  fail "an API server with a wrong broker password: rc $rc $(cat "$work/bad.log")"
serve w --role worker --workers 2 --db "$PGURL" --queue "$URL"
"$POST" wait "$PORT_a" "$ADMIN" 20 60 streamapp >"$work/sum" || fail "processed: $(cat "$work/sum") of 20"
ids 1 20 >"$work/ok1"
"$POST" check "$PORT_a" "$ADMIN" "$work/ok1" >/dev/null || fail "a report answered 200 is missing"
ok "once the broker runs: /healthz 200, all 20 reports processed"
# A crash of a stripped program, processed without its symbols: the upload
# of its debug file in step 2 queues it again.
mkdir -p "$work/spool"
{ (ulimit -c 0; exec env ASAN_OPTIONS=handle_segv=0:handle_abort=0:detect_leaks=0 \
  FAULTLINE_SPOOL="$work/spool" "$SYMCRASH" deep); } 2>/dev/null && fail "symsrv_crash did not crash"
slog=$(ls "$work"/spool/*.crashlog 2>/dev/null | head -1)
[ -n "$slog" ] || fail "symsrv_crash left no crash log"
curl -s -o "$work/sbody" -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' \
  --data-binary @"$slog" "http://127.0.0.1:$PORT_a/api/v1/crashes" >/dev/null
sid=$(grep -o '"id":"[^"]*"' "$work/sbody" | head -1 | cut -d'"' -f4)
[ -n "$sid" ] || fail "the symsrv crash: $(cat "$work/sbody")"
scrash() { curl -s -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT_a/api/v1/crashes/$sid" >"$work/sc"; }
for _ in $(seq 300); do scrash; grep -q '"state":"processed"' "$work/sc" && break; sleep 0.2; done
grep -q '"state":"processed"' "$work/sc" || fail "the symsrv crash is not processed: $(head -c 300 "$work/sc")"
grep -q '"function":"symsrv_fault"' "$work/sc" && fail "the symsrv crash symbolized before its upload"

# 2. The broker stopped with its sockets open.
# The node's Erlang VM (beam.smp), as the node wrote its pid.
beam=$(cat "$work/rmq/pid" 2>/dev/null)
[ -n "$beam" ] && grep -q beam "/proc/$beam/comm" 2>/dev/null || fail "no pid of the broker's beam: '$beam'"
STOPPED=$beam
kill -STOP "$STOPPED" || fail "cannot stop the broker"
: >"$work/t2"
# Over a few seconds: the writer's sweep, which held the answers, ran
# every second (--republish-after 2).
for i in $(seq 21 40); do submit "$PORT_a" "$i" "$work/t2"; sleep 0.2; done
# An admin route that queues a crash again publishes off its HTTP thread
# too (the thread's own connection waited 5 s for the handshake).
rid=$(head -1 "$work/ok1")
curl -s -o /dev/null -m 30 -w '%{http_code} %{time_total}\n' -X POST -H "Authorization: Bearer $ADMIN" \
  "http://127.0.0.1:$PORT_a/api/v1/crashes/$rid/reprocess" >"$work/t3"
read -r rcode rtime <"$work/t3"
[ "$rcode" = 202 ] || fail "reprocess with the broker stopped: $(cat "$work/t3")"
# So does the upload of a debug file whose crashes it queues again (its
# HTTP thread waited 5 s for the handshake).
curl -s -o "$work/up" -m 30 -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $ADMIN" \
  -H 'X-Faultline-Name: symsrv_crash.debug' --data-binary @"$SYMDEBUG" \
  "http://127.0.0.1:$PORT_a/api/v1/symbols" >"$work/t4"
read -r ucode utime <"$work/t4"
[ "$ucode" = 201 ] || fail "upload with the broker stopped: $(cat "$work/t4") $(cat "$work/up")"
echo "answers with the broker stopped (code, seconds):" $(cat "$work/t2") "; reprocess: $rcode $rtime; upload: $ucode $utime"
awk '$2 >= 5' "$work/t3" | grep -q . && fail "reprocess took $rtime s with the broker stopped"
awk '$2 >= 5' "$work/t4" | grep -q . && fail "the upload took $utime s with the broker stopped"
[ "$(grep -c '^200 ' "$work/t2")" = 20 ] || fail "reports with the broker stopped: $(sort "$work/t2" | uniq -c)"
# The publisher's confirm or handshake waits up to 5 s, the sweep's
# queue.declare 10 s: an answer that took as long waited for the broker.
slow=$(awk '$2 >= 5' "$work/t2" | wc -l)
[ "$slow" = 0 ] || fail "$slow answers took 5 s or more with the broker stopped: $(cat "$work/t2")"
for _ in $(seq 300); do h=$(healthz "$PORT_a"); grep -q '"queue":{"error":' "$work/healthz" && break; sleep 0.2; done
[ "$h" = 200 ] && grep -q '"queue":{"error":' "$work/healthz" ||
  fail "/healthz with the broker stopped: $h $(cat "$work/healthz")"
ok "broker stopped: 20 reports answered 200 in $(awk '{ if ($2 > m) m = $2 } END { print m }' "$work/t2") s at most, an upload in $utime s; /healthz 200 degraded: $(cat "$work/healthz")"
kill -CONT "$STOPPED"
STOPPED=
"$POST" wait "$PORT_a" "$ADMIN" 40 90 streamapp >"$work/sum" || fail "processed: $(cat "$work/sum") of 40"
sleep 2
[ "$("$POST" sum "$PORT_a" "$ADMIN" streamapp)" = 40 ] || fail "counted twice"
ids 21 40 >"$work/ok2"
"$POST" check "$PORT_a" "$ADMIN" "$work/ok2" >/dev/null || fail "a report answered 200 is missing"
for _ in $(seq 300); do
  curl -s -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT_a/api/v1/crashes/$rid" >"$work/rc"
  grep -q '"state":"processed"' "$work/rc" && break
  sleep 0.2
done
grep -q '"state":"processed"' "$work/rc" || fail "the crash queued again is not processed: $(head -c 300 "$work/rc")"
for _ in $(seq 300); do h=$(healthz "$PORT_a"); [ "$h" = 200 ] && grep -q '"status":"ok"' "$work/healthz" && break; sleep 0.2; done
[ "$h" = 200 ] && grep -q '"status":"ok"' "$work/healthz" || fail "/healthz after the broker answers again: $h $(cat "$work/healthz")"
for _ in $(seq 300); do scrash; grep -q '"function":"symsrv_fault"' "$work/sc" && break; sleep 0.2; done
grep -q '"function":"symsrv_fault"' "$work/sc" || fail "the crash re-queued by the upload is not processed again: $(head -c 600 "$work/sc")"
curl -s -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT_a/api/v1/groups?app=symsrv" >"$work/sg"
[ "$(grep -o '"count":[0-9]*' "$work/sg")" = '"count":1' ] || fail "the re-queued crash's groups: $(cat "$work/sg")"
ok "broker running again: all 40 reports processed, each counted once, the one queued again too, the upload's crash symbolized (counted once); /healthz 200"

# 3. The queue deleted with no worker to declare it again.
kill -TERM "$PID_w"; wait "$PID_w" || fail "exit status of w"
metric() { curl -s "http://127.0.0.1:$PORT_a/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
rep0=$(metric faultline_queue_republished_total)
[ -n "$rep0" ] || fail "no faultline_queue_republished_total"
rmq_ctl delete_queue faultline.tasks >/dev/null || fail "cannot delete the broker's queue"
# Reports until the broker holds a task again (declared again by a's
# publisher), and at least 10: the queue is not empty from then on (no
# worker), so no rescue of an empty broker publishes a lost task again.
: >"$work/t5"
last=40 held=0
while [ "$last" -lt 100 ]; do
  last=$((last + 1))
  submit "$PORT_a" "$last" "$work/t5"
  held=$(rmq_ctl list_queues name messages 2>/dev/null | awk '$1 == "faultline.tasks" {print $2}')
  [ "${held:-0}" -ge 1 ] && [ "$last" -ge 50 ] && break
  sleep 0.2
done
[ "${held:-0}" -ge 1 ] || fail "the broker holds no task after $((last - 40)) reports"
[ "$(grep -c '^200 ' "$work/t5")" = $((last - 40)) ] || fail "reports after the delete: $(sort "$work/t5" | uniq -c)"
grep -q "the broker returned a message (312 NO_ROUTE)" "$work/a.err" ||
  fail "no log line about a task the deleted queue returned"
# The returned tasks' reports are published again by the sweep
# (--republish-after 2), into a queue that holds tasks.
rep=
for _ in $(seq 300); do rep=$(metric faultline_queue_republished_total); [ "${rep:-0}" -gt "$rep0" ] && break; sleep 0.2; done
[ "${rep:-0}" -gt "$rep0" ] || fail "the reports of the returned tasks were not published again ($rep0 -> $rep)"
serve w --role worker --workers 2 --db "$PGURL" --queue "$URL"
"$POST" wait "$PORT_a" "$ADMIN" "$last" 90 streamapp >"$work/sum" || fail "processed: $(cat "$work/sum") of $last"
sleep 2
[ "$("$POST" sum "$PORT_a" "$ADMIN" streamapp)" = "$last" ] || fail "counted twice"
ids 41 "$last" >"$work/ok3"
"$POST" check "$PORT_a" "$ADMIN" "$work/ok3" >/dev/null || fail "a report answered 200 is missing"
ok "queue deleted: $((last - 40)) reports, $((rep - rep0)) published again after the broker returned their tasks; all processed, each counted once"
for p in "$PID_a" "$PID_w"; do kill -TERM "$p"; wait "$p" || fail "exit status of $p"; done
PIDS=()
echo "PASS: broker_late"
