// The plugin as a PMU: the registrations of guest processes' sample rings and the requests that
// drive them (protocol: src/sampler/emulated_pmu_abi.h; docs/slow-tier-emulator.md "The plugin as a
// PMU"). The plugin calls on_marked_store() for every store that follows the marker instruction and
// on_event() for every cache-model miss and write-back while active(); the registry filters events
// to the registered address ranges, takes every sample_period-th one, stamps it with the process's
// step clock and queues it in the registration's PmuRingWriter, which publishes into the process's
// ring when the process asks.
//
// What it cannot do: QEMU 7.2's plugin API shows neither the guest's page tables nor which process
// runs, so a registration is identified by its ranges only. Every access to a registered range
// counts, whichever process makes it (a forked child that inherited the layout, the kernel copying
// to or from user memory there); accesses outside the ranges and kernel addresses never count.
// A registration lives until the process unregisters or a new registration needs its slot (the
// least recently used of kMaxRegistrations goes): a process that died without unregistering costs
// a slot until then, nothing more.
//
// Thread safety: on_event() and on_marked_store() may run concurrently on every vCPU thread. Each
// registration has its own mutex; active() and the quick range check are lock-free atomics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "pmu_ring_writer.h"
#include "sampler/emulated_pmu_abi.h"

namespace sentinel::slowtier {

struct PmuTotals {
  uint64_t registrations = 0;  // accepted kRegister requests
  uint64_t requests = 0;       // every request answered
  uint64_t samples = 0;        // records queued
  uint64_t dropped = 0;        // samples lost to a full queue
  uint64_t published_bytes = 0;
  uint64_t missing_pages = 0;  // publishes refused because a page was not marked
};

class PmuRegistry {
 public:
  static constexpr int kMaxRegistrations = 8;

  // latency_ns[n]: node n's latency, the WEIGHT of its samples.
  PmuRegistry(double latency_ns0, double latency_ns1);
  ~PmuRegistry();

  // A store that followed the marker, at guest virtual address `vaddr`; `page` is that 4 KiB page in
  // the plugin's mapping of guest RAM (the store has happened). Returns true when it was a request
  // of this protocol or a page mark, false when it is someone else's (the counter mailbox).
  bool on_marked_store(uint64_t vaddr, unsigned char* page);

  bool active() const { return live_.load(std::memory_order_relaxed) != 0; }

  // A miss or write-back on vCPU `vcpu` at virtual address `vaddr`, of node `node` (0 or 1), at the
  // vCPU's virtual time `now_ns`.
  void on_event(unsigned vcpu, uint64_t vaddr, emulated_pmu::EventKind kind, int node, uint64_t now_ns);

  PmuTotals totals() const;

 private:
  struct Registration;
  void answer(unsigned char* page, uint64_t meta_vaddr);
  Registration* find(uint64_t token);  // REQUIRES: nothing locked; returns it locked, or nullptr

  double latency_ns_[2];
  std::array<std::unique_ptr<Registration>, kMaxRegistrations> slots_;
  std::mutex register_mu_;  // choosing a slot for a new registration
  std::atomic<int> live_{0};
  std::atomic<uint64_t> clock_{0};  // request counter: least recently used slot
  std::atomic<uint64_t> registrations_{0}, requests_{0}, samples_{0}, dropped_{0}, published_bytes_{0},
      missing_pages_{0};
};

}  // namespace sentinel::slowtier
