// NUMA topology detection and the choice of the fast (DRAM) and slow (CXL/PMem-like) node.
//
// Sources: sysfs under an injectable root (nodes, meminfo, cpulist, distance, memory tiers from
// devices/virtual/memory_tiering, dax devices bound to the kmem driver from bus/dax, HMAT access0
// figures) and, on the real root, libnuma as a cross-check and for live size/free figures. Tests
// build fake trees and pass their root.
//
// Choice rule (see choose_tiers): fast = a memory node with CPUs in the fastest memory tier (best
// HMAT read latency, then lowest id). Slow: where the kernel's memory tiers put the other memory
// nodes in more than one tier, the tiers decide: the slow node comes from the nearest tier below the
// fast node's (the one Linux demotes the fast node's pages to; in Linux 6.1 only memory onlined by
// the dax kmem driver, Optane PMem or CXL memory, lands there), and the evidence below only picks
// within that tier. Otherwise (no tiers, or every memory node in one tier, as for a plain CPU-less
// node) the node with the most evidence of being slower: no CPUs, worse HMAT latency/bandwidth,
// larger distance. A single memory node yields tiered() == false: no placement, no migration.
// Overrides (SENTINEL_FAST_NODE / SENTINEL_SLOW_NODE values) must name an existing node with memory.
//
// Thread safety: detect_topology and choose_tiers are reentrant (no shared state). A Topology is a
// plain value.
#pragma once

#include "core/config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sentinel::topo {

// ACPI HMAT figures of a memory node as seen from its nearest initiators (access class 0).
// Latencies in ns, bandwidths in MB/s; 0 where the kernel does not report the value.
struct HmatAccess {
  bool present = false;
  uint64_t read_latency_ns = 0;
  uint64_t write_latency_ns = 0;
  uint64_t read_bandwidth_mbps = 0;
  uint64_t write_bandwidth_mbps = 0;
};

struct NodeInfo {
  int id = -1;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  std::vector<int> cpus;
  // distances[i] is the SLIT distance to node_ids[i] of the owning Topology (same order).
  std::vector<int> distances;
  int memory_tier = -1;  // memory_tierN id; lower = faster; -1 if the kernel shows no tiers
  std::string dax_kmem;  // dax devices whose memory the kmem driver onlined on this node ("dax0.0")
  HmatAccess hmat;
  bool has_memory() const { return total_bytes > 0; }
  bool has_cpus() const { return !cpus.empty(); }
};

struct Topology {
  std::vector<NodeInfo> nodes;  // sorted by id
  int fast_node = -1;           // always set after a successful detection
  int slow_node = -1;           // -1 when there is no second memory node
  std::string reason;           // human-readable: why these nodes were taken
  std::string source;           // "sysfs+libnuma" or "sysfs (root ...)"
  bool tiered() const { return slow_node >= 0; }
  const NodeInfo* node(int id) const;
  int distance(int from, int to) const;  // -1 if unknown
};

struct TopologyOptions {
  std::string sysfs_root = "/sys";
  // Override values as given by the user (e.g. getenv("SENTINEL_FAST_NODE")); nullopt = automatic.
  std::optional<std::string> fast_override;
  std::optional<std::string> slow_override;
};

// Reads the node tree only (no choice). Returns false with *error if no node can be read.
bool read_nodes(const std::string& sysfs_root, std::vector<NodeInfo>* nodes, std::string* error);

// Picks fast_node/slow_node and fills reason. Returns false with *error for invalid overrides
// (not a number, no such node, node without memory, fast == slow) or when no node has memory.
bool choose_tiers(const TopologyOptions& options, Topology* topo, std::string* error);

// read_nodes + choose_tiers. On the real root ("/sys") also checks libnuma agrees.
bool detect_topology(const TopologyOptions& options, Topology* topo, std::string* error);

// Options from the configuration: SENTINEL_FAST_NODE, SENTINEL_SLOW_NODE, SENTINEL_SYSFS_ROOT.
TopologyOptions options_from_config(const Config& config);

}  // namespace sentinel::topo
