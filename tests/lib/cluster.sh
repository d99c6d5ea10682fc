# Shared by the scale-out tests (tests/scaleout/) and
# bench/server/scaleout.sh: the `faultline serve` processes of a cluster,
# started in the background, and everything taken down at exit.  Source it
# after setting FL (and defining fail(), to have another), then call
# cluster_init, or set work and trap cluster_cleanup; ENGINES holds the
# --db/--queue options every server started by serve() gets (none by
# default).
PIDS=()
ENGINES=()

# The tests' fail and ok, unless the caller has its own: the servers'
# last error lines go with a failure.
if ! type fail >/dev/null 2>&1; then
  fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/*.err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
    exit 1
  }
fi
ok() { echo "ok: $*"; }

# cluster_init NAME: a test's private directory /tmp/NAME.XXXXXX in $work
# (open to PostgreSQL, which runs as postgres and keeps its cluster
# there), its keys in $ADMIN and $KEY (exported for the servers), and
# cluster_cleanup at exit.
cluster_init() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$work"
  ADMIN=test-admin-token KEY=test-ingest-key
  export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
  trap cluster_cleanup EXIT
}

# cluster_cleanup: our servers (only ours: a bare `wait` would also wait
# for the broker's processes), then RabbitMQ and PostgreSQL, then $work.
cluster_cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  type rmq_stop_all >/dev/null 2>&1 && rmq_stop_all
  type pg_stop >/dev/null 2>&1 && pg_stop
  rm -rf "$work"
}

# serve NAME ARGS...: a server in the background on a free port, its data
# in $work/NAME; its pid in $PID_<NAME>, its port in $PORT_<NAME>.  Ready
# when an API server has printed its portal line, or a worker runs and
# listens.
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
    if grep -q 'portal: open' "$work/$name.out" 2>/dev/null ||
      { grep -q 'worker running' "$work/$name.out" 2>/dev/null &&
        grep -q 'listening on' "$work/$name.out" 2>/dev/null; }; then
      p=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/$name.out" | grep -o '[0-9]*$')
      printf -v "PORT_$name" %s "$p"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || fail "$name exited at start: $(cat "$work/$name.err")"
    sleep 0.1
  done
  fail "$name did not start"
}
