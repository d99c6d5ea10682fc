#!/usr/bin/env bash
# Writes the SQL dump of a data directory served by an older `faultline
# serve` (see README): what the upgrade test starts today's server on.
#   make-fixture.sh OLD_FAULTLINE FL_POST CLIENT_SPOOL OUT.sql
# OLD_FAULTLINE: the old commit's build/src/cli/faultline; FL_POST: today's
# build/tests/server/fl_post; CLIENT_SPOOL: two crash logs written by an
# old libfaultline (tests/symserver/symsrv_crash.c linked with it, run as
# `symsrv_crash deep` and `symsrv_crash abort`), with their debug file as
# CLIENT_SPOOL/crash.debug.  Needs sqlite3 and curl.
set -euo pipefail
OLD=$1 POST=$2 SPOOL=$3 OUT=$4
work=$(mktemp -d /tmp/fl-fixture.XXXXXX)
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$work"' EXIT
export FAULTLINE_ADMIN_TOKEN=upgrade-admin-token FAULTLINE_INGEST_KEY=upgrade-ingest-key
PID= PORT=
start() {
  "$OLD" serve --listen 127.0.0.1:0 --data "$work/d" "$@" >"$work/out" 2>>"$work/err" &
  PID=$!
  for _ in $(seq 100); do
    PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/out" | grep -o '[0-9]*$' || true)
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  echo "old server did not start: $(cat "$work/err")" >&2
  exit 1
}
stop() { kill -TERM "$PID"; wait "$PID"; PID=; }
api() { curl -fsS -H "Authorization: Bearer $FAULTLINE_ADMIN_TOKEN" "$@"; }
post() {
  curl -fsS -o /dev/null -H "X-Faultline-Key: $FAULTLINE_INGEST_KEY" -H 'Content-Type: text/plain' \
    --data-binary @"$1" "http://127.0.0.1:$PORT/api/v1/crashes"
}

# Processed: the two client logs (symbolicated from their uploaded debug
# file, when the old server takes uploads) and 6 generated logs (fl_post
# seed 1: 4 signatures); the largest group resolved.
start
if api -o /dev/null -H 'X-Faultline-Name: crash.debug' --data-binary @"$SPOOL/crash.debug" \
  "http://127.0.0.1:$PORT/api/v1/symbols" 2>/dev/null; then echo "debug file uploaded"; fi
for f in "$SPOOL"/*.crashlog; do post "$f"; done
"$POST" stream "$PORT" "$FAULTLINE_INGEST_KEY" 6 1 "$work/ids1" 1 >/dev/null
"$POST" wait "$PORT" "$FAULTLINE_ADMIN_TOKEN" 8 30 >/dev/null
g=$(api "http://127.0.0.1:$PORT/api/v1/groups?app=streamapp" |
  python3 -c 'import json, sys; print(sorted(json.load(sys.stdin)["groups"], key=lambda g: (-g["count"], g["id"]))[0]["id"])')
api -o /dev/null -X PATCH -d '{"status":"resolved"}' "http://127.0.0.1:$PORT/api/v1/groups/$g"
# Where the old server merges groups: the two smallest streamapp groups,
# the smaller into the other (a merge that moved the crashes, before
# generation 5).
m=$(api "http://127.0.0.1:$PORT/api/v1/groups?app=streamapp" |
  python3 -c 'import json, sys; g = sorted(json.load(sys.stdin)["groups"], key=lambda g: (g["count"], g["id"])); print(g[1]["id"], g[0]["id"])')
if api -o /dev/null -d "{\"groups\":[\"${m#* }\"]}" "http://127.0.0.1:$PORT/api/v1/groups/${m% *}/merge" 2>/dev/null; then
  echo "merged ${m#* } into ${m% *}"
fi
stop
# Queued, never processed (no workers): 4 more generated logs (seed 2),
# and a resend of a processed client log (a second copy, never counted).
start --workers 0
"$POST" stream "$PORT" "$FAULTLINE_INGEST_KEY" 4 1 "$work/ids2" 2 >/dev/null
post "$(ls "$SPOOL"/*.crashlog | head -1)"
stop
sqlite3 "$work/d/faultline.db" .dump >"$OUT"
echo "$OUT: $(wc -c <"$OUT") bytes"
