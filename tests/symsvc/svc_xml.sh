#!/bin/bash
# The XML symbolication endpoint end to end (svc_tool xml = what the
# server's POST /symbolicate does): a request with a real crash log in
# CDATA is answered with the log annotated with function, file and line;
# an XXE request is refused without reading the file; malformed XML gets a
# clean error response.
. "$(dirname "$0")/svc_common.sh"

crash abort
{
    printf '<?xml version="1.0" encoding="UTF-8"?>\n<symbolicationRequest version="1">\n  <crashReport><![CDATA['
    cat "$LOG"
    printf ']]></crashReport>\n</symbolicationRequest>\n'
} > "$WORK/req.xml"
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" xml "$WORK/req.xml" > "$WORK/resp.xml" || fail "svc_tool xml"
sed -n '1,3p' "$WORK/resp.xml"
grep -A8 '^CALLSTACK' "$WORK/resp.xml" | head -24
grep -q '^<symbolicationResponse version="1" candidates="[1-9][0-9]*" annotated="[1-9][0-9]*"' "$WORK/resp.xml" \
    || fail "no symbolicationResponse with counts"
grep -q '<annotatedReport><!\[CDATA\[' "$WORK/resp.xml" || fail "the report is not in CDATA"
grep -Eq '^#   -> (__GI_)?abort at [^ ]*stdlib/abort\.c:[0-9]+(:[0-9]+)? in libc\.so\.6\+0x[0-9a-f]+$' "$WORK/resp.xml" \
    || fail "libc's abort frame is not annotated with abort.c"
grep -Eq '^#   -> crash_abort at [^ ]*svc_crash\.c:[0-9]+(:[0-9]+)? in svc_crash\+0x[0-9a-f]+$' "$WORK/resp.xml" \
    || fail "crash_abort is not annotated with svc_crash.c"
grep -q '^END$' "$WORK/resp.xml" || fail "the report was cut"

# XXE: refused at the DOCTYPE; /etc/passwd is never read.
cat > "$WORK/xxe.xml" <<'XML'
<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
<symbolicationRequest><crashReport>&e;</crashReport></symbolicationRequest>
XML
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" xml "$WORK/xxe.xml" > "$WORK/xxe.out" 2> "$WORK/xxe.err" \
    && fail "the XXE request was accepted"
cat "$WORK/xxe.out"
grep -q '<error code="doctype">' "$WORK/xxe.out" || fail "no doctype error response"
grep -q 'root:' "$WORK/xxe.out" && fail "/etc/passwd leaked into the response"
if command -v strace >/dev/null; then
    strace -f -e trace=open,openat,connect -o "$WORK/strace.txt" \
        "$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" xml "$WORK/xxe.xml" > /dev/null 2>&1
    grep -q '/etc/passwd' "$WORK/strace.txt" && fail "/etc/passwd was opened"
    grep -q 'connect(' "$WORK/strace.txt" && fail "a network connection was attempted"
fi

# Malformed XML: a clean error response naming the line, exit status 1.
printf '<symbolicationRequest>\n<crashReport>\n</oops>\n' > "$WORK/bad.xml"
"$SVC_TOOL" --no-debuginfod --cache "$WORK/cache" xml "$WORK/bad.xml" > "$WORK/bad.out" 2> "$WORK/bad.err"
[ $? = 1 ] || fail "malformed XML did not fail cleanly"
cat "$WORK/bad.out" "$WORK/bad.err"
grep -q '<error code="malformed">line 3: ' "$WORK/bad.out" || fail "no malformed error response"
echo "PASS"
