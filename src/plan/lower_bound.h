// An optimistic lower bound on the modeled step time of ANY policy that keeps the fast tier within a
// budget, used to tell "the planner is suboptimal" apart from "the budget is too small".
//
// The bound: in every phase k, whatever the policy, the objects served from fast memory in k are
// resident at the start of k, so their sizes sum to at most the budget. The bound lets an oracle pick
// that set afresh for every phase, for free (no migration time, no stalls, objects may even be split
// fractionally), and takes the smallest extra time the cost model (cost_model.h) can charge:
//
//   extra_lb(k) = min over x in [0,1]^n with sum x_i size_i <= budget of
//                 max(0, latency_extra(k, x), bandwidth_extra(k, x))
//
// (x_i = fraction of object i served fast; objects larger than the budget are never fast). This is a
// linear programme; it is solved exactly through its dual, max over lambda in [0,1] of a fractional
// knapsack on the lambda-mixed cost (concave in lambda, ternary search): `fractional_ns`.
// The cost model moves whole objects, so x_i in {0,1}; the Lagrangian dual of that problem (max over
// lambda of a 0/1 knapsack, solved by dynamic programming over 64 KiB capacity units with sizes
// rounded down) is a tighter bound that is still valid: `step_ns`.
// step_lb = sum of measured durations + sum extra_lb(k) <= the modeled step of every policy that
// stays within the budget. It ignores migration time, stalls and the phases an object must already
// be resident before and after its use, so real optima are higher.
//
// min_budget_bytes(target) is the smallest budget at which this bound does not rule out a modeled
// step within `target` x all-DRAM (bisection on the budget; the bound is monotone in the budget).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

struct LowerBound {
  double step_ns = 0;                  // sum of durations + sum of phase_extra_ns (whole objects)
  double fractional_ns = 0;            // the weaker bound that lets objects be split (the LP)
  std::vector<double> phase_extra_ns;  // per phase: the least extra time any in-budget policy pays
};

void lower_bound(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget, LowerBound* out);

// Smallest budget (bytes, within 0.1 % of the peak) at which lower_bound's step is <= target_ratio x
// the all-DRAM step; the profile's peak when even that is not enough.
uint64_t min_budget_for_ratio(const ProfileIndex& index, const MemorySystem& mem, double target_ratio);

}  // namespace sentinel
