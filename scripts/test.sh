#!/usr/bin/env bash
# Builds Sentinel and runs every test: unit, hazard and PyTorch tests (ctest), a bounded fuzz run of the
# profile reader, and the tests inside the two-node QEMU guest. Set SENTINEL_SKIP_GUEST=1 to leave the
# guest out (it boots QEMU under TCG: about two minutes).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
guest=ON
[ "${SENTINEL_SKIP_GUEST:-0}" = 1 ] && guest=OFF

echo "== build"
bash "$root/scripts/build.sh" -DSENTINEL_GUEST_TESTS="$guest"

echo "== unit, hazard and PyTorch tests"
ctest --test-dir "$build" -LE guest --output-on-failure -j 2

echo "== fuzzing the profile reader (60 s)"
fuzz_build="$build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_build" -G Ninja -DSENTINEL_BUILD_FUZZ=ON \
  -DSENTINEL_BUILD_BENCH=OFF -DSENTINEL_BUILD_TESTS=ON >/dev/null
cmake --build "$fuzz_build" -j "$(nproc)" --target profile_fuzz
corpus="$(mktemp -d)"
"$fuzz_build/tests/fuzz/profile_fuzz" -max_total_time=60 -max_len=8192 \
  -dict="$root/tests/fuzz/profile.dict" "$corpus" "$root/tests/fuzz/corpus" 2>&1 | tail -n 3
rm -rf "$corpus"

if [ "$guest" = ON ]; then
  echo "== tests in the two-node guest"
  "$root/scripts/numa-guest.sh" --prepare
  ctest --test-dir "$build" -L guest --output-on-failure
fi
echo "== all tests passed"
