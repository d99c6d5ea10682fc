#!/usr/bin/env bash
# The store conformance test (test_store_engines) against a real
# PostgreSQL: a throwaway cluster on a free loopback port, stopped on exit.
#   store_pg_test.sh TEST_STORE_ENGINES
set -uo pipefail
BIN=$1
work=$(mktemp -d /tmp/fl-store-pg.XXXXXX)
cleanup() { pg_stop; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

. "$(dirname "$0")/../lib/postgres.sh"

pg_start
echo "PostgreSQL at $PGURL (pid $PGPID)"
FL_TEST_STORE_URL=$PGURL "$BIN" || {
  tail -20 "$work/pg/log" >&2
  fail "test_store_engines against PostgreSQL"
}
