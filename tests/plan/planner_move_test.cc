// The planner's move-or-stay decision on hand-built profiles: an object goes to the slow tier between
// its uses and comes back before the next exactly when the round trip, on the channel model
// (setup + bytes / bandwidth, tier_model.h), costs less than the slow traffic it saves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "plan/baselines.h"
#include "plan/synthetic_profile.h"
#include "plan_env.h"
#include "test_profiles.h"

namespace sentinel {
namespace {

using test::make_profile;
using test::persistent;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPhase = 2'000'000;  // 2 ms: a copy of 4 MiB at 1.9 GB/s (2.2 ms) takes about a phase
constexpr uint64_t kLinesPerPass = 4 * kMiB / 64;

uint64_t moves_of(const Plan& p, uint64_t tag) {
  uint64_t n = 0;
  for (const auto& ev : p.events)
    for (const Move& m : ev) n += m.tag == tag ? 1 : 0;
  return n;
}

// Two 4 MiB weights-like objects, each read `passes` times over in its own two phases of a 20-phase
// step (half a step apart: room for the copies, their slack and lookahead); the budget holds one of
// them. Moving them in turn keeps every pass fast.
test::PlanEnv two_turns(uint64_t passes) {
  return test::PlanEnv(make_profile(20, kPhase, {persistent(1, 4 * kMiB, 20, {1, 2}, passes * kLinesPerPass),
                                                 persistent(2, 4 * kMiB, 20, {11, 12}, passes * kLinesPerPass)}),
                       "optane", /*as_preset=*/true);
}

double policy_ns(const test::PlanEnv& env, uint64_t budget, Policy policy) {
  PlannerConfig cfg;
  cfg.budget_bytes = budget;
  Plan p;
  std::string err;
  EXPECT_TRUE(make_plan(policy, env.index, env.mem, cfg, &p, &err)) << err;
  return env.eval(p, budget).step_ns;
}

double static_best_ns(const test::PlanEnv& env, uint64_t budget) { return policy_ns(env, budget, Policy::kStaticBest); }

TEST(PlannerMoves, HeavyTrafficIsWorthARoundTripEveryStep) {
  const auto env = two_turns(8);
  const uint64_t budget = 5 * kMiB;
  const Plan p = env.plan(budget);
  EXPECT_EQ(moves_of(p, 1), 2u);  // evicted after phase 2, prefetched before phase 1
  EXPECT_EQ(moves_of(p, 2), 2u);
  const SimResult r = env.eval(p, budget);
  EXPECT_EQ(r.budget_violations, 0u);
  EXPECT_EQ(r.late_prefetches, 0u);
  EXPECT_EQ(r.migrated_bytes, 16 * kMiB);
  EXPECT_LT(r.step_ns, 0.95 * static_best_ns(env, budget));  // beats keeping one fast for good
}

TEST(PlannerMoves, LightTrafficStaysWhereItIs) {
  // One pass of 4 MiB saves less than a round trip costs: static is the better plan and the planner
  // must find it.
  const auto env = two_turns(1);
  const uint64_t budget = 5 * kMiB;
  const Plan p = env.plan(budget);
  EXPECT_EQ(moves_of(p, 1) + moves_of(p, 2), 0u);
  EXPECT_LE(env.eval(p, budget).step_ns, static_best_ns(env, budget) * 1.0001);
}

TEST(PlannerMoves, ASetupCostPerMoveKeepsSmallObjectsStill) {
  // 64 objects of 64 KiB in two alternating groups: at bandwidth alone a round trip is cheap, but a
  // fixed 200 us per move (what a loaded guest's move_pages costs) makes every move lose.
  std::vector<ObjectProfile> objs;
  for (uint64_t i = 0; i < 64; ++i) {
    const uint32_t at = i < 32 ? 1 : 6;
    objs.push_back(persistent(100 + i, 64 * 1024, 10, {at, at + 1}, 4 * 1024));
  }
  test::PlanEnv env(make_profile(10, kPhase, objs), "optane", /*as_preset=*/true);
  const uint64_t budget = 2 * kMiB + 512 * 1024;  // one group and a bit
  uint64_t moves_free = 0, moves_setup = 0;
  for (const auto& ev : env.plan(budget).events) moves_free += ev.size();
  env.mem.migration_setup_ns = 200'000;
  for (const auto& ev : env.plan(budget).events) moves_setup += ev.size();
  EXPECT_GT(moves_free, 32u);
  EXPECT_EQ(moves_setup, 0u);
}

TEST(PlannerMoves, SetupCostIsPartOfEveryCopy) {
  MemorySystem m;
  ASSERT_TRUE(memory_system_preset("optane", &m, nullptr));
  m.migration_setup_ns = 50'000;
  m.migration_bw_gbps = 2.0;
  EXPECT_DOUBLE_EQ(m.migration_ns(4096), 50'000 + 2048);
  std::string err;
  MemorySystem parsed;
  ASSERT_TRUE(parse_memory_system("base = optane\nmigration_setup_ns = 1234\n", &parsed, &err)) << err;
  EXPECT_DOUBLE_EQ(parsed.migration_setup_ns, 1234);
  EXPECT_FALSE(parse_memory_system("migration_setup_ns = -1\n", &parsed, &err));
  EXPECT_NE(err.find("migration_setup_ns"), std::string::npos) << err;
}

}  // namespace
}  // namespace sentinel

namespace sentinel {
namespace {

// The selection also starts from Sentinel's best static placement held fast (planner.cc): where the
// greedy by density alone leaves a worse static set, the seeded start keeps the better set and adds the
// moves that fit beside it. Over random profiles the planner is never worse than either start, and on
// some the seeded plan beats both the unseeded plan and the static placement it started from.
TEST(PlannerMoves, StartingFromTheBestStaticPlacementBeatsBothStartsOnSomeProfiles) {
  uint32_t better_than_both = 0, profiles = 0;
  double best_gain = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    RandomProfileConfig c;
    c.seed = seed;
    c.objects = 30;
    c.period = 40;
    const test::PlanEnv env(random_profile(c), "optane", /*as_preset=*/true);
    for (double share : {0.1, 0.2, 0.35}) {
      const uint64_t budget = static_cast<uint64_t>(share * static_cast<double>(env.index.peak_bytes()));
      PlannerConfig unseeded_cfg;
      unseeded_cfg.seed_with_static_best = false;
      const double seeded = env.eval(env.plan(budget), budget).step_ns;
      const double unseeded = env.eval(env.plan(budget, unseeded_cfg), budget).step_ns;
      const double fixed = static_best_ns(env, budget);
      EXPECT_LE(seeded, unseeded * (1 + 1e-9)) << "seed " << seed << " share " << share;
      EXPECT_LE(seeded, fixed * (1 + 1e-9)) << "seed " << seed << " share " << share;
      // Nor worse than the other static placements (planner.cc; their fast pool's faults matter here).
      EXPECT_LE(seeded, policy_ns(env, budget, Policy::kFirstTouch) * (1 + 1e-9)) << "seed " << seed;
      EXPECT_LE(seeded, policy_ns(env, budget, Policy::kStaticRatio) * (1 + 1e-9)) << "seed " << seed;
      ++profiles;
      if (seeded < 0.999 * std::min(unseeded, fixed)) ++better_than_both;
      best_gain = std::max(best_gain, 1 - seeded / std::min(unseeded, fixed));
    }
  }
  EXPECT_GT(better_than_both, 0u) << "of " << profiles;
  std::printf("seeded plan better than both starts by > 0.1%% on %u of %u profile-budgets (at most %.1f%%)\n",
              better_than_both, profiles, 100 * best_gain);
}

}  // namespace
}  // namespace sentinel
