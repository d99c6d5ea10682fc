#!/usr/bin/env bash
# srcctx_test.sh TEST_SRCCTX: runs the fl_srcctx unit test against a
# stand-in for debuginfod -- python3's http.server over a directory laid
# out as debuginfod's URLs are (buildid/ID/source/PATH) -- on a free
# loopback port.
set -u
work=$(mktemp -d /tmp/fl-srcctx-test.XXXXXX)
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$work" "$work.dcache"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/root/buildid"
for attempt in 1 2 3 4 5 6 7 8; do
  p=$((20000 + (RANDOM * 7 + attempt * 131) % 40000))
  ss -ltnH "sport = :$p" 2>/dev/null | grep -q . && continue
  python3 -m http.server "$p" --bind 127.0.0.1 --directory "$work/root" >"$work/http.log" 2>&1 &
  SPID=$!
  for _ in $(seq 1 50); do
    kill -0 "$SPID" 2>/dev/null || break
    curl -sf "http://127.0.0.1:$p/buildid/" >/dev/null 2>&1 && break 2
    sleep 0.1
  done
  kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
done
[ -n "$SPID" ] || fail "the stand-in server did not start"
unset DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
DEBUGINFOD_URLS="http://127.0.0.1:$p" FL_TEST_SRC_ROOT=$work/root "$1"
