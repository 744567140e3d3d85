#include "manage/profile_match.h"

#include <gtest/gtest.h>

#include "core/hash.h"
#include "manage/compiled_plan.h"
#include "test_profiles.h"

namespace sentinel::manage {
namespace {

using Verdict = ProfileMatcher::Verdict;

// Period 4: persistent 0x10; step-local 0xa at event 0, 0xb at 1, 0xc at 3 (nothing born at event 2).
std::vector<uint64_t> four_event_tags() {
  ProfileIndex index;
  std::string error;
  EXPECT_TRUE(index.build(test::make_profile(4, 1000,
                                             {test::persistent(0x10, 100, 4, {0}), test::object(0xa, 100, 0, 1, {0}),
                                              test::object(0xb, 100, 1, 2, {1}), test::object(0xc, 100, 3, 3, {3})}),
                          &error))
      << error;
  return expected_tags(index);
}

// Feeds one step of the program (events 0..tags.size()-1) and returns the last verdict.
Verdict feed_step(ProfileMatcher& m, int64_t step, uint32_t period, const std::vector<uint64_t>& tags) {
  Verdict v = Verdict::kUndecided;
  for (uint32_t k = 0; k < tags.size(); ++k) v = m.on_alloc(step, k, period, tags[k]);
  return v;
}

TEST(ExpectedTags, AreTheStepLocalBirthsAndZeroElsewhere) {
  EXPECT_EQ(four_event_tags(), (std::vector<uint64_t>{0xa, 0xb, 0, 0xc}));
}

TEST(AnyOrderShare, CountsEachExpectedTagOnce) {
  const std::vector<uint64_t> expected{0xa, 0xb, 0, 0xc};
  EXPECT_EQ(any_order_share(expected, {}), 0.0);
  EXPECT_EQ(any_order_share(expected, {0xc, 0xa, 0xb}), 1.0);
  EXPECT_EQ(any_order_share(expected, {0xa, 0xa, 0xa, 0xb}), 0.5);  // 0xa is expected once
  EXPECT_EQ(any_order_share(expected, {0x77, 0x0}), 0.0);           // 0 entries are no tag
  // A seen tag whose derived tag is expected (a step-local twin of a persistent object) matches.
  EXPECT_EQ(any_order_share({derived_tag(0x10)}, {0x10}), 1.0);
}

TEST(ProfileMatcher, TheProfilesOwnStepMatchesWhenTheNextStepBegins) {
  ProfileMatcher m({0xa, 0xb, 0xc, 0xd});
  EXPECT_EQ(m.period(), 4u);
  EXPECT_EQ(feed_step(m, 5, 4, {0xa, 0xb, 0xc, 0xd}), Verdict::kUndecided);
  EXPECT_EQ(m.on_alloc(6, 0, 4, 0xa), Verdict::kMatches);
  EXPECT_DOUBLE_EQ(m.share(), 1.0);
}

TEST(ProfileMatcher, AnAllocationWhereTheProfileHasNoneCountsAgainstTheMatch) {
  ProfileMatcher m(four_event_tags());  // nothing expected at event 2
  EXPECT_EQ(feed_step(m, 5, 4, {0xa, 0xb, 0x99, 0xc}), Verdict::kUndecided);
  EXPECT_EQ(m.on_alloc(6, 0, 4, 0xa), Verdict::kDiffers);
  EXPECT_DOUBLE_EQ(m.share(), 0.75);  // 3 of the 4 allocations, in order and in any order
}

TEST(ProfileMatcher, AnotherOrderOfTheSameTagsMatches) {
  ProfileMatcher m({0xa, 0xb, 0xc, 0xd});
  EXPECT_EQ(feed_step(m, 3, 4, {0xd, 0xc, 0xb, 0xa}), Verdict::kUndecided);
  EXPECT_EQ(m.on_alloc(4, 0, 4, 0xa), Verdict::kMatches);
  EXPECT_DOUBLE_EQ(m.share(), 1.0);
}

TEST(ProfileMatcher, AStepOfOtherTagsDiffers) {
  ProfileMatcher m({0xa, 0xb, 0xc, 0xd});
  feed_step(m, 3, 4, {0xa, 0xb, 0xe, 0xf});
  EXPECT_EQ(m.on_alloc(4, 0, 4, 0xa), Verdict::kDiffers);
  EXPECT_DOUBLE_EQ(m.share(), 0.5);
}

TEST(ProfileMatcher, ComparesAWholeStepFromItsEventZero) {
  ProfileMatcher m({0xa, 0xb, 0xc, 0xd});
  // The detector locked in the middle of step 3: its rest is not compared.
  EXPECT_EQ(m.on_alloc(3, 2, 4, 0x1), Verdict::kUndecided);
  EXPECT_EQ(m.on_alloc(3, 3, 4, 0x2), Verdict::kUndecided);
  EXPECT_EQ(feed_step(m, 4, 4, {0xa, 0xb, 0xc, 0xd}), Verdict::kUndecided);
  EXPECT_EQ(m.on_alloc(5, 0, 4, 0xa), Verdict::kMatches);
}

TEST(ProfileMatcher, AnotherPeriodPastTheFirstStepsIsAnotherProgram) {
  ProfileMatcher m({0xa, 0xb, 0xc, 0xd});
  EXPECT_EQ(m.on_alloc(-1, 0, 0, 0xa), Verdict::kUndecided);  // no step structure yet
  EXPECT_EQ(m.on_alloc(2, 0, 5, 0xa), Verdict::kUndecided);   // a set-up loop may come first
  EXPECT_EQ(m.on_alloc(3, 0, 5, 0xa), Verdict::kOtherPeriod);
}

TEST(ProfileMatcher, SetUpStepsTooShortToPlanAreWaitedOut) {
  // A program that marks each step of its set-up (one parameter per step): period 1 for eight steps.
  ProfileMatcher m({0xa, 0xb, 0xc, 0xd});
  for (int64_t step = 0; step < 8; ++step) EXPECT_EQ(m.on_alloc(step, 0, 1, 0x10), Verdict::kUndecided);
  EXPECT_EQ(feed_step(m, 8, 4, {0xa, 0xb, 0xc, 0xd}), Verdict::kUndecided);
  EXPECT_EQ(m.on_alloc(9, 0, 4, 0xa), Verdict::kMatches);
}

TEST(ProfileMatcher, AStepLocalTwinOfAPersistentObjectMatchesInOrder) {
  const uint64_t twin = derived_tag(0x10);
  ProfileMatcher m({twin, 0xb, 0xc, 0xd});
  feed_step(m, 3, 4, {0x10, 0xb, 0xc, 0xd});  // the program allocates the twin under the persistent tag
  EXPECT_EQ(m.on_alloc(4, 0, 4, 0x10), Verdict::kMatches);
  EXPECT_DOUBLE_EQ(m.share(), 1.0);
}

}  // namespace
}  // namespace sentinel::manage
