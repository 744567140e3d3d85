#include "core/env.h"

#include <gtest/gtest.h>

namespace sentinel {
namespace {

TEST(ParseBytes, AcceptsPlainAndSuffixed) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_bytes("65536", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parse_bytes("64K", &v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(parse_bytes("2MiB", &v));
  EXPECT_EQ(v, 2u << 20);
  EXPECT_TRUE(parse_bytes("3g", &v));
  EXPECT_EQ(v, 3ull << 30);
  EXPECT_TRUE(parse_bytes("1TB", &v));
  EXPECT_EQ(v, 1ull << 40);
}

TEST(ParseBytes, RejectsJunkSignsAndOverflow) {
  uint64_t v = 7;
  for (const char* bad : {"", "-1", "+5", "12X", "1.5M", "M", "64 K", "99999999999999999999",
                          "17179869184G", "64KiBx"}) {
    EXPECT_FALSE(parse_bytes(bad, &v)) << bad;
  }
  EXPECT_EQ(v, 7u);
  EXPECT_FALSE(parse_bytes(nullptr, &v));
}

TEST(ParseBytesOrPercent, Percentages) {
  uint64_t bytes = 1;
  double pct = 0;
  EXPECT_TRUE(parse_bytes_or_percent("20%", &bytes, &pct));
  EXPECT_DOUBLE_EQ(pct, 20.0);
  EXPECT_EQ(bytes, 0u);
  EXPECT_TRUE(parse_bytes_or_percent("12.5%", &bytes, &pct));
  EXPECT_DOUBLE_EQ(pct, 12.5);
  EXPECT_TRUE(parse_bytes_or_percent("512M", &bytes, &pct));
  EXPECT_EQ(bytes, 512u << 20);
  EXPECT_EQ(pct, 0.0);
  for (const char* bad : {"0%", "101%", "%", "20%%", "1.%", "-5%", "abc"}) {
    EXPECT_FALSE(parse_bytes_or_percent(bad, &bytes, &pct)) << bad;
  }
}

TEST(EnvGet, FindsExactNamesOnly) {
  setenv("SENTINEL_TEST_ENV_X", "value", 1);
  EXPECT_STREQ(env_get("SENTINEL_TEST_ENV_X"), "value");
  EXPECT_EQ(env_get("SENTINEL_TEST_ENV"), nullptr);
  EXPECT_EQ(env_get("SENTINEL_TEST_ENV_XY"), nullptr);
  unsetenv("SENTINEL_TEST_ENV_X");
  EXPECT_EQ(env_get("SENTINEL_TEST_ENV_X"), nullptr);
}

}  // namespace
}  // namespace sentinel
