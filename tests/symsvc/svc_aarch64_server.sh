#!/bin/bash
# An aarch64 device's crash on an x86-64 `faultline serve`, end to end.
# svc_crash cross-compiled with pac-ret (svc_crash_a64_pac), stripped as it
# would ship, crashes in mode nocfi under qemu-user; its files are then
# gone, as a device's are from the server.  Until the program's debug file
# is uploaded the group is the client's stack by offsets.  The upload (the
# unstripped program: its DWARF, and the code and .debug_frame the
# server's unwind reads) re-processes the crash: the server unwinds the
# aarch64 stack itself, through the functions the client could not pass,
# strips the signed return addresses, names every frame and regroups.
. "$(dirname "$0")/svc_common.sh"
: "${SVC_CRASH_A64_PAC_BIN:?}" "${SVC_A64_SYSROOT:?}" "${SVC_QEMU_A64:?}" "${SVC_A64_STRIP:?}" "${FL:?}"
CRASH_ENV=()
ADMIN=test-admin-token KEY=test-ingest-key
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
work=$WORK
. "$SVC_SRC/../lib/server.sh"
SVC_CLEANUP+=('[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null')

dev="$WORK/device"
mkdir -p "$dev"
cp "$SVC_CRASH_A64_PAC_BIN" "$dev/app" && "$SVC_A64_STRIP" "$dev/app" || fail "cannot strip a copy"
printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "$SVC_QEMU_A64" "$SVC_A64_SYSROOT" "$dev/app" > "$dev/run"
chmod +x "$dev/run"
crash nocfi "$dev/run"
rm -rf "$dev"
grep -q '^CPUARCH_NAME aarch64$' "$LOG" || fail "not an aarch64 log"

start "$WORK/d"
c=$(code POST /api/v1/crashes -H "X-Faultline-Key: $KEY" -H 'Content-Type: text/plain' --data-binary @"$LOG")
[ "$c" = 200 ] || fail "submit -> $c $(cat "$WORK/body")"
CID=$(field id < "$WORK/body")
wait_processed "$CID" "$WORK/crash.json"
old=$(field group_id < "$WORK/crash.json")
admin "$(url "/api/v1/groups/$old")" > "$WORK/g0.json"
grep -q '"signature":"app+0x' "$WORK/g0.json" \
    || fail "before the upload: $(grep -o '"signature":"[^"]*"' "$WORK/g0.json")"
echo "ok: before the upload: $(grep -o '"signature":"[^"]*"' "$WORK/g0.json")"

c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" -H 'X-Faultline-Name: app' \
    --data-binary @"$SVC_CRASH_A64_PAC_BIN")
[ "$c" = 201 ] || fail "upload -> $c $(cat "$WORK/body")"
new=$old
for _ in $(seq 200); do
    new=$(admin "$(url "/api/v1/crashes/$CID")" | field group_id)
    [ -n "$new" ] && [ "$new" != "$old" ] && break
    sleep 0.1
done
[ "$new" != "$old" ] || fail "the crash was not regrouped after the upload"
admin "$(url "/api/v1/groups/$new")" > "$WORK/g1.json"
# (A signature keeps the top five frames.)
want='"signature":"crash_in_compare | nocfi_inner | nocfi_middle | svc_nocfi_outer | run_nocfi"'
grep -qF "$want" "$WORK/g1.json" \
    || fail "after the upload: $(grep -o '"signature":"[^"]*"' "$WORK/g1.json"), expected $want"
grep -Eq '"function":"nocfi_middle","file":"[^"]*svc_nocfi\.c","line":[0-9]+' "$WORK/g1.json" \
    || fail "no nocfi_middle frame with its file and line: $(head -c 1500 "$WORK/g1.json")"
grep -q '"arch":\[{"arch":"aarch64","count":1}\]' "$WORK/g1.json" \
    || fail "the group's architectures: $(grep -o '"arch":\[[^]]*\]' "$WORK/g1.json")"
echo "ok: after the upload: $want, on aarch64"
stop || fail "shutdown rc"
echo "PASS"
