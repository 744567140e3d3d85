// The allocation path (BirthGate) and the plan executor decide with one rule whether a step follows the plan
// (compiled_plan.h: step_starts_on_plan, event_leaves_plan). These tests feed both the same allocations and
// check that they agree, including where the two copies the rule used to have disagreed: a detector period
// that changes in the middle of a step.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "fake_sink.h"
#include "manage/birth_table.h"
#include "manage/plan_executor.h"
#include "test_profiles.h"

namespace sentinel::manage {
namespace {

uint64_t same(uint64_t size) { return size; }

struct Alloc {
  int64_t step;
  uint32_t event;
  uint32_t period;
  uint64_t tag;
};

// Period 4 with step-local 0xa, 0xb, 0xc born at events 0, 1, 2, all planned fast, from step 10 on.
class DeviationRuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(index_.build(sentinel::test::make_profile(4, 1000,
                                                {sentinel::test::object(0xa, 100, 0, 1, {0}), sentinel::test::object(0xb, 100, 1, 2, {1}),
                                                 sentinel::test::object(0xc, 100, 2, 3, {2})}),
                             &error))
        << error;
    Plan plan;
    plan.period = 4;
    plan.events.assign(4, {});
    plan.birth_tier = {{0xa, Tier::kFast}, {0xb, Tier::kFast}, {0xc, Tier::kFast}};
    auto compiled = std::make_shared<CompiledPlan>();
    ASSERT_TRUE(compiled->compile(plan, index_, same, &error)) << error;
    table_.build(*compiled, 10);
    gate_.publish(&table_);
    executor_.start(compiled, 10);
  }

  // Feeds one allocation to both; returns the gate's decision and checks that the executor agrees on
  // whether the step follows the plan after it.
  BirthDecision both(const Alloc& a) {
    const bool was_left = executor_.step_left_plan();
    const BirthDecision d = gate_.decide(a.step, a.event, a.period, a.tag);
    executor_.on_alloc(ObjectRef{slot_++, 1}, a.tag, 100, d.want == BirthWant::kFast ? Tier::kFast : Tier::kSlow, a.step,
                       a.event, a.period);
    const bool follows = executor_.step_managed() && !executor_.step_left_plan();
    if (table_.lookup(a.tag) != BirthWant::kFirstTouch) {  // a tag the plan places: placed iff followed
      EXPECT_EQ(d.want != BirthWant::kFirstTouch, follows)
          << "step " << a.step << " event " << a.event << " period " << a.period;
    }
    EXPECT_EQ(d.deviated_now, !was_left && executor_.step_left_plan())
        << "step " << a.step << " event " << a.event << " period " << a.period;
    return d;
  }

  ProfileIndex index_;
  BirthTable table_;
  BirthGate gate_;
  test::FakeSink sink_{1u << 20};
  PlanExecutor executor_{&sink_};
  uint32_t slot_ = 0;
};

TEST_F(DeviationRuleTest, AStepThatFollowsThePlan) {
  for (uint32_t k = 0; k < 3; ++k) EXPECT_EQ(both({10, k, 4, 0xa + k}).want, BirthWant::kFast);
}

// Decided: a period change in the middle of a step leaves the plan for the rest of that step, for births
// as for moves (before, the gate gave such an event first-touch but followed the plan again after it).
TEST_F(DeviationRuleTest, APeriodChangeInTheMiddleOfAStepLeavesThePlanForTheRestOfIt) {
  EXPECT_EQ(both({10, 0, 4, 0xa}).want, BirthWant::kFast);
  const BirthDecision changed = both({10, 1, 5, 0xb});
  EXPECT_TRUE(changed.deviated_now);
  EXPECT_EQ(changed.want, BirthWant::kFirstTouch);
  EXPECT_EQ(both({10, 2, 4, 0xc}).want, BirthWant::kFirstTouch);  // the period is back: still off the plan
  EXPECT_EQ(both({11, 0, 4, 0xa}).want, BirthWant::kFast);        // the next step follows it again
}

// A step that starts under another period is not under the plan at all: it never "leaves" it.
TEST_F(DeviationRuleTest, AStepThatStartsUnderAnotherPeriodStaysOffThePlan) {
  const BirthDecision d = both({10, 0, 5, 0xa});
  EXPECT_FALSE(d.deviated_now);
  EXPECT_EQ(d.want, BirthWant::kFirstTouch);
  EXPECT_FALSE(both({10, 1, 4, 0xb}).deviated_now);
  EXPECT_EQ(both({10, 2, 4, 0xc}).want, BirthWant::kFirstTouch);
}

TEST_F(DeviationRuleTest, AnotherTagOrAnEventPastThePeriodLeavesThePlan) {
  EXPECT_TRUE(both({10, 0, 4, 0xeeee}).deviated_now);
  EXPECT_EQ(both({10, 1, 4, 0xb}).want, BirthWant::kFirstTouch);
  for (uint32_t k = 0; k < 4; ++k) both({11, k, 4, k < 3 ? 0xa + k : 0x99});  // event 3 expects nothing
  EXPECT_TRUE(both({11, 4, 4, 0xd}).deviated_now);
}

TEST_F(DeviationRuleTest, EventZeroAgainBeginsTheStepOver) {
  EXPECT_TRUE(both({10, 1, 4, 0xeeee}).deviated_now);
  EXPECT_EQ(both({10, 0, 4, 0xa}).want, BirthWant::kFast);
  EXPECT_EQ(both({10, 1, 4, 0xb}).want, BirthWant::kFast);
}

// Period 12 with step-local 0x10 + k born at event k (k < 11), all planned fast, from step 10 on.
class ReorderTest : public DeviationRuleTest {
 protected:
  void SetUp() override {
    std::vector<ObjectProfile> objects;
    for (uint32_t k = 0; k < 11; ++k) objects.push_back(sentinel::test::object(0x10 + k, 100, k, k + 1, {k}));
    objects.push_back(sentinel::test::persistent(0x77, 100, 12, {0}));
    std::string error;
    ASSERT_TRUE(index_.build(sentinel::test::make_profile(12, 1000, objects), &error)) << error;
    Plan plan;
    plan.period = 12;
    plan.events.assign(12, {});
    for (uint32_t k = 0; k < 11; ++k) plan.birth_tier[0x10 + k] = Tier::kFast;
    auto compiled = std::make_shared<CompiledPlan>();
    ASSERT_TRUE(compiled->compile(plan, index_, same, &error)) << error;
    table_.build(*compiled, 10);
    gate_.publish(&table_);
    executor_.start(compiled, 10);
  }
};

// Threads that allocate concurrently (a DDP rank's autograd and communication threads) move births within
// the step from step to step: the step still follows the plan, and each object is born where the plan
// wants it, wherever in the step it comes.
TEST_F(ReorderTest, StepLocalObjectsInAnotherOrderFollowThePlan) {
  const uint64_t order[11] = {0x10, 0x1a, 0x11, 0x12, 0x13, 0x14, 0x16, 0x15, 0x17, 0x19, 0x18};
  for (uint32_t k = 0; k < 11; ++k) {
    const BirthDecision d = both({10, k, 12, order[k]});
    EXPECT_FALSE(d.deviated_now) << "event " << k;
    EXPECT_EQ(d.want, BirthWant::kFast) << "event " << k;
  }
  EXPECT_TRUE(executor_.step_managed());
  EXPECT_FALSE(executor_.step_deviated());
}

TEST_F(ReorderTest, ATagThePlanDoesNotKnowAsStepLocalLeavesIt) {
  EXPECT_EQ(both({10, 0, 12, 0x10}).want, BirthWant::kFast);
  const BirthDecision unknown = both({10, 1, 12, 0x999});
  EXPECT_TRUE(unknown.deviated_now);
  EXPECT_EQ(unknown.want, BirthWant::kFirstTouch);
  // A persistent object's tag, as a new object's (not its twin's: the profile has none) leaves it too.
  EXPECT_EQ(both({11, 0, 12, 0x10}).want, BirthWant::kFast);
  EXPECT_TRUE(both({11, 1, 12, 0x77}).deviated_now);
}

// An odd batch whose first tensor is too small to be an object: every later birth comes one event early.
// The step follows the plan until the missing birth is order_window (4) events overdue, then leaves it.
TEST_F(ReorderTest, AMissingBirthLeavesThePlanOnceItIsOverdue) {
  ASSERT_EQ(order_window(12), 4u);
  for (uint32_t k = 0; k < 4; ++k) EXPECT_FALSE(both({10, k, 12, 0x11 + k}).deviated_now) << "event " << k;
  EXPECT_TRUE(both({10, 4, 12, 0x15}).deviated_now);
  // The next step, whole and in order, follows the plan again.
  for (uint32_t k = 0; k < 11; ++k) EXPECT_EQ(both({11, k, 12, 0x10 + k}).want, BirthWant::kFast) << "event " << k;
}

// A tag born twice in a step (a call-site's occurrences counted from another point than the step's start)
// marks its place once; the place it does not fill becomes overdue like a missing birth.
TEST_F(ReorderTest, ATagBornTwiceLeavesThePlanWhenThePlaceItLeftEmptyIsOverdue) {
  const uint64_t births[] = {0x10, 0x12, 0x12, 0x13, 0x14};
  for (uint32_t k = 0; k < 5; ++k) EXPECT_FALSE(both({10, k, 12, births[k]}).deviated_now) << "event " << k;
  EXPECT_TRUE(both({10, 5, 12, 0x15}).deviated_now);  // 0x11's place (event 1) is 4 events overdue
}

TEST(MatchTag, AStepLocalTagAnywhereOrNothingExpectedAtTheEvent) {
  const std::vector<uint64_t> expected = {0x10, 0, 0x12, 0x13, derived_tag(0x77)};
  const auto position_of = [&](uint64_t t) {
    for (uint32_t k = 0; k < expected.size(); ++k)
      if (expected[k] == t) return k;
    return kNoPosition;
  };
  EXPECT_EQ(match_tag(expected, 0, 0x10, position_of).position, 0u);
  EXPECT_TRUE(match_tag(expected, 1, 0x999, position_of).expected);  // the profile had no step-local birth there
  EXPECT_EQ(match_tag(expected, 1, 0x999, position_of).position, kNoPosition);
  EXPECT_EQ(match_tag(expected, 3, 0x10, position_of).position, 0u);  // elsewhere in the step
  EXPECT_FALSE(match_tag(expected, 2, 0x999, position_of).expected);
  EXPECT_FALSE(match_tag(expected, 5, 0x10, position_of).expected);  // past the period
  // A step-local twin of a persistent object (0x77) is known by its derived tag, at its event or elsewhere.
  EXPECT_EQ(match_tag(expected, 4, 0x77, position_of).tag, derived_tag(0x77));
  EXPECT_EQ(match_tag(expected, 2, 0x77, position_of).tag, derived_tag(0x77));
  EXPECT_EQ(match_tag(expected, 2, 0x77, position_of).position, 4u);
}

TEST(BirthOrder, ABirthUpToTheWindowLateFollowsAndOneMoreOverdueLeaves) {
  const std::vector<uint64_t> expected(16, 1);  // a step-local birth at every event
  BirthOrder order;
  order.resize(16);
  ASSERT_EQ(order_window(16), 4u);
  // Births 1-4 come one event early, then birth 0, 4 events late: the step follows.
  for (uint32_t k = 0; k < 4; ++k) EXPECT_TRUE(order.on_birth(expected, k, k + 1)) << "event " << k;
  EXPECT_TRUE(order.on_birth(expected, 4, 0));
  EXPECT_TRUE(order.on_birth(expected, 5, 5));
  // The same, but birth 5 comes at event 4 while birth 0 is still missing: 4 events overdue.
  order.reset();
  for (uint32_t k = 0; k < 4; ++k) EXPECT_TRUE(order.on_birth(expected, k, k + 1)) << "event " << k;
  EXPECT_FALSE(order.on_birth(expected, 4, 5));
}

// A data-parallel rank's communication thread: resnet18 with two ranks (period 320) had its births up to 29
// events late, on an idle machine, in 3 of 40 steps; a window of period/16 (20) left the plan there.
TEST(BirthOrder, ACommunicationThreadsBirthThirtyEventsLateFollowsInALongStep) {
  const std::vector<uint64_t> expected(320, 1);
  BirthOrder order;
  order.resize(320);
  ASSERT_EQ(order_window(320), 80u);
  // Birth 170 comes at event 199 (29 late); births 171-199 come one event early meanwhile.
  for (uint32_t k = 0; k < 170; ++k) ASSERT_TRUE(order.on_birth(expected, k, k));
  for (uint32_t k = 170; k < 199; ++k) EXPECT_TRUE(order.on_birth(expected, k, k + 1)) << "event " << k;
  EXPECT_TRUE(order.on_birth(expected, 199, 170));
  // A birth that never comes (an odd batch) still leaves the plan, 80 events on.
  order.reset();
  for (uint32_t k = 0; k < 80; ++k) EXPECT_TRUE(order.on_birth(expected, k, k + 1)) << "event " << k;
  EXPECT_FALSE(order.on_birth(expected, 80, 81));
}

}  // namespace
}  // namespace sentinel::manage
