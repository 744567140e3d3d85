#!/usr/bin/env bash
# Runs every libFuzzer target over a reader of outside input (profile, plan and timeline files; the
# SENTINEL_* configuration), one after the other, each from its seed corpus plus a fresh scratch
# corpus, with LIMIT as libFuzzer's stopping option; prints libFuzzer's last lines and the wall time
# of each. Builds the targets with clang first (tests/fuzz/CMakeLists.txt).
#   scripts/fuzz.sh -max_total_time=15 [FUZZ_BUILD_DIR]   (CI: scripts/test.sh)
#   scripts/fuzz.sh -runs=1000000 [FUZZ_BUILD_DIR]        (the long run: bench/fuzz/run.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
limit="${1:?usage: fuzz.sh LIMIT [FUZZ_BUILD_DIR]}"
fuzz_build="${2:-$root/build-fuzz}"
CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_build" -G Ninja -DSENTINEL_BUILD_FUZZ=ON \
  -DSENTINEL_BUILD_BENCH=OFF -DSENTINEL_BUILD_TESTS=ON >/dev/null
cmake --build "$fuzz_build" -j "$(nproc)" --target profile_fuzz plan_fuzz timeline_fuzz config_fuzz
for name in profile plan timeline config; do
  seeds="$root/tests/fuzz/corpus-$name"
  extra=()
  if [ "$name" = profile ]; then seeds="$root/tests/fuzz/corpus"; extra=(-dict="$root/tests/fuzz/profile.dict"); fi
  corpus="$(mktemp -d)"
  echo "-- ${name}_fuzz $limit"
  start=$(date +%s%N)
  "$fuzz_build/tests/fuzz/${name}_fuzz" "$limit" -max_len=8192 "${extra[@]}" "$corpus" "$seeds" 2>&1 | tail -n 2
  echo "wall ms: $(( ($(date +%s%N) - start) / 1000000 ))"
  rm -rf "$corpus"
done
