#!/usr/bin/env bash
# numa-guest-kmem.sh: runs inside the two-node guest (scripts/numa-guest.sh, SENTINEL_GUEST_NODE1=kmem)
# before the command. Node 1 has no boot memory; its memory is an emulated NVDIMM (QEMU -device nvdimm,
# node=1). This turns the NVDIMM's label-less (raw) namespace into a devdax namespace with ndctl, hands
# the dax device to the dax kmem driver with daxctl (system-ram mode, onlined into ZONE_MOVABLE), and
# checks what the kernel made of it: node 1 has memory and sits in a lower memory tier than node 0
# (/sys/devices/virtual/memory_tiering), the way Linux 6.1 shows Optane PMem or CXL memory onlined the
# same way. The kernel's modules are loaded by the guest's init (numa-guest.sh).
#
# Output: one line on stderr on success; on failure what went wrong, and exit status 1. ndctl's and
# daxctl's JSON is kept out of the command's stdout.
set -uo pipefail

fail() { echo "numa-guest-kmem: $*" >&2; exit 1; }

command -v ndctl >/dev/null && command -v daxctl >/dev/null || fail "ndctl and daxctl are needed (scripts/install-deps.sh)"
[[ -d /sys/module/kmem ]] || fail "the kmem module is not loaded"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# The NVDIMM has no label area, so the kernel shows its region as one raw namespace.
ns="$(ndctl list -N 2>>"$log" | sed -n 's/.*"dev":"\(namespace[0-9.]*\)".*/\1/p' | head -1)"
[[ -n "$ns" ]] || { cat "$log" >&2; fail "no NVDIMM namespace (is QEMU's -device nvdimm there? ndctl list -N is empty)"; }
# devdax with its memory map in RAM (--map=mem): nothing of the device is reserved for page structs.
ndctl create-namespace --force --reconfig="$ns" --mode=devdax --map=mem >>"$log" 2>&1 || \
  { cat "$log" >&2; fail "ndctl create-namespace --mode=devdax failed on $ns"; }
dax="$(ls /sys/bus/dax/devices 2>/dev/null | head -1)"
[[ -n "$dax" ]] || { cat "$log" >&2; fail "no dax device after ndctl create-namespace"; }
daxctl reconfigure-device --mode=system-ram "$dax" >>"$log" 2>&1 || \
  { cat "$log" >&2; fail "daxctl reconfigure-device --mode=system-ram $dax failed"; }

node="$(cat "/sys/bus/dax/devices/$dax/target_node")"
[[ "$node" == 1 ]] || fail "$dax's target node is $node, not 1"
kb="$(sed -n 's/^Node 1 MemTotal: *\([0-9]*\) kB/\1/p' /sys/devices/system/node/node1/meminfo)"
(( ${kb:-0} > 0 )) || fail "node 1 has no memory after onlining $dax"
tier_of() {  # tier_of NODE: the memory_tierN that lists NODE
  local d
  for d in /sys/devices/virtual/memory_tiering/memory_tier*; do
    [[ -f "$d/nodelist" ]] || continue
    if awk -v n="$1" -F, '{ for (i = 1; i <= NF; i++) { split($i, r, "-"); hi = (r[2] == "") ? r[1] : r[2];
                              if (n >= r[1] && n <= hi) found = 1 } } END { exit !found }' "$d/nodelist"; then
      echo "${d##*memory_tier}"; return
    fi
  done
}
t0="$(tier_of 0)"; t1="$(tier_of 1)"
[[ -n "$t0" && -n "$t1" ]] || fail "node 0 or 1 is in no memory tier (memory_tiering: $(ls /sys/devices/virtual/memory_tiering 2>&1 | tr '\n' ' '))"
(( t1 > t0 )) || fail "node 1 is in memory_tier$t1, not below node 0's memory_tier$t0"
echo "numa-guest: node 1 is $dax onlined by dax kmem, $((kb / 1024)) MiB in memory_tier$t1 (node 0: memory_tier$t0)" >&2
