// The discretised placement model D that the exact reference (optimal_plan.h) optimises, and an
// evaluator that scores any Plan in it. D is the cost model (cost_model.h) restricted and made
// conservative so that it is linear in 0/1 decisions per (object, phase):
//
//  - State: h(i,k) = 1 when object i's target tier in phase k is fast (after the moves of event k).
//    A change of h at event k is a migration issued at event k: a prefetch (0 -> 1) or an eviction
//    (1 -> 0). A non-persistent object is born on its tier (no migration at its birth event); a
//    persistent object's state is periodic (the tier at the end of the step is the one at its start).
//  - Channel: one FIFO at migration_bw with the measured phase durations; at every event the
//    prefetches go first, then the evictions. qpre(k) = work left on the channel right after event
//    k's prefetches = max(Wpre(k), q(k-1) - d(k-1) + Wpre(k)); q(k) = qpre(k) + Wev(k) after its
//    evictions (W: copy times of the moves of that kind), periodic over the step; q(k) <= the
//    measured step time.
//  - Every prefetch is complete before the object's next access: qpre(k) + margin <= time from
//    event k to that phase (conservative: as if it were the last prefetch of its event). So D has
//    no stalls.
//  - Occupancy: an object counts against the budget in phase m when h(i,m) = 1 or an eviction of it
//    issued at event k is still copying at event m: q(k) + margin > time from event k to event m
//    (again as if last in its event). Sum of sizes <= budget in every phase.
//  - Time: sum over phases of d(k) + max(0, latency_extra(k), bandwidth_extra(k)) with the cost
//    model's formulas, where the accesses of objects with h = 0 are slow (an eviction still copying
//    counts as slow, the cost model serves it fast).
//
// Every D-feasible plan replayed by the cost model is within budget, has no late prefetch, and its
// modeled step time is at most its D time (longer phases only make copies finish at earlier events:
// the monotonicity note in cost_model.h). The converse does not hold: the cost model admits plans D
// rejects (late prefetches that stall, moves at a birth event, several moves of one object in one
// event), so D's optimum bounds nothing about the cost model's optimum; lower_bound.h does that.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

// Safety margin of the timing conditions, ns: covers floating-point slack in the solver and makes
// "completes exactly at the event" count as not yet complete.
double discrete_margin_ns(const ProfileIndex& index);

// Cells of an object: its lifetime phases in order, cell t = phase (birth + t) % period; a persistent
// object has `period` cells starting at phase 0, and cell 0 follows cell period-1.
uint32_t discrete_cells(const ProfileIndex& index, const ObjectView& o);

struct DiscreteState {
  // Per object, per cell: target fast (h) and occupying fast memory (f).
  std::vector<std::vector<uint8_t>> h, f;
};

struct DiscreteEval {
  bool feasible = false;
  std::string why;        // when not feasible: the first violated condition
  double step_ns = 0;     // D time of the plan (feasible or not)
  uint64_t peak_bytes = 0;
  DiscreteState state;
  // Violations that make_discrete_feasible repairs: prefetches (object, cell) that complete after
  // the next use, and phases with residency above the budget.
  std::vector<std::pair<uint32_t, uint32_t>> late;
  std::vector<uint32_t> over_budget_phases;
};

// Scores a plan in D. Returns false (with *error) only when the plan does not fit the profile.
bool evaluate_discrete(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, const Plan& plan,
                       DiscreteEval* out, std::string* error);

// A D-feasible state near the plan's: its D state with migrations at birth events folded into the
// birth tier and net-zero moves removed, then, while infeasible, the fast run of the object whose
// prefetch is late (or of the largest object occupying the phase over budget) dropped; all-slow at
// worst. Dropping a run removes work from the channel and occupancy, so the loop ends.
bool make_discrete_feasible(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                            const Plan& plan, DiscreteEval* out, std::string* error);

// The plan whose D state is `h`: birth tiers, and at every event the prefetches (most urgent first)
// followed by the evictions.
Plan plan_from_discrete(const ProfileIndex& index, const std::vector<std::vector<uint8_t>>& h,
                        const std::string& policy);

// Time from the event of cell t to the start of cell t2 >= t of the same object, ns.
uint64_t cell_time(const ProfileIndex& index, const ObjectView& o, uint32_t t, uint32_t t2);
// The first accessed cell at or after cell t (persistent objects: wrapping, at most t + period - 1,
// returned unwrapped), or -1.
int64_t next_access_cell(const ProfileIndex& index, const ObjectView& o, uint32_t t);

}  // namespace sentinel
