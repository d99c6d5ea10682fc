#!/usr/bin/env bash
# The RabbitMQ queue engine (src/server/queue_amqp.c) against a private
# broker on 127.0.0.1 (tests/lib/rabbitmq.sh).
#   queue_amqp_test.sh TEST_QUEUE_AMQP
# The test program gets the broker's URL in FL_TEST_AMQP_URL (its TLS
# listener's in FL_TEST_AMQPS_URL), and in
# FL_TEST_AMQP_RESTART a command that restarts the broker (same port, same
# data): this script again, as `queue_amqp_test.sh --restart WORK`; in
# FL_TEST_AMQP_CTL one that runs rabbitmqctl against it with the arguments
# that follow (`queue_amqp_test.sh --ctl WORK ARGS...`).
set -uo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${1:-}" = --restart ]; then
  work=$2
  . "$(dirname "$0")/../lib/rabbitmq.sh"
  rmq_load
  rmq_stop
  rmq_start
  echo "broker restarted in ${RMQ_START_S} s"
  exit 0
fi
if [ "${1:-}" = --ctl ]; then
  work=$2
  shift 2
  . "$(dirname "$0")/../lib/rabbitmq.sh"
  rmq_load
  rmq_ctl "$@"
  exit
fi

bin=$1
work=$(mktemp -d /tmp/fl-amqp-test.XXXXXX)
. "$(dirname "$0")/../lib/rabbitmq.sh"
cleanup() { rmq_stop_all; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

rmq_start
echo "broker $RMQ_NODE started in ${RMQ_START_S} s"
# In the background, so that a signal to this script (a test timeout) ends
# the program and the broker at once rather than after the program.
FL_TEST_AMQP_URL=$AMQP_URL FL_TEST_AMQPS_URL=$AMQPS_URL \
  FL_TEST_AMQP_RESTART="bash $(printf %q "$0") --restart $(printf %q "$work")" \
  FL_TEST_AMQP_CTL="bash $(printf %q "$0") --ctl $(printf %q "$work")" "$bin" &
tpid=$!
trap 'kill -TERM "$tpid" 2>/dev/null; exit 1' INT TERM HUP
wait "$tpid"
rc=$?
[ "$rc" = 0 ] || { tail -20 "$work/rmq/log/$RMQ_NODE.log" >&2; fail "test_queue_amqp: exit $rc"; }
