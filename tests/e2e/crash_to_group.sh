#!/usr/bin/env bash
# Real crash -> spool -> faultline-report -> faultline serve -> API.
set -u
CRASHER=$1 PLAIN=$2 PRELOAD=$3 REPORTER=$4 FAULTLINE=$5
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-e2e.XXXXXX")
SPOOL=$WORK/spool
ADMIN=e2e-admin-$$ KEY=e2e-key-$$
cleanup() {
    if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL [e2e]: $*" >&2
    for f in "$WORK"/*.err "$WORK/err"; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
    exit 1
}
unset FAULTLINE_URL FAULTLINE_REPORTER
export FAULTLINE_SPOOL=$SPOOL
# Sanitizer builds: let our handler see the signals.
export ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0:detect_leaks=0:verify_asan_link_order=0

# 1. Crash: three of one kind, two of another, one unmodified program.
for i in 1 2 3; do
    E2E_VERSION=1.$i "$CRASHER" null 2>/dev/null
    rc=$?; [ $rc = 139 ] || fail "null crash exit $rc, want 139 (SIGSEGV)"
done
for i in 1 2; do
    "$CRASHER" abort 2>/dev/null
    rc=$?; [ $rc = 134 ] || fail "abort exit $rc, want 134 (SIGABRT)"
done
LD_PRELOAD=$PRELOAD FAULTLINE_APP=plainapp FAULTLINE_VERSION=9 "$PLAIN" 2>/dev/null
rc=$?; [ $rc = 139 ] || fail "preloaded crash exit $rc, want 139"
n=$(ls "$SPOOL"/*.crashlog | wc -l)
[ "$n" = 6 ] || fail "$n crash logs in the spool, want 6"

# 2. Server on a free port (it picks one and prints it).
FL=$FAULTLINE work=$WORK
. "$(dirname "$0")/../lib/server.sh"
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
start "$WORK/data"
BASE=$(url "")
curl -fsS -m 5 "$BASE/healthz" >/dev/null || fail "server never answered /healthz"

# 3. Report.
timeout 120 "$REPORTER" --spool "$SPOOL" --url "$BASE/" --key "$KEY" --yes </dev/null \
    >"$WORK/report.out" 2>"$WORK/report.err"
rc=$?; [ $rc = 0 ] || fail "faultline-report exit $rc, want 0"
[ -z "$(ls "$SPOOL"/*.crashlog 2>/dev/null)" ] || fail "spool not empty after delivery"

# 4. The API: two groups for e2eapp with counts 3 and 2, one for plainapp.
counts=$(wait_counts e2eapp "3 2")
[ "$counts" = "3 2" ] || fail "e2eapp group counts '$counts', want '3 2'"
api "/api/v1/groups?app=e2eapp" > "$WORK/groups.json" || fail "groups"
python3 - "$WORK/groups.json" <<'PY' || fail "group contents"
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
big = max(g, key=lambda x: x["count"])
assert big["affected"] == 1, big            # one installation (one spool)
assert big["status"] == "open", big
for k in ("id", "signature", "first_seen", "last_seen"):
    assert k in big, k
PY
# The flight recorder of a crash, as the API shows it after processing.
crash=$(python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["groups"]; print(max(g, key=lambda x: x["count"])["id"])' "$WORK/groups.json")
api "/api/v1/groups/$crash" > "$WORK/group.json" || fail "group detail"
crash=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sample_crashes"][0])' "$WORK/group.json")
api "/api/v1/crashes/$crash" > "$WORK/crash.json" || fail "crash $crash"
python3 - "$WORK/crash.json" <<'PY' || fail "flight recorder in the processed crash"
import json, sys
c = json.load(open(sys.argv[1]))
texts = [t["text"] for t in c["trace"]]
assert texts == ["record 0 of input.dat at 0.0%", "record 1 of input.dat at 33.3%",
                 "record 2 of input.dat at 66.7%"], texts
assert all(t["tid"] > 0 and t["time_ns"] > 1.7e18 for t in c["trace"]), c["trace"]
# The crasher is built with -finstrument-functions: each event has the
# calling context it was recorded in (all three in the same function).
ctxs = {t.get("context") for t in c["trace"]}
assert len(ctxs) == 1 and None not in ctxs, c["trace"]
b = c["breadcrumbs"]
assert [(x["category"], x["message"]) for x in b] == [("file", "opened input.dat")], b
assert c["metadata"]["state"] == {"stage": "loading input"}, c["metadata"]["state"]
PY
# The crashing thread's calling context: served with the crash, and decoded
# by `faultline decode` from the program alone into a stack whose functions
# are, in order, among the frames the server symbolicated.
ctx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"][0]["context"])' "$WORK/crash.json") ||
    fail "no context for the crashed thread"
"$FAULTLINE" decode --context "$ctx" --obj "$CRASHER" >"$WORK/ctx.out" 2>"$WORK/ctx.err" ||
    fail "faultline decode --context $ctx exit $?"
python3 - "$WORK/crash.json" "$WORK/ctx.out" <<'PY' || fail "decoded context against the crash's frames"
import json, re, sys
c = json.load(open(sys.argv[1]))
frames = [f.get("function") for f in c["threads"][0]["frames"]]
got = re.findall(r"^ +#\d+ (\S+) ", open(sys.argv[2]).read(), re.M)
assert len(got) >= 2 and got[-1] == "main", got
it = iter(frames)
assert all(any(f == g for f in it) for g in got), (got, frames)
PY
plain=$(wait_counts plainapp 1)
[ "$plain" = 1 ] || fail "plainapp (LD_PRELOAD) count '$plain', want 1"
echo "ok [e2e]: 6 real crashes -> 3 groups"
