# Shell helpers for tests that run a real `faultline serve`.  Source it
# after setting:
#   FL    the faultline binary
#   work  a private temporary directory (the server's output goes there)
#   ADMIN the admin token (for admin())
# and defining fail().  Sets PID and PORT.
#
# The server listens on 127.0.0.1:0 and the test reads the port it printed,
# so no other process can take the port between choosing and binding it.

PID= PORT=

start() { # start DATADIR [options...]
  local d=$1; shift
  : >"$work/out"
  "$FL" serve --listen 127.0.0.1:0 --data "$d" "$@" >"$work/out" 2>>"$work/err" &
  PID=$!
  for _ in $(seq 100); do
    PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/out" | grep -o '[0-9]*$')
    [ -n "$PORT" ] && return 0
    kill -0 "$PID" 2>/dev/null || fail "server exited at start"
    sleep 0.1
  done
  fail "server did not start"
}
stop() { kill -TERM "$PID"; wait "$PID"; local rc=$?; PID=; return $rc; }
# The server stamps its lines with their time ("2026-11-27T15:04:34.123Z ",
# serve --log-time): STAMP matches one (grep -E), unstamped FILE prints
# FILE without them, for a test that compares whole lines.
STAMP='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z '
unstamped() { sed -E "s/^$STAMP//" "$1"; }
url() { echo "http://127.0.0.1:$PORT$1"; }
# code METHOD PATH [curl args...] -> prints the HTTP status; body in $work/body
code() { local m=$1 p=$2; shift 2; curl -s -o "$work/body" -w '%{http_code}' -X "$m" "$@" "$(url "$p")"; }
admin() { curl -s -H "Authorization: Bearer $ADMIN" "$@"; }
field() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | cut -d'"' -f4; }

# wait_processed ID OUT [TRIES]: poll crash ID (every 0.1 s, TRIES times,
# default 100) until it is processed; its JSON in OUT.  Fails otherwise.
wait_processed() {
  local id=$1 out=$2 n=${3:-100}
  for _ in $(seq "$n"); do
    admin "$(url "/api/v1/crashes/$id")" >"$out"
    grep -q '"state":"processed"' "$out" && return 0
    sleep 0.1
  done
  fail "crash $id not processed: $(head -c 300 "$out")"
}

# api PATH: GET an admin route (fails on an HTTP error).
api() { curl -fsS -m 5 -H "Authorization: Bearer $ADMIN" "$(url "$1")"; }
# group_counts APP: the app's group counts, largest first ("3 2").
group_counts() {
  api "/api/v1/groups?app=$1" | python3 -c '
import json, sys
g = json.load(sys.stdin)["groups"]
print(" ".join(str(x["count"]) for x in sorted(g, key=lambda x: -x["count"])))' 2>/dev/null
}
# wait_counts APP WANT: poll (30 s at most) until group_counts APP is WANT;
# prints what it saw last.
wait_counts() {
  local got=
  for _ in $(seq 1 150); do
    got=$(group_counts "$1")
    [ "$got" = "$2" ] && break
    sleep 0.2
  done
  echo "$got"
}
