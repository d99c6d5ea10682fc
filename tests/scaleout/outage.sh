#!/usr/bin/env bash
# What an operator sees while PostgreSQL or RabbitMQ is away:  outage.sh FAULTLINE FL_POST
#
#   - a worker whose processing failed while the database was away turns
#     /healthz 200 again by itself once the database is back, with no
#     crash arriving to tell it (its own test write, as the writer's);
#   - an API server whose publishes fail (broker away) says so in its log
#     -- once, then a count every 10 s, then that it works again -- while
#     ingest goes on answering 200, and every report is counted once;
#   - a server started while PostgreSQL or RabbitMQ is away waits for it
#     (saying so) instead of exiting.
set -uo pipefail
FL=$1 POST=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/cluster.sh"
cluster_init fl-outage
. "$here/../lib/postgres.sh"
. "$here/../lib/rabbitmq.sh"
pg_start
rmq_start

healthz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/healthz"; }
# early NAME WHAT ARGS...: a server started while WHAT (PostgreSQL,
# RabbitMQ) is away waits for it, says so, and does not exit.
early() {
  local name=$1 what=$2; shift 2
  "$FL" serve --listen 127.0.0.1:0 --data "$work/$name" "$@" >"$work/$name.out" 2>>"$work/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  printf -v "PID_$name" %s "$pid"
  for _ in $(seq 100); do grep -q "waiting for $what" "$work/$name.err" && break; sleep 0.1; done
  grep -q "; waiting for $what (0 s so far; tried every second)" "$work/$name.err" ||
    fail "$name started with $what away: $(cat "$work/$name.err")"
  sleep 1.5
  kill -0 "$pid" 2>/dev/null || fail "$name exited while $what was away: $(cat "$work/$name.err")"
}
# up NAME: the server early() started runs (its worker said so).
up() {
  for _ in $(seq 150); do grep -q 'worker running' "$work/$1.out" && return 0; sleep 0.1; done
  fail "$1 did not start once the service was back: $(tail -3 "$work/$1.err")"
}

# 1. An idle worker (the queue in PostgreSQL: its claims fail while the
# database is away) turns healthy again once it is back.
serve wq --role worker --workers 1 --db "$PGURL"
pgport=${PGURL##*:}; pgport=${pgport%%/*}
pg_stop
h=
for _ in $(seq 100); do h=$(healthz "$PORT_wq"); [ "$h" = 503 ] && break; sleep 0.1; done
[ "$h" = 503 ] || fail "worker /healthz with the database away: $h"
early wl PostgreSQL --role worker --workers 1 --db "$PGURL"
pg_ctl_start "$pgport" || fail "PostgreSQL did not start again"
up wl
ok "a worker started while the database was away waited for it, then ran"
kill -TERM "$PID_wl"; wait "$PID_wl" || fail "exit status of wl"
t0=$SECONDS
for _ in $(seq 100); do h=$(healthz "$PORT_wq"); [ "$h" = 200 ] && break; sleep 0.1; done
[ "$h" = 200 ] || fail "worker /healthz still $h 10 s after the database came back (no crash arrived)"
grep -q 'storage: processing works again' "$work/wq.err" || fail "the worker did not log its recovery"
ok "an idle worker's /healthz: 503 with the database away, 200 $((SECONDS - t0)) s after it is back"
kill -TERM "$PID_wq"; wait "$PID_wq" || fail "exit status of wq"

# 1b. The read and admin routes of an API server whose connection to the
# database broke answer 503 with Retry-After ("come back"), not 500.
serve r --role api --db "$PGURL"
curl -fsS -o /dev/null -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT_r/api/v1/groups" ||
  fail "GET /api/v1/groups with the database up"
pg_stop
# An idle API server (no report arrives to find out) says so in /healthz
# within its ping's 5 s.
h=
for _ in $(seq 80); do h=$(healthz "$PORT_r"); [ "$h" = 503 ] && break; sleep 0.1; done
[ "$h" = 503 ] || fail "an idle API server's /healthz with the database away: $h"
for route in /api/v1/groups /api/v1/projects /api/v1/groups/0123456789abcdef; do
  code=$(curl -s -D "$work/r.hdr" -o "$work/r.body" -w '%{http_code}' -H "Authorization: Bearer $ADMIN" \
    "http://127.0.0.1:$PORT_r$route")
  [ "$code" = 503 ] && grep -qi '^Retry-After: 5' "$work/r.hdr" && grep -q 'store unavailable' "$work/r.body" ||
    fail "GET $route with the database away: $code $(cat "$work/r.body")"
done
pg_ctl_start "$pgport" || fail "PostgreSQL did not start again"
code=
for _ in $(seq 50); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT_r/api/v1/groups")
  [ "$code" = 200 ] && break
  sleep 0.1
done
[ "$code" = 200 ] || fail "GET /api/v1/groups after the database came back: $code"
for _ in $(seq 50); do h=$(healthz "$PORT_r"); [ "$h" = 200 ] && break; sleep 0.1; done
[ "$h" = 200 ] || fail "an idle API server's /healthz after the database came back: $h"
ok "an idle API server with the database away: /healthz 503, read routes 503 and Retry-After; then 200 once it is back"
kill -TERM "$PID_r"; wait "$PID_r" || fail "exit status of r"

# 2. The broker away: the API server's log says its publishes fail and
# what becomes of them, without a line per report, and when they work
# again; every report answered 200 is counted once.
serve a --role api --db "$PGURL" --queue "$AMQP_URL" --republish-after 2
serve w --role worker --workers 2 --db "$PGURL" --queue "$AMQP_URL"
rmq_stop
: >"$work/ok1"
FL_POST_DELAY_US=5000 "$POST" stream "$PORT_a" "$KEY" 200 2 "$work/ok1" 21 >/dev/null
n1=$(sort -u "$work/ok1" | wc -l)
[ "$n1" -ge 198 ] || fail "broker away: only $n1 of 200 accepted"
grep -q 'queue: cannot publish tasks: cannot connect to amqp://127.0.0.1:[0-9]*: connection refused; their reports are stored (answered 200) and published again by the sweep' \
  "$work/a.err" || fail "no log line about the publishes that failed: $(cat "$work/a.err")"
[ "$(grep -c 'queue: ' "$work/a.err")" -le 3 ] || fail "the log floods: $(grep -c 'queue: ' "$work/a.err") lines"
early wb RabbitMQ --role worker --workers 1 --db "$PGURL" --queue "$AMQP_URL"
rmq_start
up wb
ok "a worker started while the broker was away waited for it, then ran"
: >"$work/ok2"
"$POST" stream "$PORT_a" "$KEY" 20 1 "$work/ok2" 22 >/dev/null
for _ in $(seq 100); do grep -q 'queue: publishing works again' "$work/a.err" && break; sleep 0.1; done
grep -q 'queue: publishing works again ([0-9]* tasks not published over [0-9]* s' "$work/a.err" ||
  fail "no log line once publishing works again: $(cat "$work/a.err")"
T=$(sort -u "$work/ok1" "$work/ok2" | wc -l)
"$POST" wait "$PORT_a" "$ADMIN" "$T" 60 streamapp >"$work/sum" || fail "processed: $(cat "$work/sum") of $T"
sleep 1
[ "$("$POST" sum "$PORT_a" "$ADMIN" streamapp)" = "$T" ] || fail "counted twice"
"$POST" check "$PORT_a" "$ADMIN" <(sort -u "$work/ok1" "$work/ok2") >/dev/null || fail "a report answered 200 is missing"
ok "broker away: the API server logged it ($(grep -c 'queue: ' "$work/a.err") lines), all $T reports counted once"
for p in "$PID_a" "$PID_w" "$PID_wb"; do kill -TERM "$p"; wait "$p" || fail "exit status of $p"; done
PIDS=()
echo "PASS: outage"
