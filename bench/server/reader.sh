#!/usr/bin/env bash
# Ingest beside a long reader:  bench/server/reader.sh BUILD_DIR
#
# Past 64 MiB of WAL the checkpointer runs a RESTART checkpoint so that the
# WAL starts over; it takes the write lock and then waits for every reader
# still on an older snapshot.  A long read (an API answer over a large
# store) used to hold every commit with it.  This bench posts with wrk as
# bench/server/run.sh does, for SECONDS_PER_RUN, alone and -- side by side,
# rounds alternating -- with a second process holding a read transaction on
# the database for HOLD seconds from the run's second second; it prints
# the rate, p99 and maximum latency of each (and wrk's timeouts: requests
# unanswered after 2 s, which its latencies leave out), and the checkpointer's RESTARTs
# done and deferred (they give way after ~10 ms and try again a second
# later).  Environment: ROUNDS (3), SECONDS_PER_RUN (12), HOLD (6),
# CONNS (64).
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
FL=$build/src/cli/faultline
ROUNDS=${ROUNDS:-3} DUR=${SECONDS_PER_RUN:-12} HOLD=${HOLD:-6} CONNS=${CONNS:-64}
for t in wrk python3; do
  command -v $t >/dev/null || { echo "bench/server/reader: $t missing (scripts/deps.sh --bench)"; exit 1; }
done
[ -x "$FL" ] || { echo "bench/server/reader: $FL not built"; exit 1; }
work=$(mktemp -d /tmp/fl-bench-reader.XXXXXX)
SPID= RPID=
cleanup() {
  [ -n "$RPID" ] && kill "$RPID" 2>/dev/null
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export FAULTLINE_ADMIN_TOKEN=bench-admin FAULTLINE_INGEST_KEY=bench-key
make_log_template "$work/log.tmpl"
export FL_LOG=$work/log.tmpl FL_KEY=bench-key

# metric NAME: its value, "-" when the server has no such metric (an older build).
metric() { curl -s "http://127.0.0.1:$SPORT/metrics" | awk -v m="$1" '$1 == m {v = $2} END{print (v == "") ? "-" : v}'; }
median() { sort -g | awk '$1 == "-" {d = 1} {a[NR]=$1} END{if (d) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# ms VALUE: wrk's "12.3ms" / "850us" / "1.2s" in ms.
ms() { awk -v v="$1" 'BEGIN{if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) sub(/ms$/,"",v); else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; print v}'; }

# run ROUND READER(0|1) FILE: appends "reqs p99_ms max_ms restarts deferred
# timeouts" to FILE.  wrk gives up on a request after 2 s and leaves it out
# of its latencies: a stall longer than that shows as timeouts.
run() {
  rm -rf "$work/data"
  start_server --workers 0
  if [ "$2" = 1 ]; then
    (sleep 2; exec python3 -c "
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute('BEGIN')
c.execute('SELECT count(*) FROM sqlite_master').fetchone()
time.sleep(float(sys.argv[2]))
c.execute('COMMIT')
" "$work/data/faultline.db" "$HOLD") &
    RPID=$!
  fi
  FL_RUN=$1 wrk -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$here/post.lua" \
    "http://127.0.0.1:$SPORT/api/v1/crashes" >"$work/wrk.out" 2>&1
  [ -n "$RPID" ] && { wait "$RPID"; RPID=; }
  local rps p99 max tmo
  rps=$(awk '/^Requests\/sec:/{print $2}' "$work/wrk.out")
  p99=$(wrk_p99 "$work/wrk.out")
  max=$(ms "$(awk '$1 == "Latency" {print $4; exit}' "$work/wrk.out")")
  tmo=$(awk '/Socket errors/{for (i = 1; i < NF; i++) if ($i == "timeout") print $(i + 1)}' "$work/wrk.out")
  echo "${rps:-0} ${p99:-0} ${max:-0} $(metric faultline_sqlite_wal_restarts_total) $(metric faultline_sqlite_wal_restarts_deferred_total) ${tmo:-0}" >>"$3"
  stop_server
}

for r in $(seq "$ROUNDS"); do
  run "$r" 0 "$work/alone"
  run "$((r + 100))" 1 "$work/beside"
done
alone=$(cat "$work/alone") beside=$(cat "$work/beside")
col() { awk -v c="$2" 'NF {print $c}' <<<"$1" | median; }
echo
echo "ingest beside a reader holding one snapshot for ${HOLD} s: wrk -t2 -c$CONNS -d${DUR}s, medians of $ROUNDS rounds ($(nproc) cores)"
printf '%-34s %11s %8s %8s %10s %20s\n' "" "requests/s" "p99 ms" "max ms" "timeouts" "RESTARTs (deferred)"
for w in alone beside; do
  v=$alone label="faultline serve alone"
  [ $w = beside ] && v=$beside label="faultline serve beside the reader"
  printf '%-34s %11.0f %8.2f %8.1f %10s %14s (%s)\n' "$label" "$(col "$v" 1)" "$(col "$v" 2)" \
    "$(col "$v" 3)" "$(col "$v" 6)" "$(col "$v" 4)" "$(col "$v" 5)"
done
printf '%-36s %12.2f\n' "ratio beside/alone" \
  "$(awk -v a="$(col "$beside" 1)" -v b="$(col "$alone" 1)" 'BEGIN{print (b>0)?a/b:0}')"
