// SENTINEL_MODE=profile: the service-thread side of profiling.
//
// The allocation path pushes every object event into g_state.events. The service thread follows them:
// it keeps the set of live objects, waits until SENTINEL_WARMUP_STEPS steps have passed since the step
// structure was last (re)detected, then profiles SENTINEL_PROFILE_STEPS steps: at every allocation
// event (a phase boundary) it harvests the sampler's counts for the phase that ended and arms the
// sampler for the phase that begins. After the last profiled step it stops sampling (no protected
// pages, no perf descriptors left), follows one more step to see when the last objects die, and writes
// the profile to SENTINEL_PROFILE_OUT. If the step structure changes later (the detector switches to a
// larger period or re-detects), profiling starts over and the file is rewritten.
//
// Phases are observed by the service thread a little after they begin (it is woken with a futex), so
// accesses in the first microseconds of a phase may count towards the previous one.
//
// Thread safety: profiler_tick() runs on the service thread only; profiler_on_free() runs on any
// program thread; profiler_report() at exit.
#pragma once

#include <cstdint>
#include <string>

namespace sentinel::rt {

// Chooses and prepares the sampler (logs the choice and the reason). Called once at initialisation.
void profiler_init() noexcept;
// Consumes queued object events and drives profiling. Service thread only.
void profiler_tick() noexcept;
// Called by free() before the extent of `slot` can be reused: no sampled window may stay protected.
void profiler_on_free(uint32_t slot) noexcept;
// True while the software sampler holds the kernel's SIGSEGV disposition (the program's own handler
// then lives in the sampler's chain).
bool profiler_owns_sigsegv() noexcept;
// In a forked child: the service thread (and any lock it held) is gone; sampling must not be touched.
void profiler_fork_child() noexcept;
// At exit: writes a profile of the steps profiled so far if none was written yet.
void profiler_at_exit() noexcept;

struct ProfilerReport {
  std::string sampler;         // "software", "pebs", "ibs", "none"
  std::string sampler_reason;  // why that sampler
  uint64_t samples = 0;        // faults claimed (software) or PMU samples attributed to objects
  uint32_t profiled_steps = 0;
  uint64_t profiles_written = 0;
  uint64_t profile_restarts = 0;
  uint64_t events_dropped = 0;
  std::string profile_path;
  std::string state;
};
ProfilerReport profiler_report() noexcept;

}  // namespace sentinel::rt
