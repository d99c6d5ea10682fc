#!/usr/bin/env bash
# Protocol tests of faultline-report and `faultline submit` against the
# scripted responder (tests/reporter/responder.c).
#
#   reporter_test.sh CASE     with REPORTER, FAULTLINE, RESPONDER in the environment
#
# Each case builds its own spool under a fresh temporary directory, runs the
# real binaries and checks files, exit codes and what the responder recorded.
set -u

: "${REPORTER:?}" "${FAULTLINE:?}" "${RESPONDER:?}"
CASE=${1:?case}
unset FAULTLINE_URL FAULTLINE_INGEST_KEY FAULTLINE_SPOOL
# libcurl would send through a proxy of the environment; the cases that
# want one set it.
unset http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-rep-test.XXXXXX")
SPOOL=$WORK/spool
REC=$WORK/rec
mkdir -p "$SPOOL" "$REC"
RPID=
PORT=

cleanup() {
    if [ -n "$RPID" ]; then kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL [$CASE]: $*" >&2
    for f in "$WORK"/*.err "$WORK"/*.out; do
        [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}
. "$(dirname "$0")/../lib/https.sh"

# mklog FILE [CRASH_ID] [APP] [VERSION]: a complete Faultline (version 2) log.
# Files made two minutes old: a log that does not parse is deleted only
# once it is a minute old.
aged() { touch -d '2 minutes ago' "$@"; }
mklog() {
    local id=${2:-$(cat /proc/sys/kernel/random/uuid)}
    cat >"$1" <<EOF
# This is a log of a program crash.
FAULTLINE 0.1.0
CRASHLOG_VERSION 2
CRASH_ID $id
APPLICATION_NAME ${3:-TestApp}
APPLICATION_VERSION ${4:-1.0}
PLATFORM_NAME linux
CPUARCH_NAME x86-64
PLATFORM_VERSION 6.1.0
CRASH_SIGNAL 11
CRASH_SIGNAL_NAME SIGSEGV
APPLICATION_UPTIME 3
CRASH_TIME 1199350192
OBJECT test-bin/4194304/12124
OBJECT libc.so.6/47641679454208/1381596
CALLSTACK 4201103
CALLSTACK 4200063
CALLSTACK 47641679656912
ETC_KEY note
ETC_VALUE "quoted" text with a tab	and unicode é
END
EOF
}

# start_responder SCRIPT [responder options...]
start_responder() {
    local script=$1
    shift
    rm -f "$WORK/port"
    "$RESPONDER" --port-file "$WORK/port" --record "$REC" --script "$script" --max-seconds 110 "$@" \
        2>"$WORK/responder.err" &
    RPID=$!
    for _ in $(seq 1 100); do
        [ -s "$WORK/port" ] && break
        sleep 0.1
    done
    [ -s "$WORK/port" ] || fail "responder did not start"
    PORT=$(cat "$WORK/port")
    URL="http://127.0.0.1:$PORT/api/v1/crashes"
}

requests() { if [ -f "$REC/count" ]; then cat "$REC/count"; else echo 0; fi; }

# rep [args...]: run the reporter on $SPOOL without a terminal; sets RC.
rep() {
    timeout 90 "$REPORTER" --spool "$SPOOL" --timeout 20 --connect-timeout 5 "$@" \
        </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err"
    RC=$?
}

# rep_tty INPUT: the reporter at a terminal (a pty from script(1)) on
# $SPOOL and $URL, INPUT typed (printf format); sets RC, output in tty.out.
rep_tty() {
    command -v script >/dev/null || { echo "SKIP: script(1) not installed" >&2; exit 77; }
    printf "$1" |
        timeout 60 script -qec "'$REPORTER' --spool '$SPOOL' --url '$URL'" /dev/null >"$WORK/tty.out" 2>&1
    RC=$?
}

nlogs() { find "$SPOOL" -maxdepth 1 -name '*.crashlog' | wc -l; }

expect_rc() { [ "$RC" = "$1" ] || fail "exit code $RC, want $1"; }

case_request_shape() {
    mklog "$SPOOL/20260101-a.crashlog"
    cp "$SPOOL/20260101-a.crashlog" "$WORK/orig"
    start_responder 200
    rep --url "$URL" --key sekrit-key --yes --email 'dev@example.org'
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "want 1 request, got $(requests)"
    [ "$(nlogs)" = 0 ] || fail "delivered log not deleted"
    [ ! -e "$SPOOL/20260101-a.crashlog.retry" ] || fail "retry file left behind"
    local h=$REC/req-1.headers
    head -1 "$h" | grep -qx 'POST /api/v1/crashes' || fail "not a POST to the URL's path"
    grep -qx 'User-Agent: faultline-report/0.1.0' "$h" || fail "User-Agent"
    grep -qx 'Content-Encoding: gzip' "$h" || fail "no Content-Encoding: gzip"
    grep -qx 'X-Faultline-Key: sekrit-key' "$h" || fail "no X-Faultline-Key"
    grep -q '^Content-Type: multipart/form-data; boundary=' "$h" || fail "not multipart"
    # The body on the wire really is gzip, and the log comes out byte-identical.
    [ "$(head -c 2 "$REC/req-1.body" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "body is not gzip"
    cmp -s "$WORK/orig" "$REC/req-1.log" || fail "log not byte-identical after gunzip"
    grep -q 'filename="20260101-a.crashlog"' "$REC/req-1.parthdr" || fail "file part filename"
    grep -qx 'Content-Type: text/plain; charset=utf-8' <(tr -d '\r' <"$REC/req-1.parthdr") ||
        fail "file part content type"
    grep -qx 'app=TestApp' "$REC/req-1.fields" || fail "app field"
    grep -qx 'version=1.0' "$REC/req-1.fields" || fail "version field"
    grep -qx 'email=dev@example.org' "$REC/req-1.fields" || fail "email field"
    grep -q 'delivered (id test-1)' "$WORK/rep.err" || fail "no delivery line"
}

case_no_gzip() {
    mklog "$SPOOL/a.crashlog"
    cp "$SPOOL/a.crashlog" "$WORK/orig"
    start_responder 200
    rep --url "$URL" --yes --no-gzip
    expect_rc 0
    ! grep -qi '^Content-Encoding' "$REC/req-1.headers" || fail "Content-Encoding with --no-gzip"
    cmp -s "$WORK/orig" "$REC/req-1.log" || fail "log not byte-identical"
}

case_garbage() {
    mklog "$SPOOL/b-good.crashlog"
    printf 'this is not a crash log\n' >"$SPOOL/a-garbage.crashlog"
    mklog "$WORK/full"
    head -n 10 "$WORK/full" >"$SPOOL/c-truncated.crashlog"
    : >"$SPOOL/d-empty.crashlog"
    ln -s /etc/passwd "$SPOOL/e-link.crashlog"
    echo "0123-abcd" >"$SPOOL/installation-id"
    printf 'FAULTLINE 0.1.0\n' >"$SPOOL/.tmp-12345.partial"
    # A log that does not parse is deleted once it is a minute old: a
    # younger one may be a copy still under way.
    head -n 10 "$WORK/full" >"$SPOOL/f-young.crashlog"
    aged "$SPOOL/a-garbage.crashlog" "$SPOOL/c-truncated.crashlog" "$SPOOL/d-empty.crashlog"
    start_responder 200
    rep --url "$URL" --yes
    expect_rc 75
    [ -f "$SPOOL/f-young.crashlog" ] || fail "a young log that does not parse was deleted"
    grep -q 'f-young.crashlog: invalid crash log: line 10: incomplete log.*; kept: written [0-9]* s ago, it may still be being written (checked again once it is 60 s old)' \
        "$WORK/rep.err" || fail "young: $(cat "$WORK/rep.err")"
    rm -f "$SPOOL/f-young.crashlog"
    [ "$(requests)" = 1 ] || fail "want 1 request (the good log), got $(requests)"
    grep -q 'CRASH_ID' "$REC/req-1.log" || fail "the request did not carry the good log"
    for f in a-garbage c-truncated d-empty e-link; do
        [ ! -e "$SPOOL/$f.crashlog" ] && [ ! -L "$SPOOL/$f.crashlog" ] || fail "$f not deleted"
        grep -q "$f.crashlog" "$SPOOL/rejected.log" || fail "$f not noted in rejected.log"
    done
    [ -e /etc/passwd ] || fail "followed the symlink"
    grep -q 'a-garbage.crashlog: invalid crash log: line 1: ' "$WORK/rep.err" || fail "garbage: no line+reason"
    grep -q 'c-truncated.crashlog: invalid crash log: line 10: incomplete log' "$WORK/rep.err" ||
        fail "truncated: no line+reason"
    [ -f "$SPOOL/installation-id" ] || fail "touched installation-id"
    [ -f "$SPOOL/.tmp-12345.partial" ] || fail "touched the client's temp file"
}

case_fifo_notes() {
    # A FIFO named rejected.log does not hang the reporter (which holds the
    # spool's lock meanwhile): the note is not written, said so, and the
    # garbage log is still deleted and the good one sent.
    mklog "$SPOOL/b-good.crashlog"
    printf 'junk\n' >"$SPOOL/a-garbage.crashlog"
    aged "$SPOOL/a-garbage.crashlog"
    mkfifo "$SPOOL/rejected.log"
    start_responder 200
    timeout 20 "$REPORTER" --spool "$SPOOL" --url "$URL" --yes </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err"
    RC=$?
    [ "$RC" != 124 ] || fail "the reporter hung on a FIFO named rejected.log"
    expect_rc 0
    [ -p "$SPOOL/rejected.log" ] || fail "the FIFO was replaced"
    grep -q 'cannot write rejected.log: it is a FIFO, a device or a directory, not a regular file' \
        "$WORK/rep.err" || fail "no clear message: $(cat "$WORK/rep.err")"
    [ "$(nlogs)" = 0 ] && [ "$(requests)" = 1 ] || fail "the logs were not handled"
}

case_odd_names() {
    # File names with an ESC or a newline are printed with those bytes as
    # '?': on the terminal, and in rejected.log, where a newline would
    # forge a line.
    local esc=$'\e' nl=$'\n'
    mklog "$SPOOL/good${esc}[31m.crashlog"
    printf 'junk\n' >"$SPOOL/bad${nl}2026-01-01T00:00:00Z forged.crashlog declined by the user${nl}.crashlog"
    aged "$SPOOL/bad${nl}2026-01-01T00:00:00Z forged.crashlog declined by the user${nl}.crashlog"
    start_responder 200
    rep --url "$URL" --yes
    expect_rc 0
    if grep -q "$esc" "$WORK/rep.err" "$SPOOL/rejected.log"; then fail "an ESC was printed raw"; fi
    grep -q 'good?\[31m.crashlog: delivered' "$WORK/rep.err" || fail "the ESC name: $(cat -v "$WORK/rep.err")"
    [ "$(wc -l <"$SPOOL/rejected.log")" = 1 ] || fail "a line was forged in rejected.log: $(cat "$SPOOL/rejected.log")"
    grep -q 'bad?2026-01-01T00:00:00Z forged.crashlog declined by the user?.crashlog invalid crash log' \
        "$SPOOL/rejected.log" || fail "rejected.log: $(cat -v "$SPOOL/rejected.log")"
    grep -q "^faultline-report: bad?2026.*?.crashlog: invalid crash log" "$WORK/rep.err" ||
        fail "the newline name on stderr: $(cat -v "$WORK/rep.err")"
    # submit too.
    mklog "$WORK/x${esc}]0;title${nl}y.crashlog"
    timeout 60 "$FAULTLINE" submit "$WORK/x${esc}]0;title${nl}y.crashlog" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 0
    [ "$(wc -l <"$WORK/s.out")" = 1 ] && grep -q "x?]0;title?y.crashlog: accepted" "$WORK/s.out" ||
        fail "submit: $(cat -v "$WORK/s.out")"
}

case_changed_log() {
    # A log is read again to be sent, not kept in memory from the listing:
    # one that changed meanwhile is validated again (garbage now: deleted,
    # not sent; another crash now: that is what is sent).
    mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"; mklog "$SPOOL/c.crashlog"
    start_responder 200 --delay-ms 1500
    timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --yes </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err" &
    local p=$!
    for _ in $(seq 1 100); do [ "$(requests)" = 1 ] && break; sleep 0.05; done
    [ "$(requests)" = 1 ] || fail "the first request did not come"
    # While the reporter waits for the first answer:
    printf 'garbage\n' >"$SPOOL/b.crashlog"
    aged "$SPOOL/b.crashlog" # else kept as a copy that may be under way
    mklog "$WORK/c-new" 11111111-2222-3333-4444-555555555555
    cp "$WORK/c-new" "$SPOOL/c.crashlog"
    wait $p
    RC=$?
    expect_rc 0
    [ "$(requests)" = 2 ] || fail "want 2 requests (a and the new c), got $(requests)"
    grep -q 'b.crashlog: invalid crash log: line 1: ' "$WORK/rep.err" || fail "b not validated again: $(cat "$WORK/rep.err")"
    grep -q 'b.crashlog invalid crash log' "$SPOOL/rejected.log" || fail "b not noted"
    cmp -s "$WORK/c-new" "$REC/req-2.log" || fail "c was not sent as it is now"
    [ "$(nlogs)" = 0 ] || fail "logs left"
}

case_undeletable() {
    # Something under a log's name that cannot be deleted (a directory) is
    # not said to be deleted nor noted as such; the run says why it stays
    # and ends with 1, and the good log is still sent.
    mklog "$SPOOL/a-good.crashlog"
    mkdir "$SPOOL/b-dir.crashlog"
    start_responder 200
    rep --url "$URL" --yes
    expect_rc 1
    [ "$(requests)" = 1 ] || fail "the good log was not sent"
    [ -d "$SPOOL/b-dir.crashlog" ] || fail "the directory is gone"
    ! grep -q 'b-dir.crashlog: .*; deleted' "$WORK/rep.err" || fail "said deleted"
    grep -q 'b-dir.crashlog: not a crash log: not a regular file, but it cannot be deleted: Is a directory; kept' \
        "$WORK/rep.err" || fail "no line saying why it stays"
    ! grep -q 'b-dir.crashlog' "$SPOOL/rejected.log" 2>/dev/null || fail "noted as deleted in rejected.log"
    grep -q '1 delivered, 0 rejected or deleted, 1 kept for later' "$WORK/rep.err" || fail "summary"
}

case_lock_unwritable() {
    # A spool the user may read but not write into (a read-only file
    # system; here another user's directory): the lock cannot be made, and
    # the message says that nothing was sent and nothing touched.
    [ "$(id -u)" = 0 ] && command -v runuser >/dev/null || exit 77
    runuser -u nobody -- "$REPORTER" --version >/dev/null 2>&1 || exit 77
    mklog "$SPOOL/a.crashlog"
    chmod 755 "$WORK" "$SPOOL"
    start_responder 200
    runuser -u nobody -- "$REPORTER" --spool "$SPOOL" --url "$URL" --yes >"$WORK/rep.out" 2>"$WORK/rep.err"
    local rc=$?
    [ $rc = 1 ] || fail "exit $rc, want 1"
    grep -q "cannot lock $SPOOL/.reporter.lock: Permission denied; nothing sent, the crash logs are left as they are" \
        "$WORK/rep.err" || fail "the message does not say what became of the logs"
    [ "$(requests)" = 0 ] && [ -f "$SPOOL/a.crashlog" ] || fail "a log was sent or lost"
}

case_cacert() {
    # An https server whose certificate a private CA signed (here: itself):
    # without its CA the log is kept and the message names --cacert; with
    # --cacert, or FAULTLINE_CACERT for the reporter the library starts,
    # it is delivered -- by faultline submit too.
    command -v openssl >/dev/null && command -v python3 >/dev/null || exit 77
    https_start "$WORK" 200 '{"accepted":[{"id":"tls-1"}]}'
    RPID=$HTTPS_PID
    URL="$HTTPS_BASE/api/v1/crashes"
    mklog "$SPOOL/a.crashlog"
    rep --url "$URL" --yes
    expect_rc 75
    grep -q 'a server with a certificate of a private CA: --cacert FILE or FAULTLINE_CACERT' "$WORK/rep.err" ||
        fail "the failure does not name --cacert"
    [ "$(nlogs)" = 1 ] || fail "the log was not kept"
    FAULTLINE_CACERT=$WORK/cert.pem rep --url "$URL" --yes --now
    expect_rc 0
    grep -q 'delivered (id tls-1)' "$WORK/rep.err" || fail "not delivered with FAULTLINE_CACERT"
    [ "$(nlogs)" = 0 ] || fail "the delivered log is still there"
    mklog "$WORK/b.crashlog"
    "$FAULTLINE" submit "$WORK/b.crashlog" --server "$URL" --cacert "$WORK/cert.pem" >"$WORK/sub.out" 2>&1 ||
        fail "submit --cacert: $(cat "$WORK/sub.out")"
    [ "$(wc -l <"$WORK/hits")" = 2 ] || fail "want 2 requests, got $(wc -l <"$WORK/hits")"
    rep --url "$URL" --yes --cacert "$WORK"
    expect_rc 64
    grep -q -- "--cacert $WORK: not a file" "$WORK/rep.err" || fail "a directory as --cacert"
    # A CA file that cannot be one (empty, a private key, text) is a usage
    # error up front, as a missing one is -- not "the server is away" (kept,
    # backoff, 75) at every run.
    mklog "$SPOOL/c.crashlog"
    : >"$WORK/empty.pem"
    printf 'hello\n' >"$WORK/text.pem"
    local f
    for f in empty.pem key.pem text.pem; do
        rep --url "$URL" --yes --cacert "$WORK/$f"
        expect_rc 64
        grep -q -- "--cacert $WORK/$f: .*no .*certificate" "$WORK/rep.err" || fail "--cacert $f: $(cat "$WORK/rep.err")"
        FAULTLINE_CACERT=$WORK/$f rep --url "$URL" --yes
        expect_rc 64
        grep -q -- "FAULTLINE_CACERT $WORK/$f: " "$WORK/rep.err" || fail "FAULTLINE_CACERT $f: $(cat "$WORK/rep.err")"
        "$FAULTLINE" submit "$WORK/b.crashlog" --server "$URL" --cacert "$WORK/$f" >"$WORK/sub.out" 2>&1
        RC=$?
        expect_rc 64
        grep -q -- "faultline submit: --cacert $WORK/$f: " "$WORK/sub.out" || fail "submit --cacert $f: $(cat "$WORK/sub.out")"
    done
    [ ! -e "$SPOOL/c.crashlog.retry" ] || fail "a bad --cacert wrote a retry file"
    # One that looks like PEM but that TLS cannot load is this machine's
    # setup too: failed (exit 1), no retry file.
    printf -- '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n' >"$WORK/bad.pem"
    rep --url "$URL" --yes --cacert "$WORK/bad.pem"
    expect_rc 1
    [ ! -e "$SPOOL/c.crashlog.retry" ] || fail "an unloadable --cacert wrote a retry file"
    [ "$(wc -l <"$WORK/hits")" = 2 ] || fail "requests made with a bad CA file"
}

case_garbage_only() {
    printf 'junk' >"$SPOOL/x.crashlog"
    mklog "$WORK/full"
    head -n 5 "$WORK/full" >"$SPOOL/y.crashlog"
    aged "$SPOOL/x.crashlog" "$SPOOL/y.crashlog"
    start_responder 200
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(requests)" = 0 ] || fail "garbage was sent"
    [ "$(nlogs)" = 0 ] || fail "garbage kept"
}

case_status_400() {
    mklog "$SPOOL/a.crashlog"
    start_responder 400
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(nlogs)" = 0 ] || fail "400: log not deleted"
    grep -q 'rejected by the server (HTTP 400): scripted 400' "$WORK/rep.err" || fail "no reason on stderr"
    grep -q 'a.crashlog rejected by the server (HTTP 400)' "$SPOOL/rejected.log" || fail "no note"
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "400: resent"
}

case_html_answer() {
    # An HTML page is a proxy's or another web server's answer (nginx
    # answering 400 to plain http on its https port, a front's size
    # limit), not a crash server's: for 2xx, 400 and 413 alike the log is
    # kept, the rest of the pass untried, exit 1, and the line says what
    # answered.  A MojoCrash server's empty or plain-text 200 is a delivery.
    local st
    for st in h400 h413 h200 d400; do
        rm -rf "$SPOOL" "$REC" && mkdir -p "$SPOOL" "$REC"
        mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"
        start_responder "$st"
        rep --url "$URL" --yes
        expect_rc 1
        [ "$(nlogs)" = 2 ] || fail "$st: a log was deleted"
        [ "$(requests)" = 1 ] || fail "$st: want 1 request, got $(requests)"
        [ ! -e "$SPOOL/a.crashlog.retry" ] || fail "$st: a retry file was written"
        [ ! -s "$SPOOL/rejected.log" ] || fail "$st: noted in rejected.log"
        grep -q "a.crashlog: failed: answered ${st#?} with an HTML page, not a crash server's answer" \
            "$WORK/rep.err" || fail "$st: $(cat "$WORK/rep.err")"
        grep -q "1 more crash report not tried: HTTP ${st#?} with an HTML page answered the one before" \
            "$WORK/rep.err" || fail "$st: the rest: $(cat "$WORK/rep.err")"
        kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
    done
    grep -q "(a proxy, or another server at this URL?); kept" "$WORK/rep.err" || fail "d400: what it may be"
    # 413 from a front: its size limit, named.
    rm -rf "$SPOOL" "$REC" && mkdir -p "$SPOOL" "$REC"
    mklog "$SPOOL/a.crashlog"
    start_responder h413
    rep --url "$URL" --yes
    grep -q "answered 413 with an HTML page, not a crash server's answer: the front's size limit (nginx: client_max_body_size); kept" \
        "$WORK/rep.err" || fail "h413: $(cat "$WORK/rep.err")"
    # submit: the same line, exit 1.
    timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -qx "$SPOOL/a.crashlog: failed: answered 413 with an HTML page, not a crash server's answer: the front's size limit (nginx: client_max_body_size)" \
        "$WORK/s.out" || fail "submit h413: $(cat "$WORK/s.out")"
    kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
    # MojoCrash: an empty or plain-text 200 is a delivery.
    mklog "$SPOOL/b.crashlog"
    start_responder e200,t200
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(nlogs)" = 0 ] || fail "an empty or plain-text 200 was not a delivery"
    kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
    # A JSON 200 that accepts nothing (an empty list, or an error and no
    # list) did not take the log: kept, exit 1 -- deleting it lost it.
    mklog "$SPOOL/c.crashlog"; mklog "$SPOOL/d.crashlog"
    start_responder a200,x200
    rep --url "$URL" --yes
    expect_rc 1
    [ "$(nlogs)" = 2 ] || fail "a 200 that accepted nothing deleted a log"
    grep -q 'c.crashlog: failed (HTTP 200: the server answered but accepted nothing: its "accepted" list is empty); kept' \
        "$WORK/rep.err" || fail "a200: $(cat "$WORK/rep.err")"
    grep -q 'd.crashlog: failed (HTTP 200: the server answered but accepted nothing: storage failed); kept' \
        "$WORK/rep.err" || fail "x200: $(cat "$WORK/rep.err")"
}

case_status_401() {
    # A wrong key (or URL) would be refused for every log: one request,
    # the rest kept untried with one line, exit 1; fixed, all are sent.
    mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"; mklog "$SPOOL/c.crashlog"
    start_responder 401,200
    rep --url "$URL" --yes
    expect_rc 1
    [ "$(requests)" = 1 ] || fail "want 1 request, got $(requests)"
    [ "$(nlogs)" = 3 ] || fail "a log was not kept"
    grep -q '2 more crash reports not tried: the server answered HTTP 401 to the one before, as it would to them; kept' \
        "$WORK/rep.err" || fail "no line for the logs not tried"
    # No key given here: the 401 line says where one comes from.
    grep -q 'no ingest key was given: --key KEY or FAULTLINE_INGEST_KEY' "$WORK/rep.err" ||
        fail "401 without a key: not said: $(head -2 "$WORK/rep.err")"
    rep --url "$URL" --yes --key k
    expect_rc 0
    ! grep -q 'no ingest key was given' "$WORK/rep.err" || fail "a key was given, yet said missing"
    [ "$(nlogs)" = 0 ] || fail "not all sent once the server took them"
}

case_status_421() {
    # A server that does not answer to the URL's host name (faultline
    # serve --allowed-host): every log would get the same 421, so the
    # pass stops after one request, the logs kept, exit 1.
    mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"; mklog "$SPOOL/c.crashlog"
    start_responder 421
    rep --url "$URL" --yes --key k
    expect_rc 1
    [ "$(requests)" = 1 ] || fail "want 1 request, got $(requests)"
    [ "$(nlogs)" = 3 ] || fail "a log was not kept"
    grep -q 'a.crashlog: failed (HTTP 421: scripted 421); kept' "$WORK/rep.err" ||
        fail "no line for the 421: $(head -2 "$WORK/rep.err")"
    grep -q '2 more crash reports not tried: the server answered HTTP 421 to the one before, as it would to them; kept' \
        "$WORK/rep.err" || fail "no line for the logs not tried: $(cat "$WORK/rep.err")"
}

case_wrong_route() {
    # A URL that names another route of the server (the groups' list, the
    # symbols' upload): its 405 or 401 would be the same for every log, so
    # the pass stops after one request, the logs kept, exit 1, and the
    # line says the URL is the likely mistake -- not the key.
    mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"; mklog "$SPOOL/c.crashlog"
    start_responder 405,401
    local base="http://127.0.0.1:$PORT"
    rep --url "$base/api/v1/groups" --yes --key k
    expect_rc 1
    [ "$(requests)" = 1 ] || fail "405: want 1 request, got $(requests)"
    [ "$(nlogs)" = 3 ] || fail "405: a log was not kept"
    grep -q 'failed (HTTP 405: scripted 405; the URL is probably wrong: crash logs go to / or /api/v1/crashes); kept' \
        "$WORK/rep.err" || fail "405: no hint: $(head -2 "$WORK/rep.err")"
    grep -q '2 more crash reports not tried: the server answered HTTP 405 to the one before, as it would to them; kept' \
        "$WORK/rep.err" || fail "405: no line for the logs not tried"
    # 401 from the symbols' route without a key: the URL is named, not the key.
    rep --url "$base/api/v1/symbols" --yes
    expect_rc 1
    [ "$(requests)" = 2 ] || fail "401: want 2 requests, got $(requests)"
    grep -q 'failed (HTTP 401: scripted 401; the URL is probably wrong: crash logs go to / or /api/v1/crashes); kept' \
        "$WORK/rep.err" || fail "401: no hint: $(head -2 "$WORK/rep.err")"
    ! grep -q 'no ingest key was given' "$WORK/rep.err" || fail "401 on a wrong route blamed the key"
    # The ingest routes themselves get no such hint (a wrong key there).
    for p in "" / /api/v1/crashes /api/v1/crashes/ "/?key=k"; do
        rep --url "$base$p" --yes --key k
        expect_rc 1
        ! grep -q 'URL is probably wrong' "$WORK/rep.err" || fail "hint for the ingest URL '$p'"
    done
    # faultline submit says it too.
    timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" --server "$base/metrics" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -q 'a.crashlog: failed (HTTP 401: scripted 401; the URL is probably wrong: crash logs go to / or /api/v1/crashes)$' \
        "$WORK/s.out" || fail "submit: no hint: $(cat "$WORK/s.out")"
}

case_status_413() {
    mklog "$SPOOL/a.crashlog"
    start_responder 413
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(nlogs)" = 0 ] || fail "413: log not deleted"
    grep -q 'a.crashlog too large for the server (HTTP 413): scripted 413' "$SPOOL/rejected.log" || fail "413: no note"
}

case_status_429() {
    mklog "$SPOOL/a.crashlog"
    start_responder 429 --retry-after 120
    local t0
    t0=$(date +%s)
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(nlogs)" = 1 ] || fail "429: log not kept"
    local r=$SPOOL/a.crashlog.retry
    [ -f "$r" ] || fail "no retry file"
    grep -qx 'attempts 1' "$r" || fail "retry file: attempts"
    grep -qx 'status 429' "$r" || fail "retry file: status"
    local next
    next=$(sed -n 's/^next //p' "$r")
    [ "$next" -ge $((t0 + 120)) ] || fail "next try $next is before Retry-After ($t0 + 120)"
    grep -q 'next try in 120 s' "$WORK/rep.err" || fail "Retry-After not honoured in the message"
    # The next run inside the window sends nothing and keeps the log.
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 1 ] || fail "resent inside the Retry-After window"
    [ "$(nlogs)" = 1 ] || fail "log lost"
    grep -q 'waiting to retry.*next try in [0-9]* s or with --now; kept' "$WORK/rep.err" || fail "no waiting message"
    # --now: due at once, the attempt count kept.
    rep --url "$URL" --yes --now
    expect_rc 75
    [ "$(requests)" = 2 ] || fail "--now did not send the waiting log"
    grep -qx 'attempts 2' "$r" || fail "--now: attempts not counted on"
    [ "$(nlogs)" = 1 ] || fail "--now: log lost"
}

# The wall clock set back (NTP after a suspend, a corrected clock) after a
# 429 with Retry-After 120: the next run waits at most the 120 s again,
# not two hours more.  libfaketime moves the reporter's wall clock only.
case_clock_step_back() {
    local ft f
    # The thread-safe build last, so taken when there (libcurl's resolver
    # runs on a thread; tests/server/serve_test.sh's faketime_lib says why).
    for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
             /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
        [ -f "$f" ] && ft=$f
    done
    [ -n "${ft:-}" ] || { echo "SKIP: libfaketime (Debian's faketime) is not installed"; exit 77; }
    # libfaketime's start-up and ASan's deadlock (even --help hangs): the
    # plain build runs this case.
    ldd "$REPORTER" | grep -q libasan && { echo "SKIP: libfaketime hangs an ASan build"; exit 77; }
    mklog "$SPOOL/a.crashlog"
    start_responder 429 --retry-after 120
    rep --url "$URL" --yes
    expect_rc 75
    grep -q '^written [0-9]*$' "$SPOOL/a.crashlog.retry" || fail "the retry file does not say when it was written"
    LD_PRELOAD=$ft FAKETIME=-2h DONT_FAKE_MONOTONIC=1 rep --url "$URL" --yes
    expect_rc 75
    local left
    left=$(sed -n 's/.*waiting to retry.*next try in \([0-9]*\) s.*/\1/p' "$WORK/rep.err")
    [ -n "$left" ] && [ "$left" -le 120 ] ||
        fail "with the clock 2 h back the next try is in ${left:-?} s, want at most 120"
    [ "$(requests)" = 1 ] || fail "sent again inside the Retry-After window"
    echo "ok: clock 2 h back: next try in $left s"
}

case_not_http() {
    # Another service on the URL's port (an SSH banner, no HTTP): said as
    # the URL's doing, not this machine's; the logs kept, the rest of the
    # run not tried, exit 1.
    mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"
    start_responder 200 --not-http
    rep --url "$URL" --yes
    expect_rc 1
    [ "$(nlogs)" = 2 ] || fail "a log was lost"
    grep -q "a.crashlog: failed: what answered at 127.0.0.1 port $PORT does not speak HTTP (is the URL's port right?); kept" \
        "$WORK/rep.err" || fail "no clear line: $(cat "$WORK/rep.err")"
    grep -q '1 more crash report not tried: no HTTP server answered the one before, as none would them; kept' \
        "$WORK/rep.err" || fail "the rest: $(cat "$WORK/rep.err")"
}

case_retry_after_huge() {
    # A Retry-After too long for 64 bits is a wait as long as allowed (7
    # days), not none (it was ignored, and the backoff's seconds used).
    mklog "$SPOOL/a.crashlog"
    start_responder 503 --retry-after-raw 99999999999999999999999
    rep --url "$URL" --yes
    expect_rc 75
    grep -q 'next try in 604800 s' "$WORK/rep.err" || fail "huge Retry-After: $(cat "$WORK/rep.err")"
}

case_status_503_then_200() {
    mklog "$SPOOL/a.crashlog"
    start_responder 503,503,200 --retry-after 1
    rep --url "$URL" --yes
    expect_rc 75
    grep -qx 'attempts 1' "$SPOOL/a.crashlog.retry" || fail "attempts after one 503"
    # --retry-until waits for the due time and tries again, until delivered.
    rep --url "$URL" --yes --retry-until 30
    expect_rc 0
    [ "$(requests)" = 3 ] || fail "want 3 requests, got $(requests)"
    [ "$(nlogs)" = 0 ] || fail "not deleted after delivery"
    [ ! -e "$SPOOL/a.crashlog.retry" ] || fail "retry file left behind"
}

case_retry_until_end() {
    # Our own backoff (30 s and up) past --retry-until's end: one last try
    # as it ends, said so, instead of giving up at once.
    mklog "$SPOOL/a.crashlog"
    start_responder 503,200
    rep --url "$URL" --yes --retry-until 3
    expect_rc 0
    [ "$(requests)" = 2 ] || fail "want 2 requests (503, then the last try), got $(requests)"
    grep -q "past --retry-until's end: one last try in [0-9]* s" "$WORK/rep.err" ||
        fail "the last try not said: $(cat "$WORK/rep.err")"
    [ "$(nlogs)" = 0 ] || fail "not delivered at the last try"
    kill "$RPID"
    wait "$RPID" 2>/dev/null
    RPID=
    # A wait the server asked for is honoured: no last try, said why.
    mklog "$SPOOL/b.crashlog"
    start_responder 503 --retry-after 300
    rep --url "$URL" --yes --retry-until 3
    expect_rc 75
    [ "$(requests)" = 1 ] || fail "Retry-After 300 past the end: want 1 request, got $(requests)"
    grep -q "past --retry-until's end (the server asked for the wait): the logs stay" "$WORK/rep.err" ||
        fail "giving up not said: $(cat "$WORK/rep.err")"
    [ "$(nlogs)" = 1 ] || fail "the log was not kept"
    # A busy server's wait from an earlier run (the retry file's 503) is
    # honoured too: nothing sent before it.
    printf 'attempts 1\nnext %s\nstatus 503\nwritten %s\n' $(($(date +%s) + 100)) "$(date +%s)" \
        >"$SPOOL/b.crashlog.retry"
    rep --url "$URL" --yes --retry-until 2
    expect_rc 75
    [ "$(requests)" = 1 ] || fail "sent inside an earlier run's 503 wait: $(requests) requests"
    grep -q "(the server asked for the wait)" "$WORK/rep.err" || fail "not said: $(cat "$WORK/rep.err")"
}

case_retry_until_cut() {
    # A request does not run past --retry-until's end: it is cut there,
    # not a --timeout (60 s) later, and a log reached after the end is
    # not tried.
    mklog "$SPOOL/a.crashlog"; mklog "$SPOOL/b.crashlog"
    start_responder hang
    timeout 30 "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --retry-until 2 --timeout 60 \
        </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err"
    RC=$?
    [ "$RC" != 124 ] || fail "the request ran past --retry-until's end"
    expect_rc 75
    [ "$(requests)" = 1 ] || fail "want 1 request, got $(requests)"
    grep -q 'a.crashlog: not delivered (.*[Tt]imed out.*); kept' "$WORK/rep.err" || fail "a: $(cat "$WORK/rep.err")"
    grep -q "1 more crash report not tried: --retry-until's end came; kept" "$WORK/rep.err" ||
        fail "b: $(cat "$WORK/rep.err")"
    [ "$(nlogs)" = 2 ] || fail "a log was lost"
}

case_retry_after_date() {
    # Retry-After as an HTTP date (RFC 9110) is honoured too.
    mklog "$SPOOL/a.crashlog"
    start_responder 503 --retry-after-date 300
    local t0
    t0=$(date +%s)
    rep --url "$URL" --yes
    expect_rc 75
    local next
    next=$(sed -n 's/^next //p' "$SPOOL/a.crashlog.retry")
    [ "$next" -ge $((t0 + 290)) ] || fail "HTTP-date Retry-After not honoured (next $next, t0 $t0)"
    [ "$next" -le $(($(date +%s) + 301)) ] || fail "HTTP-date Retry-After overshot"
}

case_clock_back() {
    # A retry time further out than any backoff the reporter writes (the
    # clock went back) does not strand the log: it is sent now.
    mklog "$SPOOL/a.crashlog"
    printf 'attempts 2\nnext %s\nstatus 503\n' $(($(date +%s) + 100000000)) >"$SPOOL/a.crashlog.retry"
    start_responder 200
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "log stranded by a far-future retry time"
}

case_backoff_5xx() {
    mklog "$SPOOL/a.crashlog"
    start_responder 500
    local t0
    t0=$(date +%s)
    rep --url "$URL" --yes
    expect_rc 75
    local next
    next=$(sed -n 's/^next //p' "$SPOOL/a.crashlog.retry")
    # No Retry-After: exponential backoff from 30 s (+ up to 25% jitter).
    [ "$next" -ge $((t0 + 30)) ] || fail "backoff shorter than 30 s"
    [ "$next" -le $(($(date +%s) + 38)) ] || fail "first backoff longer than 37 s"
}

case_server_busy() {
    # A server that says it is busy (429 with Retry-After) or does not
    # answer gets one request per pass, not one per log: the rest are kept
    # for the same time without a request.
    for i in 1 2 3 4 5; do mklog "$SPOOL/log-$i.crashlog"; done
    start_responder 429 --retry-after 120
    local t0
    t0=$(date +%s)
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 1 ] || fail "429: want 1 request, got $(requests)"
    [ "$(nlogs)" = 5 ] || fail "429: logs lost"
    grep -q '4 more crash reports not tried: the server answered HTTP 429; kept, next try in 120 s' \
        "$WORK/rep.err" || fail "429: no line for the logs not tried"
    for i in 2 3 4 5; do
        local r=$SPOOL/log-$i.crashlog.retry
        grep -qx 'attempts 0' "$r" || fail "log-$i: an untried log counted as an attempt"
        [ "$(sed -n 's/^next //p' "$r")" -ge $((t0 + 120)) ] || fail "log-$i: Retry-After not kept"
    done
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 1 ] || fail "429: resent inside the Retry-After window"
    grep -q 'log-2.crashlog: waiting to retry (not tried yet' "$WORK/rep.err" || fail "waiting line"
    kill "$RPID"
    wait "$RPID" 2>/dev/null
    # No answer at all: one timeout, not one per log.
    rm -f "$SPOOL"/*.retry "$REC"/*
    start_responder hang
    t0=$(date +%s)
    rep --url "$URL" --yes --timeout 2
    expect_rc 75
    [ $(($(date +%s) - t0)) -lt 8 ] || fail "no answer: waited a timeout per log"
    # Two: the next log is tried once, to tell a server that is away from
    # one log it chokes on (poison_log).
    [ "$(requests)" = 2 ] || fail "no answer: want 2 requests, got $(requests)"
    [ "$(nlogs)" = 5 ] || fail "no answer: logs lost"
    grep -q '3 more crash reports not tried: the server did not answer (for two logs in a row)' "$WORK/rep.err" ||
        fail "no answer: no line for the logs not tried"
    kill "$RPID"
    wait "$RPID" 2>/dev/null
    # With --retry-until, the held logs go out with the first once the
    # server is back.
    rm -f "$SPOOL"/*.retry "$REC"/*
    start_responder 503,200 --retry-after 1
    rep --url "$URL" --yes --retry-until 20
    expect_rc 0
    [ "$(requests)" = 6 ] || fail "--retry-until: want 6 requests, got $(requests)"
    [ "$(nlogs)" = 0 ] || fail "--retry-until: not all delivered"
}

case_interrupt() {
    # Ctrl-C (SIGINT) while a request waits for its answer: the request is
    # cut at once, not after --timeout; no log is lost or marked as tried;
    # the summary is said; the exit code is 128 + 2.  SIGTERM the same,
    # during --retry-until's wait.
    for i in 1 2 3; do mklog "$SPOOL/log-$i.crashlog"; done
    start_responder hang
    local t0 pid
    t0=$(date +%s)
    "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --timeout 60 </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err" &
    pid=$!
    for _ in $(seq 100); do [ "$(requests)" -ge 1 ] && break; sleep 0.1; done
    [ "$(requests)" -ge 1 ] || fail "the reporter sent nothing"
    kill -INT "$pid"
    wait "$pid"
    RC=$?
    expect_rc 130
    [ $(($(date +%s) - t0)) -lt 15 ] || fail "SIGINT: waited for the --timeout"
    [ "$(nlogs)" = 3 ] || fail "SIGINT: logs lost"
    ! ls "$SPOOL"/*.retry >/dev/null 2>&1 || fail "SIGINT: a log was marked as tried"
    grep -q 'interrupted; kept' "$WORK/rep.err" || fail "SIGINT: no line for the log cut"
    grep -q 'interrupted (SIGINT): the crash logs not delivered stay in the spool' "$WORK/rep.err" ||
        fail "SIGINT: no line for the interruption"
    grep -q '0 delivered, 0 rejected or deleted, 3 kept for later' "$WORK/rep.err" ||
        fail "SIGINT: no summary"
    kill "$RPID"
    wait "$RPID" 2>/dev/null
    # SIGTERM while waiting for the next retry (503, Retry-After 30).
    rm -f "$REC"/*
    start_responder 503 --retry-after 30
    t0=$(date +%s)
    "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --retry-until 100 </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err" &
    pid=$!
    for _ in $(seq 100); do grep -q 'waiting [0-9]* s for the next retry' "$WORK/rep.err" && break; sleep 0.1; done
    grep -q 'waiting [0-9]* s for the next retry' "$WORK/rep.err" || fail "SIGTERM: never waited: $(cat "$WORK/rep.err")"
    kill -TERM "$pid"
    wait "$pid"
    RC=$?
    expect_rc 143
    [ $(($(date +%s) - t0)) -lt 15 ] || fail "SIGTERM: slept through the wait"
    [ "$(nlogs)" = 3 ] || fail "SIGTERM: logs lost"
    grep -q 'interrupted (SIGTERM)' "$WORK/rep.err" || fail "SIGTERM: no line for the interruption"
    # SIGHUP (the ssh session gone) the same way: 129, logs kept, said.
    "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --retry-until 100 </dev/null >"$WORK/rep.out" 2>"$WORK/rep.err" &
    pid=$!
    for _ in $(seq 100); do grep -q 'waiting [0-9]* s for the next retry' "$WORK/rep.err" && break; sleep 0.1; done
    kill -HUP "$pid"
    wait "$pid"
    RC=$?
    expect_rc 129
    [ "$(nlogs)" = 3 ] || fail "SIGHUP: logs lost"
    grep -q 'interrupted (SIGHUP)' "$WORK/rep.err" || fail "SIGHUP: no line for the interruption"
    kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
    # Output into a closed pipe (| head -1) does not end the run: every
    # log is still sent and deleted.
    rm -f "$REC"/*
    start_responder 200 --delay-ms 300 # the lines far apart: head has left before the second
    ( "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --now </dev/null 2>&1; echo "rc $?" >"$WORK/pipe.rc" ) | head -c 1 >/dev/null
    grep -qx 'rc 0' "$WORK/pipe.rc" || fail "| head: $(cat "$WORK/pipe.rc")"
    [ "$(nlogs)" = 0 ] || fail "| head: $(nlogs) logs left"
}

case_poison_log() {
    # One log that gets no answer (a proxy resets the connection on it)
    # does not block the others: the next log is tried once, and as it is
    # delivered the rest go too; the failed log keeps its retry file.
    for i in 1 2 3; do mklog "$SPOOL/log-$i.crashlog"; done
    start_responder reset,200,200
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 3 ] || fail "want 3 requests, got $(requests)"
    [ "$(nlogs)" = 1 ] && [ -f "$SPOOL/log-1.crashlog" ] || fail "want only log-1 kept"
    grep -qx 'attempts 1' "$SPOOL/log-1.crashlog.retry" || fail "log-1: no retry file"
    grep -q 'log-1.crashlog: not delivered (.*); kept, next try in [0-9]* s' "$WORK/rep.err" ||
        fail "log-1: $(cat "$WORK/rep.err")"
    grep -q '2 delivered, 0 rejected or deleted, 1 kept for later' "$WORK/rep.err" || fail "summary"
    kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
    # The next one gets no answer either: the server is away, the pass
    # stops there.
    rm -f "$SPOOL"/*; rm -f "$REC"/*
    for i in 1 2 3 4; do mklog "$SPOOL/log-$i.crashlog"; done
    start_responder reset,reset,200
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 2 ] || fail "two failures: want 2 requests, got $(requests)"
    [ "$(nlogs)" = 4 ] || fail "two failures: a log was lost"
    grep -q '2 more crash reports not tried: the server did not answer (for two logs in a row); kept' \
        "$WORK/rep.err" || fail "two failures: $(cat "$WORK/rep.err")"
    kill "$RPID"; wait "$RPID" 2>/dev/null; RPID=
    # A server that asks for a wait (503 with Retry-After) still stops the
    # pass at once, after a log it chokes on too.
    rm -f "$SPOOL"/*; rm -f "$REC"/*
    for i in 1 2 3 4; do mklog "$SPOOL/log-$i.crashlog"; done
    start_responder reset,503,200 --retry-after 60
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 2 ] || fail "503: want 2 requests, got $(requests)"
    grep -q '2 more crash reports not tried: the server answered HTTP 503; kept, next try in 60 s' \
        "$WORK/rep.err" || fail "503 after a reset: $(cat "$WORK/rep.err")"
}

case_proxy() {
    # libcurl honours http_proxy / https_proxy / all_proxy / no_proxy; a
    # failure to reach the proxy says so, since curl's message names the
    # proxy's address and the URL another.  A proxy that refuses CONNECT
    # is a setup error: exit 1, no retry file.
    command -v python3 >/dev/null || exit 77
    mklog "$SPOOL/a.crashlog"
    rep --url https://127.0.0.1:9/x --yes
    ! grep -q 'through the proxy' "$WORK/rep.err" || fail "no proxy set, yet named"
    https_proxy=http://127.0.0.1:1 rep --url https://127.0.0.1:9/x --yes --now
    expect_rc 75
    grep -q 'a.crashlog: not delivered (through the proxy in https_proxy: .*127.0.0.1 port 1' "$WORK/rep.err" ||
        fail "https_proxy: $(cat "$WORK/rep.err")"
    http_proxy=http://127.0.0.1:1 rep --url http://127.0.0.1:9/x --yes --now
    grep -q '(through the proxy in http_proxy: ' "$WORK/rep.err" || fail "http_proxy: $(cat "$WORK/rep.err")"
    # HTTP_PROXY is not honoured (libcurl's choice), and no_proxy exempts.
    HTTP_PROXY=http://127.0.0.1:1 rep --url http://127.0.0.1:9/x --yes --now
    ! grep -q 'through the proxy' "$WORK/rep.err" || fail "HTTP_PROXY: $(cat "$WORK/rep.err")"
    all_proxy=http://127.0.0.1:1 no_proxy='example.org, 127.0.0.1' rep --url http://127.0.0.1:9/x --yes --now
    ! grep -q 'through the proxy' "$WORK/rep.err" || fail "no_proxy: $(cat "$WORK/rep.err")"
    all_proxy=http://127.0.0.1:1 rep --url http://127.0.0.1:9/x --yes --now
    grep -q '(through the proxy in all_proxy: ' "$WORK/rep.err" || fail "all_proxy: $(cat "$WORK/rep.err")"
    # A proxy that answers CONNECT with 403.
    rm -f "$SPOOL/a.crashlog.retry"
    cat >"$WORK/proxy.py" <<'PY'
import os, socket, sys, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
with open(sys.argv[1] + ".tmp", "w") as f: f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
def h(c):
    c.recv(65536); c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"); c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=h, args=(c,), daemon=True).start()
PY
    python3 "$WORK/proxy.py" "$WORK/pport" 2>"$WORK/proxy.err" &
    RPID=$!
    for _ in $(seq 1 100); do [ -s "$WORK/pport" ] && break; sleep 0.1; done
    [ -s "$WORK/pport" ] || fail "the proxy did not start"
    https_proxy=http://127.0.0.1:$(cat "$WORK/pport") rep --url https://127.0.0.1:9/x --yes
    expect_rc 1
    grep -q 'a.crashlog: failed (the proxy in https_proxy refused: CONNECT 403); kept' "$WORK/rep.err" ||
        fail "CONNECT 403: $(cat "$WORK/rep.err")"
    [ ! -e "$SPOOL/a.crashlog.retry" ] || fail "CONNECT 403: a retry file was written"
    https_proxy=http://127.0.0.1:$(cat "$WORK/pport") timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" \
        --server https://127.0.0.1:9/x >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -q 'failed (the proxy in https_proxy refused: CONNECT 403)' "$WORK/s.out" || fail "submit: $(cat "$WORK/s.out")"
}

case_retry_unwritable() {
    # Retry files that cannot be written (a full disk; here a directory in
    # the way): the line for the logs not tried does not promise a later
    # try, as the next run tries them at once.
    for i in 1 2 3; do mklog "$SPOOL/log-$i.crashlog"; mkdir "$SPOOL/log-$i.crashlog.retry"; done
    start_responder 429 --retry-after 120
    rep --url "$URL" --yes
    expect_rc 75
    grep -q 'log-1.crashlog: not delivered (HTTP 429: scripted 429); kept, its retry time cannot be written (.*): the next run tries it at once' \
        "$WORK/rep.err" || fail "log-1: $(cat "$WORK/rep.err")"
    grep -q '2 more crash reports not tried: the server answered HTTP 429; kept, their retry times cannot be written (.*): the next run tries them at once' \
        "$WORK/rep.err" || fail "the held line: $(cat "$WORK/rep.err")"
    ! grep -q 'next try in' "$WORK/rep.err" || fail "promised a later try: $(cat "$WORK/rep.err")"
}

case_redirect() {
    # A redirect is not followed; the person is told where it points.  An
    # HTML error page is not quoted as the reason ("<html>").
    mklog "$SPOOL/a.crashlog"
    start_responder 301,502
    rep --url "$URL" --yes
    expect_rc 1
    [ "$(nlogs)" = 1 ] || fail "301: log not kept"
    [ ! -e "$SPOOL/a.crashlog.retry" ] || fail "301: retry file written"
    grep -q 'a.crashlog: failed (HTTP 301: redirected to http://redirect.example/api/v1/crashes; use that URL (--url or FAULTLINE_URL)); kept' \
        "$WORK/rep.err" || fail "301: does not say where it points"
    rep --url "$URL" --yes
    expect_rc 75
    grep -q 'a.crashlog: not delivered (HTTP 502: no reason given); kept' "$WORK/rep.err" ||
        fail "502 with an HTML page: message"
    # From https to plain http: not "use that URL" but a warning.
    command -v openssl >/dev/null && command -v python3 >/dev/null || return 0
    kill "$RPID" 2>/dev/null
    https_start "$WORK" 301 '{}' http://127.0.0.1:9/api/v1/crashes
    RPID=$HTTPS_PID
    rep --url "$HTTPS_BASE/api/v1/crashes" --cacert "$WORK/cert.pem" --yes --now
    expect_rc 1
    [ "$(nlogs)" = 1 ] || fail "https -> http: log not kept"
    grep -q 'a.crashlog: failed (HTTP 301: redirected from https to plain http (http://127.0.0.1:9/api/v1/crashes): not followed; check it first: the key and the crash would travel unencrypted); kept' \
        "$WORK/rep.err" || fail "https -> http: $(cat "$WORK/rep.err")"
    grep -q 'use that URL' "$WORK/rep.err" && fail "https -> http: advised to use the http URL"
}

case_timeout() {
    mklog "$SPOOL/a.crashlog"
    start_responder hang
    rep --url "$URL" --yes --timeout 2
    expect_rc 75
    [ "$(nlogs)" = 1 ] || fail "log lost on timeout"
    grep -qx 'status 0' "$SPOOL/a.crashlog.retry" || fail "no retry state after timeout"
    grep -qi 'timed out\|timeout' "$WORK/rep.err" || fail "no timeout message"
}

case_refused() {
    mklog "$SPOOL/a.crashlog"
    start_responder 200
    kill "$RPID"
    wait "$RPID" 2>/dev/null
    RPID=
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(nlogs)" = 1 ] || fail "log lost when refused"
    [ -f "$SPOOL/a.crashlog.retry" ] || fail "no retry file"
    # Why, as the system says it (libcurl alone says "Couldn't connect to
    # server" for a refusal, a timeout and no route alike), and when the
    # next try comes; submit says the same.
    grep -q 'a.crashlog: not delivered (.*Connection refused.*); kept, next try in [0-9]* s' \
        "$WORK/rep.err" || fail "refused: $(cat "$WORK/rep.err")"
    timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 75
    grep -q 'a.crashlog: not delivered (.*Connection refused.*)$' "$WORK/s.out" ||
        fail "submit, refused: $(cat "$WORK/s.out")"
}

case_no_tty() {
    mklog "$SPOOL/a.crashlog"
    start_responder 200
    rep --url "$URL" --show
    expect_rc 75
    [ "$(requests)" = 0 ] || fail "sent without consent"
    grep -q '^==> a.crashlog <==' "$WORK/rep.out" || fail "--show: no header"
    grep -q '^CRASH_ID ' "$WORK/rep.out" || fail "--show: no full text"
    if grep -q 'strings of its trace events' "$WORK/rep.out"; then fail "--show: strings of no event"; fi
    # An event whose format the program kept apart: its strings, in hex in
    # the log, are shown as text too (a newline and a quote escaped).
    rm "$SPOOL/a.crashlog" && mklog "$SPOOL/b.crashlog"
    sed -i 's/^END$/TRACE_ID 1 2 0x401000 ss 0x38 0x40\nTRACE_BYTES 616c706861220a00627900\nEND/' "$SPOOL/b.crashlog"
    rep --url "$URL" --show
    expect_rc 75
    grep -qx '==> b.crashlog: the strings of its trace events, as text <==' "$WORK/rep.out" &&
        grep -qx '  "alpha\\x22\\x0a" "by"' "$WORK/rep.out" || fail "--show: the strings: $(tail -3 "$WORK/rep.out")"
    mv "$SPOOL/b.crashlog" "$SPOOL/a.crashlog"
    [ "$(nlogs)" = 1 ] || fail "log not kept"
    grep -q 'no one at a terminal to ask and no --yes' "$WORK/rep.err" || fail "did not say so"
}

case_env_yes() {
    # FAULTLINE_REPORT_YES=1 is --yes: consent given ahead, for the
    # reporter the client library starts with no terminal; 0 is not.
    mklog "$SPOOL/a.crashlog"
    start_responder 200
    FAULTLINE_REPORT_YES=0 rep --url "$URL"
    expect_rc 75
    [ "$(requests)" = 0 ] || fail "FAULTLINE_REPORT_YES=0 sent without consent"
    grep -q 'FAULTLINE_REPORT_YES=1' "$WORK/rep.err" || fail "the message does not name the variable"
    # Only 1 is consent: "no" must not send, and is said to be taken as 0.
    FAULTLINE_REPORT_YES=no rep --url "$URL"
    expect_rc 75
    [ "$(requests)" = 0 ] || fail "FAULTLINE_REPORT_YES=no sent without consent"
    grep -q 'FAULTLINE_REPORT_YES=no: not 1' "$WORK/rep.err" || fail "FAULTLINE_REPORT_YES=no: no warning"
    FAULTLINE_REPORT_YES=1 rep --url "$URL"
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "FAULTLINE_REPORT_YES=1: $(requests) requests"
    [ "$(nlogs)" = 0 ] || fail "the log was not deleted after delivery"
}

case_lock() {
    mklog "$SPOOL/a.crashlog"
    start_responder 200 --delay-ms 1500
    timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --lock-wait 0 </dev/null \
        >"$WORK/r1.out" 2>"$WORK/r1.err" &
    local p1=$!
    timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --lock-wait 0 </dev/null \
        >"$WORK/r2.out" 2>"$WORK/r2.err" &
    local p2=$!
    wait $p1
    local rc1=$?
    wait $p2
    local rc2=$?
    [ "$(requests)" = 1 ] || fail "log sent $(requests) times by two reporters"
    [ "$(nlogs)" = 0 ] || fail "log not delivered"
    # Whichever lost the race either found the spool empty or stepped back.
    for rc in $rc1 $rc2; do
        [ "$rc" = 0 ] || [ "$rc" = 75 ] || fail "reporter exit $rc"
    done
    # And a reporter that finds the lock held says so and exits 75.
    exec 9>"$SPOOL/.reporter.lock"
    flock -n 9 || fail "cannot take the lock in the test"
    mklog "$SPOOL/b.crashlog"
    rep --url "$URL" --yes --lock-wait 0
    expect_rc 75
    grep -q 'another faultline-report is working' "$WORK/rep.err" || fail "lock: no message"
    [ "$(requests)" = 1 ] || fail "sent while the lock was held"
    # One reporter waits behind the one at work (here: the test's lock);
    # any other started meanwhile -- a program crash-looping starts one per
    # crash -- leaves at once, and the waiter sends every log, also those
    # written while it waited.
    timeout 60 "$REPORTER" --spool "$SPOOL" --url "$URL" --yes --lock-wait 30 </dev/null \
        >"$WORK/w.out" 2>"$WORK/w.err" 9>&- &
    local pw=$!
    local waiting=
    for _ in $(seq 100); do
        if [ -e "$SPOOL/.reporter.wait" ] && ! flock -n "$SPOOL/.reporter.wait" true; then
            waiting=1
            break
        fi
        sleep 0.05
    done
    [ -n "$waiting" ] || fail "the second reporter did not take the waiting place"
    mklog "$SPOOL/c.crashlog"
    local t0=$SECONDS
    rep --url "$URL" --yes --lock-wait 30
    expect_rc 75
    [ $((SECONDS - t0)) -le 5 ] || fail "a third reporter waited $((SECONDS - t0)) s instead of leaving"
    grep -q 'one more waits to run after it, which will send what is there' "$WORK/rep.err" ||
        fail "third reporter: $(cat "$WORK/rep.err")"
    [ "$(requests)" = 1 ] || fail "sent while the lock was held: $(requests) requests"
    exec 9>&-
    wait $pw
    local rcw=$?
    [ "$rcw" = 0 ] || fail "the waiting reporter: exit $rcw $(cat "$WORK/w.err")"
    [ "$(requests)" = 3 ] && [ "$(nlogs)" = 0 ] ||
        fail "the waiting reporter sent $(($(requests) - 1)) of 2 logs; $(nlogs) left"
}

case_usage() {
    rep --bogus
    expect_rc 64
    rep --retry-until soon
    expect_rc 64
    rep --email 'not an address'
    expect_rc 64
    # A usage error is one line that says what is wrong and where help is,
    # not the whole --help text.
    rep --bogus
    grep -qx "faultline-report: unknown option '--bogus'; see faultline-report --help" "$WORK/rep.err" ||
        fail "--bogus: $(cat "$WORK/rep.err")"
    [ "$(wc -l <"$WORK/rep.err")" = 1 ] || fail "--bogus: more than one line on stderr"
    rep extra
    expect_rc 64
    grep -qx "faultline-report: unexpected argument 'extra'; see faultline-report --help" "$WORK/rep.err" ||
        fail "extra: $(cat "$WORK/rep.err")"
    "$REPORTER" --url </dev/null >/dev/null 2>"$WORK/rep.err"
    RC=$?
    expect_rc 64
    grep -qx "faultline-report: option --url needs a value; see faultline-report --help" "$WORK/rep.err" ||
        fail "--url without value: $(cat "$WORK/rep.err")"
    # A bad value names its option, whichever way it is written.
    rep --timeout abc
    expect_rc 64
    grep -q -- "--timeout: 'abc' is not a number of seconds" "$WORK/rep.err" || fail "--timeout abc: message"
    rep --lock-wait=x1
    expect_rc 64
    grep -q -- "--lock-wait: 'x1' is not a number of seconds" "$WORK/rep.err" || fail "--lock-wait=x1: message"
    # A timeout of 0 is refused, not quietly the default (--lock-wait 0 is
    # "do not wait", and taken).
    for t in --timeout --connect-timeout; do
        rep "$t" 0
        expect_rc 64
        grep -qx -- "faultline-report: $t: at least 1 second, not 0" "$WORK/rep.err" ||
            fail "$t 0: $(cat "$WORK/rep.err")"
    done
    "$REPORTER" --version >"$WORK/v.out" || fail "--version"
    grep -qx 'faultline-report 0.1.0' "$WORK/v.out" || fail "version text"
    "$REPORTER" --help >"$WORK/h.out" || fail "--help"
    grep -q -- '--retry-until' "$WORK/h.out" || fail "help text"
    # No URL while there is something to send: usage error, log kept.
    mklog "$SPOOL/a.crashlog"
    env -u FAULTLINE_URL "$REPORTER" --spool "$SPOOL" --yes </dev/null 2>"$WORK/nourl.err"
    RC=$?
    expect_rc 64
    [ "$(nlogs)" = 1 ] || fail "log lost without URL"
    # An empty or missing spool is not an error, and each is said in a
    # line (not with --quiet).
    rep --spool "$WORK/does-not-exist" --yes --url http://127.0.0.1:9/
    expect_rc 0
    grep -qx "faultline-report: no spool at $WORK/does-not-exist: nothing to send" "$WORK/rep.err" ||
        fail "missing spool: $(cat "$WORK/rep.err")"
    mkdir -p "$WORK/empty-spool"
    rep --spool "$WORK/empty-spool" --yes --url http://127.0.0.1:9/
    expect_rc 0
    [ "$(cat "$WORK/rep.err")" = "faultline-report: nothing to send in $WORK/empty-spool" ] ||
        fail "empty spool: $(cat "$WORK/rep.err")"
    rep --spool "$WORK/empty-spool" --yes --url http://127.0.0.1:9/ --quiet
    expect_rc 0
    [ ! -s "$WORK/rep.err" ] || fail "empty spool, --quiet: $(cat "$WORK/rep.err")"
}

case_url_scheme() {
    # A URL that is not http:// or https://HOST is said at once (64), with
    # nothing sent and the logs kept: libcurl would guess a scheme for
    # HOST:PORT and a typo would be kept for a retry as if the server were
    # away.
    mklog "$SPOOL/a.crashlog"
    start_responder 200
    local hostport=${URL#http://}
    hostport=${hostport%%/*}
    rep --url "$hostport" --yes
    expect_rc 64
    grep -qx "faultline-report: --url '$hostport': no http:// or https:// in front (e.g. http://HOST:8080/api/v1/crashes)" \
        "$WORK/rep.err" || fail "--url HOST:PORT: $(cat "$WORK/rep.err")"
    [ "$(wc -l <"$WORK/rep.err")" = 1 ] || fail "--url HOST:PORT: more than one line: $(cat "$WORK/rep.err")"
    rep --url "ftp://$hostport/" --yes
    expect_rc 64
    grep -q "only http:// and https:// are supported" "$WORK/rep.err" || fail "--url ftp://: $(cat "$WORK/rep.err")"
    # From the environment: checked once there is something to send.
    FAULTLINE_URL="$hostport" rep --yes
    expect_rc 64
    grep -q "FAULTLINE_URL '$hostport': no http:// or https:// in front" "$WORK/rep.err" ||
        fail "FAULTLINE_URL HOST:PORT: $(cat "$WORK/rep.err")"
    [ "$(requests)" = 0 ] || fail "a request was sent to a URL without a scheme"
    [ "$(nlogs)" = 1 ] && [ ! -e "$SPOOL/a.crashlog.retry" ] || fail "log not kept as it was"
    # submit too.
    timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" --server "$hostport" >"$WORK/s.out" 2>"$WORK/s.err"
    RC=$?
    expect_rc 64
    grep -qx "faultline submit: --server '$hostport': no http:// or https:// in front (e.g. http://HOST:8080/api/v1/crashes)" \
        "$WORK/s.err" || fail "submit --server HOST:PORT: $(cat "$WORK/s.err")"
    FAULTLINE_URL="file:///etc" timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" >"$WORK/s.out" 2>"$WORK/s.err"
    RC=$?
    expect_rc 64
    grep -q "faultline submit: FAULTLINE_URL 'file:///etc': only http:// and https://" "$WORK/s.err" ||
        fail "submit FAULTLINE_URL file://: $(cat "$WORK/s.err")"
    [ "$(requests)" = 0 ] || fail "submit sent a request to a URL without a scheme"
    # A URL libcurl cannot use (a port out of range, a host with a space)
    # is a usage error up front too, not a failure per log (exit 1).
    local bad
    for bad in "http://127.0.0.1:99999/x" "http://127.0.0.1:0/x" "http://exa mple.org/"; do
        rep --url "$bad" --yes
        expect_rc 64
        grep -q "faultline-report: --url '$bad': " "$WORK/rep.err" || fail "--url $bad: $(cat "$WORK/rep.err")"
        FAULTLINE_URL="$bad" rep --yes
        expect_rc 64
        grep -q "FAULTLINE_URL '$bad': " "$WORK/rep.err" || fail "FAULTLINE_URL $bad: $(cat "$WORK/rep.err")"
        timeout 60 "$FAULTLINE" submit "$SPOOL/a.crashlog" --server "$bad" >"$WORK/s.out" 2>"$WORK/s.err"
        RC=$?
        expect_rc 64
        grep -q "faultline submit: --server '$bad': " "$WORK/s.err" || fail "submit --server $bad: $(cat "$WORK/s.err")"
    done
    grep -q "the port is not a number from 1 to 65535" <("$REPORTER" --url http://h:99999/ 2>&1) ||
        fail "the port is not named"
    [ "$(nlogs)" = 1 ] && [ ! -e "$SPOOL/a.crashlog.retry" ] || fail "log not kept as it was"
    # And the right URL still works.
    rep --url "$URL" --yes
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "not sent to $URL"
}

case_env_defaults() {
    # $XDG_STATE_HOME/faultline is the spool when FAULTLINE_SPOOL is unset;
    # FAULTLINE_URL and FAULTLINE_INGEST_KEY fill in --url and --key.
    mkdir -p "$WORK/xdg/faultline"
    mklog "$WORK/xdg/faultline/a.crashlog"
    start_responder 200
    env -u FAULTLINE_SPOOL XDG_STATE_HOME="$WORK/xdg" FAULTLINE_URL="$URL" FAULTLINE_INGEST_KEY=envkey \
        timeout 60 "$REPORTER" --yes </dev/null 2>"$WORK/env.err"
    RC=$?
    expect_rc 0
    [ ! -e "$WORK/xdg/faultline/a.crashlog" ] || fail "XDG spool not used"
    grep -qx 'X-Faultline-Key: envkey' "$REC/req-1.headers" || fail "FAULTLINE_INGEST_KEY not sent"
}

case_submit() {
    mklog "$WORK/one.crashlog"
    mklog "$WORK/two.log"
    printf 'garbage\n' >"$WORK/bad.crashlog"
    start_responder 200
    timeout 60 "$FAULTLINE" submit "$WORK/one.crashlog" "$WORK/two.log" --server "$URL" --key k1 \
        >"$WORK/s.out" 2>"$WORK/s.err"
    RC=$?
    expect_rc 0
    grep -qx "$WORK/one.crashlog: accepted test-1" "$WORK/s.out" || fail "submit: line for one"
    grep -qx "$WORK/two.log: accepted test-2" "$WORK/s.out" || fail "submit: line for two"
    [ -f "$WORK/one.crashlog" ] && [ -f "$WORK/two.log" ] || fail "submit deleted a file"
    cmp -s "$WORK/one.crashlog" "$REC/req-1.log" || fail "submit: log not byte-identical"
    grep -q 'filename="two.log.crashlog"' "$REC/req-2.parthdr" || fail "submit: filename not .crashlog"
    grep -qx 'User-Agent: faultline-report/0.1.0' "$REC/req-1.headers" || fail "submit: User-Agent"
    grep -qx 'X-Faultline-Key: k1' "$REC/req-1.headers" || fail "submit: key"
    # An invalid file is refused before any request; the exit says so.
    timeout 60 "$FAULTLINE" submit "$WORK/bad.crashlog" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -qx "$WORK/bad.crashlog: invalid: line 1: not a crash log: the first line that is not blank or a comment must be 'MOJOCRASH <version>' or 'FAULTLINE <version>'" \
        "$WORK/s.out" || fail "submit: invalid line: $(cat "$WORK/s.out")"
    [ "$(requests)" = 2 ] || fail "submit sent an invalid file"
    [ -f "$WORK/bad.crashlog" ] || fail "submit deleted the invalid file"
    # "-" is standard input, read once.
    timeout 60 "$FAULTLINE" submit - --server "$URL" <"$WORK/one.crashlog" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 0
    grep -qx -- "-: accepted test-3" "$WORK/s.out" || fail "submit -: $(cat "$WORK/s.out")"
    cmp -s "$WORK/one.crashlog" "$REC/req-3.log" || fail "submit -: not the input"
    grep -q 'filename="stdin.crashlog"' "$REC/req-3.parthdr" || fail "submit -: filename"
    timeout 60 "$FAULTLINE" submit - - --server "$URL" <"$WORK/one.crashlog" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -qx -- "-: unreadable: standard input was read already (- given twice)" "$WORK/s.out" ||
        fail "submit - -: $(cat "$WORK/s.out")"
}

case_submit_status() {
    mklog "$WORK/a.crashlog"
    start_responder 503,400 --retry-after 7
    timeout 60 "$FAULTLINE" submit "$WORK/a.crashlog" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 75
    grep -q 'a.crashlog: not delivered (HTTP 503: scripted 503), retry after 7 s' "$WORK/s.out" ||
        fail "submit: 503 line"
    timeout 60 "$FAULTLINE" submit "$WORK/a.crashlog" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -q 'a.crashlog: rejected (HTTP 400): scripted 400' "$WORK/s.out" || fail "submit: 400 line"
    [ -f "$WORK/a.crashlog" ] || fail "submit deleted the file"
    "$FAULTLINE" submit "$WORK/a.crashlog" >/dev/null 2>&1 </dev/null
    RC=$?
    expect_rc 64
    "$FAULTLINE" submit "$WORK/a.crashlog" --server "$URL" --timeout abc >/dev/null 2>"$WORK/s.err"
    RC=$?
    expect_rc 64
    grep -q -- "faultline submit: --timeout: 'abc' is not a number of seconds" "$WORK/s.err" ||
        fail "submit --timeout abc: message"
    for t in --timeout --connect-timeout; do
        "$FAULTLINE" submit "$WORK/a.crashlog" --server "$URL" "$t" 0 >/dev/null 2>"$WORK/s.err"
        RC=$?
        expect_rc 64
        grep -qx -- "faultline submit: $t: at least 1 second, not 0" "$WORK/s.err" ||
            fail "submit $t 0: $(cat "$WORK/s.err")"
    done
    "$FAULTLINE" submit "$WORK/a.crashlog" --server >/dev/null 2>"$WORK/s.err"
    RC=$?
    expect_rc 64
    grep -q -- "--server needs a value" "$WORK/s.err" || fail "submit --server without a value: message"
    # A directory is named as one, and nothing is sent.
    mkdir -p "$WORK/adir"
    timeout 60 "$FAULTLINE" submit "$WORK/adir" --server "$URL" >"$WORK/s.out" 2>&1
    RC=$?
    expect_rc 1
    grep -qx "$WORK/adir: unreadable: is a directory" "$WORK/s.out" || fail "submit DIR: line"
    [ "$(requests)" = 2 ] || fail "submit DIR sent something"
}

case_many() {
    # Several logs, mixed answers in one run: each gets its own fate (a
    # 500 is about that log; 503 would hold the rest, see server_busy).
    for i in 1 2 3 4; do mklog "$SPOOL/log-$i.crashlog"; done
    start_responder 200,400,500,200
    rep --url "$URL" --yes
    expect_rc 75
    [ "$(requests)" = 4 ] || fail "want 4 requests"
    [ "$(nlogs)" = 1 ] || fail "want exactly the 500 log kept"
    [ -f "$SPOOL/log-3.crashlog" ] || fail "the 500 log (3rd) should be the one kept"
    grep -q '2 delivered, 1 rejected or deleted, 1 kept for later' "$WORK/rep.err" || fail "summary"
}

case_interactive() {
    # A person at a terminal (a pty from script(1)): view, yes, an email,
    # then no for the second log.
    mklog "$SPOOL/a.crashlog"
    mklog "$SPOOL/b.crashlog"
    start_responder 200
    rep_tty 'v\ny\nme@example.org\nn\n'
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "want 1 request, got $(requests)"
    grep -qx 'email=me@example.org' "$REC/req-1.fields" || fail "typed email not sent"
    [ "$(nlogs)" = 0 ] || fail "declined log not deleted"
    grep -q 'b.crashlog declined by the user' "$SPOOL/rejected.log" || fail "no note for the declined log"
    grep -q 'Crash report 1 of 2: a.crashlog' "$WORK/tty.out" || fail "no question"
    grep -q 'TestApp 1.0, signal 11 (SIGSEGV) at 2008-01-03 08:49:52 UTC, 3 frames' "$WORK/tty.out" ||
        fail "no summary of what is sent"
    grep -q '^ETC_VALUE "quoted"' "$WORK/tty.out" || fail "view did not show the full text"
    grep -q '\[1/2\] a.crashlog: delivered' "$WORK/tty.out" || fail "no progress line"
}

case_interactive_eof() {
    # Ctrl-D (end of input) at the email question skips the address: the
    # log the person said yes to is sent with none, without complaining
    # about an address nobody typed.
    mklog "$SPOOL/a.crashlog"
    start_responder 200
    rep_tty 'y\n'
    expect_rc 0
    [ "$(requests)" = 1 ] || fail "want 1 request, got $(requests)"
    grep -qx 'email=' "$REC/req-1.fields" || fail "an email was sent that nobody typed"
    ! grep -q 'does not look like an email address' "$WORK/tty.out" || fail "complained about an untyped address"
    [ "$(grep -c 'Your email address' "$WORK/tty.out")" = 1 ] || fail "asked for the email again after end of input"
}

"case_$CASE"
echo "ok [$CASE]"
