// The slow-tier plugin's parameters, parsed from QEMU's `-plugin file=...,key=value,...` arguments.
// The memory tiers come from the same presets and file format as `sentinel replay`'s tier models
// (src/plan/tier_model.h): tier=optane|cxl|dram|optane-2m|cxl-2m|FILE.
//
// Keys: tier (required), stats (JSON written at exit), node0_mb, node1_mb (required; with kmem the
// whole NVDIMM), layout (plain|kmem, default plain: how node 1's memory reaches the guest, node_map.h),
// node1_base_mb (default: the QEMU 7.2 layout's, 2 * node0_mb plain, node0_mb kmem), node0_file,
// node1_file (the memory backends' files,
// needed to answer mailbox reads), cpi (1.0), freq_ghz (3.0), cache_kb (2048), cache_ways (8),
// epoch_insns (10000), delay_ns (0: host nanoseconds spun per slow-node miss beyond a fast one),
// stream_trackers (16; 0 turns the stream model off), stream_train (2), stream_window (4)
// (stream_detector.h), string_bytes_per_cycle (32; 0 charges each rep movs/stos element as an
// instruction) (virtual_clock.h), sync_quantum_ns (5000; 0: the vCPUs' clocks run free),
// sync_max_wait_ms (20) (vcpu_sync.h).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "node_map.h"
#include "plan/tier_model.h"
#include "stream_detector.h"
#include "vcpu_sync.h"
#include "virtual_clock.h"

namespace sentinel::slowtier {

struct PluginConfig {
  std::string tier_spec;
  MemorySystem tier;
  std::string stats_path;
  uint64_t node0_bytes = 0;
  uint64_t node1_bytes = 0;
  uint64_t node1_base = 0;
  NodeMap::Layout layout = NodeMap::Layout::kPlain;
  std::string node0_file;
  std::string node1_file;
  double cpi = 1.0;
  double freq_ghz = 3.0;
  uint64_t cache_bytes = 2048 * 1024;
  uint32_t cache_ways = 8;
  uint64_t epoch_instructions = 10000;
  double delay_ns = 0;
  StreamParams stream;
  double string_bytes_per_cycle = 32;
  VcpuSyncParams sync;
};

// Parses "key=value" strings. Returns false with a message naming the key on any error.
bool parse_plugin_args(int argc, const char* const* argv, PluginConfig* out, std::string* error);

// The virtual clock's parameters: latencies, bandwidths, mlp and line size of the tier model.
ClockParams clock_params(const PluginConfig& c);

// The parameters as JSON object members (no braces), for the stats file.
std::string parameters_json(const PluginConfig& c);

}  // namespace sentinel::slowtier
