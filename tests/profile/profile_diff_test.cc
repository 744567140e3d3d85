// profile-diff's scores (src/profile/profile_diff.h) on hand-built profiles whose right answers are
// worked out in the comments.
#include "profile/profile_diff.h"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sentinel {
namespace {

ObjectProfile object(uint64_t tag, uint64_t size, std::vector<PhaseAccess> accesses, uint32_t birth = 0,
                     uint32_t death = 3) {
  ObjectProfile o;
  o.tag = tag;
  o.size = size;
  o.birth_phase = birth;
  o.death_phase = death;
  o.accesses = std::move(accesses);
  return o;
}

StepProfile profile(std::vector<ObjectProfile> objects, uint32_t period = 4, bool writebacks = true) {
  StepProfile p;
  p.period = period;
  p.phases.resize(period);
  p.sampler = "pebs";
  p.writebacks_counted = writebacks;
  p.objects = std::move(objects);
  return p;
}

// The known pattern of the guest test, per step: buffers with 8, 4, 2, 1 and 0 passes (lines).
StepProfile passes_truth() {
  return profile({object(1, 1 << 20, {{0, 4000, 4000, 4000}, {1, 4000, 4000, 4000}}),
                  object(2, 1 << 20, {{1, 2000, 2000, 2000}, {2, 2000, 2000, 2000}}),
                  object(3, 1 << 20, {{2, 1000, 1000, 1000}, {3, 1000, 1000, 1000}}),
                  object(4, 1 << 20, {{3, 1000, 0, 0}}), object(5, 1 << 20, {})});
}

TEST(ProfileDiff, AProfileAgainstItselfIsExact) {
  const StepProfile t = passes_truth();
  ProfileDiff d;
  std::string error;
  ASSERT_TRUE(diff_profiles(t, t, DiffOptions{}, &d, &error)) << error;
  EXPECT_TRUE(d.phases_compared);
  EXPECT_EQ(d.traffic_error, 0);
  EXPECT_EQ(d.miss_traffic_error, 0);
  EXPECT_EQ(d.rw_split_error, 0);
  EXPECT_DOUBLE_EQ(d.spearman, 1.0);
  EXPECT_TRUE(d.untouched_hot.empty());
  EXPECT_EQ(d.matched_by_tag, 5u);
  // Per object: 24000, 12000, 6000 and 1000 lines of 64 bytes (reads + writes + write-backs).
  EXPECT_EQ(d.truth_bytes, (24000u + 12000u + 6000u + 1000u) * 64u);
  EXPECT_EQ(d.objects[0].tag, 1u);  // largest first
  EXPECT_EQ(d.objects[4].tag, 5u);
}

TEST(ProfileDiff, NothingReportedIsErrorOneAndEveryHotObjectUntouched) {
  const StepProfile t = passes_truth();
  StepProfile o = t;
  for (ObjectProfile& x : o.objects) x.accesses.clear();
  ProfileDiff d;
  ASSERT_TRUE(diff_profiles(t, o, DiffOptions{}, &d, nullptr));
  EXPECT_DOUBLE_EQ(d.traffic_error, 1.0);
  EXPECT_DOUBLE_EQ(d.miss_traffic_error, 1.0);
  EXPECT_TRUE(std::isnan(d.rw_split_error));
  EXPECT_TRUE(std::isnan(d.spearman));  // the other profile ranks every object alike
  // Objects 1..4 each carry more than 1% of the truth's traffic (object 4: 1000 of 43000 lines).
  ASSERT_EQ(d.untouched_hot.size(), 4u);
  EXPECT_EQ(d.untouched_hot[0].tag, 1u);
}

// The software sampler's known flaw: every touched phase counts the whole object once, so 8:4:2:1
// passes read as equal traffic per touched phase.
TEST(ProfileDiff, ASamplerThatSeesPhasesButNotPasses) {
  const StepProfile t = passes_truth();
  const uint64_t lines = (1 << 20) / 64;  // 16384: the object once
  StepProfile o = profile({object(1, 1 << 20, {{0, lines / 2, lines / 2}, {1, lines / 2, lines / 2}}),
                           object(2, 1 << 20, {{1, lines / 2, lines / 2}, {2, lines / 2, lines / 2}}),
                           object(3, 1 << 20, {{2, lines / 2, lines / 2}, {3, lines / 2, lines / 2}}),
                           object(4, 1 << 20, {{3, lines, 0}}), object(5, 1 << 20, {})},
                          4, /*writebacks=*/false);
  ProfileDiff d;
  ASSERT_TRUE(diff_profiles(t, o, DiffOptions{}, &d, nullptr));
  // Truth reads+writes per pair: object 1: 8000, object 2: 4000, object 3: 2000, object 4: 1000;
  // other: 16384 everywhere. Sum |o - t| = 2*(8384 + 12384 + 14384) + 15384 = 85688 lines over
  // 2*(8000+4000+2000) + 1000 = 29000 truth lines.
  EXPECT_NEAR(d.miss_traffic_error, 85688.0 / 29000.0, 1e-9);
  // With write-backs the truth has 43000 lines and the other none of its 14000 write-back lines:
  // sum |o - t| = 2*(|16384-12000| + |16384-6000| + |16384-3000|) + |16384-1000| = 71688.
  EXPECT_NEAR(d.traffic_error, 71688.0 / 43000.0, 1e-9);
  EXPECT_NEAR(d.rw_split_error, 0.0, 1e-9);  // both say half writes for objects 1-3, none for object 4
  // Hotness: truth 24000, 12000, 6000, 1000, 0; other 32768, 32768, 32768, 16384, 0.
  // Ranks: truth 5,4,3,2,1; other 4,4,4,2,1 (ties share their mean rank) -> 8 / sqrt(10 * 8).
  EXPECT_NEAR(d.spearman, 8.0 / std::sqrt(80.0), 1e-9);
  EXPECT_TRUE(d.untouched_hot.empty());
}

TEST(ProfileDiff, ReadWriteSplitAndTrafficOnlyInTheOther) {
  StepProfile t = profile({object(1, 4096, {{0, 100, 100}}), object(2, 4096, {{1, 300, 0}})});
  // Object 1 reported as reads only; object 2 right; object 9 the truth does not have.
  StepProfile o = profile({object(1, 4096, {{0, 200, 0}}), object(2, 4096, {{1, 300, 0}}), object(9, 4096, {{2, 50, 0}})});
  ProfileDiff d;
  ASSERT_TRUE(diff_profiles(t, o, DiffOptions{}, &d, nullptr));
  // Split: object 1 write share 0.5 vs 0 (weight 200), object 2 0 vs 0 (weight 300): 100/500.
  EXPECT_NEAR(d.rw_split_error, 0.2, 1e-12);
  // Traffic: |200-200| + |300-300| + 50 (object 9) over 500.
  EXPECT_NEAR(d.traffic_error, 0.1, 1e-12);
  EXPECT_EQ(d.other_only, 1u);
  EXPECT_EQ(d.truth_only, 0u);
  EXPECT_NEAR(d.truth_write_share, 0.2, 1e-12);
  EXPECT_NEAR(d.other_write_share, 0.0, 1e-12);
}

TEST(ProfileDiff, PhasesThatDoNotLineUpCountAsError) {
  StepProfile t = profile({object(1, 4096, {{0, 100, 0}})});
  StepProfile o = profile({object(1, 4096, {{1, 100, 0}})});  // right object, wrong phase
  ProfileDiff d;
  ASSERT_TRUE(diff_profiles(t, o, DiffOptions{}, &d, nullptr));
  EXPECT_DOUBLE_EQ(d.traffic_error, 2.0);
  // Other periods: phases cannot be paired, each object's step total is compared.
  StepProfile o5 = o;
  o5.period = 5;
  o5.phases.resize(5);
  ASSERT_TRUE(diff_profiles(t, o5, DiffOptions{}, &d, nullptr));
  EXPECT_FALSE(d.phases_compared);
  EXPECT_DOUBLE_EQ(d.traffic_error, 0.0);
}

TEST(ProfileDiff, UnmatchedTagsFallBackOnUniqueSizeAndLifetime) {
  StepProfile t = profile({object(1, 4096, {{0, 100, 0}}, 0, 1), object(2, 8192, {{1, 10, 0}}, 1, 2),
                           object(3, 8192, {{1, 10, 0}}, 1, 2)});
  // Tags differ (another build of the program, say): 4096/0..1 is unique on both sides; the two
  // 8192/1..2 objects are not, so they stay unmatched.
  StepProfile o = profile({object(11, 4096, {{0, 100, 0}}, 0, 1), object(12, 8192, {{1, 10, 0}}, 1, 2),
                           object(13, 8192, {{1, 10, 0}}, 1, 2)});
  ProfileDiff d;
  ASSERT_TRUE(diff_profiles(t, o, DiffOptions{}, &d, nullptr));
  EXPECT_EQ(d.matched_by_tag, 0u);
  EXPECT_EQ(d.matched_by_size, 1u);
  EXPECT_EQ(d.truth_only, 2u);
  EXPECT_EQ(d.other_only, 2u);
  EXPECT_TRUE(d.objects[0].matched_by_size);
}

TEST(ProfileDiff, JsonAndTextCarryTheScores) {
  const StepProfile t = passes_truth();
  StepProfile o = t;
  o.objects[0].accesses.clear();
  ProfileDiff d;
  ASSERT_TRUE(diff_profiles(t, o, DiffOptions{}, &d, nullptr));
  const auto j = nlohmann::json::parse(format_diff_json(d));
  EXPECT_NEAR(j["traffic_error"].get<double>(), d.traffic_error, 1e-12);
  EXPECT_EQ(j["untouched_hot"].size(), 1u);
  EXPECT_EQ(j["untouched_hot"][0]["tag"], "0x0000000000000001");
  EXPECT_EQ(j["objects"].size(), 5u);
  EXPECT_EQ(j["objects"][0]["truth"]["writeback_bytes"], 8000u * 64u);
  const std::string text = format_diff_text(d, 3);
  EXPECT_NE(text.find("hot objects reported untouched: 1"), std::string::npos) << text;
  EXPECT_NE(text.find("0x0000000000000001"), std::string::npos) << text;
  StepProfile none;
  std::string error;
  EXPECT_FALSE(diff_profiles(none, t, DiffOptions{}, &d, &error));
  EXPECT_NE(error.find("no objects"), std::string::npos);
}

TEST(ProfileDiff, SpearmanOnKnownSeries) {
  EXPECT_NEAR(spearman_rank_correlation({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
  EXPECT_NEAR(spearman_rank_correlation({1, 2, 3}, {30, 20, 10}), -1.0, 1e-12);
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({1}, {1})));
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({1, 2}, {5, 5})));
}

}  // namespace
}  // namespace sentinel
