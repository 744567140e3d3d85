// The report's model: every number `sentinel report` shows, computed from a profile (and, when given, a
// stats file and an executed timeline) with the planner, the baselines and the cost model of src/plan.
// The HTML page (page.h) is drawn from this JSON alone, and the same JSON is embedded in the page and
// written by `--json`, so every number on the page is in the JSON. docs/report.md lists its fields.
//
// Thread safety: build_report_model is reentrant (pure apart from reading the input files).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/optimal_plan.h"
#include "plan/planner.h"

namespace sentinel::report {

enum class OptimalMode { kAuto, kOn, kOff };

struct ReportInputs {
  std::string profile_path;    // required: a profile file (docs/profile-format.md)
  std::string stats_path;      // optional: a SENTINEL_STATS file of a run
  std::string timeline_path;   // optional: a SENTINEL_TIMELINE file (docs/timeline-format.md)
  std::string tier = "cxl";    // tier model name or file (tier_model.h)
  PlannerConfig planner;       // the budget of the plan shown (default 20% of the peak)
  // The exact reference (optimal_plan.h) in the budget sweep and at the budget: kAuto runs it when the
  // profile has at most auto_optimal_cells object x phase cells.
  OptimalMode optimal = OptimalMode::kAuto;
  uint64_t auto_optimal_cells = 8000;
  OptimalConfig optimal_config{1.0, 20000};  // per solve (21 solves: the budget and 20 sweep points)
  uint32_t max_object_rows = 48;  // rows of the object timeline (largest, then hottest, first)
};

// Whether kAuto would run the exact reference on this profile (false when it cannot be read).
bool wants_optimal(const ReportInputs& in);

// Fills *out; false with *error for unreadable or inconsistent inputs.
bool build_report_model(const ReportInputs& in, nlohmann::ordered_json* out, std::string* error);

}  // namespace sentinel::report
