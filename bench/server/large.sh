#!/usr/bin/env bash
# Ingest on a large database:  bench/server/large.sh BUILD_DIR
#
# Ingest flags a resend of a crash already processed, which once meant
# looking every new crash id up in the index of all crashes stored -- a
# random page per report, read from the disk once the index outgrows the
# page cache.  The server now keeps a filter of the stored ids in memory
# and looks up only what it cannot rule out.  This bench gives it a
# database of LARGE crashes (default 10,000,000, inserted with SQL; ~1.2 GB),
# drops the page cache (as root; otherwise it says so), starts the server
# and posts with wrk as bench/server/run.sh does, in rounds of 5 s -- the
# first rounds run while the filter loads, when every id is still looked up
# -- then stops it cleanly and starts it again, when it takes the snapshot
# of the filter the stop left, then does the same with `serve
# --no-id-filter`, side by side.
# MEMLIMIT=MiB runs the server in a memory cgroup of that size (as root),
# page cache included: a machine whose memory cannot hold the crash-id
# index, where without the filter the lookups stay disk reads.
# Environment: LARGE (10000000), ROUNDS (4), SECONDS_PER_RUN (5), CONNS (64),
# MEMLIMIT (none).
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
FL=$build/src/cli/faultline
N=${LARGE:-10000000} ROUNDS=${ROUNDS:-4} DUR=${SECONDS_PER_RUN:-5} CONNS=${CONNS:-64}
for t in wrk sqlite3; do
  command -v $t >/dev/null || { echo "bench/server/large: $t missing (scripts/deps.sh --bench)"; exit 1; }
done
[ -x "$FL" ] || { echo "bench/server/large: $FL not built"; exit 1; }
work=$(mktemp -d /tmp/fl-bench-large.XXXXXX)
SPID= cg=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export FAULTLINE_ADMIN_TOKEN=bench-admin FAULTLINE_INGEST_KEY=bench-key


# MEMLIMIT: a memory cgroup (v1 or v2) the server runs in, once filled.
limit="no memory limit"
if [ -n "${MEMLIMIT:-}" ]; then
  if [ -d /sys/fs/cgroup/memory ] && mkdir /sys/fs/cgroup/memory/fl-bench-$$ 2>/dev/null; then
    cg=/sys/fs/cgroup/memory/fl-bench-$$
    echo $((MEMLIMIT << 20)) >"$cg/memory.limit_in_bytes" || cg=
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir /sys/fs/cgroup/fl-bench-$$ 2>/dev/null; then
    cg=/sys/fs/cgroup/fl-bench-$$
    echo $((MEMLIMIT << 20)) >"$cg/memory.max" || cg=
  fi
  [ -n "$cg" ] && limit="server in a ${MEMLIMIT} MiB memory cgroup" || limit="MEMLIMIT not applied (needs root and a memory cgroup)"
fi
mem_cg=$cg cg=

# The schema, made by the server itself; then N processed crashes with
# random ids (as libfaultline's are), inserted directly.
start_server --workers 0
stop_server
t0=$(date +%s.%N)
sqlite3 "$work/data/faultline.db" "PRAGMA synchronous=OFF; PRAGMA cache_size=-500000;
  WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $N)
  INSERT INTO crashes(id, app, version, received, raw, raw_len, state)
  SELECT lower(hex(randomblob(16))), 'benchapp', '2.3.1', 1700000000, X'', 0, 1 FROM c;" ||
  { echo "bench/server/large: cannot fill the database"; exit 1; }
printf 'database: %d crashes inserted in %.0f s, %s\n' "$N" \
  "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b - a}')" "$(du -sh "$work/data" | cut -f1)"

# The same ~4 KiB log template as run.sh (post.lua fills in the fields).
make_log_template "$work/log.tmpl"
export FL_LOG=$work/log.tmpl FL_KEY=bench-key

drop_cache() {
  if [ "$(id -u)" = 0 ]; then
    sync && echo 3 >/proc/sys/vm/drop_caches && cache="page cache dropped before each"
  else
    cache="page cache NOT dropped (not root): the index may still be cached"
  fi
}
metric() { curl -s "http://127.0.0.1:$SPORT/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
# run_rounds TAG [OPTION...]: rounds against a server started with OPTIONs
# on a cold cache; one line per round into $work/TAG.
run_rounds() {
  local tag=$1
  shift
  # Crash ids of their own in each part (post.lua seeds its ids from
  # FL_RUN): the same ids again would be resends, each looked up.
  runs=$((runs + 100))
  drop_cache
  start_server --workers 0 "$@"
  [ -n "$cg" ] && echo "$SPID" >"$cg/cgroup.procs"
  : >"$work/$tag"
  for r in $(seq "$ROUNDS"); do
    FL_RUN=$((r + runs)) wrk -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$here/post.lua" \
      "http://127.0.0.1:$SPORT/api/v1/crashes" >"$work/wrk.out" 2>&1
    rps=$(awk '/^Requests\/sec:/{print $2}' "$work/wrk.out")
    p99=$(wrk_p99 "$work/wrk.out")
    echo "${rps:-0} ${p99:-0} $(metric faultline_ingest_id_lookups_total) $(metric faultline_ingest_id_filter_ready) $(metric faultline_ingest_id_filter_from_snapshot)" >>"$work/$tag"
  done
  echo "$(metric faultline_ingest_id_filter_ids) $(metric faultline_ingest_id_filter_bytes)" >"$work/$tag.filter"
  stop_server
}
cg=$mem_cg
# The filter read from the database; then, after that server's clean
# stop, from the snapshot it left; then no filter (which deletes it).
runs=200
run_rounds filter
run_rounds restart
run_rounds nofilter --no-id-filter
echo
echo "ingest on $N stored crashes, $cache, $limit; wrk -t2 -c$CONNS, rounds of ${DUR}s, as bench/server/run.sh"
printf '%-6s | %-44s | %-38s | %-30s\n' "" "id filter (default), read from the database" "after a clean restart (snapshot)" "--no-id-filter"
printf '%-6s | %10s %8s %12s %10s | %10s %8s %8s %9s | %10s %8s %10s\n' round reports/s "p99 ms" lookups ready reports/s "p99 ms" lookups snapshot reports/s "p99 ms" lookups
paste -d' ' "$work/filter" "$work/restart" "$work/nofilter" | awk '{printf "%-6d | %10.0f %8.2f %12d %10d | %10.0f %8.2f %8d %9d | %10.0f %8.2f %10d\n", NR, $1, $2, $3, $4, $6, $7, $8, $10, $11, $12, $13}'
read -r fids fbytes <"$work/filter.filter"
echo "filter: $fids ids, $fbytes bytes"
