#!/usr/bin/env bash
# guest_matrix.sh OUT_DIR WORKLOADS PLACEMENTS STEPS: runs inside the guest (bench/results/run.sh).
# One process per cell, each writing OUT_DIR/<workload>.<placement>.json. A cell that fails leaves
# OUT_DIR/<workload>.<placement>.err and the matrix goes on.
set -uo pipefail
out="$1"; workloads="$2"; placements="$3"; steps="$4"
here="$(cd "$(dirname "$0")" && pwd)"
build="${SENTINEL_BUILD_DIR:-$here/../../build}"
memtier=/usr/lib/x86_64-linux-gnu/libmemtier.so
# Automatic NUMA balancing would move pages behind every policy's back: off for all cells.
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null || true
export OMP_NUM_THREADS=1

for w in ${workloads//,/ }; do
  for p in ${placements//,/ }; do
    pre=(); envs=()
    case "$p" in
      all-fast) pre=(numactl --membind=0) ;;
      all-slow) pre=(numactl --membind=1) ;;
      interleave) pre=(numactl --interleave=0,1) ;;
      first-touch-*) envs=(LD_PRELOAD="$build/lib/libsentinel.so" SENTINEL_MODE=track
                            SENTINEL_FAST_BUDGET="${p#first-touch-}%") ;;
      memtier-20) envs=(LD_PRELOAD="$memtier" MEMKIND_DAX_KMEM_NODES=1
                        "MEMKIND_MEM_TIERS=KIND:DRAM,RATIO:1;KIND:KMEM_DAX,RATIO:4") ;;
      memtier-50) envs=(LD_PRELOAD="$memtier" MEMKIND_DAX_KMEM_NODES=1
                        "MEMKIND_MEM_TIERS=KIND:DRAM,RATIO:1;KIND:KMEM_DAX,RATIO:1") ;;
      # The hook for Sentinel's managed mode (lead's branch): same budget rule as first-touch.
      managed-*) envs=(LD_PRELOAD="$build/lib/libsentinel.so" SENTINEL_MODE=managed
                       SENTINEL_FAST_BUDGET="${p#managed-}%") ;;
      *) echo "guest_matrix: unknown placement $p" >&2; continue ;;
    esac
    echo "== $w / $p" >&2
    start=$(date +%s)
    if ! env "${envs[@]}" "${pre[@]}" /usr/bin/python3 "$here/guest_step.py" --workload "$w" \
        --placement "$p" --steps "$steps" --out "$out/$w.$p.json" 2>"$out/$w.$p.err"; then
      [[ -s "$out/$w.$p.json" ]] || { echo "   failed (see $w.$p.err)" >&2; continue; }
    fi
    echo "   $(( $(date +%s) - start )) s" >&2
    rm -f "$out/$w.$p.err"
  done
done
