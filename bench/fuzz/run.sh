#!/usr/bin/env bash
# The long fuzz run: every reader fuzzer for RUNS inputs each (default one million), with wall times.
# CI runs 15 s of each (scripts/test.sh). Needs clang.
#   bench/fuzz/run.sh [RUNS] [FUZZ_BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
exec bash "$root/scripts/fuzz.sh" -runs="${1:-1000000}" "${2:-$root/build-fuzz}"
