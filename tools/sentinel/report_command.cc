// `sentinel report INPUT... -o report.html`: the HTML report (src/report) of a profile, and of a run's
// stats file and executed timeline when given. docs/report.md.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/stats_keys.h"
#include "plan/replay.h"
#include "report/input_kind.h"
#include "report/page.h"
#include "report/report_model.h"

namespace sentinel::cli {
namespace {

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  return static_cast<bool>(f);
}

}  // namespace

void add_report_command(CLI::App& app, int* rc) {
  struct Options {
    std::vector<std::string> inputs;
    std::string output = "sentinel-report.html", json_out, budget = "20%", tier = "cxl";
    bool optimal = false, no_optimal = false;
    double time_limit = 1;
    uint32_t rows = 48;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("report", "write an HTML report of a profile, a run and its replay");
  cmd->footer(
      "Writes one self-contained HTML file (inline CSS and SVG, no network) from a profile and, when given,\n"
      "a run's stats file (SENTINEL_STATS) and executed timeline (SENTINEL_TIMELINE): what was profiled,\n"
      "the plan's promise, what happened, DRAM over the step per policy with the budget, where each object\n"
      "lives in every phase, migration traffic per phase and the budget sweep. Step times are MODELED by\n"
      "the cost model (docs/tier-model.md), not measured. See docs/report.md.");
  cmd->add_option("INPUT", o->inputs, "a profile, and optionally a stats file and an executed timeline, "
                                      "in any order (told apart by their contents)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output, "the HTML file to write")->capture_default_str();
  cmd->add_option("--json", o->json_out, "also write every number of the report as JSON to this file");
  cmd->add_option("--budget", o->budget, "fast-memory budget: percent of the profile's peak or bytes")
      ->capture_default_str();
  CLI::Option* tier_option =
      cmd->add_option("--tier", o->tier, "tier model: dram, optane, cxl, cxl-x8, ... or a file (default: the tier the "
                                         "run planned for, from its stats file; else cxl)");
  CLI::Option* optimal =
      cmd->add_flag("--optimal", o->optimal, "always add the optimal plan (MILP) to the budget sweep");
  cmd->add_flag("--no-optimal", o->no_optimal, "never run the MILP (default: only for small profiles)")
      ->excludes(optimal);
  cmd->add_option("--time-limit", o->time_limit, "the MILP's time limit per budget, seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--rows", o->rows, "objects shown in the per-object timeline")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->callback([o, rc, tier_option] {
    report::ReportInputs in;
    for (const std::string& path : o->inputs) {
      report::InputKind kind;
      std::string e;
      if (!report::detect_input_kind(path, &kind, &e)) {
        std::fprintf(stderr, "sentinel report: %s\n", e.c_str());
        *rc = 1;
        return;
      }
      std::string* slot = kind == report::InputKind::kProfile ? &in.profile_path
                           : kind == report::InputKind::kStats ? &in.stats_path
                                                                : &in.timeline_path;
      if (!slot->empty()) {
        std::fprintf(stderr, "sentinel report: two %s files given (%s, %s)\n", report::input_kind_name(kind),
                     slot->c_str(), path.c_str());
        *rc = 2;
        return;
      }
      *slot = path;
    }
    if (in.profile_path.empty()) {
      std::fprintf(stderr, "sentinel report: no profile among the inputs (the report is drawn from one)\n");
      *rc = 2;
      return;
    }
    std::string e;
    if (!parse_budget(o->budget, &in.planner, &e)) {
      std::fprintf(stderr, "sentinel report: %s\n", e.c_str());
      *rc = 2;
      return;
    }
    in.tier = o->tier;
    if (tier_option->count() == 0 && !in.stats_path.empty()) {
      // A managed run's stats name the tier model its plans were made for: replay with the same one.
      std::ifstream stats(in.stats_path);
      const nlohmann::json j = nlohmann::json::parse(stats, nullptr, false);
      if (j.is_object() && j.contains(stats_key::kTier) && j[stats_key::kTier].is_string() &&
          !j[stats_key::kTier].get<std::string>().empty()) {
        in.tier = j[stats_key::kTier].get<std::string>();
        std::fprintf(stderr, "sentinel report: tier model %s, which the run planned for (--tier to choose another)\n",
                     in.tier.c_str());
      }
    }
    in.optimal = o->no_optimal ? report::OptimalMode::kOff
                 : o->optimal  ? report::OptimalMode::kOn
                               : report::OptimalMode::kAuto;
    in.optimal_config.time_limit_s = o->time_limit;
    in.max_object_rows = o->rows;
    nlohmann::ordered_json model;
    if (in.optimal == report::OptimalMode::kOn ||
        (in.optimal == report::OptimalMode::kAuto && report::wants_optimal(in)))
      std::fprintf(stderr, "sentinel report: solving the exact reference (MILP) at 21 budgets, up to %g s each "
                           "(--no-optimal skips it)\n", in.optimal_config.time_limit_s);
    if (!report::build_report_model(in, &model, &e)) {
      std::fprintf(stderr, "sentinel report: %s\n", e.c_str());
      *rc = 1;
      return;
    }
    if (!write_text(o->output, report::render_report_html(model, SENTINEL_VERSION))) {
      std::fprintf(stderr, "sentinel report: cannot write %s\n", o->output.c_str());
      *rc = 1;
      return;
    }
    if (!o->json_out.empty() && !write_text(o->json_out, model.dump(1) + "\n")) {
      std::fprintf(stderr, "sentinel report: cannot write %s\n", o->json_out.c_str());
      *rc = 1;
      return;
    }
    std::fprintf(stderr, "sentinel report: wrote %s\n", o->output.c_str());
    *rc = 0;
  });
}

}  // namespace sentinel::cli
