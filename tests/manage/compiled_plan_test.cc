#include "manage/compiled_plan.h"

#include <gtest/gtest.h>

#include "test_profiles.h"

namespace sentinel::manage {
namespace {

uint64_t same(uint64_t size) { return size; }
uint64_t rounded(uint64_t size) { return (size + 4095) / 4096 * 4096; }

// Period 6: persistent W used in phases 1 and 4; activation A born at 1, used at 1 and 4, dies at 4.
StepProfile two_use_profile() {
  return test::make_profile(6, 1000, {test::persistent(0x10, 1000, 6, {1, 4}), test::object(0x20, 5000, 1, 4, {1, 4})});
}

Plan plan_for(uint32_t period) {
  Plan p;
  p.policy = "test";
  p.period = period;
  p.events.assign(period, {});
  return p;
}

TEST(CompiledPlan, ExpectedTagsAreTheNonPersistentBirths) {
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(two_use_profile(), &error)) << error;
  CompiledPlan cp;
  ASSERT_TRUE(cp.compile(plan_for(6), index, same, &error)) << error;
  EXPECT_EQ(cp.expected_tag(0), 0u);
  EXPECT_EQ(cp.expected_tag(1), 0x20u);
  EXPECT_EQ(cp.object(0x10)->persistent, true);
  EXPECT_EQ(cp.object(0x20)->birth_event, 1u);
  EXPECT_EQ(cp.object(0x99), nullptr);
}

TEST(CompiledPlan, PrefetchKnowsThePhaseItServes) {
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(two_use_profile(), &error)) << error;
  Plan plan = plan_for(6);
  plan.birth_tier[0x20] = Tier::kFast;
  plan.events[2] = {{0x20, MoveKind::kEvict}, {0x10, MoveKind::kEvict}};
  plan.events[3] = {{0x20, MoveKind::kPrefetch}};
  plan.events[5] = {{0x10, MoveKind::kPrefetch}};  // serves phase 1 of the next step
  CompiledPlan cp;
  ASSERT_TRUE(cp.compile(plan, index, rounded, &error)) << error;
  ASSERT_EQ(cp.moves_at(3).size(), 1u);
  EXPECT_EQ(cp.moves_at(3)[0].need_phase, 4u);
  EXPECT_EQ(cp.moves_at(3)[0].need_step_offset, 0u);
  ASSERT_EQ(cp.moves_at(5).size(), 1u);
  EXPECT_EQ(cp.moves_at(5)[0].need_phase, 1u);
  EXPECT_EQ(cp.moves_at(5)[0].need_step_offset, 1u);
  EXPECT_EQ(cp.moves_at(2)[0].need_phase, PlannedMove::kNoUse);
  EXPECT_EQ(cp.object(0x20)->bytes, 8192u);
  EXPECT_EQ(cp.planned_migrated_bytes_per_step(), 8192u * 2 + 4096u * 2);
}

TEST(CompiledPlan, FastUsesFollowTheIntendedTier) {
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(two_use_profile(), &error)) << error;
  Plan plan = plan_for(6);
  plan.birth_tier[0x20] = Tier::kFast;  // fast at 1, evicted at 2, never back: phase 4 is a slow use
  plan.events[2] = {{0x20, MoveKind::kEvict}};
  CompiledPlan cp;
  ASSERT_TRUE(cp.compile(plan, index, same, &error)) << error;
  ASSERT_EQ(cp.fast_uses(1).size(), 1u);
  EXPECT_EQ(cp.fast_uses(1)[0].tag, 0x20u);
  EXPECT_TRUE(cp.fast_uses(4).empty());  // W is slow (no birth tier) and A was evicted
}

TEST(CompiledPlan, RejectsAPlanThatDoesNotFitTheProfile) {
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(two_use_profile(), &error)) << error;
  CompiledPlan cp;
  EXPECT_FALSE(cp.compile(plan_for(7), index, same, &error));
  EXPECT_NE(error.find("period"), std::string::npos);
  Plan unknown = plan_for(6);
  unknown.events[1] = {{0x77, MoveKind::kPrefetch}};
  EXPECT_FALSE(cp.compile(unknown, index, same, &error));
  EXPECT_NE(error.find("does not have"), std::string::npos);
}

}  // namespace
}  // namespace sentinel::manage
