// Managed mode's entry points (manager.h): the inputs read when the manager is made, the object events and
// ticks from the service thread, the completions from the engine thread, the exit. The other jobs have one
// file each (manager_state.h lists them).
#include "manager.h"

#include <atomic>
#include <mutex>

#include "fault_cost.h"
#include "logging.h"
#include "manager_state.h"
#include "os/measure_clock.h"
#include "os/resident.h"
#include "plan/plan_io.h"
#include "plan/tag_text.h"
#include "profile/profile_io.h"
#include "profiler.h"
#include "runtime.h"
#include "runtime_state.h"

namespace sentinel::rt::managed {
namespace {

std::string hex(uint64_t v) { return format_tag(v); }

void drain_completions(Manager& m, uint64_t until_ns) {
  Completion c;
  // Only moves that ended by `until_ns` (the time of the event being handled): the executor sees a move
  // end where it ended among the object events.
  while (g_completions.pop_if([until_ns](const Completion& next) { return next.time_ns <= until_ns; }, &c)) {
    m.executor->on_move_done(ObjectRef{c.slot, c.generation}, tier_of_pool(c.to_pool), c.moved, c.refused);
  }
}

void on_alloc(Manager& m, const ObjectEvent& e) {
  drain_completions(m, e.time_ns);
  if (m.relocks != e.relocks) {
    const bool had_structure = m.relocks != ~uint64_t{0};
    m.relocks = e.relocks;
    if (had_structure && m.stage == Stage::kManaged) {
      if (m.reprofile.may_profile_after_structure_change()) {
        drop_plan(m, "the step structure changed");
      } else {
        log_reprofiling_stopped(m);
      }
    }
  }
  const bool new_step = e.step >= 0 && e.step != m.step;
  const bool was_deviated = m.executor->step_deviated();
  const uint64_t late_before = m.executor->stats().late_prefetches;
  m.executor->on_alloc(ObjectRef{e.slot, e.generation}, e.tag, e.extent_bytes, tier_of_pool(e.pool), e.step, e.event,
                       e.period);
  if (m.executor->stats().late_prefetches != late_before) {
    migration_note_late(m.executor->stats().late_prefetches - late_before);
  }
  if (!was_deviated && m.executor->step_deviated() && m.deviations_logged < kDeviationsLogged) {
    ++m.deviations_logged;
    const CompiledPlan* plan = m.executor->plan();
    log_write(LogLevel::kInfo, ("managed mode: step " + std::to_string(e.step) + " left the plan at event " +
                                std::to_string(e.event) + " (period " + std::to_string(e.period) + "; tag " +
                                hex(e.tag) + ", the plan expects " +
                                hex(plan && e.event < plan->period() ? plan->expected_tag(e.event) : 0) +
                                "): first-touch until the step ends")
                                   .c_str());
  }
  if (new_step) {
    // The executor has closed the step before this one: was it followed or did it fall back?
    m.step = e.step;
    const manage::ExecutorStats& st = m.executor->stats();
    const bool left = st.fallback_steps != m.fallbacks_seen, followed = st.managed_steps != m.managed_seen;
    m.fallbacks_seen = st.fallback_steps;
    m.managed_seen = st.managed_steps;
    if (m.stage == Stage::kManaged) {
      using Verdict = manage::ReprofilePolicy::Verdict;
      // A step the executor did not close as managed or fallback (no plan yet at its start) tells nothing.
      switch ((left || followed) ? m.reprofile.step_closed(e.step - 1, !left) : Verdict::kKeep) {
        case Verdict::kDrop: drop_plan(m, "three steps in a row left the plan"); break;
        case Verdict::kStopReprofiling: log_reprofiling_stopped(m); break;
        case Verdict::kKeep: adapt_plan(m); break;
      }
    }
  }
  if (m.stage == Stage::kManaged && m.executor->step_managed()) {
    ++m.managed_phases;
    const uint32_t every = g_state.config.placement_check;
    if (every > 0 && m.managed_phases % every == 0) check_placement(m);
  }
}

void load_inputs(Manager& m) {
  const Config& c = g_state.config;
  std::string error;
  if (c.plan_in[0] != '\0') {
    auto plan = std::make_unique<Plan>();
    if (read_plan_file(c.plan_in, plan.get(), &error)) {
      m.given_plan = std::move(plan);
    } else {
      log_write(LogLevel::kError, ("SENTINEL_PLAN rejected: " + error + "; Sentinel plans itself").c_str());
    }
  }
  if (c.profile_in[0] != '\0') {
    auto profile = std::make_shared<StepProfile>();
    if (read_profile_file(c.profile_in, profile.get(), &error) && take_candidate(m, profile, &error)) {
      m.stage = Stage::kMatchingProfile;
      m.profile_source = "SENTINEL_PROFILE_IN";
      profiler_set_active(false);
    } else {
      log_write(LogLevel::kError, ("SENTINEL_PROFILE_IN rejected: " + error + "; profiling instead").c_str());
    }
  }
  if (g_state.shared_profile[0] != '\0' && !g_state.profile_leader) {
    m.stage = Stage::kWaitingForProfile;
    m.wait_until_ns = now_ns() + uint64_t{c.profile_wait_s} * 1000000000ull;
    profiler_set_active(false);
  }
  if (c.timeline_path[0] != '\0') {
    if (const Status opened = m.timeline_file.open(c.timeline_path); !opened.is_ok()) {
      log_write(LogLevel::kError, ("cannot write SENTINEL_TIMELINE: " + std::string(opened.message())).c_str());
    } else {
      m.timeline = std::make_unique<manage::TimelineWriter>(&m.timeline_file, c.timeline_steps);
      m.timeline->set_clock(now_ns);
    }
  }
  m.executor = std::make_unique<PlanExecutor>(&m.sink, m.timeline.get());
  if (m.timeline) m.timeline->attach(m.executor.get());
}

Manager* create_manager() {
  auto* m = new Manager();
  profiler_set_min_period(kMinPlanPeriod);
  std::string error;
  resolve_memory_system(g_state.config.tier, &m->mem, &error);  // checked in manager_configure
  // The planner charges faults at this machine's cost (fault_cost.h).
  const FaultCost faults = measure_fault_cost();
  if (faults.valid) {
    m->mem.fault_ns_per_byte = faults.ns_per_byte;
  }
  load_inputs(*m);
  return m;
}

}  // namespace

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kWaitingForProfile: return "waiting-for-profile";
    case Stage::kProfiling: return "profiling";
    case Stage::kMatchingProfile: return "matching-profile";
    case Stage::kManaged: return "managed";
  }
  return "?";
}

Manager* g_manager = nullptr;
std::atomic<bool> g_manager_live{false};  // completions are wanted
CompletionRing g_completions;
std::mutex g_manager_mu;

void apply_twin_renames(Manager& m) {
  for (const manage::TwinRename& r : take_twin_renames()) m.executor->retag(r.key, r.tag);
}

}  // namespace sentinel::rt::managed

namespace sentinel::rt {

using namespace managed;

bool manager_configure(bool tiered, char* message, size_t cap) noexcept {
  try {
    MemorySystem mem;
    std::string error;
    if (!resolve_memory_system(g_state.config.tier, &mem, &error)) {
      std::snprintf(message, cap,
                    "sentinel: invalid SENTINEL_TIER='%s': accepted cxl, cxl-2m, optane, optane-2m, dram, or a tier "
                    "file (%s); running as a pass-through allocator",
                    g_state.config.tier, error.c_str());
      return false;
    }
    if (!tiered) {
      log_write(LogLevel::kWarn, "managed mode: a single memory node, nothing to move: running as track mode");
      g_state.config.mode = Mode::kTrack;
      return true;
    }
    // Resident now, not page by page until the ring first wraps (os/resident.h, as the event ring).
    os::make_resident(&g_completions, sizeof g_completions);
    g_manager_live.store(true, std::memory_order_release);
    return true;
  } catch (...) {
    std::snprintf(message, cap, "sentinel: managed mode cannot start (out of memory); running as a pass-through allocator");
    return false;
  }
}

void manager_on_event(const ObjectEvent& e, LiveObjects& live) noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) {
    take_twin_renames();  // (profile mode) no executor to tell
    return;
  }
  try {
    std::lock_guard<std::mutex> lock(g_manager_mu);
    if (g_manager == nullptr) g_manager = create_manager();
    Manager& m = *g_manager;
    apply_twin_renames(m);  // the profiler's, at this event's begin_profile
    if (e.kind == ObjectEventKind::kFree) {
      m.executor->on_free(ObjectRef{e.slot, e.generation});
      return;
    }
    if (e.kind != ObjectEventKind::kAlloc) return;
    if (m.stage == Stage::kMatchingProfile && m.matcher) match_profile(m, e, live);
    on_alloc(m, e);
  } catch (...) {
  }
}

void manager_tick(const LiveObjects&) noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  try {
    std::lock_guard<std::mutex> lock(g_manager_mu);
    if (g_manager == nullptr) g_manager = create_manager();
    Manager& m = *g_manager;
    drain_completions(m, ~uint64_t{0});
    if (m.stage == Stage::kWaitingForProfile) poll_shared_profile(m);
    if (m.stage != Stage::kProfiling) return;
    uint64_t completed = 0;
    std::shared_ptr<const StepProfile> profile = profiler_completed(&completed);
    if (profile == nullptr || completed == m.profiles_taken) return;
    m.profiles_taken = completed;
    m.profile = profile;
    m.profile_source = "own";
    publish_shared_profile(m);
    profiler_set_active(false);  // no sampling while the plan runs; re-armed if the plan is dropped
    plan_and_start(m, "profile complete");
  } catch (...) {
  }
}

bool manager_lets_quiet_events_wait() noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(g_manager_mu);
  const Manager* m = g_manager;
  return m != nullptr && m->stage == Stage::kManaged && m->executor->plan() != nullptr && !m->executor->moves_waiting();
}

void manager_on_move_finished(uint32_t slot, uint32_t generation, uint8_t to_pool, bool moved, bool refused) noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  g_completions.push(Completion{slot, generation, to_pool, moved, refused, os::measure_ns()});  // the events' clock
  wake_service();
}

void manager_at_exit() noexcept {
  if (!g_manager_live.load(std::memory_order_acquire)) return;
  bool last_step_complete;  // read before the manager's lock: never hold the clock's spinlock under it
  {
    SpinGuard clock(g_state.clock_lock);
    last_step_complete = g_state.steps.clock().exit_step_complete();
  }
  try {
    std::lock_guard<std::mutex> lock(g_manager_mu);
    if (g_manager == nullptr) return;
    drain_completions(*g_manager, ~uint64_t{0});
    g_manager->executor->finish(last_step_complete);  // the program's last step counts too, if it was one
    if (g_manager->timeline_file.is_open() && g_manager->plans == 0 && g_state.config.timeline_per_process) {
      g_manager->timeline_file.abandon();
    } else if (g_manager->timeline_file.is_open()) {
      if (const Status committed = g_manager->timeline_file.commit(); !committed.is_ok()) {
        log_write(LogLevel::kError, ("cannot write SENTINEL_TIMELINE: " + std::string(committed.message())).c_str());
      }
    }
  } catch (...) {
  }
}

}  // namespace sentinel::rt
