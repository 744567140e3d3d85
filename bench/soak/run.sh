#!/usr/bin/env bash
# The long soak: tests/preload/soak_program (a small model's allocation pattern, every buffer written)
# under the preload for many steps, in track and in managed mode; prints each metric's slope per step
# after warm-up (resident bytes, mappings counted as runs of /proc/self/maps lines, heap extents,
# system-allocator bytes in use) and the wall time. A leak shows as a positive slope; flat is ~0.
#
#   bench/soak/run.sh [STEPS] [BUILD_DIR]          (default 5000 steps, ./build)
#   bench/soak/run.sh --torch [STEPS] [BUILD_DIR]  a PyTorch MLP with SGD instead (bench/soak/torch_soak.py,
#                                                  default 1000 steps; managed mode, SENTINEL_MIN_OBJECT=8K)
# In the two-node guest (managed mode moves pages between the nodes there; fewer steps under TCG;
# SOAK_MOVES=1 also moves one object to the other node every step, docs/reliability.md):
#   SENTINEL_FAST_BUDGET=4M SOAK_MOVES=1 SENTINEL_GUEST_PASS_ENV=SOAK_MOVES SENTINEL_GUEST_TIMEOUT=3000 \
#     scripts/numa-guest.sh bench/soak/run.sh 1000
#   SENTINEL_FAST_BUDGET=20% SENTINEL_GUEST_TIMEOUT=3000 scripts/numa-guest.sh bench/soak/run.sh --torch 1000
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
torch=0
if [ "${1:-}" = "--torch" ]; then torch=1; shift; fi
steps="${1:-$([ $torch = 1 ] && echo 1000 || echo 5000)}"
build="${2:-$root/build}"
program="$build/tests/preload/soak_program"
lib="$build/lib/libsentinel.so"
[ -f "$lib" ] && { [ $torch = 1 ] || [ -x "$program" ]; } || { echo "build soak_program and sentinel first" >&2; exit 2; }
warmup=$((steps / 4))
if [ $torch = 1 ]; then
  echo "== PyTorch MLP, managed mode, $steps steps (warm-up $warmup)"
  start=$(date +%s%N)
  env LD_PRELOAD="$lib" SENTINEL_MODE=managed SENTINEL_LOG="${SENTINEL_LOG:-warn}" \
    SENTINEL_MIN_OBJECT="${SENTINEL_MIN_OBJECT:-8K}" OMP_NUM_THREADS=1 \
    /usr/bin/python3 "$root/bench/soak/torch_soak.py" --steps "$steps" --warmup "$warmup"
  echo "wall ms: $(( ($(date +%s%N) - start) / 1000000 ))"
  exit 0
fi
for mode in track managed; do
  echo "== $mode mode, $steps steps (warm-up $warmup)"
  start=$(date +%s%N)
  env LD_PRELOAD="$lib" SENTINEL_MODE="$mode" SENTINEL_LOG="${SENTINEL_LOG:-warn}" \
    "$program" "$steps" "$warmup"
  echo "wall ms: $(( ($(date +%s%N) - start) / 1000000 ))"
done
