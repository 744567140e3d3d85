#!/bin/sh
# pmu_truth.sh LIBSENTINEL SENTINEL_CLI PMU_PATTERN PMU_TRUTH_CHECK: the emulated PMU's guest test
# (guest.pmu_truth; run inside scripts/numa-guest.sh with SENTINEL_GUEST_SLOW_TIER set). In one boot:
#   1. pmu_pattern profiled with SENTINEL_SAMPLER=pebs at SENTINEL_SAMPLE_PERIOD=1: the plugin delivers
#      every miss and write-back; pmu_truth_check checks the profile against the known passes;
#   2. the same program profiled with the software sampler, scored against (1) by profile-diff (printed;
#      the software sampler reads 8:4:2:1 passes as 1:1:1:1, which this test does not judge);
#   3. (1) read by `sentinel replay`, and by managed mode as SENTINEL_PROFILE_IN;
#   and the program's output is the same in every run and without Sentinel.
set -eu
lib="$1" cli="$2" pattern="$3" check="$4"
out="${TMPDIR:-/tmp}/pmu-truth.$$"
mkdir -p "$out"
"$pattern" --print-truth >"$out/schedule.txt"
"$pattern" --steps 10 >"$out/plain.out"
profile() {  # profile NAME SAMPLER
  env LD_PRELOAD="$lib" SENTINEL_MODE=profile SENTINEL_WARMUP_STEPS=1 SENTINEL_PROFILE_STEPS=2 \
    SENTINEL_SAMPLER="$2" SENTINEL_SAMPLE_PERIOD=1 SENTINEL_PROFILE_OUT="$out/$1.json" \
    SENTINEL_STATS="$out/$1.stats.json" SENTINEL_LOG=info SENTINEL_LOG_FILE="$out/$1.log" \
    "$pattern" --steps 10 --pin-cpu 0 >"$out/$1.out"
  cmp "$out/plain.out" "$out/$1.out" || { echo "pmu_truth: $1 run's output differs from the plain run's"; exit 1; }
}
echo "== emulated PEBS, period 1"
start=$(date +%s)
profile truth pebs
echo "   $(( $(date +%s) - start )) s; $(grep -m1 'sampler:' "$out/truth.log" || true)"
grep -o '"samples[a-z_]*": [0-9]*' "$out/truth.stats.json" | tr '\n' ' '; echo
"$check" truth "$out/schedule.txt" "$out/truth.json" "$out/truth.stats.json"
echo "== software sampler"
profile software software
echo "== sentinel profile-diff truth software"
"$cli" profile-diff "$out/truth.json" "$out/software.json"
echo "== sentinel replay truth"
"$cli" replay "$out/truth.json" --tier optane
echo "== managed mode from the truth (SENTINEL_PROFILE_IN)"
env LD_PRELOAD="$lib" SENTINEL_MODE=managed SENTINEL_PROFILE_IN="$out/truth.json" SENTINEL_FAST_BUDGET=50% \
  SENTINEL_STATS="$out/managed.stats.json" "$pattern" --steps 10 >"$out/managed.out"
cmp "$out/plain.out" "$out/managed.out" || { echo "pmu_truth: the managed run's output differs"; exit 1; }
"$check" managed "$out/managed.stats.json"
rm -rf "$out"
