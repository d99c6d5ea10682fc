#!/usr/bin/env bash
# Server benchmark:  bench/server/run.sh BUILD_DIR
#
# 1. Ingest: wrk (64 connections, a Lua script posting a ~4 KiB crash log
#    with a fresh, random CRASH_ID per request) against `faultline serve` and, in
#    the same run, against nginx answering 200 to the same POST.  Rounds
#    alternate between the two; the table shows medians.  The server runs
#    with --workers 0 here so that the number is the ingest path alone; every
#    200 it sends is after an fsync'ed commit (SQLite WAL, synchronous=FULL).
#    Then where the machine's time per request went, for each: wrk's own
#    CPU, the rest of the busy time (the server's, and anything else
#    running), idle and I/O wait -- the ratio is one total over the other.
# 2. Processing: the same data directory restarted with --workers N; the
#    rate at which the backlog is processed (crashes/s).
# 3. Memory: RSS of the server once >= 100,000 crashes are stored and
#    processed.
# 4. Ingest on a database of 10 M crashes, page cache dropped, with and
#    without the filter of stored crash ids (bench/server/large.sh).
# 5. Ingest and processing on PostgreSQL + RabbitMQ against the embedded
#    default in the same run (bench/server/scaleout.sh).
# 6. Ingest alone and beside a process holding a read snapshot for 6 s
#    (bench/server/reader.sh).
# Environment: ROUNDS (5), SECONDS_PER_RUN (8), CONNS (64), WORKERS (2),
# INGEST_ONLY (0; 1 skips parts 2-6, for quick comparisons), LARGE and
# MEMLIMIT (part 4: bench/server/large.sh), SCALEOUT (part 5: bench/server/scaleout.sh), READER (part 6), FL_IDS
# (random; "seq" for sequential crash ids, see post.lua).
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
FL=$build/src/cli/faultline
ROUNDS=${ROUNDS:-5} DUR=${SECONDS_PER_RUN:-8} CONNS=${CONNS:-64} WORKERS=${WORKERS:-2}
for t in wrk nginx; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "bench/server: $t missing (scripts/deps.sh --bench)"; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$FL" ] || { echo "bench/server: $FL not built"; exit 1; }

work=$(mktemp -d /tmp/fl-bench-server.XXXXXX)
SPID= NPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  [ -n "$NPID" ] && kill "$NPID" 2>/dev/null && wait "$NPID" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export FAULTLINE_ADMIN_TOKEN=bench-admin FAULTLINE_INGEST_KEY=bench-key

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
  done
}

. "$here/lib.sh"
make_log_template "$work/log.tmpl"
export FL_LOG=$work/log.tmpl FL_KEY=bench-key

# The machine's time (both cores, clock ticks) busy, idle and waiting
# for I/O, from /proc/stat: "busy idle iowait".
cpu_stat() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $5, $6}' /proc/stat; }

# wrk_run URL RUN -> "reqs p99_ms non2xx requests wrk_cpu_s busy_ticks idle_ticks iowait_ticks"
# wrk's own CPU time (user + system) comes from bash's `time`: where the
# machine's time per request goes -- the load generator, the server (and
# whatever else runs), idle -- is printed for both servers below.
wrk_run() {
  local s0 s1 t
  s0=$(cpu_stat)
  t=$( { TIMEFORMAT='%U %S'; time FL_RUN=$2 wrk -t2 -c"$CONNS" -d"${DUR}s" --latency \
         -s "$here/post.lua" "$1" >"$work/wrk.out" 2>&1; } 2>&1)
  s1=$(cpu_stat)
  local rps p99 bad
  rps=$(awk '/^Requests\/sec:/{print $2}' "$work/wrk.out")
  p99=$(wrk_p99 "$work/wrk.out")
  bad=$(awk '/Non-2xx/{print $NF}' "$work/wrk.out")
  n=$(awk '/requests in/{print $1}' "$work/wrk.out")
  echo "${rps:-0} ${p99:-0} ${bad:-0} ${n:-0} $(awk '{print $1 + $2}' <<<"$t") $(paste -d' ' <(tr ' ' '\n' <<<"$s0") <(tr ' ' '\n' <<<"$s1") | awk '{printf "%d ", $2 - $1}')"
}

median() { sort -g | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }


# nginx answering 200 to the same POST (body read and discarded).
NPORT=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 2;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fcgi; uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
  client_max_body_size 1m; client_body_buffer_size 64k; keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$NPORT;
    location / { default_type application/json; return 200 '{"accepted":[{"id":"x"}]}\n'; }
  }
}
EOF
"$NGINX" -c "$work/nginx/nginx.conf" -p "$work/nginx" 2>"$work/nginx/stderr" &
NPID=$!
sleep 0.5

# CPU time (user + system, clock ticks) of a process.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_server --workers 0
fl_r= fl_p= ng_r= ng_p= fl_bad=0 fl_n=0 fl_ticks=0 ng_n=0
fl_acct="0 0 0 0" ng_acct="0 0 0 0" # wrk's CPU s, busy, idle, iowait ticks
acct_add() { awk -v a="$1" -v b="$2" 'BEGIN{split(a, x, " "); split(b, y, " "); printf "%s %d %d %d", x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4]}'; }
for r in $(seq "$ROUNDS"); do
  t0=$(cpu_ticks "$SPID")
  read -r a b c d e f g h < <(wrk_run "http://127.0.0.1:$SPORT/api/v1/crashes" "$r")
  fl_ticks=$((fl_ticks + $(cpu_ticks "$SPID") - t0)) fl_n=$((fl_n + d))
  fl_r="$fl_r $a" fl_p="$fl_p $b" fl_bad=$((fl_bad + c)) fl_acct=$(acct_add "$fl_acct" "$e $f $g $h")
  read -r a b c d e f g h < <(wrk_run "http://127.0.0.1:$NPORT/api/v1/crashes" "$((r + 100))")
  ng_r="$ng_r $a" ng_p="$ng_p $b" ng_n=$((ng_n + d)) ng_acct=$(acct_add "$ng_acct" "$e $f $g $h")
done
metrics=$(curl -s "http://127.0.0.1:$SPORT/metrics")
commits=$(awk '/^faultline_ingest_commits_total/{print $2}' <<<"$metrics")
items=$(awk '/^faultline_ingest_committed_reports_total/{print $2}' <<<"$metrics")
stop_server

FR=$(tr ' ' '\n' <<<"$fl_r" | grep . | median) FP=$(tr ' ' '\n' <<<"$fl_p" | grep . | median)
NR_=$(tr ' ' '\n' <<<"$ng_r" | grep . | median) NP=$(tr ' ' '\n' <<<"$ng_p" | grep . | median)
echo
echo "ingest: wrk -t2 -c$CONNS -d${DUR}s, ~$(wc -c <"$work/log.tmpl") B log, new ${FL_IDS:-random} crash id, time, install and ASLR bases per request, median of $ROUNDS rounds ($(nproc) cores)"
printf '%-34s %14s %10s\n' "" "requests/s" "p99 ms"
printf '%-34s %14.0f %10.2f\n' "faultline serve (durable 200)" "$FR" "$FP"
printf '%-34s %14.0f %10.2f\n' "nginx (return 200)" "$NR_" "$NP"
printf '%-34s %14.2f\n' "ratio faultline/nginx" "$(awk -v a="$FR" -v b="$NR_" 'BEGIN{print (b>0)?a/b:0}')"
echo "faultline rounds:$fl_r  non-2xx: $fl_bad;  nginx rounds:$ng_r"
# Each faultline round next to the nginx round right after it: how much of
# the spread is the machine's (both move together) and how much is ours.
pairs=$(paste -d' ' <(tr ' ' '\n' <<<"$fl_r" | grep .) <(tr ' ' '\n' <<<"$ng_r" | grep .) |
  awk '$2 > 0 {printf "%.3f\n", $1 / $2}')
echo "ratio per round pair: $(sort -g <<<"$pairs" | head -1)-$(sort -g <<<"$pairs" | tail -1), median $(median <<<"$pairs")"
# CPU per report is steadier than the rate when other jobs share the cores.
echo "server CPU: $(awk -v t="$fl_ticks" -v hz="$(getconf CLK_TCK)" -v n="$fl_n" 'BEGIN{printf "%.1f", (n>0)?t/hz*1e6/n:0}') us per report (user + system, all threads)"
echo "group commit: $items reports in $commits transactions ($(awk -v a="$items" -v b="$commits" 'BEGIN{printf "%.1f", (b>0)?a/b:0}') per fsync)"
# The ratio is (wrk + nginx) over (wrk + faultline + idle) per request:
# what each side of it is made of.
echo "machine time per request, both cores (us): load generator (wrk), the rest busy (the server, and anything else running), idle, I/O wait"
acct_line() { # NAME "wrk_s busy idle iowait" N
  awk -v name="$1" -v a="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN{
    split(a, x, " "); if (n <= 0) n = 1
    w = x[1] * 1e6 / n; b = x[2] / hz * 1e6 / n; i = x[3] / hz * 1e6 / n; o = x[4] / hz * 1e6 / n
    printf "  %-30s wrk %5.1f  rest %5.1f  idle %5.1f  iowait %5.1f  total %5.1f\n", name, w, b - w, i, o, b + i + o }'
}
acct_line "faultline serve" "$fl_acct" "$fl_n"
acct_line "nginx" "$ng_acct" "$ng_n"

[ "${INGEST_ONLY:-0}" = 1 ] && exit 0

# Processing throughput: restart with workers on the backlog just stored.
stored=$items
start_server --workers "$WORKERS"
t0=$(date +%s.%N)
m0=0
while :; do
  depth=$(curl -s "http://127.0.0.1:$SPORT/metrics" | awk '/^faultline_queue_depth/{print $2}')
  [ "${depth:-1}" = 0 ] && break
  sleep 0.5
  now=$(date +%s.%N)
  if awk -v a="$now" -v b="$t0" 'BEGIN{exit !(a-b > 600)}'; then echo "processing: gave up after 600 s"; break; fi
done
t1=$(date +%s.%N)
processed=$(curl -s "http://127.0.0.1:$SPORT/metrics" | awk '/^faultline_crashes_processed_total/{print $2}')
rss=$(awk '/^VmRSS/{print $2}' "/proc/$SPID/status")
hwm=$(awk '/^VmHWM/{print $2}' "/proc/$SPID/status")
echo
echo "processing: $processed crashes by $WORKERS workers in $(awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.1f", a-b}') s = $(awk -v n="$processed" -v a="$t1" -v b="$t0" 'BEGIN{printf "%.0f", n/(a-b)}') crashes/s"
total=$("$build/tests/server/fl_post" sum "$SPORT" bench-admin 2>/dev/null || echo '?')
echo "memory: server RSS $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB) with $total crashes stored and processed (goal <= 64 MiB at 100,000)"
echo "database: $(du -sh "$work/data" | cut -f1)"
stop_server

# 4. Ingest on a database of LARGE crashes, with and without the filter of
# stored ids (large.sh; LARGE=0 skips it).
if [ "${LARGE:-10000000}" != 0 ]; then
  echo
  bash "$here/large.sh" "$build"
fi

# 5. The scale-out engines (PostgreSQL + RabbitMQ) against the embedded
# default, side by side (bench/server/scaleout.sh; SCALEOUT=0 skips it).
if [ "${SCALEOUT:-1}" != 0 ]; then
  echo
  bash "$here/scaleout.sh" "$build"
fi

# 6. Ingest beside a long reader (bench/server/reader.sh; READER=0 skips it).
if [ "${READER:-1}" != 0 ]; then
  echo
  bash "$here/reader.sh" "$build"
fi
