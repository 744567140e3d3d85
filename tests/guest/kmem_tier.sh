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
env -u MEMKIND_DAX_KMEM_NODES LD_PRELOAD="$memtier" MEMKIND_MEM_TIERS="KIND:KMEM_DAX,RATIO:1" "$probe" malloc-node 16
"$probe" demote 64
