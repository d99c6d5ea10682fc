# Shell helper for tests that ask a real debuginfod (elfutils) for files.
# Source it after setting `work` (a private temporary directory) and
# defining fail().  debuginfod_start DIR EXE DEBUG starts one on a free
# loopback port that serves the files under DIR, and waits until its scan
# found at least EXE executables and DEBUG debuginfo files.  Sets DPID and
# DPORT; debuginfod_stop (or the test's cleanup) ends it.

DPID= DPORT=

debuginfod_start() { # debuginfod_start DIR MIN_EXECUTABLES MIN_DEBUGINFO
  local dir=$1 exe=$2 dbg=$3 p attempt
  command -v debuginfod >/dev/null || fail "debuginfod is not installed (scripts/deps.sh)"
  for attempt in 1 2 3 4 5 6 7 8; do
    p=$((20000 + (RANDOM * 7 + attempt * 131) % 40000))
    ss -ltnH "sport = :$p" 2>/dev/null | grep -q . && continue
    debuginfod -v -p "$p" -d "$work/debuginfod.sqlite" -F "$dir" >"$work/debuginfod.log" 2>&1 &
    DPID=$!
    for _ in $(seq 1 150); do
      kill -0 "$DPID" 2>/dev/null || break
      if curl -sf "http://127.0.0.1:$p/metrics" >"$work/metrics" 2>/dev/null &&
         awk -v e="$exe" -v d="$dbg" '
           /^found_executable_total\{source="files"\}/ { x = $2 }
           /^found_debuginfo_total\{source="files"\}/ { y = $2 }
           /^thread_work_pending\{role="scan"\}/ { w = $2 }
           END { exit !(x + 0 >= e && y + 0 >= d && w == "0") }' "$work/metrics"; then
        DPORT=$p
        return 0
      fi
      sleep 0.1
    done
    kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=
  done
  fail "debuginfod did not start and scan"
}

debuginfod_stop() {
  [ -n "$DPID" ] && { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
  DPID=
}
