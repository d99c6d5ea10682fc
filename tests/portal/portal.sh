#!/usr/bin/env bash
# portal.sh FAULTLINE BUILD_DIR E2E_CRASHER CTX_APP TAIL_APP: the web portal in a real
# browser.  A server on a free loopback port gets crash logs (two groups of
# a demo application over two versions and two OSes, one from an
# application whose name and trace event are markup, one sent with the key
# of a second project, one whose names are wider than a window, a real
# crash of E2E_CRASHER, which the server symbolicates, and one of CTX_APP,
# built with -finstrument-functions, whose calling contexts the server
# decodes, and one of TAIL_APP (tests/e2e/tailcall.c) with a frame a
# tail call left off), then tests/portal/portal.mjs drives Debian's Chromium through
# the portal with playwright-core (npm, installed from
# tests/portal/package-lock.json into BUILD_DIR).
set -u
FL=$1 BUILD=$2 CRASHER=$3 CTXAPP=$4 TAILAPP=$5
HERE=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-portal.XXXXXX")
ADMIN=portal-admin-$$ KEY=portal-key-$$
cleanup() {
    if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL [portal]: $*" >&2
    [ -f "$work/err" ] && tail -n 20 "$work/err" >&2
    exit 1
}
command -v node >/dev/null || fail "node is not installed (scripts/deps.sh)"
CHROMIUM=${CHROMIUM:-$(command -v chromium || echo /usr/bin/chromium)}
[ -x "$CHROMIUM" ] || fail "chromium is not installed (scripts/deps.sh)"
export CHROMIUM

# playwright-core, as the lock file pins it (the browser is Debian's).
mods=$BUILD/portal-test
if [ ! -f "$mods/node_modules/playwright-core/package.json" ] ||
   ! cmp -s "$HERE/package-lock.json" "$mods/package-lock.json"; then
    mkdir -p "$mods"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$mods/"
    (cd "$mods" && npm ci --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1) ||
        { cat "$work/npm.log" >&2; fail "npm ci"; }
fi
cp "$HERE/portal.mjs" "$mods/"

export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
. "$HERE/../lib/server.sh"
start "$work/data"

# mklog ID APP VERSION OS FRAME... : a small version-2 crash log.
n=0
mklog() {
    local id=$1 app=$2 ver=$3 os=$4
    shift 4
    n=$((n + 1))
    {
        printf 'FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME %s\nAPPLICATION_VERSION %s\n' "$app" "$ver"
        printf 'PLATFORM_NAME linux\nCPUARCH_NAME x86-64\nPLATFORM_VERSION 6.1.0\nCRASH_SIGNAL 11\n'
        printf 'CRASH_TIME 1795000000\nCRASH_ID %s\nINSTALL_ID 0000000%s-0000-4000-8000-000000000000\nOS_PRETTY_NAME %s\n' "$id" "$((n % 3))" "$os"
        printf 'OBJECT /usr/bin/demo/4194304/1048576/0\n'
        for f in "$@"; do printf 'CALLSTACK %s\n' "$f"; done
        # The fifth: from a process with more threads and objects than a log keeps,
        # and a vfork() child's (VFORK_PARENT), ended by an uncaught C++
        # exception whose what() is markup.
        [ "$n" != 5 ] || printf 'THREAD 4243 worker\nTHREADS_OMITTED 300\nOBJECTS_OMITTED 40\nVFORK_PARENT 4242\n'
        [ "$n" != 5 ] || printf 'EXCEPTION_TYPE St13runtime_error\nEXCEPTION_MESSAGE <img src=x onerror="window.__pwned=4">\n'
        [ "$n" != 5 ] || printf 'ABORT_MESSAGE demo: a.c:3: main: Assertion `<b>x</b>'"'"' failed.\n'
        # An event whose format the program kept apart, with no debug file.
        [ "$n" != 5 ] || printf 'TRACE_ID 1795000000000000001 42 0x400100 s 0x30\nTRACE_BYTES 3c623e00\n'
        printf 'TRACE 1795000000000000000 42 <script>window.__pwned=2</script>\nEND\n'
    } >"$work/log$n.crashlog"
}
A="4198464 4202496 4206592" B="4199000 4203000 4207000"
mklog 00000000-0000-4000-8000-000000000001 demo 1.0 "Debian GNU/Linux 12 (bookworm)" $A
mklog 00000000-0000-4000-8000-000000000002 demo 1.0 "Debian GNU/Linux 12 (bookworm)" $A
mklog 00000000-0000-4000-8000-000000000003 demo 1.1 "Ubuntu 24.04 LTS" $A
mklog 00000000-0000-4000-8000-000000000004 demo 1.1 "Ubuntu 24.04 LTS" $B
# Its OS name ends in a right-to-left override (U+202E), which would turn
# the text after it around.
mklog 00000000-0000-4000-8000-000000000005 '<img src=x onerror="window.__pwned=1">' 2.0 \
    "<b>bold</b> OS $(printf '\342\200\256')RTL" $A
mklog 00000000-0000-4000-8000-000000000006 pocket 3.0 "Debian GNU/Linux 12 (bookworm)" $A
# Names far wider than a window, without a blank to wrap at.
mklog 00000000-0000-4000-8000-000000000007 "long-$(printf 'x%.0s' $(seq 1000))" \
    "9.$(printf '9%.0s' $(seq 300))" "OS-$(printf 'o%.0s' $(seq 500))" $B
"$FL" submit "$work"/log[1-47].crashlog --server "$(url /)" --key "$KEY" >"$work/submit" 2>&1 ||
    fail "submit: $(cat "$work/submit")"
# The hostile one as faultline-report sends it, with the user's address
# (an address the server keeps: it has an '@' and no control character).
c=$(curl -s -o "$work/post5" -w '%{http_code}' -H "X-Faultline-Key: $KEY" \
    -F "report=@$work/log5.crashlog" --form-string 'email=<img src=x onerror="window.__pwned=3">@example.org' "$(url /)")
[ "$c" = 200 ] || fail "posting the hostile log: $c $(cat "$work/post5")"
# A second project, "mobile", and one crash sent with its key: its own
# group, the only one the portal's project filter shows for it.
c=$(code POST /api/v1/projects -H "Authorization: Bearer $ADMIN" -d '{"id":"mobile"}')
[ "$c" = 201 ] || fail "creating a project: $c $(cat "$work/body")"
PKEY=$(field ingest_key <"$work/body")
[ -n "$PKEY" ] || fail "no ingest key for the new project: $(cat "$work/body")"
"$FL" submit "$work/log6.crashlog" --server "$(url /)" --key "$PKEY" >"$work/submit" 2>&1 ||
    fail "submit with the project's key: $(cat "$work/submit")"
# A real crash: its frames get names from a debug file of the program
# uploaded without the dwz file its DWARF links to (dwz -m of two copies),
# so the crash page says which file it lacks.
command -v dwz >/dev/null || fail "dwz is not installed (scripts/deps.sh installs it)"
objcopy --only-keep-debug "$CRASHER" "$work/crasher.debug" || fail "objcopy"
cp "$work/crasher.debug" "$work/crasher2.debug"
dwz -m "$work/crasher.dwz" -M /nonexistent/faultline-portal-test.dwz \
    "$work/crasher.debug" "$work/crasher2.debug" || fail "dwz -m"
c=$(code POST /api/v1/symbols -H "Authorization: Bearer $ADMIN" --data-binary @"$work/crasher.debug")
[ "$c" = 201 ] || fail "upload of the crasher's debug file: $c $(cat "$work/body")"
FAULTLINE_SPOOL=$work/spool ASAN_OPTIONS=handle_segv=0:detect_leaks=0:verify_asan_link_order=0 \
    "$CRASHER" null 2>/dev/null
[ $? = 139 ] || fail "the crasher did not crash"
"$FL" submit "$work"/spool/*.crashlog --server "$(url /)" --key "$KEY" >"$work/submit" 2>&1 ||
    fail "submit: $(cat "$work/submit")"
# A crash with calling contexts (the program stays where the log says).
rm -rf "$work/spool"
FAULTLINE_SPOOL=$work/spool \
    ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0:use_sigaltstack=0:allow_user_segv_handler=1:verify_asan_link_order=0 \
    "$CTXAPP" crash >"$work/ctx.out" 2>&1
grep -q '^CRASH_CONTEXT 0x' "$work"/spool/*.crashlog || fail "the context crash wrote no CRASH_CONTEXT"
"$FL" submit "$work"/spool/*.crashlog --server "$(url /)" --key "$KEY" >"$work/submit" 2>&1 ||
    fail "submit: $(cat "$work/submit")"
# A crash through a tail call (release_a jumps to crash_site), with the
# program's symbols: its page shows the frame put back.
rm -rf "$work/spool"
"$FL" symbols add "$TAILAPP" --server "$(url "")" >"$work/sym.out" 2>&1 ||
    fail "symbols add: $(cat "$work/sym.out")"
FAULTLINE_SPOOL=$work/spool ASAN_OPTIONS=handle_segv=0:detect_leaks=0:verify_asan_link_order=0 \
    "$TAILAPP" a 2>/dev/null
[ $? = 139 ] || fail "the tail-call program did not crash"
"$FL" submit "$work"/spool/*.crashlog --server "$(url /)" --key "$KEY" >"$work/submit" 2>&1 ||
    fail "submit: $(cat "$work/submit")"
# Wait until all ten are processed into their eight groups.
for _ in $(seq 100); do
    total=$(admin "$(url /api/v1/groups)" | python3 -c \
        'import json,sys; print(sum(g["count"] for g in json.load(sys.stdin)["groups"]))')
    [ "$total" = 10 ] && break
    sleep 0.1
done
[ "$total" = 10 ] || fail "the groups count $total crashes, want 10"

# The page a browser gets at /, and its headers.
curl -s -D "$work/headers" -H 'Accept: text/html' -o "$work/index.html" "$(url /)"
grep -q '<title>Faultline</title>' "$work/index.html" || fail "no portal at / for a browser"
grep -qi "^content-security-policy: default-src 'none'; script-src 'self'" "$work/headers" ||
    fail "the portal has no content security policy"

mkdir -p "$BUILD/portal-screenshots"
(cd "$mods" && timeout 240 node portal.mjs "$(url "")" "$ADMIN" "$BUILD/portal-screenshots") ||
    fail "the browser run failed"
