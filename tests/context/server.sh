#!/usr/bin/env bash
# Calling contexts decoded by the server: GET /api/v1/crashes/ID/contexts
# on a real `faultline serve`, for crashes of ctx_app (built with
# -finstrument-functions).
#   - The program is where the log says: every context is decoded to the
#     stack the program printed; a second crash of the same build reuses
#     the call graph; a second look comes from the cache.
#   - The program is gone from its path: the contexts are not decoded and
#     the answer names the missing file; once the program is uploaded
#     (POST /api/v1/symbols), the next look decodes them.
#   - A stripped program with the static archive's hooks (CTX_SOLO, which
#     exports nothing): decoded once its debug file is uploaded.
#   - A crash without contexts, an unknown crash, no token, a FIFO path.
#   - A hostile log with 2,000 distinct contexts: bounded work (256
#     values), an answer, and a server that still stops promptly.
# usage: server.sh FAULTLINE CTX_APP CTX_SOLO
set -u
FL=$1 APP=$2 SOLO=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-ctxsrv.XXXXXX")
ADMIN=ctx-admin-$$ KEY=ctx-key-$$
cleanup() {
    # A server stuck opening the FIFO below (the bug that part tests for)
    # is let go by a writer, so that it can stop.
    [ -p "$work/fifo" ] && { : 3<>"$work/fifo"; } 2>/dev/null
    if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL [context server]: $*" >&2
    [ -f "$work/err" ] && tail -n 20 "$work/err" >&2
    exit 1
}
pass=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }

# Only what this test gives: no debuginfod, no system debug files matter.
unset DEBUGINFOD_URLS
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
. "$(dirname "$0")/../lib/server.sh"

# crash PROGRAM: crashes it into a fresh spool; sets LOG and OUT.
n=0
crash() {
    n=$((n + 1))
    rm -rf "$work/spool"
    OUT=$work/crash$n.out
    FAULTLINE_SPOOL=$work/spool \
        ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1:verify_asan_link_order=0 \
        "$1" crash >"$OUT" 2>&1
    LOG=$(ls "$work"/spool/*.crashlog 2>/dev/null | head -1)
    [ -n "$LOG" ] || fail "$1 crash left no crash log: $(cat "$OUT")"
    cp "$LOG" "$work/log$n.crashlog"
    LOG=$work/log$n.crashlog
}
# send LOG: posts it, prints the crash id; without one, says what the
# server answered (to stderr: this runs in $(...)) and keeps the log.
send() {
    local out id
    out=$(curl -s -w ' HTTP %{http_code}' -H "X-Faultline-Key: $KEY" --data-binary @"$1" \
        "$(url /api/v1/crashes)")
    id=$(echo "$out" | field id)
    if [ -z "$id" ]; then
        echo "FAIL [context server]: posting $1 gave no crash id: $out" >&2
        cp "$1" "${TMPDIR:-/tmp}/context-server-unsent.crashlog" 2>/dev/null
    fi
    echo "$id"
}
# contexts ID: polls the route until it answers other than 202 (30 s at
# most); the body is in $work/body, the status printed.
contexts() {
    local c
    for _ in $(seq 150); do
        c=$(code GET "/api/v1/crashes/$1/contexts" -H "Authorization: Bearer $ADMIN")
        [ "$c" = 202 ] || break
        grep -q '"status":"pending"' "$work/body" || fail "202 without pending: $(cat "$work/body")"
        sleep 0.2
    done
    echo "$c"
}
# stack SELECTOR: the function names of the context the selector picks
# (crashed: the crashed thread's; other: another thread's), GCC's clone
# suffixes dropped; or its status when it was not decoded.
stack() {
    python3 - "$1" "$work/body" <<'EOF'
import json, sys
which, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
for c in r["contexts"]:
    if (which == "crashed") == c["crashed"] and (which == "crashed" or c["threads"]):
        if c["status"] != "decoded":
            print(c["status"])
        else:
            print(" ".join(f["function"].split(".")[0] for f in c["frames"]))
        break
EOF
}
metric() { curl -s "$(url /metrics)" | sed -n "s/^$1 //p"; }

start "$work/data"

# ---- the program where the log says ----
crash "$APP"
want_c=$(sed -n 's/^CRASH_EXPECT //p' "$OUT")
want_t=$(sed -n 's/^THREAD_EXPECT //p' "$OUT")
[ -n "$want_c" ] && [ -n "$want_t" ] || fail "ctx_app printed no expected stacks: $(cat "$OUT")"
id1=$(send "$LOG")
[ -n "$id1" ] || fail "the crash was not accepted"
c=$(contexts "$id1")
[ "$c" = 200 ] || fail "contexts of $id1 -> $c $(cat "$work/body")"
got=$(stack crashed)
[ "$got" = "$want_c" ] || fail "crashed thread decoded to '$got', want '$want_c': $(cat "$work/body")"
got=$(stack other)
[ "$got" = "$want_t" ] || fail "parked thread decoded to '$got', want '$want_t': $(cat "$work/body")"
ok "the crashed and the parked thread's contexts decoded to their stacks"
python3 - "$work/body" "$(basename "$APP")" <<'EOF' || fail "the answer's details: $(cat "$work/body")"
import json, sys
r = json.load(open(sys.argv[1]))
app = sys.argv[2]
crashed = [c for c in r["contexts"] if c["crashed"]][0]
# "about to crash" was traced in the crashing function: one event.
assert crashed["events"] == 1, crashed
assert len(crashed["threads"]) == 1, crashed
assert all(f["module"] == app for f in crashed["frames"]), crashed
assert all(f["address"].startswith("0x") for f in crashed["frames"]), crashed
files = {f["module"]: f for f in r["files"]}
assert files[app]["status"] == "used" and files[app]["source"] == "object", files
# The C library defines empty hooks; it is not part of the graph.
assert files["libc.so.6"]["status"] == "not instrumented", files
EOF
ok "events, threads, modules and files as documented"
# The same build again: its graph is kept; the first crash's answer is
# cached (no new decoding).
crash "$APP"
id2=$(send "$LOG")
c=$(contexts "$id2")
[ "$c" = 200 ] && [ "$(stack crashed)" = "$want_c" ] || fail "second crash: $c $(cat "$work/body")"
[ "$(metric faultline_context_graphs_built_total)" = 1 ] ||
    fail "graphs built for two crashes of one build: $(metric faultline_context_graphs_built_total)"
crashes_before=$(metric 'faultline_contexts_total{result="decoded"}')
c=$(code GET "/api/v1/crashes/$id1/contexts" -H "Authorization: Bearer $ADMIN")
[ "$c" = 200 ] && [ "$(stack crashed)" = "$want_c" ] || fail "a second look: $c $(cat "$work/body")"
[ "$(metric 'faultline_contexts_total{result="decoded"}')" = "$crashes_before" ] ||
    fail "a second look decoded again"
ok "one graph for two crashes of a build; a second look from the cache"

# ---- the program gone from its path, then uploaded ----
mkdir -p "$work/bin"
cp "$APP" "$work/bin/ctx_app_copy"
crash "$work/bin/ctx_app_copy"
rm -f "$work/bin/ctx_app_copy"
id3=$(send "$LOG")
c=$(contexts "$id3")
[ "$c" = 200 ] || fail "contexts with the program gone -> $c"
got=$(stack crashed)
[ "$got" = not_found ] || fail "with the program gone, the crashed thread's context is '$got'"
python3 - "$work/body" <<'EOF' || fail "the missing program is not named: $(cat "$work/body")"
import json, sys
r = json.load(open(sys.argv[1]))
files = {f["module"]: f for f in r["files"]}
assert files["ctx_app_copy"]["status"] == "missing", files
assert [c for c in r["contexts"] if c["crashed"]][0]["message"], r
EOF
ok "the program gone: not decoded, and the answer names the missing file"
c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" \
    --data-binary @"$APP")
[ "$c" = 201 ] || fail "uploading the program -> $c $(cat "$work/body")"
c=$(contexts "$id3")
[ "$c" = 200 ] && [ "$(stack crashed)" = "$want_c" ] && [ "$(stack other)" = "$want_t" ] ||
    fail "after the upload: $c $(stack crashed) $(cat "$work/body")"
grep -q '"module":"ctx_app_copy","build_id":"[0-9a-f]*","status":"used","source":"upload"' "$work/body" ||
    fail "the uploaded program is not the file used: $(cat "$work/body")"
ok "uploaded: the next look decodes with the uploaded program"

# ---- a crash without contexts, an unknown crash, no token ----
sed -e '/_CONTEXT /d' -e 's/^CRASH_ID .*/CRASH_ID 00000000-0000-4000-8000-00000000c0de/' "$LOG" \
    >"$work/plain.crashlog"
id4=$(send "$work/plain.crashlog")
[ "$id4" = 00000000-0000-4000-8000-00000000c0de ] || fail "the log without contexts: id '$id4'"
c=$(code GET "/api/v1/crashes/$id4/contexts" -H "Authorization: Bearer $ADMIN")
[ "$c" = 200 ] && grep -q '"contexts":\[\]' "$work/body" || fail "no contexts -> $c $(cat "$work/body")"
c=$(code GET /api/v1/crashes/no-such-crash/contexts -H "Authorization: Bearer $ADMIN")
[ "$c" = 404 ] || fail "an unknown crash -> $c"
c=$(code GET "/api/v1/crashes/$id1/contexts")
[ "$c" = 401 ] || fail "no token -> $c"
ok "no contexts: an empty list; unknown crash 404; no token 401"
# A log whose program path is a FIFO (a hostile client, or a stale path):
# the server must not block opening it, and finds the upload instead.
mkfifo "$work/fifo"
sed -e "s|^OBJECT_PATH $APP\$|OBJECT_PATH $work/fifo|" \
    -e 's/^CRASH_ID .*/CRASH_ID 00000000-0000-4000-8000-00000000f1f0/' "$work/log1.crashlog" \
    >"$work/fifo.crashlog"
grep -q "^OBJECT_PATH $work/fifo\$" "$work/fifo.crashlog" || fail "the FIFO log has no FIFO path"
id5=$(send "$work/fifo.crashlog")
c=$(contexts "$id5")
[ "$c" = 200 ] && [ "$(stack crashed)" = "$want_c" ] || fail "a FIFO as the program's path: $c $(cat "$work/body")"
ok "a FIFO as the program's path is not opened for reading"
[ "$(metric faultline_context_queue)" = 0 ] || fail "the decoder's queue is not empty"

# ---- a stripped program whose only sign of the hooks is their definition ----
objcopy --only-keep-debug "$SOLO" "$work/bin/ctx_solo.debug" || fail "objcopy"
strip -o "$work/bin/ctx_solo" "$SOLO" || fail "strip"
! nm -D "$work/bin/ctx_solo" | grep -q faultline_context || fail "ctx_solo exports faultline_context"
crash "$work/bin/ctx_solo"
want_s=$(sed -n 's/^SOLO_EXPECT //p' "$OUT")
id6=$(send "$LOG")
c=$(contexts "$id6")
[ "$c" = 200 ] && [ "$(stack crashed)" != "$want_s" ] ||
    fail "the stripped program decoded without its debug file: $c $(cat "$work/body")"
c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$work/bin/ctx_solo.debug")
[ "$c" = 201 ] || fail "uploading the debug file -> $c $(cat "$work/body")"
c=$(contexts "$id6")
[ "$c" = 200 ] && [ "$(stack crashed)" = "$want_s" ] ||
    fail "stripped program + uploaded debug file: $c '$(stack crashed)', want '$want_s': $(cat "$work/body")"
grep -q '"module":"ctx_solo","build_id":"[0-9a-f]*","status":"used","source":"object"' "$work/body" ||
    fail "the stripped program is not in the graph: $(cat "$work/body")"
ok "a stripped program with the static archive's hooks, its debug file uploaded"
stop || fail "the server did not stop cleanly"

# ---- a hostile log: 2,000 distinct contexts ----
# A small budget per value keeps the test short; the bounds are the same.
start "$work/data" --context-max-paths 200000
awk 'BEGIN { srand(7) }
     /^CRASH_ID / { print "CRASH_ID 00000000-0000-4000-8000-0000000ba5e1"; next }
     /^END$/ { for (i = 0; i < 2000; i++)
                 printf "TRACE %d 1 hostile %d\nTRACE_CONTEXT 0x%08x%08x\n", 1795000000000000000 + i, i,
                        int(rand() * 4294967295), int(rand() * 4294967295) }
     { print }' "$work/log1.crashlog" >"$work/hostile.crashlog"
id7=$(send "$work/hostile.crashlog")
[ "$id7" = 00000000-0000-4000-8000-0000000ba5e1 ] || fail "the hostile log was not accepted: '$id7'"
c=$(contexts "$id7")
[ "$c" = 200 ] || fail "the hostile log: $c $(head -c 300 "$work/body")"
uses=$(grep -c '_CONTEXT 0x' "$work/hostile.crashlog")
python3 - "$work/body" "$uses" <<'EOF' || fail "the hostile log's answer (above)"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["contexts"]) == 256, len(r["contexts"])
# Every thread and trace event with a context: listed with its value, or
# counted among the omitted.
listed = sum(len(c["threads"]) + c["events"] for c in r["contexts"])
assert listed + r["omitted"] == int(sys.argv[2]), (listed, r["omitted"], sys.argv[2])
assert any(c["status"] == "decoded" for c in r["contexts"] if c["crashed"]), "crashed thread"
EOF
ok "a hostile log: 256 values decoded or tried, the rest counted, an answer"
stop || fail "the server did not stop cleanly"
# Stopping while the decoder works on another, with the default budget
# (seconds of searching): prompt, at the end of the search under way.
start "$work/data"
sed 's/^CRASH_ID .*/CRASH_ID 00000000-0000-4000-8000-0000000ba5e2/' "$work/hostile.crashlog" \
    >"$work/hostile2.crashlog"
id8=$(send "$work/hostile2.crashlog")
c=$(code GET "/api/v1/crashes/$id8/contexts" -H "Authorization: Bearer $ADMIN")
[ "$c" = 202 ] || fail "the second hostile log -> $c"
sleep 1
c=$(code GET "/api/v1/crashes/$id8/contexts" -H "Authorization: Bearer $ADMIN")
[ "$c" = 202 ] || fail "the decoder was not busy with the second hostile log: $c"
t0=$(date +%s)
stop || fail "the server did not stop cleanly while decoding"
[ $(($(date +%s) - t0)) -le 20 ] || fail "stopping took $(($(date +%s) - t0)) s while decoding"
ok "the server stops while the decoder works"
echo "$pass passed"
