#!/usr/bin/env bash
# guest_matrix.sh OUT_DIR WORKLOADS PLACEMENTS STEPS BUILD_DIR TIER [MANAGED_STEPS [TIMELINE_STEPS]]: runs
# inside the guest (bench/results/run.sh). TIER is the plugin's preset, also given to Sentinel's planner
# (SENTINEL_TIER). TIMELINE_STEPS: managed steps recorded in the executed timeline (0: no timeline).
# Static placements (membind, interleave, memtier) run all workloads in one process, one after the
# other; Sentinel's placements and the kernel's (linux-tiering-*, autonuma-*) run one process per workload, because a percentage budget follows the
# largest step peak the process has seen. Each workload writes OUT_DIR/<workload>.<placement>.json;
# a failed process leaves OUT_DIR/<placement>.<workloads>.err and the matrix goes on.
set -uo pipefail
out="$1"; workloads="$2"; placements="$3"; steps="$4"; build="$5"; tier="$6"; managed_steps="${7:-$4}"
timeline_steps="${8:-$managed_steps}"
here="$(cd "$(dirname "$0")" && pwd)"
memtier=/usr/lib/x86_64-linux-gnu/libmemtier.so
# Automatic NUMA balancing would move pages behind every policy's back: off for all cells.
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null || true
export OMP_NUM_THREADS=1

run_cell() {  # run_cell PLACEMENT WORKLOADS STEPS ENV... -- PREFIX...
  local p="$1" ws="$2" n="$3"; shift 3
  local envs=() pre=()
  while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
  shift
  pre=("$@")
  echo "== $p: $ws" >&2
  local start err="$out/$p.$ws.err"
  start=$(date +%s)
  # SENTINEL_BUILD_DIR (the host side's) would only make the preloaded runtime warn.
  env -u SENTINEL_BUILD_DIR "${envs[@]}" "${pre[@]}" /usr/bin/python3 "$here/guest_step.py" --workloads "$ws" \
    --placement "$p" --steps "$n" --out-dir "$out" "${step_args[@]}" 2>"$err" || echo "   exit status $? (see $err)" >&2
  echo "   $(( $(date +%s) - start )) s" >&2
  [[ -s "$err" ]] || rm -f "$err"
}

sentinel=(LD_PRELOAD="$build/lib/libsentinel.so")
step_args=()
tiers=/sys/devices/virtual/memory_tiering
for p in ${placements//,/ }; do
  case "$p" in
    all-fast) run_cell "$p" "$workloads" "$steps" -- numactl --membind=0 ;;
    all-slow) run_cell "$p" "$workloads" "$steps" -- numactl --membind=1 ;;
    interleave) run_cell "$p" "$workloads" "$steps" -- numactl --interleave=0,1 ;;
    memtier-20) run_cell "$p" "$workloads" "$steps" LD_PRELOAD="$memtier" MEMKIND_DAX_KMEM_NODES=1 \
                  "MEMKIND_MEM_TIERS=KIND:DRAM,RATIO:1;KIND:KMEM_DAX,RATIO:4;POLICY:STATIC_RATIO" -- ;;
    memtier-50) run_cell "$p" "$workloads" "$steps" LD_PRELOAD="$memtier" MEMKIND_DAX_KMEM_NODES=1 \
                  "MEMKIND_MEM_TIERS=KIND:DRAM,RATIO:1;KIND:KMEM_DAX,RATIO:1;POLICY:STATIC_RATIO" -- ;;
    first-touch-*)
      for w in ${workloads//,/ }; do
        run_cell "$p" "$w" "$steps" "${sentinel[@]}" SENTINEL_MODE=track SENTINEL_FAST_BUDGET="${p##*-}%" --
      done ;;
    managed-*)
      # Sentinel's managed mode, same budget rule. These workloads' activations (12 KiB) are below the
      # default 64 KiB object size: without them no step repeats an allocation and none is detected.
      # Run with 16 steps or more; table.py takes the medians over the last 5 steps (after the plan).
      # The planner plans for the emulated preset; the profile the plan was made from and the executed
      # timeline of the managed steps are kept for the model check (bench/results/model_check.py). The
      # timeline writer formats every live object's tier at every phase on the service thread: about
      # 0.6 M instructions per allocation event, which the virtual clock charges when the step is short
      # (docs/results.md); run.sh --timeline-steps 0 leaves it out.
      timeline_env=()
      for w in ${workloads//,/ }; do
        (( timeline_steps > 0 )) && timeline_env=(SENTINEL_TIMELINE="$out/$w.$p.timeline"
                                                    SENTINEL_TIMELINE_STEPS="$timeline_steps")
        # numa_maps after every step: the slow-tier bytes the kernel's m* cells are held at.
        step_args=(--numa-maps)
        run_cell "$p" "$w" "$managed_steps" "${sentinel[@]}" SENTINEL_MODE=managed SENTINEL_MIN_OBJECT=8K \
          SENTINEL_FAST_BUDGET="${p##*-}%" SENTINEL_TIER="$tier" SENTINEL_STATS="$out/$w.$p.sentinel-stats" \
          SENTINEL_PROFILE_OUT="$out/$w.$p.profile.json" "${timeline_env[@]}" \
          SENTINEL_LOG=info SENTINEL_LOG_FILE="$out/$w.$p.log" --
        step_args=()
      done ;;
    linux-tiering-*|autonuma-*)
      # The kernel's own tiering (docs/results.md): demotion to the lower memory tier on, and NUMA
      # balancing in tiering mode (2, TPP's promotion with its default rate limit) or classic (1). Needs
      # node 1 in a lower tier (run.sh --node1 kmem). One process per workload, in a memory cgroup of its
      # own: after every step guest_step.py demotes what node 0 holds of the process's anonymous memory
      # above the share with the cgroup's memory.reclaim (--node0-share), and records the pages per node
      # from numa_maps, which shows whether the share holds.
      if [[ $(ls -d "$tiers"/memory_tier* 2>/dev/null | wc -l) -lt 2 ]]; then
        echo "guest_matrix: $p needs node 1 in a lower memory tier (run.sh --node1 kmem); skipped" >&2; continue
      fi
      mode=2; [[ "$p" == autonuma-* ]] && mode=1
      share="${p##*-}"
      for w in ${workloads//,/ }; do
        if [[ "$share" == m* ]]; then
          # linux-tiering-mN, autonuma-mN: node 1 holds as many of the process's anonymous bytes as it held in
          # Sentinel's managed-N cell (median of its last 5 steps; list managed-N first): the same memory moved
          # to the slow tier. (A share of the process's memory counts the interpreter's and PyTorch's own pages
          # too, which Sentinel leaves on node 0; and the same node-0 bytes would leave the kernel's process,
          # without Sentinel's own memory, all on node 0.)
          cell="$out/$w.managed-${share#m}.json"
          bytes=$(/usr/bin/python3 -c 'import json, statistics, sys
s = json.load(open(sys.argv[1]))["steps"][-5:]
print(int(statistics.median(x["anon_pages_per_node"].get("1", 0) for x in s)) * 4096)' "$cell" 2>/dev/null) || {
            echo "guest_matrix: $p: no node-0 bytes in $cell (run managed-${share#m} first)" >&2; continue; }
          step_args=(--node1-bytes "$bytes" --numa-maps)
        else
          step_args=(--node0-share "0.$share" --numa-maps)
          [[ "$share" == 100 ]] && step_args=(--node0-share 1 --numa-maps)
        fi
        # Swappiness 200: the guest has no swap, so reclaim can only demote anonymous pages; at the default 60 it
        # took the page cache the program runs from first (a 14 MiB reclaim demoted nothing on mlp).
        swappiness=$(cat /proc/sys/vm/swappiness)
        echo 200 >/proc/sys/vm/swappiness
        echo 1 >/sys/kernel/mm/numa/demotion_enabled && echo "$mode" >/proc/sys/kernel/numa_balancing || {
          echo "guest_matrix: cannot turn demotion and numa_balancing=$mode on; $p skipped" >&2; break; }
        echo "   numa_balancing=$mode demotion_enabled=1 swappiness=200 promote_rate_limit_MBps=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps 2>/dev/null || echo -)" >&2
        run_cell "$p" "$w" "$steps" --
        step_args=()
        echo 0 >/proc/sys/kernel/numa_balancing; echo 0 >/sys/kernel/mm/numa/demotion_enabled
        echo "$swappiness" >/proc/sys/vm/swappiness
      done ;;
    static-plan-*)
      # Sentinel's own best static placement (sentinel replay --plan-policy static-best) for the profile
      # the managed cell of the same budget recorded (list managed-N first), executed by managed mode
      # with SENTINEL_PLAN: no migration, so that "the schedule beats a static placement" is measured.
      share="${p##*-}"
      for w in ${workloads//,/ }; do
        prof="$out/$w.managed-$share.profile.json" plan="$out/$w.$p.plan.json"
        if [[ ! -s "$prof" ]]; then echo "guest_matrix: $p: no $prof (run managed-$share first)" >&2; continue; fi
        "$build/bin/sentinel" replay "$prof" --tier "$tier" --budget "$share%" --plan-policy static-best \
          --write-plan "$plan" >"$out/$w.$p.replay.txt" 2>&1 || { echo "   replay failed: $out/$w.$p.replay.txt" >&2; continue; }
        run_cell "$p" "$w" "$managed_steps" "${sentinel[@]}" SENTINEL_MODE=managed SENTINEL_MIN_OBJECT=8K \
          SENTINEL_FAST_BUDGET="$share%" SENTINEL_TIER="$tier" SENTINEL_PLAN="$plan" \
          SENTINEL_STATS="$out/$w.$p.sentinel-stats" SENTINEL_LOG=info SENTINEL_LOG_FILE="$out/$w.$p.log" --
      done ;;
    *) echo "guest_matrix: unknown placement $p" >&2 ;;
  esac
done
