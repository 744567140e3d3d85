// Which NUMA node of the two-node guest a RAM access belongs to, from the value QEMU 7.2's
// qemu_plugin_hwaddr_phys_addr returns. In 7.2 that value is the RAM block's offset plus the memory
// region's offset in its container, not the guest physical address. Two layouts, by how node 1's
// memory is given to the guest (scripts/numa-guest.sh, SENTINEL_GUEST_NODE1):
//   plain  `-numa ...,memdev=m0/m1`: both backends are mapped into the machine's RAM container, m1 at
//          offset N0, and its block follows m0's: node 0 (N0 bytes) appears as [0, N0) and node 1 (N1
//          bytes) as [2*N0, 2*N0 + N1), whatever the guest sees.
//   kmem   node 0's backend m0 and an NVDIMM's backend nv1 (`-device nvdimm,memdev=nv1,node=1`): the
//          NVDIMM maps an alias of nv1 into the device-memory area, so nv1's own region keeps offset
//          0 and the value is its block offset: nv1 (N1 bytes, the whole NVDIMM) appears as
//          [N0, N0 + N1), right after m0's block (blocks are placed in order at 256 KiB granules;
//          N0 is whole MiB). Node 1's memory is the part of the NVDIMM that the dax kmem driver onlined.
// The plugin assumes the layout it is told and verifies it on every mailbox request (the mailbox
// page's cookie must be found at the offset the layout predicts; docs/slow-tier-emulator.md).
//
// Thread safety: immutable after construction.
#pragma once

#include <cstdint>

namespace sentinel::slowtier {

enum class Node : int { kFast = 0, kSlow = 1, kOther = 2 };

class NodeMap {
 public:
  // How node 1's memory reaches the guest: boot RAM of a NUMA node, or an NVDIMM onlined by dax kmem.
  enum class Layout { kPlain, kKmem };

  NodeMap(uint64_t node0_bytes, uint64_t node1_base, uint64_t node1_bytes)
      : node0_bytes_(node0_bytes), node1_base_(node1_base), node1_bytes_(node1_bytes) {}
  // The 7.2 layout for memory backends m0 and m1 created in that order (node 1 plain boot RAM).
  static NodeMap qemu72_layout(uint64_t node0_bytes, uint64_t node1_bytes) {
    return NodeMap(node0_bytes, qemu72_node1_base(Layout::kPlain, node0_bytes), node1_bytes);
  }
  // The 7.2 layout for m0 and then an NVDIMM's backend of nvdimm_bytes (node 1 dax kmem memory).
  static NodeMap qemu72_kmem_layout(uint64_t node0_bytes, uint64_t nvdimm_bytes) {
    return NodeMap(node0_bytes, qemu72_node1_base(Layout::kKmem, node0_bytes), nvdimm_bytes);
  }
  static uint64_t qemu72_node1_base(Layout layout, uint64_t node0_bytes) {
    return layout == Layout::kPlain ? 2 * node0_bytes : node0_bytes;
  }

  Node node_of(uint64_t ram_addr) const {
    if (ram_addr < node0_bytes_) return Node::kFast;
    if (ram_addr - node1_base_ < node1_bytes_ && ram_addr >= node1_base_) return Node::kSlow;
    return Node::kOther;
  }
  // Offset of ram_addr inside its node's memory backend (its backing file).
  // REQUIRES: node_of(ram_addr) != Node::kOther.
  uint64_t backend_offset(uint64_t ram_addr) const {
    return ram_addr < node0_bytes_ ? ram_addr : ram_addr - node1_base_;
  }

  uint64_t node0_bytes() const { return node0_bytes_; }
  uint64_t node1_base() const { return node1_base_; }
  uint64_t node1_bytes() const { return node1_bytes_; }

 private:
  uint64_t node0_bytes_;
  uint64_t node1_base_;
  uint64_t node1_bytes_;
};

}  // namespace sentinel::slowtier
