// LateLookahead (manage/late_lookahead.h): only prefetches late in two managed steps in a row make a
// replan, and each replan doubles the extra lookahead of the tags that made it.
#include "manage/late_lookahead.h"

#include <gtest/gtest.h>

namespace sentinel::manage {
namespace {

using Tags = std::vector<uint64_t>;

TEST(LateLookahead, ATagLateOnceIsJitterATagLateTwiceInARowCounts) {
  LateLookahead l;
  EXPECT_EQ(l.repeated({1, 2, 3}), Tags{});
  EXPECT_EQ(l.repeated({3, 4, 2}), (Tags{3, 2}));
  EXPECT_EQ(l.repeated({5, 1}), Tags{}) << "1 was late two steps ago, not in the step before";
  EXPECT_EQ(l.repeated({}), Tags{});
  EXPECT_EQ(l.repeated({5}), Tags{}) << "a step with none late breaks the run";
}

TEST(LateLookahead, ClearForgetsTheStepBefore) {
  LateLookahead l;
  l.repeated({7});
  l.clear();
  EXPECT_EQ(l.repeated({7}), Tags{});
  EXPECT_EQ(l.repeated({7}), Tags{7});
}

TEST(LateLookahead, AReplanIsMadeOnlyForFewerTagsThanTheLastOne) {
  LateLookahead l;
  EXPECT_FALSE(l.improves_on_last(0));
  EXPECT_TRUE(l.improves_on_last(12));
  EXPECT_TRUE(l.improves_on_last(2));
  EXPECT_FALSE(l.improves_on_last(2)) << "the replan for 2 left 2: another would not help";
  EXPECT_FALSE(l.improves_on_last(5));
  EXPECT_TRUE(l.improves_on_last(1));
  l.clear();
  EXPECT_TRUE(l.improves_on_last(7)) << "a new profile starts over";
}

TEST(LateLookahead, EachRaiseDoublesTheExtraLookaheadUpToTheCap) {
  std::unordered_map<uint64_t, uint32_t> extra{{9, 3}};
  LateLookahead::raise({1}, &extra);
  EXPECT_EQ(extra[1], 1u);
  LateLookahead::raise({1, 9}, &extra);
  EXPECT_EQ(extra[1], 2u);
  EXPECT_EQ(extra[9], 6u);
  for (int i = 0; i < 40; ++i) LateLookahead::raise({1}, &extra);
  EXPECT_EQ(extra[1], LateLookahead::kMaxExtraPhases);
  EXPECT_EQ(extra.size(), 2u);
}

}  // namespace
}  // namespace sentinel::manage
