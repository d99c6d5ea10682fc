#!/usr/bin/env bash
# Grouping with real symbols: the same crash built by gcc -O2 and by
# clang -O1 (other addresses) lands in one group; a crash that shares only
# the top frame (same crash site, other callers) lands in another.
# With a fifth argument "c++", grouping.c is built as C++ (g++ and
# clang++), and the crash is an uncaught exception instead of a
# segmentation fault; with "libc++", as C++ by g++ with libstdc++ and by
# clang++ with libc++, the crashing function taking a std::string (whose
# name the two standard libraries spell apart).
set -u
SRC=$1 LIBA=$2 INCLUDE=$3 FAULTLINE=$4 LANGUAGE=${5:-c}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-grp.XXXXXX")
ADMIN=grp-admin-$$ KEY=grp-key-$$
cleanup() {
    if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL [grouping]: $*" >&2
    [ -f "$WORK/err" ] && tail -n 20 "$WORK/err" >&2
    exit 1
}
export ASAN_OPTIONS=handle_segv=0:detect_leaks=0
unset FAULTLINE_URL FAULTLINE_REPORTER

# Two builds of the same program.
GCC=gcc CLANG=clang DEATH=139 DIED="SIGSEGV" X=c
[ "$LANGUAGE" = c++ ] && GCC=g++ CLANG=clang++ DEATH=134 DIED="SIGABRT (an uncaught exception)" X=c++
# libc++: g++ with libstdc++ against clang++ with libc++, which spell the
# crashing function's std::string parameter apart.
[ "$LANGUAGE" = libc++ ] && GCC="g++ -DSTRING_ARG" CLANG="clang++ -stdlib=libc++ -DSTRING_ARG" X=c++
$GCC   -O2 -g -I"$INCLUDE" -x $X "$SRC" -x none "$LIBA" -o "$WORK/v1" -lpthread -ldl || fail "$GCC build"
$CLANG -O1 -g -DPAD -I"$INCLUDE" -x $X "$SRC" -x none "$LIBA" -o "$WORK/v2" -lpthread -ldl ||
    fail "$CLANG build"

crash() { # spool version exe mode
    FAULTLINE_SPOOL=$1 GROUPING_VERSION=$2 "$3" "$4" 2>/dev/null
    [ $? = "$DEATH" ] || fail "$3 $4 did not die of $DIED"
}
crash "$WORK/spool" 1.0 "$WORK/v1" a
crash "$WORK/spool" 1.1 "$WORK/v2" a
crash "$WORK/spool" 1.0 "$WORK/v1" b

FL=$FAULTLINE work=$WORK
. "$(dirname "$0")/../lib/server.sh"
export FAULTLINE_ADMIN_TOKEN=$ADMIN FAULTLINE_INGEST_KEY=$KEY
start "$WORK/data"
BASE=$(url "")
curl -fsS -m 5 "$BASE/healthz" >/dev/null || fail "server never answered /healthz"

# Symbols first (both builds), then the crashes.
FAULTLINE_ADMIN_TOKEN=$ADMIN "$FAULTLINE" symbols add "$WORK/v1" "$WORK/v2" --server "$BASE" \
    >"$WORK/sym.out" 2>&1 || fail "symbols add --server: $(cat "$WORK/sym.out")"
"$FAULTLINE" submit "$WORK"/spool/*.crashlog --server "$BASE/api/v1/crashes" --key "$KEY" \
    >"$WORK/submit.out" 2>&1 || fail "submit: $(cat "$WORK/submit.out")"

out=$(wait_counts groupapp "2 1")
[ "$out" = "2 1" ] || fail "group counts '$out', want '2 1' (same crash from two builds in one group, the other path apart)"

# The big group is named by the crash site, with file and line.
api "/api/v1/groups?app=groupapp" >"$WORK/groups.json"
gid=$(python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["groups"]; print(max(g, key=lambda x: x["count"])["id"])' "$WORK/groups.json")
api "/api/v1/groups/$gid" >"$WORK/group.json" || fail "GET group"
python3 - "$WORK/group.json" <<'PY' || fail "representative frames lack function/file/line: $(head -c 600 "$WORK/group.json")"
import json, sys
g = json.load(open(sys.argv[1]))
g = g.get("group", g)
text = json.dumps(g)
frames = []
def walk(o):
    if isinstance(o, dict):
        if "function" in o and "address" in o:
            frames.append(o)
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(g)
# C++ names come with their parameters: "crash_site(int volatile*)".
names = [(f.get("function") or "").split("(")[0] for f in frames]
assert "crash_site" in names, names
site = frames[names.index("crash_site")]
assert (site.get("file") or "").endswith("grouping.c"), site
assert int(site.get("line") or 0) > 0, site
assert "step_a" in names and "path_a" in names, names
# Named from the code that crashed (for C++, that threw), not from the
# runtime it went through.
sig = g.get("signature") or ""
assert sig.split(" | ")[0].split("(")[0] in ("crash_site", "std::vector<int, std::allocator<int> >::_M_range_check"), sig
assert "libstdc++" not in sig and "abort" not in sig and "terminate" not in sig, sig
PY
# An uncaught exception: each crash names it, as C++ spells it, with
# what() (metadata.exception; the log's EXCEPTION_TYPE/_MESSAGE).
if [ "$LANGUAGE" = c++ ]; then
  api "/api/v1/groups/$gid/crashes" >"$WORK/crashes.json" || fail "GET group crashes"
  for cid in $(python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(open(sys.argv[1]))["crashes"]))' "$WORK/crashes.json"); do
    api "/api/v1/crashes/$cid" >"$WORK/crash.json" || fail "GET crash $cid"
    python3 - "$WORK/crash.json" <<'PY' || fail "crash $cid: no exception in its metadata: $(head -c 800 "$WORK/crash.json")"
import json, sys
c = json.load(open(sys.argv[1]))
e = c["metadata"]["exception"]
assert e["type"] == "std::out_of_range", e
assert e["mangled"] == "St12out_of_range", e
assert "vector::_M_range_check" in e["message"], e
PY
  done
  echo "ok [grouping]: the uncaught exception's type and what() on each crash"
fi
# The toolchains' names of the crashing function differ (the frames keep
# them), and the group holds both: its signature keys the function in one
# spelling, "crash_site(int volatile*, std::string const&)".
if [ "$LANGUAGE" = libc++ ]; then
  api "/api/v1/groups/$gid/crashes" >"$WORK/crashes.json" || fail "GET group crashes"
  : >"$WORK/sites"
  for cid in $(python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(open(sys.argv[1]))["crashes"]))' "$WORK/crashes.json"); do
    api "/api/v1/crashes/$cid" >"$WORK/crash.json" || fail "GET crash $cid"
    python3 - "$WORK/crash.json" >>"$WORK/sites" <<'PY' || fail "crash $cid: no crash_site frame: $(head -c 800 "$WORK/crash.json")"
import json, sys
names = []
def walk(o):
    if isinstance(o, dict):
        if (o.get("function") or "").startswith("crash_site("):
            names.append(o["function"])
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(json.load(open(sys.argv[1])))
assert names, "no crash_site frame"
print(names[0])
PY
  done
  grep -q 'std::__cxx11::basic_string' "$WORK/sites" && grep -q 'std::__1::basic_string' "$WORK/sites" ||
    fail "the group should hold both spellings of crash_site: $(cat "$WORK/sites")"
  echo "ok [grouping]: crash_site as libstdc++ and as libc++ spell it, in one group"
fi
echo "ok [grouping]: $GCC -O2 and $CLANG -O1 builds of one crash -> one group; other path -> another"
