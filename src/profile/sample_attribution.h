// Puts a PMU sample in the object instance and the phase of the access it records, by when the
// access happened, not by when the profiler reads the sample (the service thread drains samples a
// while after they are taken, often in a later phase, and an extent may hold another object by then).
//
// "When" is a clock the sample carries: the runtime's step clock (one tick per object allocation
// event; the emulated PMU copies it into every sample) or CLOCK_MONOTONIC time (perf samples, opened
// with use_clockid, against the events' time_ns). The profiler tells it where each phase began
// (on_phase) and where each object instance lives from when (on_object), both in clock order, and
// asks by_clock / by_time for every sample.
//
// An address belongs to the latest instance born at it before the access (extents are never split
// or merged, so instances at one address share its start); an access after that instance's free and
// before the next birth there still goes to it (only write-backs of its dirty lines happen then).
//
// Thread safety: none; the profiler's service thread owns it. Allocates (maps and vectors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace sentinel {

class SampleAttributor {
 public:
  struct Hit {
    uint64_t key = 0;    // the instance (the runtime's slot << 32 | generation)
    uint32_t step = 0;   // profiled step, relative
    uint32_t phase = 0;
    uint64_t size = 0;   // the instance's bytes
  };

  void clear();
  // Phase `phase` of profiled step `step` began at step clock `clock` and time `time_ns`.
  void on_phase(uint64_t clock, uint64_t time_ns, uint32_t step, uint32_t phase);
  // Instance `key` occupies [start, start + size) from `clock` / `time_ns` on (0 for objects alive
  // before the profile began).
  void on_object(uint64_t key, uint64_t start, uint64_t size, uint64_t clock, uint64_t time_ns);

  // False when the access is before the first phase or at no instance's bytes.
  bool by_clock(uint64_t addr, uint64_t clock, Hit* out) const;
  bool by_time(uint64_t addr, uint64_t time_ns, Hit* out) const;

  size_t phases() const { return phases_.size(); }
  // The clock at which the first phase began (0 without phases).
  uint64_t first_clock() const { return phases_.empty() ? 0 : phases_.front().clock; }

 private:
  struct PhaseStart {
    uint64_t clock, time_ns;
    uint32_t step, phase;
  };
  struct Instance {
    uint64_t clock, time_ns, key, size;
  };
  bool find(uint64_t addr, bool by_time, uint64_t when, Hit* out) const;

  std::vector<PhaseStart> phases_;                      // in clock order; times kept non-decreasing
  std::map<uint64_t, std::vector<Instance>> at_start_;  // by start address, each in birth order
};

}  // namespace sentinel
