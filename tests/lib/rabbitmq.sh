# Shell helper for tests that need a real RabbitMQ broker.  Source it after
# setting `work` (a private temporary directory) and defining fail().
#
# rmq_start starts a private node: its own name, data, logs, config (no
# plugins, so no management listener), Erlang cookie (HOME=$work/rmqhome),
# epmd (on a port of its own, so a system-wide epmd is neither used nor
# stopped) and AMQP and distribution ports, all on 127.0.0.1.  It waits for
# `rabbitmqctl await_startup` and sets
#   AMQP_URL   amqp://guest:guest@127.0.0.1:PORT/%2f (guest may log in
#              from loopback)
#   RMQ_NODE   the node name, RMQ_PORT the AMQP port
#   AMQPS_URL  amqps://guest:guest@localhost:PORT/%2f?cacertfile=CA: the
#              node's TLS listener (RMQ_TLS_PORT), with a certificate for
#              localhost signed by a throwaway CA (RMQ_TLS_CA, made here
#              with openssl)
# Set RMQ_PORT (say, to $(rmq_free_port)) before the first rmq_start to
# have the node listen there: a test that points a server at the broker
# before it runs.
# rmq_ctl ARGS... runs rabbitmqctl against the node.  rmq_stop stops the
# node; rmq_start after it starts the node again on the same ports with
# the same data (a broker restart).  rmq_stop_all stops the node and our
# epmd: call it from the test's EXIT trap -- it is harmless when nothing
# runs.  The state is also kept in $work/rmq/state, so that another
# process (a test program restarting the broker through a script) can
# rmq_load, rmq_stop and rmq_start, and rmq_stop_all still finds the node
# it started.
#
# The Debian /usr/sbin/rabbitmq-* wrappers switch to the rabbitmq user when
# run as root (losing HOME and our files), so the scripts they wrap are run
# directly.

RMQ_BIN=/usr/lib/rabbitmq/bin
RMQ_NODE= RMQ_PORT= RMQ_DIST= RMQ_EPMD= RMQ_PID= RMQ_EPMD_PID= AMQP_URL=
RMQ_TLS_PORT= RMQ_TLS_CA= AMQPS_URL=

# A loopback TCP port nobody listens on, below the kernel's ephemeral range:
# a port of that range can be given to an outgoing connection (the node's
# own, to epmd or from rabbitmqctl) between our pick and the node's bind,
# which then fails with eaddrinuse -- and the retry below uses the same
# ports (seen here: both attempts of a start failed so, most likely this way).
rmq_free_port() {
  local p lo
  lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  [ "${lo:-0}" -ge 12000 ] 2>/dev/null || lo=60000
  for _ in $(seq 1 50); do
    p=$((10000 + (RANDOM * 7 + $$) % (lo - 10000)))
    ss -ltnH "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

rmq_env() { # run a command in the node's environment
  env HOME="$work/rmqhome" ERL_EPMD_PORT="$RMQ_EPMD" \
    RABBITMQ_NODENAME="$RMQ_NODE" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="$RMQ_PORT" RABBITMQ_DIST_PORT="$RMQ_DIST" \
    RABBITMQ_MNESIA_BASE="$work/rmq/mnesia" RABBITMQ_LOG_BASE="$work/rmq/log" \
    RABBITMQ_CONFIG_FILE="$work/rmq/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$work/rmq/advanced.config" \
    RABBITMQ_CONF_ENV_FILE="$work/rmq/rabbitmq-env.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$work/rmq/enabled_plugins" \
    RABBITMQ_PID_FILE="$work/rmq/pid" "$@"
}

rmq_ctl() { rmq_env "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" "$@"; }

rmq_start() {
  [ -x "$RMQ_BIN/rabbitmq-server" ] || fail "rabbitmq-server is not installed (scripts/deps.sh)"
  if [ -z "$RMQ_NODE" ]; then
    RMQ_NODE="fl$$@localhost"
    { [ -n "$RMQ_PORT" ] || RMQ_PORT=$(rmq_free_port); } && RMQ_DIST=$(rmq_free_port) &&
      RMQ_EPMD=$(rmq_free_port) || fail "no free port for RabbitMQ"
    RMQ_TLS_PORT=$(rmq_free_port) || fail "no free port for RabbitMQ"
    while [ "$(printf '%s\n' "$RMQ_PORT" "$RMQ_DIST" "$RMQ_EPMD" "$RMQ_TLS_PORT" | sort -u | wc -l)" != 4 ]; do
      RMQ_DIST=$(rmq_free_port) && RMQ_EPMD=$(rmq_free_port) && RMQ_TLS_PORT=$(rmq_free_port) ||
        fail "no free port for RabbitMQ"
    done
    mkdir -p "$work/rmqhome" "$work/rmq/mnesia" "$work/rmq/log"
    # The CLI tools and the node must share a cookie; a new one of ours.
    head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/rmqhome/.erlang.cookie"
    chmod 400 "$work/rmqhome/.erlang.cookie"
    echo '[].' >"$work/rmq/enabled_plugins"
    : >"$work/rmq/rabbitmq-env.conf"
    rmq_tls_files
    printf '%s\n' 'log.console = false' 'log.file.level = info' \
      "listeners.ssl.1 = 127.0.0.1:$RMQ_TLS_PORT" \
      "ssl_options.cacertfile = $work/rmq/tls/ca.pem" \
      "ssl_options.certfile = $work/rmq/tls/server.pem" \
      "ssl_options.keyfile = $work/rmq/tls/server.key" \
      'ssl_options.verify = verify_none' 'ssl_options.fail_if_no_peer_cert = false' \
      >"$work/rmq/rabbitmq.conf"
  fi
  # Our own epmd, in the foreground so that we have its pid.
  if [ -z "$RMQ_EPMD_PID" ]; then
    epmd -port "$RMQ_EPMD" >>"$work/rmq/epmd.log" 2>&1 &
    RMQ_EPMD_PID=$!
  fi
  # The node registers with epmd as it starts, and stops ("nodistribution")
  # when epmd is not listening yet: seen under CI load.
  for _ in $(seq 200); do ss -ltnH "sport = :$RMQ_EPMD" 2>/dev/null | grep -q . && break; sleep 0.05; done
  local t0=$SECONDS attempt up=
  for attempt in 1 2; do
    # A session of its own: the wrapper, erl and beam.smp and its helpers
    # (erl_child_setup, inet_gethost) are then one process group, ended
    # together if `rabbitmqctl stop` does not end them.
    rmq_env setsid "$RMQ_BIN/rabbitmq-server" >>"$work/rmq/server.out" 2>&1 &
    RMQ_PID=$!
    until rmq_ctl await_startup --timeout 5 >/dev/null 2>&1; do
      if ! kill -0 "$RMQ_PID" 2>/dev/null; then
        wait "$RMQ_PID" 2>/dev/null
        # Once more: what stops a node at launch (a port taken meanwhile,
        # epmd) is usually gone a moment later.
        if [ "$attempt" = 1 ]; then
          # Whatever of its session is left (beam, helpers) first.
          kill -KILL -- -"$RMQ_PID" 2>/dev/null
          echo "rabbitmq-server exited at start; starting it again" >&2
          continue 2
        fi
        tail -20 "$work/rmq/server.out" >&2
        fail "rabbitmq-server exited at start"
      fi
      [ $((SECONDS - t0)) -lt 90 ] || { tail -20 "$work/rmq/server.out" >&2; fail "rabbitmq-server did not start in 90 s"; }
      sleep 0.5
    done
    up=1
    break
  done
  [ -n "$up" ] || fail "rabbitmq-server did not start"
  AMQP_URL="amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f"
  RMQ_TLS_CA=$work/rmq/tls/ca.pem
  AMQPS_URL="amqps://guest:guest@localhost:$RMQ_TLS_PORT/%2f?cacertfile=$RMQ_TLS_CA"
  RMQ_START_S=$((SECONDS - t0))
  rmq_save
}

rmq_tls_files() { # a throwaway CA, and its certificate for localhost
  local d=$work/rmq/tls
  mkdir -p "$d"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$d/ext"
  { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
      -subj /CN=faultline-test-ca -keyout "$d/ca.key" -out "$d/ca.pem" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
      -keyout "$d/server.key" -out "$d/server.csr" &&
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
      -days 2 -extfile "$d/ext" -out "$d/server.pem"; } >"$d/openssl.log" 2>&1 ||
    fail "openssl could not make the test certificates: $(tail -3 "$d/openssl.log")"
}

rmq_save() {
  [ -d "$work/rmq" ] || return 0
  local v
  for v in RMQ_NODE RMQ_PORT RMQ_DIST RMQ_EPMD RMQ_PID RMQ_EPMD_PID AMQP_URL RMQ_TLS_PORT \
    RMQ_TLS_CA AMQPS_URL; do
    printf '%s=%q\n' "$v" "${!v}"
  done >"$work/rmq/state"
}

rmq_load() { [ -f "$work/rmq/state" ] && . "$work/rmq/state"; }

rmq_stop() {
  if [ -n "$RMQ_PID" ]; then
    rmq_ctl stop >/dev/null 2>&1 || kill -TERM "$RMQ_PID" 2>/dev/null
    # The wrapper script exits after its beam; TERM makes it stop the beam.
    for _ in $(seq 1 100); do
      kill -0 "$RMQ_PID" 2>/dev/null || break
      [ "$_" = 60 ] && kill -TERM -- -"$RMQ_PID" 2>/dev/null
      sleep 0.2
    done
    kill -KILL -- -"$RMQ_PID" 2>/dev/null
    wait "$RMQ_PID" 2>/dev/null
    RMQ_PID=
    rmq_save
  fi
}

rmq_stop_all() { # the node, then our epmd
  rmq_load
  rmq_stop
  if [ -n "$RMQ_EPMD_PID" ]; then
    kill -TERM "$RMQ_EPMD_PID" 2>/dev/null
    wait "$RMQ_EPMD_PID" 2>/dev/null
    RMQ_EPMD_PID=
    rmq_save
  fi
}
