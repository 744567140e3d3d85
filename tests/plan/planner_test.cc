#include "plan/planner.h"

#include <gtest/gtest.h>

#include "plan/baselines.h"
#include "plan/budget_repair.h"
#include "plan/cost_model.h"
#include "plan_env.h"
#include "test_profiles.h"

namespace sentinel {
namespace {

using test::make_profile;
using test::object;
using test::persistent;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPhase = 1'000'000;

using Env = test::PlanEnv;

// Event of the first move of `kind` for `tag`, or -1.
int event_of(const Plan& p, uint64_t tag, MoveKind kind) {
  for (uint32_t k = 0; k < p.events.size(); ++k)
    for (const Move& m : p.events[k])
      if (m.tag == tag && m.kind == kind) return static_cast<int>(k);
  return -1;
}

TEST(Planner, LongGapObjectIsEvictedAndPrefetchedInTime) {
  // Object 1 (an activation): born and written in phase 2, read again in phase 17, freed there.
  // Object 2 needs fast memory in phases 7..12; the budget cannot hold both.
  Env env(make_profile(20, kPhase, {object(1, 4 * kMiB, 2, 17, {2, 17}), object(2, 4 * kMiB, 7, 12, {7, 8, 9, 10, 11, 12})}));
  Plan p = env.plan(6 * kMiB);
  EXPECT_EQ(p.birth(1), Tier::kFast);
  EXPECT_EQ(event_of(p, 1, MoveKind::kEvict), 3);
  const int pf = event_of(p, 1, MoveKind::kPrefetch);
  EXPECT_GE(pf, 13);  // after object 2 is gone
  EXPECT_LE(pf, 16);  // early enough for a 1.27 ms copy before phase 17
  SimResult r = env.eval(p, 6 * kMiB);
  EXPECT_EQ(r.budget_violations, 0u);
  EXPECT_EQ(r.late_prefetches, 0u);
  // Every access served from fast memory; what the step adds is the fast pool's faults (cost_model.h):
  // object 2 is born while its class has no parked extent and faults its pages in.
  EXPECT_NEAR(r.step_ns - r.fault_ns, env.all_dram_ns(), 1.0);
  EXPECT_EQ(r.migrated_bytes, 8 * kMiB);
  EXPECT_EQ(p.summary.late_prefetch_risk, 0u);
  EXPECT_FALSE(p.summary.budget_insufficient);
  EXPECT_LE(p.summary.expected_dram_peak_bytes, 6 * kMiB);
}

// The same profile with the fast pool's faults charged (cost_model.h): the round trip's prefetch is 2 MiB
// short of room (the pool is 6 MiB, the two objects 8) and drops object 2's parked extent, 4 MiB (a whole
// extent: plan/fast_pool_model.h), which object 2 then faults in every step. The planner keeps a static
// placement when that costs more than object 1's two slow accesses save.
TEST(Planner, KeepsAStaticPlacementWhereItsMovesCostMoreInFaultsThanTheySave) {
  Env env(make_profile(20, kPhase, {object(1, 4 * kMiB, 2, 17, {2, 17}), object(2, 4 * kMiB, 7, 12, {7, 8, 9, 10, 11, 12})}));
  env.mem.fault_ns_per_byte = 0;
  const Plan free_faults = env.plan(6 * kMiB);
  EXPECT_GT(free_faults.move_count(), 0u);
  env.mem.fault_ns_per_byte = 10.0;  // the 4 MiB it faults in then cost 42 ms, more than object 1 saves
  const Plan costly = env.plan(6 * kMiB);
  EXPECT_EQ(costly.move_count(), 0u) << costly.summary.message;
  EXPECT_EQ(costly.birth(2), Tier::kFast);
  EXPECT_LT(env.eval(costly, 6 * kMiB).step_ns, env.eval(free_faults, 6 * kMiB).step_ns);
}

TEST(Planner, HotObjectStaysFastColdObjectStaysSlow) {
  std::vector<uint32_t> every;
  for (uint32_t k = 0; k < 10; ++k) every.push_back(k);
  Env env(make_profile(10, kPhase, {persistent(1, 8 * kMiB, 10, every), persistent(2, 32 * kMiB, 10, {5}, 10),
                                    object(3, kMiB, 3, 4, {3})}));
  Plan p = env.plan(10 * kMiB);
  EXPECT_EQ(p.birth(1), Tier::kFast);
  EXPECT_EQ(event_of(p, 1, MoveKind::kEvict), -1);
  EXPECT_EQ(p.birth(2), Tier::kSlow);
  EXPECT_EQ(event_of(p, 2, MoveKind::kPrefetch), -1);
  EXPECT_EQ(p.birth(3), Tier::kFast);  // short-lived: reserved share
  EXPECT_EQ(env.eval(p, 10 * kMiB).budget_violations, 0u);
}

TEST(Planner, BudgetTooSmallIsFlaggedAndStillWithinBudget) {
  std::vector<uint32_t> every = {0, 1, 2, 3, 4, 5};
  Env env(make_profile(6, kPhase, {persistent(1, 64 * kMiB, 6, every), persistent(2, 2 * kMiB, 6, every),
                                   object(3, 3 * kMiB, 1, 2, {1, 2})}));
  Plan p = env.plan(4 * kMiB);
  EXPECT_TRUE(p.summary.budget_insufficient);
  EXPECT_NE(p.summary.message.find("larger than the budget"), std::string::npos) << p.summary.message;
  EXPECT_EQ(p.birth(1), Tier::kSlow);
  EXPECT_EQ(p.birth(2), Tier::kFast);  // best effort: what fits is still placed
  SimResult r = env.eval(p, 4 * kMiB);
  EXPECT_EQ(r.budget_violations, 0u);
  Plan zero = env.plan(1);  // 1 byte: nothing fits
  EXPECT_TRUE(zero.summary.budget_insufficient);
  EXPECT_EQ(env.eval(zero, 1).dram_peak_bytes, 0u);
}

TEST(Planner, LowMigrationBandwidthMakesPrefetchesLateAndTheModelChargesStalls) {
  Env env(make_profile(20, kPhase, {object(1, 4 * kMiB, 2, 17, {2, 17}), object(2, 4 * kMiB, 7, 12, {7, 8, 9, 10, 11, 12})}));
  Plan p = env.plan(6 * kMiB);  // made for 3.3 GB/s
  ASSERT_GE(event_of(p, 1, MoveKind::kPrefetch), 0);
  MemorySystem slow_channel = env.mem;
  slow_channel.migration_bw_gbps = 0.5;  // 8.4 ms per copy: longer than the lookahead
  SimResult r = env.eval(p, 0, &slow_channel);
  EXPECT_GT(r.late_prefetches, 0u);
  EXPECT_GT(r.stall_ns, 0.0);
  EXPECT_GT(r.step_ns, env.all_dram_ns());
  // Planned for the slow channel, the planner does not rely on that prefetch being on time.
  Env env2(make_profile(20, kPhase, {object(1, 4 * kMiB, 2, 17, {2, 17}), object(2, 4 * kMiB, 7, 12, {7, 8, 9, 10, 11, 12})}));
  env2.mem = slow_channel;
  Plan q = env2.plan(6 * kMiB);
  SimResult rq = env2.eval(q, 6 * kMiB);
  EXPECT_EQ(rq.late_prefetches, 0u);
  EXPECT_EQ(rq.budget_violations, 0u);
}

TEST(Planner, LookaheadMovesAPrefetchEarlier) {
  // Object 2 needs fast memory in phases 5..12, so object 1 must leave during its gap.
  Env env(make_profile(30, kPhase, {object(1, 4 * kMiB, 2, 25, {2, 25}),
                                    object(2, 2 * kMiB, 5, 12, {5, 8, 10, 12})}));
  Plan p = env.plan(5 * kMiB);
  const int before = event_of(p, 1, MoveKind::kPrefetch);
  ASSERT_GT(before, 10);
  // The runtime's route: raise the tag's lookahead and re-plan.
  PlannerConfig cfg;
  cfg.extra_lookahead_phases[1] = 4;
  Plan q = env.plan(5 * kMiB, cfg);
  EXPECT_EQ(event_of(q, 1, MoveKind::kPrefetch), before - 4);
  // Or move it in the plan directly.
  std::string err;
  EXPECT_EQ(advance_prefetch(env.index, 1, 3, &p, &err), 1) << err;
  EXPECT_EQ(event_of(p, 1, MoveKind::kPrefetch), before - 3);
  EXPECT_EQ(check_plan_budget(env.index, p, env.mem, 5 * kMiB, nullptr), 0u);
  // Never before the object's previous move (its eviction at event 3).
  EXPECT_EQ(advance_prefetch(env.index, 1, 100, &p, &err), 1);
  EXPECT_EQ(event_of(p, 1, MoveKind::kPrefetch), event_of(p, 1, MoveKind::kEvict) + 1);
  EXPECT_EQ(advance_prefetch(env.index, 2, 1, &p, &err), -1);
  EXPECT_EQ(advance_prefetch(env.index, 77, 1, &p, &err), -1);
}

TEST(Planner, PersistentObjectWithTwoGapsRoundTrips) {
  // Like a weight: used in phase 3 (forward), 30 (backward) and 38 (optimizer) of a 40-phase step.
  Env env(make_profile(40, kPhase, {persistent(1, 4 * kMiB, 40, {3, 30, 38}),
                                    object(2, 8 * kMiB, 8, 25, {8, 12, 16, 20, 25})}));
  Plan p = env.plan(9 * kMiB);
  SimResult r = env.eval(p, 9 * kMiB);
  EXPECT_EQ(r.budget_violations, 0u);
  EXPECT_EQ(r.late_prefetches, 0u);
  EXPECT_NEAR(r.step_ns - r.fault_ns, env.all_dram_ns(), 1.0);  // (the fast pool's faults aside)
  EXPECT_GT(r.migrated_bytes, 0u);
  Plan slow;
  ASSERT_TRUE(make_plan(Policy::kAllSlow, env.index, env.mem, PlannerConfig{}, &slow, nullptr));
  EXPECT_LT(r.step_ns, env.eval(slow).step_ns);
}

TEST(Planner, AmpleBudgetMatchesAllDram) {
  Env env(make_profile(12, kPhase, {persistent(1, 4 * kMiB, 12, {1, 9}), object(2, 2 * kMiB, 2, 10, {2, 10}),
                                    object(3, kMiB, 5, 5, {5})}));
  Plan p = env.plan(100 * kMiB);
  EXPECT_EQ(p.move_count(), 0u);  // holding beats moving when there is room
  EXPECT_NEAR(env.eval(p).step_ns, env.all_dram_ns(), 1.0);
}

TEST(Planner, RejectsInvalidConfig) {
  Env env(make_profile(4, kPhase, {persistent(1, kMiB, 4, {1})}));
  PlannerConfig cfg;
  cfg.gap_slack = 0;
  Plan p;
  std::string err;
  EXPECT_FALSE(plan_sentinel(env.index, env.mem, cfg, &p, &err));
  EXPECT_FALSE(err.empty());
  MemorySystem bad = env.mem;
  bad.migration_bw_gbps = 0;
  EXPECT_FALSE(plan_sentinel(env.index, bad, PlannerConfig{}, &p, &err));
}

}  // namespace
}  // namespace sentinel
