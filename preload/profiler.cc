#include "profiler.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "logging.h"
#include "os/measure_clock.h"
#include "os/os.h"
#include "pmu_harvest.h"
#include "profile/profile_builder.h"
#include "profile/profile_io.h"
#include "runtime_state.h"
#include "service.h"
#include "signals.h"
#include "sampler/pmu_sampler.h"
#include "sampler/software_sampler.h"

namespace sentinel::rt {
namespace {

constexpr uint32_t kMaxSampledSlots = 1u << 16;
constexpr uint64_t kCacheLine = 64;

enum class ProfState { kWaiting, kProfiling, kTail, kDone };
const char* state_name(ProfState s) {
  switch (s) {
    case ProfState::kWaiting: return "waiting";
    case ProfState::kProfiling: return "profiling";
    case ProfState::kTail: return "finishing";
    case ProfState::kDone: return "done";
  }
  return "?";
}

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
  int64_t window_first_step = -1;  // the emulated PMU's window (pmu_harvest.h), -1 while none is open
  std::unordered_map<uint32_t, WindowCounts> last_counts;

  uint64_t samples = 0;
  uint64_t profiles_written = 0;
  uint64_t restarts = 0;
  uint32_t profiled_steps = 0;
  int64_t last_profile_first_step = -1;
  // The tags of the first profiled step, by event: every later profiled step must allocate the same at
  // the same events, or it is not the same step (an odd last batch, an evaluation pass) and averaging it in
  // would shift births by an event. Restarts for it are bounded (kMaxDeviationRestarts).
  std::vector<uint64_t> profiled_tags;
  uint32_t deviation_restarts = 0;
};

Profiler* g_profiler = nullptr;
std::atomic<bool> g_sampling_active{false};

bool sampling_kind(SamplerKind k) { return k == SamplerKind::kSoftware || k == SamplerKind::kPebs || k == SamplerKind::kIbs; }

std::string program_command_line() {
  std::string cmd;
  char buf[1025];
  const ssize_t n = os::read_small_file("/proc/self/cmdline", buf, sizeof buf);
  for (ssize_t i = 0; i < n; ++i) cmd.push_back(buf[i] == '\0' ? ' ' : buf[i]);
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  return cmd;
}

void harvest(Profiler& p) {
  if (!p.phase_open || !p.builder) return;
  if (p.kind == SamplerKind::kSoftware) {
    for (const Armed& a : p.armed) {
      const WindowCounts c = p.software->counts(a.slot, 0);
      WindowCounts& prev = p.last_counts[a.slot];
      const uint64_t armed = c.armed - prev.armed;
      const uint64_t touched = c.touched - prev.touched;
      const uint64_t written = c.written - prev.written;
      const uint64_t dirtied = c.dirtied - prev.dirtied;
      prev = c;
      if (armed == 0 || touched == 0) continue;
      // A window stands for the whole object (DNN kernels stream whole tensors), and each touch is a
      // pass over it (the window is protected again during the phase, software_sampler.h "Passes"):
      // the estimate is the object's cache lines once per pass, split by how each pass began, and once
      // more as write-backs per pass that wrote it.
      const double lines = static_cast<double>(a.size) / kCacheLine;
      const double wpasses = static_cast<double>(written) / armed;
      const double rpasses = static_cast<double>(touched - written) / armed;
      const double dpasses = static_cast<double>(dirtied) / armed;
      p.builder->on_access(a.key, p.phase_step, p.phase, static_cast<uint64_t>(lines * rpasses),
                           static_cast<uint64_t>(lines * wpasses), static_cast<uint64_t>(lines * dpasses));
      p.samples += touched;
    }
  } else if (p.pmu != nullptr) {
    p.pmu->harvest(*p.builder,
                   [&](uint64_t addr, uint64_t* key) {
                     auto it = std::upper_bound(p.armed.begin(), p.armed.end(), addr,
                                                [](uint64_t x, const Armed& a) { return x < a.start; });
                     if (it == p.armed.begin()) return false;
                     --it;
                     if (addr >= it->start + it->size) return false;
                     *key = it->key;
                     return true;
                   },
                   p.phase_step, p.phase);
  }
}

// Arms the sampler for the phase that begins, over the objects alive now.
void arm(Profiler& p, const LiveObjects& live, uint32_t step_rel, uint32_t phase) {
  if (p.pmu != nullptr) p.pmu->attach_new_threads(now_ns());
  p.armed.clear();
  for (const auto& [key, o] : live) {
    const uint32_t slot = static_cast<uint32_t>(key >> 32);
    const ObjectRecord& r = g_state.heap.record(slot);
    const uint64_t ticket = p.software != nullptr ? p.software->release_ticket(slot) : kNoReleaseTicket;
    // Skip objects freed since the event we are processing: their extent may already be reused.
    if (r.state.load(std::memory_order_acquire) != ExtentState::kLive ||
        r.generation != static_cast<uint32_t>(key)) {
      continue;
    }
    if (slot >= kMaxSampledSlots) continue;
    // A thread's alternate signal stack must stay writable, or no signal can be delivered to it.
    if (alt_stack_overlaps(r.start, o.size)) continue;
    p.armed.push_back(Armed{slot, key, o.size, r.start, ticket});
  }
  std::sort(p.armed.begin(), p.armed.end(), [](const Armed& a, const Armed& b) { return a.start < b.start; });
  if (p.kind == SamplerKind::kSoftware) {
    std::vector<SampleRegion> regions;
    regions.reserve(p.armed.size());
    for (const Armed& a : p.armed) regions.push_back(SampleRegion{a.start, a.size, a.slot, a.release_ticket});
    p.software->arm(regions, 0);
  }
  p.phase_step = step_rel;
  p.phase = phase;
  p.phase_open = true;
  p.last_rearm_ns = now_ns();
}

void stop_sampling(Profiler& p) {
  if (!g_sampling_active.load(std::memory_order_relaxed)) return;
  harvest(p);
  if (p.software != nullptr && p.kind == SamplerKind::kSoftware) {
    p.software->disarm();
    const SoftwareSamplerStats st = p.software->stats();
    log_write(LogLevel::kDebug, ("software sampler: " + std::to_string(st.arms) + " arms, " +
                                 std::to_string(st.windows_armed) + " windows, " + std::to_string(st.faults_claimed) +
                                 " faults claimed, " + std::to_string(st.skipped_small + st.skipped_range + st.skipped_capacity) +
                                 " regions skipped, " + std::to_string(st.mprotect_failures) + " mprotect failures")
                                    .c_str());
    p.software->stop();
  }
  if (p.pmu != nullptr && p.kind != SamplerKind::kSoftware) p.pmu->stop();
  g_sampling_active.store(false, std::memory_order_release);
  p.phase_open = false;
  p.armed.clear();
  p.window_first_step = -1;
}

bool start_sampling(Profiler& p) {
  std::string error;
  if (p.kind == SamplerKind::kSoftware) {
    SoftwareSamplerOptions opt;
    opt.max_slots = kMaxSampledSlots;
    opt.max_phases = 1;  // the profiler harvests and re-arms at every phase boundary
    opt.max_windows = 8192;
    if (!p.software->start(opt, &error)) {
        log_write(LogLevel::kError, ("software sampler cannot start: " + error).c_str());
      return false;
    }
  } else if (p.pmu != nullptr) {
    if (!p.pmu->start(&error)) {
      log_write(LogLevel::kError, ("PMU sampler cannot start: " + error).c_str());
      return false;
    }
  }
  p.last_counts.clear();
  g_sampling_active.store(true, std::memory_order_release);
  return true;
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
    return true;
  }
  if (p.profiled_tags[e.event] == e.tag || p.deviation_restarts >= kMaxDeviationRestarts) return true;
  ++p.deviation_restarts;
  return false;
}

void begin_profile(Profiler& p, const LiveObjects& live, const ObjectEvent& e) {
  p.profiled_tags.assign(e.period, 0);
  p.period = e.period;
  p.first_step = e.step;
  p.builder = std::make_unique<ProfileBuilder>(e.period, g_state.config.profile_steps);
  // Alive before the step's first allocation: persistent (the object born at this event is not).
  const uint64_t born_now = instance_key(e.slot, e.generation);
  for (const auto& [key, o] : live) {
    if (key != born_now) p.builder->add_persistent(key, o.tag, o.site, o.occurrence, o.size);
  }
  // The step that just ended ran without sampling: its phase times are the program's own.
  p.builder->set_unsampled_phase_ns(p.phase_forecast_ns);
  p.state = ProfState::kProfiling;
  p.phase_open = false;
  p.last_arm_ns = 0;
  if (sampling_kind(p.kind) && !g_sampling_active.load(std::memory_order_relaxed) && !start_sampling(p)) {
    p.kind = SamplerKind::kNone;
  }
  if (p.pmu != nullptr && p.pmu->started()) p.pmu->begin(live);
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

// Live bytes at step starts and each step's peak, and births, for settled_step.
void follow_step_bytes(Profiler& p, const LiveObjects& live, const ObjectEvent& e) {
  if (p.births_need_seeding) {
    p.births_need_seeding = false;
    p.born_in.clear();
    for (const auto& [key, o] : live) p.born_in[key] = Profiler::Birth{~uint64_t{0}, -1};
  }
  p.born_in[instance_key(e.slot, e.generation)] = Profiler::Birth{e.relocks, e.step};
  if (e.step < 0) return;
  const uint64_t before = e.live_bytes >= e.size ? e.live_bytes - e.size : 0;
  if (e.event == 0) {
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

void on_alloc(Profiler& p, const LiveObjects& live, const ObjectEvent& e) {
  const uint64_t key = instance_key(e.slot, e.generation);
  update_forecast(p, e);
  follow_step_bytes(p, live, e);
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
    } else if (ready) {
      begin_profile(p, live, e);
    }
  }
  if (p.state != ProfState::kProfiling && p.state != ProfState::kTail) return;

  const int64_t rel = e.step - p.first_step;
  if (rel < 0) return;
  const uint32_t steps = g_state.config.profile_steps;
  if (p.state == ProfState::kProfiling && rel < steps && !same_step_as_first(p, e)) {
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
  if ((p.state == ProfState::kProfiling || p.state == ProfState::kTail) && p.builder && e.step >= p.first_step) {
    p.builder->on_free(key, static_cast<uint32_t>(e.step - p.first_step), e.event, e.live_bytes);
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
      const SamplerChoice choice = choose_sampler(sampler_setting_name(c.sampler), pmu_options, real_perf_os(), sources);
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

void profiler_on_event(const ObjectEvent& e, const LiveObjects& live) noexcept {
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

uint64_t profiler_tick() noexcept {
  // Shortest interval between two rearms, and how much of the service thread's time they may take:
  // a pass over a tensor of a few MiB takes a few hundred microseconds, so two passes seldom fall
  // between two rearms; each rearm costs an mprotect (a TLB shootdown) per touched window.
  constexpr uint64_t kMinIntervalNs = 50'000;
  constexpr uint64_t kCostFactor = 4;
  if (g_profiler == nullptr || !g_sampling_active.load(std::memory_order_acquire)) return 0;
  try {
    std::lock_guard<std::mutex> lock(g_profiler->mu);
    Profiler& p = *g_profiler;
    if (p.kind != SamplerKind::kSoftware || !p.phase_open || p.state != ProfState::kProfiling) return 0;
    const uint64_t interval = std::max(kMinIntervalNs, kCostFactor * p.rearm_cost_ns);
    const uint64_t now = now_ns();
    if (now - p.last_rearm_ns >= interval) {
      p.software->rearm();
      p.last_rearm_ns = now_ns();
      p.rearm_cost_ns = p.last_rearm_ns - now;
      return interval;
    }
    return interval - (now - p.last_rearm_ns);
  } catch (...) {
    return 0;
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

void profiler_on_free(uint32_t slot) noexcept {
  if (!g_sampling_active.load(std::memory_order_acquire) || g_profiler == nullptr) return;
  if (g_profiler->kind == SamplerKind::kSoftware) g_profiler->software->release(slot);
}

void profiler_unprotect_io(const void* addr, size_t len) noexcept {
  if (addr == nullptr || len == 0 || !g_sampling_active.load(std::memory_order_acquire) || g_profiler == nullptr) return;
  if (g_profiler->kind != SamplerKind::kSoftware || g_profiler->software->armed_now() == 0) return;
  // Never waits for the sampler's lock: this may run in a signal handler (see unprotect_for_io).
  g_profiler->software->unprotect_for_io(reinterpret_cast<uintptr_t>(addr), len);
}

void profiler_fork_child() noexcept {
  g_sampling_active.store(false, std::memory_order_relaxed);
  // The emulated PMU's ring is not inherited (MADV_DONTFORK): nothing may write its step-clock word.
  g_state.step_clock_mirror = nullptr;
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
    r.events_dropped = g_state.events.dropped();
    r.profile_path = g_state.config.profile_out;
    r.state = state_name(p.state);
  } catch (...) {
  }
  return r;
}

}  // namespace sentinel::rt
