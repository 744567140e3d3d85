#include "cache_model.h"

#include <gtest/gtest.h>

namespace sentinel::slowtier {
namespace {

TEST(CacheModel, SecondAccessToALineHits) {
  CacheModel c(4096, 64, 2);
  EXPECT_FALSE(c.access(1000, false).hit);
  EXPECT_TRUE(c.access(1000, false).hit);
  EXPECT_TRUE(c.access(960, false).hit);   // same 64-byte line (960..1023)
  EXPECT_FALSE(c.access(1024, false).hit);  // next line
}

TEST(CacheModel, GeometryRoundsSetsToPowerOfTwo) {
  CacheModel c(3 * 64 * 4, 64, 4);  // 3 sets worth -> 2 sets
  EXPECT_EQ(c.sets(), 2u);
  EXPECT_EQ(c.line_shift(), 6u);
}

TEST(CacheModel, LeastRecentlyUsedWayIsEvicted) {
  CacheModel c(2 * 64, 64, 2);  // one set, two ways
  const uint64_t a = 0, b = 64, d = 128;
  c.access(a, false);
  c.access(b, false);
  c.access(a, false);                     // a most recent, b least recent
  EXPECT_FALSE(c.access(d, false).hit);   // evicts b
  EXPECT_TRUE(c.access(a, false).hit);
  EXPECT_FALSE(c.access(b, false).hit);
}

TEST(CacheModel, DirtyVictimIsWrittenBackOnce) {
  CacheModel c(64, 64, 1);  // one line
  EXPECT_FALSE(c.access(0, true).wrote_back);
  CacheAccessResult r = c.access(4096, false);  // evicts the dirty line 0
  EXPECT_FALSE(r.hit);
  EXPECT_TRUE(r.wrote_back);
  EXPECT_EQ(r.written_back_line, 0u);
  EXPECT_FALSE(c.access(0, false).wrote_back);  // line 4096 was clean
  EXPECT_FALSE(c.access(4096, false).wrote_back);
}

// The emulated PMU attributes a write-back to the object of the store that dirtied the line.
TEST(CacheModel, AWriteBackCarriesTheVirtualAddressOfTheLastStore) {
  CacheModel c(2 * 64, 64, 2, /*track_vaddrs=*/true);  // one set, two ways
  c.access(0, true, 0x7000);     // line 0 dirtied through 0x7000
  c.access(64, false, 0x9040);   // line 1 clean
  c.access(0, true, 0x7008);     // line 0 again: the latest store's address is kept, and line 0 is most recent
  c.access(0, false, 0x1234);    // a load does not change it
  CacheAccessResult r = c.access(128, false, 0xa080);  // evicts line 1 (clean)
  EXPECT_FALSE(r.wrote_back);
  r = c.access(192, false, 0xb0c0);  // evicts line 0 (dirty)
  EXPECT_TRUE(r.wrote_back);
  EXPECT_EQ(r.written_back_line, 0u);
  EXPECT_EQ(r.written_back_vaddr, 0x7008u);
  CacheModel untracked(2 * 64, 64, 2);
  untracked.access(0, true, 0x7000);
  untracked.access(64, false, 0);
  EXPECT_EQ(untracked.access(128, false, 0).written_back_vaddr, 0u);
}

TEST(CacheModel, StreamLargerThanCacheMissesEveryLine) {
  CacheModel c(64 * 1024, 64, 8);
  int misses = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t a = 0; a < 1024 * 1024; a += 8) misses += c.access(a, false).hit ? 0 : 1;
  }
  EXPECT_EQ(misses, 2 * 1024 * 1024 / 64);
}

TEST(CacheModel, WorkingSetThatFitsMissesOnlyOnce) {
  CacheModel c(64 * 1024, 64, 8);
  int misses = 0;
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t a = 0; a < 32 * 1024; a += 8) misses += c.access(a, false).hit ? 0 : 1;
  }
  EXPECT_EQ(misses, 32 * 1024 / 64);
}

}  // namespace
}  // namespace sentinel::slowtier
