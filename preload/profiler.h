// Profiling (SENTINEL_MODE=profile, and managed mode before it has a plan): the service-thread side.
//
// The allocation path reserves an object event for every allocation and free; the service thread's
// dispatcher (service.h) hands them to the profiler with the mirror of the live objects. The profiler
// waits until SENTINEL_WARMUP_STEPS steps have passed since the step
// structure was last (re)detected, then profiles SENTINEL_PROFILE_STEPS steps: at every allocation
// event (a phase boundary) it harvests the sampler's counts for the phase that ended and arms the
// sampler for the phase that begins. After the last profiled step it stops sampling (no protected
// pages, no perf descriptors left), follows one more step to see when the last objects die, keeps the
// profile for the manager and writes it to SENTINEL_PROFILE_OUT (profile mode, or when that variable is
// set). If the step structure changes later (the detector switches to a
// larger period or re-detects), profiling starts over and the file is rewritten.
//
// Phases are observed by the service thread a little after they begin (it is woken with a futex), so
// with the software sampler accesses in the first microseconds of a phase may count towards the
// previous one; PMU samples carry when their access happened and are put in its phase
// (pmu_harvest.h).
//
// Thread safety: profiler_on_event() runs on the service thread's dispatcher only; profiler_on_alloc() and
// profiler_on_free() run on any program thread and never block; the others may be called from the service
// thread or at exit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/event_ring.h"
#include "profile/profile.h"
#include "sampler/software_sampler.h"
#include "service.h"

namespace sentinel::rt {

// Chooses and prepares the sampler (logs the choice and the reason). Called once at initialisation.
void profiler_init() noexcept;
// One object event, in step-clock order, with the live objects after an allocation (before a free).
void profiler_on_event(const ObjectEvent& e, LiveObjects& live) noexcept;
// Service thread, between passes: while the software sampler samples a phase, protects again the
// windows touched since the last time (so that passes over an object are counted) and returns the
// nanoseconds until it wants to run again; 0 when it has nothing to do between events.
uint64_t profiler_tick() noexcept;
// Inactive: the profiler ignores events (and stops sampling). Managed mode starts it inactive when it has
// a recorded profile.
void profiler_set_active(bool active) noexcept;
// Steps of fewer allocation events than `period` are not profiled (managed mode: a set-up loop such as
// Python's imports repeats too, but a step of one or two allocations has nothing to plan).
void profiler_set_min_period(uint32_t period) noexcept;
// Starts profiling over (after the warm-up steps), for the manager when a plan no longer fits the program.
void profiler_request_profile() noexcept;
// The last completed profile (nullptr if none) and how many have completed so far.
std::shared_ptr<const StepProfile> profiler_completed(uint64_t* count) noexcept;
// The allocation path, for an object about to be handed to the program (born in `step`): while the
// software sampler profiles, from the profile's first step on, arms a window in it
// (SoftwareSampler::arm_birth) so that its first pass is counted. Called before the object's event is
// published (the service thread would otherwise arm a second window for the slot). Lock-free,
// allocation-free.
void profiler_on_alloc(uint32_t slot, uintptr_t start, uint64_t size, int64_t step) noexcept;
// Called by free() before the extent of `slot` can be reused: no sampled window may stay protected.
void profiler_on_free(uint32_t slot) noexcept;
// Around a system call that copies [addr, addr + len) to or from user memory (read, recv, write, ...: the
// kernel returns EFAULT or a short count instead of faulting on a protected page): profiler_begin_io
// restores every sampled window there, counted as a touch, and keeps the sampler from arming one there
// until profiler_end_io(token). Any program thread, also in a signal handler; allocates nothing, takes no
// lock; 0 (nothing to end) while the software sampler is not running.
uintptr_t profiler_begin_io(const void* addr, size_t len) noexcept;
void profiler_end_io(uintptr_t token) noexcept;
// In a forked child: the service thread (and any lock it held) is gone; sampling must not be touched.
void profiler_fork_child() noexcept;
// At exit, after the last dispatcher pass: completes a profile of the steps profiled so far, if any.
void profiler_at_exit() noexcept;

struct ProfilerReport {
  std::string sampler;         // "software", "pebs", "ibs", "none"
  std::string sampler_reason;  // why that sampler
  std::string sampler_source;  // PMU samplers: "perf_event" or "qemu-slowtier"; "" otherwise
  uint64_t samples = 0;        // faults claimed (software) or PMU samples attributed to objects
  uint64_t samples_lost = 0;   // PMU samples the ring dropped (PERF_RECORD_LOST)
  uint64_t samples_outside_objects = 0;  // PMU samples at no object's bytes, or before the profile
  uint32_t profiled_steps = 0;
  int64_t last_profile_first_step = -1;  // detector step index of the last profile's first profiled step
  uint64_t profiles_written = 0;
  uint64_t profile_restarts = 0;
  uint64_t profiled_steps_begun_over = 0;
  uint64_t profiled_steps_left_out = 0;
  uint64_t events_dropped = 0;
  bool software_sampler = false;  // whether the fields below were read (a software sampler exists)
  SoftwareSamplerStats software;  // its fault handling since its last start
  std::string profile_path;
  std::string state;
};
ProfilerReport profiler_report() noexcept;

}  // namespace sentinel::rt
