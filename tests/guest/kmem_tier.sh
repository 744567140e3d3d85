#!/bin/sh
# guest.kmem_tier: runs inside scripts/numa-guest.sh with SENTINEL_GUEST_NODE1=kmem (one boot).
#   kmem_tier.sh SENTINEL_CLI KMEM_PROBE
# 1. the kernel put node 1 (the NVDIMM onlined by dax kmem) in a lower memory tier, and `sentinel
#    topology` takes it as the slow node from those tiers; 2. memkind's libmemtier finds the kmem node
#    itself (no MEMKIND_DAX_KMEM_NODES); 3. under pressure on node 0 the kernel demotes a program's
#    cold pages to node 1.
set -eu
cli=$1 probe=$2
tiers=/sys/devices/virtual/memory_tiering
echo "memory tiers: $(for d in "$tiers"/memory_tier*; do printf '%s=%s ' "${d##*/}" "$(cat "$d/nodelist")"; done)"
[ "$(ls -d "$tiers"/memory_tier* | wc -l)" -ge 2 ] || { echo "kmem_tier: fewer than two memory tiers" >&2; exit 1; }
"$cli" topology --json >/tmp/kmem-topology.json
"$probe" topology /tmp/kmem-topology.json
memtier=/usr/lib/x86_64-linux-gnu/libmemtier.so
# Only a KMEM_DAX tier: every allocation must land on the node memkind takes as dax kmem memory.
env -u MEMKIND_DAX_KMEM_NODES LD_PRELOAD="$memtier" MEMKIND_MEM_TIERS="KIND:KMEM_DAX,RATIO:1;POLICY:STATIC_RATIO" \
  "$probe" malloc-node 16 >/tmp/kmem-memtier.out 2>/tmp/kmem-memtier.err || memtier_rc=$?
cat /tmp/kmem-memtier.out; cat /tmp/kmem-memtier.err >&2
[ "${memtier_rc:-0}" = 0 ] || { echo "kmem_tier: the probe under libmemtier exited with $memtier_rc" >&2; exit 1; }
"$probe" demote 64
