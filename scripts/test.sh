#!/usr/bin/env bash
# Builds Sentinel and runs every test: unit, hazard and PyTorch tests (ctest), bounded fuzz runs of the
# readers of outside input, the sanitizer stage (scripts/sanitizers.sh) and the tests inside the
# two-node QEMU guest. Set SENTINEL_SKIP_GUEST=1 to leave the guest out (it boots QEMU under TCG: about
# two minutes) and SENTINEL_SANITIZERS=0 to leave the sanitizer stage out.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
guest=ON
[ "${SENTINEL_SKIP_GUEST:-0}" = 1 ] && guest=OFF

echo "== build"
bash "$root/scripts/build.sh" -DSENTINEL_GUEST_TESTS="$guest"

echo "== unit, hazard and PyTorch tests"
ctest --test-dir "$build" -LE guest --output-on-failure -j 2

echo "== fuzzing the readers of outside input (4 x 15 s; bench/fuzz/run.sh runs a million each)"
bash "$root/scripts/fuzz.sh" -max_total_time=15 "$build-fuzz"

if [ "${SENTINEL_SANITIZERS:-1}" = 1 ]; then
  bash "$root/scripts/sanitizers.sh"
fi

if [ "$guest" = ON ]; then
  echo "== tests in the two-node guest"
  "$root/scripts/numa-guest.sh" --prepare
  ctest --test-dir "$build" -L guest --output-on-failure
fi
echo "== all tests passed"
