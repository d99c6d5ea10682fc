#!/usr/bin/env bash
# Installs the Debian packages Faultline needs to build, test and run.
# Idempotent: it asks dpkg first and calls apt-get only for what is missing,
# so `make test` on a machine that has everything costs a fraction of a second.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang llvm lld libc++-14-dev libc++abi-14-dev
  libelf-dev libdw-dev libdebuginfod-dev elfutils debuginfod dwz
  libsqlite3-dev libpq-dev librabbitmq-dev libssl-dev libmicrohttpd-dev
  libcurl4-openssl-dev libjansson-dev libxml2-dev libpcre2-dev
  zlib1g-dev libzstd-dev libcmocka-dev libcapstone-dev
  postgresql rabbitmq-server
  libc6-dbg gdb valgrind curl ca-certificates procps python3 strace iproute2 openssl faketime
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  chromium nodejs
)
# Optional extras for `make bench` only.
if [ "${1:-}" = "--bench" ]; then PKGS+=(wrk nginx-light hyperfine sqlite3); fi

missing=()
for p in "${PKGS[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$st" in *"ok installed"*) ;; *) missing+=("$p") ;; esac
done
# npm comes with some nodejs builds and is a package of its own in Debian's.
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
  command -v sudo >/dev/null || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
else
  SUDO=
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
