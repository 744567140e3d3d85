// Offline replay: every policy (baselines.h) planned for one profile, budget and tier model, replayed
// by the cost model, side by side. Times are modeled (cost_model.h), not measured.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/baselines.h"
#include "plan/optimal_plan.h"
#include "plan/planner.h"
#include "plan/profile_index.h"
#include "plan/tier_model.h"

namespace sentinel {

struct ReplayRow {
  std::string policy;
  double step_ns = 0;           // modeled step time
  double ratio = 0;             // step_ns / all-dram step_ns
  uint64_t budget_bytes = 0;    // the budget the policy was given (all-dram: its own peak)
  uint64_t dram_peak_bytes = 0; // fast-tier peak incl. in-flight copies, over the replayed steps
  uint64_t migrated_bytes = 0;  // per step
  uint32_t late_prefetches = 0; // per step
  uint32_t budget_violations = 0;
  double stall_ns = 0;
  double slow_extra_ns = 0;
  // Modeled traffic per step: accesses (cache lines of access_bytes) served by each tier, and the
  // slow tier's bytes; the figures a measured per-node miss count is set against.
  double slow_accesses = 0;
  double fast_accesses = 0;
  double slow_bytes = 0;
  // The fast pool (cost_model.h), per step: fast births' bytes faulted in, their time, parked bytes
  // dropped for prefetches.
  uint64_t fresh_bytes = 0;
  double fault_ns = 0;
  uint64_t trimmed_bytes = 0;
  bool budget_insufficient = false;
  std::string message;
  // Row "optimal" only (optimal_plan.h): the solver's status ("optimal", "best-found", "too-large",
  // ...), the plan's step time in the discretised model D, the proven lower bound on D's optimum
  // (0: none), the relative gap between the two and the solver's wall time.
  std::string solver_status;
  double discrete_step_ns = 0;
  double solver_bound_ns = 0;
  double solver_gap = 0;
  double solver_seconds = 0;
  double lower_bound_ns = 0;    // the cost model's lower bound for this budget (lower_bound.h)
};

struct ReplayOptions {
  PlannerConfig planner;        // its budget applies to every policy
  ReactiveConfig reactive;
  uint32_t steps = 3;           // steps replayed by the cost model
  bool with_optimal = false;    // add the row "optimal" (the exact reference, optimal_plan.h)
  OptimalConfig optimal;
};

// One row per policy in all_policies() order, then "optimal" when asked for. With plans, also the
// plan behind each row (same order).
bool replay_policies(const ProfileIndex& index, const MemorySystem& mem, const ReplayOptions& options,
                     std::vector<ReplayRow>* rows, std::string* error, std::vector<Plan>* plans = nullptr);

struct SweepPoint {
  double fraction = 0;          // budget / peak
  uint64_t budget_bytes = 0;
  ReplayRow sentinel;
  ReplayRow best_baseline;      // the fastest policy other than sentinel, all-dram and optimal
  bool has_optimal = false;     // options.with_optimal: the exact reference's row at this budget
  ReplayRow optimal;
  double all_dram_ns = 0;
  // (best baseline - sentinel) / (best baseline - all-dram); 1 when there is no gap to close.
  double gap_closed = 1;
};

// Budgets of 5%, 10%, ..., 100% of the profile's peak.
bool sweep_budgets(const ProfileIndex& index, const MemorySystem& mem, const ReplayOptions& options,
                   std::vector<SweepPoint>* points, std::string* error);

// "20%" (of the peak), "123456", "512K", "64M", "2G" (powers of 1024). Sets budget_bytes or
// budget_fraction of *config.
bool parse_budget(const std::string& text, PlannerConfig* config, std::string* error);

// Adds one row per managed step of an executed timeline (SENTINEL_TIMELINE): the step as it ran, replayed by
// the same cost model (timeline.h), named "executed step N" (with "(left the plan)" when it deviated).
bool add_executed_rows(const std::string& timeline_path, const ProfileIndex& index, const MemorySystem& mem,
                       const ReplayOptions& options, std::vector<ReplayRow>* rows, std::string* error);

std::string format_rows_table(const std::vector<ReplayRow>& rows);
std::string format_rows_json(const std::vector<ReplayRow>& rows);
std::string format_sweep_table(const std::vector<SweepPoint>& points);
std::string format_sweep_json(const std::vector<SweepPoint>& points);

}  // namespace sentinel
