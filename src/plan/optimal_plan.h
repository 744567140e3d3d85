// The exact reference: the placement that minimises the step time of the discretised model D
// (discrete_model.h) within a fast-memory budget, found by a mixed-integer linear programme (milp.h).
//
// Formulation, per object i kept in the programme and per cell t of its lifetime (phase k):
//   h(i,t), f(i,t) in {0,1}   target fast / occupies fast memory; f >= h
//   u(i,t), w(i,t) >= h(i,t) - h(i,t-1), h(i,t-1) - h(i,t)        prefetch / eviction at event k
//   q(k) >= W(k), q(k) >= q(k-1) - d(k-1) + W(k), q(k) <= step    W(k) = sum copy_i (u + w) at k
//   q(k) + margin <= time(k -> next access of i) + step (1 - u)    prefetch complete before its use
//   rho(i,t) >= q(k) + margin - R (1 - w(i,t)), rho(i,t) >= rho(i,t-1) - d(phase of t-1),
//   f(i,t) >= rho(i,t) / R                                         eviction still copying: occupied
//   sum_i size_i f(i,t at k) <= budget                              every phase
//   e(k) >= latency_extra(k, h), e(k) >= bandwidth_extra(k, h), e(k) >= 0
//   minimise sum_k d(k) + e(k)
// Objects without sampled accesses or larger than the budget stay slow and are left out (keeping them
// fast never shortens D's step). A prefetch at a cell whose next use is too close for its copy alone
// is excluded up front. The solver starts from the best D-feasible plan among `starts`, so its
// answer is never worse in D than any of them.
//
// What "optimal" means: optimal for D (proved, or the best found with the solver's proven bound on
// D's optimum). The plan is then replayed by the cost model like every other policy; its modeled
// step is at most its D step (discrete_model.h). The bound is NOT a bound on the cost model's
// optimum (D forbids plans the cost model allows); lower_bound.h is.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/milp.h"
#include "plan/plan.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

struct OptimalConfig {
  double time_limit_s = 10;
  uint64_t max_cells = 20000;  // object-phase cells above which the profile is too large
};

struct OptimalResult {
  bool solved = false;        // a plan was produced (status kOptimal or kFeasible)
  bool too_large = false;
  MilpStatus status = MilpStatus::kError;
  double step_ns = 0;         // D step of the plan (recomputed by evaluate_discrete)
  double bound_ns = 0;        // proven lower bound on D's optimum (0 when the solver has none)
  double gap = 0;             // (step - bound) / step; 0 when proved optimal
  double seconds = 0;         // solver wall time
  double start_step_ns = 0;   // D step of the start plan given to the solver
  std::string start_policy;   // which plan that was
  uint64_t cells = 0, columns = 0, rows = 0;
  std::string solver;
  std::string message;
  Plan plan;                  // policy "optimal"
};

// Returns false only for invalid input (plans that do not fit the profile). A profile above
// max_cells gives too_large with a message and no solve.
bool plan_optimal(const ProfileIndex& index, const MemorySystem& mem, uint64_t budget,
                  const OptimalConfig& config, const std::vector<Plan>& starts, OptimalResult* out,
                  std::string* error);

}  // namespace sentinel
