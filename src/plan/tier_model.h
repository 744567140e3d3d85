// Tier models: the latency and bandwidth of the fast and the slow memory tier and the bandwidth of
// migration between them. The cost model (cost_model.h) and the planner read only these numbers.
// Parameters, presets and their sources are documented in docs/tier-model.md.
//
// Units: latencies in ns; bandwidths in GB/s, which is numerically bytes per ns.
// Invariants of a valid MemorySystem (validate_memory_system): every bandwidth > 0, latencies >= 0,
// mlp >= 1, access_bytes >= 1, and the slow tier is no faster than the fast tier in any parameter
// (otherwise "slow" is not slow and the cost model's extra-time terms would be negative).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sentinel {

struct TierModel {
  std::string name;
  double latency_ns = 80.0;      // idle load-to-use latency of one cache-line miss
  double read_bw_gbps = 80.0;    // sustained read bandwidth
  double write_bw_gbps = 60.0;   // sustained write bandwidth
};

struct MemorySystem {
  std::string name;              // e.g. "cxl"; informational
  TierModel fast;
  TierModel slow;
  double migration_bw_gbps = 3.3;  // one migration channel (move_pages), bytes per ns
  // Fixed time of one object's move before its bytes flow: the move_pages call's setup (an expedited
  // RCU grace period and an LRU drain on every CPU in Linux 6.1, the TLB shootdown) and the policy
  // update after it. On small objects it, not the bandwidth, sets the channel's rate.
  double migration_setup_ns = 0.0;
  double mlp = 8.0;                // memory-level parallelism: misses overlapped per core
  double access_bytes = 64.0;      // bytes moved per sampled access (a cache line)
  // Share of the misses that a core's stream prefetcher fetches ahead of use: they cost bandwidth, not
  // latency (docs/tier-model.md; the slow-tier emulator's stream model, docs/slow-tier-emulator.md).
  double stream_share = 0.8;
  // What recycling a fast page costs the program, per byte: a parked page dropped to make room and the
  // fresh page a later fast birth faults in and the kernel zeroes instead (docs/tier-model.md, "Recycling
  // fast pages"). The cost model charges it where the fast pool's pages run out (SimOptions::pool_bytes).
  // The presets carry the figure measured on this project's 2-core VM (4 KiB pages); managed mode
  // measures its own machine's at start (preload/fault_cost.h).
  double fault_ns_per_byte = 0.7;

  // Modeled extra time of one access served by the slow tier instead of the fast one, used by the
  // planner to value objects (the cost model applies the per-phase formula instead).
  double read_penalty_ns() const;
  // The latency part of one slow read's extra time, streamed misses excluded: (1 - stream_share) *
  // (slow - fast latency) / mlp. The one place every model (cost, lower bound, discrete, optimal)
  // takes it from.
  double latency_delta_ns() const;
  double write_penalty_ns() const;
  // Time of one migration of `bytes` on the migration channel.
  double migration_ns(double bytes) const { return migration_setup_ns + bytes / migration_bw_gbps; }
};

bool validate_memory_system(const MemorySystem& m, std::string* error);

// Names accepted by memory_system_preset: "dram", "optane", "optane-2m", "cxl", "cxl-2m", "cxl-x8",
// "cxl-x8-2m" (the -2m variants migrate 2 MiB pages: 11 GB/s instead of 3.3 GB/s).
std::vector<std::string> memory_system_preset_names();
// Fast tier DRAM; slow tier by name ("dram" makes both tiers DRAM). Returns false for unknown names.
bool memory_system_preset(std::string_view name, MemorySystem* out, std::string* error);

// Applies "key = value" settings (or a flat JSON object with the same keys) to *m. Keys:
// base (a preset name, applied first), name, migration_bw_gbps, migration_setup_ns, mlp, access_bytes, stream_share,
// fault_ns_per_byte,
// fast.latency_ns, fast.read_bw_gbps, fast.write_bw_gbps, slow.latency_ns, slow.read_bw_gbps,
// slow.write_bw_gbps. '#' starts a comment. Unknown keys, bad numbers and invalid results are
// errors that name the line. *m is unchanged on failure.
bool parse_memory_system(std::string_view text, MemorySystem* m, std::string* error);
// Reads a file in that format, starting from the "cxl" preset unless it says `base = ...`.
bool load_memory_system_file(const std::string& path, MemorySystem* out, std::string* error);
// A preset name or a file path.
bool resolve_memory_system(const std::string& name_or_path, MemorySystem* out, std::string* error);

// One-line description, e.g. "cxl: fast 80 ns ..., slow 170 ns ..., migration 3.3 GB/s".
std::string describe_memory_system(const MemorySystem& m);

}  // namespace sentinel
