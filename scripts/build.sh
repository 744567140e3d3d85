#!/usr/bin/env bash
# Configures and builds Sentinel into ./build (or $SENTINEL_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSENTINEL_FAULT_INJECTION=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
