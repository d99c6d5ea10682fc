# Shared by bench/server/run.sh and large.sh (sourced).

# make_log_template FILE: the ~4 KiB log template (version 2, 16 frames,
# some context).  post.lua fills in the @...@ fields per request: a fresh
# crash id, time and uptime, one of 1,000 installations, and module base
# addresses that change as ASLR would (the frames move with them), so that
# no two reports are the same bytes -- as in a real crash storm, where the
# server cannot count on identical reports to compress.
make_log_template() {
  local f=$1 i=0
  {
    printf 'FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME benchapp\nAPPLICATION_VERSION 2.3.1\n'
    printf 'PLATFORM_NAME linux\nCPUARCH_NAME x86-64\nPLATFORM_VERSION 6.1.0-13-amd64\nOS_NAME debian\nOS_VERSION 12\n'
    printf 'CRASH_SIGNAL 11\nCRASH_TIME @TIME@\nAPPLICATION_UPTIME @UP@\nCRASH_ID @ID@\nINSTALL_ID @INST@\n'
    printf 'OBJECT /usr/bin/benchapp/@B1@/1048576/@B1@\nOBJECT_BUILD_ID 1f2e3d4c5b6a79881f2e3d4c5b6a7988\n'
    printf 'OBJECT /lib/x86_64-linux-gnu/libc.so.6/@B2@/2097152/@B2@\n'
    for i in $(seq 0 11); do printf 'CALLSTACK @B1+%d@\n' $((4096 + i * 97)); done
    for i in $(seq 0 3); do printf 'CALLSTACK @B2+%d@\n' $((65536 + i * 211)); done
  } >"$f"
  i=0
  while [ "$(wc -c <"$f")" -lt 4050 ]; do
    printf 'ETC_KEY context_%03d\nETC_VALUE some application context value %03d\n' $i $i >>"$f"
    i=$((i + 1))
  done
  printf 'END\n' >>"$f"
}

# wrk_p99 FILE: the 99th percentile latency in wrk's --latency output, in ms.
wrk_p99() {
  awk '$1=="99%"{v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; print v}' "$1"
}

# start_server [OPTION...]: `faultline serve` on a free port of 127.0.0.1
# with the data directory $work/data and OPTIONs; sets SPID and SPORT.  The
# caller sets FL and work.  --max-backlog: with --workers 0 every report
# stays queued, and the default cap (1,000,000) is reached within a few
# fast rounds.
start_server() {
  : >"$work/srv.out"
  "$FL" serve --listen 127.0.0.1:0 --data "$work/data" --max-pending 65536 \
    --max-backlog 100000000 "$@" >"$work/srv.out" 2>"$work/srv.err" &
  SPID=$!
  for _ in $(seq 100); do
    SPORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/srv.out" | grep -o '[0-9]*$')
    [ -n "$SPORT" ] && return 0
    sleep 0.1
  done
  echo "bench/server: server did not start: $(cat "$work/srv.err")"
  exit 1
}
stop_server() { kill -TERM "$SPID"; wait "$SPID"; SPID=; }
