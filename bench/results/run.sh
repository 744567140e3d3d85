#!/usr/bin/env bash
# bench/results/run.sh [options] OUT_DIR
#
# The results matrix (docs/results.md): PyTorch training workloads in the two-node guest with the
# slow-tier plugin on, under several placements, one guest boot for the whole matrix. Per cell the
# JSON of bench/results/guest_step.py lands in OUT_DIR; OUT_DIR/table.md is the summary. Each
# workload also runs once on the host (one thread) for the all-fast calibration column.
#   --tier T          optane | cxl | FILE (default optane)
#   --workloads LIST  comma separated, from guest_step.py (default mlp,mlp-adam,cnn,lstm,transformer)
#   --placements LIST all-fast,all-slow,first-touch-20,first-touch-50,memtier-20,memtier-50,
#                     interleave,managed-20,managed-50,static-plan-20,static-plan-50, and with --node1
#                     kmem linux-tiering-20,linux-tiering-50,autonuma-20,autonuma-50 (node 0 holds that share
#                     of the process's anonymous memory) and linux-tiering-m20,autonuma-m20 (-m50: node 1
#                     holds the bytes it held in the managed-N cell; list managed-N first) (default: all but
#                     managed-*, static-plan-* and the kernel's; static-plan-N runs Sentinel's best static
#                     plan for the profile of managed-N, so list it after managed-N)
#   --node1 K         plain | kmem: node 1 as the guest's plain node or as dax kmem memory in a lower
#                     memory tier (SENTINEL_GUEST_NODE1, docs/numa-guest.md; default plain)
#   --steps N         steps per cell; the first is warm-up, the rest are steady (default 6)
#   --managed-steps N steps per managed cell (default: --steps; use 16 or more: detection, warm-up and
#                     profiling come first, the last 5 steps are the steady ones)
#   --timeline-steps N managed steps recorded in each managed cell's executed timeline (default: all;
#                     0: none; the writer's instructions are charged by the virtual clock, docs/results.md)
#   --cpi X           plugin CPI (default 1.0; see the calibration column)
#   --also W:P        repeatable: after the matrix, in the same boot, placements P (comma separated) for
#                     workloads W only (cells that do not fill a whole rectangle, e.g. lstm:managed-20)
#   --calibrate       first, in the same boot: sentinel-slowtier calibrate --mib 16 --migrate-mib 16 into
#                     OUT_DIR/calibrate.txt (the emulated tier's migration rows, the setup per move)
# Managed cells also get OUT_DIR/model-check.md (bench/results/model_check.py).
# Time: import torch takes 2-4 minutes in the guest with the plugin, so each guest process costs that
# once; static placements run all workloads in one process, Sentinel's one process per workload.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tier=optane
workloads=mlp,mlp-adam,cnn,lstm,transformer
placements=all-fast,all-slow,first-touch-20,first-touch-50,memtier-20,memtier-50,interleave
steps=6
managed_steps=
timeline_steps=
cpi=1.0
node1=plain
also=()
calibrate=0
while (( $# > 1 )); do
  case "$1" in
    --tier) tier="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --placements) placements="$2"; shift 2 ;;
    --calibrate) calibrate=1; shift ;;
    --steps) steps="$2"; shift 2 ;;
    --managed-steps) managed_steps="$2"; shift 2 ;;
    --timeline-steps) timeline_steps="$2"; shift 2 ;;
    --cpi) cpi="$2"; shift 2 ;;
    --node1) node1="$2"; shift 2 ;;
    --also) [[ "$2" == *:* ]] || { echo "run.sh: --also takes WORKLOADS:PLACEMENTS" >&2; exit 2; }
            also+=("$2"); shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# == 1 ]] || { sed -n '2,28p' "$0" >&2; exit 2; }
out="$1"
mkdir -p "$out"
out="$(cd "$out" && pwd -P)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
[[ -f "$build/lib/libsentinel.so" && -f "$build/lib/libsentinel_qemu_slowtier.so" ]] || {
  echo "run.sh: build first (scripts/build.sh); looked in $build" >&2; exit 2; }

groups=("$workloads:$placements" "${also[@]}")
all_workloads=$(printf '%s\n' "${groups[@]%%:*}" | tr , '\n' | awk '!seen[$0]++' | paste -sd, -)
echo "== host calibration runs (one thread)"
OMP_NUM_THREADS=1 /usr/bin/python3 "$here/guest_step.py" --host --workloads "$all_workloads" \
  --steps "$steps" --placement host --out-dir "$out"

echo "== guest matrix ($tier)"
start=$(date +%s)
SENTINEL_BUILD_DIR="$build" SENTINEL_GUEST_RW="$out" SENTINEL_GUEST_SLOW_TIER="$tier" SENTINEL_GUEST_NODE1="$node1" \
  SENTINEL_GUEST_SLOW_TIER_STATS="$out/plugin-stats.json" SENTINEL_GUEST_SLOW_TIER_OPTS="cpi=$cpi" \
  SENTINEL_GUEST_TIMEOUT="${SENTINEL_GUEST_TIMEOUT:-36000}" \
  SENTINEL_RUN_CALIBRATE="$calibrate" \
  "$root/scripts/numa-guest.sh" bash -c 'script=$1 out=$2; shift 2; rest=("${@:1:5}"); shift 5
    if [[ "${SENTINEL_RUN_CALIBRATE:-0}" == 1 ]]; then
      "${rest[1]}/bin/sentinel-slowtier" calibrate --mib 16 --migrate-mib 16 >"$out/calibrate.txt" 2>&1 || true
    fi
    for g in "$@"; do bash "$script" "$out" "${g%%:*}" "${g#*:}" "${rest[@]}"; done' _ \
  "$here/guest_matrix.sh" "$out" "$steps" "$build" "$tier" "${managed_steps:-$steps}" \
  "${timeline_steps:-${managed_steps:-$steps}}" "${groups[@]}"
echo "guest matrix took $(( $(date +%s) - start )) s" | tee "$out/elapsed.txt"
/usr/bin/python3 "$here/table.py" "$out" | tee "$out/table.md"
if compgen -G "$out/*.managed-*.timeline" >/dev/null; then
  SENTINEL_BUILD_DIR="$build" /usr/bin/python3 "$here/model_check.py" "$out" | tee "$out/model-check.md"
fi
