// Internal to the planner: the last pass over a finished plan, against migration stalls that the
// planner's channel estimate did not foresee (the real channel is FIFO: a large prefetch issued
// earlier delays a small urgent one behind it). For the prefetches that stall most it tries, on the
// cost model with the planner's tier model, (1) to keep the object fast through the gap before the
// prefetch (cancel that eviction and the prefetch: no copy at all) when the budget allows, and (2)
// to drop the window (its uses become slow), and keeps whichever makes the modeled step shortest,
// only if it is shorter than before. Each accepted change is checked against the budget at measured
// durations (check_plan_budget), so the plan stays within budget.
//
// Thread safety: pure function of its arguments.
#pragma once

#include <cstdint>

#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel::plan_detail {

struct StallRepairStats {
  uint32_t merged = 0;   // evict/prefetch pairs cancelled
  uint32_t dropped = 0;  // windows dropped
};

// At most max_attempts stalled prefetches are examined (each costs up to three replays).
void repair_stalls(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                   uint32_t sim_steps, uint32_t max_attempts, Plan* plan, StallRepairStats* stats);

}  // namespace sentinel::plan_detail
