#!/usr/bin/env bash
# What an operator sees while PostgreSQL or RabbitMQ is away:  outage.sh FAULTLINE FL_POST
#
#   - a worker whose processing failed while the database was away turns
#     /healthz 200 again by itself once the database is back, with no
#     crash arriving to tell it (its own test write, as the writer's);
set -uo pipefail
FL=$1 POST=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/fl-outage.XXXXXX)
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
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  type rmq_stop_all >/dev/null 2>&1 && rmq_stop_all
  type pg_stop >/dev/null 2>&1 && pg_stop
  rm -rf "$work"
}
trap cleanup EXIT
. "$here/../lib/postgres.sh"
pg_start

serve() { # serve NAME ARGS...: pid in PID_NAME, port in PORT_NAME
  local name=$1; shift
  : >"$work/$name.out"
  "$FL" serve --listen 127.0.0.1:0 --data "$work/$name" "$@" >"$work/$name.out" 2>>"$work/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  printf -v "PID_$name" %s "$pid"
  for _ in $(seq 150); do
    if grep -q 'worker running' "$work/$name.out" 2>/dev/null &&
      grep -q 'listening on' "$work/$name.out" 2>/dev/null ||
      grep -q 'portal: open' "$work/$name.out" 2>/dev/null; then
      printf -v "PORT_$name" %s "$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/$name.out" | grep -o '[0-9]*$')"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || fail "$name exited at start: $(cat "$work/$name.err")"
    sleep 0.1
  done
  fail "$name did not start"
}
healthz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/healthz"; }

# 1. An idle worker (the queue in PostgreSQL: its claims fail while the
# database is away) turns healthy again once it is back.
serve wq --role worker --workers 1 --db "$PGURL"
pgport=${PGURL##*:}; pgport=${pgport%%/*}
pg_stop
h=
for _ in $(seq 100); do h=$(healthz "$PORT_wq"); [ "$h" = 503 ] && break; sleep 0.1; done
[ "$h" = 503 ] || fail "worker /healthz with the database away: $h"
pg_ctl_start "$pgport" || fail "PostgreSQL did not start again"
t0=$SECONDS
for _ in $(seq 100); do h=$(healthz "$PORT_wq"); [ "$h" = 200 ] && break; sleep 0.1; done
[ "$h" = 200 ] || fail "worker /healthz still $h 10 s after the database came back (no crash arrived)"
grep -q 'storage: processing works again' "$work/wq.err" || fail "the worker did not log its recovery"
ok "an idle worker's /healthz: 503 with the database away, 200 $((SECONDS - t0)) s after it is back"
kill -TERM "$PID_wq"; wait "$PID_wq" || fail "exit status of wq"

PIDS=()
echo "PASS: outage"
