// The profiler's PMU side (preload/profiler.cc uses it while SENTINEL_SAMPLER chose pebs or ibs): runs
// the PmuSampler, follows the threads the perf_event path must attach, gives the emulated PMU's
// step-clock word to the allocation path, and turns drained samples into per-object, per-phase counts.
//
// The emulated PMU's window: the service thread sees events late (how late depends on the machine),
// so with the emulated source the profiler registers the ring first and then opens a window of steps
// that have not begun yet (open_window); the allocation path turns sampling on at the window's first
// event and off at the first event after it (runtime_state.h), and the profiler profiles exactly
// those steps. perf_event rings have no such switch: they sample from start() to stop().
//
// Attribution: a sample that carries when its access happened (the step clock, from the emulated PMU;
// a CLOCK_MONOTONIC time, from perf) goes to the instance and phase of that moment
// (profile/sample_attribution.h); a sample without one goes to the object armed now and the phase open
// now, as before. Each sample counts `sample_period` lines: a load as a read, a store as a write, a
// write-back as a write-back, an access of unknown kind as a read.
//
// Thread safety: none of its own; the profiler calls it under its mutex on the service thread (and at
// exit). set_step_clock_mirror takes the step clock's spin lock for a moment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>

#include "profile/profile_builder.h"
#include "profile/sample_attribution.h"
#include "sampler/pmu_sampler.h"
#include "service.h"

namespace sentinel::rt {

struct PmuHarvestStats {
  uint64_t attributed = 0;  // samples counted for an object
  uint64_t outside = 0;     // samples at no object's bytes or before the profile
  uint64_t outside_before = 0;      // of those: taken before the profile's first phase
  uint64_t outside_writebacks = 0;  // of those: write-backs (of objects freed before the profile, mostly)
  uint64_t lost = 0;        // samples the ring dropped (PERF_RECORD_LOST)
};

class PmuHarvest {
 public:
  // `options` as chosen at start-up (kind, source, period, ring).
  explicit PmuHarvest(const PmuSamplerOptions& options) : options_(options) {}

  bool start(std::string* error);
  void stop();
  // Emulated, started: sampling will run from the first event of the next step the program begins
  // to the first event of the step `steps` later; returns that first step (-1 if not started).
  int64_t open_window(uint32_t steps);
  bool windowed() const { return options_.source == PmuSource::kEmulated; }
  bool started() const { return started_; }
  const PmuSamplerOptions& options() const { return options_; }

  // Threads created since start (perf rings are per thread); looks at most every 50 ms.
  void attach_new_threads(uint64_t now_ns);

  // The profile begins: the objects alive now (clock 0), in their extents.
  void begin(const LiveObjects& live);
  // An allocation event while profiling: phase `phase` of profiled step `step` begins, and `key` is
  // born at `start` (its extent).
  void on_alloc(uint64_t key, uint64_t start, uint64_t size, uint64_t clock, uint64_t time_ns, uint32_t step,
                uint32_t phase);

  // Object armed at an address now, for samples that carry no clock: its key, or false.
  using ArmedLookup = std::function<bool(uint64_t addr, uint64_t* key)>;
  // Drains the sampler into the builder.
  void harvest(ProfileBuilder& builder, const ArmedLookup& armed, uint32_t open_step, uint32_t open_phase);

  PmuHarvestStats stats() const;
  const char* source_name() const { return pmu_source_name(options_.source); }
  bool counts_writebacks() const { return options_.source == PmuSource::kEmulated; }

 private:
  void set_step_clock_mirror(uint64_t* word);

  PmuSamplerOptions options_;
  PmuSampler sampler_;
  bool started_ = false;
  SampleAttributor attribution_;
  std::unordered_set<pid_t> threads_;
  uint64_t last_thread_scan_ns_ = 0;
  PmuHarvestStats stats_;
};

}  // namespace sentinel::rt
