// Managed mode (SENTINEL_MODE=managed) inside the program: the glue between the plan executor
// (src/manage/plan_executor.h) and the runtime.
//
// Stages: the profiler records SENTINEL_PROFILE_STEPS steps after the warm-up (or SENTINEL_PROFILE_IN gives
// a recorded profile, used once the running program's tags match it); the planner plans on the service thread
// for the fast-memory budget and the SENTINEL_TIER model (or SENTINEL_PLAN gives the plan); from the next
// step on, the allocation path births objects on their planned tier (BirthGate) and the executor issues the
// plan's evictions and prefetches through the migration engine, which keeps the budget with every move in
// flight counted on both tiers.
//
// Afterwards: a step with late prefetches gets them planned earlier (at most SENTINEL_REPLAN_ROUNDS
// replans); a step that leaves the plan falls back to first-touch for the rest of that step; a new step
// structure (the detector re-detects) or three fallback steps in a row drop the plan and profile again,
// with a growing wait and a limit for programs whose steps never repeat exactly
// (src/manage/reprofile_policy.h).
//
// Thread safety: manager_configure() at initialisation; manager_on_move_finished() on the migration engine's
// thread (never blocks, never allocates); manager_report() from any thread; the rest on the service thread
// (or at exit, under the dispatcher's lock). One mutex guards all of the manager's state (manager_state.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/event_ring.h"
#include "manage/plan_executor.h"
#include "service.h"

namespace sentinel::rt {

// Checks the managed-mode settings (the tier model); false with a one-line message for a bad value. With a
// single memory node, managed mode says so once and runs as track mode.
bool manager_configure(bool tiered, char* message, size_t cap) noexcept;
void manager_on_event(const ObjectEvent& e, LiveObjects& live) noexcept;
// After each dispatcher pass: move completions, planning when a profile is ready.
void manager_tick(const LiveObjects& live) noexcept;
// Whether allocation events at which the plan in force has nothing to do may reach the executor later (with
// the next event that wakes the service thread): a plan is in force and no move waits for room (a waiting
// move is retried at every event).
bool manager_lets_quiet_events_wait() noexcept;
void manager_on_move_finished(uint32_t slot, uint32_t generation, uint8_t to_pool, bool moved,
                              bool refused = false) noexcept;
void manager_at_exit() noexcept;

struct ManagerReport {
  bool enabled = false;
  std::string stage;  // "off", "profiling", "waiting-for-profile" (a rank waiting for LOCAL_RANK 0's profile), "matching-profile", "managed"
  std::string plan_source;  // "planned", "SENTINEL_PLAN", "" (none yet)
  std::string profile_source;  // of the plan in force: "own", "SENTINEL_PROFILE_IN", "LOCAL_RANK 0" (docs/distributed.md)
  uint64_t plans_from_leader = 0;  // plans made from LOCAL_RANK 0's profile (profile once)
  manage::ExecutorStats executor;  // managed/fallback steps, moves, late prefetches, fidelity
  uint64_t replans = 0;
  uint64_t plans = 0;
  uint64_t reprofiles = 0;
  bool reprofiling_stopped = false;  // the steps left too many plans: no more profiling (reprofile_policy.h)
  uint64_t reprofiles_deferred = 0;  // drops held back until the plan's wait was over
  uint64_t planned_bytes_per_step = 0;
  uint64_t plan_budget_bytes = 0;
  double plan_modeled_step_ns = 0;
  uint64_t completions_dropped = 0;
  uint64_t placement_checked_bytes = 0, placement_matching_bytes = 0;
  int64_t first_managed_step = -1;
  int64_t last_plan_first_step = -1;  // the plan in force at the report's time: from this step on
  double migration_bw_gbps = 0;  // what the plan in force assumes
  double migration_setup_ns = 0; // the same plan's fixed cost per move
  double fault_ns_per_byte = 0;       // what the plans assume recycling a fast page costs (fault_cost.h)
  uint64_t plan_fresh_bytes_per_step = 0;  // the plan in force: fast births' bytes modeled to fault in
};
ManagerReport manager_report() noexcept;

}  // namespace sentinel::rt
