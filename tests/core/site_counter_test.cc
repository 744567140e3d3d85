#include "core/site_counter.h"

#include <gtest/gtest.h>

namespace sentinel {
namespace {

SiteCounter g_counter;  // large: keep it off the stack

TEST(SiteCounter, CountsPerSiteAndResetsPerStep) {
  g_counter.reset();
  EXPECT_EQ(g_counter.next(11), 0u);
  EXPECT_EQ(g_counter.next(11), 1u);
  EXPECT_EQ(g_counter.next(22), 0u);
  EXPECT_EQ(g_counter.next(11), 2u);
  g_counter.reset();
  EXPECT_EQ(g_counter.next(11), 0u);
  EXPECT_EQ(g_counter.next(22), 0u);
  EXPECT_EQ(g_counter.next(22), 1u);
}

TEST(SiteCounter, ManySitesThatCollideStillCountCorrectly) {
  g_counter.reset();
  for (uint64_t s = 1; s <= 3000; ++s) EXPECT_EQ(g_counter.next(s * 8192), 0u);
  for (uint64_t s = 1; s <= 3000; ++s) EXPECT_EQ(g_counter.next(s * 8192), 1u);
  EXPECT_EQ(g_counter.overflows(), 0u);
}

}  // namespace
}  // namespace sentinel
