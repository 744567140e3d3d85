#!/usr/bin/env bash
# bench/profile/truth.sh [--workloads LIST] [--tier T] OUT_DIR
#
# The software sampler against the ground truth (docs/profiler.md, "Accuracy against the ground
# truth"): for each PyTorch workload of bench/results/guest_step.py, in one boot of the two-node guest
# with the slow-tier plugin, one process profiles it with the emulated PEBS at SENTINEL_SAMPLE_PERIOD=1
# (every cache-model miss and write-back: the truth) and another with the software sampler; both
# with 1 warm-up and 2 profiled steps, steps marked by the program (--mark-steps: both runs share the
# step clock), objects from 8 KiB (as the results matrix's managed cells), 7 steps per process (the emulated
# PMU profiles the first steps that begin after its ring is registered). Back on the host,
# `sentinel profile-diff` scores each software profile against its truth; OUT_DIR/table.md is the table.
#   --workloads LIST  comma separated (default mlp,mlp-adam,cnn,lstm,transformer,gru-lm)
#   --tier T          the plugin's preset (default optane; the counts do not depend on it)
#   --samplers LIST   which profiles to record: pebs (the truth), software, or both (default pebs,software)
#   --truth-dir DIR   score against the truths DIR/<workload>.truth.json (profiles/ground-truth) instead
#                     of truths recorded in this run
# Time: import torch takes 2-4 minutes in the guest with the plugin, twice per workload.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
workloads=mlp,mlp-adam,cnn,lstm,transformer,gru-lm
tier=optane
samplers=pebs,software
truth_dir=
while (( $# > 1 )); do
  case "$1" in
    --workloads) workloads="$2"; shift 2 ;;
    --tier) tier="$2"; shift 2 ;;
    --samplers) samplers="$2"; shift 2 ;;
    --truth-dir) truth_dir="$(cd "$2" && pwd -P)"; shift 2 ;;
    *) echo "truth.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# == 1 ]] || { sed -n '2,19p' "$0" >&2; exit 2; }
out="$1"
mkdir -p "$out"
out="$(cd "$out" && pwd -P)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
[[ -f "$build/lib/libsentinel.so" && -f "$build/lib/libsentinel_qemu_slowtier.so" ]] || {
  echo "truth.sh: build first (scripts/build.sh); looked in $build" >&2; exit 2; }

echo "== guest: $workloads, samplers $samplers ($tier)"
start=$(date +%s)
SENTINEL_BUILD_DIR="$build" SENTINEL_GUEST_RW="$out" SENTINEL_GUEST_SLOW_TIER="$tier" \
  SENTINEL_GUEST_SLOW_TIER_STATS="$out/plugin-stats.json" SENTINEL_GUEST_TIMEOUT="${SENTINEL_GUEST_TIMEOUT:-36000}" \
  "$root/scripts/numa-guest.sh" bash -c '
    out=$1 build=$2 step=$3 workloads=$4 samplers=$5
    echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null || true
    for w in ${workloads//,/ }; do
      for s in ${samplers//,/ }; do
        t0=$(date +%s)
        env -u SENTINEL_BUILD_DIR OMP_NUM_THREADS=1 LD_PRELOAD="$build/lib/libsentinel.so" SENTINEL_MODE=profile \
          SENTINEL_MIN_OBJECT=8K SENTINEL_WARMUP_STEPS=1 SENTINEL_PROFILE_STEPS=2 SENTINEL_SAMPLER=$s \
          SENTINEL_SAMPLE_PERIOD=1 SENTINEL_PROFILE_OUT="$out/$w.$s.profile.json" SENTINEL_STATS="$out/$w.$s.stats.json" \
          SENTINEL_LOG=info SENTINEL_LOG_FILE="$out/$w.$s.log" \
          /usr/bin/python3 "$step" --workloads "$w" --steps 7 --mark-steps --placement "$s" --out-dir "$out" \
          2>"$out/$w.$s.err" || echo "   $w $s: exit status $? (see $out/$w.$s.err)"
        echo "   $w $s: $(( $(date +%s) - t0 )) s"
      done
    done' _ "$out" "$build" "$root/bench/results/guest_step.py" "$workloads" "$samplers"
echo "guest took $(( $(date +%s) - start )) s" | tee "$out/elapsed.txt"

for w in ${workloads//,/ }; do
  truth="$out/$w.pebs.profile.json" sw="$out/$w.software.profile.json"
  [[ -n "$truth_dir" ]] && truth="$truth_dir/$w.truth.json"
  if [[ -f "$truth" && -f "$sw" ]]; then
    "$build/bin/sentinel" profile-diff "$truth" "$sw" | tee "$out/$w.diff.txt"
    "$build/bin/sentinel" profile-diff --json "$truth" "$sw" >"$out/$w.diff.json"
  else
    echo "truth.sh: $w: a profile is missing" >&2
  fi
done
/usr/bin/python3 "$here/truth_table.py" "$out" "$workloads" $truth_dir | tee "$out/table.md"
