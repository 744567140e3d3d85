// The slow-tier QEMU plugin as a PMU, the process's side: a perf-format sample ring that the plugin
// fills with the cache-model misses and write-backs of the process's address ranges, decoded by the
// same RingReader that decodes the kernel's rings. Protocol and record layout:
// sampler/emulated_pmu_abi.h; what it measures and its limits: docs/slow-tier-emulator.md ("The
// plugin as a PMU").
//
// The ring (one per process, not per thread: the plugin sees vCPUs, not threads) is anonymous
// memory, not inherited by fork (MADV_DONTFORK, so a child never writes into the parent's ring) and
// without transparent huge pages; its first page is locked where RLIMIT_MEMLOCK allows, its data
// pages are faulted in as publishing first reaches them. Every request is a
// marked store (EmulatedPmuOs), answered synchronously inside that store when the plugin is loaded;
// without it nothing answers and probe()/start() fail with ENODEV, at the cost of one NOP.
//
// drain() asks the plugin to publish what it has queued (prepare, mark the pages it will write,
// publish), then decodes the ring. The step clock (step_clock()) is a word in the ring's first page
// that the owner advances; the plugin copies its value into every sample's STREAM_ID.
//
// The marked store is injectable (EmulatedPmuOs) so that tests drive the real plugin-side registry
// (tools/qemu-slowtier/pmu_registry.h) in process, without QEMU.
//
// Thread safety: member functions are serialised by an internal mutex. step_clock() returns a word
// that any thread may store to (relaxed) while the ring is started. Not async-signal-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "sampler/emulated_pmu_abi.h"
#include "sampler/perf_ring.h"

namespace sentinel {

struct EmulatedPmuOs {
  // Executes the marker instruction immediately followed by one 8-byte store of `value` to `slot`.
  std::function<void(volatile uint64_t* slot, uint64_t value)> marked_store;
};
EmulatedPmuOs real_emulated_pmu_os();
// The code of the real marked store, whose first bytes must be the plugin's marker instruction
// (src/os/slowtier_mailbox.h kMarkerInsn; a test compares them).
const void* real_marked_store_code();

struct EmulatedPmuOptions {
  uint64_t sample_period = 1;  // every Nth miss or write-back in the ranges
  uint64_t sample_type = emulated_pmu::kProfilerSampleType;
  uint64_t ring_bytes = uint64_t{64} << 20;  // data area: a power of two, 4 KiB .. 256 MiB
  std::vector<emulated_pmu::AddressRange> ranges;  // 1 .. kMaxRanges user ranges to sample
};

// What the plugin counted for this ring, as of its last answer.
struct EmulatedPmuCounts {
  uint64_t events_in_ranges = 0;
  uint64_t samples_queued = 0;
  uint64_t samples_dropped = 0;
  uint64_t stale_clock = 0;
  uint64_t publish_retries = 0;  // publishes refused for a page not marked, then tried again
};

class EmulatedPmu {
 public:
  explicit EmulatedPmu(EmulatedPmuOs os = real_emulated_pmu_os());
  ~EmulatedPmu();  // stop()
  EmulatedPmu(const EmulatedPmu&) = delete;
  EmulatedPmu& operator=(const EmulatedPmu&) = delete;

  // Whether a plugin answers a probe request (on a page of its own; nothing stays registered).
  Status probe();
  // Maps the ring and registers it. On failure nothing stays mapped or registered.
  Status start(const EmulatedPmuOptions& opt);
  // Publishes what the plugin has queued and calls fn for every sample in the ring. Returns the
  // samples decoded; 0 when not started or the plugin stopped answering.
  size_t drain(const RingReader::SampleFn& fn);
  // Unregisters (if the plugin answers) and unmaps.
  void stop();

  bool started() const;
  uint64_t sample_type() const;
  // The word the plugin copies into STREAM_ID; nullptr when not started. Valid until stop().
  uint64_t* step_clock();
  RingStats stats() const;  // of this ring and those stopped before
  EmulatedPmuCounts counts() const;

 private:
  bool request(uint32_t op);  // REQUIRES: mu_ held, ring mapped
  bool publish_pending();     // REQUIRES: mu_ held, started

  EmulatedPmuOs os_;
  mutable std::mutex mu_;
  unsigned char* map_ = nullptr;
  size_t map_len_ = 0;
  uint64_t ring_bytes_ = 0;
  uint64_t token_ = 0;
  uint64_t sample_type_ = 0;
  RingReader reader_;
  RingStats closed_stats_;
  EmulatedPmuCounts counts_;
};

}  // namespace sentinel
