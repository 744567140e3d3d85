// The in-memory access profile of one training step: what the profiler builds, what the profile file
// stores, and what the planner and offline replay consume.
//
// The step clock: a training step is a repeating sequence of `period` large-object allocation events,
// numbered 0..period-1. Phase i is the stretch of time from allocation event i to allocation event i+1
// (phase period-1 ends at event 0 of the next step). Every time-based quantity below is expressed on
// this clock, so a profile recorded in one run describes every step of every later run of the same
// program.
//
// Thread safety: plain values; no internal synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sentinel {

// Sampled accesses of one object in one phase, scaled by the sampling period to estimated accesses.
// A PMU counts cache-line misses; the software sampler estimates the lines of the object touched.
struct PhaseAccess {
  uint32_t phase = 0;
  uint64_t reads = 0;   // estimated loads (or all accesses where the sampler cannot tell)
  uint64_t writes = 0;  // estimated stores; 0 where the sampler cannot tell reads from writes
  // Dirty lines of the object written back to memory in this phase; only samplers that see them
  // count them (StepProfile::writebacks_counted: the emulated PMU), otherwise 0. Not an access:
  // total() leaves them out, and the planner does not read them.
  uint64_t writebacks = 0;
  uint64_t total() const { return reads + writes; }
};

// One data object, identified across steps by its tag.
struct ObjectProfile {
  uint64_t tag = 0;         // hash of call-site and occurrence within the step; stable across steps
  uint64_t site = 0;        // hash of the allocation call stack alone
  uint32_t occurrence = 0;  // how many earlier allocations of this site the step made before this one
  uint64_t size = 0;        // bytes requested by the program
  // Lifetime on the step clock, in phases, inclusive: alive from birth_phase to death_phase.
  // birth_phase < period. death_phase >= birth_phase; a death_phase >= period means the object is
  // still alive when the next step starts and dies in phase death_phase - period of that step.
  uint32_t birth_phase = 0;
  uint32_t death_phase = 0;
  // Allocated outside the step (before it, e.g. weights and optimizer state) and alive through all of
  // it: birth_phase = 0, death_phase = period - 1.
  bool persistent = false;
  std::vector<PhaseAccess> accesses;  // sorted by phase, at most one entry per phase

  uint64_t total_accesses() const {
    uint64_t n = 0;
    for (const auto& a : accesses) n += a.total();
    return n;
  }
  // Phases in which the object is alive, counting a wrap into the next step.
  uint32_t lifetime_phases() const { return death_phase - birth_phase + 1; }
};

struct PhaseProfile {
  uint64_t duration_ns = 0;  // mean over the profiled steps
};

struct StepProfile {
  uint32_t period = 0;                // allocation events per step; phases.size() == period
  uint64_t step_time_ns = 0;          // mean wall time of one profiled step
  uint64_t peak_object_bytes = 0;     // peak bytes of live objects during the step
  uint32_t profiled_steps = 0;        // how many steps the counts are averaged over
  std::string sampler;                // "pebs", "ibs", "software", "none"
  std::string sampler_source;         // PMU samplers: "perf_event" or "qemu-slowtier" (emulated); "" otherwise
  uint64_t sample_period = 0;         // events per sample (PMU) or pages per sample (software)
  uint64_t samples_lost = 0;          // samples the PMU ring dropped while profiling (PERF_RECORD_LOST)
  bool writebacks_counted = false;    // the counts include write-backs (PhaseAccess::writebacks)
  std::string program;                // command line of the profiled program, informational
  std::vector<PhaseProfile> phases;
  std::vector<ObjectProfile> objects;
};

}  // namespace sentinel
