#!/usr/bin/env bash
# Scale-out benchmark:  bench/server/scaleout.sh BUILD_DIR
#
# The same `faultline serve` on the embedded default (SQLite + its queue)
# and on the scale-out engines -- PostgreSQL alone (its own queue table),
# and PostgreSQL + RabbitMQ; a real PostgreSQL and RabbitMQ started here on
# loopback, as tests/scaleout does -- side by side in one run, on the same
# cores:
#   1. ingest: wrk posting 4 KiB logs over CONNS connections to one API
#      server (no workers), every 200 durable in every store; rounds
#      alternate between the three, medians shown;
#   2. processing: the backlog each one stored, drained by WORKERS worker
#      threads (SQLite: in the server; scale-out: one worker process, then
#      two worker processes of WORKERS/2 threads).
# Every store fsyncs each commit (SQLite WAL synchronous=FULL; PostgreSQL
# fsync=on, synchronous_commit=on) and RabbitMQ confirms each persistent
# message.  The two PostgreSQL configurations use two databases of one
# server.  Environment: ROUNDS (3), SECONDS_PER_RUN (8), CONNS (64),
# WORKERS (2).
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
FL=$build/src/cli/faultline
ROUNDS=${ROUNDS:-3} DUR=${SECONDS_PER_RUN:-8} CONNS=${CONNS:-64} WORKERS=${WORKERS:-2}
command -v wrk >/dev/null || { echo "bench/server/scaleout: wrk missing (scripts/deps.sh --bench)"; exit 1; }
[ -x "$FL" ] || { echo "bench/server/scaleout: $FL not built"; exit 1; }
work=$(mktemp -d /tmp/fl-bench-scaleout.XXXXXX)
chmod 755 "$work"
fail() { echo "bench/server/scaleout: $*" >&2; exit 1; }
. "$here/../../tests/lib/cluster.sh"
trap cluster_cleanup EXIT
export FAULTLINE_ADMIN_TOKEN=bench-admin FAULTLINE_INGEST_KEY=bench-key
. "$here/lib.sh"
. "$here/../../tests/lib/postgres.sh"
. "$here/../../tests/lib/rabbitmq.sh"
make_log_template "$work/log.tmpl"
export FL_LOG=$work/log.tmpl FL_KEY=bench-key
pg_start
rmq_start
PG=(--db "$PGURL" --queue "$AMQP_URL")
pgport=${PGURL##*:} pgport=${pgport%%/*}
pg_as "$PGBIN/createdb" -h 127.0.0.1 -p "$pgport" -U postgres faultline_q >/dev/null 2>&1 ||
  fail "createdb faultline_q"
PGQ=(--db "${PGURL%/*}/faultline_q")

# srv NAME ARGS...: a server in the background; SPID, SPORT.
srv() {
  local name=$1; shift
  : >"$work/$name.out"
  "$FL" serve --listen 127.0.0.1:0 --data "$work/$name" --max-pending 65536 \
    --max-backlog 100000000 "$@" >"$work/$name.out" 2>>"$work/$name.err" &
  SPID=$!
  PIDS+=("$SPID")
  for _ in $(seq 150); do
    grep -q 'listening on\|worker running' "$work/$name.out" && break
    sleep 0.1
  done
  SPORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/$name.out" | grep -o '[0-9]*$')
}
halt() { kill -TERM "$1"; wait "$1"; }
wrk_run() { # URL RUN -> "reqs p99_ms"
  FL_RUN=$2 wrk -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$here/post.lua" "$1" >"$work/wrk.out" 2>&1
  echo "$(awk '/^Requests\/sec:/{print $2}' "$work/wrk.out") $(wrk_p99 "$work/wrk.out")"
}
median() { sort -g | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

# 1. Ingest, alternating.
sq_r= sq_p= pq_r= pq_p= pg_r= pg_p=
for r in $(seq "$ROUNDS"); do
  srv sqlite --workers 0
  read -r a b < <(wrk_run "http://127.0.0.1:$SPORT/api/v1/crashes" "$r")
  sq_r="$sq_r $a" sq_p="$sq_p $b"
  halt "$SPID"
  srv pgqapi --role api "${PGQ[@]}"
  read -r a b < <(wrk_run "http://127.0.0.1:$SPORT/api/v1/crashes" "$((r + 200))")
  pq_r="$pq_r $a" pq_p="$pq_p $b"
  halt "$SPID"
  srv pgapi --role api "${PG[@]}"
  read -r a b < <(wrk_run "http://127.0.0.1:$SPORT/api/v1/crashes" "$((r + 100))")
  pg_r="$pg_r $a" pg_p="$pg_p $b"
  failed=$(metric "$SPORT" faultline_queue_publish_failed_total)
  [ "${failed:-0}" = 0 ] || echo "note: $failed publishes refused in round $r"
  halt "$SPID"
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
SR=$(med "$sq_r") SP=$(med "$sq_p") QR=$(med "$pq_r") QP=$(med "$pq_p") PR=$(med "$pg_r") PP=$(med "$pg_p")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{print (b>0)?a/b:0}'; }
echo
echo "scale-out ingest: one API server, wrk -t2 -c$CONNS -d${DUR}s, 4 KiB logs, median of $ROUNDS rounds ($(nproc) cores, PostgreSQL and RabbitMQ on the same cores)"
printf '%-44s %12s %9s %10s\n' "" "requests/s" "p99 ms" "ratio"
printf '%-44s %12.0f %9.2f %10s\n' "embedded: SQLite + its queue" "$SR" "$SP" 1
printf '%-44s %12.0f %9.2f %10.2f\n' "scale-out: PostgreSQL alone (queue table)" "$QR" "$QP" "$(ratio "$QR" "$SR")"
printf '%-44s %12.0f %9.2f %10.2f\n' "scale-out: PostgreSQL + RabbitMQ" "$PR" "$PP" "$(ratio "$PR" "$SR")"
echo "rounds: embedded$sq_r; PostgreSQL alone$pq_r; PostgreSQL + RabbitMQ$pg_r"

# 2. Processing the backlogs.
drain() { # PORT -> seconds until the backlog is 0
  local t0 t1 d
  t0=$(date +%s.%N)
  for _ in $(seq 12000); do
    d=$(metric "$1" faultline_queue_depth)
    [ "$d" = 0 ] && break
    sleep 0.05
  done
  t1=$(date +%s.%N)
  awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.2f", a-b}'
}
rate() { awk -v n="$1" -v s="$2" 'BEGIN{print (s>0)?n/s:0}'; }
row() { printf '%-60s %10s %8s %12.0f\n' "$1" "$2" "$3" "$(rate "$2" "$3")"; }
srv sqlite --workers "$WORKERS"
start_sq=$(metric "$SPORT" faultline_queue_depth)
s_sq=$(drain "$SPORT")
halt "$SPID"
# drain_scaleout NAME ENGINE_ARGS...: an API server (for the depth), the
# first half of its backlog drained by one worker process, the rest by
# two; sets DS=(crashes1 seconds1 crashes2 seconds2).
drain_scaleout() {
  local name=$1 api apiport half target d t0 t1 done1 s1 wa wb rest s2
  shift
  srv "${name}api" --role api "$@"
  api=$SPID apiport=$SPORT
  half=$(metric "$apiport" faultline_queue_depth)
  srv "${name}w1" --role worker --workers "$WORKERS" "$@"
  t0=$(date +%s.%N)
  target=$((half / 2))
  for _ in $(seq 12000); do
    d=$(metric "$apiport" faultline_queue_depth); [ "$d" -le "$target" ] && break; sleep 0.05
  done
  t1=$(date +%s.%N)
  done1=$((half - d))
  s1=$(awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.2f", a-b}')
  halt "$SPID"
  srv "${name}w2a" --role worker --workers $(((WORKERS + 1) / 2)) "$@"
  wa=$SPID
  srv "${name}w2b" --role worker --workers $((WORKERS / 2 > 0 ? WORKERS / 2 : 1)) "$@"
  wb=$SPID
  rest=$(metric "$apiport" faultline_queue_depth)
  s2=$(drain "$apiport")
  halt "$wa"; halt "$wb"; halt "$api"
  DS=("$done1" "$s1" "$rest" "$s2")
}
drain_scaleout pgq "${PGQ[@]}"
q1=${DS[0]} qs1=${DS[1]} q2=${DS[2]} qs2=${DS[3]}
drain_scaleout pg "${PG[@]}"
p1=${DS[0]} ps1=${DS[1]} p2=${DS[2]} ps2=${DS[3]}
echo
echo "scale-out processing: the backlog ingest stored, drained by $WORKERS worker threads"
printf '%-60s %10s %8s %12s\n' "" "crashes" "seconds" "crashes/s"
row "embedded: SQLite, $WORKERS threads in the server" "$start_sq" "$s_sq"
row "PostgreSQL alone: one worker process, $WORKERS threads" "$q1" "$qs1"
row "PostgreSQL alone: two worker processes, $WORKERS threads in all" "$q2" "$qs2"
row "PostgreSQL + RabbitMQ: one worker process, $WORKERS threads" "$p1" "$ps1"
row "PostgreSQL + RabbitMQ: two worker processes, $WORKERS threads in all" "$p2" "$ps2"
