#!/bin/sh
# setup.sh -- installs what tirlua needs on Debian 12 (skipped when already present) and
# builds it.  Usage: scripts/setup.sh [build-dir] [extra cmake args...]
# The CUDA toolkit is expected at /usr/local/cuda (NVRTC is opened at run time; without
# it, code generation still works and compilation reports that NVRTC is missing).
set -e
cd "$(dirname "$0")/.."
pkgs="cmake gcc make pkg-config liblua5.4-dev lua5.4 lua-busted libopenblas-dev libreadline-dev luarocks gnuplot-nox libdlpack-dev"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
dir=${1:-build}
[ $# -gt 0 ] && shift
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
