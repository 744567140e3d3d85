#include "plan/replay_cli.h"

#include <cstdio>
#include <cmath>
#include <cstdlib>

#include "plan/plan_io.h"
#include "plan/replay.h"
#include "plan/synthetic_profile.h"
#include "profile/profile_io.h"

namespace sentinel::cli {
namespace {

constexpr const char* kUsage =
    "usage: sentinel replay PROFILE [--budget 20%|BYTES[K|M|G]] [--tier NAME|FILE] [--json]\n"
    "                       [--sweep] [--write-plan FILE] [--timeline FILE] [--optimal]\n"
    "                       [--time-limit S] [--optimal-max-cells N] [--compute-scale X] [--help]\n"
    "Replays a step profile under every placement policy with a tier model and prints, per policy,\n"
    "the modeled step time, its ratio to all-DRAM, the DRAM peak, bytes migrated per step and late\n"
    "prefetches. Times are MODELED by the cost model (docs/tier-model.md), not measured.\n"
    "  PROFILE          a profile file, or synthetic[:LAYERS] for a built-in DNN training step\n"
    "  --budget B       fast-memory budget: percent of the profile's peak (default 20%) or bytes\n"
    "  --tier T         dram, optane, optane-2m, cxl (default), cxl-2m, cxl-x8, cxl-x8-2m, or a\n"
    "                   key=value / JSON file\n"
    "  --compute-scale X  replay as if compute ran X times faster: phase durations / X; accesses,\n"
    "                   tier and migration bandwidths unchanged (docs/tier-model.md)\n"
    "  --json           print a JSON list of rows instead of a table\n"
    "  --sweep          budgets 5%..100%: sentinel and the best baseline per budget\n"
    "  --write-plan F   also write Sentinel's plan to F (docs/plan-format.md)\n"
    "  --timeline F     also replay the managed steps of an executed timeline (SENTINEL_TIMELINE,\n"
    "                   docs/timeline-format.md) by the same model: what ran next to what was planned\n"
    "  --optimal        add the row 'optimal': the plan a MILP solver (CBC) finds optimal for the\n"
    "                   discretised cost model (docs/planner.md), with its status, bound and gap\n"
    "  --time-limit S   the solver's time limit in seconds (default 10)\n"
    "  --optimal-max-cells N  largest object x phase count given to the solver (default 20000)\n";

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

}  // namespace

int run_replay(const std::vector<std::string>& args, std::string* out, std::string* err) {
  std::string profile_path, tier = "cxl", plan_out, timeline_path;
  bool json = false, sweep = false;
  double compute_scale = 1;
  ReplayOptions options;
  options.planner.budget_fraction = 0.2;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* dst) {
      if (i + 1 >= args.size()) {
        *err = "replay: " + a + " needs a value\n" + kUsage;
        return false;
      }
      *dst = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      *out = kUsage;
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--sweep") {
      sweep = true;
    } else if (a == "--budget") {
      std::string b, e;
      if (!value(&b)) return 2;
      if (!parse_budget(b, &options.planner, &e)) {
        *err = "replay: " + e + "\n";
        return 2;
      }
    } else if (a == "--optimal") {
      options.with_optimal = true;
    } else if (a == "--compute-scale") {
      std::string v;
      if (!value(&v)) return 2;
      char* end = nullptr;
      compute_scale = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(compute_scale >= 0.001) || compute_scale > 1e6) {
        *err = "replay: --compute-scale needs a factor in 0.001..1e6, got '" + v + "'\n";
        return 2;
      }
    } else if (a == "--time-limit" || a == "--optimal-max-cells") {
      std::string v;
      if (!value(&v)) return 2;
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(x > 0) || x > 1e9) {
        *err = "replay: " + a + " needs a positive number, got '" + v + "'\n";
        return 2;
      }
      if (a == "--time-limit") options.optimal.time_limit_s = x;
      else options.optimal.max_cells = static_cast<uint64_t>(x);
    } else if (a == "--tier") {
      if (!value(&tier)) return 2;
    } else if (a == "--write-plan") {
      if (!value(&plan_out)) return 2;
    } else if (a == "--timeline") {
      if (!value(&timeline_path)) return 2;
    } else if (!a.empty() && a[0] == '-') {
      *err = "replay: unknown option '" + a + "'\n" + kUsage;
      return 2;
    } else if (profile_path.empty()) {
      profile_path = a;
    } else {
      *err = "replay: more than one PROFILE given\n" + std::string(kUsage);
      return 2;
    }
  }
  if (profile_path.empty()) {
    *err = std::string("replay: no PROFILE given\n") + kUsage;
    return 2;
  }
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
    if (!plan_sentinel(index, mem, options.planner, &plan, &e) || !write_plan_file(plan_out, plan, &e)) {
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
  *out = json ? format_rows_json(rows)
              : header + "# budget " + std::to_string(resolve_budget(options.planner, index)) + " B\n" +
                    format_rows_table(rows);
  return 0;
}

int replay_main(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::string out, err;
  int rc = run_replay(args, &out, &err);
  if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  if (!err.empty()) std::fwrite(err.data(), 1, err.size(), stderr);
  std::fflush(stdout);
  return rc;
}

}  // namespace sentinel::cli
