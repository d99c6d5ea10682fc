#!/usr/bin/env bash
# The reporter against the real server (`faultline serve`):
#   1. server away   -> logs kept, exit 75
#   2. server up     -> delivered, spool empty, GET /api/v1/groups counts them,
#      and the crash carries the address given with --email
#   3. same CRASH_ID sent again -> still counted once
# Exits 77 (skipped) with a message when `faultline serve` is not built yet
# or never answers /healthz.
set -u
: "${REPORTER:?}" "${FAULTLINE:?}"
unset FAULTLINE_URL FAULTLINE_SPOOL
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-rep-e2e.XXXXXX")
SPOOL=$WORK/spool
mkdir -p "$SPOOL" "$WORK/data"
SPID=
ADMIN=e2e-admin-token
KEY=e2e-ingest-key

cleanup() {
    if [ -n "$SPID" ]; then
        kill "$SPID" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SPID" 2>/dev/null
        wait "$SPID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL [e2e_server]: $*" >&2
    for f in "$WORK"/*.err "$WORK"/*.out; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done
    exit 1
}
skip() { echo "SKIP [e2e_server]: $*" >&2; exit 77; }

mklog() {
    cat >"$1" <<EOF
FAULTLINE 0.1.0
CRASHLOG_VERSION 2
CRASH_ID $2
APPLICATION_NAME E2eApp
APPLICATION_VERSION 2.0
PLATFORM_NAME linux
CPUARCH_NAME x86-64
PLATFORM_VERSION 6.1.0
CRASH_SIGNAL ${3:-11}
APPLICATION_UPTIME 1
CRASH_TIME $(date +%s)
OBJECT e2e-bin/4194304/12124
CALLSTACK ${4:-4201103}
CALLSTACK 4200063
END
EOF
}

if ! "$FAULTLINE" serve --help >/dev/null 2>&1; then
    skip "'faultline serve' is not available in this build yet (src/server); test written, not run"
fi

# A free port: nothing answers on it right now.
PORT=
for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then PORT=$p; break; fi
done
[ -n "$PORT" ] || fail "no free port"
BASE=http://127.0.0.1:$PORT
URL=$BASE/api/v1/crashes

ID1=$(cat /proc/sys/kernel/random/uuid)
ID2=$(cat /proc/sys/kernel/random/uuid)
mklog "$SPOOL/one.crashlog" "$ID1" 11 4201103
mklog "$SPOOL/two.crashlog" "$ID2" 6 4300000
cp "$SPOOL/one.crashlog" "$WORK/one.copy"

# 1. Server away.
timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --key "$KEY" --yes --connect-timeout 3 \
    </dev/null >"$WORK/away.out" 2>"$WORK/away.err"
rc=$?
[ "$rc" = 75 ] || fail "server away: exit $rc, want 75"
[ -f "$SPOOL/one.crashlog" ] && [ -f "$SPOOL/two.crashlog" ] || fail "server away: logs not kept"

# 2. Server up.
FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY \
    "$FAULTLINE" serve --listen "127.0.0.1:$PORT" --data "$WORK/data" >"$WORK/serve.out" 2>"$WORK/serve.err" &
SPID=$!
up=
for _ in $(seq 1 150); do
    if curl -fsS -m 2 "$BASE/healthz" >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.2
done
[ -n "$up" ] || skip "'faultline serve' did not answer /healthz within 30 s (server not ready yet)"

# The first run left retry files saying "not before now+30 s"; let that
# window pass without waiting for it (backoff itself is tested elsewhere).
rm -f "$SPOOL"/*.retry
timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --key "$KEY" --yes --email 'ann@example.org' \
    </dev/null >"$WORK/up.out" 2>"$WORK/up.err"
rc=$?
[ "$rc" = 0 ] || fail "server up: exit $rc, want 0"
[ -z "$(ls "$SPOOL"/*.crashlog 2>/dev/null)" ] || fail "server up: spool not empty"
# The address the user gave reaches the crash the developer reads.
got=$(curl -fsS -m 5 -H "Authorization: Bearer $ADMIN" "$BASE/api/v1/crashes/$ID1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin).get("email"))')
[ "$got" = ann@example.org ] || fail "email of the crash: '$got'"

total_count() {
    curl -fsS -m 5 -H "Authorization: Bearer $ADMIN" "$BASE/api/v1/groups" 2>/dev/null |
        grep -o '"count" *: *[0-9]*' | grep -o '[0-9]*$' | awk '{s+=$1} END {print s+0}'
}
wait_count() {
    local want=$1 c=0
    for _ in $(seq 1 150); do
        c=$(total_count)
        [ "$c" -ge "$want" ] && break
        sleep 0.2
    done
    echo "$c"
}
c=$(wait_count 2)
[ "$c" = 2 ] || fail "API shows $c crashes, want 2"

# 3. The same crash again (same CRASH_ID), then a new one: once the new
# one is counted, the duplicate must not have been.
cp "$WORK/one.copy" "$SPOOL/one-again.crashlog"
timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --key "$KEY" --yes \
    </dev/null >"$WORK/dup.out" 2>"$WORK/dup.err"
rc=$?
[ "$rc" = 0 ] || fail "duplicate: exit $rc, want 0 (the server should accept it idempotently)"
grep -q 'one-again.crashlog: delivered (id .*) -- the server had it already' "$WORK/dup.err" ||
  fail "duplicate: not said: $(cat "$WORK/dup.err")"
ID3=$(cat /proc/sys/kernel/random/uuid)
mklog "$WORK/three.crashlog" "$ID3" 11 4201103
timeout 60 "$FAULTLINE" submit "$WORK/three.crashlog" --server "$URL" --key "$KEY" >"$WORK/sub.out" 2>&1 ||
    fail "submit to the real server failed"
grep -q 'three.crashlog: accepted ' "$WORK/sub.out" || fail "submit: no accepted id"
c=$(wait_count 3)
sleep 1
c=$(total_count)
[ "$c" = 3 ] || fail "after a duplicate and a new crash the API shows $c, want 3"
grep -q 'duplicate' "$WORK/sub.out" && fail "submit: a new crash called a duplicate"
timeout 60 "$FAULTLINE" submit "$WORK/three.crashlog" --server "$URL" --key "$KEY" >"$WORK/sub2.out" 2>&1 ||
    fail "submit of a resend failed"
grep -q "three.crashlog: accepted $ID3 (a duplicate: the server had this crash already)" "$WORK/sub2.out" ||
  fail "submit: resend not said: $(cat "$WORK/sub2.out")"
echo "ok [e2e_server]"
