#!/bin/bash
# `faultline serve` and a crash in a stripped library with no debug file
# anywhere: the library's own exports (.dynsym, at OBJECT_PATH on this
# machine) name its exported function, never its static ones; the crash
# says "exports_only" and is partial; the debug file uploaded later
# re-processes it into the full stack.
. "$(dirname "$0")/svc_common.sh"
[ -x "${FL:-}" ] || fail "FL (the faultline binary) is not set"
[ -f "$SVC_SOLIB_DEBUG_DIR/svc_solib.debug" ] || fail "no $SVC_SOLIB_DEBUG_DIR/svc_solib.debug"
work=$WORK ADMIN=test-admin-token KEY=test-ingest-key
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
. "$SVC_SRC/../lib/server.sh"
SVC_CLEANUP+=('[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null')

crash solib
start "$WORK/d" --workers 1

# submit: post $LOG, CID its crash id, crash.json once processed.
submit() {
    local c
    c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' --data-binary @"$LOG")
    [ "$c" = 200 ] || fail "submit -> $c $(cat "$work/body")"
    CID=$(field id <"$work/body")
    wait_processed "$CID" "$work/crash.json" 300
}
submit
python3 - "$work/crash.json" <<'EOF' || fail "the crash in the stripped library: $(head -c 2000 "$work/crash.json")"
import json, sys
c = json.load(open(sys.argv[1]))
names = [f.get("function") for f in c["threads"][0]["frames"] if f.get("module") == "libsvc_solib.so"]
print("library frames:", names)
assert "svc_solib_entry" in names, "the exported function is not named"
assert not any(n and n.startswith("solib_") for n in names), "a static function was named"
entry = [f for f in c["threads"][0]["frames"] if f.get("function") == "svc_solib_entry"][0]
assert not entry.get("file") and not entry.get("line"), "a file or line without the debug file"
mods = {m["module"]: m for m in c["symbols"]["modules"]}
lib = mods["libsvc_solib.so"]
assert lib["symbols"] is True and lib.get("exports_only") is True, lib
assert c["symbols"]["status"] == "partial", c["symbols"]["status"]
assert not mods["svc_crash"].get("exports_only"), mods["svc_crash"]
print("group:", c.get("group_id"))
EOF
echo "ok: the exported function named from .dynsym, the crash partial"

# The debug file, uploaded: the crash is re-processed with every frame.
c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: svc_solib.debug' \
    --data-binary @"$SVC_SOLIB_DEBUG_DIR/svc_solib.debug")
[ "$c" = 201 ] || fail "debug file upload -> $c $(cat "$work/body")"
for _ in $(seq 300); do
    admin "$(url "/api/v1/crashes/$CID")" >"$work/crash.json"
    grep -q '"function":"solib_faulting_store"' "$work/crash.json" &&
        grep -q '"state":"processed"' "$work/crash.json" && break
    sleep 0.1
done
python3 - "$work/crash.json" <<'EOF' || fail "after the upload: $(head -c 2000 "$work/crash.json")"
import json, sys
c = json.load(open(sys.argv[1]))
names = [f.get("function") for f in c["threads"][0]["frames"] if f.get("module") == "libsvc_solib.so"]
print("library frames:", names)
assert names[0] == "solib_faulting_store" and "solib_recurse" in names and "svc_solib_entry" in names, names
lib = [m for m in c["symbols"]["modules"] if m["module"] == "libsvc_solib.so"][0]
assert not lib.get("exports_only"), lib
EOF
echo "ok: the debug file re-processed the crash"
stop || fail "shutdown rc"
echo PASS
