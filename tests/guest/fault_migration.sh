#!/bin/sh
# The kernel failing on purpose, in the two-node guest (docs/fault-injection.md): the engine's and the
# placer's randomized fault tests with real moves between the nodes, then the preload migration workload
# under libsentinel-faults.so with move_pages, mbind, madvise and mincore failing at random. The workload
# checks every object's content and final node itself; the injector's exit line and the stats show that
# failures happened and were counted, and that the books balance.
#   fault_migration.sh <os_test> <libsentinel-faults.so> <preload_migration> <place_stats_check>
set -u
os_test=$1 lib=$2 prog=$3 check=$4
"$os_test" --gtest_filter='FaultSoak.Migration*:FaultSoak.Budget*' || exit 1
err=/tmp/fault-run.err stats=/tmp/fault-stats.json
LD_PRELOAD=$lib SENTINEL_FAULT_INJECT=7:0.05:move_pages,mbind,madvise,mincore SENTINEL_STATS=$stats "$prog" 2>$err
rc=$?
cat $err
[ "$rc" = 0 ] || { echo "fault_migration: the workload failed under injected faults ($rc)" >&2; exit 1; }
grep -q 'fault injection: failed [1-9]' $err || { echo "fault_migration: no fault was injected" >&2; exit 1; }
"$check" $stats 'migrations_done>0' 'migrations_failed>0' 'live_bytes_at_exit==0' 'invalid_frees==0'
