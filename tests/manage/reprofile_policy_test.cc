#include "manage/reprofile_policy.h"

#include <vector>

#include <gtest/gtest.h>

namespace sentinel::manage {
namespace {

using Verdict = ReprofilePolicy::Verdict;

// Runs steps [from, to) with `followed(step)` and returns the first step whose verdict is not kKeep
// (or `to`), with that verdict in *out.
template <class F>
int64_t run_until_verdict(ReprofilePolicy& p, int64_t from, int64_t to, F followed, Verdict* out) {
  for (int64_t s = from; s < to; ++s) {
    const Verdict v = p.step_closed(s, followed(s));
    if (v != Verdict::kKeep) {
      *out = v;
      return s;
    }
  }
  *out = Verdict::kKeep;
  return to;
}

TEST(ReprofilePolicy, TheFirstPlanIsDroppedAfterThreeFallbacksInARow) {
  ReprofilePolicy p;
  p.plan_started(10);
  EXPECT_EQ(p.step_closed(10, false), Verdict::kKeep);
  EXPECT_EQ(p.step_closed(11, false), Verdict::kKeep);
  EXPECT_EQ(p.step_closed(12, true), Verdict::kKeep);  // a followed step breaks the run
  EXPECT_EQ(p.step_closed(13, false), Verdict::kKeep);
  EXPECT_EQ(p.step_closed(14, false), Verdict::kKeep);
  EXPECT_EQ(p.step_closed(15, false), Verdict::kDrop);
  EXPECT_EQ(p.unheld_plans(), 1u);
}

TEST(ReprofilePolicy, EachPlanThatDidNotHoldDoublesTheNextPlansWait) {
  ReprofilePolicy p;  // base 8, at most 6 plans that did not hold
  int64_t step = 0;
  std::vector<int64_t> waits;
  Verdict v = Verdict::kKeep;
  for (int plan = 0; plan < 6; ++plan) {
    p.plan_started(step);
    const int64_t started = step;
    step = run_until_verdict(p, step, step + 10000, [](int64_t) { return false; }, &v);
    waits.push_back(step - started);
    if (v == Verdict::kStopReprofiling) break;
    ASSERT_EQ(v, Verdict::kDrop);
    step += 1;
  }
  // Dropped at the third fallback, then no earlier than 8, 16, 32, 64 steps after the start.
  EXPECT_EQ(waits, (std::vector<int64_t>{2, 8, 16, 32, 64, 128}));
  EXPECT_EQ(v, Verdict::kStopReprofiling);
  EXPECT_TRUE(p.stopped());
  // Stopped: the plan stays, whatever the steps do.
  p.plan_started(step + 1);
  for (int64_t s = step + 1; s < step + 500; ++s) EXPECT_EQ(p.step_closed(s, false), Verdict::kKeep);
  EXPECT_GT(p.drops_deferred(), 0u);
}

TEST(ReprofilePolicy, APlanThatHeldResetsTheWait) {
  ReprofilePolicy p;
  Verdict v;
  p.plan_started(0);
  ASSERT_EQ(run_until_verdict(p, 0, 100, [](int64_t) { return false; }, &v), 2);
  p.plan_started(5);  // one plan did not hold: this one waits 8 steps
  EXPECT_EQ(p.drop_allowed_from(), 13);
  // 16 followed steps in a row: the program does repeat.
  for (int64_t s = 5; s < 21; ++s) EXPECT_EQ(p.step_closed(s, true), Verdict::kKeep);
  EXPECT_EQ(p.unheld_plans(), 0u);
  ASSERT_EQ(run_until_verdict(p, 21, 100, [](int64_t) { return false; }, &v), 23);
  EXPECT_EQ(v, Verdict::kDrop);
  // It held, so it does not count, and the next plan starts without a wait.
  EXPECT_EQ(p.unheld_plans(), 0u);
  p.plan_started(30);
  EXPECT_EQ(p.drop_allowed_from(), 30);
}

TEST(ReprofilePolicy, IntermittentFallbacksKeepAPlanThatIsFollowedOftenEnough) {
  // Two of three steps follow the plan: never three fallbacks in a row, never dropped.
  ReprofilePolicy p;
  p.plan_started(0);
  Verdict v;
  EXPECT_EQ(run_until_verdict(p, 0, 1000, [](int64_t s) { return s % 3 != 0; }, &v), 1000);
}

TEST(ReprofilePolicy, StructureChangesCountAsPlansThatDidNotHold) {
  ReprofilePolicy::Settings s;
  s.max_unheld_plans = 3;
  ReprofilePolicy p(s);
  p.plan_started(0);
  EXPECT_TRUE(p.may_profile_after_structure_change());
  p.plan_started(4);
  EXPECT_TRUE(p.may_profile_after_structure_change());
  p.plan_started(8);
  EXPECT_FALSE(p.may_profile_after_structure_change());  // the third in a row: no more profiling
  EXPECT_TRUE(p.stopped());
  EXPECT_FALSE(p.may_profile_after_structure_change());
}

}  // namespace
}  // namespace sentinel::manage
