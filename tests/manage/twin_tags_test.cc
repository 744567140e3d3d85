#include "manage/twin_tags.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "fake_sink.h"
#include "manage/plan_executor.h"
#include "test_profiles.h"

namespace sentinel::manage {
namespace {

TEST(TwinTags, EachFurtherObjectOfATagGetsATagOfItsOwn) {
  // Keys 7, 3 and 9 share tag 0x10 (3 keeps it); key 5 has 0x20 alone.
  const auto renames = twin_renames({{7, 0x10}, {5, 0x20}, {3, 0x10}, {9, 0x10}});
  ASSERT_EQ(renames.size(), 2u);
  EXPECT_EQ(renames[0].key, 7u);
  EXPECT_EQ(renames[0].tag, twin_tag(0x10, 1));
  EXPECT_EQ(renames[1].key, 9u);
  EXPECT_EQ(renames[1].tag, twin_tag(0x10, 2));
  std::set<uint64_t> tags = {0x10, 0x20, renames[0].tag, renames[1].tag};
  EXPECT_EQ(tags.size(), 4u);
  EXPECT_NE(twin_tag(0x10, 1), derived_tag(0x10));  // a step-local twin's tag stays free
}

TEST(TwinTags, NoSharedTagNoRename) { EXPECT_TRUE(twin_renames({{1, 0x10}, {2, 0x20}}).empty()); }

TEST(TwinTags, ATwinTagAnObjectAlreadyHasIsSkipped) {
  // Key 4 already carries twin_tag(0x10, 1) (named by an earlier profile); the new twin takes k = 2.
  const auto renames = twin_renames({{1, 0x10}, {4, twin_tag(0x10, 1)}, {6, 0x10}});
  ASSERT_EQ(renames.size(), 1u);
  EXPECT_EQ(renames[0].key, 6u);
  EXPECT_EQ(renames[0].tag, twin_tag(0x10, 2));
}

TEST(TwinTags, TheSameObjectsGiveTheSameRenamesInAnyOrder) {
  const auto a = twin_renames({{1, 0x10}, {2, 0x10}, {3, 0x10}, {4, 0x30}, {5, 0x30}});
  const auto b = twin_renames({{5, 0x30}, {3, 0x10}, {1, 0x10}, {4, 0x30}, {2, 0x10}});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].tag, b[i].tag);
  }
}

// Two persistent objects born with one tag, told apart by a rename: the plan keeps the first fast and the
// twin slow, and the executor moves only the twin. Without the rename both answer to the first's plan.
TEST(TwinTags, TheExecutorPlacesARenamedTwinByItsOwnTag) {
  constexpr uint64_t kW = 0x10, kA = 0x20;
  const uint64_t twin = twin_tag(kW, 1);
  ProfileIndex index;
  std::string error;
  ASSERT_TRUE(index.build(sentinel::test::make_profile(4, 1000,
                                             {sentinel::test::persistent(kW, 1000, 4, {0, 3}), sentinel::test::persistent(twin, 1000, 4, {1}),
                                              sentinel::test::object(kA, 500, 0, 3, {0, 3})}),
                          &error))
      << error;
  Plan plan;
  plan.policy = "test";
  plan.period = 4;
  plan.events.assign(4, {});
  plan.birth_tier = {{kW, Tier::kFast}, {twin, Tier::kSlow}, {kA, Tier::kFast}};
  auto compiled = std::make_shared<CompiledPlan>();
  ASSERT_TRUE(compiled->compile(plan, index, [](uint64_t s) { return s; }, &error)) << error;

  test::FakeSink sink(1500);
  PlanExecutor ex(&sink);
  // Both were born fast before steps were known, with the same tag.
  sink.fast = 2000;  // over the plan's budget: the fast node holds both
  ex.on_alloc(ObjectRef{1, 1}, kW, 1000, Tier::kFast, -1, 0, 0);
  ex.on_alloc(ObjectRef{2, 1}, kW, 1000, Tier::kFast, -1, 0, 0);
  ex.retag(ObjectRef{2, 1}.key(), twin);
  ex.start(compiled, 0);
  ASSERT_EQ(sink.queue.size(), 1u) << "the twin's eviction only";
  EXPECT_EQ(sink.queue.front().ref.key(), (ObjectRef{2, 1}.key()));
  EXPECT_EQ(sink.queue.front().to, Tier::kSlow);
  Tier t;
  bool moving;
  ASSERT_TRUE(ex.tier_of(kW, &t, &moving));
  EXPECT_EQ(t, Tier::kFast);
  EXPECT_FALSE(moving);
  ASSERT_TRUE(ex.tier_of(twin, &t, &moving));
  EXPECT_TRUE(moving);
}

}  // namespace
}  // namespace sentinel::manage
