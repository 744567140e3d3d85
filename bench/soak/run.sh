#!/usr/bin/env bash
# The long soak: tests/preload/soak_program (a small model's allocation pattern, every buffer written)
# under the preload for many steps, in track and in managed mode; prints each metric's slope per step
# after warm-up (resident bytes, /proc/self/maps lines, heap extents, system-allocator bytes in use) and
# the wall time. A leak shows as a positive slope; flat is ~0.
#
#   bench/soak/run.sh [STEPS] [BUILD_DIR]          (default 5000 steps, ./build)
# In the two-node guest (managed mode moves pages between the nodes there; fewer steps under TCG):
#   SENTINEL_FAST_BUDGET=4M scripts/numa-guest.sh bench/soak/run.sh 1000
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
steps="${1:-5000}"
build="${2:-$root/build}"
program="$build/tests/preload/soak_program"
lib="$build/lib/libsentinel.so"
[ -x "$program" ] && [ -f "$lib" ] || { echo "build soak_program and sentinel first" >&2; exit 2; }
warmup=$((steps / 4))
for mode in track managed; do
  echo "== $mode mode, $steps steps (warm-up $warmup)"
  start=$(date +%s%N)
  env LD_PRELOAD="$lib" SENTINEL_MODE="$mode" SENTINEL_LOG="${SENTINEL_LOG:-warn}" \
    "$program" "$steps" "$warmup"
  echo "wall ms: $(( ($(date +%s%N) - start) / 1000000 ))"
done
