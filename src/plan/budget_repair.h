// Tools that work on any Plan: its fast-memory intervals, normalisation of cyclic schedules, the
// budget check and the budget repair used by the Sentinel planner and by the reactive baseline, and
// moving an object's prefetches earlier (the runtime's "a late prefetch moves earlier next step").
//
// A fast interval is a stretch of an object's lifetime during which the plan wants it in fast memory:
// from its birth on the fast tier or a prefetch, to the eviction that ends it (plus the phases the
// eviction copy keeps fast memory busy) or to the object's death. Dropping an interval removes its
// prefetch and its eviction (and makes the birth slow when it starts at birth); that never raises the
// residency at any event (fewer jobs on a FIFO channel only make the others finish sooner), which is
// why enforce_budget terminates with a plan within budget.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/cost_model.h"
#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

struct FastInterval {
  uint32_t obj = 0;
  int64_t start_move = -1;  // flattened move index of the prefetch; -1: starts at birth
  int64_t end_move = -1;    // flattened index of the ending eviction; -1: lasts to death / forever
  bool from_birth = false;  // dropping it makes the birth tier slow
  uint32_t start_phase = 0; // absolute phase where the occupancy starts
  uint32_t cover = 1;       // phases of occupancy (incl. the eviction copy), 1..period
  double value = 0;         // modeled ns saved per step by serving its accesses from fast memory
};

// Intervals of every object. `busy` is SimResult::move_busy_phases (may be empty: 1 phase each).
std::vector<FastInterval> fast_intervals(const ProfileIndex& index, const Plan& plan,
                                         const MemorySystem& mem, const std::vector<uint32_t>& busy);

// Drops moves at events where the object is dead and makes every persistent object's birth tier equal
// to its tier at the end of the step, so that the schedule repeats step after step.
void normalize_plan(const ProfileIndex& index, Plan* plan);

// Fast-memory residency check at measured phase durations (the worst case, see cost_model.h).
// Returns the number of (step, phase) pairs above budget; *peak gets the peak residency.
uint32_t check_plan_budget(const ProfileIndex& index, const Plan& plan, const MemorySystem& mem,
                           uint64_t budget, uint64_t* peak);

struct RepairStats {
  uint32_t rounds = 0;
  uint32_t dropped_intervals = 0;
  bool fell_back_to_all_slow = false;
};

// Drops the intervals of least value per byte at every event above budget until none is. Always
// succeeds for a plan that matches the profile (the all-slow plan has residency 0); returns false
// only when the plan does not match the profile.
bool enforce_budget(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, Plan* plan,
                    RepairStats* stats, std::string* error);

// Removes the given intervals (as returned by fast_intervals for this plan) from the plan.
void drop_intervals(const ProfileIndex& index, const std::vector<FastInterval>& drop, Plan* plan);

// Moves every prefetch of `tag` up to `phases` events earlier, never before the object's previous
// move; a prefetch pushed back to the object's birth becomes a birth on the fast tier. Returns the
// number of prefetches changed, or -1 with *error set (unknown tag, no prefetch). The budget is not
// re-checked: call check_plan_budget / enforce_budget, or re-plan with
// PlannerConfig::extra_lookahead_phases[tag] raised, which does both.
int advance_prefetch(const ProfileIndex& index, uint64_t tag, uint32_t phases, Plan* plan,
                     std::string* error);

}  // namespace sentinel
