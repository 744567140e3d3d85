#include "manage/birth_table.h"

#include <gtest/gtest.h>

#include "core/hash.h"
#include "test_profiles.h"

namespace sentinel::manage {
namespace {

uint64_t same(uint64_t size) { return size; }

class BirthTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(index_.build(test::make_profile(4, 1000,
                                                {test::object(0xa, 100, 0, 1, {0}), test::object(0xb, 100, 1, 2, {1}),
                                                 test::object(0xc, 100, 2, 3, {2})}),
                             &error))
        << error;
    Plan plan;
    plan.period = 4;
    plan.events.assign(4, {});
    plan.birth_tier[0xa] = Tier::kFast;
    plan.birth_tier[0xb] = Tier::kSlow;
    ASSERT_TRUE(plan_.compile(plan, index_, same, &error)) << error;
    table_.build(plan_, 10);
    gate_.publish(&table_);
  }
  ProfileIndex index_;
  CompiledPlan plan_;
  BirthTable table_;
  BirthGate gate_;
};

TEST_F(BirthTableTest, KnownTagsGetTheirPlannedTier) {
  EXPECT_EQ(gate_.decide(10, 0, 4, 0xa).want, BirthWant::kFast);
  EXPECT_EQ(gate_.decide(10, 1, 4, 0xb).want, BirthWant::kSlow);
  EXPECT_EQ(gate_.decide(10, 2, 4, 0xc).want, BirthWant::kSlow);  // missing from birth_tier: born slow
  EXPECT_EQ(table_.lookup(0x1234), BirthWant::kFirstTouch);
}

TEST_F(BirthTableTest, NothingBeforeTheFirstManagedStepOrUnderAnotherPeriod) {
  EXPECT_EQ(gate_.decide(9, 0, 4, 0xa).want, BirthWant::kFirstTouch);
  EXPECT_EQ(gate_.decide(10, 0, 5, 0xa).want, BirthWant::kFirstTouch);
  BirthGate empty;
  EXPECT_EQ(empty.decide(10, 0, 4, 0xa).want, BirthWant::kFirstTouch);
}

TEST_F(BirthTableTest, AStepBegunAgainUnderTheSameIndexIsPlannedAgain) {
  EXPECT_TRUE(gate_.decide(11, 1, 4, 0xeeee).deviated_now);
  EXPECT_EQ(gate_.decide(11, 0, 4, 0xa).want, BirthWant::kFast);
  EXPECT_EQ(gate_.decide(11, 1, 4, 0xb).want, BirthWant::kSlow);
}

TEST_F(BirthTableTest, AnEventPastThePeriodIsADeviation) {
  const BirthDecision d = gate_.decide(10, 4, 4, 0xa);
  EXPECT_TRUE(d.deviated_now);
  EXPECT_EQ(d.want, BirthWant::kFirstTouch);
}

TEST_F(BirthTableTest, ADeviationMakesTheRestOfTheStepFirstTouch) {
  EXPECT_EQ(gate_.decide(11, 0, 4, 0xa).want, BirthWant::kFast);
  const BirthDecision d = gate_.decide(11, 1, 4, 0xeeee);  // not the tag the plan expects at event 1
  EXPECT_TRUE(d.deviated_now);
  EXPECT_EQ(d.want, BirthWant::kFirstTouch);
  EXPECT_EQ(gate_.decide(11, 2, 4, 0xc).want, BirthWant::kFirstTouch);
  // The next step is planned again.
  EXPECT_EQ(gate_.decide(12, 0, 4, 0xa).want, BirthWant::kFast);
  EXPECT_FALSE(gate_.decide(12, 1, 4, 0xb).deviated_now);
}

// The allocation path lets the service thread see an event later only when the executor has nothing of the
// plan's to do there.
TEST_F(BirthTableTest, OnlyEventsWithoutPlannedWorkAreQuiet) {
  Plan plan;
  plan.period = 4;
  plan.events.assign(4, {});
  plan.birth_tier[0xa] = Tier::kFast;
  plan.events[2] = {{0xa, MoveKind::kEvict}};
  CompiledPlan compiled;
  std::string error;
  ASSERT_TRUE(compiled.compile(plan, index_, same, &error)) << error;
  BirthTable table;
  table.build(compiled, 10);
  BirthGate gate;
  EXPECT_FALSE(gate.decide(10, 1, 4, 0xb).quiet);  // no table yet
  gate.publish(&table);
  EXPECT_FALSE(gate.decide(9, 1, 4, 0xb).quiet);   // before the plan's first step
  EXPECT_FALSE(gate.decide(10, 1, 5, 0xb).quiet);  // another period
  EXPECT_FALSE(gate.decide(10, 0, 4, 0xa).quiet);  // a step's start: persistent objects are caught up
  EXPECT_TRUE(gate.decide(10, 1, 4, 0xb).quiet);
  EXPECT_FALSE(gate.decide(10, 2, 4, 0xc).quiet);  // the eviction
  EXPECT_TRUE(gate.decide(10, 3, 4, 0xd).quiet);
  const BirthDecision leaves = gate.decide(11, 1, 4, 0xeeee);
  EXPECT_TRUE(leaves.deviated_now);
  EXPECT_FALSE(leaves.quiet);                      // the executor leaves the plan here
  EXPECT_TRUE(gate.decide(11, 2, 4, 0xc).quiet);   // nothing more is issued in that step
}

}  // namespace
}  // namespace sentinel::manage

namespace sentinel::manage {
namespace {

// A step-local object with the call-site and occurrence of a persistent one carries the persistent object's
// tag at run time and a derived tag in the profile: the gate and the executor know it by the derived tag.
TEST(PlanTag, AStepLocalTwinOfAPersistentObjectIsKnownByItsDerivedTag) {
  const uint64_t persistent = 0xa, twin = derived_tag(0xa);
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(test::make_profile(3, 1000,
                                             {test::persistent(persistent, 100, 3, {0}), test::object(0xb, 100, 0, 1, {0}),
                                              test::object(twin, 100, 1, 1, {1})}),
                          &error))
      << error;
  Plan plan;
  plan.period = 3;
  plan.events.assign(3, {});
  plan.birth_tier[twin] = Tier::kFast;
  CompiledPlan cp;
  ASSERT_TRUE(cp.compile(plan, index, same, &error)) << error;
  EXPECT_EQ(plan_tag(persistent, cp.expected_tag(1)), twin);
  EXPECT_EQ(plan_tag(0x77, cp.expected_tag(1)), 0x77u);
  BirthTable table;
  table.build(cp, 0);
  BirthGate gate;
  gate.publish(&table);
  EXPECT_EQ(gate.decide(0, 0, 3, 0xb).want, BirthWant::kSlow);
  const BirthDecision d = gate.decide(0, 1, 3, persistent);
  EXPECT_FALSE(d.deviated_now);
  EXPECT_EQ(d.want, BirthWant::kFast);
}

}  // namespace
}  // namespace sentinel::manage
