// Properties over a few hundred seeded random profiles and every policy:
//  - no policy but all-dram exceeds the budget at any event (cost model with every penalty, so in
//    flight copies are counted at modeled speed; and at measured speed via check_plan_budget);
//  - sentinel is never slower than all-slow; all-dram is never slower than any policy.
#include <gtest/gtest.h>

#include "plan/baselines.h"
#include "plan/budget_repair.h"
#include "plan/cost_model.h"
#include "plan/synthetic_profile.h"

namespace sentinel {
namespace {

struct Outcome {
  double step_ns = 0;
  uint32_t violations = 0;
};

void check_profile(const StepProfile& prof, const char* tier, double fraction, const std::string& label) {
  ProfileIndex index;
  std::string err;
  ASSERT_TRUE(index.build(prof, &err)) << label << ": " << err;
  MemorySystem mem;
  ASSERT_TRUE(memory_system_preset(tier, &mem, nullptr));
  PlannerConfig cfg;
  cfg.budget_fraction = fraction;
  const uint64_t budget = resolve_budget(cfg, index);
  std::map<std::string, Outcome> out;
  for (Policy pol : all_policies()) {
    Plan plan;
    ASSERT_TRUE(make_plan(pol, index, mem, cfg, &plan, &err)) << label << " " << policy_name(pol) << ": " << err;
    SimOptions opt;
    opt.budget_bytes = budget;
    SimResult r;
    ASSERT_TRUE(simulate_plan(index, plan, mem, opt, &r, &err)) << err;
    out[policy_name(pol)] = {r.step_ns, r.budget_violations};
    if (pol != Policy::kAllDram) {
      EXPECT_EQ(r.budget_violations, 0u) << label << " " << policy_name(pol) << " budget " << budget
                                         << " peak " << r.dram_peak_bytes;
      EXPECT_LE(r.dram_peak_bytes, budget) << label << " " << policy_name(pol);
      EXPECT_EQ(check_plan_budget(index, plan, mem, budget, nullptr), 0u) << label << " " << policy_name(pol);
      EXPECT_LE(plan.summary.expected_dram_peak_bytes, budget) << label << " " << policy_name(pol);
    }
  }
  const double tol = 1e-6 * out["all-dram"].step_ns;
  EXPECT_LE(out["sentinel"].step_ns, out["all-slow"].step_ns + tol) << label;
  for (const auto& [name, o] : out) EXPECT_LE(out["all-dram"].step_ns, o.step_ns + tol) << label << " " << name;
}

TEST(PlanProperties, RandomProfilesAllPolicies) {
  const char* tiers[] = {"cxl", "optane", "cxl-2m"};
  const double fractions[] = {0.05, 0.2, 0.5, 0.9};
  for (uint64_t seed = 1; seed <= 240; ++seed) {
    RandomProfileConfig c;
    c.seed = seed;
    c.objects = 10 + static_cast<uint32_t>(seed % 50);
    c.period = 5 + static_cast<uint32_t>((seed * 7) % 80);
    c.max_size = (seed % 3 == 0) ? (256ull << 20) : (16ull << 20);  // some very large objects
    StepProfile p = random_profile(c);
    check_profile(p, tiers[seed % 3], fractions[seed % 4], "seed " + std::to_string(seed));
    if (HasFatalFailure()) return;
  }
}

TEST(PlanProperties, TinyPeriodsAndEmptyProfiles) {
  for (uint32_t period : {1u, 2u, 3u}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      RandomProfileConfig c;
      c.seed = seed;
      c.period = period;
      c.objects = static_cast<uint32_t>(seed % 6);  // includes profiles without objects
      check_profile(random_profile(c), "optane", 0.3, "period " + std::to_string(period));
    }
  }
}

TEST(PlanProperties, SyntheticDnnAtManyBudgets) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    DnnConfig c;
    c.layers = 4 + static_cast<uint32_t>(seed);
    c.width = 512;
    c.batch = 1024;
    c.jitter = 0.2;
    c.seed = seed;
    StepProfile p = dnn_training_profile(c);
    for (double f : {0.05, 0.1, 0.2, 0.4, 0.8})
      check_profile(p, seed % 2 ? "optane" : "cxl", f, "dnn seed " + std::to_string(seed));
  }
}

TEST(PlanProperties, SentinelCloseToDramOnTheSyntheticDnnAt20Percent) {
  // Regression guard for the planner's quality on the default synthetic profile (modeled).
  StepProfile p = dnn_training_profile(DnnConfig{});
  ProfileIndex index;
  std::string err;
  ASSERT_TRUE(index.build(p, &err));
  // Latency-bound (stream_share 0, as the guard was set) the gap to close is 4-25%; with the presets'
  // streamed share it is 1.6% (cxl) and 4.1% (optane) and Sentinel must still be the fastest.
  for (const bool streamed : {false, true})
  for (const char* tier : {"cxl", "optane"}) {
    MemorySystem mem;
    ASSERT_TRUE(memory_system_preset(tier, &mem, nullptr));
    if (!streamed) mem.stream_share = 0;
    PlannerConfig cfg;
    cfg.budget_fraction = 0.2;
    double best_baseline = 1e300, sentinel = 0;
    for (Policy pol : all_policies()) {
      Plan plan;
      ASSERT_TRUE(make_plan(pol, index, mem, cfg, &plan, &err));
      SimResult r;
      ASSERT_TRUE(simulate_plan(index, plan, mem, {}, &r, &err));
      if (pol == Policy::kSentinel) sentinel = r.step_ns;
      else if (pol != Policy::kAllDram) best_baseline = std::min(best_baseline, r.step_ns);
    }
    const double dram = static_cast<double>(index.step_ns());
    EXPECT_LT(sentinel / dram, std::string(tier) == "cxl" ? 1.03 : 1.05) << tier;
    const std::string what = std::string(tier) + (streamed ? " streamed" : "") + ": sentinel " +
                             std::to_string(sentinel / dram) + "x, best baseline " +
                             std::to_string(best_baseline / dram) + "x";
    if (!streamed) EXPECT_GT((best_baseline - sentinel) / (best_baseline - dram), 0.7) << what;
    EXPECT_LE(sentinel, best_baseline) << what;
  }
}

}  // namespace
}  // namespace sentinel
