// The virtual clock of one vCPU: emulated time built from the counts the plugin sees (instructions,
// cache misses and write-backs per node) instead of the host clock, which TCG dilates unevenly
// (software floating point is ~3000x slower than native, loads and stores far less).
//
// Time is charged per epoch (a fixed number of instructions, closed early at every mailbox read):
//   compute   = (instructions * cpi + string elements * element bytes / string_bytes_per_cycle) / freq_ghz
//   latency   = sum over nodes of (misses(node) - streamed(node)) * latency_ns(node) / mlp
//   transfer  = for each node: misses(node) * line / read_bw(node) + writebacks(node) * line / write_bw(node)
//   epoch     = max(compute + latency, max over nodes of transfer)
// i.e. an epoch is latency-bound unless its traffic to one node exceeds what that node's bandwidth
// carries in that time. `misses` are the lines read from a node: load misses and the
// read-for-ownership of store misses. A streamed miss (stream_detector.h) is one a hardware prefetcher
// would have fetched ahead: it costs bandwidth, not latency. The elements of a rep movs/stos are
// guest instructions to TCG (one translation block per element) but one instruction to a core with
// fast strings, which moves tens of bytes per cycle: they are charged by their bytes.
//
// Thread safety: none; each vCPU owns one. Invariant: now_ns() never decreases.
#pragma once

#include <cstdint>

namespace sentinel::slowtier {

struct NodeTiming {
  double latency_ns = 80.0;
  double read_bw_gbps = 80.0;   // bytes per ns
  double write_bw_gbps = 60.0;
};

struct ClockParams {
  double cpi = 1.0;          // cycles per guest instruction, excluding memory stalls
  double string_bytes_per_cycle = 32;  // rep movs/stos throughput; 0: each element is an instruction
  double freq_ghz = 3.0;     // cycles per ns
  double mlp = 8.0;          // misses overlapped per core
  double line_bytes = 64.0;  // bytes per miss or write-back
  NodeTiming node[2];        // [0] fast, [1] slow
};

struct EpochCounts {
  uint64_t instructions = 0;  // every guest instruction, string elements included (the epoch's length)
  double cycles = 0;          // their compute cycles
  uint64_t misses[2] = {0, 0};
  uint64_t streamed[2] = {0, 0};  // of misses, those charged at bandwidth only
  uint64_t writebacks[2] = {0, 0};
};

// Emulated duration of one epoch (the formula above).
double epoch_ns(const EpochCounts& c, const ClockParams& p);

class VirtualClock {
 public:
  explicit VirtualClock(const ClockParams& p) : params_(p) {}

  void add_instructions(uint64_t n) {
    open_.instructions += n;
    open_.cycles += static_cast<double>(n) * params_.cpi;
  }
  // n elements of a rep string instruction, each moving `bytes`.
  void add_string_elements(uint64_t n, uint32_t bytes) {
    open_.instructions += n;
    open_.cycles += params_.string_bytes_per_cycle > 0
                        ? static_cast<double>(n) * bytes / params_.string_bytes_per_cycle
                        : static_cast<double>(n) * params_.cpi;
  }
  void add_miss(int node, bool streamed = false) {
    ++open_.misses[node];
    if (streamed) ++open_.streamed[node];
  }
  void add_writeback(int node) { ++open_.writebacks[node]; }
  uint64_t open_instructions() const { return open_.instructions; }

  // Charges the open epoch and starts a new one.
  void close_epoch();
  // Moves the clock forward to t if it is behind (a vCPU that was idle catches up).
  void advance_to(double t) {
    if (t > now_) now_ = t;
  }
  double now_ns() const { return now_; }

 private:
  ClockParams params_;
  EpochCounts open_;
  double now_ = 0;
};

}  // namespace sentinel::slowtier
