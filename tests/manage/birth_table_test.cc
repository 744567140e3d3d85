#include "manage/birth_table.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sentinel::manage
