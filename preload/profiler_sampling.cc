#include "profiler.h"

#include <algorithm>
#include <string>
#include <vector>

#include "logging.h"
#include "profiler_state.h"
#include "runtime_state.h"
#include "signals.h"

namespace sentinel::rt {

std::atomic<bool> g_sampling_active{false};

namespace {

// A touch of a window is a pass over the whole object (DNN kernels stream whole tensors; the window is
// protected again within the phase, software_sampler.h "Passes"): the object's cache lines once, as reads
// or writes by how the pass began, and once more as write-backs when the pass wrote it. It goes to the
// instance and phase of its step clock; touches newer than the newest event followed wait for it.
void harvest_touches(Profiler& p, bool final) {
  p.software->take_touches(&p.pending_touches);
  size_t waiting = 0;
  for (const WindowTouch& t : p.pending_touches) {
    if (t.clock > p.last_event_clock && !final) {
      p.pending_touches[waiting++] = t;
      continue;
    }
    SampleAttributor::Hit h;
    if (t.clock > p.last_event_clock || !p.touch_attribution.by_clock(t.addr, t.clock, &h)) {
      ++p.touches_outside;
      continue;
    }
    const uint64_t lines = h.size / kCacheLine;
    p.builder->on_access(h.key, h.step, h.phase, t.write ? 0 : lines, t.write ? lines : 0, t.dirtied ? lines : 0);
    ++p.samples;
  }
  p.pending_touches.resize(waiting);
}

// Whether the live object `key` may get a window now; fills `out`.
bool armable(const Profiler& p, uint64_t key, uint64_t size, Armed* out) {
  const uint32_t slot = static_cast<uint32_t>(key >> 32);
  const ObjectRecord& r = g_state.heap.record(slot);
  const uint64_t ticket = p.software != nullptr ? p.software->release_ticket(slot) : kNoReleaseTicket;
  // Skip objects freed since the event we are processing: their extent may already be reused.
  if (r.state.load(std::memory_order_acquire) != ExtentState::kLive || r.generation != static_cast<uint32_t>(key)) {
    return false;
  }
  if (slot >= kMaxSampledSlots) return false;
  // A thread's alternate signal stack must stay writable, or no signal can be delivered to it.
  if (alt_stack_overlaps(r.start, size)) return false;
  *out = Armed{slot, key, size, r.start, ticket};
  return true;
}

}  // namespace

void harvest(Profiler& p) {
  if (!p.phase_open || !p.builder) return;
  if (p.kind == SamplerKind::kSoftware) {
    harvest_touches(p, false);
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
    Armed a;
    if (armable(p, key, o.size, &a)) p.armed.push_back(a);
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

void arm_new_object(Profiler& p, uint64_t key, uint64_t size) {
  Armed a;
  if (p.kind != SamplerKind::kSoftware || !armable(p, key, size, &a)) return;
  p.software->add({SampleRegion{a.start, a.size, a.slot, a.release_ticket}}, 0);
}

void stop_sampling(Profiler& p) {
  if (!g_sampling_active.load(std::memory_order_relaxed)) return;
  if (p.software != nullptr && p.kind == SamplerKind::kSoftware) {
    p.software->disarm();  // closes every window's cycle: all touches are in
    if (p.phase_open && p.builder) harvest_touches(p, true);
    const SoftwareSamplerStats st = p.software->stats();
    log_write(LogLevel::kDebug, ("software sampler: " + std::to_string(st.arms) + " arms, " +
                                 std::to_string(st.windows_armed) + " windows, " + std::to_string(st.faults_claimed) +
                                 " faults claimed, " + std::to_string(st.skipped_small + st.skipped_range + st.skipped_capacity) +
                                 " regions skipped, " + std::to_string(st.mprotect_failures) + " mprotect failures, " +
                                 std::to_string(p.touches_outside) + " touches outside the profiled steps")
                                    .c_str());
    p.software->stop();
  } else {
    harvest(p);
    if (p.pmu != nullptr) p.pmu->stop();
  }
  g_sampling_active.store(false, std::memory_order_release);
  p.phase_open = false;
  p.armed.clear();
  __atomic_store_n(&p.window_first_step, -1, __ATOMIC_RELAXED);  // the allocation path reads it
}

bool start_sampling(Profiler& p) {
  std::string error;
  if (p.kind == SamplerKind::kSoftware) {
    SoftwareSamplerOptions opt;
    opt.max_slots = kMaxSampledSlots;
    opt.max_phases = 1;  // the profiler harvests and re-arms at every phase boundary
    opt.max_windows = 8192;
    opt.birth_windows = 8192;  // objects born during the profile (profiler_on_alloc)
    opt.clock = &g_state.clock_ticks;  // each touch carries its moment (harvest_touches)
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
  p.pending_touches.clear();
  g_sampling_active.store(true, std::memory_order_release);
  return true;
}

uint64_t profiler_tick() noexcept {
  // Shortest interval between two rearms, and how much time they may cost: a pass over a tensor of a few
  // MiB takes a few hundred microseconds, so two passes seldom fall between two rearms; each rearm costs an
  // mprotect (a TLB shootdown) per touched window on the service thread, and each window it protects
  // again costs the program a fault when touched (signal delivery, the handler's mprotect, the return:
  // about kFaultNs here). The interval keeps both within a quarter of the time.
  constexpr uint64_t kMinIntervalNs = 50'000;
  constexpr uint64_t kCostFactor = 4;
  constexpr uint64_t kFaultNs = 10'000;
  if (g_profiler == nullptr || !g_sampling_active.load(std::memory_order_acquire)) return 0;
  try {
    std::lock_guard<std::mutex> lock(g_profiler->mu);
    Profiler& p = *g_profiler;
    if (p.kind != SamplerKind::kSoftware || !p.phase_open || p.state != ProfState::kProfiling) return 0;
    const uint64_t interval =
        std::max(kMinIntervalNs, kCostFactor * (p.rearm_cost_ns + p.last_rearmed_windows * kFaultNs));
    const uint64_t now = now_ns();
    if (now - p.last_rearm_ns >= interval) {
      p.last_rearmed_windows = p.software->rearm();
      p.last_rearm_ns = now_ns();
      p.rearm_cost_ns = p.last_rearm_ns - now;
      return interval;
    }
    return interval - (now - p.last_rearm_ns);
  } catch (...) {
    return 0;
  }
}

void profiler_on_alloc(uint32_t slot, uintptr_t start, uint64_t size, int64_t step) noexcept {
  if (!g_sampling_active.load(std::memory_order_acquire) || g_profiler == nullptr) return;
  Profiler& p = *g_profiler;
  if (p.kind != SamplerKind::kSoftware || slot >= kMaxSampledSlots || alt_stack_overlaps(start, size)) return;
  // Births of the step before the profile (sampling starts a step ahead) would only cost faults.
  const int64_t first = __atomic_load_n(&p.window_first_step, __ATOMIC_RELAXED);
  if (first < 0 || step < first) return;
  static_cast<void>(p.software->arm_birth(SampleRegion{start, size, slot, p.software->release_ticket(slot)}));
}

void profiler_on_free(uint32_t slot) noexcept {
  if (!g_sampling_active.load(std::memory_order_acquire) || g_profiler == nullptr) return;
  if (g_profiler->kind == SamplerKind::kSoftware) g_profiler->software->release(slot);
}

uintptr_t profiler_begin_io(const void* addr, size_t len) noexcept {
  if (addr == nullptr || len == 0 || !g_sampling_active.load(std::memory_order_acquire) || g_profiler == nullptr) return 0;
  if (g_profiler->kind != SamplerKind::kSoftware) return 0;
  // Takes no lock: this may run in a signal handler (see SoftwareSampler::begin_io). Guarded even while no
  // window is armed: the owner may arm one during the call.
  return g_profiler->software->begin_io(reinterpret_cast<uintptr_t>(addr), len);
}

void profiler_end_io(uintptr_t token) noexcept {
  SoftwareSampler::end_io(token);
}

void profiler_fork_child() noexcept {
  g_sampling_active.store(false, std::memory_order_relaxed);
  // The emulated PMU's ring is not inherited (MADV_DONTFORK): nothing may write its step-clock word.
  g_state.step_clock_mirror = nullptr;
}

}  // namespace sentinel::rt
