#!/usr/bin/env bash
# `faultline symbols add --server https://...` to a server behind a TLS
# proxy whose certificate a private CA signed (here: itself), as
# faultline-report and submit reach it: without the CA the upload fails
# and the message names --cacert; with --cacert FILE, or FAULTLINE_CACERT,
# the file is uploaded.
#   upload_cacert.sh FAULTLINE DEBUGFILE
set -uo pipefail
FL=$1 FILE=$2
command -v openssl >/dev/null && command -v python3 >/dev/null && command -v readelf >/dev/null || exit 77
work=$(mktemp -d /tmp/fl-upcacert.XXXXXX)
RPID=
trap '[ -n "$RPID" ] && kill "$RPID" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
. "$(dirname "$0")/../lib/https.sh"

hex=$(readelf -n "$FILE" | awk '/Build ID:/ {print $3; exit}')
[ -n "$hex" ] || fail "no build id in $FILE"
# A stand-in for the proxy and the server behind it: reads the upload and
# answers as faultline serve does, naming the build id.
https_start "$work" 201 "{\"build_id\":\"$hex\",\"status\":\"ok\"}"
RPID=$HTTPS_PID
URL=$HTTPS_BASE
export FAULTLINE_ADMIN_TOKEN=test-admin-token
unset FAULTLINE_CACERT

"$FL" symbols add "$FILE" --server "$URL" --retries 0 >"$work/out" 2>&1; rc=$?
[ $rc = 1 ] || fail "without the CA: rc $rc, want 1: $(cat "$work/out")"
grep -q 'a server with a certificate of a private CA: --cacert FILE or FAULTLINE_CACERT' "$work/out" ||
  fail "the failure does not name --cacert: $(cat "$work/out")"
ok "without the CA: refused, and the message names --cacert"

"$FL" symbols add "$FILE" --server "$URL" --cacert "$work/cert.pem" >"$work/out" 2>&1 ||
  fail "--cacert: $(cat "$work/out")"
grep -q "^$hex .*: uploaded (HTTP 201" "$work/out" || fail "--cacert: $(cat "$work/out")"
ok "--cacert FILE: uploaded"

FAULTLINE_CACERT=$work/cert.pem "$FL" symbols add "$FILE" --server "$URL" >"$work/out" 2>&1 ||
  fail "FAULTLINE_CACERT: $(cat "$work/out")"
ok "FAULTLINE_CACERT: uploaded"
[ "$(grep -c '^/api/v1/symbols$' "$work/hits")" = 2 ] || fail "want 2 uploads, got: $(cat "$work/hits")"

"$FL" symbols add "$FILE" --server "$URL" --cacert "$work" >"$work/out" 2>&1; rc=$?
[ $rc = 64 ] && grep -q -- "--cacert $work: not a file" "$work/out" ||
  fail "a directory as --cacert: rc $rc $(head -2 "$work/out")"
"$FL" symbols add "$FILE" --cacert "$work/cert.pem" >"$work/out" 2>&1; rc=$?
[ $rc = 64 ] && grep -q -- "--cacert is for uploads" "$work/out" ||
  fail "--cacert without --server: rc $rc $(head -2 "$work/out")"
[ "$(grep -c . "$work/hits")" = 2 ] || fail "a refused command sent a request: $(cat "$work/hits")"
ok "a directory as --cacert, or --cacert without --server: usage errors (64), nothing sent"
