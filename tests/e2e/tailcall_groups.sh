#!/usr/bin/env bash
# Frames that tail calls left off, put back from the DWARF's call sites
# (tailcall.c): two crashes whose stacks unwind alike -- the function each
# went through ended in a jump and left no frame -- land in two groups,
# each frame named with the line of its jump; the same crash built by
# clang lands in gcc's group; where the DWARF allows two ways, the
# function is named without a line; one that may have jumped through a
# pointer is named alone, not the other way it might have taken; a
# library's function is not the program's of the same name; and a call to
# a library's function that jumped on inside the library (api_a, api_b
# to lib_common) puts that function back, in the library.
set -u
SRC=$1 LIBA=$2 INCLUDE=$3 FAULTLINE=$4
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-tail.XXXXXX")
ADMIN=tail-admin-$$ KEY=tail-key-$$
cleanup() {
    if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL [tailcall]: $*" >&2
    [ -f "$WORK/err" ] && tail -n 20 "$WORK/err" >&2
    exit 1
}
unset FAULTLINE_URL FAULTLINE_REPORTER

LIBSRC=$(dirname "$SRC")/tailcall_lib.c
gcc -O2 -g -shared -fPIC "$(dirname "$SRC")/tailcall_third.c" -o "$WORK/libtailthird.so" ||
    fail "gcc build of the third library"
gcc -O2 -g -shared -fPIC "$LIBSRC" -o "$WORK/libtailbar.so" -L"$WORK" -ltailthird -Wl,-rpath,"$WORK" ||
    fail "gcc build of the library"
LINK=(-L"$WORK" -ltailbar -Wl,-rpath,"$WORK" -lpthread -ldl)
gcc -O2 -g -DWITH_LIB -I"$INCLUDE" "$SRC" "$LIBA" -o "$WORK/v1" "${LINK[@]}" || fail "gcc build"
# The tail calls the test relies on: jumps, not calls.
objdump -d --no-show-raw-insn "$WORK/v1" | awk '/<release_a>:/,/^$/' | grep -q 'jmp.*<crash_site>' ||
    fail "gcc -O2 made no tail call in release_a"
clang -O2 -g -DWITH_LIB -I"$INCLUDE" "$SRC" "$LIBA" -o "$WORK/v2" "${LINK[@]}" || fail "clang build"

crash() { # exe mode death
    FAULTLINE_SPOOL=$WORK/spool "$1" "$2" 2>/dev/null
    [ $? = "$3" ] || fail "$1 $2 did not die with status $3"
}
for m in a b c f g h i j k; do crash "$WORK/v1" $m 139; done
for m in d e; do crash "$WORK/v1" $m 134; done
# (clang 14 writes no call site for a call to a function it has no DWARF
# for when the call is a tail call, bar_entry here: its g would stop at
# main.  It does for main's calls of api_a and api_b: its i and j land
# in gcc's groups.)
for m in a b f i j; do crash "$WORK/v2" $m 139; done

FL=$FAULTLINE work=$WORK
. "$(dirname "$0")/../lib/server.sh"
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
start "$WORK/data"
BASE=$(url "")
"$FAULTLINE" symbols add "$WORK/v1" "$WORK/v2" "$WORK/libtailbar.so" "$WORK/libtailthird.so" --server "$BASE" >"$WORK/sym.out" 2>&1 ||
    fail "symbols add: $(cat "$WORK/sym.out")"
"$FAULTLINE" submit "$WORK"/spool/*.crashlog --server "$BASE/api/v1/crashes" --key "$KEY" \
    >"$WORK/submit.out" 2>&1 || fail "submit: $(cat "$WORK/submit.out")"

# b (gcc, clang) and c | a (gcc, clang) | f (gcc, clang) | i (gcc, clang)
# | j (gcc, clang) | d | e | g | h | k.  Without the frames put back: a,
# b, c and f in one group ("crash_site | main"), d and e in another, the
# four of i and j in a third ("lib_common | main").
out=$(wait_counts tailapp "3 2 2 2 2 1 1 1 1 1")
[ "$out" = "3 2 2 2 2 1 1 1 1 1" ] || fail "group counts '$out', want '3 2 2 2 2 1 1 1 1 1'"

api "/api/v1/groups?app=tailapp" >"$WORK/groups.json" || fail "GET groups"
python3 - "$WORK/groups.json" <<'PY' || fail "signatures: $(cat "$WORK/groups.json")"
import json, sys
sigs = sorted(g["signature"] for g in json.load(open(sys.argv[1]))["groups"])
want = ["crash_site | release_a | main", "crash_site | release_b | main",
        "crash_site | mixed | main", "helper | route | main",
        # four of the five: the fifth is past the depth followed
        "crash_site | deep3 | deep2 | deep1 | deep0",
        # the library's function main called, put back from the library
        "lib_common | api_a | main", "lib_common | api_b | main",
        # k: the third module's static api_third is not the one called
        "third_fn | main"]
for w in want:
    assert w in sigs, (w, sigs)
assert not any("mid" in s or "release_a | mixed" in s for s in sigs), sigs
assert "lib_common | main" not in sigs, sigs
frees = [s for s in sigs if "drop_" in s]
assert len(frees) == 2 and any("drop_a" in s for s in frees) and any("drop_b" in s for s in frees), sigs
PY

# Each crash's restored frame: marked, named, and with the line of its
# jump where the DWARF allows one way only (release_a, drop_a), without
# a line where two ways lead to crash_site (release_b: directly or
# through helper).
for gid in $(python3 -c 'import json,sys; print(" ".join(g["id"] for g in json.load(open(sys.argv[1]))["groups"]))' "$WORK/groups.json"); do
    api "/api/v1/groups/$gid/crashes" >"$WORK/crashes.json" || fail "GET group $gid crashes"
    for cid in $(python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(open(sys.argv[1]))["crashes"]))' "$WORK/crashes.json"); do
        api "/api/v1/crashes/$cid" >"$WORK/c-$cid.json" || fail "GET crash $cid"
    done
done
[ "$(ls "$WORK"/c-*.json | wc -l)" = 16 ] || fail "want 16 crashes, have $(ls "$WORK"/c-*.json | wc -l)"
python3 - "$SRC" "$LIBSRC" "$WORK"/c-*.json <<'PY' || fail "restored frames"
import json, sys
src = open(sys.argv[1]).read().split("\n")
lib = open(sys.argv[2]).read().split("\n")
def line_of(fn, text, src=src):
    start = next(i for i, l in enumerate(src) if (" " + fn + "(") in l and not l.endswith(";"))
    return next(i + 1 for i in range(start, len(src)) if text in src[i])
seen = set()
for path in sys.argv[3:]:
    c = json.load(open(path))
    frames = c["threads"][0]["frames"]
    tail = [f for f in frames if f.get("tail_call")]
    if frames[0]["function"] == "third_fn":
        assert not tail and frames[1]["function"] == "main", frames
        seen.add("third")
        continue
    if tail and tail[0]["function"] == "deep3":
        assert [f["function"] for f in tail] == ["deep3", "deep2", "deep1", "deep0"], tail
        assert all(f["line"] for f in tail), tail
        seen.add("deep")
        continue
    assert len(tail) == 1, (path, [(f["function"], f.get("tail_call")) for f in frames])
    f = tail[0]
    fn = f["function"]
    seen.add(fn)
    if fn == "release_a":
        assert f["file"].endswith("tailcall.c"), f
        assert f["line"] == line_of("release_a", "return crash_site(p);"), (f, line_of("release_a", "return crash_site(p);"))
    elif fn == "drop_a":
        assert f["line"] == line_of("drop_a", "free(b->data);"), f
    elif fn in ("release_b", "mixed"):
        assert f["line"] is None and f["file"] is None, f
    elif fn == "route":
        assert f["line"] == line_of("route", "return bar_entry(p);"), f
    elif fn in ("api_a", "api_b"):
        # in the library, at its one tail call: its jump's line
        assert f["module"] == "libtailbar.so", f
        assert f["file"].endswith("tailcall_lib.c"), f
        k = 1 if fn == "api_a" else 2
        assert f["line"] == line_of(fn, "return lib_common(p, %d);" % k, lib), f
        assert not f.get("at_entry"), f
        assert frames[frames.index(f) - 1]["function"] == "lib_common", frames
    i = frames.index(f)
    assert frames[i + 1]["function"] == "main", frames[i + 1]
    assert f["in_signature"], f
assert seen == {"release_a", "release_b", "drop_a", "drop_b", "mixed", "route", "deep", "api_a",
                "api_b", "third"}, seen
PY
curl -fsS -m 5 "$BASE/metrics" -H "Authorization: Bearer $ADMIN" | grep -Eq '^faultline_tail_call_frames_total [1-9]' ||
    fail "faultline_tail_call_frames_total did not count"
echo "ok [tailcall]: frames left off by tail calls put back; 2 crashes that unwind alike -> 2 groups; gcc and clang builds -> 1"
