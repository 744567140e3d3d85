// The optimistic lower bound (lower_bound.h): hand-computed values, the whole-object bound above
// the split-object one, and the bound below every in-budget policy on random profiles.
#include "plan/lower_bound.h"

#include <gtest/gtest.h>

#include "plan/baselines.h"
#include "plan/cost_model.h"
#include "plan/synthetic_profile.h"
#include "test_profiles.h"

namespace sentinel {
namespace {

using test::make_profile;
using test::object;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPhase = 1'000'000;

TEST(LowerBound, OneOfTwoHotObjectsFits) {
  // Two 1 MiB objects read 100,000 times in phase 0; the budget holds one. On cxl the phase is
  // latency-bound: the slow one costs 100,000 * (170 - 80) / 8 ns.
  StepProfile p = make_profile(2, kPhase, {object(1, kMiB, 0, 1, {0}), object(2, kMiB, 0, 1, {0})});
  ProfileIndex index;
  std::string err;
  ASSERT_TRUE(index.build(p, &err)) << err;
  MemorySystem cxl;
  ASSERT_TRUE(memory_system_preset("cxl", &cxl, nullptr));
  cxl.stream_share = 0;  // the figures below are for a latency-bound tier
  LowerBound lb;
  lower_bound(index, cxl, kMiB, &lb);
  const double one_slow = 100000 * 90.0 / 8;
  EXPECT_NEAR(lb.step_ns, 2 * kPhase + one_slow, 1.0);
  EXPECT_NEAR(lb.fractional_ns, lb.step_ns, 1.0);
  EXPECT_NEAR(lb.phase_extra_ns[0], one_slow, 1.0);
  EXPECT_EQ(lb.phase_extra_ns[1], 0.0);
  // 1.5 MiB: splitting objects would serve half of the second one fast; whole objects cannot.
  lower_bound(index, cxl, kMiB + kMiB / 2, &lb);
  EXPECT_NEAR(lb.fractional_ns, 2 * kPhase + one_slow / 2, 1.0);
  EXPECT_NEAR(lb.step_ns, 2 * kPhase + one_slow, 1.0);
  // Both fit: nothing to pay. Nothing fits: both slow.
  lower_bound(index, cxl, 2 * kMiB, &lb);
  EXPECT_NEAR(lb.step_ns, 2 * kPhase, 1.0);
  lower_bound(index, cxl, kMiB / 2, &lb);
  EXPECT_NEAR(lb.step_ns, 2 * kPhase + 2 * one_slow, 1.0);
}

TEST(LowerBound, MinimumBudgetIsMonotoneAndConsistent) {
  StepProfile p = dnn_training_profile(DnnConfig{});
  ProfileIndex index;
  std::string err;
  ASSERT_TRUE(index.build(p, &err)) << err;
  MemorySystem optane;
  ASSERT_TRUE(memory_system_preset("optane", &optane, nullptr));
  optane.stream_share = 0;
  const uint64_t need3 = min_budget_for_ratio(index, optane, 1.03);
  const uint64_t need10 = min_budget_for_ratio(index, optane, 1.10);
  EXPECT_LE(need10, need3);
  LowerBound lb;
  lower_bound(index, optane, need3, &lb);
  EXPECT_LE(lb.step_ns, 1.03 * static_cast<double>(index.step_ns()) + 1.0);
  if (need3 > index.peak_bytes() / 500) {
    lower_bound(index, optane, need3 - index.peak_bytes() / 500, &lb);
    EXPECT_GT(lb.step_ns, 1.03 * static_cast<double>(index.step_ns()));
  }
}

TEST(LowerBound, NoPolicyWithinBudgetBeatsIt) {
  const char* tiers[] = {"cxl", "optane", "optane-2m"};
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    RandomProfileConfig c;
    c.seed = seed;
    c.objects = 10 + static_cast<uint32_t>(seed % 40);
    c.period = 5 + static_cast<uint32_t>((seed * 11) % 60);
    StepProfile p = random_profile(c);
    ProfileIndex index;
    std::string err;
    ASSERT_TRUE(index.build(p, &err)) << err;
    MemorySystem mem;
    ASSERT_TRUE(memory_system_preset(tiers[seed % 3], &mem, nullptr));
    PlannerConfig cfg;
    cfg.budget_fraction = 0.1 + 0.2 * static_cast<double>(seed % 4);
    LowerBound lb;
    lower_bound(index, mem, resolve_budget(cfg, index), &lb);
    EXPECT_GE(lb.step_ns + 1e-6 * lb.step_ns, lb.fractional_ns) << "seed " << seed;
    EXPECT_GE(lb.fractional_ns, static_cast<double>(index.step_ns())) << "seed " << seed;
    for (Policy pol : all_policies()) {
      if (pol == Policy::kAllDram) continue;
      Plan plan;
      ASSERT_TRUE(make_plan(pol, index, mem, cfg, &plan, &err)) << err;
      SimResult r;
      ASSERT_TRUE(simulate_plan(index, plan, mem, {}, &r, &err)) << err;
      EXPECT_GE(r.step_ns, lb.step_ns - 1e-6 * lb.step_ns) << "seed " << seed << " " << policy_name(pol);
    }
  }
}

}  // namespace
}  // namespace sentinel
