#include "plan/replay.h"

#include <gtest/gtest.h>

#include "plan/synthetic_profile.h"
#include "profile/profile_io.h"

namespace sentinel {
namespace {

TEST(Replay, ParseBudget) {
  PlannerConfig c;
  std::string err;
  ASSERT_TRUE(parse_budget("25%", &c, &err));
  EXPECT_EQ(c.budget_bytes, 0u);
  EXPECT_DOUBLE_EQ(c.budget_fraction, 0.25);
  ASSERT_TRUE(parse_budget("512M", &c, &err));
  EXPECT_EQ(c.budget_bytes, 512ull << 20);
  ASSERT_TRUE(parse_budget("2G", &c, &err));
  EXPECT_EQ(c.budget_bytes, 2ull << 30);
  ASSERT_TRUE(parse_budget("4096", &c, &err));
  EXPECT_EQ(c.budget_bytes, 4096u);
  for (const char* bad : {"", "%", "-5%", "12X", "M", "1.5G", "99999999999999999999"})
    EXPECT_FALSE(parse_budget(bad, &c, &err)) << bad;
}

TEST(Synthetic, DnnProfileIsAValidProfile) {
  DnnConfig c;
  c.jitter = 0.3;
  StepProfile p = dnn_training_profile(c);
  std::string err;
  EXPECT_TRUE(validate_profile(p, &err)) << err;
  EXPECT_EQ(p.objects.size(), 16u * 9 + 2);
  RandomProfileConfig rc;
  for (uint64_t s = 1; s < 50; ++s) {
    rc.seed = s;
    EXPECT_TRUE(validate_profile(random_profile(rc), &err)) << s << ": " << err;
  }
}

}  // namespace
}  // namespace sentinel
