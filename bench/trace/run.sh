#!/usr/bin/env bash
# bench/trace/run.sh BUILD_DIR - FAULTLINE_TRACE against snprintf logging.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin=$build/bench/trace/tracebench
[ -x "$bin" ] || cmake --build "$build" --target tracebench >/dev/null
"$bin" "${EVENTS:-2000000}" "${ROUNDS:-7}"
