#include "profiler.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "logging.h"
#include "os/measure_clock.h"
#include "os/os.h"
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
  PmuSampler* pmu = nullptr;
  PmuSamplerOptions pmu_options;

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
  // How long each phase lasted in the last step seen (the step repeats, so this is the forecast).
  std::vector<uint64_t> phase_forecast_ns;
  int64_t prev_step = -1;
  uint32_t prev_event = 0;
  uint64_t prev_time_ns = 0;
  std::vector<Armed> armed;  // sorted by start (PMU attribution uses binary search)
  // PMU samplers follow threads, not the process: threads created after start() are found by
  // rescanning /proc/self/task now and then and attached.
  std::unordered_set<pid_t> pmu_threads;
  uint64_t last_thread_scan_ns = 0;
  std::unordered_map<uint32_t, WindowCounts> last_counts;

  uint64_t samples = 0;
  uint64_t profiles_written = 0;
  uint64_t restarts = 0;
  uint32_t profiled_steps = 0;
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
      prev = c;
      if (armed == 0 || touched == 0) continue;
      // A touched window stands for the whole object: DNN kernels stream whole tensors, so the
      // estimate is the touched fraction of the object's cache lines.
      const double lines = static_cast<double>(a.size) / kCacheLine;
      const double wfrac = static_cast<double>(written) / armed;
      const double rfrac = static_cast<double>(touched - written) / armed;
      p.builder->on_access(a.key, p.phase_step, p.phase, static_cast<uint64_t>(lines * rfrac),
                           static_cast<uint64_t>(lines * wfrac));
      p.samples += touched;
    }
  } else if (p.pmu != nullptr) {
    const uint64_t period = p.pmu_options.sample_period;
    p.pmu->drain([&](uint64_t addr, uint32_t, uint64_t, int is_write) {
      auto it = std::upper_bound(p.armed.begin(), p.armed.end(), addr,
                                 [](uint64_t x, const Armed& a) { return x < a.start; });
      if (it == p.armed.begin()) return;
      --it;
      if (addr >= it->start + it->size) return;
      p.builder->on_access(it->key, p.phase_step, p.phase, is_write == 1 ? 0 : period, is_write == 1 ? period : 0);
      ++p.samples;
    });
  }
}

std::vector<pid_t> process_threads() {
  std::vector<pid_t> tids;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  ::closedir(dir);
  return tids;
}

void attach_new_threads(Profiler& p, uint64_t now) {
  constexpr uint64_t kScanIntervalNs = 50'000'000;
  if (p.pmu == nullptr || now - p.last_thread_scan_ns < kScanIntervalNs) return;
  p.last_thread_scan_ns = now;
  for (pid_t tid : process_threads()) {
    if (p.pmu_threads.insert(tid).second) p.pmu->attach_thread(tid);
  }
}

// Arms the sampler for the phase that begins, over the objects alive now.
void arm(Profiler& p, const LiveObjects& live, uint32_t step_rel, uint32_t phase) {
  if (p.kind == SamplerKind::kPebs || p.kind == SamplerKind::kIbs) attach_new_threads(p, now_ns());
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
    const ProbeResult r = p.pmu->start(p.pmu_options);
    if (!r.ok) {
      log_write(LogLevel::kError, ("PMU sampler cannot start: " + r.reason).c_str());
      return false;
    }
    p.pmu_threads.clear();
    for (pid_t tid : process_threads()) p.pmu_threads.insert(tid);  // start() covered these
    p.last_thread_scan_ns = now_ns();
  }
  p.last_counts.clear();
  g_sampling_active.store(true, std::memory_order_release);
  return true;
}

// The profile is complete: kept for the manager, and written out where the configuration asks for a file.
void finish_profile(Profiler& p) {
  if (!p.builder) return;
  auto profile = std::make_shared<StepProfile>(
      p.builder->build(sampler_kind_name(p.kind), p.kind == SamplerKind::kSoftware ? 1 : p.pmu_options.sample_period,
                       program_command_line()));
  p.profiled_steps = profile->profiled_steps;
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

void begin_profile(Profiler& p, const LiveObjects& live, const ObjectEvent& e) {
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
  if (sampling_kind(p.kind) && !start_sampling(p)) p.kind = SamplerKind::kNone;
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
    if (e.step - p.structure_first_step >= static_cast<int64_t>(g_state.config.warmup_steps)) {
      begin_profile(p, live, e);
    }
  }
  if (p.state != ProfState::kProfiling && p.state != ProfState::kTail) return;

  const int64_t rel = e.step - p.first_step;
  if (rel < 0) return;
  const uint32_t steps = g_state.config.profile_steps;
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
  if ((p.state == ProfState::kProfiling || p.state == ProfState::kTail) && p.builder && e.step >= p.first_step) {
    p.builder->on_free(key, static_cast<uint32_t>(e.step - p.first_step), e.event, e.live_bytes);
  }
}

}  // namespace

void profiler_init() noexcept {
  try {
    auto* p = new Profiler();
    const Config& c = g_state.config;
    p->pmu_options.sample_period = c.sample_period;
    if (c.sampler == SamplerChoiceSetting::kNone) {
      p->kind = SamplerKind::kNone;
      p->reason = "SENTINEL_SAMPLER=none: lifetimes and phase times only";
    } else {
      const SamplerChoice choice = choose_sampler(sampler_setting_name(c.sampler), p->pmu_options);
      p->kind = choice.kind;
      p->reason = choice.reason;
      if (choice.kind == SamplerKind::kPebs || choice.kind == SamplerKind::kIbs) {
        p->pmu_options.kind = choice.kind;
        p->pmu = new PmuSampler();
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

void profiler_set_active(bool active) noexcept {
  if (g_profiler == nullptr) return;
  std::lock_guard<std::mutex> lock(g_profiler->mu);
  Profiler& p = *g_profiler;
  if (p.active && !active) {
    stop_sampling(p);
    p.builder.reset();
    p.state = ProfState::kWaiting;
  }
  if (!p.active && active) {
    p.structure_first_step = -1;
    p.relocks_seen = ~uint64_t{0};
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

void profiler_fork_child() noexcept { g_sampling_active.store(false, std::memory_order_relaxed); }

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
    r.profiled_steps = p.profiled_steps;
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
