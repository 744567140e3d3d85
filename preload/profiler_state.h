// Internal to the profiler (profiler.h), one file per job:
//   profiler.cc          the entry points, the state machine that chooses the steps to profile (warm-up,
//                        settled steps, the deviation check against the first profiled step) and the
//                        finished profile
//   profiler_sampling.cc the sampler's half: starting and stopping it, arming it for a phase, harvesting
//                        its counts into the builder, the software sampler's rearm tick, and the calls
//                        program threads make into it (profiler_on_free, profiler_begin_io/end_io), the
//                        forked child's reset
//
// Thread safety: one Profiler, *g_profiler, created by profiler_init() and never destroyed (frees may race
// with exit). Its fields are guarded by its mutex `mu` (the service thread's events and tick against the
// exit handler); the functions declared here expect the caller to hold it. g_sampling_active is read
// without the lock by program threads (profiler_on_free, profiler_begin_io/end_io) and written under it (and
// without it by profiler_fork_child, in a child where no other thread runs).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "manage/compiled_plan.h"
#include "pmu_harvest.h"
#include "profile/sample_attribution.h"
#include "profile/profile_builder.h"
#include "sampler/pmu_sampler.h"
#include "sampler/software_sampler.h"
#include "service.h"

namespace sentinel::rt {

constexpr uint32_t kMaxSampledSlots = 1u << 16;
constexpr uint64_t kCacheLine = 64;

enum class ProfState { kWaiting, kProfiling, kTail, kDone };

struct Armed {
  uint32_t slot;
  uint64_t key;
  uint64_t size;
  uintptr_t start;
  uint64_t release_ticket;  // the software sampler's, read before the liveness check (see its header)
};

struct Profiler {
  std::mutex mu;  // the service thread's tick against the exit handler
  ProfState state = ProfState::kWaiting;
  SamplerKind kind = SamplerKind::kNone;
  std::string reason;
  SoftwareSampler* software = nullptr;  // created once, never destroyed (frees may race with exit)
  PmuHarvest* pmu = nullptr;            // pebs or ibs: created once, never destroyed

  bool active = true;  // false: follow nothing, profile nothing (managed mode with a profile in hand)
  bool restart_requested = false;
  uint32_t min_period = 1;  // steps with fewer allocations are not profiled
  std::unique_ptr<ProfileBuilder> builder;
  std::shared_ptr<const StepProfile> latest;  // the last profile completed
  uint64_t completed = 0;
  uint64_t relocks_seen = ~uint64_t{0};
  int64_t structure_first_step = -1;
  int64_t first_step = -1;
  uint32_t period = 0;

  bool phase_open = false;
  uint32_t phase_step = 0;  // step (relative) and phase the armed windows count for
  uint32_t phase = 0;
  uint64_t last_arm_ns = 0;
  uint64_t arm_cost_ns = 0;
  uint64_t last_rearm_ns = 0;  // software sampler: the last rearm() of the open phase (passes)
  uint64_t rearm_cost_ns = 0;
  uint64_t last_rearmed_windows = 0;  // windows the last rearm() protected again (each a fault to come)
  // How long each phase lasted in the last step seen (the step repeats, so this is the forecast).
  std::vector<uint64_t> phase_forecast_ns;
  int64_t prev_step = -1;
  uint32_t prev_event = 0;
  uint64_t prev_time_ns = 0;
  // Whether the steps have settled (settled_step): live object bytes at the start of the step in progress
  // and of the one before, and the highest live bytes of the one before.
  uint64_t step_start_bytes = 0, prev_start_bytes = 0, step_peak_bytes = 0, prev_peak_bytes = 0;
  bool have_prev_step_bytes = false;
  // The step (and structure: relocks) each live object was born in, and whether the step in progress / the
  // one before freed an object born two or more steps before (settled_step). Objects alive when following
  // resumed (profiler_set_active) count as old.
  struct Birth {
    uint64_t relocks = 0;
    int64_t step = -1;
  };
  std::unordered_map<uint64_t, Birth> born_in;
  bool births_need_seeding = false;
  bool step_freed_older = false, prev_step_freed_older = false;
  std::vector<Armed> armed;  // sorted by start (PMU samples without a clock are looked up in it)
  int64_t window_first_step = -1;  // the first profiled step chosen ahead (the emulated PMU's window, pmu_harvest.h; the software sampler), -1: none
  // The software sampler's touches carry the step clock of their moment (software_sampler.h WindowTouch):
  // where each object instance lived from when and where each phase began, for putting them in the phase
  // they happened in, however late the service thread reads them; touches newer than the newest event
  // followed wait in `pending_touches`.
  SampleAttributor touch_attribution;
  std::vector<WindowTouch> pending_touches;
  uint64_t last_event_clock = 0;
  uint64_t touches_outside = 0;  // touches at no profiled instance or phase (before the profile, after it)

  uint64_t samples = 0;
  uint64_t profiles_written = 0;
  uint64_t restarts = 0;
  uint64_t steps_begun_over = 0;  // profiled steps the detector began over (on_alloc)
  uint32_t profiled_steps = 0;
  int64_t last_profile_first_step = -1;
  // The tags of the first profiled step, by event and by tag: every later profiled step must allocate the
  // same, in the same order or in another one as the plan allows (threads that allocate concurrently:
  // manage::match_tag, manage::BirthOrder), or it is not the same step (an odd last batch, an evaluation
  // pass). Restarts for it are bounded (kMaxDeviationRestarts).
  std::vector<uint64_t> profiled_tags;
  std::unordered_map<uint64_t, uint32_t> profiled_tag_events;
  manage::BirthOrder profiled_order;  // the births of the profiled step being compared
  int64_t profiled_order_step = -1;
  uint32_t deviation_restarts = 0;
  // A profiled step that deviated is left out (on_alloc): the rest of detector step `left_out_step` is not
  // profiled, and the next step is profiled in its place. Profiled step = step - first_step - steps_left_out.
  int64_t left_out_step = -1;
  uint32_t steps_left_out = 0;
  // Events of the first profiled step (the highest event + 1), checked against the period when the next
  // step begins (on_alloc).
  uint32_t first_step_events = 0;
  bool first_step_checked = false;
  uint64_t left_out_total = 0;  // over the run (stats)
};

// Profiled steps and phases of no step: where the sampler's counts of a step left out go (ProfileBuilder
// drops them).
constexpr uint32_t kNoProfiledStep = ~uint32_t{0};

extern Profiler* g_profiler;
extern std::atomic<bool> g_sampling_active;

// profiler_sampling.cc.
// Adds the counts of the phase that ended to the builder.
void harvest(Profiler& p);
// Arms the sampler for the phase that begins, over the objects alive now.
void arm(Profiler& p, const LiveObjects& live, uint32_t step_rel, uint32_t phase);
// Software sampler: a window for the object born at this event, every other window left as it is.
void arm_new_object(Profiler& p, uint64_t key, uint64_t size);
void stop_sampling(Profiler& p);
bool start_sampling(Profiler& p);

}  // namespace sentinel::rt
