#include "plan/replay.h"

#include "core/budget_spec.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/cost_model.h"
#include "plan/lower_bound.h"
#include "plan/timeline.h"

namespace sentinel {
namespace {

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(b) / (1024.0 * 1024.0));
  return buf;
}

nlohmann::json row_json(const ReplayRow& r) {
  nlohmann::json j = {{"policy", r.policy},
          {"step_time_ns", r.step_ns},
          {"step_time_ratio", r.ratio},
          {"budget_bytes", r.budget_bytes},
          {"dram_peak_bytes", r.dram_peak_bytes},
          {"migrated_bytes", r.migrated_bytes},
          {"late_prefetches", r.late_prefetches},
          {"fresh_bytes", r.fresh_bytes},
          {"fault_ns", r.fault_ns},
          {"trimmed_bytes", r.trimmed_bytes},
          {"budget_violations", r.budget_violations},
          {"stall_ns", r.stall_ns},
          {"slow_extra_ns", r.slow_extra_ns},
          {"slow_accesses", r.slow_accesses},
          {"fast_accesses", r.fast_accesses},
          {"slow_bytes", r.slow_bytes},
          {"budget_insufficient", r.budget_insufficient},
          {"message", r.message},
          {"modeled", true}};
  if (!r.solver_status.empty()) {
    j["solver_status"] = r.solver_status;
    j["discrete_step_time_ns"] = r.discrete_step_ns;
    j["solver_bound_ns"] = r.solver_bound_ns;
    j["solver_gap"] = r.solver_gap;
    j["solver_seconds"] = r.solver_seconds;
    j["lower_bound_ns"] = r.lower_bound_ns;
  }
  return j;
}

// The replayed plan's figures (SimResult) as a row.
bool simulate_into_row(const ProfileIndex& index, const MemorySystem& mem, const ReplayOptions& options,
                       const Plan& plan, uint64_t budget, ReplayRow* row, std::string* error) {
  SimOptions so;
  so.steps = options.steps;
  so.budget_bytes = budget;
  so.pool_bytes = budget;
  SimResult r;
  if (!simulate_plan(index, plan, mem, so, &r, error)) return false;
  row->step_ns = r.step_ns;
  row->budget_bytes = budget;
  row->dram_peak_bytes = r.dram_peak_bytes;
  row->migrated_bytes = r.migrated_bytes;
  row->late_prefetches = r.late_prefetches;
  row->budget_violations = r.budget_violations;
  row->stall_ns = r.stall_ns;
  row->slow_extra_ns = r.slow_extra_ns;
  row->slow_accesses = r.slow_reads + r.slow_writes;
  row->fast_accesses = r.fast_reads + r.fast_writes;
  row->slow_bytes = row->slow_accesses * mem.access_bytes;
  row->fresh_bytes = r.fresh_bytes;
  row->fault_ns = r.fault_ns;
  row->trimmed_bytes = r.trimmed_bytes;
  return true;
}

bool simulate_row(const ProfileIndex& index, const MemorySystem& mem, const ReplayOptions& options,
                  const Plan& plan, uint64_t budget, ReplayRow* row, std::string* error) {
  if (!simulate_into_row(index, mem, options, plan, budget, row, error)) return false;
  row->budget_insufficient = plan.summary.budget_insufficient;
  row->message = plan.summary.message;
  return true;
}

std::string optimal_message(const OptimalResult& o) {
  char buf[400];
  if (o.too_large) return o.message + "; the row shows the best start plan (" + o.start_policy + ")";
  if (o.status == MilpStatus::kOptimal) {
    std::snprintf(buf, sizeof buf,
                  "proved optimal for the discretised model (docs/planner.md) in %.1f s (%s, %" PRIu64
                  " cells); its step there %.3f ms",
                  o.seconds, o.solver.c_str(), o.cells, o.step_ns / 1e6);
  } else if (o.status == MilpStatus::kFeasible) {
    std::snprintf(buf, sizeof buf,
                  "best found at the time limit (%.1f s, %s, %" PRIu64
                  " cells): step in the discretised model %.3f ms, its optimum >= %.3f ms (gap %.1f%%)",
                  o.seconds, o.solver.c_str(), o.cells, o.step_ns / 1e6, o.bound_ns / 1e6, 100 * o.gap);
  } else {
    return o.message;
  }
  return std::string(buf) + (o.message.empty() ? "" : "; " + o.message);
}

}  // namespace

bool add_executed_rows(const std::string& timeline_path, const ProfileIndex& index, const MemorySystem& mem,
                       const ReplayOptions& options, std::vector<ReplayRow>* rows, std::string* error) {
  ExecutedTimeline timeline;
  if (!read_timeline_file(timeline_path, &timeline, error)) return false;
  double dram_ns = 0;
  for (const ReplayRow& r : *rows)
    if (r.policy == "all-dram") dram_ns = r.step_ns;
  for (const ExecutedStep& step : timeline.steps) {
    Plan plan;
    if (!executed_plan(timeline, step, index, &plan, error)) return false;
    ReplayRow row;
    if (!simulate_into_row(index, mem, options, plan, timeline.budget_bytes, &row, error)) return false;
    row.policy = "executed step " + std::to_string(step.step) + (step.deviated ? " (left the plan)" : "");
    row.ratio = dram_ns > 0 ? row.step_ns / dram_ns : 1.0;
    row.message = std::to_string(step.issued.size()) + " moves issued, " + std::to_string(step.moves_done) +
                  " done, " + std::to_string(step.moves_failed) + " failed in the step";
    rows->push_back(row);
  }
  return true;
}

bool replay_policies(const ProfileIndex& index, const MemorySystem& mem, const ReplayOptions& options,
                     std::vector<ReplayRow>* rows, std::string* error, std::vector<Plan>* plans) {
  rows->clear();
  if (plans != nullptr) plans->clear();
  double dram_ns = 0;
  std::vector<Plan> starts;  // the budgeted policies' plans: start points of the exact reference
  for (Policy p : all_policies()) {
    Plan plan;
    if (!make_plan(p, index, mem, options.planner, &plan, error, options.reactive)) return false;
    ReplayRow row;
    if (!simulate_row(index, mem, options, plan, plan.summary.budget_bytes, &row, error)) return false;
    row.policy = policy_name(p);
    if (plans != nullptr) plans->push_back(plan);
    if (p == Policy::kAllDram) {
      row.budget_violations = 0;
      dram_ns = row.step_ns;
    } else {
      starts.push_back(std::move(plan));
    }
    rows->push_back(row);
  }
  if (options.with_optimal) {
    const uint64_t budget = resolve_budget(options.planner, index);
    OptimalResult opt;
    if (!plan_optimal(index, mem, budget, options.optimal, starts, &opt, error)) return false;
    ReplayRow row;
    if (!simulate_row(index, mem, options, opt.plan, budget, &row, error)) return false;
    row.policy = "optimal";
    row.solver_status = opt.too_large ? "too-large" : milp_status_name(opt.status);
    row.discrete_step_ns = opt.step_ns;
    row.solver_bound_ns = opt.bound_ns;
    row.solver_gap = opt.gap;
    row.solver_seconds = opt.seconds;
    row.message = optimal_message(opt);
    LowerBound lb;
    lower_bound(index, mem, budget, &lb);
    row.lower_bound_ns = lb.step_ns;
    rows->push_back(row);
    if (plans != nullptr) plans->push_back(std::move(opt.plan));
  }
  for (ReplayRow& row : *rows) row.ratio = dram_ns > 0 ? row.step_ns / dram_ns : 1.0;
  return true;
}

bool sweep_budgets(const ProfileIndex& index, const MemorySystem& mem, const ReplayOptions& options,
                   std::vector<SweepPoint>* points, std::string* error) {
  points->clear();
  for (int pct = 5; pct <= 100; pct += 5) {
    ReplayOptions o = options;
    o.planner.budget_bytes = 0;
    o.planner.budget_fraction = pct / 100.0;
    std::vector<ReplayRow> rows;
    if (!replay_policies(index, mem, o, &rows, error)) return false;
    SweepPoint pt;
    pt.fraction = pct / 100.0;
    pt.budget_bytes = resolve_budget(o.planner, index);
    bool have_best = false;
    for (const ReplayRow& r : rows) {
      if (r.policy == "sentinel") pt.sentinel = r;
      else if (r.policy == "all-dram") pt.all_dram_ns = r.step_ns;
      else if (r.policy == "optimal") {
        pt.optimal = r;
        pt.has_optimal = true;
      }
      else if (!have_best || r.step_ns < pt.best_baseline.step_ns) {
        pt.best_baseline = r;
        have_best = true;
      }
    }
    const double gap = pt.best_baseline.step_ns - pt.all_dram_ns;
    pt.gap_closed = gap > 1e-9 ? (pt.best_baseline.step_ns - pt.sentinel.step_ns) / gap : 1.0;
    points->push_back(pt);
  }
  return true;
}

bool parse_budget(const std::string& text, PlannerConfig* config, std::string* error) {
  BudgetSpec spec;
  if (text.empty() || !parse_budget_spec(text.c_str(), &spec)) {
    if (error != nullptr) *error = "bad budget '" + text + "': accepted " + kBudgetGrammar;
    return false;
  }
  config->budget_bytes = spec.kind == BudgetKind::kBytes ? spec.bytes : 0;
  config->budget_fraction = spec.kind == BudgetKind::kPercent ? spec.fraction() : 1.0;
  if (spec.kind == BudgetKind::kBytes && spec.bytes == 0) {
    // "0" is a valid budget of zero bytes: everything slow.
    config->budget_fraction = 0.0;
  }
  return true;
}

std::string format_rows_table(const std::vector<ReplayRow>& rows) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-13s %14s %8s %12s %12s %6s %s\n", "policy", "step_ms", "vs_dram",
                "dram_peak_MiB", "migr_MiB/step", "late", "notes");
  out << line;
  for (const ReplayRow& r : rows) {
    std::string note = r.budget_violations ? "BUDGET EXCEEDED" : (r.budget_insufficient ? "budget insufficient" : "");
    if (!r.solver_status.empty()) {
      char gap[64] = "";
      if (r.solver_status == "best-found") std::snprintf(gap, sizeof gap, " gap %.1f%%", 100 * r.solver_gap);
      note += (note.empty() ? "" : ", ") + r.solver_status + gap;
    }
    std::snprintf(line, sizeof line, "%-13s %14.3f %8.4f %13s %13s %6u %s\n", r.policy.c_str(),
                  r.step_ns / 1e6, r.ratio, mib(r.dram_peak_bytes).c_str(), mib(r.migrated_bytes).c_str(),
                  r.late_prefetches, note.c_str());
    out << line;
  }
  out << "(step times are modeled by the cost model, not measured; see docs/tier-model.md)\n";
  for (const ReplayRow& r : rows)
    if (!r.message.empty()) out << r.policy << ": " << r.message << "\n";
  for (const ReplayRow& r : rows)
    if (r.lower_bound_ns > 0) {
      char lb[160];
      std::snprintf(lb, sizeof lb, "lower bound of any policy within the budget: %.3f ms (%.4f x all-DRAM)\n",
                    r.lower_bound_ns / 1e6, r.step_ns > 0 ? r.lower_bound_ns * r.ratio / r.step_ns : 0.0);
      out << lb;
    }
  return out.str();
}

std::string format_rows_json(const std::vector<ReplayRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const ReplayRow& r : rows) j.push_back(row_json(r));
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string format_sweep_table(const std::vector<SweepPoint>& points) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%6s %12s %12s %14s %12s %10s\n", "budget", "budget_MiB", "sentinel",
                "best_baseline", "its_ratio", "gap_closed");
  out << line;
  for (const SweepPoint& p : points) {
    std::snprintf(line, sizeof line, "%5.0f%% %12s %12.4f %14s %12.4f %9.1f%%\n", p.fraction * 100,
                  mib(p.budget_bytes).c_str(), p.sentinel.ratio, p.best_baseline.policy.c_str(),
                  p.best_baseline.ratio, p.gap_closed * 100);
    out << line;
  }
  out << "(ratios are modeled step time / modeled all-DRAM step time; see docs/tier-model.md)\n";
  return out.str();
}

std::string format_sweep_json(const std::vector<SweepPoint>& points) {
  nlohmann::json j = nlohmann::json::array();
  for (const SweepPoint& p : points) {
    j.push_back({{"budget_fraction", p.fraction},
                 {"budget_bytes", p.budget_bytes},
                 {"sentinel", row_json(p.sentinel)},
                 {"best_baseline", row_json(p.best_baseline)},
                 {"gap_closed", p.gap_closed},
                 {"modeled", true}});
    if (p.has_optimal) j.back()["optimal"] = row_json(p.optimal);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace sentinel
