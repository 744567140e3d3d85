// `sentinel replay PROFILE`: replays a step profile under every placement policy with a tier model and
// prints one row per policy (or the budget sweep); times are modeled. PROFILE is a profile file
// (docs/profile-format.md) or "synthetic[:LAYERS]" for the built-in synthetic DNN training step.
// Exit status: 0 success, 1 failure (unreadable profile, bad tier file), 2 usage error.
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "commands.h"

#include "plan/lower_bound.h"
#include "plan/plan_io.h"
#include "plan/replay.h"
#include "plan/synthetic_profile.h"
#include "profile/profile_io.h"

namespace sentinel::cli {
namespace {

// What `sentinel replay` was asked for.
struct ReplayRequest {
  std::string profile, tier = "cxl", plan_out, plan_policy = "sentinel", timeline;
  bool json = false, sweep = false;
  double compute_scale = 1;
  ReplayOptions options;
};

bool load_profile(const std::string& spec, StepProfile* p, std::string* err) {
  const std::string prefix = "synthetic";
  if (spec.rfind(prefix, 0) == 0 && (spec.size() == prefix.size() || spec[prefix.size()] == ':')) {
    DnnConfig c;
    if (spec.size() > prefix.size()) {
      std::string n = spec.substr(prefix.size() + 1);
      if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(n) == 0) {
        *err = "synthetic:LAYERS needs a layer count of 1..9999";
        return false;
      }
      c.layers = static_cast<uint32_t>(std::stoul(n));
    }
    *p = dnn_training_profile(c);
    return true;
  }
  return read_profile_file(spec, p, err);
}

// Compute X times faster: every phase (and the step) lasts 1/X as long; the accesses, and so the
// memory traffic, stay as they are.
void scale_compute(StepProfile* p, double x) {
  for (PhaseProfile& ph : p->phases)
    ph.duration_ns = static_cast<uint64_t>(std::llround(static_cast<double>(ph.duration_ns) / x));
  p->step_time_ns = static_cast<uint64_t>(std::llround(static_cast<double>(p->step_time_ns) / x));
}

int run_replay(const ReplayRequest& request, std::string* out, std::string* err) {
  const std::string& profile_path = request.profile;
  const std::string& tier = request.tier;
  const std::string& plan_out = request.plan_out;
  const std::string& timeline_path = request.timeline;
  const bool json = request.json, sweep = request.sweep;
  const double compute_scale = request.compute_scale;
  const ReplayOptions& options = request.options;
  MemorySystem mem;
  std::string e;
  if (!resolve_memory_system(tier, &mem, &e)) {
    *err = "replay: " + e + "\n";
    return 1;
  }
  StepProfile profile;
  if (!load_profile(profile_path, &profile, &e)) {
    *err = "replay: " + e + "\n";
    return 1;
  }
  if (compute_scale != 1) scale_compute(&profile, compute_scale);
  ProfileIndex index;
  if (!index.build(profile, &e)) {
    *err = "replay: " + e + "\n";
    return 1;
  }
  std::string header = "# profile " + profile_path + ": " + std::to_string(index.objects().size()) +
                       " objects, period " + std::to_string(index.period()) + ", peak " +
                       std::to_string(index.peak_bytes()) + " B, measured step " +
                       std::to_string(index.step_ns() / 1000) + " us\n# tier " +
                       describe_memory_system(mem) + "\n";
  if (compute_scale != 1) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "# compute %gx faster: measured phase durations / %g, memory traffic and bandwidths unchanged\n",
                  compute_scale, compute_scale);
    header += line;
  }
  if (!plan_out.empty()) {
    Plan plan;
    Policy policy = Policy::kSentinel;
    if (!parse_policy(request.plan_policy, &policy)) {
      *err = "replay: --plan-policy: unknown policy '" + request.plan_policy + "'\n";
      return 2;
    }
    if (!make_plan(policy, index, mem, options.planner, &plan, &e, options.reactive) ||
        !write_plan_file(plan_out, plan, &e)) {
      *err = "replay: " + e + "\n";
      return 1;
    }
  }
  if (sweep) {
    std::vector<SweepPoint> points;
    if (!sweep_budgets(index, mem, options, &points, &e)) {
      *err = "replay: " + e + "\n";
      return 1;
    }
    *out = json ? format_sweep_json(points) : header + format_sweep_table(points);
    return 0;
  }
  std::vector<ReplayRow> rows;
  if (!replay_policies(index, mem, options, &rows, &e)) {
    *err = "replay: " + e + "\n";
    return 1;
  }
  if (!timeline_path.empty() && !add_executed_rows(timeline_path, index, mem, options, &rows, &e)) {
    *err = "replay: " + e + "\n";
    return 1;
  }
  // The least modeled step any policy within the budget can have (lower_bound.h): the results matrix
  // reads every cell against it.
  const uint64_t budget = resolve_budget(options.planner, index);
  LowerBound lb;
  lower_bound(index, mem, budget, &lb);
  char bound[160];
  std::snprintf(bound, sizeof bound, "# lower bound at this budget: %.3f ms (%.4fx all-dram)\n", lb.step_ns / 1e6,
                lb.step_ns / static_cast<double>(index.step_ns()));
  *out = json ? format_rows_json(rows)
              : header + "# budget " + std::to_string(budget) + " B\n" + bound + format_rows_table(rows);
  return 0;
}

}  // namespace

void add_replay_command(CLI::App& app, int* rc) {
  auto r = std::make_shared<ReplayRequest>();
  r->options.planner.budget_fraction = 0.2;
  CLI::App* cmd = app.add_subcommand("replay", "model a recorded profile under every placement policy");
  cmd->add_option("PROFILE", r->profile, "a profile file, or synthetic[:LAYERS] for a built-in DNN training step")
      ->required();
  cmd->add_option_function<std::string>(
         "--budget",
         [r](const std::string& b) {
           std::string e;
           if (!parse_budget(b, &r->options.planner, &e)) throw CLI::ValidationError("--budget", e);
         },
         "fast-memory budget: percent of the profile's peak (default 20%) or bytes")
      ->type_name("B");
  cmd->add_option("--tier", r->tier,
                  "dram, optane, optane-2m, cxl (default), cxl-2m, cxl-x8, cxl-x8-2m, or a key=value / JSON file")
      ->type_name("T");
  cmd->add_option("--compute-scale", r->compute_scale,
                  "replay as if compute ran X times faster: phase durations / X; accesses, tier and migration "
                  "bandwidths unchanged (docs/tier-model.md)")
      ->type_name("X")
      ->check(CLI::Range(0.001, 1e6));
  cmd->add_flag("--json", r->json, "print JSON (the rows, or the sweep's points) instead of a table");
  cmd->add_flag("--sweep", r->sweep, "budgets 5%..100%: sentinel and the best baseline per budget");
  cmd->add_option("--write-plan", r->plan_out, "also write Sentinel's plan to F (docs/plan-format.md)")->type_name("F");
  cmd->add_option("--plan-policy", r->plan_policy,
                  "the policy whose plan --write-plan writes (default sentinel; e.g. static-best: Sentinel's best "
                  "static placement, to run with SENTINEL_PLAN)")
      ->type_name("P");
  cmd->add_option("--timeline", r->timeline,
                  "also replay the managed steps of an executed timeline (SENTINEL_TIMELINE, "
                  "docs/timeline-format.md) by the same model: what ran next to what was planned")
      ->type_name("F");
  cmd->add_flag("--optimal", r->options.with_optimal,
                "add the row 'optimal': the plan a MILP solver (CBC) finds optimal for the discretised cost "
                "model (docs/planner.md), with its status, bound and gap");
  cmd->add_option("--time-limit", r->options.optimal.time_limit_s, "the solver's time limit in seconds (default 10)")
      ->type_name("S")
      ->check(CLI::Range(1e-9, 1e9));
  cmd->add_option("--optimal-max-cells", r->options.optimal.max_cells,
                  "largest object x phase count given to the solver (default 20000)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000000}));
  cmd->footer("Replays a step profile under every placement policy with a tier model and prints, per policy,\n"
              "the modeled step time, its ratio to all-DRAM, the DRAM peak, bytes migrated per step and late\n"
              "prefetches. Times are MODELED by the cost model (docs/tier-model.md), not measured.");
  cmd->callback([r, rc] {
    std::string out, err;
    *rc = run_replay(*r, &out, &err);
    write_command_output(out, err);
  });
}

}  // namespace sentinel::cli
