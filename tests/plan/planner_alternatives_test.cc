// The planner's alternative windows (prefix, merged, born fast), the exchange pass and the stall
// repair: each on a small profile where it changes the plan, compared with the same planner with
// that step turned off, and the per-phase recording of the cost model.
#include <gtest/gtest.h>

#include "plan/budget_repair.h"
#include "plan/cost_model.h"
#include "plan/planner.h"
#include "plan/stall_repair.h"
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

PlannerConfig without_alternatives() {
  PlannerConfig cfg;
  cfg.prefix_alternatives = 0;
  cfg.merged_windows = 0;
  cfg.exchange_candidates = 0;
  cfg.stall_repair_attempts = 0;
  return cfg;
}

bool has_move(const Plan& p, uint64_t tag, MoveKind kind) {
  for (const auto& ev : p.events)
    for (const Move& m : ev)
      if (m.tag == tag && m.kind == kind) return true;
  return false;
}

TEST(PlannerAlternatives, PrefixWindowServesTheHotFirstUsesOfALargeObject) {
  // Object 1 (8 MiB) is born in phase 2 and read heavily in phases 2 and 3, then lightly in 10, 12,
  // 14. Phase 4 is long enough for its eviction, but phases 5..14 are short: no round trip fits
  // between 3 and 10, so its only whole window holds 8 MiB through phase 14. Six 1 MiB objects
  // want phases 5..15. With the budget (9 MiB) the best plan serves phases 2-3 of object 1 fast,
  // evicts it, and then the small objects.
  std::vector<ObjectProfile> objs = {object(1, 8 * kMiB, 2, 15, {2, 3}, 400000)};
  objs[0].accesses.push_back({10, 2000, 0});
  objs[0].accesses.push_back({12, 2000, 0});
  objs[0].accesses.push_back({14, 2000, 0});
  for (uint64_t t = 2; t < 8; ++t) objs.push_back(object(t, kMiB, 5, 15, {6, 8, 11, 13}, 60000));
  StepProfile p = make_profile(20, kPhase, objs);
  for (uint32_t k = 5; k <= 14; ++k) p.phases[k].duration_ns = 20000;
  p.phases[4].duration_ns = 5 * kPhase;
  Env env(p);
  Plan with = env.plan(9 * kMiB);
  PlannerConfig cfg = without_alternatives();
  Plan without = env.plan(9 * kMiB, cfg);
  EXPECT_EQ(with.birth(1), Tier::kFast);
  EXPECT_TRUE(has_move(with, 1, MoveKind::kEvict));
  EXPECT_LT(env.step_ns(with), env.step_ns(without));
}

TEST(PlannerAlternatives, MergedWindowHoldsAnObjectThroughGapsNotWorthARoundTrip) {
  // A persistent 1 MiB object used every 10 phases; each use saves less than a round trip's copy
  // cost, so no single window has a benefit. Another object needs fast memory in phases 50..59, so
  // the persistent one cannot be fast all the time. Holding it from its use at 5 to the one at 45
  // is worth it.
  std::vector<ObjectProfile> objs = {persistent(1, kMiB, 60, {5, 15, 25, 35, 45}, 12000),
                                     object(2, kMiB, 50, 59, {51, 52, 53, 54, 55, 56, 57, 58}, 200000)};
  Env env(make_profile(60, kPhase, objs));
  Plan with = env.plan(kMiB + kMiB / 2);
  Plan without = env.plan(kMiB + kMiB / 2, without_alternatives());
  EXPECT_FALSE(has_move(without, 1, MoveKind::kPrefetch));
  EXPECT_TRUE(has_move(with, 1, MoveKind::kPrefetch));
  EXPECT_LT(env.step_ns(with), env.step_ns(without));
}

TEST(PlannerAlternatives, ExchangeSwapsSmallDenseWindowsForALargerOne) {
  // Three 2 MiB objects are each denser (benefit per byte-phase) than one 8 MiB object, so the
  // greedy takes them first and the large one no longer fits in 8 MiB; together they are worth less.
  std::vector<ObjectProfile> objs = {object(1, 8 * kMiB, 2, 10, {6}, 1000000)};
  for (uint64_t t = 2; t < 5; ++t) objs.push_back(object(t, 2 * kMiB, 2, 10, {6}, 300000));
  Env env(make_profile(20, kPhase, objs));
  // (Without the comparison with first-touch, which takes object 1 first by allocation order.)
  PlannerConfig exchange;
  exchange.compare_static_baselines = false;
  PlannerConfig no_exchange = exchange;
  no_exchange.exchange_candidates = 0;
  Plan with = env.plan(8 * kMiB, exchange);
  Plan without = env.plan(8 * kMiB, no_exchange);
  EXPECT_EQ(without.birth(1), Tier::kSlow);
  EXPECT_FALSE(has_move(without, 1, MoveKind::kPrefetch));
  EXPECT_TRUE(with.birth(1) == Tier::kFast || has_move(with, 1, MoveKind::kPrefetch));
  EXPECT_LT(env.step_ns(with), env.step_ns(without));
}

TEST(StallRepair, KeepsAnObjectFastInsteadOfQueueingItsPrefetchBehindALargeCopy) {
  // Hand-made plan: object 2 (8 MiB) is prefetched at event 1 for phase 15; object 1 (1 MiB) is
  // evicted at event 1 and prefetched at event 2 for its use in phase 3, behind the 2.5 ms copy.
  std::vector<ObjectProfile> objs = {persistent(1, kMiB, 20, {0, 3}, 100000),
                                     object(2, 8 * kMiB, 0, 19, {15}, 100000)};
  Env env(make_profile(20, kPhase, objs));
  Plan plan;
  plan.policy = "sentinel";
  plan.period = 20;
  plan.events.assign(20, {});
  plan.birth_tier[1] = Tier::kFast;
  plan.birth_tier[2] = Tier::kSlow;
  plan.events[1] = {Move{2, MoveKind::kPrefetch}, Move{1, MoveKind::kEvict}};
  plan.events[2] = {Move{1, MoveKind::kPrefetch}};
  plan.events[16] = {Move{2, MoveKind::kEvict}};
  const uint64_t budget = 10 * kMiB;
  ASSERT_EQ(check_plan_budget(env.index, plan, env.mem, budget, nullptr), 0u);
  SimOptions opt;
  SimResult before, after;
  ASSERT_TRUE(simulate_plan(env.index, plan, env.mem, opt, &before, nullptr));
  ASSERT_GT(before.stall_ns, 0.0);
  plan_detail::StallRepairStats stats;
  plan_detail::repair_stalls(env.index, env.mem, budget, 3, 8, &plan, &stats);
  ASSERT_TRUE(simulate_plan(env.index, plan, env.mem, opt, &after, nullptr));
  EXPECT_EQ(stats.merged, 1u);
  EXPECT_EQ(after.stall_ns, 0.0);
  EXPECT_LT(after.step_ns, before.step_ns);
  EXPECT_FALSE(has_move(plan, 1, MoveKind::kPrefetch));
  EXPECT_TRUE(has_move(plan, 2, MoveKind::kPrefetch));
  EXPECT_EQ(check_plan_budget(env.index, plan, env.mem, budget, nullptr), 0u);
  // With a budget too small to hold both, cancelling the eviction is not allowed.
  Plan tight = plan;
  tight.events[1] = {Move{2, MoveKind::kPrefetch}, Move{1, MoveKind::kEvict}};
  tight.events[2] = {Move{1, MoveKind::kPrefetch}};
  plan_detail::StallRepairStats tight_stats;
  plan_detail::repair_stalls(env.index, env.mem, 8 * kMiB + kMiB / 2, 3, 8, &tight, &tight_stats);
  EXPECT_EQ(tight_stats.merged, 0u);
}

TEST(CostModel, PhaseRecordingAddsUpToTheTotals) {
  std::vector<ObjectProfile> objs = {persistent(1, kMiB, 20, {0, 3}, 100000),
                                     object(2, 8 * kMiB, 0, 19, {15, 16}, 100000),
                                     object(3, 2 * kMiB, 4, 9, {5, 6}, 50000)};
  Env env(make_profile(20, kPhase, objs));
  Plan plan = env.plan(4 * kMiB);
  SimOptions opt;
  opt.record_phases = true;
  SimResult r;
  ASSERT_TRUE(simulate_plan(env.index, plan, env.mem, opt, &r, nullptr));
  ASSERT_EQ(r.phase_extra_ns.size(), 20u);
  double extra = 0, stall = 0;
  for (uint32_t k = 0; k < 20; ++k) {
    extra += r.phase_extra_ns[k];
    stall += r.phase_stall_ns[k];
    if (r.phase_extra_ns[k] > 0) {
      EXPECT_FALSE(r.phase_slow_objects[k].empty()) << k;
    }
  }
  EXPECT_NEAR(extra, r.slow_extra_ns, 1e-6 * r.step_ns);
  EXPECT_NEAR(stall, r.stall_ns, 1e-6 * r.step_ns);
  EXPECT_NEAR(r.base_ns + extra + stall, r.step_ns, 1e-6 * r.step_ns);
  // Object 2 (8 MiB) cannot be fast within 4 MiB: its uses are recorded as slow.
  EXPECT_NE(std::find(r.phase_slow_objects[15].begin(), r.phase_slow_objects[15].end(),
                      static_cast<uint32_t>(env.index.find(2))),
            r.phase_slow_objects[15].end());
}

}  // namespace
}  // namespace sentinel
