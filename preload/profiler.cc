#include "profiler.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "logging.h"
#include "manage/compiled_plan.h"
#include "os/measure_clock.h"
#include "os/os.h"
#include "pmu_harvest.h"
#include "profiler_state.h"
#include "profile/profile_builder.h"
#include "profile/profile_io.h"
#include "runtime_state.h"
#include "service.h"
#include "signals.h"
#include "sampler/pmu_sampler.h"
#include "sampler/software_sampler.h"

namespace sentinel::rt {

Profiler* g_profiler = nullptr;

namespace {

const char* state_name(ProfState s) {
  switch (s) {
    case ProfState::kWaiting: return "waiting";
    case ProfState::kProfiling: return "profiling";
    case ProfState::kTail: return "finishing";
    case ProfState::kDone: return "done";
  }
  return "?";
}

bool sampling_kind(SamplerKind k) { return k == SamplerKind::kSoftware || k == SamplerKind::kPebs || k == SamplerKind::kIbs; }

std::string program_command_line() {
  std::string cmd;
  char buf[1025];
  const ssize_t n = os::read_small_file("/proc/self/cmdline", buf, sizeof buf);
  for (ssize_t i = 0; i < n; ++i) cmd.push_back(buf[i] == '\0' ? ' ' : buf[i]);
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  return cmd;
}

// The profile is complete: kept for the manager, and written out where the configuration asks for a file.
void finish_profile(Profiler& p) {
  if (!p.builder) return;
  auto profile = std::make_shared<StepProfile>(
      p.builder->build(sampler_kind_name(p.kind), p.pmu == nullptr ? 1 : p.pmu->options().sample_period,
                       program_command_line()));
  if (p.pmu != nullptr) {
    profile->sampler_source = p.pmu->source_name();
    profile->samples_lost = p.pmu->stats().lost;
    profile->writebacks_counted = p.pmu->counts_writebacks();
  }
  // The software sampler estimates write-backs from the passes that wrote an object.
  if (p.kind == SamplerKind::kSoftware) profile->writebacks_counted = true;
  p.profiled_steps = profile->profiled_steps;
  p.last_profile_first_step = p.first_step;
  p.latest = profile;
  ++p.completed;
  log_write(LogLevel::kInfo, ("profile complete: " + std::to_string(profile->objects.size()) + " objects, period " +
                              std::to_string(profile->period) + " events, " +
                              std::to_string(profile->profiled_steps) + " step(s)")
                                 .c_str());
  if (!g_state.config.write_profile()) return;
  std::string error;
  if (!write_profile_file(g_state.config.profile_out, *profile, &error)) {
    log_write(LogLevel::kError, ("cannot write the profile: " + error).c_str());
    return;
  }
  ++p.profiles_written;
  log_write(LogLevel::kInfo, ("profile written to " + std::string(g_state.config.profile_out)).c_str());
}

void restart(Profiler& p, const char* why) {
  stop_sampling(p);
  p.builder.reset();
  p.first_step = -1;
  p.left_out_step = -1;
  p.steps_left_out = 0;
  p.structure_first_step = -1;
  p.state = ProfState::kWaiting;
  ++p.restarts;
  log_write(LogLevel::kInfo, (std::string(why) + ": profiling starts over").c_str());
}

// Records the first profiled step's tags and checks every later profiled step's against them. A program
// whose profiled steps keep differing is profiled as it is after kMaxDeviationRestarts restarts.
constexpr uint32_t kMaxDeviationRestarts = 3;
bool same_step_as_first(Profiler& p, const ObjectEvent& e) {
  if (e.event >= p.period) return true;
  if (e.step == p.first_step) {
    p.profiled_tags[e.event] = e.tag;
    p.profiled_tag_events.emplace(e.tag, e.event);
    return true;
  }
  // As the plan will be followed (manage::match_tag, BirthOrder): threads that allocate concurrently
  // interleave differently from step to step.
  if (e.step != p.profiled_order_step) {
    p.profiled_order.reset();
    p.profiled_order_step = e.step;
  }
  const auto position_of = [&p](uint64_t tag) {
    auto it = p.profiled_tag_events.find(tag);
    return it == p.profiled_tag_events.end() ? manage::kNoPosition : it->second;
  };
  const manage::TagAtEvent m = manage::match_tag(p.profiled_tags, e.event, e.tag, position_of);
  if ((m.expected && p.profiled_order.on_birth(p.profiled_tags, e.event, m.position)) ||
      p.deviation_restarts >= kMaxDeviationRestarts) {
    return true;
  }
  ++p.deviation_restarts;
  return false;
}

void begin_profile(Profiler& p, LiveObjects& live, const ObjectEvent& e) {
  p.profiled_tags.assign(e.period, 0);
  p.profiled_tag_events.clear();
  p.profiled_order.resize(e.period);
  p.profiled_order_step = -1;
  p.period = e.period;
  p.first_step = e.step;
  p.left_out_step = -1;
  p.steps_left_out = 0;
  p.first_step_events = 0;
  p.first_step_checked = false;
  p.builder = std::make_unique<ProfileBuilder>(e.period, g_state.config.profile_steps);
  // Alive before the step's first allocation: persistent (the object born at this event is not).
  const uint64_t born_now = instance_key(e.slot, e.generation);
  name_persistent_twins(live, born_now);  // one profile object per object alive, with its own bytes
  for (const auto& [key, o] : live) {
    if (key != born_now) p.builder->add_persistent(key, o.tag, o.site, o.occurrence, o.size);
  }
  // The step that just ended ran without sampling: its phase times are the program's own.
  p.builder->set_unsampled_phase_ns(p.phase_forecast_ns);
  p.state = ProfState::kProfiling;
  // The software sampler armed the live objects when the profile was chosen (a step ahead) and arms
  // every birth since: its windows stay (a new arm would drop the windows of objects born since that
  // this thread has not read of yet).
  p.phase_open = p.kind == SamplerKind::kSoftware && g_sampling_active.load(std::memory_order_relaxed);
  p.last_arm_ns = 0;
  if (sampling_kind(p.kind) && !g_sampling_active.load(std::memory_order_relaxed) && !start_sampling(p)) {
    p.kind = SamplerKind::kNone;
  }
  if (p.pmu != nullptr && p.pmu->started()) p.pmu->begin(live);
  if (p.kind == SamplerKind::kSoftware) {
    p.touch_attribution.clear();
    for (const auto& [key, o] : live) {
      if (key == born_now) continue;
      p.touch_attribution.on_object(key, g_state.heap.record(static_cast<uint32_t>(key >> 32)).start, o.size, 0, 0);
    }
    p.pending_touches.clear();
    p.last_event_clock = 0;
    p.touches_outside = 0;
  }
}

void update_forecast(Profiler& p, const ObjectEvent& e) {
  if (e.step < 0 || e.period == 0) return;
  if (p.phase_forecast_ns.size() != e.period) p.phase_forecast_ns.assign(e.period, 0);
  const bool next_in_step = e.step == p.prev_step && e.event == p.prev_event + 1;
  const bool next_step = e.step == p.prev_step + 1 && e.event == 0;
  if ((next_in_step || next_step) && p.prev_event < e.period && e.time_ns >= p.prev_time_ns) {
    p.phase_forecast_ns[p.prev_event] = e.time_ns - p.prev_time_ns;
  }
  p.prev_step = e.step;
  p.prev_event = e.event;
  p.prev_time_ns = e.time_ns;
}

// Live bytes at step starts and each step's peak, and births, for settled_step. A step begun over starts
// again where it is now, with its peak from here.
void follow_step_bytes(Profiler& p, const LiveObjects& live, const ObjectEvent& e, bool begun_over) {
  if (p.births_need_seeding) {
    p.births_need_seeding = false;
    p.born_in.clear();
    for (const auto& [key, o] : live) p.born_in[key] = Profiler::Birth{~uint64_t{0}, -1};
  }
  p.born_in[instance_key(e.slot, e.generation)] = Profiler::Birth{e.relocks, e.step};
  if (e.step < 0) return;
  const uint64_t before = e.live_bytes >= e.size ? e.live_bytes - e.size : 0;
  if (begun_over) {
    p.step_start_bytes = before;
    p.step_peak_bytes = e.live_bytes;
  } else if (e.event == 0) {
    p.have_prev_step_bytes = p.step_peak_bytes > 0;
    p.prev_start_bytes = p.step_start_bytes;
    p.prev_peak_bytes = p.step_peak_bytes;
    p.step_start_bytes = before;
    p.step_peak_bytes = e.live_bytes;
    p.prev_step_freed_older = p.step_freed_older;
    p.step_freed_older = false;
  }
  p.step_peak_bytes = std::max(p.step_peak_bytes, e.live_bytes);
}

// A training step leaves memory as it found it: its forward pass builds up activations that its backward
// pass frees, and what stays from one step to the next (weights, gradients, optimizer state) is the same at
// every step's start and lives on. A loop inside the step that the detector may lock first
// (docs/step-detection.md) does neither: a forward loop whose iterations keep their outputs starts every
// "step" higher by about the iteration's own rise, and a backward loop frees, iteration by iteration, the
// activations the forward pass made before the loop began, many of its "steps" ago (DenseNet-121's dense
// blocks at batch 16, 64 px: 13 events an iteration, locked in the first step's backward pass 55 MB below
// the forward's peak). A training step frees what it made and, at most, what the step before made
// (gradients with zero_grad(set_to_none=True), a recurrent net's carried state). A step starting now is
// settled when the step before it started within a quarter of that step's rise (its peak above its start)
// of where this one starts, and freed no object born two or more steps before it (or under another step
// structure). Profiles are only taken from settled steps, so an inner loop is not planned as the step
// before the detector finds the whole step (which replaces it: relocks()). This also waits out a step that
// first creates optimizer state.
bool settled_step(const Profiler& p) {
  if (!p.have_prev_step_bytes || p.prev_step_freed_older) return false;
  const uint64_t rise = p.prev_peak_bytes - std::min(p.prev_peak_bytes, p.prev_start_bytes);
  const uint64_t change = p.step_start_bytes > p.prev_start_bytes ? p.step_start_bytes - p.prev_start_bytes
                                                                   : p.prev_start_bytes - p.step_start_bytes;
  return change <= rise / 4;
}

// Whether to harvest and re-arm at this phase boundary. Arming costs a few hundred microseconds (an
// mprotect per live object, each a TLB shootdown on the busy cores), so very short phases are merged
// into the group of the phase before them: a phase gets its own windows when it is forecast to last
// at least three arming costs, or when the current group has lasted five.
bool rearm_now(const Profiler& p, uint32_t phase, uint64_t now) {
  if (!p.phase_open) return true;
  const uint64_t forecast = phase < p.phase_forecast_ns.size() ? p.phase_forecast_ns[phase] : 0;
  return forecast >= 3 * p.arm_cost_ns || now - p.last_arm_ns >= 5 * p.arm_cost_ns;
}

// The step detector begins a step over when the step in progress had not allocated from enough of the
// step's call-sites by the time the step's anchor came again (core/step_clock.h): an evaluation pass whose
// batch comes from the anchor's call-site ran, and its births were taken for the step's. The step's events
// count from 0 again, in the same step.
bool begins_step_over(const Profiler& p, const ObjectEvent& e) {
  return e.step >= 0 && e.event == 0 && e.step == p.prev_step;
}

// The births of a profiled step that the detector began over were another pass's: they leave the profile.
// Left in, both passes' births lie on the same events, and the plan then expects some a training step
// never makes (a Transformer classifier with an evaluation pass every 5 steps, in the first profiled step,
// left its plan at every managed step). A later profiled step drops them from the builder; the first one
// is the profile's start, so the profile begins again at this event (the persistent objects are the ones
// alive now). Neither is a restart: the steps need not settle again (docs/profiler.md).
void profile_step_begun_over(Profiler& p, LiveObjects& live, const ObjectEvent& e, uint32_t rel) {
  ++p.steps_begun_over;
  log_write(LogLevel::kInfo, ("the step detector began profiled step " + std::to_string(e.step) +
                              " over (an evaluation pass before it?): its births so far leave the profile")
                                 .c_str());
  if (rel == 0) {
    p.builder.reset();
    begin_profile(p, live, e);
    return;
  }
  p.builder->begin_step_over(rel, e.time_ns);
  p.profiled_order_step = -1;  // same_step_as_first() follows this step's births from here
}

// The first profiled step is what the others are checked against (same_step_as_first), so it must be a
// plain step: one of the period the detector learned. One with an evaluation pass or a checkpoint in it is
// longer, and every plain step after it then deviated and was left out (a U-Net's first profiled step held
// its checkpoint). The profile begins again at this step's first event.
void first_step_was_odd(Profiler& p, LiveObjects& live, const ObjectEvent& e) {
  ++p.deviation_restarts;
  ++p.restarts;  // counted as a restart (stats profile_restarts), though no settled step is waited for
  log_write(LogLevel::kInfo, ("the first profiled step had " + std::to_string(p.first_step_events) +
                              " events, not the step's " + std::to_string(e.period) +
                              " (an evaluation pass or a checkpoint in it?): the profile begins again with step " +
                              std::to_string(e.step))
                                 .c_str());
  p.builder.reset();
  begin_profile(p, live, e);
}

// The sampler's counts from this event on belong to no profiled step, and the object born at it is no
// profiled object: its touches are its own, not those of an instance that lived at its address before.
void sample_outside_profile(Profiler& p, const ObjectEvent& e) {
  const uint64_t key = instance_key(e.slot, e.generation);
  if (p.kind == SamplerKind::kSoftware && p.phase_open) {
    p.touch_attribution.on_object(key, g_state.heap.record(e.slot).start, e.size, e.clock, e.time_ns);
    p.touch_attribution.on_phase(e.clock, e.time_ns, kNoProfiledStep, 0);
    p.last_event_clock = e.clock;
    harvest(p);
  } else if (p.pmu != nullptr && p.pmu->started()) {
    p.pmu->on_alloc(key, g_state.heap.record(e.slot).start, e.size, e.clock, e.time_ns, kNoProfiledStep, 0);
  }
}

// A later profiled step allocated other objects than the first (an evaluation pass, a checkpoint, an odd
// batch): what it made so far leaves the profile, the rest of it is not profiled, and the next step is
// profiled in its place. Before, the profile started over, which waits for a settled step again: a U-Net
// with a validation pass every 4 steps and a checkpoint every 6 restarted 3 times and was profiled at its
// 19th step. The emulated PMU samples a window of steps it opened ahead (pmu_harvest.h): there the profile
// still starts over.
bool leave_step_out(Profiler& p, const ObjectEvent& e, uint32_t rel) {
  if (rel == 0 || (p.pmu != nullptr && p.pmu->windowed())) return false;
  ++p.left_out_total;
  log_write(LogLevel::kInfo, ("profiled step " + std::to_string(e.step) +
                              " allocated other objects than the first at event " + std::to_string(e.event) +
                              " (an evaluation pass, a checkpoint or an odd batch?): it is left out of the profile, " +
                              "and the next step is profiled in its place")
                                 .c_str());
  p.builder->begin_step_over(rel, e.time_ns);
  p.profiled_order_step = -1;
  p.left_out_step = e.step;
  sample_outside_profile(p, e);
  return true;
}

void on_alloc(Profiler& p, LiveObjects& live, const ObjectEvent& e) {
  const uint64_t key = instance_key(e.slot, e.generation);
  const bool begun_over = begins_step_over(p, e);
  update_forecast(p, e);
  follow_step_bytes(p, live, e, begun_over);
  if (e.relocks != p.relocks_seen) {
    if (p.relocks_seen != ~uint64_t{0} && p.state != ProfState::kWaiting) restart(p, "the step structure changed");
    p.relocks_seen = e.relocks;
    p.structure_first_step = -1;
  }
  if (p.restart_requested) {
    p.restart_requested = false;
    if (p.state != ProfState::kWaiting) restart(p, "the manager asked for a new profile");
    p.structure_first_step = -1;
  }
  if (p.state == ProfState::kWaiting && e.step >= 0 && e.event == 0 && e.period > 0 && e.period >= p.min_period) {
    if (p.structure_first_step < 0) p.structure_first_step = e.step;
    // A program whose steps never settle (one that keeps a large tensor of every step) is profiled after
    // 32 steps and 8,192 events (twice the longest period the detector locks) of waiting all the same;
    // an inner loop has been replaced by the whole step long before that.
    const int64_t waited = e.step - p.structure_first_step;
    const bool waited_enough = waited >= 32 && static_cast<uint64_t>(waited) * e.period >= 8192;
    const bool ready =
        waited >= static_cast<int64_t>(g_state.config.warmup_steps) && (settled_step(p) || waited_enough);
    if (p.pmu != nullptr && p.pmu->windowed() && sampling_kind(p.kind)) {
      // The emulated PMU profiles the steps of a window the allocation path opens (pmu_harvest.h):
      // opened when the profiler is ready, begun when the window's first event comes (opened again if
      // that event was missed).
      if (p.window_first_step >= 0 && e.step == p.window_first_step) {
        begin_profile(p, live, e);
      } else if (ready && (p.window_first_step < 0 || e.step > p.window_first_step)) {
        if (!g_sampling_active.load(std::memory_order_relaxed) && !start_sampling(p)) {
          p.kind = SamplerKind::kNone;
          begin_profile(p, live, e);
        } else {
          p.window_first_step = p.pmu->open_window(g_state.config.profile_steps);
          log_write(LogLevel::kInfo, ("emulated PMU: profiling steps from " + std::to_string(p.window_first_step) +
                                      " (events of step " + std::to_string(e.step) + " being read)")
                                         .c_str());
        }
      }
    } else if (p.kind == SamplerKind::kSoftware) {
      // This thread reads events a while after they happen: by the time it sees a step begin, the program
      // has allocated part of it, and those births got no window (the allocation path arms one only while
      // sampling: profiler_on_alloc). So sampling starts now, over the objects alive now, and the profile
      // with the next step; touches before it are dropped (outside the profile).
      if (p.window_first_step >= 0 && e.step == p.window_first_step) {
        begin_profile(p, live, e);
      } else if (ready && (p.window_first_step < 0 || e.step > p.window_first_step)) {
        __atomic_store_n(&p.window_first_step, e.step + 1, __ATOMIC_RELAXED);  // before sampling is on
        if (!g_sampling_active.load(std::memory_order_relaxed) && !start_sampling(p)) {
          p.kind = SamplerKind::kNone;
          begin_profile(p, live, e);
        } else {
          arm(p, live, 0, e.event);
        }
      }
    } else if (ready) {
      begin_profile(p, live, e);
    }
  }
  if (p.state != ProfState::kProfiling && p.state != ProfState::kTail) return;

  if (p.left_out_step >= 0 && e.step >= 0) {
    if (e.step == p.left_out_step && !begun_over) {
      sample_outside_profile(p, e);
      return;
    }
    // The next step, or the one left out begun over by the detector (then the step profiled anew).
    if (e.step > p.left_out_step) p.steps_left_out += static_cast<uint32_t>(e.step - p.left_out_step);
    p.left_out_step = -1;
  }
  int64_t rel = e.step - p.first_step - p.steps_left_out;
  if (rel < 0) return;
  const uint32_t steps = g_state.config.profile_steps;
  if (p.state == ProfState::kProfiling && rel == 0) p.first_step_events = std::max(p.first_step_events, e.event + 1);
  if (p.state == ProfState::kProfiling && rel >= 1 && !p.first_step_checked) {
    p.first_step_checked = true;
    // (Marked steps are the program's: their period is the last one's length. The emulated PMU samples the
    // window of steps it opened: pmu_harvest.h.)
    if (p.first_step_events != e.period && steps > 1 && p.deviation_restarts < kMaxDeviationRestarts &&
        !(p.pmu != nullptr && p.pmu->windowed()) && !step_summary().explicit_marks) {
      first_step_was_odd(p, live, e);
      rel = 0;
    }
  }
  if (p.state == ProfState::kProfiling && rel < steps && begun_over) profile_step_begun_over(p, live, e, rel);
  if (p.state == ProfState::kProfiling && rel < steps && !same_step_as_first(p, e)) {
    if (leave_step_out(p, e, static_cast<uint32_t>(rel))) return;
    restart(p, "a profiled step allocated other objects than the first (an odd batch or an evaluation pass?)");
    return;
  }
  if (p.state == ProfState::kProfiling && p.pmu != nullptr && p.pmu->started()) {
    // Before the harvest below: samples taken from this event on belong to its phase (or, at the
    // event that ends the profile, to no profiled step).
    p.pmu->on_alloc(key, g_state.heap.record(e.slot).start, e.size, e.clock, e.time_ns, static_cast<uint32_t>(rel),
                    e.event);
  }
  if (p.state == ProfState::kProfiling && rel >= steps) {
    stop_sampling(p);
    p.builder->on_profile_end(e.time_ns);
    p.state = ProfState::kTail;
  }
  if (p.state == ProfState::kTail && rel > steps) {
    finish_profile(p);
    p.state = ProfState::kDone;
    return;
  }
  p.builder->on_alloc(key, e.tag, e.site, e.occurrence, e.size, static_cast<uint32_t>(rel), e.event, e.time_ns,
                      e.live_bytes);
  if (p.state != ProfState::kProfiling) return;
  if (p.kind == SamplerKind::kSoftware) {
    // Touches carry their step clock, so the windows need not be armed anew at every phase boundary:
    // births are armed by the allocation path (profiler_on_alloc; here only if that found no free entry),
    // touched windows are protected again, in place, by the rearms of profiler_tick, and the objects alive
    // when the profile was chosen were armed then. Before, every event re-armed every live object, which
    // this thread could not keep up with: it armed phases long gone, after their step-local objects had
    // died (docs/profiler.md).
    p.touch_attribution.on_object(key, g_state.heap.record(e.slot).start, e.size, e.clock, e.time_ns);
    p.touch_attribution.on_phase(e.clock, e.time_ns, static_cast<uint32_t>(rel), e.event);
    p.last_event_clock = e.clock;
    if (!p.phase_open) {
      arm(p, live, static_cast<uint32_t>(rel), e.event);
    } else {
      arm_new_object(p, key, e.size);
    }
    harvest(p);  // touches carry their clock: the order against arming does not matter
    return;
  }
  // On the events' clock: the arming cost is weighed against phase times (os/measure_clock.h).
  const uint64_t now = os::measure_ns();
  if (!rearm_now(p, e.event, now)) return;
  harvest(p);
  arm(p, live, static_cast<uint32_t>(rel), e.event);
  p.last_arm_ns = now;
  p.arm_cost_ns = os::measure_ns() - now;
}

void on_free(Profiler& p, const ObjectEvent& e) {
  const uint64_t key = instance_key(e.slot, e.generation);
  if (auto it = p.born_in.find(key); it != p.born_in.end()) {
    const Profiler::Birth b = it->second;
    if (b.relocks != e.relocks || b.step < 0 || e.step - b.step >= 2) p.step_freed_older = true;
    p.born_in.erase(it);
  }
  // In a step left out, frees still end the lives of objects born in the steps before (as events of the
  // step profiled in its place).
  if ((p.state == ProfState::kProfiling || p.state == ProfState::kTail) && p.builder &&
      e.step >= p.first_step + p.steps_left_out) {
    p.builder->on_free(key, static_cast<uint32_t>(e.step - p.first_step - p.steps_left_out), e.event, e.live_bytes);
  }
}

}  // namespace

void profiler_init() noexcept {
  try {
    auto* p = new Profiler();
    const Config& c = g_state.config;
    PmuSamplerOptions pmu_options;
    pmu_options.sample_period = c.sample_period;
    pmu_options.emulated_ring_bytes = emulated_pmu_ring_bytes(c);
    const PmuSourceSetting sources = c.pmu_source == PmuSourceChoice::kPerf           ? PmuSourceSetting::kPerf
                                     : c.pmu_source == PmuSourceChoice::kQemuSlowtier ? PmuSourceSetting::kEmulated
                                                                                      : PmuSourceSetting::kAuto;
    if (c.sampler == SamplerChoiceSetting::kNone) {
      p->kind = SamplerKind::kNone;
      p->reason = "SENTINEL_SAMPLER=none: lifetimes and phase times only";
    } else {
      const SamplerChoice choice = choose_sampler(sampler_setting_name(c.sampler), pmu_options, sources);
      p->kind = choice.kind;
      p->reason = choice.reason;
      if (choice.kind == SamplerKind::kPebs || choice.kind == SamplerKind::kIbs) {
        pmu_options.kind = choice.kind;
        pmu_options.source = choice.source;
        p->pmu = new PmuHarvest(pmu_options);
      }
    }
    p->software = new SoftwareSampler();
    g_profiler = p;
    log_write(LogLevel::kInfo, ("sampler: " + std::string(sampler_kind_name(p->kind)) + " (" + p->reason + ")").c_str());
  } catch (...) {
    g_profiler = nullptr;
  }
}

void profiler_on_event(const ObjectEvent& e, LiveObjects& live) noexcept {
  if (g_profiler == nullptr) return;
  try {
    std::lock_guard<std::mutex> lock(g_profiler->mu);
    Profiler& p = *g_profiler;
    if (!p.active) return;
    if (e.kind == ObjectEventKind::kAlloc) {
      on_alloc(p, live, e);
    } else if (e.kind == ObjectEventKind::kFree) {
      on_free(p, e);
    }
  } catch (...) {
    // Out of memory in the service thread: profiling is lost, the program is not.
  }
}

void profiler_set_active(bool active) noexcept {
  if (g_profiler == nullptr) return;
  std::lock_guard<std::mutex> lock(g_profiler->mu);
  Profiler& p = *g_profiler;
  if (p.active && !active) {
    stop_sampling(p);
    p.builder.reset();
    p.state = ProfState::kWaiting;
    p.born_in.clear();  // not followed while inactive
  }
  if (!p.active && active) {
    p.structure_first_step = -1;
    p.relocks_seen = ~uint64_t{0};
    p.births_need_seeding = true;
    p.have_prev_step_bytes = false;
  }
  p.active = active;
}

void profiler_set_min_period(uint32_t period) noexcept {
  if (g_profiler == nullptr) return;
  std::lock_guard<std::mutex> lock(g_profiler->mu);
  g_profiler->min_period = period;
}

void profiler_request_profile() noexcept {
  if (g_profiler == nullptr) return;
  std::lock_guard<std::mutex> lock(g_profiler->mu);
  g_profiler->restart_requested = true;
  g_profiler->active = true;
}

std::shared_ptr<const StepProfile> profiler_completed(uint64_t* count) noexcept {
  if (g_profiler == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_profiler->mu);
  *count = g_profiler->completed;
  return g_profiler->latest;
}

void profiler_at_exit() noexcept {
  if (g_profiler == nullptr) return;
  try {
    std::lock_guard<std::mutex> lock(g_profiler->mu);
    Profiler& p = *g_profiler;
    if (p.state == ProfState::kProfiling || p.state == ProfState::kTail) {
      stop_sampling(p);
      p.builder->on_profile_end(os::measure_ns());
      finish_profile(p);
      p.state = ProfState::kDone;
    }
  } catch (...) {
  }
}

ProfilerReport profiler_report() noexcept {
  ProfilerReport r;
  if (g_profiler == nullptr) return r;
  try {
    std::lock_guard<std::mutex> lock(g_profiler->mu);
    const Profiler& p = *g_profiler;
    r.sampler = sampler_kind_name(p.kind);
    r.sampler_reason = p.reason;
    r.samples = p.samples;
    if (p.pmu != nullptr) {
      const PmuHarvestStats st = p.pmu->stats();
      r.sampler_source = p.pmu->source_name();
      r.samples += st.attributed;
      r.samples_lost = st.lost;
      r.samples_outside_objects = st.outside;
    }
    r.profiled_steps = p.profiled_steps;
    r.last_profile_first_step = p.last_profile_first_step;
    r.profiles_written = p.profiles_written;
    r.profile_restarts = p.restarts;
    r.profiled_steps_begun_over = p.steps_begun_over;
    r.profiled_steps_left_out = p.left_out_total;
    r.events_dropped = g_state.events.dropped();
    if (p.software != nullptr && p.kind == SamplerKind::kSoftware) {
      r.software_sampler = true;
      r.software = p.software->stats();
    }
    r.profile_path = g_state.config.profile_out;
    r.state = state_name(p.state);
  } catch (...) {
  }
  return r;
}

}  // namespace sentinel::rt
