// The planner's fault repair (plan/fault_repair.h) on hand-built profiles: a fast birth whose size class
// finds no parked extent faults its pages in every step; where that costs more than its accesses would cost
// slow, the birth goes slow, and only then.
#include <gtest/gtest.h>

#include "plan/cost_model.h"
#include "plan/planner.h"
#include "plan_env.h"
#include "test_profiles.h"

namespace sentinel {
namespace {

using test::make_profile;
using test::object;
using test::persistent;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPhase = 1'000'000;

// Object 1 (1 MiB) lives in phases 1-6, object 2 (3 MiB) in 8-14; a 3.5 MiB budget holds either with the
// other's extent parked only if they fit together, which they do not: each birth drops the other's parked
// extent for room and faults its own pages in, 4 MiB a step (0.7 ns a byte: 2.9 ms). Object 1 is read
// lightly (100 reads in each of two phases: 2.2 us slow on cxl), object 2 heavily (`heavy_reads`). Object 3,
// 8 MiB and cold, stays slow; it makes the budget a budget (a pool that holds the step's peak charges nothing).
test::PlanEnv churn_env(uint64_t reads_1, uint64_t reads_2) {
  test::PlanEnv env(make_profile(20, kPhase, {object(1, kMiB, 1, 6, {1, 6}, reads_1),
                                              object(2, 3 * kMiB, 8, 14, {8, 14}, reads_2),
                                              persistent(3, 8 * kMiB, 20, {10}, 1)}));
  env.mem.fault_ns_per_byte = 0.7;
  return env;
}

constexpr uint64_t kBudget = 3 * kMiB + kMiB / 2;

TEST(FaultRepair, WithoutItBothBirthsFaultEveryStep) {
  const test::PlanEnv env = churn_env(100, 1'000'000);
  PlannerConfig cfg;
  cfg.fault_repair_rounds = 0;
  const Plan p = env.plan(kBudget, cfg);
  EXPECT_EQ(p.birth(1), Tier::kFast);
  EXPECT_EQ(p.birth(2), Tier::kFast);
  EXPECT_EQ(env.eval(p, kBudget).fresh_bytes, 4 * kMiB);
}

TEST(FaultRepair, ABirthWhoseFaultsCostMoreThanItsAccessesSaveGoesSlow) {
  const test::PlanEnv env = churn_env(100, 1'000'000);  // object 2: 22 ms of slow reads, more than its faults
  PlannerConfig no_repair;
  no_repair.fault_repair_rounds = 0;
  const Plan before = env.plan(kBudget, no_repair);
  const Plan p = env.plan(kBudget);
  EXPECT_EQ(p.birth(1), Tier::kSlow);
  EXPECT_EQ(p.birth(2), Tier::kFast);
  const SimResult r = env.eval(p, kBudget);
  EXPECT_EQ(r.fresh_bytes, 0u);  // object 2 finds its own parked extent every step
  EXPECT_LT(r.step_ns, env.eval(before, kBudget).step_ns);
  EXPECT_NE(p.summary.message.find("fault repair sent 1 fast births slow"), std::string::npos) << p.summary.message;
}

TEST(FaultRepair, BirthsWhoseAccessesSaveMoreThanTheirFaultsStayFast) {
  // Both heavy: 22 ms of slow reads each is more than their faults cost; nothing changes.
  const test::PlanEnv env = churn_env(1'000'000, 1'000'000);
  const Plan p = env.plan(kBudget);
  EXPECT_EQ(p.birth(1), Tier::kFast);
  EXPECT_EQ(p.birth(2), Tier::kFast);
  EXPECT_EQ(p.summary.message.find("fault repair"), std::string::npos) << p.summary.message;
}

}  // namespace
}  // namespace sentinel
